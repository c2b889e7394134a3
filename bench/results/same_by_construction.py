"""Settings that compact alike by construction: with a summarizer that reads no prompt, the
settings that only choose a prompt change nothing.

The extractive stand-in summarizer (the offline default) reads the messages, never the rendered
prompt (`reads_prompt = False`), and merges an earlier summary the same way whether it is handed
over as the update prompt's previous summary or as the first message. So two summarizing settings
of the same strategy family, trigger and estimator whose other settings are equal make the same
cuts and write the same summaries, whatever their prompt templates say, as long as the templates
render the same file lists (their `files` macro is used without an LLM). Such settings are one
result under several names: comparing their prompts needs an LLM `[summarizer]`.

Settings of a strategy that calls no LLM at all (observation masking, prune, truncate) compact alike
when their strategy, with every setting, and their trigger, estimator and window table are equal:
`observation-masking` and the `jetbrains-masking` preset (the same masking at the same 0.8 trigger
with the hybrid estimator) are one result under two names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from compactlab.replay.setting import DEFAULT_ESTIMATOR, Setting, estimator_of, harness_of, trigger_of
from compactlab.strategies.masking import ObservationMasking
from compactlab.strategies.prompting import TEMPLATES, file_lists, prompt_set_hash, renders_prompt, template_files
from compactlab.strategies.prune import Prune
from compactlab.strategies.registry import get_strategy
from compactlab.strategies.summarize import Summarize
from compactlab.strategies.truncate import Truncate

# Settings that only choose which prompt is rendered (`iterative`: the update prompt or a fresh one).
PROMPT_ONLY = ("template", "update_template", "turn_prefix_template", "iterative")
_PROBE = (["src/read.py"], ["src/modified.py"])  # what a template's `files` macro is asked to render
# Strategies whose compactions follow from their settings alone: they call no LLM.
WITHOUT_LLM = (ObservationMasking, Prune, Truncate)


@dataclass(frozen=True)
class SameGroup:
    labels: tuple[str, ...]  # in the order given
    prompts_not_rendered: tuple[str, ...]  # the templates none of them rendered

    @property
    def why(self) -> str:
        if not self.prompts_not_rendered:
            return (
                "identical by construction: the same strategy, settings, trigger and estimator under different names "
                "(no LLM is called, so they make the same compactions)"
            )
        return (
            f"identical by construction: the extractive stand-in summarizer reads no prompt, so "
            f"{', '.join(self.prompts_not_rendered)} were never rendered and these settings differ only in them; "
            "comparing summary prompts needs an LLM [summarizer]"
        )

    def as_json(self) -> dict:
        return {"labels": list(self.labels), "prompts_not_rendered": list(self.prompts_not_rendered), "why": self.why}

    @classmethod
    def from_json(cls, record: dict) -> SameGroup:
        return cls(tuple(record["labels"]), tuple(record["prompts_not_rendered"]))


def one_note(groups: Sequence[SameGroup]) -> str:
    """All groups in one sentence ('' without any): a sweep holds dozens, and one paragraph per pair
    buries the leaderboard under the same explanation."""
    if not groups:
        return ""
    rows = "1 row names" if len(groups) == 1 else f"{len(groups)} rows each name"
    example = " = ".join(groups[0].labels)
    prompts = sorted({p for g in groups for p in g.prompts_not_rendered})
    reasons = [SameGroup(groups[0].labels, tuple(prompts)).why] if prompts else []
    if any(not g.prompts_not_rendered for g in groups):
        reasons.append(SameGroup(groups[0].labels, ()).why)
    return (
        f"{rows} settings that are one result under several names (e.g. {example}): "
        + "; or ".join(reasons)
        + " (summary.json keeps each name's figures)"
    )


def construction_key(setting: Setting, default_estimator: str = DEFAULT_ESTIMATOR) -> tuple | None:
    """What decides a setting's compactions when its summarizer reads no prompt, or when it calls no
    LLM; None for settings this rule does not cover (an LLM summarizer, a strategy not known to call none).
    `default_estimator`: the run's, for settings that set none."""
    made = get_strategy(setting.strategy, **dict(setting.settings))
    strategy = getattr(made, "strategy", made)  # a preset compacts with its strategy
    trigger = trigger_of(made, setting.trigger)
    estimator = estimator_of(made, setting.estimator, default_estimator)
    if type(strategy) in WITHOUT_LLM:
        windows = (tuple(getattr(made, "context_windows", ())), getattr(made, "unknown_window", None))
        return (strategy, trigger, estimator, windows, harness_of(made), setting.at_real_compactions)
    if not isinstance(strategy, Summarize) or strategy.summarizer != "extractive" or not _summarizes_as_summarize(type(strategy)):
        return None
    others = tuple((f.name, getattr(strategy, f.name)) for f in dataclasses.fields(strategy) if f.name not in PROMPT_ONLY)
    lists = tuple(file_lists(t, *_PROBE) for t in (strategy.template, strategy.update_template, strategy.turn_prefix_template))
    # The trigger as set: the replay scales it to each model's window alike for every setting with the
    # same harness (`compactlab.replay.setting.window_and_trigger`), which is in the key too.
    # Where it compacts (at the real compactions only, or where its trigger fires) is in the key too.
    return (others, trigger, estimator, lists if strategy.track_files else None, harness_of(made), setting.at_real_compactions)


def _summarizes_as_summarize(cls: type) -> bool:
    """Whether `cls` compacts with `Summarize`'s own code: it and every class between it and `Summarize`
    define no method (`IterativeMerge` only sets other defaults). A subclass with code of its own may
    compact otherwise whatever its settings, and a run copies rows on this rule's word."""
    for klass in cls.__mro__:
        if klass is Summarize:
            return True
        if any(not name.startswith("__") and callable(getattr(klass, name)) for name in vars(klass)):
            return False
    return False


def prompts_of(setting: Setting) -> tuple[str, ...]:
    made = get_strategy(setting.strategy, **dict(setting.settings))
    strategy: Any = getattr(made, "strategy", made)  # a summarizing strategy: it has the three templates
    return tuple(dict.fromkeys((strategy.template, strategy.update_template, strategy.turn_prefix_template)))


def same_groups(settings: Sequence[Setting], default_estimator: str = DEFAULT_ESTIMATOR) -> list[SameGroup]:
    """The groups of two or more settings identical by construction (see the module docstring)."""
    by_key: dict[tuple, list[Setting]] = {}
    for setting in settings:
        key = construction_key(setting, default_estimator)
        if key is not None:
            by_key.setdefault(key, []).append(setting)
    groups = []
    for key, members in by_key.items():
        if len(members) > 1:
            summarizing = not isinstance(key[0], WITHOUT_LLM)
            prompts = tuple(dict.fromkeys(p for setting in members for p in prompts_of(setting))) if summarizing else ()
            groups.append(SameGroup(tuple(c.label for c in members), prompts))
    return groups


def one_row_each(
    board: pd.DataFrame, groups: Sequence[SameGroup], first: str | None = None
) -> tuple[pd.DataFrame, dict[str, SameGroup]]:
    """The settings' figures (`compactlab.results.leaderboard.setting_figures`) with one row per group of settings
    identical by construction, and by the label of each such row the group it stands for.

    A group's row is its member `first` (the recommended setting) when it is one, else its first
    member on the board. Only members whose figures on the board equal that row's join it: the
    rule says they must, and a member that differs is shown on its own rather than hidden."""
    shown: dict[str, SameGroup] = {}
    hidden: set[str] = set()
    by_label = board.set_index("setting", drop=False) if not board.empty else board
    for group in groups:
        present = [label for label in group.labels if label in by_label.index]
        if len(present) < 2:
            continue
        head = first if first in present else present[0]
        figures = by_label.loc[head].drop("setting")
        same = [label for label in present if label == head or by_label.loc[label].drop("setting").equals(figures)]
        if len(same) > 1:
            shown[head] = SameGroup((head, *(label for label in same if label != head)), group.prompts_not_rendered)
            hidden |= set(same) - {head}
    rows = board[~board["setting"].isin(hidden)].reset_index(drop=True) if hidden else board
    return rows, shown


def replayed_once(settings: Sequence[Setting], default_estimator: str = DEFAULT_ESTIMATOR) -> dict[str, str]:
    """By label, each setting identical by construction to one before it, and that one's label (the
    first of its group): a run replays the first once and writes its rows under every name of the
    group (`as_member`). Decided from the settings alone, before anything is replayed."""
    return {label: group.labels[0] for group in same_groups(settings, default_estimator) for label in group.labels[1:]}


def row_names(strategy: Any) -> tuple[str, str | None]:
    """What a setting's compaction rows name besides its label: the strategy's name as the engine
    records it, and the hash of the prompt set it would render (None for a strategy without prompts)."""
    name = getattr(strategy, "name", type(strategy).__name__)
    inner = getattr(strategy, "strategy", strategy)  # a preset compacts with its strategy
    if isinstance(inner, Summarize):
        return name, prompt_set_hash(inner.template, inner.update_template, inner.turn_prefix_template)
    return name, None


def as_member(rows: Sequence[dict], label: str, first: Any, member: Any) -> list[dict]:
    """The compaction rows of the group's first setting (strategy `first`) as the member `label` (strategy
    `member`) writes them: the same compactions under its own label, strategy name and prompt set hash
    (a summary that was never rendered from a prompt is the same whichever set it would have used)."""
    (first_name, first_hash), (name, hash_) = row_names(first), row_names(member)
    return [
        {
            **row,
            "setting": label,
            "strategy": name if row["strategy"] == first_name else row["strategy"],
            "prompt_hash": hash_ if row["prompt_hash"] is not None and row["prompt_hash"] == first_hash else row["prompt_hash"],
        }
        for row in rows
    ]


def rendered_prompts(settings: Sequence[Setting]) -> set[str]:
    """The file names of the prompt templates the settings' compactions render (the templates they
    import and the system prompt's included)."""
    names: set[str] = set()
    for setting in settings:
        made = get_strategy(setting.strategy, **dict(setting.settings))
        if renders_prompt(made):
            inner = getattr(made, "strategy", made)
            names |= {path.name for name in TEMPLATES if hasattr(inner, name) for path in template_files(getattr(inner, name))}
    return names
