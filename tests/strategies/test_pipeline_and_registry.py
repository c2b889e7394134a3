"""The pipeline of strategies, the registry, and a user's own strategy file, on real sessions."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import pytest

from compactlab.contract import CompactionFailed, CompactionRequest, CompactionResult, Context, fell_back
from compactlab.strategies.base import named_strategy
from compactlab.strategies.pipeline import Pipeline
from compactlab.strategies.prune import Prune
from compactlab.strategies.registry import describe_all, get_strategy
from compactlab.strategies.truncate import Truncate
from tests.strategy_sessions import STRATEGIES, assert_no_orphans, by_id, counter, request_for, run, sample

# --- pipeline -----------------------------------------------------------------------------------


def test_pipeline_defaults() -> None:
    pipeline = get_strategy("pipeline")
    assert pipeline.stages == ("prune", "summarize", "truncate") and pipeline.stop_when_under_target


def test_the_strategies_a_pipeline_names_are_built_with_it() -> None:
    """The registry builds the stages a pipeline names when it builds the pipeline (so no strategy
    imports the registry); the settings stay the names given, also across processes."""
    built = get_strategy("pipeline")
    assert built == Pipeline() and [str(stage) for stage in built.stages] == ["prune", "summarize", "truncate"]
    assert [named_strategy(stage, "a stage") for stage in built.stages] == [Prune(), get_strategy("summarize"), Truncate()]
    again = pickle.loads(pickle.dumps(built))
    assert again == built and named_strategy(again.stages[0], "a stage") == Prune()
    session = by_id("m-claude", "3af9b1a7")
    by_hand = Pipeline(stages=("prune", "truncate"))
    with pytest.raises(TypeError, match="names the strategy 'prune', which was never built"):
        by_hand.compact(Context(messages=session.messages), request_for(session))
    assert run(by_hand, session).note.startswith("prune: cleared")  # run() builds it as the replay does


def test_pipeline_stops_when_the_first_stage_is_enough() -> None:
    session = by_id("m-claude", "3af9b1a7")
    pruned = run(Prune(), session)
    target = counter(session)(pruned.context.messages)  # exactly what prune alone reaches
    result = run(Pipeline(stages=("prune", "observation-masking", "truncate")), session, target=target)
    assert result.context.messages == pruned.context.messages
    assert result.note.startswith("prune: cleared") and "observation-masking:" not in result.note
    assert "truncate:" not in result.note and "under target" in result.note


def test_pipeline_reaches_truncate_otherwise() -> None:
    session = by_id("m-claude", "3af9b1a7")
    count = counter(session)
    result = run(Pipeline(stages=("prune", "observation-masking", "truncate")), session)
    notes = result.note.split("; ")
    assert notes[0].startswith("prune: cleared")
    assert any(n.startswith("observation-masking: masked") for n in notes)
    assert any(n.startswith("truncate: dropped") for n in notes)
    assert result.messages_removed > 0 and result.messages_removed == len(session.messages) - len(result.context.messages)
    assert count(result.context.messages) <= request_for(session).target_tokens
    # Without the early stop every stage runs even when the first was enough.
    target = count(run(Prune(), session).context.messages)
    full = run(Pipeline(stages=("prune", "observation-masking"), stop_when_under_target=False), session, target=target)
    assert "observation-masking: masked" in full.note


def test_pipeline_with_the_default_stages_runs() -> None:
    session = by_id("m-claude", "3af9b1a7")
    result = run(get_strategy("pipeline"), session)
    assert result.note.startswith("prune: ") and "summarize: " in result.note
    after = result.context.messages
    assert_no_orphans(after)
    assert counter(session)(after) <= counter(session)(session.messages)


@dataclass(frozen=True)
class _Failing:
    name = "failing"

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        raise CompactionFailed("summarizer unavailable")


def test_pipeline_goes_on_after_a_failed_stage() -> None:
    session = by_id("m-claude", "3af9b1a7")
    result = run(Pipeline(stages=(_Failing(), "truncate")), session)
    # The run counts it as a fallback (bench/results/run_failures.py), not as the pipeline's own result.
    assert result.note.startswith(
        "[fell back] failing failed (summarizer unavailable); went on to the next stage; truncate: dropped"
    )
    assert fell_back(result.note)
    with pytest.raises(CompactionFailed):
        run(Pipeline(stages=(_Failing(), "truncate"), skip_failed_stages=False), session)
    with pytest.raises(CompactionFailed, match="summarizer unavailable"):
        run(Pipeline(stages=(_Failing(),)), session)


# --- registry -----------------------------------------------------------------------------------


def test_registry_settings_override_and_typos() -> None:
    prune = get_strategy("prune", protect_tokens=1000)
    assert prune.protect_tokens == 1000 and prune.minimum_tokens == 20_000
    with pytest.raises(KeyError, match="[Dd]id you mean 'prune'"):
        get_strategy("prnue")
    with pytest.raises(KeyError, match="did you mean 'protect_tokens'"):
        get_strategy("prune", protect_token=1000)
    rows = {row["name"]: row for row in describe_all()}
    for name in STRATEGIES:
        assert rows[name]["description"] and "\n" not in rows[name]["description"]
        assert rows[name]["source"]
    assert "opencode" in rows["prune"]["source"] and "Complexity Trap" in rows["observation-masking"]["source"]


USER_STRATEGY = '''
from dataclasses import dataclass, replace

from compactlab.contract import CompactionResult
from compactlab.sessions.messages import safe_cut_points
from compactlab.strategies.base import setting


@dataclass(frozen=True)
class KeepLast:
    """Keep the newest messages only (a user's own strategy)."""

    name = "keep-last"
    source = "a test"
    count: int = setting(20, "messages to keep")

    def compact(self, context, request):
        messages = context.messages
        cut = max([i for i in safe_cut_points(messages) if i <= len(messages) - self.count] or [0])
        kept = messages[cut:]
        return CompactionResult(replace(context, messages=kept), len(messages) - len(kept), note=f"kept {len(kept)}")
'''


def test_a_user_strategy_file_loads_runs_and_composes(tmp_path) -> None:
    path = tmp_path / "my_strategies.py"
    path.write_text(USER_STRATEGY)
    strategy = get_strategy(f"{path}:KeepLast", count=30)
    session = sample("mini-swe-agent-pr816")[0]
    result = run(strategy, session)
    assert 0 < len(result.context.messages) <= 31 and result.note.startswith("kept")
    assert_no_orphans(result.context.messages)
    with pytest.raises(KeyError, match="Did you mean 'KeepLast'"):
        get_strategy(f"{path}:KeepLats")
    composed = run(Pipeline(stages=("observation-masking", f"{path}:KeepLast")), session, target=0)
    assert "observation-masking: masked" in composed.note and f"{path}:KeepLast: kept" in composed.note
