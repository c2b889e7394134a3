"""The gate's own files damaged many ways, and what `compactlab check` / `baseline` does with each (issue 45).

    .venv/bin/python -m tests.scripts.gate_file_fuzz [--kinds KIND ...]

A small suite (the committed suite's settings and metrics, on one bundled session, two strategies) gets a
baseline, and the scaffold of `compactlab init` (on the same session) a baseline with the answers of the
local wire-format server; then each damage is applied to a copy and the command run in-process:

- the baseline (types, NaN/inf/out of range, missing keys, nesting, another suite's file),
- the suite (tolerances, resample counts, nesting),
- a recorded answer (types, missing keys, nesting),
- `${CI_SECRET}` in the scaffold's [summarizer] with the variable set (a CI secret),
- hostile setting labels (HTML, an OSC title sequence, Markdown) written into check's markdown.

Each run is a *traceback* (an exception out of `main`), *silently wrong* (exit 0 or 1 where the damage must
be an error, the secret's value in any written file or output, or markup of a label raw in the markdown) or
*clean*. It uses only the CLI's `main` and the repository's files, so it measures an older checkout as well:
copy it there (with tests/fake_providers.py and tests/fake_behaviours.py, which older checkouts have) and run
it from that folder. Prints the table "kind | runs | tracebacks | silently wrong | clean".
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from compactlab.cli.main import main
from tests.fake_behaviours import summarizing
from tests.fake_providers import serve

REPO = Path(__file__).resolve().parents[2]
SESSION = REPO / "datasets/mini-swe-agent-pr816/sessions"
SESSION_FILE = "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343_marshmallow-code__marshmallow-1343.traj.json.gz"
SECRET = "sk-ci-secret-0d5ea1c3"
NESTED = "(nested)"  # replaced by an array 10,000 deep in the written file
VARIABLES = ("COMPACTLAB_PROVIDER", "COMPACTLAB_MODEL", "COMPACTLAB_KEY_ENV", "COMPACTLAB_BASE_URL", "OPENAI_API_KEY")

SUITE = f"""datasets = ["{(SESSION / SESSION_FILE).as_posix()}"]
window = 20000

[[strategy]]
name = "summarize"
settings = {{ keep_recent_tokens = 4000, template = "summary.j2" }}

[[strategy]]
name = "observation-masking"

[metrics.preservation_k5]
direction = "higher"
tolerance = 0.01

[metrics.removed_share]
direction = "higher"
tolerance = 0.01

[metrics.over_window_calls]
direction = "lower"
tolerance = 0
"""


def run(argv: list[str]) -> tuple[str, int, str, str]:
    """('traceback' | 'exit', code, stdout, stderr) of one command, in-process."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except (Exception, MemoryError, RecursionError):  # noqa: BLE001 - what escapes main is the measurement
        return "traceback", 1, out.getvalue(), err.getvalue() + traceback.format_exc(limit=-1)
    return "exit", code, out.getvalue(), err.getvalue()


# --- damages ---------------------------------------------------------------------------------------------


def at(path: str, value: object) -> Callable[[dict], None]:
    """Set the dotted `path` (a `*` step: every entry) to `value`."""

    def damage(document: dict) -> None:
        def walk(table: dict, keys: list[str]) -> None:
            if keys[0] == "*":
                for child in list(table):
                    step(table, child, keys)
            else:
                step(table, keys[0], keys)

        def step(table: dict, key: str, keys: list[str]) -> None:
            if len(keys) == 1:
                table[key] = value
            else:
                walk(table[key], keys[1:])

        walk(document, path.split("."))

    return damage


def drop(path: str) -> Callable[[dict], None]:
    *parents, last = path.split(".")

    def damage(document: dict) -> None:
        table = document
        for key in parents:
            table = table[key]
        table.pop(last)

    return damage


BASELINE = {
    "baseline: types": [
        at("strategies", ["summarize"]),
        at("strategies.summarize", "x"),
        at("compactions", "none"),
        at("compactions.summarize.preservation_k5.*", "x"),
        at("values.summarize", ["x"]),
        at("values.summarize.preservation_k5", "x"),
        at("values.summarize.preservation_k5.*", "abc"),
        at("values.summarize.preservation_k5.*", True),
        at("values.summarize.preservation_k5.*", {"a": 1}),
        at("sessions", ["x"]),
        at("suite", "x"),
        at("metrics.preservation_k5", "x"),
        at("metrics.preservation_k5.tolerance", "x"),
        at("sensitivity.summarize.preservation_k5.extra", 1),
        at("summarizer", "x"),
    ],
    "baseline: NaN/inf/range": [
        at("values.*.*.*", float("nan")),
        at("values.*.*.*", float("inf")),
        at("values.*.*.*", float("-inf")),
        at("values.*.*.*", 1e308),
        at("values.*.*.*", -1e308),
        at("values.summarize.preservation_k5.*", 1.5),
        at("values.summarize.over_window_calls.*", -1),
        at("metrics.preservation_k5.tolerance", float("inf")),
    ],
    "baseline: missing keys": [drop("metrics"), drop("sessions"), drop("suite"), drop("strategies"), drop("values.summarize")],
    "baseline: nesting": [at("values.summarize.preservation_k5.*", NESTED), at("strategies.summarize.entry", NESTED)],
    "baseline: another suite": [at("suite.file", "other-suite.toml")],
}

TOLERANCE = '[metrics.preservation_k5]\ndirection = "higher"\ntolerance = 0.01\n'
SUITES = {
    "suite: tolerances": [
        TOLERANCE.replace("0.01", value)
        for value in ("inf", "nan", "1", "1e300", "1.5\nrelative = true", "0.01\nrelative_tolerance = inf")
    ],
    "suite: huge counts": [TOLERANCE + f"\n[gate]\nresamples = {value}\n" for value in ("1000000000000", "10000000")],
    "suite: nesting": [TOLERANCE + f"\n[gate]\nseed = {'[' * depth}{']' * depth}\n" for depth in (40, 1000)],
}

ANSWERS = {
    "answers: types": [
        at("response.usage", "many"),
        at("response.usage", None),
        at("response.usage.input_tokens", "abc"),
        at("response.usage.input_tokens", -5),
        at("response.usage.output_tokens", 1.5),
        at("response.text", {"a": 1}),
        at("response.text", None),
        at("response.text", ["a"]),
        at("response", "x"),
        at("response.stop_reason", 5),
        at("key", "0" * 64),
    ],
    "answers: missing keys": [drop("response"), drop("response.usage"), drop("response.usage.model"), drop("key")],
    "answers: nesting": [at("response.text", NESTED)],
}

SECRET_KEYS = ("model", "api_key_env", "provider", "base_url", "temperature")
LABELS = (
    "<img src=https://tracker.example/p.png>",
    "mask\x1b]0;pwned\x07",
    "<script>alert(1)</script>",
    "*[link](https://tracker.example)*",
    "a | b",
    "tick`<b>bold</b>`",
    "line\n# heading",
)


def written(document: dict) -> str:
    return json.dumps(document).replace(json.dumps(NESTED), "[" * 10_000 + "]" * 10_000)


# --- the runs --------------------------------------------------------------------------------------------


def small_suite(folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    suite, baseline = folder / "suite.toml", folder / "baseline.json"
    suite.write_text(SUITE, encoding="utf-8")
    kind, code, _, err = run(["baseline", "--suite", str(suite), "--baseline", str(baseline)])
    assert kind == "exit" and code == 0, err
    return suite, baseline


def scaffold(folder: Path, change: Callable[[str], str] = lambda text: text) -> Path:
    run(["init", str(folder)])
    suite = folder / "ci" / "compactlab-suite.toml"
    text = suite.read_text(encoding="utf-8").replace('["mini-swe-agent-v1"]', f'["{(SESSION / SESSION_FILE).as_posix()}"]')
    suite.write_text(change(text.replace("window = 12000 ", "window = 20000 ").replace("relative_tolerance = 0.25\n", "")))
    return suite


def must_refuse(result: tuple[str, int, str, str]) -> str:
    """A damage that must be an error: clean when the command exits 2 with an error line."""
    kind, code, _, err = result
    if kind == "traceback":
        return "traceback"
    return "clean" if code == 2 and "compactlab: error:" in err else "silent"


def measure(kinds: list[str] | None) -> dict[str, Counter]:
    table: dict[str, Counter] = {}

    def count(kind: str, outcome: str) -> None:
        table.setdefault(kind, Counter())[outcome] += 1

    def wanted(kind: str) -> bool:
        return kinds is None or any(kind.startswith(w) for w in kinds)

    for name in VARIABLES:
        os.environ.pop(name, None)
    with tempfile.TemporaryDirectory(prefix="gate-fuzz-") as scratch:
        root = Path(scratch)
        suite, baseline = small_suite(root / "small")
        original = json.loads(baseline.read_text(encoding="utf-8"))
        for kind, damages in BASELINE.items():
            if not wanted(kind):
                continue
            for i, damage in enumerate(damages):
                document = json.loads(json.dumps(original))
                damage(document)
                path = root / f"baseline-{i}.json"
                path.write_text(written(document), encoding="utf-8")
                count(kind, must_refuse(run(["check", "--suite", str(suite), "--baseline", str(path)])))
        for kind, replacements in SUITES.items():
            if not wanted(kind):
                continue
            for i, replacement in enumerate(replacements):
                path = root / "small" / f"suite-{i}.toml"
                path.write_text(SUITE.replace(TOLERANCE, replacement), encoding="utf-8")
                other = root / "small" / f"baseline-of-{i}.json"
                shutil.copy(baseline, other)
                document = json.loads(other.read_text(encoding="utf-8"))
                document["suite"]["file"] = path.name  # the same suite but for the damage: only it can be refused
                other.write_text(json.dumps(document), encoding="utf-8")
                count(kind, must_refuse(run(["check", "--suite", str(path), "--baseline", str(other)])))
        if any(wanted(k) for k in (*ANSWERS, "env refs")):
            with serve() as server:
                server.otherwise = summarizing()
                recorded = root / "scaffold"
                answers_suite = scaffold(recorded)
                os.environ["COMPACTLAB_BASE_URL"] = server.openai_base_url
                result = run(["baseline", "--suite", str(answers_suite), "--baseline", str(answers_suite.parent / "b.json")])
                assert result[:2] == ("exit", 0), result[3]
                del os.environ["COMPACTLAB_BASE_URL"]
                for kind, damages in ANSWERS.items():
                    if not wanted(kind):
                        continue
                    for i, damage in enumerate(damages):
                        copy = root / f"answers-{kind[9:12]}-{i}"
                        shutil.copytree(recorded, copy)
                        answer = sorted((copy / "ci" / "compactlab-suite-answers").glob("??/*.json"))[0]
                        document = json.loads(answer.read_text(encoding="utf-8"))
                        damage(document)
                        answer.write_text(written(document), encoding="utf-8")
                        argv = ["check", "--suite", str(copy / "ci" / "compactlab-suite.toml")]
                        argv += ["--baseline", str(copy / "ci" / "b.json"), "--offline"]
                        count(kind, must_refuse(run(argv)))
                if wanted("env refs"):
                    for key in SECRET_KEYS:
                        count("env refs", secret_run(root / f"secret-{key}", key, server.openai_base_url))
        if wanted("hostile labels"):
            for i, label in enumerate(LABELS):
                count("hostile labels", label_run(root / f"label-{i}", label))
    return table


def secret_run(folder: Path, key: str, base_url: str) -> str:
    """`${CI_SECRET}` in the scaffold's [summarizer] `key`: clean when the value is in no output and no file."""
    lines = {
        "model": 'model = "${COMPACTLAB_MODEL:-gpt-4.1-mini}"',
        "api_key_env": 'api_key_env = "${COMPACTLAB_KEY_ENV:-OPENAI_API_KEY}"',
    }
    lines |= {"provider": 'provider = "${COMPACTLAB_PROVIDER:-openai}"', "base_url": 'base_url = "${COMPACTLAB_BASE_URL:-}"'}

    def change(text: str) -> str:
        if key in lines:
            return text.replace(lines[key], f'{key} = "{"openai-" if key == "provider" else ""}${{CI_SECRET}}"')
        return text.replace("[summarizer]\n", f'[summarizer]\n{key} = "${{CI_SECRET}}"\n')

    suite = scaffold(folder, change)
    os.environ["CI_SECRET"], os.environ["COMPACTLAB_BASE_URL"] = SECRET, base_url
    try:
        outputs = [run(["baseline", "--suite", str(suite), "--baseline", str(suite.parent / "b.json")])]
        markdown = folder / "check.md"
        outputs.append(
            run(["check", "--suite", str(suite), "--baseline", str(suite.parent / "b.json"), "--markdown-out", str(markdown)])
        )
    finally:
        del os.environ["CI_SECRET"], os.environ["COMPACTLAB_BASE_URL"]
    if any(kind == "traceback" for kind, *_ in outputs):
        return "traceback"
    leaked = any(SECRET in out + err for _, _, out, err in outputs) or any(
        SECRET.encode() in path.read_bytes() for path in folder.rglob("*") if path.is_file()
    )
    return "silent" if leaked else "clean"


def label_run(folder: Path, label: str) -> str:
    """A setting labelled `label`: clean when check's markdown holds none of its markup raw."""
    folder.mkdir(parents=True)
    escaped = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in label).replace('"', '\\"')
    suite = folder / "suite.toml"
    suite.write_text(
        SUITE.replace('name = "observation-masking"', f'name = "observation-masking"\nlabel = "{escaped}"'), encoding="utf-8"
    )
    baseline, markdown = folder / "baseline.json", folder / "check.md"
    first = run(["baseline", "--suite", str(suite), "--baseline", str(baseline)])
    if first[0] == "traceback":
        return "traceback"
    if first[1] == 2:
        return "clean"  # refused: nothing written
    second = run(["check", "--suite", str(suite), "--baseline", str(baseline), "--markdown-out", str(markdown)])
    if second[0] == "traceback":
        return "traceback"
    text = markdown.read_text(encoding="utf-8") if markdown.exists() else ""
    # HTML and control characters are wrong anywhere (a <summary> is HTML, where backticks quote nothing);
    # Markdown's own syntax only outside code spans, where it is literal text.
    outside_code = re.sub(r"`[^`\n]*`", "", text)
    raw = [r for r in ("<img", "<script", "<b>", "\x1b", "\x07") if r in text]
    raw += [r for r in ("](https", "\n# heading") if r in outside_code]
    rows = [row for row in text.splitlines() if row.startswith("| ") and ("| higher |" in row or "| lower |" in row)]
    broken_table = any(row.count("|") != 9 for row in rows)
    return "silent" if raw or broken_table else "clean"


def main_script() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", nargs="*", help="only kinds starting with these words (e.g. baseline answers)")
    args = parser.parse_args()
    table = measure(args.kinds)
    print("| kind | runs | tracebacks | silently wrong (exit 0 but should not) | clean |")
    print("|---|---|---|---|---|")
    total: Counter = Counter()
    for kind, counts in table.items():
        total.update(counts)
        print(f"| {kind} | {sum(counts.values())} | {counts['traceback']} | {counts['silent']} | {counts['clean']} |")
    print(f"| **all** | {sum(total.values())} | {total['traceback']} | {total['silent']} | {total['clean']} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main_script()
