"""Next-step preservation: does the compacted context still hold what the agent does next needs?

Replay is open-loop: after a compaction the recorded future is replayed unchanged. So we can look
at the next k recorded assistant steps (k = 1 and 5), list what they rely on (file paths,
identifiers, commands, URLs, error names, numbers), keep the items the history before the
compaction already contained, and score the share still present in the compacted context:

    score = len(kept) / len(needed)      (None when nothing is needed: "not applicable")

Items that are absent from the history are new information the step found itself (e.g. a path it
guessed or a name it invented) and no compaction could have kept them, so they are not needed.
Nor are items whose survival cannot matter (`compactlab.scoring.general_items`): general words,
round numbers, system paths, and items present in most of the history's messages.

Extraction (`extract_items`, what a step consumes) lives in `compactlab.scoring.extraction`, with its rules.
Matching (`present`, `Haystack`) lives in `compactlab.scoring.matching`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice

from compactlab.memo import IdentityMemo
from compactlab.scoring.extraction import (
    step_items,
)  # noqa: F401 (re-exported)
from compactlab.scoring.general_items import UBIQUITOUS_SHARE, is_general, is_ubiquitous
from compactlab.scoring.matching import Item, SessionText
from compactlab.sessions.model import Message, ToolCallPart


@dataclass(frozen=True)
class StepScore:
    k: int
    needed: tuple[Item, ...]
    kept: tuple[Item, ...]
    lost: tuple[Item, ...]
    score: float | None  # None: the steps needed nothing from the history (not applicable)


def preservation(
    history_before: Sequence[Message], compacted: Sequence[Message], next_steps: Sequence[Message], k: int
) -> StepScore:
    """Score one compaction on the next `k` recorded assistant steps.

    `next_steps` are the recorded messages after the compaction point; only the first `k` assistant
    messages among them are read (fewer near the end of a session). `history_before` is the full
    uncompacted history, `compacted` the context the strategy produced (including its summary).
    """
    messages = (*history_before, *next_steps)
    return preservation_at(messages, len(history_before), compacted, (k,))[k]


def preservation_at(
    messages: Sequence[Message],
    index: int,
    compacted: Sequence[Message],
    ks: Sequence[int] = (1, 5),
    ubiquitous: float = UBIQUITOUS_SHARE,
) -> dict[int, StepScore]:
    """`preservation` for a compaction before `messages[index]`, for several k at once; items in at
    least the share `ubiquitous` of the history's messages are not needed (`general_items`).

    What the next steps need depends only on the session and the position, not on the strategy,
    and where an item occurs in the session is the same for every compaction of it: a sweep that
    compacts the same session many times extracts each step's items once and searches the
    session's text once per item (`SessionText`, kept for the last few sessions).
    """
    return _SCORES.get(
        (messages, compacted), (index, tuple(ks), ubiquitous), lambda: _scores(messages, index, compacted, tuple(ks), ubiquitous)
    )


def _scores(
    messages: Sequence[Message], index: int, compacted: Sequence[Message], ks: tuple[int, ...], ubiquitous: float
) -> dict[int, StepScore]:
    text = _session_text(messages)
    needed_by_k = _needed_at(text, index, tuple(ks), ubiquitous)
    items = list(dict.fromkeys(i for needed in needed_by_k.values() if needed for i in needed))
    return step_scores_of(needed_by_k, dict(zip(items, text.in_context(items, compacted))))


def step_scores_of(needed_by_k: dict[int, tuple[Item, ...] | None], present: dict[Item, bool]) -> dict[int, StepScore]:
    """The scores for each k, from what the next steps need and which of those items the context holds."""
    scores = {}
    for k, needed in needed_by_k.items():
        if needed is None:
            scores[k] = StepScore(k, (), (), (), None)
            continue
        kept = tuple(i for i in needed if present[i])
        lost = tuple(i for i in needed if not present[i])
        scores[k] = StepScore(k, needed, kept, lost, len(kept) / len(needed) if needed else None)
    return scores


# The scores of the last compactions, by the identity of the session and the compacted context:
# settings that share a compaction (compactlab.replay.shared_compactions) hand over the same context, scored
# once. The entry holds both, so their ids cannot be reused while it lives.
_SCORES: IdentityMemo[dict[int, StepScore]] = IdentityMemo(257)
# Each session's searchable text, kept for the last few sessions.
_TEXTS: IdentityMemo[SessionText] = IdentityMemo(8)


def _session_text(messages: Sequence[Message]) -> SessionText:
    return _TEXTS.of(messages, SessionText)


_NEEDED: IdentityMemo[dict[int, tuple[Item, ...] | None]] = IdentityMemo(513)


def _needed_at(
    text: SessionText, index: int, ks: tuple[int, ...], ubiquitous: float = UBIQUITOUS_SHARE
) -> dict[int, tuple[Item, ...] | None]:
    return _NEEDED.get((text,), (index, ks, ubiquitous), lambda: _needed(text, index, ks, ubiquitous))


def _needed(text: SessionText, index: int, ks: tuple[int, ...], ubiquitous: float) -> dict[int, tuple[Item, ...] | None]:
    steps = list(islice((m for m in text.messages[index:] if m.role == "assistant"), max(ks)))
    result: dict[int, tuple[Item, ...] | None] = {}
    for k in ks:
        items, weak = step_items(steps[:k])
        # Items absent from the history are what the step found itself, and items whose survival
        # cannot matter are known anyway: neither is needed (module docstring).
        result[k] = (
            tuple(
                i
                for i in items
                if not is_general(i)
                and text.in_history(i, index)
                and _consumed(text, i, index, weak)
                and not is_ubiquitous(history_count(text, i, index), index, ubiquitous)
            )
            if items
            else None
        )
    return result


def history_count(text: SessionText, item: Item, index: int) -> int:
    """How many of the messages before `index` hold `item` (0 for a command or a text with a line
    break, which `SessionText` finds in no single message)."""
    if item.kind == "command" or "\n" in item.text:
        return 0
    return bisect_left(text.occurring(item, index), index)


def needed_items(messages: Sequence[Message], index: int, ks: Sequence[int] = (1, 5)) -> dict[int, tuple[Item, ...] | None]:
    """What the next k recorded assistant steps after `messages[index]` need from the history, for
    each k (None: the steps use nothing at all), with the session's text (`SessionText`) that
    `preservation_at` searches: for other scores of the same compaction (`compactlab.scoring.summary_recall`)."""
    return _needed_at(_session_text(messages), index, tuple(ks))


def session_text(messages: Sequence[Message]) -> SessionText:
    """The searchable text of a session, shared with `preservation_at` (kept for the last few sessions)."""
    return _session_text(messages)


def _consumed(text: SessionText, item: Item, index: int, weak: frozenset[str]) -> bool:
    """Not a name of one of the session's tools (`TodoWrite`) or of their parameters, and a prose word in upper camel case
    only when the history before it uses it as code (`class WhereNode`, `WhereNode(`), not only as
    a product's name in English (`WireGuard`, `YubiKey`)."""
    if item.kind == "path":  # a bare `Next.js` is a file only when the history has it below a folder
        return item.text not in weak or 0 <= text.text.find(f"/{item.text}") < text.starts[index]
    if item.kind != "identifier":
        return True
    names, keys = _tool_vocabulary(text)
    # The agent's tools and their parameters (`TodoWrite`, Codex's `tools.exec_command`, `yield_time_ms`):
    # the agent's own interface, known without the session (issue 41).
    if item.text in names or item.text in keys or item.text.rpartition(".")[2] in names:
        return False
    return item.text not in weak or _used_as_code(text, item.text, index)


_TOOLS: IdentityMemo[tuple[frozenset[str], frozenset[str]]] = IdentityMemo(8)


def _tool_vocabulary(text: SessionText) -> tuple[frozenset[str], frozenset[str]]:
    """The names of the session's tools, and the names of their calls' parameters."""
    return _TOOLS.of(text, _vocabulary_of)


def _vocabulary_of(text: SessionText) -> tuple[frozenset[str], frozenset[str]]:
    calls = [p for m in text.messages for p in m.parts if isinstance(p, ToolCallPart)]
    keys = {str(k) for p in calls if isinstance(arguments := p.parsed_arguments(), dict) for k in arguments}
    return frozenset(p.name for p in calls), frozenset(keys)


_CODE_BEFORE = (".", "::", "<", "class ", "import ", "new ", "def ", "fn ", "struct ", "interface ", "type ", "enum ")
_CODE_AFTER = ("(", "::", "<", "[", "{")
_FIRST_CODE_USE: IdentityMemo[int] = IdentityMemo(100_001)


def _used_as_code(text: SessionText, name: str, index: int) -> bool:
    """Whether the session's text before message `index` uses `name` as code: declared, imported,
    called, or reached by `.` or `::` (its first such use is found once per session and name)."""
    first = _FIRST_CODE_USE.get((text,), name, lambda: _first_code_use(text.text, name))
    return 0 <= first < text.starts[index]


def _first_code_use(whole: str, name: str) -> int:
    at = whole.find(name)
    while at != -1:
        end = at + len(name)
        before, after = whole[max(0, at - 10) : at], whole[end : end + 2]
        whole_word = not (at and (whole[at - 1].isalnum() or whole[at - 1] == "_")) and not (
            after[:1].isalnum() or after[:1] == "_"
        )
        if whole_word and (
            before.endswith(_CODE_BEFORE) or after.startswith(_CODE_AFTER) or (after[:1] == "." and after[1:2].isalpha())
        ):
            return at
        at = whole.find(name, at + 1)
    return -1
