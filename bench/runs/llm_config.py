"""The run's LLM summarizer, from the `[summarizer]` table of a run configuration.

No table: no LLM (strategies use the extractive summarizer; one set to `summarizer = "llm"` then
fails clearly). `provider = "recorded"` replays the committed call cache with no network and no
key, which is what CI uses.
"""

from __future__ import annotations

from compactlab.runs.config_schema import keys_of, unknown_keys
from compactlab.runs.run_config import RunConfig

SUMMARIZER_KEYS = {key.name for key in keys_of("summarizer")}


def _checked(table: str, settings: dict, known: set[str]) -> dict:
    """The settings of a `[summarizer]`/`[judge]` table, or a clear error naming what is wrong."""
    unknown_keys(settings, known, f"[{table}]")
    if "provider" not in settings or "model" not in settings:
        raise ValueError(f"[{table}] needs `provider` (recorded, openai or anthropic) and `model`")
    return settings


def make_run_summarizer(config: RunConfig):
    settings = dict(config.summarizer)
    if not settings:
        return None
    _checked("summarizer", settings, SUMMARIZER_KEYS)
    from compactlab.llm import make_summarizer

    return make_summarizer(prices=config.prices or None, **settings)


JUDGE_KEYS = {key.name for key in keys_of("judge")}


def make_run_judge(config: RunConfig):
    """The run's model judge (`compactlab.scoring.next_action.Judge`) from the `[judge]` table; None without one."""
    settings = dict(config.judge)
    if not settings:
        return None
    _checked("judge", settings, JUDGE_KEYS)
    from compactlab.scoring.judge import make_judge

    return make_judge(prices=config.prices or None, **settings)
