"""A hand-labelled sample of next-step needed items, to measure the extractor's precision and recall.

The labelling rule is docs/needed-items-labelling.md. The sample (tests/data/needed_items_sample.jsonl)
holds steps, one JSON record per sampled assistant step, drawn with a fixed seed from every source
of the shared real sessions that holds agent steps:

    {"source", "session" (path under the shared folder), "step" (message index), "message"
     (the step itself: role and parts), "items": [{"kind", "text", "context", "label"}],
     "missed": [[kind, text], ...] or absent}

`items` are needed items of the step as compactlab.scoring.preservation computes them for k = 1 (what the
extractor finds in the step that the history before it holds), with a short context and a `reason`.
At most `CAP` of a step's items count for precision: those first in a fixed pseudo-random order
(`capped`). Whole steps let one step dominate a source (an ExitPlanMode plan held 220 items), and
the items of one step stand or fall together, so a source's figure rests on its steps. `label` is
"meaningful", "noise" or "produced" (by the rule), or null until someone reads it. A record with
`missed` was read for recall, all its items labelled: `missed` lists the meaningful consumed items
that the history holds and the extractor did not find. Labels of items the extractor no longer
finds are kept (they no longer count), so a change can be undone without labelling again.

Scoring recomputes the needed items from the shared sessions with the current code; the stored
step must still be the session's message there. A needed item that no record labels is an
error to fix by labelling it (`python -m tests.scripts.needed_items_sample refresh`), never skipped.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from compactlab.scoring.matching import Item, _searchable
from compactlab.scoring.preservation import needed_items
from compactlab.sessions.importers import load_file
from compactlab.sessions.model import Message, Session, part_from_dict, part_to_dict

# Every shared source with agent steps (condenser-pairs-gpt5mini holds context → summary pairs: no agent acts there).
SOURCES = (
    "claude-code-log",
    "m-claude",
    "pai-claude",
    "pai-claude-2",
    "mini-swe-agent-pr816",
    "mini-swe-agent-v1",
    "codex-rollouts",
    "pi-sessions",
)
# Items per step that count for precision. A source's ~50 items then come from 10 steps or more,
# so no step holds more than a tenth of its figure.
CAP = 5
# Steps per source read for recall (all their items labelled, what the extractor missed listed): the
# first ones drawn that need at most RECALL_MAX_ITEMS items, so that no one step makes up a source's recall.
RECALL_STEPS = 3
RECALL_MAX_ITEMS = 2 * CAP
LABELS = ("meaningful", "noise", "produced")
SESSION_SUFFIXES = (".jsonl", ".json")


# Sessions whose sampled steps showed an extractor defect that was then fixed (issue 27 §2): a figure
# on them is in-sample for that fix. `score --held-out` leaves their steps out, so that what the
# fixes do is also measured on sessions none of them was chosen on.
TUNED_ON = {
    "pi-sessions/compact.jsonl": "pi's edit tool names its texts oldText/newText (step 649)",
    "claude-code-log/-Users-dain-workspace-coderabbit-review-helper__cb2e607c-c758-415a-8b45-c49e4631906a.jsonl": (
        "standard-library classes' methods: parser.parse_args (step 67)"
    ),
    "pai-claude/b566e56e-94a7-425e-a662-d701321e27ce.jsonl": "quoted paths holding spaces (steps 5, 115, 240)",
    "pai-claude/24a90d02-9724-4548-9f4f-97bcb9f93ef3.jsonl": "JavaScript globals, template URLs (step 29)",
    "m-claude/f551142a-ef6a-46fd-a3bf-14a924370fb0.jsonl": "echo's text to the terminal (step 97)",
    "m-claude/ea6b9704-440b-478b-bcc7-3705480cec17.jsonl": "a path right after a glob's `*` (step 6)",
}


class SampleError(ValueError):
    """A sample file that cannot be read: names the file, the line and what is wrong."""


@dataclass(frozen=True)
class SampledStep:
    source: str
    session: str
    step: int
    message: Message
    items: tuple[dict, ...]  # {"kind", "text", "context", "label", "reason"}
    missed: tuple[tuple[str, str], ...] | None  # None: not read for recall

    def labels(self) -> dict[Item, str | None]:
        return {Item(i["kind"], i["text"]): i["label"] for i in self.items}


@dataclass(frozen=True)
class SourceScore:
    source: str
    steps: int
    labelled: int  # needed items found now that carry a label
    meaningful: int
    noise: int
    produced: int
    recall_steps: int
    recall_found: int  # meaningful items found in the steps read for recall
    recall_missed: int

    @property
    def precision(self) -> float | None:
        return self.meaningful / self.labelled if self.labelled else None

    @property
    def recall(self) -> float | None:
        total = self.recall_found + self.recall_missed
        return self.recall_found / total if total else None

    @property
    def precision_interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.meaningful, self.labelled) if self.labelled else None


def wilson_interval(successes: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default): unlike p ± z·se it stays inside
    [0, 1] and keeps its coverage near 0 or 1 and for a few dozen trials, as per-source figures have."""
    if trials <= 0:
        raise ValueError(f"a proportion needs at least one trial, not {trials}")
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


# --- reading and writing -------------------------------------------------------------------------


def message_to_dict(message: Message) -> dict:
    return {"role": message.role, "parts": [part_to_dict(p) for p in message.parts]}


def message_from_dict(data: dict) -> Message:
    return Message(data["role"], tuple(part_from_dict(p) for p in data["parts"]))


def step_to_dict(step: SampledStep) -> dict:
    record = {
        "source": step.source,
        "session": step.session,
        "step": step.step,
        "items": list(step.items),
    }
    if step.missed is not None:
        record["missed"] = [list(m) for m in step.missed]
    record["message"] = message_to_dict(step.message)
    return record


def read_sample(path: Path) -> list[SampledStep]:
    steps = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            items = tuple(data["items"])
            for item in items:
                if item.get("label") not in (*LABELS, None) or not {"kind", "text"} <= item.keys():
                    raise ValueError(f"item {item.get('text')!r}: label must be one of {LABELS} or null")
            missed = data.get("missed")
            steps.append(
                SampledStep(
                    data["source"],
                    data["session"],
                    int(data["step"]),
                    message_from_dict(data["message"]),
                    items,
                    None if missed is None else tuple((k, t) for k, t in missed),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise SampleError(f"{path}:{number}: {type(exc).__name__}: {exc}") from exc
    return steps


def write_sample(steps: Iterable[SampledStep], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(step_to_dict(s), ensure_ascii=False) for s in steps]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# --- scoring -------------------------------------------------------------------------------------

Needed = dict[tuple[str, int], tuple[Item, ...]]  # (session, step) -> what the step needs now


def needed_now(steps: Sequence[SampledStep], shared: Path) -> Needed:
    """The needed items of each sampled step by the current code, from the shared sessions."""
    loaded: dict[str, list[Session]] = {}
    result = {}
    for step in steps:
        if step.session not in loaded:
            loaded[step.session] = load_file(shared / step.session, lenient=True)
        stored = message_to_dict(step.message)
        session = next(
            (t for t in loaded[step.session] if step.step < len(t.messages) and message_to_dict(t.messages[step.step]) == stored),
            None,
        )
        if session is None:
            raise SampleError(f"{shared / step.session}: message {step.step} is not the sampled step any more")
        result[(step.session, step.step)] = needed_items(session.messages, step.step, (1,))[1] or ()
    return result


def capped(session: str, step: int, items: Sequence[Item]) -> tuple[Item, ...]:
    """The `CAP` items of a step that count for precision: first in an order fixed by each item's
    text and place (a hash), so anyone recomputes the same choice, and a change to the extractor
    that adds or drops an item leaves the others' order alone. Returned in the step's order."""

    def rank(item: Item) -> str:
        return hashlib.sha256(f"{session}\0{step}\0{item.kind}\0{item.text}".encode()).hexdigest()

    chosen = set(sorted(items, key=rank)[:CAP])
    return tuple(i for i in items if i in chosen)


def counted(step: SampledStep, needed: Needed) -> tuple[Item, ...]:
    """The needed items of a sampled step that are scored for precision (`capped`)."""
    return capped(step.session, step.step, needed[(step.session, step.step)])


def to_label(step: SampledStep, needed: Needed) -> tuple[Item, ...]:
    """What must carry a label: the counted items, and every needed item of a step read for recall."""
    return needed[(step.session, step.step)] if step.missed is not None else counted(step, needed)


def unlabelled(steps: Sequence[SampledStep], needed: Needed) -> list[tuple[SampledStep, Item]]:
    """Needed items to label (`to_label`) that no record labels (new to the sample, or with a null label)."""
    return [(step, item) for step in steps for item in to_label(step, needed) if step.labels().get(item) is None]


def scores(steps: Sequence[SampledStep], needed: Needed) -> dict[str, SourceScore]:
    """Precision per source on the counted items the extractor needs now; recall on the steps read for it."""
    result = {}
    for source in dict.fromkeys(s.source for s in steps):
        counts = dict.fromkeys(LABELS, 0)
        recall_steps = recall_found = recall_missed = 0
        of_source = [s for s in steps if s.source == source]
        for step in of_source:
            labels = step.labels()
            for label in (labels.get(i) for i in counted(step, needed)):
                if label is not None:
                    counts[label] += 1
            if step.missed is not None:
                recall_steps += 1
                recall_found += sum(labels.get(i) == "meaningful" for i in needed[(step.session, step.step)])
                recall_missed += len(step.missed)
        result[source] = SourceScore(
            source,
            len(of_source),
            sum(counts.values()),
            counts["meaningful"],
            counts["noise"],
            counts["produced"],
            recall_steps,
            recall_found,
            recall_missed,
        )
    return result


# --- drawing from the shared sessions ---------------------------------------------------------


def source_folders(root: Path) -> tuple[str, ...]:
    """The sources of a folder of sessions: `SOURCES` for the shared sessions, otherwise each
    subfolder holding session files (a repository of the development set, say)."""
    if all((root / source).is_dir() for source in SOURCES):
        return SOURCES
    return tuple(sorted(p.name for p in root.iterdir() if p.is_dir() and session_files(root, p.name)))


def session_files(shared: Path, source: str) -> list[Path]:
    folder = shared / source
    if not folder.is_dir():
        known = sorted(p.name for p in shared.iterdir() if p.is_dir()) if shared.is_dir() else []
        close = difflib.get_close_matches(source, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (the folders there: {', '.join(known) or 'none'})"
        raise FileNotFoundError(f"{folder}: no such source folder{hint}")
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in SESSION_SUFFIXES)


def load_source(shared: Path, source: str) -> Iterator[tuple[str, Session]]:
    """Each session of a source with its path under `shared` (damaged records skipped, as --lenient)."""
    for path in session_files(shared, source):
        for session in load_file(path, lenient=True):
            yield path.relative_to(shared).as_posix(), session


def copied_steps(sessions: Sequence[tuple[str, Session]]) -> frozenset[tuple[int, int]]:
    """(session, message) positions whose step, with the message before it, is already an earlier
    position's: a sub-agent file that starts with a copy of its parent, or the same session saved
    twice, is one data point, drawn at its first place only. (The message before is compared too, so
    that a short step that recurs on its own, `Let me check.` with the same call, is not a copy.)"""
    seen: set[str] = set()
    copies = set()
    for t, (_, session) in enumerate(sessions):
        previous = ""
        for index, message in enumerate(session.messages):
            key = json.dumps(message_to_dict(message), sort_keys=True)
            if message.role == "assistant":
                pair = hashlib.sha256(f"{previous}\0{key}".encode()).hexdigest()
                if pair in seen:
                    copies.add((t, index))
                seen.add(pair)
            previous = key
    return frozenset(copies)


def context_of(message: Message, text: str, width: int = 60) -> str:
    """The item's first occurrence in the step's text, with `width` characters either side, on one line."""
    whole = "\n".join(_searchable(message))
    at = whole.find(text)
    if at == -1:
        return ""
    return " ".join(whole[max(0, at - width) : at + len(text) + width].split())


def _item_record(message: Message, item: Item) -> dict:
    return {"kind": item.kind, "text": item.text, "context": context_of(message, item.text), "label": None, "reason": ""}


def draw(
    shared: Path,
    seed: int,
    items_per_source: int,
    sources: Sequence[str] = SOURCES,
    exclude: frozenset[tuple[str, int]] = frozenset(),
) -> list[SampledStep]:
    """Random assistant steps of each source (uniform over steps that need something, none of
    `exclude`: (session, step) pairs held out, such as an earlier sample's), until each source has
    at least `items_per_source` counted needed items. The first `RECALL_STEPS` steps of a source that
    need at most `RECALL_MAX_ITEMS` items are read for recall: all their items listed, `missed` empty
    until the reader fills it. Labels are null: read them by the rule."""
    sample: list[SampledStep] = []
    for source in sources:
        sessions = list(load_source(shared, source))
        positions = [(t, i) for t, (_, tr) in enumerate(sessions) for i, m in enumerate(tr.messages) if m.role == "assistant"]
        copies = copied_steps(sessions)
        random.Random(f"{seed}:{source}").shuffle(positions)
        total = 0
        for t, index in positions:
            if total >= items_per_source:
                break
            name, session = sessions[t]
            if (name, index) in exclude or (t, index) in copies:
                continue
            needed = needed_items(session.messages, index, (1,))[1] or ()
            if needed:
                for_recall = (
                    len(needed) <= RECALL_MAX_ITEMS
                    and sum(s.source == source and s.missed is not None for s in sample) < RECALL_STEPS
                )
                chosen = tuple(needed) if for_recall else capped(name, index, needed)
                total += min(len(needed), CAP)
                message = session.messages[index]
                sample.append(
                    SampledStep(
                        source, name, index, message, tuple(_item_record(message, i) for i in chosen), () if for_recall else None
                    )
                )
    return sample


def refresh(steps: Sequence[SampledStep], shared: Path) -> list[SampledStep]:
    """The steps with each counted item the current code needs and no record lists added, label null (to read)."""
    needed = needed_now(steps, shared)
    result = []
    for step in steps:
        known = step.labels()
        new = [_item_record(step.message, i) for i in to_label(step, needed) if i not in known]
        result.append(replace(step, items=(*step.items, *new)))
    return result
