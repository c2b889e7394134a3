"""The exit codes of issue 28's cases on the repository's own suite (before → after a change).

    python -m tests.scripts.gate_exit_codes [OUT_DIR]

1. `summary.j2` without its `files.j2` import, offline (the suite as committed: no model);
2. the same edit with a model: the suite's `summarize` and `iterative-merge` on the local
   wire-format server (`tests/fake_providers.py`), against a baseline made with it, and the
   original template again;
3. the unchanged tree checked `--offline` from the answers that baseline recorded, and the edit
   checked `--offline`.
The edited `summary.j2` sits beside a copy of the suite (a suite's relative template resolves there
first), so the bundled file is never touched. Prints each check's exit code; the markdown and the
error text of each are written to OUT_DIR.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
from pathlib import Path

from compactlab.cli.main import main
from compactlab.strategies.prompting import PROMPTS_DIR
from tests.fake_behaviours import summarizing
from tests.fake_providers import serve
from tests.gate.test_suite_with_a_model import FILES_IMPORT, KEY_ENV, SUITE, own_suite_with_a_model

BASELINE = SUITE.parent / "baseline.json"


def check(name: str, out: Path, *argv: str) -> int:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["check", *argv, "--markdown-out", str(out / f"{name}.md")])
    (out / f"{name}.err").write_text(err.getvalue(), encoding="utf-8")
    print(f"{name}: exit {code}")
    return code


def measure(out: Path) -> dict[str, int]:
    original = (PROMPTS_DIR / "summary.j2").read_text(encoding="utf-8")
    edited = original.replace(FILES_IMPORT, "", 1)
    codes = {}
    with tempfile.TemporaryDirectory() as folder:
        plain, model = Path(folder) / "plain", Path(folder) / "model"
        plain.mkdir()
        model.mkdir()
        # 1. The committed suite and baseline, offline, with the edit.
        text = SUITE.read_text(encoding="utf-8").replace('"../../datasets/', f'"{SUITE.parents[2].as_posix()}/datasets/')
        (plain / "suite.toml").write_text(text, encoding="utf-8")
        (plain / "summary.j2").write_text(edited, encoding="utf-8")
        argv = ["--suite", str(plain / "suite.toml"), "--baseline", str(BASELINE)]
        codes["1 edit, offline, own suite"] = check("1-edit-offline", out, *argv)
        with serve() as server:
            server.otherwise = summarizing()
            os.environ[KEY_ENV] = "sk-test"
            suite = own_suite_with_a_model(model, server)
            suite.write_text(suite.read_text(encoding="utf-8") + 'cache_dir = "answers"\n', encoding="utf-8")
            argv = ["--suite", str(suite), "--baseline", str(model / "baseline.json")]
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(["baseline", *argv]) == 0
            codes["3 unchanged, --offline, recorded answers"] = check("3-unchanged-offline", out, *argv, "--offline")
            (model / "summary.j2").write_text(edited, encoding="utf-8")
            codes["3 edit, --offline, recorded answers"] = check("3-edit-offline", out, *argv, "--offline")
            codes["2 edit, with the model"] = check("2-edit-model", out, *argv)
            (model / "summary.j2").write_text(original, encoding="utf-8")
            codes["2 original, with the model"] = check("2-original-model", out, *argv)
    return codes


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, nargs="?", default=Path("gate-exit-codes"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    measure(args.out)
