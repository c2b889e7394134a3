"""A run configuration written back as TOML, so that what a command chose can be pasted and rerun.

`compactlab sweep` prints its recommended setting this way: the `[[strategy]]` block carries the
sweep's label, strategy, settings and trigger, and the top-level keys carry what else decides the
numbers (datasets, window, estimator, context windows, prices, summarizer), so the pasted file
replays exactly what the sweep replayed for that setting. The writer covers the value types a
configuration holds (strings, numbers, booleans, arrays and tables of them); nothing else needs one.
"""

from __future__ import annotations

import json
import math
from dataclasses import fields

from compactlab.contract import Trigger
from compactlab.replay.setting import Setting
from compactlab.runs.run_config import RunConfig

_DEFAULT_TRIGGER = Trigger()


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError(f"TOML cannot hold {value!r}")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string (with \\uXXXX escapes) is a valid TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items() if v is not None) + " }"
    raise ValueError(f"TOML cannot hold {type(value).__name__} {value!r:.60}")


def toml_key(key: str) -> str:
    bare = key and all(c.isalnum() or c in "-_" for c in key) and key.isascii()
    return key if bare else json.dumps(key)


def trigger_table(trigger: Trigger) -> dict:
    """The trigger's fields that differ from the engine's default, `fraction` always."""
    table = {"fraction": trigger.fraction}
    for f in fields(Trigger):
        value = getattr(trigger, f.name)
        if f.name != "fraction" and value != getattr(_DEFAULT_TRIGGER, f.name):
            table[f.name] = value
    return table


def strategy_block(strategy: Setting) -> str:
    lines = ["[[strategy]]", f"name = {toml_value(strategy.strategy)}", f"label = {toml_value(strategy.label)}"]
    if strategy.trigger is not None:
        lines.append(f"trigger = {toml_value(trigger_table(strategy.trigger))}")
    if strategy.settings:
        lines.append(f"settings = {toml_value(dict(strategy.settings))}")
    if strategy.estimator:
        lines.append(f"estimator = {toml_value(strategy.estimator)}")
    return "\n".join(lines)


def run_config_toml(config: RunConfig) -> str:
    """The whole configuration as a TOML file `compactlab run --config` reads back to the same config."""
    lines = []
    if config.datasets:
        lines.append(f"datasets = {toml_value(list(config.datasets))}")
    lines.append(f"window = {config.window_tokens}")
    lines.append(f"estimator = {toml_value(config.estimator)}")
    if config.lenient:
        lines.append("lenient = true")
    for table in ("context_windows", "summarizer", "judge"):
        values = getattr(config, table)
        if values:
            lines += ["", f"[{table}]"] + [f"{toml_key(k)} = {toml_value(v)}" for k, v in values.items()]
    for model, price in config.prices.items():
        lines += ["", f"[prices.{toml_key(model)}]"] + [f"{toml_key(k)} = {toml_value(v)}" for k, v in dict(price).items()]
    for strategy in config.strategies:
        lines += ["", strategy_block(strategy)]
    return "\n".join(lines) + "\n"
