"""Validity against behaviour: did the agent have to get back what the metric says was lost?

At a real compaction the recorded continuation is what the agent really did next. An item the
preservation metric (`compactlab.scoring.preservation`) marks LOST by the production summary was really gone
only if the agent had to get it back before using it: a tool result brought it again (a re-read,
a search, a re-run) between the compaction and the first of the next k steps that uses it. Items marked KEPT should need that
less often. So, at each real compaction, the share of lost items re-acquired before use is set
against the same share for kept items, with the counts; the lost items never re-acquired are
listed, since they are where the metric and the agent disagree.

A step's own tool call counts as the use, not as re-acquisition: the agent needed the item to
make that call. The compacted context is the replay's (summary and Claude Code's re-attachments).

Which messages count (`rule`, issue 41; `RULES`): shipped, **"results"**: a tool result holding the
item. A user message holding it is the user's own words, and the agent's own call naming it
shows it had the item: neither is a response to loss, so such items are counted apart
(**incidental**) and left out of both shares. Chosen leaving one repository out over the
development set and the shared sessions (`python -m tests.scripts.reacquisition_validity`):
"results" separated lost from kept widest in every fold (Anthropic, +16 points per compaction out
of sample, against +9 for "any", the rule before). A reader judged 40 development-set cases (was
the fetch a response to the item's loss?): "results" agrees on 29 of the 37 judged, "any" on 24,
"for the item" (a result whose call names a part of the item or works on what the using step works
on) on 18. The agent's own call naming an item, or the user's words holding it, were no fetch; a
re-read of the file an edit then quotes was the response to loss the narrower candidates missed
("for the item" and "names it", the same without the second clause, separate by +3 and 0 points).

A lost item used before any message could bring it back (`lost_at_once`: no tool call, tool
result or user message between the compaction and its use; typically the first step after an
auto-compaction) cannot be re-acquired: the agent had it, so the real compacted context held
something the replay's lacks (at m-claude 3af9b1a7, files the agent says Claude Code's reminders
showed it and the session never shows read), or the agent named it from nothing. Those are
counted apart: they measure the replay's reconstruction of the real context, not the metric.

The lost items are also counted by recoverability (`compactlab.scoring.recoverability`), with how
many of each were re-acquired: recoverable items are what the agent can and should fetch again,
unrecoverable ones what it could only ask again, re-derive or do without.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from compactlab.memo import IdentityMemo
from compactlab.scoring.extraction import extract_items
from compactlab.scoring.general_items import UBIQUITOUS_SHARE
from compactlab.scoring.matching import Haystack, Item, present
from compactlab.scoring.preservation import preservation_at
from compactlab.scoring.recoverability import LABELS, classify, use_positions
from compactlab.sessions.model import Message, ToolCallPart, ToolResultPart

FOR_THE_ITEM = "for the item"
INCIDENTAL = "incidental"
# Which fetches count as re-acquisition: "for the item" (the module docstring); "names it", the same
# without a result whose use works on what its call fetched; or "any" message that holds the item
# (before issue 41: the file about to be edited counted for every name in it); or "results", any tool
# result holding it (a user message or the agent's own call holding it is neither).
RULES = ("any", FOR_THE_ITEM, "names it", "results")
# The shipped rule, chosen leaving one repository out (the module docstring).
SHIPPED_RULE = "results"


@dataclass(frozen=True)
class Reacquisition:
    at_message: int
    lost: int
    lost_reacquired: int
    kept: int
    kept_reacquired: int
    lost_not_reacquired: tuple[str, ...]  # "kind:text"
    lost_at_once: int = 0  # lost items used before any message could bring them back
    # Items that came back only in the user's words or the agent's own call: in `lost`/`kept`, in neither share.
    lost_incidental: int = 0
    kept_incidental: int = 0
    # The lost items by `compactlab.scoring.recoverability`'s label, and of each how many were re-acquired.
    lost_recoverable: int = 0
    lost_recoverable_reacquired: int = 0
    lost_unrecoverable: int = 0
    lost_unrecoverable_reacquired: int = 0
    lost_unknown: int = 0
    lost_unknown_reacquired: int = 0

    @property
    def lost_share(self) -> float | None:
        return share(self.lost_reacquired, self.lost, self.lost_incidental)

    @property
    def kept_share(self) -> float | None:
        return share(self.kept_reacquired, self.kept, self.kept_incidental)


def share(reacquired: int, of: int, incidental: int = 0) -> float | None:
    """The share of the items re-acquired before use, incidental ones left out (None: no item counts)."""
    counted = of - incidental
    return reacquired / counted if counted > 0 else None


def reacquisition_at(
    messages: Sequence[Message],
    index: int,
    compacted: Sequence[Message],
    k: int = 5,
    ubiquitous: float = UBIQUITOUS_SHARE,
    rule: str = SHIPPED_RULE,
) -> Reacquisition:
    """Re-acquisition of the items the next `k` steps after `messages[index]` need, lost or kept by
    `compacted`; `ubiquitous`: the preservation metric's share of the history above which an item
    is not needed (`compactlab.scoring.general_items`); `rule`: which fetches count (`RULES`)."""
    score = preservation_at(messages, index, compacted, (k,), ubiquitous)[k]
    use = use_positions(messages, index, k)
    lost_way = {item: came_back(messages, index, use(item), item, rule) for item in score.lost}
    kept_way = {item: came_back(messages, index, use(item), item, rule) for item in score.kept}
    lost_back = [item for item, way in lost_way.items() if way == FOR_THE_ITEM]
    kept_back = [item for item, way in kept_way.items() if way == FOR_THE_ITEM]
    at_once = [item for item in score.lost if not any(_acquiring_part(m) for m in messages[index : use(item)])]
    # The lost items by recoverability (`compactlab.scoring.recoverability`), and how many of each came back.
    labels = {item: classify(messages, index, item, use(item)).label for item in score.lost}
    by_label = {}
    for label in LABELS:
        of_label = [item for item in score.lost if labels[item] == label]
        by_label[f"lost_{label}"] = len(of_label)
        by_label[f"lost_{label}_reacquired"] = sum(1 for item in of_label if item in lost_back)
    return Reacquisition(
        index,
        len(score.lost),
        len(lost_back),
        len(score.kept),
        len(kept_back),
        tuple(f"{i.kind}:{i.text}" for i in score.lost if lost_way[i] is None),
        len(at_once),
        sum(way == INCIDENTAL for way in lost_way.values()),
        sum(way == INCIDENTAL for way in kept_way.values()),
        **by_label,
    )


def reacquisition_json(messages: Sequence[Message], index: int, compacted: Sequence[Message], k: int = 5) -> dict:
    """`reacquisition_at` as a compaction row holds it (JSON-ready)."""
    found = reacquisition_at(messages, index, compacted, k)
    return {
        **{name: value for name, value in asdict(found).items() if name != "at_message"},
        "lost_not_reacquired": list(found.lost_not_reacquired),
        "k": k,
    }


COUNTS = (
    "lost",
    "lost_reacquired",
    "kept",
    "kept_reacquired",
    "lost_at_once",
    "lost_incidental",
    "kept_incidental",
    *(f"lost_{label}{back}" for label in LABELS for back in ("", "_reacquired")),
)


def came_back(messages: Sequence[Message], start: int, use: int, item: Item, rule: str = SHIPPED_RULE) -> str | None:
    """How `item` came back between the compaction and its use: `FOR_THE_ITEM`, `INCIDENTAL` (only
    in the results of calls for something else) or None (not at all). Under the rule "any", every
    message holding it is a fetch for it."""
    if rule not in RULES:
        raise ValueError(f"unknown re-acquisition rule {rule!r}: one of {', '.join(RULES)}")
    between = [m for m in (_acquiring_part(m) for m in messages[start:use]) if m is not None]
    if not present(item, Haystack.of(between)):
        return None
    if rule == "any":
        return FOR_THE_ITEM
    if rule == "results":  # only what a tool brought back; the user's own words or the agent's call are neither
        held = [m for m in between if m.role == "tool" and present(item, Haystack.of([m]))]
        return FOR_THE_ITEM if held else INCIDENTAL
    calls = _calls_by_id(messages)
    used_on = _targets(messages[use]) if rule == FOR_THE_ITEM and use < len(messages) else frozenset()
    for message in between:
        if message.role == "tool":
            for part in message.parts:
                if isinstance(part, ToolResultPart) and present(item, part.content):
                    call = calls.get(part.call_id)
                    if call is None:
                        continue
                    if names_part_of(Haystack.of([Message("assistant", (call,))]).text, item):
                        return FOR_THE_ITEM
                    if used_on & _targets(Message("assistant", (call,))):  # the use works on what the call fetched
                        return FOR_THE_ITEM
        elif present(item, Haystack.of([message])):  # a user message, or a call naming it
            return FOR_THE_ITEM
    return INCIDENTAL


def _targets(message: Message) -> frozenset[str]:
    """The paths and commands a message's tool calls work on (`Read x`, `Edit x`, `pytest tests/a.py`)."""
    calls = tuple(p for p in message.parts if isinstance(p, ToolCallPart) and not p.from_text)
    if not calls:
        return frozenset()
    return frozenset(i.text for i in extract_items([Message("assistant", calls)]) if i.kind in ("path", "command"))


_PIECE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
MIN_PIECE = 4  # shorter pieces (`get`, `src`, `app`) name half the session


def names_part_of(call_text: str, item: Item) -> bool:
    """Whether a call's text names a part of `item`: the folder a path is in or its file name (or
    that name's stem), or a word of a name (`session` of `SessionStore`, `load_session`), at least
    `MIN_PIECE` characters long, case aside."""
    text = call_text.lower()
    if item.kind == "path":
        folder, _, name = item.text.rstrip("/").rpartition("/")
        stem = name.rsplit(".", 1)[0]
        pieces = [folder, name, stem] if folder.strip("./~") else [name, stem]
    else:
        pieces = _PIECE.findall(item.text)
    return any(len(piece) >= MIN_PIECE and piece.lower() in text for piece in pieces)


_CALLS: IdentityMemo[dict[str, ToolCallPart]] = IdentityMemo(8)


def _calls_by_id(messages: Sequence[Message]) -> dict[str, ToolCallPart]:
    return _CALLS.of(
        messages, lambda ms: {p.id: p for m in ms if m.role == "assistant" for p in m.parts if isinstance(p, ToolCallPart)}
    )


def _acquiring_part(message: Message) -> Message | None:
    if message.role in ("tool", "user"):
        return message
    calls = tuple(p for p in message.parts if isinstance(p, ToolCallPart) and not p.from_text)
    return Message(role="assistant", parts=calls) if calls else None
