"""Next-action preservation with a model: parsing, agreement on real recorded steps, and the whole
path through the real `openai`/`anthropic` SDKs over HTTP to `tests/fake_providers.py`, with the
call cache (reruns and offline replays send nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactlab.contract import Trigger
from compactlab.llm import CacheMiss, make_summarizer
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.runs import runs
from compactlab.runs.llm_config import make_run_judge
from compactlab.runs.run_config import RunConfig, config_json, load_config
from compactlab.runs.run_storage import run_compaction_rows
from compactlab.scoring.actions import Action, agree, argument_similarity
from compactlab.scoring.judge import score_compactions
from compactlab.scoring.next_action import (
    Judge,
    aggregate,
    aggregate_rows,
    next_action_preservation,
    parse_action,
    predict_next_action,
    recorded_actions,
    tools_hint,
)
from compactlab.scoring.probes import probe, probe_questions
from compactlab.sessions.importers import load_file
from compactlab.tokens.context_windows import ContextWindows
from tests.conftest import bundled
from tests.fake_behaviours import bad_request, ok
from tests.fake_providers import ANTHROPIC_PATH, OPENAI_PATH, FakeProvider, serve

KEY_ENV = "COMPACTLAB_TEST_LLM_KEY"
MINI_PATH = bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343")
MINI = load_file(MINI_PATH)[0]
CLAUDE = load_file(bundled("claude-code-log", "-src-deep-manifest__a7da6a22"))[0]
SUMMARIZE_20K = Setting("summarize", "summarize", trigger=Trigger(fraction=0.8))
WINDOW_20K = ContextWindows(overrides={"": 20_000})


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(KEY_ENV, "sk-test-next-action")


@pytest.fixture
def server():
    with serve() as state:
        yield state


def completer(server: FakeProvider, cache_dir: Path | None, provider: str = "openai", mode: str = "use"):
    base_url = server.openai_base_url if provider == "openai" else server.base_url
    return make_summarizer(
        provider,
        "gpt-4o-mini" if provider == "openai" else "claude-haiku-4-5",
        base_url=base_url,
        cache_dir=cache_dir,
        mode=mode,
        api_key_env=KEY_ENV,
        max_retries=0,
        timeout=5.0,
    )  # type: ignore[arg-type]


def answer(action: Action | dict) -> str:
    data = action if isinstance(action, dict) else {"tool": action.tool, "arguments": action.arguments}
    return json.dumps(data)


# --- parsing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        '{"tool": "bash", "arguments": {"command": "ls -la"}}',
        'Next I list the files.\n```json\n{"tool": "bash", "arguments": {"command": "ls -la"}}\n```\nThat shows the layout.',
        '{"tool": "bash", "arguments": {"command": "ls -la"}} because the layout is unknown {so far}',
        '```\n{"tool": "bash", "arguments": "{\\"command\\": \\"ls -la\\"}"}\n```',  # arguments as a JSON string
        'Thinking {about it}... {"name": "bash", "arguments": {"command": "ls -la"}}',
    ],
)
def test_replies_that_parse(reply: str) -> None:
    action = parse_action(reply)
    assert action.parsed and action.tool == "bash" and action.arguments == {"command": "ls -la"}


def test_a_plain_reply_and_garbage() -> None:
    plain = parse_action('```json\n{"tool": null, "text": "All done."}\n```')
    assert plain == Action(None, {}, "All done.")
    for garbage in ("I would run the tests next.", "{not json", "", '{"command": "ls"}'):
        action = parse_action(garbage)
        assert not action.parsed and action.tool is None and action.text == garbage
        # An unreadable answer is a disagreement, even with a recorded plain reply.
        assert not agree(action, Action(None, {}, "Done."))


# --- agreement on real recorded next actions -----------------------------------------------------


def test_mini_swe_agent_bash_step() -> None:
    [recorded] = recorded_actions(MINI.messages[10:])
    assert recorded == Action("bash", {"command": "cd /testbed && python reproduce.py 2>&1"})
    same = [
        {"command": "cd /testbed && python reproduce.py 2>&1"},
        {"command": "python   reproduce.py 2>&1"},  # whitespace and the leading `cd DIR &&` do not matter
        {"command": "python /testbed/reproduce.py 2>&1"},  # the same file from another root
        {"command": "python reproduce.py"},  # 2 of 3 words
    ]
    for arguments in same:
        assert agree(Action("BASH", arguments), recorded), arguments
    for tool, arguments in [
        ("bash", {"command": "cat reproduce.py"}),
        ("bash", {"command": "pytest tests/"}),
        ("python", {"command": "python reproduce.py 2>&1"}),
    ]:
        assert not agree(Action(tool, arguments), recorded), (tool, arguments)


def test_a_heredoc_is_compared_by_its_first_line() -> None:
    [recorded] = recorded_actions(MINI.messages[8:])
    assert recorded.arguments["command"].startswith("cd /testbed && cat > reproduce.py << 'EOF'\n")
    assert agree(Action("bash", {"command": "cat > reproduce.py << 'EOF'\nprint('another body')\nEOF"}), recorded)
    assert not agree(Action("bash", {"command": "cat > other.py << 'EOF'\nx\nEOF"}), recorded)


def test_claude_code_read_step_with_parallel_calls() -> None:
    recorded = recorded_actions(CLAUDE.messages[11:])
    assert [a.tool for a in recorded] == ["Read", "Read", "Bash", "Bash"]
    assert recorded[1].arguments == {"file_path": "/src/deep-manifest/CONTRIBUTING.md"}
    assert agree(Action("Read", {"file_path": "/src/deep-manifest/CONTRIBUTING.md"}), recorded)  # any parallel call
    assert agree(Action("read", {"file_path": "CLAUDE.md", "limit": 2000}), recorded)  # only shared arguments count
    assert not agree(Action("Read", {"file_path": "/src/deep-manifest/README.md"}), recorded)  # same folder, other file
    # A different description is not a different action.
    assert agree(Action("Bash", {"command": "git log --oneline -5", "description": "Look at history"}), recorded)
    assert not agree(Action("Bash", {"command": "git push"}), recorded)
    assert argument_similarity({"file_path": "/a/b.py"}, {"file_path": "/a/b.py"}) == 1.0
    assert argument_similarity({}, {}) == 1.0


def test_plain_text_steps() -> None:
    [recorded] = recorded_actions(CLAUDE.messages[26:])
    assert recorded.tool is None and recorded.text.startswith("Done. I committed all pending changes")
    assert agree(Action(None, {}, "Committed."), recorded)
    assert not agree(Action("Bash", {"command": "git status"}), recorded)
    assert not agree(Action(None, {}, "Committed.", parsed=False), recorded)
    assert tools_hint(CLAUDE.messages[:12]).splitlines()[:2] == ["- Bash(command, description)", "- Read(file_path)"]


# --- end to end through the SDKs -----------------------------------------------------------------


def mini_replay():
    replayed = replay(MINI, SUMMARIZE_20K, WINDOW_20K)
    rows = [r.values() for r in replayed.compactions]
    assert len(rows) == len(replayed.compacted) >= 2
    rows, contexts = rows[:2], replayed.compacted[:2]  # the first two: what the tests below script answers for
    recorded = [recorded_actions(MINI.messages[r["message_index"] :])[0] for r in rows]
    return rows, contexts, recorded


WRONG = {"tool": "bash", "arguments": {"command": "rm -rf /testbed/src"}}


def test_compacted_context_loses_the_next_action(server: FakeProvider, tmp_path: Path) -> None:
    rows, contexts, recorded = mini_replay()
    for action in recorded:  # per compaction: the full history first, then the compacted context
        server.queue(ok(answer(action)), ok("```json\n" + json.dumps(WRONG) + "\n```"))
    scored = score_compactions(completer(server, tmp_path), MINI, rows, contexts)
    assert server.count(OPENAI_PATH) == 4
    results = [r["model_next_action"] for r in scored]
    assert [(r["full_agrees"], r["compacted_agrees"]) for r in results] == [(True, False), (True, False)]
    assert results[0]["predicted"]["arguments"] == WRONG["arguments"]
    assert results[0]["cost_usd"] is not None and results[0]["cost_usd"] > 0
    summary = aggregate(results)
    assert (summary["n"], summary["full_agree"], summary["compacted_agree"], summary["score"]) == (2, 2, 0, 0.0)
    assert aggregate_rows(scored)["summarize"]["score"] == 0.0
    # What the model saw: the tool list and the compacted context, which is smaller than the history.
    first, second = (r.body["messages"][-1]["content"] for r in server.received[:2])
    assert "- bash(command)" in first and '"tool": null' in first
    assert len(second) < len(first) and "Summary of the earlier part" in second


def test_same_answer_on_both_contexts_scores_one_and_reruns_hit_the_cache(server: FakeProvider, tmp_path: Path) -> None:
    rows, contexts, recorded = mini_replay()
    for action in recorded:
        server.queue(ok(answer(action)), ok(answer(action)))
    first = score_compactions(completer(server, tmp_path), MINI, rows, contexts)
    assert aggregate(r["model_next_action"] for r in first)["score"] == 1.0
    sent = server.count()
    again = score_compactions(completer(server, tmp_path), MINI, rows, contexts)
    assert server.count() == sent  # every call came from the cache
    assert again == first
    # CI: the recorded provider replays the same recordings with no client at all.
    recorded_judge = make_summarizer("recorded", "gpt-4o-mini", cache_dir=tmp_path)
    assert score_compactions(recorded_judge, MINI, rows, contexts) == first
    assert server.count() == sent


def test_full_context_disagreement_gives_no_score(server: FakeProvider, tmp_path: Path) -> None:
    rows, contexts, recorded = mini_replay()
    for action in recorded:
        server.queue(ok(json.dumps(WRONG)), ok(answer(action)))
    results = [r["model_next_action"] for r in score_compactions(completer(server, tmp_path), MINI, rows, contexts)]
    summary = aggregate(results)
    assert (summary["full_agree"], summary["compacted_agree"], summary["both"], summary["score"]) == (0, 2, 0, None)


def test_offline_with_an_empty_cache_is_a_clear_error(server: FakeProvider, tmp_path: Path) -> None:
    rows, contexts, _ = mini_replay()
    with pytest.raises(CacheMiss, match="no recorded LLM response for provider 'openai', model 'gpt-4o-mini'.*offline"):
        score_compactions(completer(server, tmp_path / "empty", mode="offline"), MINI, rows, contexts)
    assert server.count() == 0


def test_a_failed_call_is_an_error_row_left_out_of_the_counts(server: FakeProvider, tmp_path: Path) -> None:
    rows, contexts, recorded = mini_replay()
    # A row's calls are independent (a run sends them side by side): the first row's second call is made too.
    server.queue(bad_request("prompt rejected"), *[ok(answer(recorded[1]))] * 3)
    results = [r["model_next_action"] for r in score_compactions(completer(server, None), MINI, rows, contexts)]
    assert "prompt rejected" in results[0]["error"]
    summary = aggregate(results)
    assert (summary["n"], summary["errors"], summary["score"]) == (1, 1, 1.0)


def test_anthropic_wire_format(server: FakeProvider, tmp_path: Path) -> None:
    [recorded] = recorded_actions(CLAUDE.messages[26:])
    server.queue(ok('{"tool": "Read", "arguments": {"file_path": "CLAUDE.md"}}'), ok('{"tool": null, "text": "All committed."}'))
    score = next_action_preservation(
        completer(server, tmp_path, "anthropic"), CLAUDE.messages[:26], CLAUDE.messages[:2], CLAUDE.messages[26]
    )
    assert server.count(ANTHROPIC_PATH) == 2
    assert (score.full_agrees, score.compacted_agrees, score.recorded) == (False, True, (recorded,))
    # The same question again is answered from the cache.
    again = predict_next_action(completer(server, tmp_path, "anthropic"), CLAUDE.messages[:2], tools_hint(CLAUDE.messages[:26]))
    assert again.text == "All committed." and server.count() == 2


# --- probes --------------------------------------------------------------------------------------


def test_probe_questions_come_from_the_recorded_history(server: FakeProvider, tmp_path: Path) -> None:
    rows, contexts, recorded = mini_replay()
    history = MINI.messages[: rows[0]["message_index"]]
    questions = {q.kind: q for q in probe_questions(history, [recorded[0]])}
    assert questions["recall"].reference == "test_fix.py"
    assert questions["artifact"].reference.split(", ")[:2] == ["reproduce.py", "src/marshmallow/marshalling.py"]
    assert questions["continuation"].reference.startswith('bash({"command": "find /testbed -name')
    assert questions["decision"].reference == "We need to install pytest. Let's install it."
    with pytest.raises(ValueError, match="unknown probe kinds"):
        probe_questions(history, recorded, ["recal"])
    judge = completer(server, tmp_path)
    server.queue(ok("It last edited test_fix.py."), ok("Yes."), ok("I do not know."), ok("no"), ok("Maybe"), ok("It depends."))
    assert probe(judge, judge, history, questions["recall"]).verdict is True
    assert probe(judge, judge, contexts[0], questions["recall"]).verdict is False
    assert probe(judge, judge, contexts[0], questions["decision"]).verdict is None  # neither yes nor no
    grading = server.received[1].body["messages"][-1]["content"]
    assert "Reference answer: test_fix.py" in grading and "Candidate answer: It last edited test_fix.py." in grading


def test_probes_in_compaction_rows(server: FakeProvider, tmp_path: Path) -> None:
    rows, contexts, recorded = mini_replay()
    server.queue(ok(answer(recorded[0])), ok(answer(recorded[0])), ok("test_fix.py"), ok("yes"), ok("no idea"), ok("no"))
    judge = Judge(completer(server, tmp_path), probes=("recall",))
    [row] = score_compactions(judge, MINI, rows[:1], contexts[:1])
    [result] = row["model_next_action"]["probes"]
    assert (result["kind"], result["full"], result["compacted"], result["full_answer"]) == ("recall", True, False, "test_fix.py")
    assert result["cost_usd"] > 0
    assert aggregate([row["model_next_action"]])["probes"] == {"recall": {"n": 1, "compacted": 0, "full": 1, "score": 0.0}}


# --- wiring into a run ---------------------------------------------------------------------------


def test_judge_table_in_a_run(server: FakeProvider, tmp_path: Path) -> None:
    config_file = tmp_path / "run.toml"
    config_file.write_text(
        f'datasets = ["{MINI_PATH}"]\nwindow = 20000\nstrategies = ["summarize"]\n\n'
        f'[judge]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "{server.openai_base_url}"\n'
        f'cache_dir = "{tmp_path / "cache"}"\napi_key_env = "{KEY_ENV}"\nthreshold = 0.6\n'
    )
    config = load_config(config_file)
    assert config.judge["threshold"] == 0.6 and config_json(config)["judge"]["model"] == "gpt-4o-mini"
    runs.run(config, tmp_path / "judged")
    rows = run_compaction_rows(tmp_path / "judged")
    assert rows and all(r["model_next_action"] is not None for r in rows)
    assert server.count() == 2 * len(rows)  # the default fake answer is no JSON: a disagreement
    assert aggregate_rows(rows)["summarize"] == {
        "n": len(rows),
        "compacted_agree": 0,
        "full_agree": 0,
        "both": 0,
        "errors": 0,
        "score": None,
    }
    # Without a [judge] table nothing changes: no field, no call, no key in config.json.
    plain = RunConfig(datasets=(str(MINI_PATH),), strategies=(Setting("summarize", "summarize"),), window=20_000)
    runs.run(plain, tmp_path / "plain")
    assert not any("model_next_action" in row for row in run_compaction_rows(tmp_path / "plain"))
    assert "judge" not in config_json(plain) and server.count() == 2 * len(rows)
    with pytest.raises(ValueError, match=r"\[judge\]: unknown settings 'probe' \(did you mean 'probes'\?\)"):
        make_run_judge(RunConfig(judge={"provider": "openai", "model": "m", "probe": ["recall"]}))
