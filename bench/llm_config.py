"""The run's LLM summarizer, from the `[summarizer]` table of a run configuration.

No table: no LLM (strategies use the extractive summarizer; one set to `summarizer = "llm"` then
fails clearly). `provider = "recorded"` replays the committed call cache with no network and no
key, which is what CI uses.
"""

from __future__ import annotations

from bench.run_config import RunConfig

SUMMARIZER_KEYS = {
    "provider", "model", "base_url", "cache_dir", "mode", "api_key_env", "max_retries", "timeout", "temperature",
    "max_in_flight", "recorded_provider",
}


def _checked(table: str, settings: dict, known: set[str]) -> dict:
    """The settings of a `[summarizer]`/`[judge]` table, or a clear error naming what is wrong."""
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ValueError(f"[{table}]: unknown settings {unknown}; known: {sorted(known)}")
    if "provider" not in settings or "model" not in settings:
        raise ValueError(f"[{table}] needs `provider` (recorded, openai or anthropic) and `model`")
    return settings


def make_run_summarizer(config: RunConfig):
    settings = dict(config.summarizer)
    if not settings:
        return None
    _checked("summarizer", settings, SUMMARIZER_KEYS)
    from bench.llm import make_summarizer

    return make_summarizer(prices=config.prices or None, **settings)


JUDGE_KEYS = SUMMARIZER_KEYS | {"probes", "threshold", "max_output_tokens"}


def make_run_judge(config: RunConfig):
    """The run's model judge (`bench.next_action.Judge`) from the `[judge]` table; None without one."""
    settings = dict(config.judge)
    if not settings:
        return None
    _checked("judge", settings, JUDGE_KEYS)
    from bench.next_action import make_judge

    return make_judge(prices=config.prices or None, **settings)
