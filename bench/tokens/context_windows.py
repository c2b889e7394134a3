"""Context-window sizes by model, overridable by the user.

Looked up by longest matching prefix of the model name, so `claude-sonnet-4-5-20250929` finds
`claude-sonnet-4-5`. Provider prefixes are dropped from names and keys alike, so
`google/gemini-3-pro-preview` and `gemini-3-pro-preview` are the same key for the same model. A window recorded in the session itself (Codex records one) wins over
the table; a user override wins over both. Unknown models get 128,000 tokens, the most common
window of current models (a design's own table may say otherwise: Claude Code's 200,000), and the
lookup says so (`known=False`).
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

UNKNOWN_WINDOW = 128_000

# Provider documentation as of 2026. Models offering a larger window only behind a beta flag
# (Claude's 1M) are listed at their default window, which is what an agent gets unless it opts in.
DEFAULT_WINDOWS: dict[str, int] = {
    "claude-3": 200_000,
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "codex-mini": 200_000,
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
    "deepseek-v3": 128_000,
    "gemini-1.5-pro": 2_097_152,
    "gemini-2": 1_048_576,
    "gemini-3": 1_048_576,
    "glm-4.5": 131_072,
    "glm-4.6": 204_800,
    "qwen3-coder": 262_144,
    "kimi-k2": 262_144,
    "grok-4": 256_000,
}


@dataclass(frozen=True)
class Window:
    tokens: int
    known: bool
    source: str  # "override", "session", "table" or "unknown"


@dataclass(frozen=True)
class ContextWindows:
    overrides: dict[str, int] = field(default_factory=dict)
    table: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_WINDOWS))
    unknown: int = UNKNOWN_WINDOW  # the window of a model neither the overrides nor the table list

    def lookup(self, model: str, recorded: int | None = None) -> Window:
        name = bare_name(model)
        if (override := _longest_prefix(self.overrides, name)) is not None:
            return Window(override, True, "override")
        if recorded:
            return Window(recorded, True, "session")
        if (listed := _longest_prefix(self.table, name)) is not None:
            return Window(listed, True, "table")
        return Window(self.unknown, False, "unknown")

    def with_table(self, table: Iterable[tuple[str, int]], unknown: int | None = None) -> ContextWindows:
        """These windows with a design's own model table in place of the built-in one (seed 000's,
        Claude Code's): a model the table does not list gets `unknown` (`UNKNOWN_WINDOW` unless the
        design says otherwise), as in the design. Overrides still win."""
        listed = dict(table)
        return ContextWindows(self.overrides, listed, unknown or UNKNOWN_WINDOW) if listed else self

    def without_simulated(self) -> ContextWindows:
        """These windows without the run's simulated window (the override of every model, key ""):
        each model's real window, or the one the user gave that model."""
        return ContextWindows({k: v for k, v in self.overrides.items() if bare_name(k)}, self.table, self.unknown)

    def check_overrides(self, models: Iterable[str]) -> None:
        """An error for every override that matches none of `models` (it would be silently ignored)."""
        seen = sorted(set(models))
        unmatched = [key for key in self.overrides if key and not any(bare_name(m).startswith(bare_name(key)) for m in seen)]
        if unmatched:
            close = difflib.get_close_matches(bare_name(unmatched[0]), [bare_name(m) for m in seen], n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(
                f"--context-window or [context_windows]: context window override {', '.join(repr(k) for k in unmatched)} "
                f"matches no model in the data{hint} (a key is a model name or its prefix, with or without the provider); "
                f"models seen: {', '.join(seen) or 'none'}"
            )


def bare_name(model: str) -> str:
    """A model name without its provider prefix, lower case: "openrouter/deepseek/deepseek-chat" → "deepseek-chat"."""
    return model.lower().rsplit("/", 1)[-1]


def _longest_prefix(table: dict[str, int], name: str) -> int | None:
    matches = [key for key in table if name.startswith(bare_name(key))]
    return table[max(matches, key=lambda key: len(bare_name(key)))] if matches else None


def parse_override(text: str) -> tuple[str, int]:
    """`MODEL=TOKENS` from the command line."""
    model, sep, tokens = text.partition("=")
    if not sep or not model or not tokens.replace("_", "").isdigit():
        raise ValueError(f"--context-window expects MODEL=TOKENS (e.g. claude-sonnet-4-5=1000000), got {text!r}")
    return model, int(tokens.replace("_", ""))


def load_overrides(path: Path) -> dict[str, int]:
    """The `[context_windows]` table of a TOML configuration file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: cannot read configuration: {exc}") from exc
    table = data.get("context_windows", {})
    bad = [k for k, v in table.items() if not isinstance(v, int) or v <= 0]
    if not isinstance(table, dict) or bad:
        raise ValueError(f"{path}: [context_windows] must map model names to positive integers (bad: {bad})")
    return dict(table)
