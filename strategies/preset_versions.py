"""Which version of its source each preset reproduces, when that version is from, and what the
engine has changed since, as far as the project knows (issue 42, need 4). `compactlab strategies`
shows them beside each preset's source; a date the project could not learn says why.

A preset is named with or without its version (issue 48): `cline` is the newest (the one registered),
`cline@21cb8d25` (the commit, or any prefix of it of 4 characters or more) or `cline@2026-08-22` (the
date) names that version and is refused, naming the versions there are, when it is not one; a run
records, in its meta.json, the version of each preset it ran (`run_versions`).

When an engine changes, its preset's newest version takes the name and the one before is kept under
its versioned name (`OLDER`: `codex@0100b103`, `claude-code@2026-06-07`), so a user can compare the
two in one run; the older one's rules are `RULES["codex@0100b103"]`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Version:
    reproduces: str  # the commit, release or document the preset's rules were read from
    date: str  # ISO date of that version, or why it is not known
    changed_since: str = ""  # what the engine does now that the preset does not (a later issue), "" when nothing is known
    name: str = ""  # the version's short name where it has neither a commit nor a date (a release: "2.1")

    def line(self) -> str:
        return f"{self.reproduces}, {self.date}"

    @property
    def tag(self) -> str:
        """The version's short name: its commit's first 8 characters, else its date, else "" (the
        composite and recorded versions have neither); `name` where it is given."""
        if self.name:
            return self.name
        commit = _COMMIT.search(self.reproduces)
        if commit:
            return commit.group(1)[:8]
        return self.date if _DATE.fullmatch(self.date) else ""

    def is_named(self, asked: str) -> bool:
        """Whether `asked` (what follows "@" in a preset's name) names this version."""
        return bool(asked) and (asked == self.date or (len(asked) >= 4 and bool(self.tag) and self.tag.startswith(asked)))


_COMMIT = re.compile(r"\b([0-9a-f]{8,40})\b")
_DATE = re.compile(r"\d{4}-\d{2}(-\d{2})?")
VERSION_MARK = "@"


def split_version(name: str) -> tuple[str, str | None]:
    """A preset's name and the version it names: "pi@83378aad" → ("pi", "83378aad"); "pi" → ("pi", None)."""
    base, mark, asked = name.partition(VERSION_MARK)
    return (base, asked) if mark else (name, None)


@dataclass(frozen=True)
class OlderVersion:
    """A preset as it was before its engine changed: its version and the function that builds it
    ("module:function"; the preset it builds is named `base@tag`)."""

    version: Version
    target: str


def checked_version(name: str) -> tuple[str, str | None]:
    """The registered name `name` names, and the target of the older version it names (None: the
    registered one, the newest); refused, naming the versions there are, when it names none."""
    base, asked = split_version(name)
    if asked is None:
        return base, None
    version = VERSIONS.get(base)
    if version is None:
        raise KeyError(f"strategy {name!r}: {base!r} is not a versioned preset, name it without {VERSION_MARK}{asked}")
    if version.is_named(asked):
        return base, None
    older = _older(base, asked)
    if older is None:
        known = [f"{base}{VERSION_MARK}{v.tag} ({v.date})" for v in (version, *(o.version for o in OLDER.get(base, ()))) if v.tag]
        raise KeyError(
            f"strategy {name!r}: {base} has no version {asked!r}; its versions: {', '.join(known) or 'none to name'}, "
            f"or {base} for the newest"
        )
    return base, older.target


def version_of(name: str) -> Version | None:
    """The version preset `name` (with or without its version) reproduces; None for a strategy."""
    base, asked = split_version(name)
    if base not in VERSIONS:
        return None
    older = _older(base, asked) if asked is not None else None
    return older.version if older is not None else VERSIONS[base]


def _older(base: str, asked: str) -> OlderVersion | None:
    """The older version of preset `base` that `asked` names, if one does."""
    return next((o for o in OLDER.get(base, ()) if o.version.is_named(asked)), None)


def run_versions(names: Iterable[str]) -> dict[str, str]:
    """What a run records of the presets it ran: each preset's name → the version it reproduced."""
    found = {}
    for name in names:
        version = version_of(name)
        if version is not None:
            found[name] = version.line()
    return dict(sorted(found.items()))


def _seed(number: str, name: str) -> Version:
    return Version(
        f"../shared/seeds/{number}_{name}.txt (the design document; its name holds its content hash)",
        "undated: the document states no date",
    )


NOT_FETCHABLE = "date unknown: the repository is over the snapshot fetch limit, so the commit could not be read"

OLDER: dict[str, tuple[OlderVersion, ...]] = {
    "opencode": (
        OlderVersion(
            Version(
                "sst/opencode 31e22f65 (overflow.ts: the trigger and its reserve); anomalyco/opencode 001aa6cc (prune), "
                "as the search index stores them",
                NOT_FETCHABLE,
                "opencode V2 keeps a serialized tail in a checkpoint and updates it: the opencode preset",
            ),
            "compactlab.strategies.presets:opencode",
        ),
    ),
    "codex": (
        OlderVersion(
            Version(
                "openai/codex 0100b103",
                NOT_FETCHABLE,
                "Codex from e06dd0e5 compacts mid-turn with the initial context re-injected: the codex preset",
            ),
            "compactlab.strategies.presets:codex",
        ),
    ),
    "claude-code": (
        OlderVersion(
            Version(
                "Claude Code 2.0.x to 2.1.x, as their recorded sessions show (the per-version reserve table, "
                "CLAUDE_CODE_BY_VERSION), the sessions recorded up to the development set's newest",
                "2026-06-07",
                "Claude Code 2.1 keeps one reserve, 33,000: the claude-code preset",
            ),
            "compactlab.strategies.presets:claude_code",
        ),
    ),
}

VERSIONS: dict[str, Version] = {
    "seed-000": _seed("000", "c0c9f436ae78c850"),
    "seed-001": _seed("001", "6f6926ea13a9a167"),
    "seed-002": _seed("002", "7e9a5fe4ad2ef376"),
    "seed-003": _seed("003", "4702767c5c832fea"),
    "seed-004": _seed("004", "23e9301035d8b3fa"),
    "pi": Version(
        "badlogic/pi-mono 83378aad",
        "2026-03-15",
        "none known: the newest stored snapshot is this commit (its oracle, tests/data/oracles/pi, was made from it)",
    ),
    "opencode": Version(
        "anomalyco/opencode 031a4a9c (packages/core/src/session/compaction.ts, opencode V2), as the search index stores it",
        NOT_FETCHABLE,
        "none known: the newest stored copy is this commit",
    ),
    "codex": Version(
        "openai/codex e06dd0e5 (codex-rs/core/src/compact.rs, as the search index stores it)",
        NOT_FETCHABLE,
        "none known: the newest stored copy is this commit",
    ),
    "claude-code": Version(
        "Claude Code 2.1 (anthropics/claude-code#23409; the CHANGELOG to 2.1.240, read 2026-12-02)",
        "undated: a release line, not a commit",
        "Claude Code from 2.1.101 logs its post-compaction attachments, which the preset does not read",
        name="2.1",
    ),
    "openhands": Version(
        "All-Hands-AI/OpenHands llm_summarizing_condenser.py (the commit was not recorded when the preset was written)",
        "date unknown: the commit was not recorded",
        "the OpenHands SDK's condenser: the openhands-sdk preset (issue 48)",
    ),
    "gemini-cli": Version(
        "google-gemini/gemini-cli 5411f113",
        "2026-08-21",
        "none known: the newest stored snapshot is this commit",
    ),
    "cline": Version(
        "cline/cline 21cb8d25 (sdk/packages/core/src/extensions/context, SDK release v0.0.78)",
        "2026-08-22",
        "none known: the newest stored snapshot is this commit",
    ),
    "goose": Version(
        "block/goose crates/goose/src/context_mgmt/mod.rs and agents/agent.rs as the search index stores them "
        "(tool-pair summarization on by default; the commit issue 48 names could not be read)",
        NOT_FETCHABLE,
        "tool-pair summarization between compactions is not modelled (docs/preset-rules.md)",
    ),
    "openhands-sdk": Version(
        "OpenHands/software-agent-sdk 611629e6 (openhands-sdk/openhands/sdk/context/condenser)",
        "2026-08-22",
        "none known: the newest stored snapshot is this commit",
    ),
    "opencode-summary": Version(
        "seed 004's document, Factory.ai's 'Compressing Context' and pi's UPDATE_SUMMARIZATION_PROMPT at 83378aad",
        "undated: a composite of those sources",
    ),
    "jetbrains-masking": Version("Lindenbauer et al., 'The Complexity Trap', arXiv 2508.21433", "2025-08"),
    # The providers' pages state no date: the date given is the day their stored copies were read.
    "anthropic-context-editing": Version(
        "platform.claude.com/docs/en/build-with-claude/context-editing (clear_tool_uses_20250919), stored copy",
        "undated: the page states no date (its stored copy read 2026-12-02)",
        "thinking clearing (clear_thinking_20251015) is not modelled (compactlab.strategies.provider_rules.THINKING)",
    ),
    "anthropic-compaction": Version(
        "platform.claude.com/docs/en/build-with-claude/compaction (compact_20260112), stored copy",
        "undated: the page states no date (its stored copy read 2026-12-02)",
    ),
    "openai-compaction": Version(
        "developers.openai.com/api/docs/guides/compaction (context_management, compact_threshold), stored copy",
        "undated: the page states no date (its stored copy read 2026-12-02)",
    ),
}
