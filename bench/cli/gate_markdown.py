"""The markdown summary of `compactlab check` (for a CI job page or a pull-request comment) and
its JSON form (`--json`): the verdict, what the check could and could not detect, what changed
since the baseline, every comparison and the sessions that flipped with the facts they lost."""

from __future__ import annotations

import html
import math
import re

from compactlab.gate.compare import MAX_FLIPS_SHOWN, Comparison, Report, fell_to_zero, fmt
from compactlab.gate.suite import MetricSpec
from compactlab.results.catalogue import label as metric_label
from compactlab.sessions.neutralise import terminal_text

MAX_FACTS_SHOWN = 12  # per session, in the markdown

# --- text from files and sessions, made inert ---------------------------------------------------------
# Labels, setting values, template and model names come from the suite (a pull request's file), session
# ids and lost facts from the sessions: the markdown is posted as a comment and printed to a terminal, so
# none of it may be markup there. Control characters are written visibly, as on the terminal
# (`terminal_text`); HTML's < > & as entities, as the report's templates do; what Markdown reads as markup
# (emphasis, links, code, table cells) escaped. Newlines and tabs become entities: a line of a value must not
# start a heading or a list.

_CODE_SAFE = re.compile(r"[^`|<>&\n\t]+")  # a value shown as `value` as is: nothing in it ends or breaks a code span
_CODE_MARKUP = {c: f"&#{ord(c)};" for c in "`|*_[]~\\\n\t"}
_TEXT_MARKUP = re.compile(r"[\\`*\[\]|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")  # an intraword _ is no emphasis
_SPAN = re.compile(r"`([^`\n]*)`")


def code(value: object) -> str:
    """`value` as inline code: in backticks when nothing in it is markup, else as <code> with entities
    (safe in a paragraph, a table cell and in HTML such as <summary>, where backticks are no code)."""
    text = terminal_text(str(value))
    if _CODE_SAFE.fullmatch(text) and text.strip() == text:
        return f"`{text}`"
    return "<code>" + "".join(_CODE_MARKUP.get(c, c) for c in html.escape(text, quote=False)) + "</code>"


def text(value: object) -> str:
    """`value` as plain markdown text: no HTML, emphasis, link or table cell can start in it."""
    escaped = html.escape(terminal_text(str(value)), quote=False).replace("\n", "&#10;").replace("\t", "&#9;")
    return _TEXT_MARKUP.sub(lambda m: "\\" + m.group(), escaped)


def line(sentence: str) -> str:
    """A sentence of the gate (its values quoted in backticks) as markdown: each quoted part through
    `code`, the rest through `text`, so a value that holds a backtick of its own is still inert."""
    parts, start = [], 0
    for found in _SPAN.finditer(sentence):
        parts += [text(sentence[start : found.start()]), code(found.group(1)) if found.group(1) else "``"]
        start = found.end()
    return "".join([*parts, text(sentence[start:])])


# --- the markdown summary -----------------------------------------------------------------------------

VERDICT = {
    "regression": "❌ regression",
    "no values": "❌ no values left",
    "worse": "worse, within tolerance",
    "better": "better, within tolerance",
    "improved": "✅ improved",
    "ok": "ok (no clear change)",
    "unchanged": "unchanged",
    "n/a": "n/a",
}


def markdown(report: Report, confidence: float, summarizer: list[str] | tuple[str, ...] = ()) -> str:
    """The summary for a CI job page or a pull-request comment (GitHub-flavoured markdown);
    `summarizer`: how what wrote the summaries differs from the baseline's, said before anything else."""
    failed = report.regressions
    pct = f"{confidence:.0%}"
    verdict = f"❌ {len(failed)} regression{'s' if len(failed) != 1 else ''}" if failed else "✅ no regression"
    if report.unmeasured:  # never a pass: what changed was not measured
        verdict = "⛔ not measured: no result" + (f" (and {verdict[2:]} in what was measured)" if failed else "")
    lines = ["## compactlab check: " + verdict, ""]
    if summarizer:
        lines += ["**The summarizer differs from the baseline's**", ""] + [f"- {line(s)}" for s in summarizer] + [""]
    if report.unmeasured:
        lines += [
            f"- **{line(s)}**" if i < len(report.unmeasured) - 1 else f"- {line(s)}" for i, s in enumerate(report.unmeasured)
        ]
        lines.append("")
    if not report.comparisons:  # nothing was compared (see `unmeasured`)
        return "\n".join(lines + ["**What this check can detect**", ""] + [f"- {line(s)}" for s in report.scope]) + "\n"
    within = [c for c in report.comparisons if c.verdict == "worse"]
    if (within or report.cannot_tell) and not failed and not report.unmeasured:  # no green pass: it cannot tell
        lines[0] = "## compactlab check: ⚠️ no regression it can tell: " + (
            f"{len(within)} metric{'s' if len(within) != 1 else ''} worse" if within else "a prompt change no figure saw"
        )
    lines += [f"- **{line(s)}**" for s in report.cannot_tell]
    for c in failed:
        lines.append(
            f"- **{code(c.label)} · {metric_name(c.metric)}**: {_change(c)}"
            + (f" (tolerance {_tolerance(c.metric)})" if c.n else ": no values in this run")
            + (": fell to 0, a regression whatever the tolerance" if c.n and fell_to_zero(c.metric, c.baseline, c.new) else "")
        )
    for c in within:
        lines.append(
            f"- {code(c.label)} · {metric_name(c.metric)}: {_change(c)}: worse, but not beyond its tolerance "
            f"({_tolerance(c.metric)}) by more than this suite can tell from noise"
        )
    if failed or within or report.cannot_tell:
        lines.append("")
    if report.power:
        lines += ["**What this suite detects**", ""] + [f"- {line(s)}" for s in report.power] + [""]
    lines.append(
        f"Suite {code(report.suite)} against baseline {code(report.baseline)}, {report.sessions} sessions. A metric regresses "
        f"when the {pct} paired-bootstrap interval of its change (new − baseline over the same sessions) lies entirely "
        "on the worse side of its tolerance, so noise alone does not fail the check. For a metric measured per compaction "
        "the interval is two-level (sessions resampled, then each one's compactions), and a second one, within sessions "
        "(the sessions held, their compactions resampled), also fails it: a change confined to a few long sessions "
        "counts when it is consistent at their compactions."
    )
    if report.scope:
        lines += ["", "**What this check can detect**", ""] + [f"- {line(s)}" for s in report.scope]
    if report.notes:
        lines += ["", "**Changed since the baseline**", ""] + [f"- {line(note)}" for note in report.notes]
    for label in dict.fromkeys(c.label for c in report.comparisons):
        lines += [
            "",
            f"### {code(label)}",
            "",
            f"| metric | better | tolerance | baseline | new | change [{pct} CI] | n | verdict |",
        ]
        lines.append("|---|---|---|---|---|---|---|---|")
        for c in (c for c in report.comparisons if c.label == label):
            verdict = f"**{VERDICT[c.verdict]}**" if c in failed else VERDICT[c.verdict]
            lines.append(
                f"| {metric_name(c.metric)} | {c.metric.direction} | {_tolerance(c.metric)} | {fmt(c.baseline)} | {fmt(c.new)} | {_change(c)} | {c.n} | {verdict} |"
            )
    lines += ["", "### Sessions that flipped", "", "Sessions whose value moved by more than the tolerance, worst first."]
    flipped = [c for c in report.comparisons if c.flips or c.missing]
    if not flipped:
        lines += ["", "None."]
    for c in sorted(flipped, key=lambda c: c not in failed):  # stable: regressions first, then suite order
        worse = sum(f.worse for f in c.flips)
        head = f"{code(c.label)} · {metric_name(c.metric)}: {worse} worse, {len(c.flips) - worse} better" + (
            f", {c.missing} lost their value" if c.missing else ""
        )
        table = ["| session | baseline | new | change |", "|---|---|---|---|"] if c.flips else []
        for f in c.flips[:MAX_FLIPS_SHOWN]:
            table.append(
                f"| {code(f.session)} | {fmt(f.baseline)} | {fmt(f.new)} | {f.new - f.baseline:+.4g} ({'worse' if f.worse else 'better'}) |"
            )
        if len(c.flips) > MAX_FLIPS_SHOWN:
            table.append(f"| … and {len(c.flips) - MAX_FLIPS_SHOWN} more | | | |")
        if c.lost_facts:
            table += ["", "Facts lost at its compactions that the baseline kept:", ""]
            table += [f"- {code(session)}: {_facts(items)}" for session, items in c.lost_facts[:MAX_FLIPS_SHOWN]]
        if c in failed:
            lines += ["", f"**{head}**", "", *table]
        else:  # folded: not what failed the check
            lines += ["", f"<details><summary>{head}</summary>", "", *table, "", "</details>"]
    return "\n".join(lines) + "\n"


def metric_name(spec: MetricSpec) -> str:
    """The metric under its catalogue label, with the column name a suite uses."""
    return f"{metric_label(spec.name)} (`{spec.name}`)"


def _change(c: Comparison) -> str:
    if c.n == 0:
        return "–"
    text = f"{c.change:+.4g} [{c.low:+.4g}, {c.high:+.4g}]"
    if math.isnan(c.within_low):
        return text
    return f"{text}, within sessions [{c.within_low:+.4g}, {c.within_high:+.4g}] ({c.compactions} compactions)"


def _facts(items: tuple[str, ...]) -> str:
    shown = ", ".join(code(item) for item in items[:MAX_FACTS_SHOWN])
    return shown + (f" … and {len(items) - MAX_FACTS_SHOWN} more" if len(items) > MAX_FACTS_SHOWN else "")


def _tolerance(metric: MetricSpec) -> str:
    text = f"{metric.tolerance:g}" + (" (relative)" if metric.relative else "")
    if metric.relative_tolerance is not None:
        text += f" and {metric.relative_tolerance:.0%} of the baseline"
    return text


def report_json(report: Report, summarizer: list[str] | tuple[str, ...] = ()) -> dict:
    """The check as a script reads it: the verdict, the regressions, every comparison and the summarizer's changes."""

    def number(value: float) -> float | None:
        return None if value is None or value != value else float(value)

    rows = [
        {
            "label": c.label,
            "metric": c.metric.name,
            "direction": c.metric.direction,
            "tolerance": c.metric.tolerance,
            "relative": c.metric.relative,
            "relative_tolerance": c.metric.relative_tolerance,
            "baseline": number(c.baseline),
            "new": number(c.new),
            "change": number(c.change),
            "low": number(c.low),
            "high": number(c.high),
            "n": c.n,
            "verdict": c.verdict,
            "missing": c.missing,
            "flips": [{"session": f.session, "baseline": f.baseline, "new": f.new, "worse": f.worse} for f in c.flips],
        }
        for c in report.comparisons
    ]
    failed = report.regressions
    return {
        "verdict": "not measured"
        if report.unmeasured
        else "regression"
        if failed
        else "cannot tell"
        if report.cannot_tell
        else "pass",
        "unmeasured": report.unmeasured,
        "suite": report.suite,
        "baseline": report.baseline,
        "sessions": report.sessions,
        "regressions": [r for r, c in zip(rows, report.comparisons) if c in failed],
        "comparisons": rows,
        "notes": report.notes,
        "summarizer_changes": list(summarizer),
        "power": report.power,
        "cannot_tell": report.cannot_tell,
    }
