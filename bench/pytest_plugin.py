"""pytest plugin: replay sessions through your strategy or prompt in your own tests.

Installed with compactlab (entry point `pytest11: compactlab`); `-p no:compactlab` turns it off.
Importing it costs nothing: compactlab itself is imported only when a test uses the fixture.

    def test_summary_prompt_keeps_file_paths(compactlab_replay):
        result = compactlab_replay(
            "mini-swe-agent-pr816",                  # datasets, files or folders (a list for several)
            strategy="summarize",                    # a name, a preset, or path/to/file.py:Name
            template="prompts/summary.j2",           # relative to this test file (or a bundled name)
            settings={"keep_recent_tokens": 4000, "summarizer": "llm"},
            summarizer={"provider": "openai", "model": "gpt-4.1-mini", "cache_dir": "answers"},
            window=32000,                            # simulated (a stress test); default: as `compactlab run`
        )
        result.assert_metric("preservation_k5_path", ">=", 0.9)
        result.assert_metric("total_cost", "<", 1.0, on="high")  # the interval's upper end

A replay that names a prompt template no model reads (no `summarizer`, or the strategy's
summarizer is the extractive stand-in) stops the session with exit code 2, as `compactlab check`
does: its assertions would pass whatever the prompt says. Give it `settings={"summarizer": "llm"}`
and `summarizer={"provider": ..., "model": ..., "cache_dir": "answers"}`: answers recorded there
(with a key once) replay with no key.

A metric is any `compactlab check` metric (`compactlab.gate.suite.KNOWN_METRICS`). `assert_metric` compares
the mean over sessions (`on="mean"`, or the bootstrap interval's "low" or "high" end) and on
failure says the value with its interval, the threshold, the worst sessions and, for
preservation metrics, the items their compactions lost. Replays are cached for the test session,
so several tests may assert on the same replay.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from pathlib import Path

import pytest

OPERATORS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq}
WORST_SHOWN = 5
LOST_SHOWN = 8


@dataclass(frozen=True)
class MetricValue:
    name: str
    mean: float
    low: float  # percentile-bootstrap interval of the mean over sessions
    high: float
    n: int  # sessions with a value
    confidence: float = 0.95

    def __str__(self) -> str:
        plural = "" if self.n == 1 else "s"
        return f"{self.name} = {self.mean:.4g} ({self.confidence:.0%} CI {self.low:.4g} to {self.high:.4g}, {self.n} session{plural})"


class ReplayResult:
    """One replay of sessions × one strategy: per-session metrics and assertion helpers."""

    def __init__(self, description: str, table, compactions, sessions: int, lost: dict | None = None) -> None:
        self.description = description
        self.table = table  # pandas DataFrame: one row per session, every metric a column
        self.compactions = compactions  # pandas DataFrame: one row per compaction
        self.sessions = sessions
        self.lost = lost or {}  # (session, metric) -> the items its compactions lost (`compactlab.gate.suite.lost_items`)

    def values(self, name: str) -> dict[str, float]:
        """The metric per session (sessions without a value left out)."""
        _known(name)
        if self.table.empty:
            return {}
        column = self.table.set_index("session")[name]
        return {t: float(v) for t, v in column.items() if v == v}  # v == v: not NaN

    def metric(self, name: str, confidence: float = 0.95) -> MetricValue:
        from compactlab.scoring.statistics import bootstrap_ci

        values = list(self.values(name).values())
        if not values:
            return MetricValue(name, float("nan"), float("nan"), float("nan"), 0, confidence)
        ci = bootstrap_ci(values, confidence=confidence)
        return MetricValue(name, ci.mean, ci.low, ci.high, ci.n, confidence)

    def assert_metric(self, name: str, op: str, threshold: float, on: str = "mean", confidence: float = 0.95) -> MetricValue:
        """Assert `metric <op> threshold` (op: >=, >, <=, <, ==), on the mean or an end of its interval."""
        __tracebackhide__ = True
        if op not in OPERATORS:
            raise ValueError(f"unknown comparison {op!r}; use one of {', '.join(OPERATORS)}")
        if on not in ("mean", "low", "high"):
            raise ValueError(f"on must be 'mean', 'low' or 'high', got {on!r}")
        value = self.metric(name, confidence)
        compared = getattr(value, on)
        if value.n and OPERATORS[op](compared, threshold):
            return value
        raise AssertionError(self._failure(value, op, threshold, on))

    def _failure(self, value: MetricValue, op: str, threshold: float, on: str) -> str:
        if value.n == 0:
            return (
                f"compactlab: {value.name} has no value on any of {self.sessions} sessions "
                f"(did the strategy compact at all? compactions: {len(self.compactions)})\n  replay: {self.description}"
            )
        end = (
            "" if on == "mean" else f": the {'lower' if on == 'low' else 'upper'} end of its interval, {getattr(value, on):.4g},"
        )
        lines = [f"compactlab: {value}{end} is not {op} {threshold:g}", f"  replay: {self.description}"]
        higher_wanted = op in (">=", ">") or (op == "==" and getattr(value, on) < threshold)
        ranked = sorted(self.values(value.name).items(), key=lambda item: item[1], reverse=not higher_wanted)
        lines.append(f"  worst sessions ({'lowest' if higher_wanted else 'highest'} first):")
        for session, number in ranked[:WORST_SHOWN]:
            lost = self.lost_items(session, value.name)
            suffix = f"   lost: {', '.join(lost[:LOST_SHOWN])}{' …' if len(lost) > LOST_SHOWN else ''}" if lost else ""
            lines.append(f"    {number:.4g}  {session}{suffix}")
        return "\n".join(lines)

    def lost_items(self, session: str, metric: str = "preservation_k5") -> list[str]:
        """Items ("kind:text") the session's compactions lost, as the metric counts them (none for a
        metric that counts no items)."""
        return self.lost.get((session, metric), [])


def _known(name: str) -> None:
    from compactlab.gate.suite import KNOWN_METRICS

    if name not in KNOWN_METRICS:
        import difflib

        close = difflib.get_close_matches(name, KNOWN_METRICS, n=1)
        raise KeyError(
            f"unknown metric {name!r}"
            + (f" (did you mean {close[0]!r}?)" if close else "")
            + f"; known: {', '.join(KNOWN_METRICS)}"
        )


def replay(
    inputs: str | Path | list,
    strategy: str,
    *,
    settings: dict | None = None,
    template: str | Path | None = None,
    window: int | None = None,
    trigger: dict | None = None,
    estimator: str | None = None,
    lenient: bool = False,
    summarizer: dict | None = None,
    base: Path | None = None,
    out: Path,
) -> ReplayResult:
    """Replay `inputs` with `strategy` into the run directory `out`. Relative paths (inputs,
    template, a `file.py:Name` strategy) are looked up in `base` first, then as given."""
    from dataclasses import replace

    from compactlab.gate.answers import gate_summarizer
    from compactlab.gate.suite import lost_items, metric_table
    from compactlab.runs import runs
    from compactlab.runs.run_config import RunConfig, setting_from

    def local(value):
        value = str(value)
        if base is not None and not Path(value).is_absolute() and (base / value).exists():
            return str((base / value).resolve())
        return value

    names = [inputs] if isinstance(inputs, str | Path) else list(inputs)
    settings = dict(settings or {})
    if template is not None:
        settings["template"] = local(template)
    if ":" in strategy:
        file, _, attribute = strategy.rpartition(":")
        strategy = f"{local(file)}:{attribute}"
    entry = {
        "name": strategy,
        "settings": settings,
        **({"trigger": trigger} if trigger else {}),
        **({"estimator": estimator} if estimator else {}),
    }
    config = RunConfig(
        datasets=tuple(local(n) for n in names),
        strategies=(setting_from(entry, "compactlab_replay"),),
        lenient=lenient,
        window=window,  # None: as `compactlab run` (each model's real window for your own sessions)
        summarizer=dict(summarizer or {}),
    )
    if config.summarizer.get("cache_dir"):
        config = replace(config, summarizer={**config.summarizer, "cache_dir": local(config.summarizer["cache_dir"])})
    unread = _templates_no_model_reads(config.strategies[0], settings, bool(config.summarizer))
    if unread:
        pytest.exit(
            f"compactlab_replay({strategy!r}): prompt template{'s' if len(unread) > 1 else ''} {', '.join(unread)} "
            "named, but no model reads it: the summaries come from the extractive stand-in, which reads no prompt, so "
            "no assertion on this replay measures the prompt. Give the replay a model: "
            'settings={"summarizer": "llm"} and summarizer={"provider": ..., "model": ..., "cache_dir": "answers"} '
            "(recorded answers replay with no key)",
            returncode=2,
        )
    summarizer, answers = gate_summarizer(config, offline=False)  # no key: recorded answers only, as the gate
    result = runs.run(config, out, summarizer=summarizer)
    if answers is not None and answers.missing:
        pytest.exit(
            f"compactlab_replay({strategy!r}): {sum(answers.missing.values())} summaries have no recorded answer in "
            f"{answers.folder} and none could be asked for ({answers.why_not}): run the test once with the key set",
            returncode=2,
        )
    table = metric_table(out, result.sessions) if not result.sessions.empty else result.sessions
    description = (
        f"{strategy} {json.dumps(settings, default=str)} on {', '.join(map(str, names))}, window {config.window_tokens or 'real'}"
    )
    return ReplayResult(description, table, result.compactions, len(result.read.sessions), lost_items(out))


def _templates_no_model_reads(entry, settings: dict, summarizer_configured: bool) -> list[str]:
    """The templates a replay names (its `*template` settings) that no model reads in it: never
    measured, so a test asserting on the replay would pass whatever the prompt says."""
    from compactlab.strategies.prompting import prompt_templates
    from compactlab.strategies.registry import get_strategy

    named = [str(v) for k, v in settings.items() if k.endswith("template")]
    read = prompt_templates(get_strategy(entry.strategy, **dict(entry.settings)))
    return [Path(t).name for t in named if not (summarizer_configured and read.get(t, False))]


@pytest.fixture(scope="session")
def _compactlab_replays() -> dict:
    return {}


@pytest.fixture
def compactlab_replay(request, tmp_path_factory, _compactlab_replays):
    """A function that replays sessions with a strategy and returns a `ReplayResult`."""
    base = Path(request.path).parent if getattr(request, "path", None) else None

    def run(inputs, strategy: str, **options) -> ReplayResult:
        key = json.dumps([str(base), inputs, strategy, options], sort_keys=True, default=str)
        if key not in _compactlab_replays:
            _compactlab_replays[key] = replay(
                inputs, strategy, base=base, out=tmp_path_factory.mktemp("compactlab-replay"), **options
            )
        return _compactlab_replays[key]

    return run
