"""Run configuration: TOML file, defaults, and command-line overrides.

Every key, its type, default and meaning is in `bench/runs/config_schema.py` (docs/configuration.md's table and
`compactlab init`'s commented compactlab.toml are made from it); loading checks a file against it.

    datasets = ["m-claude", "mini-swe-agent-pr816"]   # names, files or folders; default: all bundled
    window = 0                                        # 0: each model's real window (the default for your own
                                                      # sessions); N: a simulated N-token stress test
    max_failed_share = 0.0                            # share of a strategy's compactions that may fail or
                                                      # fall back (e.g. LLM errors) and it is still ranked

    [[strategy]]                                      # one table per setting to replay
    name = "summarize"
    label = "summarize-70"
    trigger = { fraction = 0.7 }
    settings = { keep_recent_tokens = 20000 }
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

from compactlab.contract import Trigger, VersionReserve
from compactlab.replay.setting import Setting
from compactlab.runs.config_schema import (
    DEFAULT_WINDOW,
    KEYS,
    MAX_TOKENS,
    SETTING_NUMBER,
    SETTING_WHOLE,
    check_number,
    check_table,
    schema_key,
    unknown_keys,
)
from compactlab.sessions.datasets import bundled_only
from compactlab.strategies.registry import get_strategy, registered

__all__ = ["DEFAULT_WINDOW", "RunConfig", "config_from_data", "load_config", "setting_from", "window_for_data", "windows_of"]

# Registered entries that are parts of other designs rather than designs of their own.
NOT_RUN_BY_DEFAULT = frozenset({"opencode-summary"})
TRIGGER_FIELDS = {f.name for f in fields(Trigger)}
_PRICE_KEYS = tuple(k for k in KEYS if k.table == "prices.MODEL" and k.type in ("integer", "number"))


@dataclass(frozen=True)
class RunConfig:
    datasets: tuple[str, ...] = ()
    strategies: tuple[Setting, ...] = ()
    estimator: str = "hybrid"
    lenient: bool = False
    # None: the default for the run's data (`window_for_data`): each model's real window for the user's own
    # sessions, a simulated DEFAULT_WINDOW stress test for the bundled ones; `for_its_data` fills it in.
    window: int | None = None
    context_windows: dict = field(default_factory=dict)
    prices: dict = field(default_factory=dict)
    summarizer: dict = field(default_factory=dict)
    judge: dict = field(default_factory=dict)  # empty: no model judge (the default, offline)
    max_failed_share: float = 0.0  # see bench/results/run_failures.py
    # Measure the token estimators on the run's sessions while they are read (`compactlab.runs.report_inputs`):
    # the report's estimation section and trust figures. A sweep never does (its grid does not change them).
    estimation: bool = True
    # What one invocation may spend on LLM calls (bench/llm/concurrency.py). Not part of config.json:
    # it does not shape results, and a --resume may raise it.
    max_cost_usd: float | None = None

    def __post_init__(self) -> None:
        # Paths may be `str` or `Path`, one or a sequence; strategies names or `Setting`s: all held as config.json writes them.
        object.__setattr__(self, "datasets", _dataset_names(self.datasets))
        object.__setattr__(self, "strategies", _settings(self.strategies))

    def checked(self, where: object) -> RunConfig:
        """This configuration, once every number in it is within its range (`config_schema`); else
        an error naming `where` (the file, or the flag) and the key. Runs check before any work."""
        if self.window is not None:
            check_number(schema_key("", "window"), self.window, where)
        check_number(schema_key("", "max_failed_share"), self.max_failed_share, where)
        if self.max_cost_usd is not None:
            check_number(schema_key("", "max_cost_usd"), self.max_cost_usd, where)
        for model, tokens in self.context_windows.items():
            check_number(schema_key("context_windows", "MODEL"), tokens, f"{where}: [context_windows]", f"{model!r}")
        for model, price in self.prices.items():
            for name, value in price.items() if isinstance(price, dict) else ():
                if not isinstance(value, dict) and any(k.name == name for k in _PRICE_KEYS):
                    check_number(schema_key("prices.MODEL", name), value, f'{where}: [prices."{model}"]')
        return self

    def for_its_data(self) -> RunConfig:
        """This configuration with its window decided (`window_for_data` where it is None)."""
        return self if self.window is not None else dataclasses.replace(self, window=window_for_data(self.datasets))

    @property
    def window_tokens(self) -> int:
        """The window as replayed: 0 for each model's real window, else the simulated one."""
        window = self.for_its_data().window
        assert window is not None
        return window


def window_for_data(datasets: tuple[str, ...]) -> int:
    """The default window: each model's real one (0) for the user's own sessions (a file or a folder), so
    the first verdict a user gets is for the window their agent has; a simulated DEFAULT_WINDOW for the
    bundled datasets alone, whose sessions are mostly too short to reach a real window (a stress test,
    named as one wherever the verdict is)."""
    return DEFAULT_WINDOW if bundled_only(datasets) else 0


def _dataset_names(datasets: object) -> tuple[str, ...]:
    """`RunConfig.datasets` as names, files or folders (`str`): one `str` or `Path` is one dataset."""
    if isinstance(datasets, (str, os.PathLike)):
        datasets = (datasets,)
    if not isinstance(datasets, (list, tuple)):
        raise TypeError(f"RunConfig(datasets=...): a list of dataset names, files or folders (str or Path), got {datasets!r:.80}")
    names = []
    for dataset in datasets:
        if not isinstance(dataset, (str, os.PathLike)):
            raise TypeError(
                f"RunConfig(datasets=...): each is a dataset name, a file or a folder (str or Path), got {dataset!r:.80}"
            )
        names.append(os.fspath(dataset))
    return tuple(names)


def _settings(strategies: object) -> tuple[Setting, ...]:
    """`RunConfig.strategies` as `Setting`s: a name (or path/to/file.py:Name) is the setting of that name."""
    if isinstance(strategies, (str, Setting)):
        strategies = (strategies,)
    if not isinstance(strategies, (list, tuple)):
        raise TypeError(f"RunConfig(strategies=...): a list of strategy names or Settings, got {strategies!r:.80}")
    settings = []
    for entry in strategies:
        if isinstance(entry, str):
            entry = Setting(label=entry, strategy=entry)
        if not isinstance(entry, Setting):
            raise TypeError(f"RunConfig(strategies=...): each is a strategy name or a Setting, got {entry!r:.80}")
        settings.append(entry)
    return tuple(settings)


def default_strategies() -> tuple[Setting, ...]:
    """Every built-in offline strategy and preset (none of them needs an LLM by default)."""
    return tuple(Setting(label=name, strategy=name) for name in registered() if name not in NOT_RUN_BY_DEFAULT)


def _version_reserves(entries: list, where: str) -> tuple[VersionReserve, ...]:
    """A trigger's `reserve_by_version` read back from TOML or config.json: tables of VersionReserve's fields."""
    found = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: trigger reserve_by_version[{i}] must be a table, got {entry!r}")
        unknown_keys(entry, tuple(f.name for f in dataclasses.fields(VersionReserve)), where, "reserve_by_version settings")
        pairs = tuple(tuple(pair) for pair in entry.get("reserve_by_model", ()))
        found.append(VersionReserve(**{**entry, "reserve_by_model": pairs}))
    return tuple(found)


def setting_from(entry: object, where: str) -> Setting:
    if isinstance(entry, str):
        return Setting(label=entry, strategy=entry)
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise ValueError(f"{where}: a strategy is a name or a table with a `name`, got {entry!r}")
    check_table(entry, "strategy", where)
    trigger = entry.get("trigger")
    if trigger is not None:
        unknown_keys(trigger, TRIGGER_FIELDS, where, "trigger settings")
        if isinstance(trigger.get("reserve_by_model"), list):
            # TOML and config.json hold the pairs as lists; a trigger must hash (settings identical by
            # construction are grouped by it, compactlab.results.same_by_construction).
            trigger = {**trigger, "reserve_by_model": tuple(tuple(pair) for pair in trigger["reserve_by_model"])}
        if isinstance(trigger.get("reserve_by_version"), list):  # (config.json writes it as a list of tables)
            trigger = {**trigger, "reserve_by_version": _version_reserves(trigger["reserve_by_version"], where)}
        trigger = Trigger(**trigger)
        _check_trigger(trigger, where)
    settings = entry.get("settings", {})
    if not isinstance(settings, dict):
        raise ValueError(f"{where}: `settings` must be a table")
    if ":" not in entry["name"] and entry["name"] in registered():  # (a file's strategy is checked when the run loads it)
        check_setting_numbers(get_strategy(entry["name"]), settings, where)
        _check_setting_values(entry["name"], settings, where)
    return Setting(
        label=str(entry.get("label", entry["name"])),
        strategy=entry["name"],
        settings=tuple(sorted(settings.items())),
        trigger=trigger,
        estimator=entry.get("estimator"),
    )


def _check_setting_values(name: str, settings: dict, where: str) -> None:
    """A value the strategy itself refuses (a provider's documented minimum: anthropic-compaction's
    trigger_tokens) is an error naming where it was set, before anything runs. An unknown setting is
    left to `compactlab.runs.run_checks.resolve`, which names the known ones."""
    try:
        get_strategy(name, **settings)
    except KeyError:
        return
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from exc


def _check_trigger(trigger: Trigger, where: str) -> None:
    for name in ("fraction", "warning", "critical", "target", "on_cache_expiry"):
        value = getattr(trigger, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1):
            raise ValueError(f"{where}: trigger `{name}` must be a fraction of the window in (0, 1], got {value!r}")
    margin = trigger.cache_margin_seconds
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin <= 86_400:
        raise ValueError(f"{where}: trigger `cache_margin_seconds` must be a number of seconds from 0 to 86,400, got {margin!r}")
    for name in ("absolute", "reserve_tokens"):
        value = getattr(trigger, name)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
            raise ValueError(
                f"{where}: trigger `{name}` must be a whole number of tokens from 0 to {MAX_TOKENS:_}, got {value!r}"
            )


def check_setting_numbers(strategy: object, settings: dict, where: object) -> None:
    """A strategy's numeric settings are in range (`config_schema.SETTING_WHOLE`, `SETTING_NUMBER`):
    whole where the strategy's field is an `int`."""
    inner = getattr(strategy, "strategy", strategy) if hasattr(strategy, "trigger") else strategy  # a preset's strategy
    if not dataclasses.is_dataclass(inner):
        return
    types = {f.name: str(f.type) for f in dataclasses.fields(inner)}
    for name, value in settings.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and name in types:
            whole = "int" in types[name] and "float" not in types[name]
            check_number(SETTING_WHOLE if whole else SETTING_NUMBER, value, where, f"setting `{name}`")


def load_config(path: str | Path | None) -> RunConfig:
    if path is None:
        return RunConfig()
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read configuration: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: invalid TOML: {exc}") from exc
    return config_from_data(data, path)


def config_from_data(data: dict, path: object) -> RunConfig:
    """A run configuration from parsed TOML; `path` names it in errors (also used by gate suites)."""
    check_table(data, "", path)
    for table in ("summarizer", "judge"):
        if table in data:
            if not isinstance(data[table], dict):
                raise ValueError(f"{path}: [{table}] must be a table")
            check_table(data[table], table, f"{path}: [{table}]")
    for table in ("context_windows", "prices"):
        if table in data and not isinstance(data[table], dict):
            raise ValueError(f"{path}: [{table}] must be a table")
    if not isinstance(data.get("strategy", []), list):
        raise ValueError(f"{path}: strategies to replay are [[strategy]] tables (double brackets), one per setting")
    entries = [setting_from(s, f"{path}: strategies[{i}]") for i, s in enumerate(data.get("strategies", []))]
    entries += [setting_from(s, f"{path}: [[strategy]] #{i + 1}") for i, s in enumerate(data.get("strategy", []))]
    labels = [e.label for e in entries]
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if duplicates:
        raise ValueError(f"{path}: strategy labels must be unique; repeated: {duplicates} (set `label`)")
    return RunConfig(
        datasets=tuple(data.get("datasets", ())),
        strategies=tuple(entries),
        estimator=data.get("estimator", "hybrid"),
        lenient=bool(data.get("lenient", False)),
        window=data.get("window"),
        context_windows=dict(data.get("context_windows", {})),
        prices=dict(data.get("prices", {})),
        summarizer=dict(data.get("summarizer", {})),
        judge=dict(data.get("judge", {})),
        max_failed_share=float(data.get("max_failed_share", 0.0)),
        estimation=bool(data.get("estimation", True)),
        max_cost_usd=None if data.get("max_cost_usd") is None else float(data["max_cost_usd"]),
    ).checked(path)


def windows_of(config: RunConfig):
    """The context windows a run uses: one simulated window for every model, or the real ones."""
    from compactlab.tokens.context_windows import ContextWindows

    overrides = dict(config.context_windows)
    if config.window_tokens:
        # The empty prefix matches every model name; a model's own override, a longer prefix, wins.
        overrides = {"": config.window_tokens, **overrides}
    return ContextWindows(overrides=overrides)


def strategies_of_run(config: dict) -> tuple[Setting, ...]:
    """A run's strategy settings, read back from its config.json (`config_json` writes unset
    triggers and estimators as null, which a configuration file leaves out)."""
    where = "config.json"
    return tuple(
        setting_from(
            {k: v for k, v in entry.items() if v is not None} if isinstance(entry, dict) else entry, f"{where}: strategies[{i}]"
        )
        for i, entry in enumerate(config.get("strategies", []))
    )


def config_json(config: RunConfig) -> dict:
    return {
        "datasets": list(config.datasets),
        "strategies": [
            {
                "label": s.label,
                "name": s.strategy,
                "settings": dict(s.settings),
                "trigger": None if s.trigger is None else {k: v for k, v in s.trigger.__dict__.items()},
                "estimator": s.estimator,
            }
            for s in config.strategies
        ],
        "estimator": config.estimator,
        "lenient": config.lenient,
        "window": config.window_tokens,
        "context_windows": config.context_windows,
        "prices": config.prices,
        "summarizer": {k: v for k, v in config.summarizer.items() if "key" not in k.lower()},
        # Only when set, so the configuration of a run without a judge reads as before (--resume).
        **({"judge": {k: v for k, v in config.judge.items() if "key" not in k.lower()}} if config.judge else {}),
        **({"max_failed_share": config.max_failed_share} if config.max_failed_share else {}),
        **({} if config.estimation else {"estimation": False}),  # (as for the judge: a default run's reads as before)
    }
