"""What an LLM call costs: a price table in USD per million tokens, and `cost_of(call)`.

Prices follow `LLMCall`'s split: uncached input, cache reads, cache writes and output each have
their own price, so the same table serves a summarizer call and the replay's cache-aware session
cost. A model is found by the longest table key that is a prefix of its name at a segment boundary
(see `price_for`); a model the table does not know costs None, never a guess. The built-in table
can be overridden with a dict or a TOML file:

    [prices."my-local-model"]
    input = 0.0
    cache_read = 0.0
    cache_write = 0.0
    output = 0.0
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from compactlab.sessions.model import LLMCall


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens. A None price means the provider has no such charge for this model:
    a call that has tokens of that kind then has no known cost (None) rather than a made-up one."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    # Some models bill the whole call at higher rates when the prompt is long (Gemini 2.5 Pro and
    # Claude Sonnet 4/4.5 above 200k prompt tokens). `long_context` replaces every price then.
    long_context_threshold: int | None = None
    long_context: ModelPrice | None = None


PriceTable = Mapping[str, ModelPrice]

# --- The built-in table -------------------------------------------------------------------------
# Standard (not batch, not priority) prices, looked up on 2026-11 in stored copies of:
#   Anthropic: https://platform.claude.com/docs/en/about-claude/pricing ("Model pricing" table and
#     "Long context pricing"). cache_write is the 5-minute write price (1.25x input): LLMCall does
#     not say which TTL a write used, and 5 minutes is the API's default.
#   OpenAI: https://platform.openai.com/docs/pricing ("Text tokens", Standard). OpenAI charges no
#     cache writes, so they cost the input price (OpenAI usage never reports them anyway). A "-"
#     for cached input (no prompt caching) is a None cache_read.
#   DeepSeek: https://api-docs.deepseek.com/quick_start/pricing (deepseek-chat and
#     deepseek-reasoner on DeepSeek-V3.2: cache hit / cache miss / output). A write is a cache miss.
#   Google: https://ai.google.dev/gemini-api/docs/pricing (Standard, text input; "context caching
#     price" is the cache read; writes are billed as input, storage per hour is not modelled).
#   Added 2026-11 (models in the bundled and shared data that had no price), from stored copies:
#   - gpt-5-codex $1.25 / $0.125 / $10: OpenAI's model page,
#     https://developers.openai.com/api/docs/models/gpt-5-codex (confirms the gpt-5 row it shares).
#   - gpt-5.2 and gpt-5.2-codex $1.75 / $0.175 / $14: NOT confirmed on an OpenAI page in the stored
#     copies; the figures are GitHub's Copilot price list, which quotes OpenAI's list prices
#     (https://github.com/github/docs, data/tables/copilot/models-and-pricing.yml). Override if they differ.
#   - gemini-3-flash-preview $0.50 / $0.05 / $3.00: https://ai.google.dev/gemini-api/docs/pricing,
#     as quoted (accessed 2026-07-04) by factquire.com/models/google/gemini-3-flash-preview.json.
#   - gemini-3-pro-preview $2.00 / $0.20 / $12.00, above 200k prompt tokens $4.00 / $0.40 / $18.00:
#     secondary sources only (aifreeapi.com's 2026 Gemini pricing guides, citing ai.google.dev's page).
#   Left unpriced on purpose (a cost is never guessed; the run says which sessions it leaves out):
#   gpt-5.1 and gpt-5.1-codex(-max), no stored copy of their price was found; codex rollouts of old
#   CLIs that record no model name.
# Prices change: override with `prices=` or a TOML file rather than editing old results.

_OPUS_4 = ModelPrice(input=15.0, cache_read=1.50, cache_write=18.75, output=75.0)
_OPUS_4_5 = ModelPrice(input=5.0, cache_read=0.50, cache_write=6.25, output=25.0)
_SONNET_4_LONG = ModelPrice(input=6.0, cache_read=0.60, cache_write=7.50, output=22.50)
_SONNET_4 = ModelPrice(
    input=3.0, cache_read=0.30, cache_write=3.75, output=15.0, long_context_threshold=200_000, long_context=_SONNET_4_LONG
)
_SONNET_4_6 = ModelPrice(input=3.0, cache_read=0.30, cache_write=3.75, output=15.0)
_HAIKU_4_5 = ModelPrice(input=1.0, cache_read=0.10, cache_write=1.25, output=5.0)
_GPT_5 = ModelPrice(input=1.25, cache_read=0.125, cache_write=1.25, output=10.0)
_GPT_5_2 = ModelPrice(input=1.75, cache_read=0.175, cache_write=1.75, output=14.0)
_DEEPSEEK_V3_2 = ModelPrice(input=0.28, cache_read=0.028, cache_write=0.28, output=0.42)

DEFAULT_PRICES: dict[str, ModelPrice] = {
    # Anthropic. Keys are API ids; dated snapshots (claude-sonnet-4-5-20250929) match their alias.
    # Opus 4 and Sonnet 4 are "claude-<family>-4-0" or the snapshot "claude-<family>-4-20250514".
    "claude-opus-4-0": _OPUS_4,
    "claude-opus-4-20250514": _OPUS_4,
    "claude-opus-4-1": _OPUS_4,
    "claude-opus-4-5": _OPUS_4_5,
    "claude-opus-4-6": _OPUS_4_5,
    "claude-opus-4-7": _OPUS_4_5,
    "claude-opus-4-8": _OPUS_4_5,
    "claude-sonnet-4-0": _SONNET_4,
    "claude-sonnet-4-20250514": _SONNET_4,
    "claude-sonnet-4-5": _SONNET_4,
    "claude-sonnet-4-6": _SONNET_4_6,  # 1M context at standard rates: no long-context tier
    "claude-haiku-4-5": _HAIKU_4_5,
    "claude-3-7-sonnet": ModelPrice(input=3.0, cache_read=0.30, cache_write=3.75, output=15.0),
    "claude-3-5-haiku": ModelPrice(input=0.80, cache_read=0.08, cache_write=1.0, output=4.0),
    # OpenAI. Each priced variant is listed: an unlisted one (gpt-5.4, o3) costs None.
    "gpt-5": _GPT_5,
    "gpt-5-chat-latest": _GPT_5,
    "gpt-5-codex": _GPT_5,
    "gpt-5-mini": ModelPrice(input=0.25, cache_read=0.025, cache_write=0.25, output=2.0),
    "gpt-5-nano": ModelPrice(input=0.05, cache_read=0.005, cache_write=0.05, output=0.40),
    "gpt-5-pro": ModelPrice(input=15.0, cache_read=None, cache_write=15.0, output=120.0),
    "gpt-5.2": _GPT_5_2,
    "gpt-5.2-codex": _GPT_5_2,
    "gpt-4.1": ModelPrice(input=2.0, cache_read=0.50, cache_write=2.0, output=8.0),
    "gpt-4.1-mini": ModelPrice(input=0.40, cache_read=0.10, cache_write=0.40, output=1.60),
    "gpt-4.1-nano": ModelPrice(input=0.10, cache_read=0.025, cache_write=0.10, output=0.40),
    "gpt-4o": ModelPrice(input=2.50, cache_read=1.25, cache_write=2.50, output=10.0),
    "gpt-4o-2024-05-13": ModelPrice(input=5.0, cache_read=None, cache_write=5.0, output=15.0),
    "gpt-4o-mini": ModelPrice(input=0.15, cache_read=0.075, cache_write=0.15, output=0.60),
    # DeepSeek (both names serve DeepSeek-V3.2 at one price).
    "deepseek-chat": _DEEPSEEK_V3_2,
    "deepseek-reasoner": _DEEPSEEK_V3_2,
    # Google Gemini 2.5.
    "gemini-2.5-pro": ModelPrice(
        input=1.25,
        cache_read=0.125,
        cache_write=1.25,
        output=10.0,
        long_context_threshold=200_000,
        long_context=ModelPrice(input=2.50, cache_read=0.25, cache_write=2.50, output=15.0),
    ),
    "gemini-2.5-flash": ModelPrice(input=0.30, cache_read=0.03, cache_write=0.30, output=2.50),
    "gemini-2.5-flash-lite": ModelPrice(input=0.10, cache_read=0.01, cache_write=0.10, output=0.40),
    # Google Gemini 3 (previews).
    "gemini-3-pro-preview": ModelPrice(
        input=2.0,
        cache_read=0.20,
        cache_write=2.0,
        output=12.0,
        long_context_threshold=200_000,
        long_context=ModelPrice(input=4.0, cache_read=0.40, cache_write=4.0, output=18.0),
    ),
    "gemini-3-flash-preview": ModelPrice(input=0.50, cache_read=0.05, cache_write=0.50, output=3.0),
}

# --- Lookup -------------------------------------------------------------------------------------

# After a key, the rest of the name must start a new segment ("-20250929", "@20250929", ":free")
# and must not be a short number: "claude-sonnet-4" + "-7" is another model, not a snapshot of it,
# and "gpt-5" + ".4" is gpt-5.4. That is what keeps an unknown version from inheriting a price.
_SEGMENT = re.compile(r"[-@:_/]")
_VERSION_STEP = re.compile(r"[-_.]\d{1,2}(?!\d)")


def normalize_model(model: str) -> str:
    """Lower-case, without a router's provider prefix ("anthropic/claude-..", "models/gemini-..")."""
    return model.strip().lower().rsplit("/", 1)[-1]


def _matches(model: str, key: str) -> bool:
    if not model.startswith(key):
        return False
    rest = model[len(key) :]
    return not rest or (_SEGMENT.match(rest) is not None and _VERSION_STEP.match(rest) is None)


def price_for(model: str, prices: PriceTable | None = None) -> ModelPrice | None:
    """The price of `model`: the longest key of the table that prefixes it at a boundary."""
    table = DEFAULT_PRICES if prices is None else prices
    name = normalize_model(model)
    best: str | None = None
    for key in table:
        k = normalize_model(key)
        if _matches(name, k) and (best is None or len(k) > len(normalize_model(best))):
            best = key
    return table[best] if best is not None else None


def cost_of(call: LLMCall, prices: PriceTable | None = None) -> float | None:
    """USD cost of one call, or None when the model (or a token kind it used) has no price."""
    price = price_for(call.model, prices)
    if price is None:
        return None
    if (
        price.long_context is not None
        and price.long_context_threshold is not None
        and call.prompt_tokens > price.long_context_threshold
    ):
        price = price.long_context
    total = call.input_tokens * price.input + call.output_tokens * price.output
    for tokens, rate in ((call.cache_read_tokens, price.cache_read), (call.cache_write_tokens, price.cache_write)):
        if tokens:
            if rate is None:
                return None
            total += tokens * rate
    return total / 1_000_000


# --- Overrides ----------------------------------------------------------------------------------

_PRICE_FIELDS = ("input", "cache_read", "cache_write", "output")


def parse_price(key: str, raw: object) -> ModelPrice:
    """A ModelPrice from a {input, cache_read, cache_write, output} mapping (TOML or dict)."""
    if isinstance(raw, ModelPrice):
        return raw
    if not isinstance(raw, Mapping):
        raise ValueError(f"price for {key!r} must be a table of {', '.join(_PRICE_FIELDS)}, got {raw!r:.60}")
    known = {f.name for f in fields(ModelPrice)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"price for {key!r}: unknown field(s) {unknown}; expected {', '.join(_PRICE_FIELDS)}")
    # An input or output price given as None is missing too: only the cache prices may be absent.
    missing = [name for name in ("input", "output") if raw.get(name) is None]
    if missing:
        raise ValueError(f"price for {key!r}: missing {', '.join(missing)} (USD per million tokens)")
    values: dict[str, object] = {}
    for name in _PRICE_FIELDS:
        value = raw.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise ValueError(f"price for {key!r}: {name} must be a non-negative number, got {value!r}")
        values[name] = float(value) if value is not None else None
    long = raw.get("long_context")
    return ModelPrice(
        input=values["input"],  # type: ignore[arg-type]
        output=values["output"],  # type: ignore[arg-type]
        cache_read=values["cache_read"],  # type: ignore[arg-type]
        cache_write=values["cache_write"],  # type: ignore[arg-type]
        long_context_threshold=raw.get("long_context_threshold"),
        long_context=parse_price(f"{key}.long_context", long) if long is not None else None,
    )


def load_prices_toml(path: str | Path) -> dict[str, ModelPrice]:
    """The `[prices."model-prefix"]` tables of a TOML file."""
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    table = data.get("prices")
    if not isinstance(table, dict):
        raise ValueError(f'{path}: expected a [prices."model-prefix"] table with input/cache_read/cache_write/output')
    return {key: parse_price(key, raw) for key, raw in table.items()}


def resolve_prices(overrides: Mapping[str, object] | str | Path | None = None) -> dict[str, ModelPrice]:
    """The built-in table updated with `overrides` (a dict of prices, or a TOML file's path).

    An override with the same key replaces the built-in price; a new key adds a model (e.g. a
    local server's model at 0.0, so its calls cost 0 rather than None).
    """
    table = dict(DEFAULT_PRICES)
    if overrides is None:
        return table
    if isinstance(overrides, (str, Path)):
        table.update(load_prices_toml(overrides))
    else:
        table.update({key: parse_price(key, raw) for key, raw in overrides.items()})
    return table
