"""Settings that compact alike by construction: with a summarizer that reads no prompt, the
settings that only choose a prompt change nothing.

The extractive stand-in summarizer (the offline default) reads the messages, never the rendered
prompt (`reads_prompt = False`), and merges an earlier summary the same way whether it is handed
over as the update prompt's previous summary or as the first message. So two summarizing settings
of the same strategy family, trigger and estimator whose other settings are equal make the same
cuts and write the same summaries, whatever their prompt templates say, as long as the templates
render the same file lists (their `files` macro is used without an LLM). Such settings are one
result under several names: comparing their prompts needs an LLM `[summarizer]`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from bench.engine import Trigger
from bench.replay import StrategyConfig
from strategies.prompting import file_lists
from strategies.registry import get_strategy
from strategies.summarize import Summarize

# Settings that only choose which prompt is rendered (`iterative`: the update prompt or a fresh one).
PROMPT_ONLY = ("template", "update_template", "turn_prefix_template", "iterative")
_PROBE = (["src/read.py"], ["src/modified.py"])  # what a template's `files` macro is asked to render


@dataclass(frozen=True)
class SameGroup:
    labels: tuple[str, ...]  # in the order given
    prompts_not_rendered: tuple[str, ...]  # the templates none of them rendered

    @property
    def why(self) -> str:
        return (f"identical by construction: the extractive stand-in summarizer reads no prompt, so "
                f"{', '.join(self.prompts_not_rendered)} were never rendered and these settings differ only in them; "
                "comparing summary prompts needs an LLM [summarizer]")


def construction_key(config: StrategyConfig) -> tuple | None:
    """What decides a setting's compactions when its summarizer reads no prompt; None for settings
    this rule does not cover (no summarizing strategy, or an LLM summarizer)."""
    made = get_strategy(config.strategy, **dict(config.settings))
    strategy = getattr(made, "strategy", made)  # a preset compacts with its strategy
    if not isinstance(strategy, Summarize) or strategy.summarizer != "extractive":
        return None
    trigger = config.trigger or getattr(made, "trigger", None) or Trigger()
    estimator = config.estimator or getattr(made, "estimator", None) or "hybrid"
    others = tuple((f.name, getattr(strategy, f.name)) for f in dataclasses.fields(strategy) if f.name not in PROMPT_ONLY)
    lists = tuple(file_lists(t, *_PROBE) for t in (strategy.template, strategy.update_template, strategy.turn_prefix_template))
    return (others, trigger, estimator, lists if strategy.track_files else None)


def prompts_of(config: StrategyConfig) -> tuple[str, ...]:
    made = get_strategy(config.strategy, **dict(config.settings))
    strategy = getattr(made, "strategy", made)
    return tuple(dict.fromkeys((strategy.template, strategy.update_template, strategy.turn_prefix_template)))


def same_groups(configs: Sequence[StrategyConfig]) -> list[SameGroup]:
    """The groups of two or more settings identical by construction (see the module docstring)."""
    by_key: dict[tuple, list[StrategyConfig]] = {}
    for config in configs:
        key = construction_key(config)
        if key is not None:
            by_key.setdefault(key, []).append(config)
    groups = []
    for members in by_key.values():
        if len(members) > 1:
            prompts = tuple(dict.fromkeys(p for config in members for p in prompts_of(config)))
            groups.append(SameGroup(tuple(c.label for c in members), prompts))
    return groups
