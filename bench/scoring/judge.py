"""The run's model judge at work: every compaction of a session scored by next-action prediction
and, when asked, probe questions (`compactlab.scoring.next_action`, `compactlab.scoring.probes`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from compactlab.llm import make_summarizer
from compactlab.llm.errors import LLMError, LLMUnavailable
from compactlab.scoring.actions import DEFAULT_THRESHOLD, Action, agree
from compactlab.scoring.next_action import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    Completer,
    Judge,
    ModelScore,
    predict_next_action,
    recorded_actions,
    tools_hint,
)
from compactlab.scoring.probes import PROBE_KINDS, Probe, probe, probe_entries, probe_questions
from compactlab.sessions.model import Message, Session

FanOut = Callable[[Sequence[Callable[[], Any]]], list]


def in_turn(tasks: Sequence[Callable[[], Any]]) -> list:
    """Each task's result, one after the other (what a run with a thread pool replaces)."""
    return [task() for task in tasks]


def _error_kept(task: Callable[[], Any]) -> Callable[[], Any]:
    """`task`, with a failed call (`LLMError`) as its result; an unusable provider still raises."""

    def run() -> Any:
        try:
            return task()
        except LLMUnavailable:
            raise  # no later call can do better: the run stops (see bench/llm/errors.py)
        except LLMError as exc:
            return exc

    return run


def score_compactions(
    judge: Judge | Completer,
    session: Session,
    rows: Sequence[dict],
    contexts: Sequence[Sequence[Message]],
    fan_out: FanOut = in_turn,
) -> list[dict]:
    """Copies of the compaction `rows` with a `model_next_action` entry (and `probes` when asked).

    `contexts[i]` is the compacted context of `rows[i]` (`Replayed.compacted`). Failed compactions
    get None. A failed call (after retries, or a prompt longer than the judge's window) gives
    `{"error": ...}` (the first failed call's, in the order full history, compacted context,
    probes); a missing recording in offline mode (`CacheMiss`) is raised, not recorded.

    Every call of every row is independent of the others (the compactions are made already), so
    `fan_out` may run them side by side (a run gives it a thread pool's); the rows are the same.
    """
    judge = judge if isinstance(judge, Judge) else Judge(judge)
    if len(rows) != len(contexts):
        raise ValueError(f"{len(rows)} compaction rows but {len(contexts)} compacted contexts")
    tools = tools_hint(session.messages)
    grader = judge.grader or judge.completer
    scored: list[dict] = []
    asked: list[tuple[dict, list[Action], int, list[Probe]]] = []
    tasks: list[Callable[[], Any]] = []
    for row, context in zip(rows, contexts):
        row = dict(row)
        scored.append(row)
        index = row["message_index"]
        recorded = recorded_actions(session.messages[index:])
        if row.get("failed") or not recorded:
            row["model_next_action"] = None
            continue
        history = session.messages[:index]
        questions = probe_questions(history, recorded, judge.probes) if judge.probes else []
        asked.append((row, recorded, len(tasks), questions))
        tasks += [
            partial(predict_next_action, judge.completer, messages, tools, judge.max_output_tokens)
            for messages in (history, context)
        ]
        tasks += [
            partial(probe, judge.completer, grader, messages, question, judge.max_output_tokens)
            for question in questions
            for messages in (history, context)
        ]
    answers = fan_out([_error_kept(task) for task in tasks])
    for row, recorded, start, questions in asked:
        full, mine, *verdicts = answers[start : start + 2 + 2 * len(questions)]
        error = next((a for a in (full, mine, *verdicts) if isinstance(a, LLMError)), None)
        if error is not None:
            row["model_next_action"] = {"error": str(error)}
            continue
        result = ModelScore(
            agree(mine, recorded, judge.threshold), agree(full, recorded, judge.threshold), tuple(recorded), mine, full
        ).to_json()
        if judge.probes:
            result["probes"] = probe_entries(questions, verdicts)
        row["model_next_action"] = result
    return scored


def make_judge(
    provider: str,
    model: str,
    *,
    probes: Sequence[str] = (),
    threshold: float = DEFAULT_THRESHOLD,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    **llm: Any,
) -> Judge:
    """A judge over `compactlab.llm.make_summarizer(provider, model, **llm)` (cache_dir, mode, base_url, ...)."""
    if isinstance(probes, str) or set(probes) - set(PROBE_KINDS):
        raise ValueError(f"[judge] probes: a list of {list(PROBE_KINDS)}, got {probes!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        raise ValueError(f"[judge] threshold must be between 0 and 1, got {threshold}")
    return Judge(
        make_summarizer(provider, model, **llm), threshold=threshold, probes=tuple(probes), max_output_tokens=max_output_tokens
    )
