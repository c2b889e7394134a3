"""The run configuration's schema: every key, its type, default and meaning, in one place.

Loading checks a file against it (`check_table`: unknown keys with a "did you mean", wrong types),
`compactlab init` writes its commented compactlab.toml from it, and docs/configuration.md's table is
`schema_markdown()` (a test keeps them equal). A new key is one `Key` here plus the code that
uses it.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

# The bundled sessions peak at 20k-155k prompt tokens against 128k-200k windows, so at real
# windows compaction would almost never fire. A run of the bundled datasets alone replays every session
# as if its model had a 64k window (a stress test, named as one), so strategies are compared where they
# act; a run of the user's own sessions is at each model's real window (`compactlab.runs.run_config.window_for_data`).
DEFAULT_WINDOW = 64_000
# The most tokens any window, budget or threshold may name: a hundred times the largest window a
# model offers (about 1M-10M tokens). Larger values are typos or overflows: Parquet stores token
# counts as 64-bit integers, and `window = 10^30` used to fail only after the whole replay.
MAX_TOKENS = 10**9
MAX_PRICE = 1e6  # USD per million tokens: a thousand times the dearest model's output price


@dataclass(frozen=True)
class Key:
    table: str  # "" top level, "strategy" for [[strategy]], "summarizer", ...; "prices.MODEL" for a model's table
    name: str
    type: str  # as the documentation says it: "string", "integer", "number", "boolean", "array of strings", "table"
    default: str  # as TOML would spell it, or a sentence
    description: str
    example: str = ""  # a TOML value init writes (commented out unless `enabled`)
    enabled: bool = False  # init writes it uncommented
    # The valid range of a number (checked before any work, `check_number`): low and high ends,
    # `low_open` when the low end itself is not valid (a rate of 0 would never send a call).
    low: float | None = None
    high: float | None = None
    low_open: bool = False

    @property
    def valid(self) -> str:
        """The valid values as the documentation states them ("" for a key that is not a number)."""
        if self.type not in ("integer", "number"):
            return ""
        low = "" if self.low is None else f"{'>' if self.low_open else '>='} {_number(self.low)}"
        high = "" if self.high is None else f"<= {_number(self.high)}"
        return ", ".join(p for p in (low, high) if p) or "any"


_LLM = (
    (
        "provider",
        "string",
        "(required)",
        "recorded | openai | anthropic; `recorded` replays the committed call cache offline, with no key",
        '"recorded"',
        True,
    ),
    ("model", "string", "(required)", "the model that writes summaries", '"gpt-5-mini"', True),
    (
        "base_url",
        "string",
        "the provider's",
        "any OpenAI-compatible server (a local one needs no key)",
        '"http://localhost:8000/v1"',
        False,
    ),
    (
        "cache_dir",
        "string",
        '".compactlab/llm-cache"',
        "where calls are recorded and replayed from (commit it for offline CI)",
        '"reports/llm-cache"',
        True,
    ),
    (
        "mode",
        "string",
        '"use"',
        "use | offline | refresh: offline only replays recordings (a missing one is an error)",
        '"use"',
        False,
    ),
    (
        "api_key_env",
        "string",
        "the provider's usual variable",
        "environment variable holding the API key",
        '"OPENAI_API_KEY"',
        False,
    ),
    ("max_retries", "integer", "4", "retries of a failed call", "4", False, (0, 100)),
    ("timeout", "number", "300", "seconds per attempt", "300", False, (0, 86_400, True)),
    ("temperature", "number", "the provider's", "sampling temperature", "0", False, (0, 2)),
    (
        "max_in_flight",
        "integer",
        "8",
        "calls sent at once to this provider (summarizer and judge on one provider share the lower bound)",
        "8",
        False,
        (1, 10_000),
    ),
    (
        "requests_per_minute",
        "number",
        "none",
        "the provider's request rate limit (429s are waited out either way, never failures)",
        "500",
        False,
        (0, 10**9, True),
    ),
    (
        "tokens_per_minute",
        "number",
        "none",
        "the provider's token rate limit (a call counts its prompt and its output budget)",
        "200000",
        False,
        (0, 10**12, True),
    ),
    ("recorded_provider", "string", "any", 'with provider = "recorded": use only this provider\'s recordings', '"openai"', False),
)


def _llm_key(table: str, entry: tuple) -> Key:
    name, kind, default, text, example, on, *valid = entry
    low, high, *open_low = valid[0] if valid else (None, None)
    return Key(table, name, kind, default, text, example, on, low, high, bool(open_low and open_low[0]))


KEYS: tuple[Key, ...] = (
    Key(
        "",
        "datasets",
        "array of strings",
        "all bundled datasets",
        "bundled dataset names, session files or folders (searched recursively)",
        '["m-claude", "path/to/my/sessions"]',
        True,
    ),
    Key(
        "",
        "window",
        "integer",
        f"0 for your own sessions; {DEFAULT_WINDOW} for the bundled datasets alone",
        "replay every model with this simulated context window, in tokens (a stress test); 0: each model's real window",
        "0",
        True,
        0,
        MAX_TOKENS,
    ),
    Key("", "estimator", "string", '"hybrid"', "token estimator for strategies that do not set their own", '"hybrid"'),
    Key("", "lenient", "boolean", "false", "skip damaged records (counted and shown) instead of stopping", "false"),
    Key(
        "",
        "estimation",
        "boolean",
        "true",
        "measure the token estimators on the run's sessions (the report's estimation section and trust figures); a sweep never does",
        "true",
    ),
    Key(
        "",
        "max_failed_share",
        "number",
        "0.0",
        "share of a setting's compaction attempts that may fail or fall back (e.g. LLM errors) with the setting still ranked",
        "0.0",
        low=0,
        high=1,
    ),
    Key(
        "",
        "max_cost_usd",
        "number",
        "none",
        "what one run (or --resume) may spend on LLM calls sent; it stops before passing it, and --resume continues",
        "5.0",
        low=0,
        high=1e9,
    ),
    Key(
        "",
        "strategies",
        "array of strings",
        "every built-in offline strategy",
        "short form: registered strategies or presets with their defaults (see `compactlab strategies`)",
        '["pi", "codex"]',
    ),
    Key(
        "strategy",
        "name",
        "string",
        "(required)",
        "a registered strategy or preset, or path/to/file.py:ClassName",
        '"summarize"',
        True,
    ),
    Key("strategy", "label", "string", "the name", "what results call this setting (unique)", '"summarize-70"', True),
    Key(
        "strategy",
        "trigger",
        "table",
        "the preset's, else { fraction = 0.8 }",
        "when to compact: fraction (of the window), absolute, reserve_tokens, warning, critical, target, "
        "on_cache_expiry (a lower share at a call after the prompt cache expired) and cache_margin_seconds",
        "{ fraction = 0.7 }",
        True,
    ),
    Key(
        "strategy",
        "settings",
        "table",
        "the strategy's defaults",
        "the strategy's own settings (`compactlab strategies` lists them); an unknown one is an error, and numbers "
        f"must be >= 0 and <= {MAX_TOKENS:_} (whole numbers where the setting is one)",
        "{ keep_recent_tokens = 16000 }",
        True,
    ),
    Key("strategy", "estimator", "string", "the top-level estimator", "this setting's token estimator", '"hybrid"'),
    Key(
        "context_windows",
        "MODEL",
        "integer",
        "none",
        "a model's own window in tokens, over `window` too; the provider prefix is optional and it must match a model",
        "200000",
        low=0,
        high=MAX_TOKENS,
        low_open=True,
    ),
    Key("prices.MODEL", "input", "number", "(required)", "USD per million uncached input tokens", "1.0", True, 0, MAX_PRICE),
    Key("prices.MODEL", "output", "number", "(required)", "USD per million output tokens", "2.0", True, 0, MAX_PRICE),
    Key(
        "prices.MODEL",
        "cache_read",
        "number",
        "no price: such tokens make the cost unknown",
        "USD per million cache-read tokens",
        "0.1",
        low=0,
        high=MAX_PRICE,
    ),
    Key(
        "prices.MODEL",
        "cache_write",
        "number",
        "no price: such tokens make the cost unknown",
        "USD per million cache-write tokens",
        "1.25",
        low=0,
        high=MAX_PRICE,
    ),
    Key(
        "prices.MODEL",
        "long_context_threshold",
        "integer",
        "none",
        "prompt tokens above which `long_context` prices apply",
        "200000",
        low=0,
        high=MAX_TOKENS,
    ),
    Key(
        "prices.MODEL",
        "long_context",
        "table",
        "none",
        "the prices (same keys) of a prompt over the threshold",
        "{ input = 2.0, output = 4.0 }",
    ),
    *(_llm_key("summarizer", entry) for entry in _LLM),
    *(_llm_key("judge", entry) for entry in _LLM),
    Key(
        "judge",
        "probes",
        "array of strings",
        "[]",
        "which probes the judge answers (see bench/scoring/next_action.py)",
        '["recall"]',
    ),
    Key("judge", "threshold", "number", "0.5", "score at which a probe counts as answered", "0.5", low=0, high=1),
    Key("judge", "max_output_tokens", "integer", "2048", "output budget of a judge call", "2048", low=1, high=MAX_TOKENS),
)

# A strategy's own numeric settings (`settings = { keep_recent_tokens = ... }`) are counts of
# tokens or messages, or shares: none of them is negative (a negative keep budget replayed as
# nonsense without a word). Checked by the type of the strategy's field.
SETTING_WHOLE = Key("strategy.settings", "SETTING", "integer", "", "", low=0, high=MAX_TOKENS)
SETTING_NUMBER = Key("strategy.settings", "SETTING", "number", "", "", low=0, high=MAX_TOKENS)

TABLE_HELP = {
    "": "top level",
    "strategy": "[[strategy]]: one table per setting to replay (long form)",
    "context_windows": "[context_windows]",
    "prices.MODEL": '[prices."MODEL"]: a model\'s price (a model prefix; overrides the built-in table)',
    "summarizer": '[summarizer]: the LLM for strategies set to summarizer = "llm" (none: offline summaries)',
    "judge": "[judge]: optional model judge of next-action preservation",
}
TOP_LEVEL = tuple(k.name for k in KEYS if k.table == "") + ("strategy", "context_windows", "prices", "summarizer", "judge")
_TYPES = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "table": (dict,),
    "array of strings": (list,),
}


def keys_of(table: str) -> tuple[Key, ...]:
    return tuple(k for k in KEYS if k.table == table)


def unknown_keys(names, known, where: object, what: str = "settings") -> None:
    """An error naming the unknown keys, each with the closest known one."""
    unknown = sorted(set(names) - set(known))
    if unknown:
        hints = ", ".join(
            f"{u!r}" + (f" (did you mean {c[0]!r}?)" if (c := difflib.get_close_matches(u, known, n=1)) else "") for u in unknown
        )
        raise ValueError(f"{where}: unknown {what} {hints}; known: {', '.join(sorted(known))}")


def check_table(values: dict, table: str, where: object) -> None:
    """Unknown keys and wrong types of one table of a configuration."""
    keys = {k.name: k for k in keys_of(table)}
    unknown_keys(values, keys if table else TOP_LEVEL, where)
    for name, value in values.items():
        key = keys.get(name)
        if key is None:
            continue
        ok = isinstance(value, _TYPES[key.type]) and not (key.type in ("integer", "number") and isinstance(value, bool))
        if key.type == "array of strings":
            ok = ok and all(isinstance(v, str) for v in value)
        if not ok:
            raise ValueError(f"{where}: `{name}` must be {_article(key.type)}, got {value!r:.60}")
        if key.type in ("integer", "number"):
            check_number(key, value, where)


def check_number(key: Key, value: object, where: object, name: str | None = None) -> None:
    """`value` is a number of `key`'s type within its valid range; else an error naming `where` and
    the key (`name`: how the user spelt it, e.g. `--window` or a model's [context_windows] entry)."""
    name = name or f"`{key.name}`"
    whole = key.type == "integer"
    number = isinstance(value, int if whole else (int, float)) and not isinstance(value, bool)
    if not number or (isinstance(value, float) and not math.isfinite(value)):
        raise ValueError(f"{where}: {name} must be {_article(key.type)} ({key.valid}), got {value!r:.60}")
    assert isinstance(value, (int, float))
    too_low = key.low is not None and (value <= key.low if key.low_open else value < key.low)
    if too_low or (key.high is not None and value > key.high):
        raise ValueError(f"{where}: {name} = {_number(value)} is out of range: it must be {key.valid}")


def schema_key(table: str, name: str) -> Key:
    """The schema's key `name` of `table`."""
    return next(k for k in KEYS if k.table == table and k.name == name)


def _number(value: float) -> str:
    return f"{value:,}".replace(",", "_") if isinstance(value, int) and abs(value) >= 10_000 else f"{value:g}"


def _article(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def schema_markdown() -> str:
    """The configuration table of docs/configuration.md, one row per key."""
    lines = ["| table | key | type | valid | default | meaning |", "|---|---|---|---|---|---|"]
    for entry in KEYS:
        table = {"": "", "strategy": "[[strategy]]", "prices.MODEL": '[prices."MODEL"]'}.get(entry.table, f"[{entry.table}]")
        default, meaning = entry.default.replace("|", "/"), entry.description.replace("|", "/")
        lines.append(f"| {table} | `{entry.name}` | {entry.type} | {entry.valid} | {default} | {meaning} |")
    return "\n".join(lines)
