"""What each replayed call costs, split by kind, and what it did to the prompt cache.

The cost model (per replayed call): the part of the prompt identical to the previous call's prompt
is read from the provider's cache (`prefix_tokens`, `compactlab.replay.prompt_cache`); the rest is
new. Claude models bill new prompt tokens as cache writes (Claude Code marks the prompt for
caching); other providers cache automatically and bill new tokens as plain input. So a call's cost
is four parts, each priced by `compactlab.llm.prices` (a long-context tier replaces every price above its
threshold; tokens of a kind the model has no price for make the part, and the cost, unknown: NaN):

- `input`: prompt tokens at full price;
- `cache_read`: prompt tokens the cache served;
- `cache_write`: prompt tokens written to the cache;
- `output`: the recorded output tokens (the same under every setting: the replay is open-loop).

And per call, what happened to the cache (`cache_telemetry`), each in tokens of the setting's prompt:

- `cache_write_tokens`: the prompt the cache did not serve (billed as a write or as input, above);
- `invalidated_tokens`: of the previous prompt, what this prompt no longer shares with it although
  the cache still held it: what a compaction or an in-place edit (masking or pruning old outputs
  breaks the prefix at the first edited message) threw away; `prefix_break`: the call has some;
- `expired_tokens`: of the previous prompt, what the cache had let go by this call (a pause past its
  lifetime, another model): lost whatever the strategy did;
- `unread_write_tokens`: what this call wrote that the next call did not read back (the prefix
  broke or expired before it); the session's last call is not counted: the log ends there, not
  necessarily the session.

And their cost: `invalidation_cost`, the invalidated tokens sent again at the new-token price
instead of the cache-read price; `unread_write_cost`, the premium paid for writing tokens never read
(the write price over the input price: nothing where writes cost input).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from compactlab.llm.prices import ModelPrice, PriceTable, price_for
from compactlab.tokens.calibration import model_family

PARTS = ("input", "cache_read", "cache_write", "output")


def cost_parts(
    frame: pd.DataFrame, rows_by_model: dict[str, np.ndarray], prompt_column: str, cached_column: str, prices: PriceTable | None
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Each row's modelled cost and its parts (`PARTS`) in USD, vectorised per model (a run has few
    models and many calls); NaN where the model has no price for tokens the row has."""
    all_prompts = frame[prompt_column].to_numpy(dtype=float)
    all_cached = np.minimum(frame[cached_column].to_numpy(dtype=float), all_prompts)
    all_outputs = frame["output_tokens"].to_numpy(dtype=float)
    totals = np.full(len(frame), np.nan)
    parts = {kind: np.full(len(frame), np.nan) for kind in PARTS}
    for model, rows in rows_by_model.items():
        price = price_for(model, prices)
        if price is None:
            continue
        prompt, cached = all_prompts[rows], all_cached[rows]
        tokens = _token_parts(model, prompt, cached, all_outputs[rows])
        total, priced = _priced(price, tokens)
        if price.long_context is not None and price.long_context_threshold is not None:
            long_total, long_priced = _priced(price.long_context, tokens)
            short = prompt <= price.long_context_threshold
            total = np.where(short, total, long_total)
            priced = {kind: np.where(short, priced[kind], long_priced[kind]) for kind in PARTS}
        totals[rows] = total
        for kind in PARTS:
            parts[kind][rows] = priced[kind]
    return totals, parts


def _token_parts(model: str, prompt: np.ndarray, cached: np.ndarray, outputs: np.ndarray) -> dict[str, np.ndarray]:
    new = prompt - cached
    claude = model_family(model) == "claude"
    return {
        "input": 0 * new if claude else new,
        "cache_read": cached,
        "cache_write": new if claude else 0 * new,
        "output": outputs,
    }


def _priced(price: ModelPrice, tokens: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The total in USD (summed in one order, as the total has always been) and each part."""
    total = 0 * tokens["input"]
    parts = {}
    for kind in PARTS:
        rate = getattr(price, kind)
        if rate is None:
            parts[kind] = np.where(tokens[kind] == 0, 0.0, np.nan)
            total = np.where(tokens[kind] == 0, total, np.nan)
        else:
            parts[kind] = tokens[kind] * rate / 1_000_000
            total = total + tokens[kind] * rate
    return total / 1_000_000, parts


def cache_telemetry(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """Each call row's cache figures (the module docstring), from its replay's rows before and after
    it: a row's neighbours count where they are its replay's previous and next calls (the rows of a
    replay come together in call order, as every run stores them); a row whose previous call is not
    beside it (a frame of some rows only) counts nothing lost or unread."""
    call = frame["call"].to_numpy()
    context = frame["context_tokens"].to_numpy(dtype=np.int64)
    prefix = np.minimum(frame["prefix_tokens"].to_numpy(dtype=np.int64), context)
    expired = (
        frame["cache_expired"].fillna(False).to_numpy(dtype=bool) if "cache_expired" in frame else np.zeros(len(frame), bool)
    )
    follows = np.zeros(len(frame), dtype=bool)  # the row's previous row is its replay's previous call
    follows[1:] = call[1:] == call[:-1] + 1
    for key in ("session", "setting"):
        if key in frame and len(frame) > 1:
            codes = pd.factorize(frame[key].to_numpy())[0]
            follows[1:] &= codes[1:] == codes[:-1]
    previous = np.concatenate(([0], context[:-1]))
    lost = np.where(follows, np.maximum(previous - prefix, 0), 0)
    next_prefix = np.concatenate((prefix[1:], [0]))
    has_next = np.concatenate((follows[1:], [False]))
    written = context - prefix
    return {
        "cache_write_tokens": written,
        "invalidated_tokens": np.where(expired, 0, lost),
        "prefix_break": (lost > 0) & ~expired,
        "expired_tokens": np.where(expired, lost, 0),
        "unread_write_tokens": np.where(has_next, np.maximum(context - np.maximum(prefix, next_prefix), 0), 0),
    }


def cache_costs(
    frame: pd.DataFrame, rows_by_model: dict[str, np.ndarray], telemetry: dict[str, np.ndarray], prices: PriceTable | None
) -> dict[str, np.ndarray]:
    """`invalidation_cost` and `unread_write_cost` per row in USD (NaN: a model without those prices)."""
    costs = {name: np.full(len(frame), np.nan) for name in ("invalidation_cost", "unread_write_cost")}
    for model, rows in rows_by_model.items():
        price = price_for(model, prices)
        if price is None or price.cache_read is None:
            continue
        new_rate = price.cache_write if model_family(model) == "claude" else price.input
        if new_rate is None:
            continue
        premium = max(0.0, new_rate - price.input)
        costs["invalidation_cost"][rows] = telemetry["invalidated_tokens"][rows] * (new_rate - price.cache_read) / 1_000_000
        costs["unread_write_cost"][rows] = telemetry["unread_write_tokens"][rows] * premium / 1_000_000
    return costs
