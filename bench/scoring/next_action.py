"""Next-action preservation with a model: would a model still choose the recorded next step?

`compactlab.scoring.preservation` checks whether the *items* the next steps use survive a compaction. This
module asks a model instead. At each compaction it shows a model (the "judge", any provider of
`compactlab.llm`) the compacted context and asks for the single next action as JSON, then compares the
answer with what the agent really did next (the recorded next assistant turn): they agree on the
same tool with similar arguments (`compactlab.scoring.actions.agree` says exactly when).
The same model is asked again with the full, uncompacted history, which is the model's own
ceiling: a weak model often disagrees with the recorded agent whatever the context. The score of a
set of compactions is

    score = (agreements on compacted contexts / n) / (agreements on full contexts / n)
          = compacted_agree / full_agree          (None when full_agree == 0: no ceiling to divide by)

It is not capped at 1: a compaction that drops distracting history can help the model. `both`
(agreements on both contexts) is reported too, so `both / full_agree` (the share of the model's
correct guesses that survive the compaction, never above 1) can be read off the counts.

Optional probes (recall, artifact, continuation, decision; `compactlab.scoring.probes`) ask questions whose
reference answers come from the recorded history, graded yes/no by a judge prompt.

Every call goes through the content-addressed cache of `compactlab.llm` (`LLMSummarizer.complete`), so
a rerun costs nothing and CI replays recordings offline (a missing recording raises `CacheMiss`).

Limits, honestly: replay is open-loop, so only the first recorded action after a compaction is a
fair reference; agents often have several good next steps, so agreement is a noisy lower bound
and only the ratio to the full-context ceiling is meaningful; a reply that is not parseable JSON
counts as a disagreement (it is kept in `text` with `parsed=False`); the tool list shown to the
model is rebuilt from the session's tool calls (names and argument names; tool definitions are
not recorded); tool results are cut to 2,000 characters as for summaries; a full history longer
than the judge's window fails (the row gets an `error`, left out of the counts); token Jaccard
is crude for long written content. Use temperature 0 where the provider allows it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from compactlab.scoring.actions import DEFAULT_THRESHOLD, Action, agree
from compactlab.sessions.model import Message, TextPart, ToolCallPart
from compactlab.strategies.prompting import serialize

DEFAULT_MAX_OUTPUT_TOKENS = 2048  # reasoning models spend output tokens before the JSON

ACTION_SYSTEM = (
    "You are the AI agent whose conversation is shown. Decide the single next action you take. "
    "Answer with one JSON object and nothing else."
)
ACTION_PROMPT = """Tools you can call (names and argument names used in this session):
{tools}

The conversation so far:
<conversation>
{conversation}
</conversation>

What is your single next action? Answer with exactly one JSON object and nothing else:
{{"tool": "<tool name>", "arguments": {{"<argument name>": <value>}}}}
or, if your next step is a message to the user rather than a tool call:
{{"tool": null, "text": "<your message>"}}
"""


class Completer(Protocol):
    """What the judge needs: `compactlab.llm.LLMSummarizer` (cached) or, uncached, a bare `LLMClient`."""

    def complete(self, system: str, prompt: str, max_tokens: int) -> Any: ...  # .text, optional .usage


# --- the recorded action and the tool list -------------------------------------------------------


def recorded_actions(next_steps: Sequence[Message]) -> list[Action]:
    """The first assistant turn in `next_steps` (consecutive assistant messages): its tool calls, or its reply."""
    turn: list[Message] = []
    for message in next_steps:
        if message.role == "assistant":
            turn.append(message)
        elif turn:
            break
    calls = [p for m in turn for p in m.parts if isinstance(p, ToolCallPart)]
    if calls:
        return [Action(c.name, a if isinstance(a := c.parsed_arguments(), dict) else str(a)) for c in calls]
    text = "\n".join(p.text for m in turn for p in m.parts if isinstance(p, TextPart))
    return [Action(None, {}, text)] if turn else []


def tools_hint(messages: Sequence[Message]) -> str:
    """One line per tool called in `messages`: its name and the argument names it was called with."""
    tools: dict[str, dict[str, None]] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                arguments = part.parsed_arguments()
                keys = tools.setdefault(part.name, {})
                keys.update(dict.fromkeys(arguments if isinstance(arguments, dict) else ["input"]))
    return "\n".join(f"- {name}({', '.join(keys)})" for name, keys in sorted(tools.items())) or "(no tool calls recorded)"


# --- asking and parsing --------------------------------------------------------------------------


def ask(completer: Completer, system: str, prompt: str, max_tokens: int) -> tuple[str, float | None]:
    response = completer.complete(system, prompt, max_tokens)
    usage = getattr(response, "usage", None)
    return response.text or "", getattr(usage, "cost_usd", None)


def _json_objects(text: str, limit: int = 50) -> Iterable[dict]:
    decoder, start, tries = json.JSONDecoder(), text.find("{"), 0
    while start != -1 and tries < limit:
        tries += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            yield value
        start = text.find("{", end)


def _action_from(data: dict, cost: float | None) -> Action | None:
    key = next((k for k in ("tool", "name", "tool_name") if k in data), None)
    if key is None:
        return None
    tool = data[key]
    if tool is None or (isinstance(tool, str) and tool.strip().lower() in ("", "null", "none")):
        return Action(None, {}, str(data.get("text") or data.get("message") or ""), cost_usd=cost)
    if not isinstance(tool, str):
        return None
    arguments: Any = next((data[k] for k in ("arguments", "args", "input", "parameters") if k in data), {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass
    if not isinstance(arguments, (dict, str)):
        arguments = json.dumps(arguments)
    return Action(tool.strip(), arguments, cost_usd=cost)


def parse_action(reply: str, cost: float | None = None) -> Action:
    """The first JSON action in `reply` (fenced or bare, with text around it); unparsed otherwise."""
    for candidate in [*re.findall(r"```(?:json)?\s*\n?(.*?)```", reply, re.S), reply]:
        for data in _json_objects(candidate):
            if (action := _action_from(data, cost)) is not None:
                return action
    return Action(None, {}, reply, parsed=False, cost_usd=cost)


def predict_next_action(
    completer: Completer, messages: Sequence[Message], tools: str, max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
) -> Action:
    """Ask the model for its single next action given `messages` (one cached call)."""
    prompt = ACTION_PROMPT.format(tools=tools, conversation=serialize(messages))
    reply, cost = ask(completer, ACTION_SYSTEM, prompt, max_output_tokens)
    return parse_action(reply, cost)


# --- one compaction, and a set of them -----------------------------------------------------------


@dataclass(frozen=True)
class ModelScore:
    compacted_agrees: bool
    full_agrees: bool
    recorded: tuple[Action, ...]
    compacted: Action
    full: Action

    def to_json(self) -> dict:
        costs = [a.cost_usd for a in (self.full, self.compacted)]
        return {
            "compacted_agrees": self.compacted_agrees,
            "full_agrees": self.full_agrees,
            "recorded": [a.to_json() for a in self.recorded],
            "predicted": self.compacted.to_json(),
            "full_predicted": self.full.to_json(),
            "cost_usd": None if None in costs else sum(costs),
        }


def next_action_preservation(
    completer: Completer,
    history_before: Sequence[Message],
    compacted: Sequence[Message],
    recorded_next: Message | Sequence[Action],
    tools: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
) -> ModelScore:
    """Predict the next action on the full history (first call), then on the compacted context."""
    recorded = tuple(recorded_actions([recorded_next]) if isinstance(recorded_next, Message) else recorded_next)
    tools = tools if tools is not None else tools_hint(history_before)
    full = predict_next_action(completer, history_before, tools, max_output_tokens)
    mine = predict_next_action(completer, compacted, tools, max_output_tokens)
    return ModelScore(agree(mine, recorded, threshold), agree(full, recorded, threshold), recorded, mine, full)


def _ratio(compacted: int, full: int) -> float | None:
    return compacted / full if full else None


def aggregate(results: Iterable[ModelScore | dict | None]) -> dict:
    """Counts and score of a set of compactions (`ModelScore`s or rows' `model_next_action` dicts).

    score = compacted_agree / full_agree, None when full_agree is 0. Error results are counted but
    not scored; None (failed compactions) is skipped. Probes get the same counts of yes verdicts.
    """
    counts = {"n": 0, "compacted_agree": 0, "full_agree": 0, "both": 0, "errors": 0}
    probes: dict[str, dict[str, int]] = {}
    for result in results:
        data = result.to_json() if isinstance(result, ModelScore) else result
        if data is None or "error" in data:
            counts["errors"] += data is not None
            continue
        counts["n"] += 1
        counts["compacted_agree"] += bool(data["compacted_agrees"])
        counts["full_agree"] += bool(data["full_agrees"])
        counts["both"] += bool(data["compacted_agrees"] and data["full_agrees"])
        for entry in data.get("probes", ()):
            kind = probes.setdefault(entry["kind"], {"n": 0, "compacted": 0, "full": 0})
            kind["n"] += 1
            kind["compacted"] += entry["compacted"] is True
            kind["full"] += entry["full"] is True
    summary: dict = {**counts, "score": _ratio(counts["compacted_agree"], counts["full_agree"])}
    if probes:
        summary["probes"] = {k: {**c, "score": _ratio(c["compacted"], c["full"])} for k, c in sorted(probes.items())}
    return summary


def aggregate_rows(rows: Iterable[dict]) -> dict[str, dict]:
    """Per setting label: the next-action counts and score of compaction rows that were judged."""
    by_setting: dict[str, list[dict]] = {}
    for row in rows:
        if row.get("model_next_action") is not None:
            by_setting.setdefault(row["setting"], []).append(row["model_next_action"])
    return {setting: aggregate(items) for setting, items in sorted(by_setting.items())}


# --- the run's integration -----------------------------------------------------------------------


@dataclass
class Judge:
    """The run's model judge: who predicts and answers, who grades probes, and the settings."""

    completer: Completer
    grader: Completer | None = None  # None: the completer grades too
    threshold: float = DEFAULT_THRESHOLD
    probes: tuple[str, ...] = ()
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS

    def close(self) -> None:
        for who in {id(w): w for w in (self.completer, self.grader) if w is not None}.values():
            if callable(close := getattr(who, "close", None)):
                close()
