"""The catalogue's prompt-cache and cost-split entries: what a setting did to the provider's cache, and
its bill split into its parts, each with and without compaction and the change.

The per-call values are `compactlab.results.call_costs`' (its docstring defines each); a session's
value is their sum. The bill's parts add up to `cost_context` (with the setting) and `cost_full`
(without); the summarizer's calls are `summarizer_cost`.
"""

from __future__ import annotations

from compactlab.results.metric import Metric

DOLLARS = 0.005  # the tolerance of every per-session dollar figure (as `total_cost`'s)

PART_LABELS = {  # each part of the bill (`compactlab.results.call_costs.PARTS`): its label, what it counts
    "input": (
        "prompt at full price",
        "Prompt tokens billed at the full input price (not read from the cache, not written to it).",
    ),
    "cache_read": ("cache reads", "Prompt tokens read from the provider's prompt cache."),
    "cache_write": (
        "cache writes",
        "Prompt tokens written to the provider's prompt cache (Anthropic bills new prompt tokens so).",
    ),
    "output": ("output", "The recorded output tokens: the same under every setting (the replay is open-loop)."),
}


# The per-session cache figures, in the order the entries come (summary.json's `costs` and the report show them).
CACHE_FIGURES = (
    "cache_write_tokens",
    "invalidated_tokens",
    "expired_tokens",
    "unread_write_tokens",
    "prefix_breaks",
    "cache_expiries",
    "invalidation_cost",
    "unread_write_cost",
)


def _token_sum(name: str, label: str, direction: str, description: str, value: str | None = None) -> Metric:
    return Metric(name, label, direction, "tokens", 0.0, description, source="calls", value=value or name, per_session="sum")


def cache_metrics() -> tuple[Metric, ...]:
    """The prompt-cache entries, then the cost split's."""
    entries = [
        _token_sum(
            "cache_write_tokens",
            "cache writes (tokens)",
            "lower",
            "Prompt tokens the cache did not serve, added up over the session's calls: written to the cache (billed as "
            "writes by Anthropic, as input by providers that charge no writes).",
        ),
        _token_sum(
            "invalidated_tokens",
            "cache invalidated (tokens)",
            "lower",
            "Tokens of each previous prompt the cache still held that the next prompt no longer shared: what the "
            "setting's compactions and in-place edits threw away, added up over the session.",
        ),
        _token_sum(
            "expired_tokens",
            "cache expired (tokens)",
            "neither",
            "Tokens of each previous prompt the cache had let go by the next call (a pause past the cache's lifetime, "
            "another model): lost whatever the setting did.",
        ),
        _token_sum(
            "unread_write_tokens",
            "cache writes never read (tokens)",
            "lower",
            "Tokens a call wrote to the cache that the next call did not read back (the prefix broke or expired "
            "first); the session's last call is not counted.",
        ),
        Metric(
            "prefix_breaks",
            "prefix breaks per session",
            "lower",
            "count",
            0.0,
            "Calls whose prompt shares less with the previous one than the cache held: a compaction, or an in-place "
            "edit (masking or pruning old outputs breaks the prefix at the first edited message).",
            source="calls",
            value="prefix_break",
            per_session="sum",
        ),
        Metric(
            "cache_expiries",
            "cache expiries per session",
            "neither",
            "count",
            0.0,
            "Calls made after the cache had expired (a pause past its lifetime, or another model), the same under every "
            "setting; 0 in a session whose calls record no time.",
            source="calls",
            value="cache_expired",
            per_session="sum",
        ),
        Metric(
            "invalidation_cost",
            "cost of invalidated cache per session ($)",
            "lower",
            "dollars",
            DOLLARS,
            "The invalidated tokens sent again at the new-token price instead of the cache-read price, in US dollars.",
            source="calls",
            value="invalidation_cost",
            per_session="total",
        ),
        Metric(
            "unread_write_cost",
            "cost of cache writes never read per session ($)",
            "lower",
            "dollars",
            DOLLARS,
            "The premium paid for writing tokens to the cache that were never read back (the write price over the "
            "input price), in US dollars.",
            source="calls",
            value="unread_write_cost",
            per_session="total",
        ),
    ]
    for part, (label, description) in PART_LABELS.items():
        entries += [
            Metric(
                f"cost_{part}",
                f"{label} cost per session ($)",
                "lower",
                "dollars",
                DOLLARS,
                f"{description} Their cost with the setting, in US dollars.",
                source="calls",
                value=f"cost_{part}",
                per_session="total",
            ),
            Metric(
                f"cost_full_{part}",
                f"{label} cost per session without compaction ($)",
                "neither",
                "dollars",
                DOLLARS,
                f"{description} Their cost without compaction, in US dollars.",
                source="calls",
                value=f"cost_full_{part}",
                per_session="total",
            ),
            Metric(
                f"cost_{part}_change",
                f"{label} cost change per session ($)",
                "lower",
                "dollars",
                DOLLARS,
                f"The {label} cost with the setting minus without compaction, in US dollars.",
                value=lambda s, part=part: s[f"cost_{part}"] - s[f"cost_full_{part}"],
            ),
        ]
    return tuple(entries)
