"""The run configuration's schema: every key, its type, default and meaning, in one place.

Loading checks a file against it (`check_table`: unknown keys with a "did you mean", wrong types),
`compactlab init` writes its commented compactlab.toml from it, and the README's table is
`schema_markdown()` (a test keeps them equal). A new key is one `Key` here plus the code that
uses it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

# The bundled sessions peak at 20k-155k prompt tokens against 128k-200k windows, so at real
# windows compaction would almost never fire. The default replays every session as if its model
# had a 64k window, so strategies are compared where they act; `window = 0` uses real windows.
DEFAULT_WINDOW = 64_000


@dataclass(frozen=True)
class Key:
    table: str  # "" top level, "strategy" for [[strategy]], "summarizer", ...; "prices.MODEL" for a model's table
    name: str
    type: str  # as the documentation says it: "string", "integer", "number", "boolean", "array of strings", "table"
    default: str  # as TOML would spell it, or a sentence
    description: str
    example: str = ""  # a TOML value init writes (commented out unless `enabled`)
    enabled: bool = False  # init writes it uncommented


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
    ("max_retries", "integer", "4", "retries of a failed call", "4", False),
    ("timeout", "number", "300", "seconds per attempt", "300", False),
    ("temperature", "number", "the provider's", "sampling temperature", "0", False),
    (
        "max_in_flight",
        "integer",
        "8",
        "calls sent at once to this provider (summarizer and judge on one provider share the lower bound)",
        "8",
        False,
    ),
    (
        "requests_per_minute",
        "number",
        "none",
        "the provider's request rate limit (429s are waited out either way, never failures)",
        "500",
        False,
    ),
    (
        "tokens_per_minute",
        "number",
        "none",
        "the provider's token rate limit (a call counts its prompt and its output budget)",
        "200000",
        False,
    ),
    ("recorded_provider", "string", "any", 'with provider = "recorded": use only this provider\'s recordings', '"openai"', False),
)

KEYS: tuple[Key, ...] = (
    Key(
        "",
        "datasets",
        "array of strings",
        "all bundled datasets",
        "bundled dataset names, transcript files or folders (searched recursively)",
        '["m-claude", "path/to/my/sessions"]',
        True,
    ),
    Key(
        "",
        "window",
        "integer",
        str(DEFAULT_WINDOW),
        "replay every model with this context window, in tokens (0: each model's real window)",
        str(DEFAULT_WINDOW),
        True,
    ),
    Key("", "estimator", "string", '"hybrid"', "token estimator for strategies that do not set their own", '"hybrid"'),
    Key("", "lenient", "boolean", "false", "skip damaged records (counted and shown) instead of stopping", "false"),
    Key(
        "",
        "max_failed_share",
        "number",
        "0.0",
        "share of a setting's compaction attempts that may fail or fall back (e.g. LLM errors) with the setting still ranked",
        "0.0",
    ),
    Key(
        "",
        "max_cost_usd",
        "number",
        "none",
        "what one run (or --resume) may spend on LLM calls sent; it stops before passing it, and --resume continues",
        "5.0",
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
        "when to compact: fraction (of the window), absolute, reserve_tokens, warning, critical, target",
        "{ fraction = 0.7 }",
        True,
    ),
    Key(
        "strategy",
        "settings",
        "table",
        "the strategy's defaults",
        "the strategy's own settings (`compactlab strategies` lists them); an unknown one is an error",
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
    ),
    Key("prices.MODEL", "input", "number", "(required)", "USD per million uncached input tokens", "1.0", True),
    Key("prices.MODEL", "output", "number", "(required)", "USD per million output tokens", "2.0", True),
    Key(
        "prices.MODEL",
        "cache_read",
        "number",
        "no price: such tokens make the cost unknown",
        "USD per million cache-read tokens",
        "0.1",
    ),
    Key(
        "prices.MODEL",
        "cache_write",
        "number",
        "no price: such tokens make the cost unknown",
        "USD per million cache-write tokens",
        "1.25",
    ),
    Key(
        "prices.MODEL",
        "long_context_threshold",
        "integer",
        "none",
        "prompt tokens above which `long_context` prices apply",
        "200000",
    ),
    Key(
        "prices.MODEL",
        "long_context",
        "table",
        "none",
        "the prices (same keys) of a prompt over the threshold",
        "{ input = 2.0, output = 4.0 }",
    ),
    *(Key("summarizer", name, kind, default, text, example, on) for name, kind, default, text, example, on in _LLM),
    *(Key("judge", name, kind, default, text, example, on) for name, kind, default, text, example, on in _LLM),
    Key(
        "judge",
        "probes",
        "array of strings",
        "[]",
        "which probes the judge answers (see bench/scoring/next_action.py)",
        '["recall"]',
    ),
    Key("judge", "threshold", "number", "0.5", "score at which a probe counts as answered", "0.5"),
    Key("judge", "max_output_tokens", "integer", "2048", "output budget of a judge call", "2048"),
)

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


def _article(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def schema_markdown() -> str:
    """The README's configuration table, one row per key."""
    lines = ["| table | key | type | default | meaning |", "|---|---|---|---|---|"]
    for key in KEYS:
        table = {"": "", "strategy": "[[strategy]]", "prices.MODEL": '[prices."MODEL"]'}.get(key.table, f"[{key.table}]")
        lines.append(
            f"| {table} | `{key.name}` | {key.type} | {key.default.replace('|', '/')} | {key.description.replace('|', '/')} |"
        )
    return "\n".join(lines)
