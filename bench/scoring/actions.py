"""A model's next action and the recorded one, and when the two agree (`compactlab.scoring.next_action`).

    agree = same tool name (case-insensitive) AND similar arguments: token Jaccard >= threshold
            (0.5 by default) over the argument values, where a shell command gives the words of
            its first line (whitespace-normalised, without a leading `cd DIR &&`), a path is one
            token (`x.py` matches `/repo/x.py`), descriptive arguments (`description`) are
            ignored, and two actions naming files but no file in common never agree
            -- or, for a plain reply, neither side calls a tool.

A recorded turn with several parallel tool calls agrees with a prediction matching any of them.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from compactlab.scoring.extraction import COMMAND_KEYS, PATH_KEYS
from compactlab.scoring.shell_lines import command_line

DEFAULT_THRESHOLD = 0.5
DESCRIPTIVE_KEYS = frozenset({"description", "explanation", "reason", "thought", "thoughts", "justification"})
ANSWER_CHARS = 500  # of answers and references kept in rows


@dataclass(frozen=True)
class Action:
    tool: str | None  # None: a plain reply (or, with parsed=False, an unreadable answer)
    arguments: dict | str = field(default_factory=dict)
    text: str = ""
    parsed: bool = True
    cost_usd: float | None = field(default=None, compare=False)

    def to_json(self) -> dict:
        data = {"tool": self.tool, "arguments": self.arguments, "text": self.text[:ANSWER_CHARS]}
        return data if self.parsed else {**data, "parsed": False}

    def render(self) -> str:
        if self.tool is None:
            return f"reply: {self.text}"
        arguments = self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments, ensure_ascii=False)
        return f"{self.tool}({arguments})"


def _flat(value: object) -> str:
    if isinstance(value, dict):
        return " ".join(_flat(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(_flat(v) for v in value)
    return "" if value is None else str(value)


def _words(key: str, value: object) -> set[str]:
    """A value's tokens: a shell command's words (first line, normalised), a path whole, else words."""
    if key in COMMAND_KEYS:
        line = command_line(value) or ""
        try:
            words = shlex.split(line)
        except ValueError:  # an unclosed quote: plain whitespace split
            words = line.split()
        return {w.lower() for w in words if re.search(r"\w", w)}  # not bare operators (`>`, `&&`, `|`)
    if key in PATH_KEYS and isinstance(value, str):
        return {value.strip().removeprefix("./").rstrip("/").lower()} - {""}
    return set(re.findall(r"\w+", _flat(value).lower()))


def _fields(arguments: dict | str) -> dict[str, set[str]]:
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments)
        except ValueError:
            decoded = None
        arguments = decoded if isinstance(decoded, dict) else {"": arguments}
    return {k: _words(k, v) for k, v in ((str(k).lower(), v) for k, v in arguments.items()) if k not in DESCRIPTIVE_KEYS}


_FILE = re.compile(r"/|\w\.[a-z]\w{0,5}$")  # a token that names a file: a path, or a name with an extension


def _same_paths(a: set[str], b: set[str]) -> set[str]:
    """`a` with each path renamed to the path of `b` it is a suffix of (or that is a suffix of it),
    so `x.py`, `src/x.py` and `/testbed/src/x.py` count as one token."""
    out = set()
    for token in a:
        if ("/" in token or "." in token) and token not in b:
            token = next((u for u in b if u.endswith("/" + token) or token.endswith("/" + u)), token)
        out.add(token)
    return out


def argument_similarity(a: dict | str, b: dict | str) -> float:
    """Token Jaccard of the argument values: of the commands when either side has one, else of the
    arguments both name (all of them when they name none in common); 1.0 when both are empty."""
    fa, fb = _fields(a), _fields(b)
    keys = [k for k in COMMAND_KEYS if k in fa or k in fb] or [k for k in fa if k in fb]
    ta = set().union(*(fa.get(k, set()) for k in keys)) if keys else set().union(*fa.values())
    tb = set().union(*(fb.get(k, set()) for k in keys)) if keys else set().union(*fb.values())
    ta = _same_paths(ta, tb)
    pa, pb = {t for t in ta if _FILE.search(t)}, {t for t in tb if _FILE.search(t)}
    if pa and pb and not pa & pb:
        return 0.0  # both name files, and not the same one: another action whatever else they share
    return 1.0 if not ta and not tb else len(ta & tb) / len(ta | tb)


def agree(predicted: Action, recorded: Action | Sequence[Action], threshold: float = DEFAULT_THRESHOLD) -> bool:
    """Whether the prediction matches the recorded action (any of them, for parallel calls)."""
    if not predicted.parsed:
        return False
    for action in [recorded] if isinstance(recorded, Action) else recorded:
        if predicted.tool is None or action.tool is None:
            if predicted.tool is None and action.tool is None:
                return True
        elif (
            predicted.tool.lower() == action.tool.lower()
            and argument_similarity(predicted.arguments, action.arguments) >= threshold
        ):
            return True
    return False
