"""Issue 44, points 3 and 4: the template a suite names is a file the user can edit, and what wrote the
summaries (provider, model, base URL host, parameters) is recorded by `baseline` and named by `check`.

- `compactlab init` writes the suite's `summary.j2` and the `files.j2` it imports beside the suite;
- `compactlab prompts` lists, prints and copies the bundled templates (a typo gets "did you mean");
- a template name with no file beside the suite: check's markdown and baseline's output say the bundled one was used;
- a baseline made with `COMPACTLAB_MODEL=my-local-model`, checked without it: the model change comes first
  and is the reason for exit 2 (it used to blame "the replay, a strategy or the data");
- a baseline of format 3 (no `summarizer`) still checks, saying what it cannot compare.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from compactlab.cli.main import main
from compactlab.gate.suite import load_suite
from compactlab.strategies.prompting import PROMPTS_DIR, template_hash
from tests.conftest import bundled
from tests.fake_behaviours import summarizing
from tests.fake_providers import serve

MINI = bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343")
VARIABLES = ("COMPACTLAB_PROVIDER", "COMPACTLAB_MODEL", "COMPACTLAB_KEY_ENV", "COMPACTLAB_BASE_URL", "OPENAI_API_KEY")


# --- point 3: the template is there -----------------------------------------------------------------


def test_init_writes_the_templates_the_suite_names_with_their_imports(tmp_path, monkeypatch) -> None:
    assert main(["init", str(tmp_path)]) == 0
    folder = tmp_path / "ci"
    assert (folder / "summary.j2").read_text() == (PROMPTS_DIR / "summary.j2").read_text()
    assert (folder / "files.j2").read_text() == (PROMPTS_DIR / "files.j2").read_text()  # summary.j2 imports it
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    suite = load_suite(folder / "compactlab-suite.toml")
    named = [v for s in suite.config.strategies for k, v in dict(s.settings).items() if k.endswith("template")]
    assert named and all(Path(v).is_absolute() and Path(v).is_file() and Path(v).parent == folder.resolve() for v in named)
    # The copy renders with its own folder's import and is the bundled prompt: the same hash.
    assert template_hash(named[0]) == template_hash(str(PROMPTS_DIR / "summary.j2"))
    assert main(["init", str(tmp_path)]) == 2  # nothing replaced without --force


def test_prompts_lists_shows_and_copies_the_bundled_templates(tmp_path, capsys) -> None:
    assert main(["prompts"]) == 0
    listed = capsys.readouterr().out
    bundled = sorted(p.name for p in PROMPTS_DIR.glob("*.j2"))
    assert [line.split()[0] for line in listed.splitlines()[: len(bundled)]] == bundled
    assert re.search(r"^summary\.j2 +Structured history summary", listed, re.MULTILINE)  # names padded to the longest

    assert main(["prompts", "show", "summary.j2"]) == 0
    assert capsys.readouterr().out == (PROMPTS_DIR / "summary.j2").read_text()
    assert main(["prompts", "show", "codex"]) == 0  # the name without .j2
    assert capsys.readouterr().out == (PROMPTS_DIR / "codex.j2").read_text()

    assert main(["prompts", "show", "sumary.j2"]) == 2
    assert "no bundled prompt template 'sumary.j2' (did you mean 'summary.j2'?)" in capsys.readouterr().err

    target = tmp_path / "prompts"
    target.mkdir()
    assert main(["prompts", "copy", "summary.j2", str(target)]) == 0
    out = capsys.readouterr().out
    assert f"wrote {target / 'summary.j2'}" in out and f"wrote {target / 'files.j2'}" in out
    assert (target / "summary.j2").read_text() == (PROMPTS_DIR / "summary.j2").read_text()

    (target / "summary.j2").write_text("{{ conversation }} mine\n")
    assert main(["prompts", "copy", "summary.j2", str(target)]) == 2
    assert "exists: pass --force to replace it" in capsys.readouterr().err
    assert (target / "summary.j2").read_text() == "{{ conversation }} mine\n"  # refused: untouched
    (target / "files.j2").write_text("{% macro files(read, modified) %}{% endmacro %}\n")
    assert main(["prompts", "copy", "summary.j2", str(target), "--force"]) == 0
    assert f"kept {target / 'files.j2'}" in capsys.readouterr().out  # the user's import is theirs
    assert (target / "summary.j2").read_text() == (PROMPTS_DIR / "summary.j2").read_text()

    assert main(["prompts", "copy", "update.j2", str(tmp_path / "mine.j2")]) == 0  # a file name
    assert (tmp_path / "mine.j2").read_text() == (PROMPTS_DIR / "update.j2").read_text()
    capsys.readouterr()
    assert main(["prompts", "copy", "summary.j2"]) == 2
    assert "needs a destination" in capsys.readouterr().err


def test_a_template_name_with_no_file_beside_the_suite_says_the_bundled_one_was_used(tmp_path, capsys, monkeypatch) -> None:
    suite = tmp_path / "suite.toml"
    suite.write_text(
        f'datasets = ["{MINI.as_posix()}"]\nwindow = 20000\n\n[[strategy]]\nname = "summarize"\n'
        'settings = { template = "summary.j2" }\n\n[metrics.preservation_k5]\ndirection = "higher"\ntolerance = 0.01\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # no summary.j2 in the working directory either
    baseline = tmp_path / "baseline.json"
    assert main(["baseline", "--suite", str(suite), "--baseline", str(baseline)]) == 0
    note = f'`summarize`: template = "summary.j2" matches no file beside the suite ({tmp_path.as_posix()}/): the bundled summary.j2 was used'
    assert note in capsys.readouterr().out
    markdown = tmp_path / "check.md"
    assert main(["check", "--suite", str(suite), "--baseline", str(baseline), "--markdown-out", str(markdown)]) == 0
    assert note in markdown.read_text() and f"`compactlab prompts copy summary.j2 {tmp_path.as_posix()}`" in markdown.read_text()
    capsys.readouterr()

    (tmp_path / "summary.j2").write_text((PROMPTS_DIR / "summary.j2").read_text())  # now it is there
    assert main(["check", "--suite", str(suite), "--baseline", str(baseline)]) == 0
    assert "matches no file beside the suite" not in capsys.readouterr().out


# --- point 4: what wrote the summaries ----------------------------------------------------------------


@dataclass(frozen=True)
class Scaffold:
    suite: Path
    baseline: Path

    @property
    def argv(self) -> list[str]:
        return ["--suite", str(self.suite), "--baseline", str(self.baseline)]


@pytest.fixture
def local_model_baseline(tmp_path, monkeypatch, capsys) -> Scaffold:
    """The scaffold on one session, its baseline made with COMPACTLAB_MODEL=my-local-model on a local server."""
    assert main(["init", str(tmp_path)]) == 0
    suite = tmp_path / "ci" / "compactlab-suite.toml"
    text = suite.read_text()
    assert 'datasets = ["mini-swe-agent-v1"]' in text and "window = 12000 " in text
    # One session, to be quick: too few compactions for the scaffold's relative tolerance, which baseline would refuse
    # (its power is tests/gate/test_suite_power.py's); the summarizer's record is what this test is about.
    small = text.replace('["mini-swe-agent-v1"]', f'["{MINI.as_posix()}"]').replace("window = 12000 ", "window = 20000 ")
    suite.write_text(small.replace("relative_tolerance = 0.25\n", ""))
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    scaffold = Scaffold(suite, tmp_path / "ci" / "compactlab-baseline.json")
    with serve() as server:
        server.otherwise = summarizing()
        monkeypatch.setenv("COMPACTLAB_MODEL", "my-local-model")
        monkeypatch.setenv("COMPACTLAB_BASE_URL", server.openai_base_url)
        assert main(["baseline", *scaffold.argv]) == 0, capsys.readouterr().err
    monkeypatch.delenv("COMPACTLAB_BASE_URL")
    capsys.readouterr()
    return scaffold


def test_the_baseline_records_what_wrote_its_summaries(local_model_baseline) -> None:
    document = json.loads(local_model_baseline.baseline.read_text())
    assert document["format"] == 4
    recorded = document["summarizer"]
    assert recorded["provider"] == "openai" and recorded["model"] == "my-local-model"
    assert recorded["base_url_host"].startswith("127.0.0.1:")
    assert recorded["parameters"] == {"api_key_env": "OPENAI_API_KEY"}
    assert recorded["environment"]["model"] == {"COMPACTLAB_MODEL": True}
    assert recorded["environment"]["provider"] == {"COMPACTLAB_PROVIDER": False}


def test_a_model_taken_from_the_environment_and_unset_in_ci_is_named_first_and_is_the_reason(
    local_model_baseline, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("COMPACTLAB_MODEL", "my-local-model")  # as when the baseline was made: the model not named
    assert main(["check", *local_model_baseline.argv]) == 0  # from the recorded answers (their key has no address)
    first = capsys.readouterr().out.split("**What this check can detect**")[0]
    assert "- base URL host: 127.0.0.1:" in first and "→ (the provider's own) (COMPACTLAB_BASE_URL unset)" in first
    assert "model:" not in first

    monkeypatch.delenv("COMPACTLAB_MODEL")  # CI without the variable: the default model
    markdown = local_model_baseline.suite.parent / "check.md"
    code = main(["check", *local_model_baseline.argv, "--markdown-out", str(markdown)])
    captured = capsys.readouterr()
    assert code == 2, captured.out + captured.err
    changed = "model: my-local-model → gpt-4.1-mini (COMPACTLAB_MODEL unset)"
    assert captured.out.splitlines()[:5] == [
        "## compactlab check: ⛔ not measured: no result",
        "",
        "**The summarizer differs from the baseline's**",
        "",
        f"- {changed}",
    ]
    assert markdown.read_text() == captured.out.rstrip("\n") + "\n"
    errors = captured.err.splitlines()
    assert errors[1] == f"  the summarizer differs from the baseline's: {changed}"
    assert "set COMPACTLAB_MODEL=my-local-model as when the baseline was made" in captured.err
    assert "the replay, a strategy or the data" not in captured.err  # the old, wrong explanation
    assert "summaries need a model (the summarizer's model changed since the baseline)" in captured.err


def test_a_format_3_baseline_still_checks_and_says_what_it_cannot_compare(local_model_baseline, capsys, monkeypatch) -> None:
    document = json.loads(local_model_baseline.baseline.read_text())
    old = {k: v for k, v in document.items() if k != "summarizer"} | {"format": 3}
    local_model_baseline.baseline.write_text(json.dumps(old))
    monkeypatch.setenv("COMPACTLAB_MODEL", "my-local-model")
    assert main(["check", *local_model_baseline.argv]) == 0
    out = capsys.readouterr().out
    assert "- not compared: the baseline (format 3) records no base URL host and parameters" in out
    assert "model:" not in out.split("**What this check can detect**")[0]  # the model is compared (from read_by): unchanged

    monkeypatch.delenv("COMPACTLAB_MODEL")
    assert main(["check", *local_model_baseline.argv]) == 2
    captured = capsys.readouterr()
    assert "- model: my-local-model → gpt-4.1-mini (COMPACTLAB_MODEL unset)" in captured.out
    assert "set COMPACTLAB_MODEL=my-local-model" in captured.err
    assert os.environ.get("COMPACTLAB_MODEL") is None
