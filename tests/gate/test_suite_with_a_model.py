"""The repository's own suite with a model: its summarizing settings on an LLM summarizer served by
the local wire-format server (`tests/fake_providers.py`, whose answer follows its prompt), the
baseline recording every answer beside the suite. Then, as in CI:
- the unchanged tree checks from the recorded answers alone (--offline: no server, no key): exit 0;
- `summary.j2` without its `files.j2` import, offline: exit 2, counting the summaries that need a model;
- the same edit with the server: exit 1, the facts the summaries lost listed;
- the original template again: exit 0 with no new call, and the edit's answers reported unused."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from compactlab.cli.main import main
from compactlab.strategies.prompting import PROMPTS_DIR
from tests.conftest import REPO
from tests.fake_behaviours import summarizing
from tests.fake_providers import FakeProvider, serve

# The repository's whole suite replayed with a model, twice and more: minutes.
pytestmark = pytest.mark.slow

SUITE = REPO / "reports" / "baselines" / "suite.toml"
FILES_IMPORT = '{%- from "files.j2" import files -%}'
KEY_ENV = "COMPACTLAB_TEST_ANSWERS_KEY"
SCAFFOLD_KEY = "COMPACTLAB_TEST_SCAFFOLD_KEY"  # never set: the scaffold's CI has no key
LLM_SETTINGS = (  # the own suite's two settings that name summary.j2, on the model
    (
        'settings = { keep_recent_tokens = 4000, template = "summary.j2" }',
        'settings = { keep_recent_tokens = 4000, template = "summary.j2", summarizer = "llm" }',
    ),
    (
        'settings = { template = "summary.j2", update_template = "update.j2" }',
        'settings = { template = "summary.j2", update_template = "update.j2", summarizer = "llm" }',
    ),
)


def own_suite_with_a_model(folder: Path, server: FakeProvider) -> Path:
    """The repository's suite in `folder`, `summarize` and `iterative-merge` on the LLM summarizer, and
    `summary.j2` beside it (a suite's relative template resolves there first: the bundled file as edited)."""
    text = SUITE.read_text(encoding="utf-8").replace('"../../datasets/', f'"{(REPO / "datasets").as_posix()}/')
    for old, new in LLM_SETTINGS:
        assert old in text
        text = text.replace(old, new)
    text += (
        f'\n[summarizer]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "{server.openai_base_url}"\n'
        f'api_key_env = "{KEY_ENV}"\nmax_retries = 0\n'
    )
    (folder / "suite.toml").write_text(text, encoding="utf-8")
    (folder / "summary.j2").write_text((PROMPTS_DIR / "summary.j2").read_text(encoding="utf-8"), encoding="utf-8")
    return folder / "suite.toml"


@dataclass(frozen=True)
class Recorded:
    suite: Path
    baseline: Path
    answers: Path
    server: FakeProvider
    calls: int  # requests the baseline sent


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    folder = tmp_path_factory.mktemp("own-suite-with-a-model")
    with serve() as server:
        server.otherwise = summarizing()
        suite = own_suite_with_a_model(folder, server)
        with pytest.MonkeyPatch.context() as patch:  # the key only while the baseline runs
            patch.setenv(KEY_ENV, "sk-test")
            assert main(["baseline", "--suite", str(suite), "--baseline", str(folder / "baseline.json")]) == 0
        yield Recorded(suite, folder / "baseline.json", folder / "suite-answers", server, server.count())


def check(capsys, recorded: Recorded, *extra: str) -> tuple[int, str, str]:
    code = main(["check", "--suite", str(recorded.suite), "--baseline", str(recorded.baseline), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def without_file_lists(recorded: Recorded) -> None:
    template = recorded.suite.parent / "summary.j2"
    source = template.read_text(encoding="utf-8")
    assert source.startswith(FILES_IMPORT)
    template.write_text(source.replace(FILES_IMPORT, "", 1), encoding="utf-8")


def restored(recorded: Recorded) -> None:
    (recorded.suite.parent / "summary.j2").write_text((PROMPTS_DIR / "summary.j2").read_text(encoding="utf-8"), encoding="utf-8")


def test_the_baseline_records_every_answer_beside_the_suite(recorded) -> None:
    answers = sorted(recorded.answers.glob("??/*.json"))
    assert recorded.calls > 50 and len(answers) == recorded.calls  # one file per request, none twice
    assert sum(path.stat().st_size for path in answers) < 4_000_000  # small enough to commit


def test_the_three_cases_of_the_issue(recorded, capsys, monkeypatch) -> None:
    server = recorded.server
    monkeypatch.delenv(KEY_ENV, raising=False)
    # 1. The unchanged tree, offline: every summary from the recorded answers, nothing sent.
    code, out, err = check(capsys, recorded, "--offline")
    assert code == 0, out + err
    assert out.startswith("## compactlab check: ✅ no regression")
    assert "read by model openai:gpt-4o-mini (from recorded answers only (--offline)): summary.j2" in out
    assert server.count() == recorded.calls

    # 2. The files.j2 import removed, offline: not measured (exit 2), the missing answers counted.
    without_file_lists(recorded)
    code, out, err = check(capsys, recorded, "--offline")
    assert code == 2, out + err
    assert out.startswith("## compactlab check: ⛔ not measured")
    [line] = [line for line in err.splitlines() if "summary.j2 changed:" in line]
    assert int(re.search(r"summary.j2 changed: (\d+) summaries need a model", line).group(1)) > 20
    assert "--offline" in err and "suite-answers" in err
    assert server.count() == recorded.calls

    # 3. The same edit with the model: the summaries are asked for, and the loss is caught (exit 1).
    monkeypatch.setenv(KEY_ENV, "sk-test")
    code, out, err = check(capsys, recorded)
    assert code == 1, out + err
    assert out.startswith("## compactlab check: ❌")
    assert server.count() > recorded.calls
    failed = out.split("Suite `", 1)[0]
    assert "`summarize` · dropped facts the summary kept (k=5) (`summary_recall_k5`)" in failed
    lost = out.split("**`summarize` · dropped facts the summary kept (k=5) (`summary_recall_k5`):", 1)[1].split("###")[0]
    listed = re.findall(r"^- `([^`]+)`: (.+)$", lost, re.M)
    assert len(listed) >= 3 and all("`path:" in facts for _, facts in listed[:3])  # the file lists' paths

    # 4. The original template again: replayed from the answers, no new call; the edit's answers unused.
    restored(recorded)
    sent = server.count()
    code, out, err = check(capsys, recorded)
    assert code == 0, out + err
    assert server.count() == sent
    assert re.search(r"(\d+) recorded answers in `suite-answers/` were not used by this check", out)


def test_a_model_baseline_checked_without_the_model_is_no_result(recorded, capsys, tmp_path) -> None:
    """The baseline's summaries came from a model; a suite without [summarizer] cannot be compared with it."""
    text = recorded.suite.read_text(encoding="utf-8").split("\n[summarizer]")[0]
    (tmp_path / "suite.toml").write_text(text, encoding="utf-8")
    (tmp_path / "summary.j2").write_text((PROMPTS_DIR / "summary.j2").read_text(encoding="utf-8"), encoding="utf-8")
    code = main(["check", "--suite", str(tmp_path / "suite.toml"), "--baseline", str(recorded.baseline), "--only", "summarize"])
    err = capsys.readouterr().err
    assert code == 2
    assert "`summarize`: the baseline's summaries were written by model openai:gpt-4o-mini, this run's by none" in err


# --- the scaffold: `compactlab init`, a baseline with a model, then CI ------------------------------


def test_the_scaffold_records_answers_with_a_model_and_ci_checks_from_them(tmp_path, capsys, monkeypatch) -> None:
    """The issue's new-user flow: init, baseline, then the summary template replaced by `Summarize
    briefly.`. It used to pass (exit 0); now offline it exits 2 and with the model it fails (exit 1)."""
    assert main(["init", str(tmp_path)]) == 0
    suite, baseline = tmp_path / "ci" / "compactlab-suite.toml", tmp_path / "ci" / "compactlab-baseline.json"
    for name in ("COMPACTLAB_PROVIDER", "COMPACTLAB_BASE_URL", "OPENAI_API_KEY", SCAFFOLD_KEY):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COMPACTLAB_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("COMPACTLAB_KEY_ENV", SCAFFOLD_KEY)
    argv = ["--suite", str(suite), "--baseline", str(baseline)]
    with serve() as server:
        server.otherwise = summarizing()
        # No key and no server address: a baseline cannot get its summaries (exit 2), and says so.
        assert main(["baseline", *argv]) == 2
        assert f"no key in {SCAFFOLD_KEY}" in capsys.readouterr().err and not baseline.exists()
        monkeypatch.setenv("COMPACTLAB_BASE_URL", server.openai_base_url)
        assert main(["baseline", *argv]) == 0
        capsys.readouterr()
        calls = server.count()
        monkeypatch.delenv("COMPACTLAB_BASE_URL")  # CI: no server, no key
        assert main(["check", *argv]) == 0  # the unchanged tree, from the recorded answers
        assert f"from recorded answers only (no key in {SCAFFOLD_KEY})" in capsys.readouterr().out

        (suite.parent / "summary.j2").write_text("{{ conversation }} Summarize briefly.\n", encoding="utf-8")
        assert main(["check", *argv]) == 2
        err = capsys.readouterr().err
        assert re.search(r"summary.j2 changed: \d+ summaries need a model", err), err
        monkeypatch.setenv("COMPACTLAB_BASE_URL", server.openai_base_url)
        code = main(["check", *argv])
        out = capsys.readouterr().out
        assert code == 1, out
        assert "`summarize-70` · dropped facts the summary kept (k=5) (`summary_recall_k5`)" in out.split("Suite `")[0]
        assert server.count() > calls
    assert len(list((suite.parent / "compactlab-suite-answers").glob("??/*.json"))) == server.count()
