"""Items whose survival through a compaction cannot matter: the preservation metric does not count them.

An item counts as needed only when keeping it could spare the agent a trip back to its
environment. Some items the extractor finds never need that, whatever the summary keeps:
- general words: a language keyword (`Some`, `func`, `impl`), a common English word read as a name
  (`view`, `text`, `container`, `default`, `Color`), a program every shell has (`grep`, `sed`);
- round numbers (`100`, `500`, `1000`): limits, offsets and timeouts the agent picks, not reads;
- system paths (`/usr/bin`, `/bin/sh`, `/etc/hosts`) and the instruction files a coding agent's
  harness names in every prompt (`CLAUDE.md`, `AGENTS.md`);
- an item present in most of the history's messages (`UBIQUITOUS_SHARE`): any compaction that keeps
  anything keeps it, so it says nothing about memory. Its threshold is chosen leave-one-session-out
  over the shared real compactions by `python -m tests.scripts.reacquisition_filter`.
Without this, kept items were padded with such words, which the next steps "use" by chance, and
lost items with names the agent knows anyway (issue 27, "lost must mean lost").

The word lists are general (not drawn from any session): `bench/scoring/common_words.txt` holds
common English words, one a line.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from compactlab.scoring.matching import Item

# Set aside an item present in at least this share of the messages before the compaction: "most"
# starts at a half. Checked leave-one-session-out among 0.5..0.9 and off
# (`tests.scripts.reacquisition_filter`): on the shared real compactions no needed item reaches
# half the history, every candidate separates lost from kept equally, and the data leave it here.
UBIQUITOUS_SHARE = 0.5

# Other languages' keywords and prelude names (Python's are left out by the extractor already).
LANGUAGE_KEYWORDS = frozenset(
    """
    abstract any async await bool boolean break byte case catch char class const constexpr continue crate
    debugger default defer delete do double dyn else enum export extends extern final finally float fn for
    func function go goto if impl implements import in instanceof int interface let long loop match mod
    module move mut namespace native new nil null number object override package private protected pub
    public readonly ref return select self short static string struct super switch symbol synchronized
    template this throw throws trait transient try type typedef typeof uint union unknown unsafe unsigned
    use using var virtual void volatile where while yield Some None Ok Err Option Result Vec Box String
    Self Promise Array Object Map Set Error Number Boolean Symbol undefined NaN Infinity true false
    then fi esac done elif local readonly export source alias unset shift
    """.split()
)

# Programs every Unix shell has: naming one needs no memory of the session.
SHELL_PROGRAMS = frozenset(
    """
    awk bash basename cat cd chmod chown cp curl cut date diff dirname du echo env find git grep gzip head
    kill less ln ls make mkdir mv nano node npm npx pip pip3 printf ps pwd python python3 rm rmdir rsync
    sed sh sleep sort ssh sudo tail tar tee touch tr uniq unzip vim wc wget which xargs yarn zip zsh jq
    """.split()
)

# Files a coding agent's harness loads into every prompt by name.
INSTRUCTION_FILES = frozenset({"CLAUDE.md", "AGENTS.md", "GEMINI.md", ".cursorrules"})
_SYSTEM_PATH = re.compile(r"/(?:usr|bin|sbin|etc|lib|lib64|opt/homebrew|System|dev|proc|sys)(?:/|$)")
# A share of a shorter history says nothing: in a history of two messages, one is half of it.
MIN_HISTORY = 10
_ROUND_NUMBER = re.compile(r"[1-9]0{2,}")  # 100, 500, 1000, 20000
_PLAIN_WORD = re.compile(r"[A-Za-z]+")


@lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    """Common English words, lower case (`common_words.txt`)."""
    text = (Path(__file__).with_name("common_words.txt")).read_text(encoding="utf-8")
    return frozenset(line.strip().lower() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def is_general(item: Item) -> bool:
    """Whether `item` is known without the session (see the module docstring), whatever the session."""
    text = item.text
    if item.kind == "identifier":
        if not _PLAIN_WORD.fullmatch(text):
            return False  # `session_id`, `voiceConfig.enabled`, `loadVoiceConfig`: names of the session
        return text in LANGUAGE_KEYWORDS or text in SHELL_PROGRAMS or text.lower() in common_words()
    if item.kind == "number":
        return _ROUND_NUMBER.fullmatch(text) is not None
    if item.kind == "path":
        return text in INSTRUCTION_FILES or _SYSTEM_PATH.match(text) is not None
    return False


def is_ubiquitous(occurs_in: int, history: int, threshold: float = UBIQUITOUS_SHARE) -> bool:
    """Whether an item found in `occurs_in` of the `history` messages before a compaction is in most of them."""
    return history >= MIN_HISTORY and occurs_in / history >= threshold
