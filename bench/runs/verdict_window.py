"""The window a verdict is at, said wherever the verdict is: the terminal, summary.json, the report, the API.

A run replays at each model's real window (`window = 0`, the default for a user's own sessions) or at
one simulated window for every model (`--window N`: a stress test; the bundled main job's default,
as its sessions are short). A verdict at a simulated window is about compactions the real agent may
never have made, so every verdict line names its window and whether it is simulated.

A trigger written in tokens (seed-001's 200,000, a reserve below the window) meets a simulated window
scaled by simulated ÷ real (`Harness.window == "scaled"`): it keeps its share of the window, not its
tokens, so a rule that fires at 200,000 tokens whatever the window has no faithful counterpart at
64,000. Each such rescaling is listed (`scaled_rules`), never applied silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from compactlab.replay.setting import Setting, harness_of, trigger_of, window_and_trigger
from compactlab.runs.run_config import RunConfig, windows_of
from compactlab.tokens.context_windows import ContextWindows


def verdict_window(config: RunConfig, models: Iterable[str]) -> dict:
    """{tokens, simulated, short, text}: the window the run's verdict is at (`tokens` None: each model's
    own); `short` goes into every verdict line, `text` adds the models' real windows."""
    shown = _grouped(real_windows(config, models))
    if config.window:
        return {
            "tokens": config.window,
            "simulated": True,
            "short": f"at a simulated {config.window:,}-token window (a stress test)",
            "text": f"at a simulated {config.window:,}-token window (a stress test: every model replayed as if its window "
            f"were {config.window:,}" + (f"; their real windows: {shown})" if shown else ")"),
        }
    return {
        "tokens": None,
        "simulated": False,
        "short": "at each model's real window",
        "text": "at each model's real window" + (f" ({shown})" if shown else ""),
    }


def real_windows(config: RunConfig, models: Iterable[str]) -> dict[str, int]:
    """Each model's real context window (its own override, else the built-in table)."""
    windows = ContextWindows(overrides=dict(config.context_windows))
    return {model: windows.lookup(model).tokens for model in sorted(set(models)) if model and model != "unknown"}


def _grouped(real: dict[str, int]) -> str:
    """'200,000 for 9 models, 400,000 for gpt-5-codex': one window per size, its models counted past two."""
    by_size: dict[int, list[str]] = {}
    for model, tokens in real.items():
        by_size.setdefault(tokens, []).append(model)
    parts = []
    for tokens, names in sorted(by_size.items()):
        parts.append(f"{tokens:,} for {_models(names)}")
    return "; ".join(parts)


SCALED = (
    "triggers in tokens, scaled to the simulated window (each keeps its share of the model's real window, not its "
    "tokens: a rule in tokens has no faithful counterpart in a smaller window)"
)


def scaled_rules(config: RunConfig, settings: Sequence[Setting], instances: dict, models: Iterable[str]) -> list[str]:
    """One line per setting whose trigger, written in tokens, is rescaled to the simulated window (empty
    at real windows): each size as written, and as replayed for which models (`SCALED` says why)."""
    if not config.window:
        return []
    windows = windows_of(config)
    real = real_windows(config, models)
    lines = []
    for setting in settings:
        strategy = instances.get(setting.label)
        if strategy is None or setting.trigger is not None or harness_of(strategy).window != "scaled":
            continue
        own = trigger_of(strategy)
        changed: dict[tuple[str, int], dict[int, list[str]]] = {}  # (rule, as written) -> as replayed -> models
        for model in real:
            written = own.for_session(model)
            _, replayed = window_and_trigger(strategy, None, windows, model, None)
            for name, what in (("absolute", "trigger at"), ("reserve_tokens", "reserve of")):
                before, after = getattr(written, name), getattr(replayed, name)
                if before and before != after:
                    changed.setdefault((what, before), {}).setdefault(after, []).append(model)
        parts = [
            f"{what} {before:,} tokens → "
            + ", ".join(f"{after:,} ({_models(names)})" for after, names in sorted(replayed.items(), reverse=True))
            for (what, before), replayed in changed.items()
        ]
        if parts:
            lines.append(f"{setting.label}: {'; '.join(parts)}")
    return lines


def _models(names: list[str]) -> str:
    return ", ".join(names) if len(names) <= 2 else f"{len(names)} models"
