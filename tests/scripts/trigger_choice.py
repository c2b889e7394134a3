"""Choosing the claude-code trigger's reserve per Claude Code version, leaving one repository out.

    python -m tests.scripts.trigger_choice PATH...

Claude Code compacts when its count of the context passes its window less a reserve, and the
reserve changed between versions. Every automatic compaction of the sessions named (each counted
once: a sub-agent's copy of the conversation and a compaction saved in two files are left out;
manual ones are listed apart) is a case: the Claude Code version its session records, the model,
the size Claude Code compacted from (`preTokens`), the call it compacted before, and the sizes
the preset's trigger sees before each call of the stretch (as `compactlab engines` counts them).

The table is chosen from those cases (`choose_table`): per version, the reserve (and whether
claude-opus-4-5 keeps 32,000 more, its 64,000-token output limit) under which the trigger fires
within ±2 calls of the most real compactions, nearer in calls on a tie, then nearer the documented
rule; neighbouring versions are merged while one reserve does as well on both. A version the cases
do not cover keeps the documented rule. Its honest figure is out of sample: for each repository (a
top folder of a PATH, or the source repository a dataset.toml or MANIFEST.md names), the table
chosen on the others, measured on its compactions. Printed per model family (Anthropic models;
other models run through Claude Code), beside the in-sample figure and the shipped rule's.
"""

from __future__ import annotations

import argparse
import itertools
import math
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from compactlab.contract import Trigger, VersionReserve, version_key
from compactlab.replay.setting import window_and_trigger
from compactlab.results.real_engines import NEAR_CALLS
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.model import Session
from compactlab.strategies.presets import CLAUDE_CODE_BUFFER, CLAUDE_CODE_OUTPUT, claude_code
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from tests.scripts.rule_choice import Figures, choose

COPIES = ("agent-acompact-", "agent-aside_question-")  # Claude Code's sub-agent copies of the main conversation
OPUS = "claude-opus-4-5"
OPUS_EXTRA = 64_000 - CLAUDE_CODE_OUTPUT  # what claude-opus-4-5's larger output limit adds to the reserve
DOCUMENTED = (CLAUDE_CODE_OUTPUT + CLAUDE_CODE_BUFFER, OPUS_EXTRA)  # the rule before versions: 45,000; +32,000
RESERVES = range(20_000, 90_001, 1_000)


@dataclass(frozen=True)
class Case:
    """One real automatic compaction by Claude Code."""

    repository: str
    session: str
    version: str | None
    model: str
    window: int  # Claude Code's window for the model (the preset's table)
    before_window: int  # compactlab's built-in table: the window the version-blind rule used
    real_call: int
    pre_tokens: int | None
    sizes: tuple[tuple[int, int], ...]  # (call number, the size the trigger sees before it)

    @property
    def family(self) -> str:
        return "Anthropic" if self.model.startswith("claude") else "other"

    def apart(self, threshold: float) -> float:
        """Calls from the real compaction to the first the trigger fires before (inf: never)."""
        fired = next((number for number, tokens in self.sizes if tokens >= threshold), None)
        return math.inf if fired is None else fired - self.real_call

    def under(self, rule: tuple[int, int], window: int | None = None) -> float:
        """`apart` under (reserve, what claude-opus-4-5 adds), at `window` (default Claude Code's)."""
        reserve = rule[0] + (rule[1] if self.model.startswith(OPUS) else 0)
        return self.apart((window or self.window) - reserve + 1)


def cases(sessions: Sequence[Session], repositories: dict[str, str]) -> tuple[list[Case], int]:
    """The distinct automatic compactions of `sessions` by Claude Code, and the count of manual ones."""
    preset, found, manual = claude_code(), [], 0
    seen: set[tuple[str | int | None, str | int | None]] = set()
    for session in sessions:
        calls = [(index, m.call) for index, m in enumerate(session.messages) if m.call is not None]
        if session.source_format != "claude-code" or not calls or any(c in session.source_path for c in COPIES):
            continue
        model = calls[0][1].model
        window, _ = window_and_trigger(preset, None, ContextWindows(), model, session.context_window)
        meter = Meter(session, preset.estimator)
        total = list(itertools.accumulate((meter.message_tokens(m) for m in session.messages), initial=0.0))
        start = 0
        for marker in session.compactions:
            stretch = [number for number, (index, _) in enumerate(calls) if start <= index < marker.at_message]
            start, keys = marker.at_message, {(marker.pre_tokens, marker.summary), (session.id, marker.pre_tokens)}
            if keys & seen or marker.trigger != "auto":
                manual += not keys & seen and marker.trigger == "manual"
                seen |= keys
                continue
            seen |= keys
            real_call = sum(1 for index, _ in calls if index < marker.at_message)
            checks = [(n, calls[n][0]) for n in stretch[1:]] + [(real_call, marker.at_message)] if stretch else []
            sizes = tuple(
                (n, round(calls[n - 1][1].prompt_tokens + calls[n - 1][1].output_tokens + total[i] - total[calls[n - 1][0] + 1]))
                for n, i in checks
            )
            found.append(
                Case(
                    repositories.get(session.source_path, "?"),
                    session.id,
                    session.agent_version,
                    model,
                    window,
                    ContextWindows().lookup(model, session.context_window).tokens,
                    real_call,
                    marker.pre_tokens,
                    sizes,
                )
            )
    return found, manual


def _grid(chosen: Sequence[Case]) -> dict[tuple[int, int], dict[str, list[float]]]:
    """Every candidate (reserve, opus extra) -> repository -> calls apart, in the order `choose` prefers
    among equals: no extra for claude-opus-4-5 (none unless its compactions show it), then the
    reserve nearest the documented one."""
    rules = sorted(((r, e) for r in RESERVES for e in (0, OPUS_EXTRA)), key=lambda rule: (rule[1], abs(rule[0] - DOCUMENTED[0])))
    grid: dict[tuple[int, int], dict[str, list[float]]] = {}
    for rule in rules:
        for case in chosen:
            grid.setdefault(rule, {}).setdefault(case.repository, []).append(case.under(rule))
    return grid


def _best(chosen: Sequence[Case]) -> tuple[tuple[int, int], int]:
    """The rule that does best on `chosen` (`rule_choice.choose`, ±2 calls as good) and how many it agrees with."""
    grid = _grid(chosen)
    rule = choose(grid, {c.repository for c in chosen}, good=NEAR_CALLS)
    return rule, sum(abs(e) <= NEAR_CALLS for errors in grid[rule].values() for e in errors)


@dataclass(frozen=True)
class Band:
    """Versions `first`..`last` and the rule chosen on their cases."""

    first: str
    last: str
    rule: tuple[int, int]
    cases: tuple[Case, ...]

    def entry(self) -> VersionReserve:
        reserve, extra = self.rule
        return VersionReserve(self.first, self.last, reserve, ((OPUS, reserve + extra),) if extra else ())


def choose_table(chosen: Sequence[Case]) -> list[Band]:
    """Per version, the best rule; then neighbouring versions merged while one rule agrees with as
    many of their compactions as their own rules did."""
    versions = sorted({c.version for c in chosen if c.version}, key=version_key)
    bands = [Band(v, v, _best(of)[0], of) for v in versions for of in [tuple(c for c in chosen if c.version == v)]]
    merged = True
    while merged:
        merged = False
        for i in range(len(bands) - 1):
            a, b = bands[i], bands[i + 1]
            rule, hits = _best(a.cases + b.cases)
            if hits >= _hits(a) + _hits(b):
                bands[i : i + 2] = [Band(a.first, b.last, rule, a.cases + b.cases)]
                merged = True
                break
    return bands


def _hits(band: Band) -> int:
    return sum(abs(c.under(band.rule)) <= NEAR_CALLS for c in band.cases)


def trigger_of_table(bands: Sequence[Band]) -> Trigger:
    reserve, extra = DOCUMENTED
    return Trigger(
        math.inf,
        reserve_tokens=reserve,
        reserve_by_model=((OPUS, reserve + extra),),
        reserve_by_version=tuple(b.entry() for b in bands),
    )


def apart_by(trigger: Trigger, case: Case, window: int | None = None) -> float:
    return case.apart(trigger.for_session(case.model, case.version).fires_from(window or case.window))


def figures(errors: Sequence[float]) -> str:
    f = Figures.of(errors, good=NEAR_CALLS)
    return f"{f.within:.0%} within ±{NEAR_CALLS} calls ({round(f.within * f.count)} of {f.count})" if f.count else "none"


def report(found: Sequence[Case], manual: int) -> str:
    lines = [
        f"{len(found)} distinct automatic compactions by Claude Code ({manual} manual ones listed apart)",
        "",
        "evidence per version:",
    ]
    for version, group in itertools.groupby(
        sorted(found, key=lambda c: (version_key(c.version or "0"), c.model)), key=lambda c: c.version
    ):
        of = list(group)
        pre = [c.pre_tokens for c in of if c.pre_tokens]
        models = ", ".join(sorted({c.model.removesuffix("-20251101").removesuffix("-20250929") for c in of}))
        lines.append(
            f"  {version or '?':<9} {len(of):>3} compactions, {len({c.repository for c in of})} repositories, preTokens "
            f"{min(pre, default=0):,}-{max(pre, default=0):,} (window - min: {max((c.window - (c.pre_tokens or c.window)) for c in of):,}); {models}"
        )
    table = choose_table(found)
    lines.append("\ntable chosen on every repository:")
    for band in table:
        lines.append(
            f"  {band.first}-{band.last}: reserve {band.rule[0]:,}{f', claude-opus-4-5 +{band.rule[1]:,}' if band.rule[1] else ''} ({len(band.cases)} compactions)"
        )
    chosen, shipped = trigger_of_table(table), claude_code().trigger
    before = Trigger(math.inf, reserve_tokens=DOCUMENTED[0], reserve_by_model=((OPUS, sum(DOCUMENTED)),))
    held: dict[Case, float] = {}
    for repository in sorted({c.repository for c in found}):
        others = trigger_of_table(choose_table([c for c in found if c.repository != repository]))
        held.update((c, apart_by(others, c)) for c in found if c.repository == repository)
    lines.append("\nwithin ±2 calls of the real automatic compaction:")
    for family in ("Anthropic", "other", "all"):
        of = [c for c in found if family in ("all", c.family)]
        lines.append(
            f"  {family:<9} before (version-blind, built-in windows): {figures([apart_by(before, c, c.before_window) for c in of])}; "
            f"shipped: {figures([apart_by(shipped, c) for c in of])}; in sample: {figures([apart_by(chosen, c) for c in of])}; "
            f"leave one repository out: {figures([held[c] for c in of])}"
        )
    lines.append("\nleft out of sample (the table chosen on the other repositories missed):")
    lines.extend(missed(found, held))
    return "\n".join(lines)


def missed(found: Sequence[Case], held: dict[Case, float]) -> list[str]:
    """A line for each case the rule chosen without its repository missed (more than ±2 calls apart)."""
    return [
        f"  {c.repository[:30]:<31} {c.session[:24]:<25} {c.version} {c.model[:22]:<23} preTokens {c.pre_tokens or 0:>8,} apart {held[c]:+}"
        for c in found
        if abs(held[c]) > NEAR_CALLS
    ]


def repositories_of(paths: Sequence[str], sessions: Sequence[Session]) -> dict[str, str]:
    """Each session file's repository: the source a dataset.toml or a MANIFEST.md above it names,
    else the top folder under the PATH it was found in."""
    found: dict[str, str] = {}
    roots = [Path(p).resolve() for p in paths]
    for session in sessions:
        path = Path(session.source_path).resolve()
        found[session.source_path] = _named_source(path) or next(
            (path.relative_to(root).parts[0] for root in roots if root in path.parents and len(path.relative_to(root).parts) > 1),
            str(path.parent),
        )
    return found


def _named_source(path: Path) -> str | None:
    for folder in path.parents:
        if (folder / "dataset.toml").is_file():
            return tomllib.loads((folder / "dataset.toml").read_text(encoding="utf-8")).get("source")
        if (folder / "MANIFEST.md").is_file():
            name = path.relative_to(folder).as_posix()
            for line in (folder / "MANIFEST.md").read_text(encoding="utf-8").splitlines():
                cells = [cell.strip() for cell in line.split("|")]
                if len(cells) > 2 and cells[1] == name:
                    return cells[2].split(" ")[0]
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.trigger_choice", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="folders or files of Claude Code sessions")
    args = parser.parse_args(argv)
    sessions = list(load_inputs(args.inputs, lenient=True).sessions)
    print(report(*cases(sessions, repositories_of(args.inputs, sessions))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
