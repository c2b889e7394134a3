"""The size of a replayed prompt: one definition for every number a run reports.

A replay knows the provider's count only for the prompts the source really sent: the whole history
(until the production agent compacted). A strategy's compacted prompt was never sent, so its size is
measured, and everything uses that one measure: the rows' `context_tokens`, the over-window count,
the emergency compaction of a prompt over the window, a compaction's `tokens_before`/`tokens_after`,
the hybrid trigger's last count, the cost model, the metrics and the report.

The measure. At each recorded call the run's estimator has counted the history before it
(`estimated`, the messages only) and the provider has counted the same history (`recorded`); a
`fixed` part, the estimator's per-prompt framing and the per-session constant for what the file does
not hold (system prompt, tool definitions), is already in provider tokens. Their ratio

    ratio = (recorded - fixed) / estimated

is what one estimated token of this session's messages costs in provider tokens at this call. A
context is then `fixed + estimate of its messages × ratio`:
- nothing removed: the estimate is the history's, and the size is the recorded count exactly;
- the estimator's error is not carried over from what was removed (the old rule, recorded minus the
  estimate of the removed part, put the whole error on the kept part: sizes grew with the session);
- its error is only how far the kept messages' density differs from the session's average.
`python -m tests.scripts.prompt_size_check` measures that error on real sessions (sizes of prompts that
keep the newest messages, whose true size the recorded counts give) and the drift of the
uncompacted size after a production compaction (below); docs/metrics.md states the figures.

A summary is new text, not history: its size is the model family's fit applied to its own text
(`Meter.written`), added to the fixed part, and the ratio applies to the rest of the context:

    size = fixed + summaries' tokens + (estimate of the messages - summaries' estimate) × ratio

The ratio also carries what the history's text does not show (the framing of each tool call and
result, reminders and images the file lacks), which a summary does not share. On the two bundled
real compactions the first prompt after the compaction (or Claude Code's /context reading) is then
predicted at −2.7% and +0.8%, against −4.0% and +5.5% with the summary sized at the ratio
(`python -m tests.scripts.real_compactions`). With no fit for the model family the summary is
sized at the ratio, as history is.

A Codex remote compaction's summary is its replacement history, part of it encrypted
(`CompactionMarker.summary_tokens`): the prompt after it is a fresh one, sized as the session's first
call was measured (what precedes the summary and its text at their estimate, plus Codex's estimate
of the encrypted item; `Meter.written`). On the 30 distinct measurable compactions of 26 Codex
0.142-0.146 rollouts the first prompt after each is then predicted within 3,000 tokens at all 30,
within ±5% at 27 (median |error| 354 tokens; at the ratio with the encrypted item: median 3,106;
before: -5% to +161%, median 7,484), in sample and leave one session out alike
(`python -m tests.scripts.codex_fidelity PATH`).

After the production agent compacted, the recorded counts describe its compacted prompts, not the
history: the history's size (`full_tokens`) is then its estimate with the last ratio measured
before that compaction.

What a trigger sees is a separate question (`compactlab.replay.walk`): an agent decides before its call, so
the hybrid trigger adds the estimate of the new messages to the last prompt's measured size (as a
real agent adds them to the provider's last count); an estimator without usage counts on its own,
as the agent it models does, and its error is then the agent's.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from compactlab.tokens.metering import NOTHING_WRITTEN, Written

# The kernel below is the only place these sizes are computed. The uncompacted replay and the walk
# call it on one call's numbers (floats), the coasting fast path on a stretch of calls at once
# (arrays): the same additions in the same order, rounded half to even both ways (`round` and
# `np.rint`), so the two agree to the token (tests/replay/test_fast_path_equals_plain.py).
Number = TypeVar("Number", float, np.ndarray)


def _whole(value):
    """`value` rounded to whole tokens: an int for one call, an array of whole floats for many."""
    return np.rint(value) if isinstance(value, np.ndarray) else round(value)


def measured_ratio(recorded: int, fixed: float, estimated: float) -> float:
    """Provider tokens per estimated token of a session's messages at one call (1 when either side
    is empty: a first call with nothing before it, or a constant that takes the whole count)."""
    if estimated > 0 and recorded > fixed:
        return (recorded - fixed) / estimated
    return 1.0


def measured_size(fixed: float, estimated: Number, ratio: Number, written: Written = NOTHING_WRITTEN):
    """The measured size of a prompt whose messages are estimated at `estimated`, `written` of it
    summaries (their estimate is in `estimated`; with none, `fixed + estimated × ratio` exactly).
    Over arrays (`estimated`, `ratio`: one entry per call), each call's."""
    return _whole(fixed + written.tokens + (estimated - written.estimate) * ratio)


def own_estimate(estimated: Number, prompt_overhead: float, offset: float):
    """What an estimator without usage counts before a call, as the agent it models would: the
    estimate of the context's messages, the per-prompt framing and the per-session constant."""
    return _whole(estimated + prompt_overhead + offset)


def hybrid_tokens(anchor: Number, history_before: Number, history_covered: Number):
    """The hybrid estimator's count before a call: the last prompt's size (with its output, as the
    harness anchors it: `anchor`) plus the estimate of the messages since, the difference of the
    running sums of the messages' estimates before the call (`history_before`) and before the first
    message the anchor does not cover (`history_covered`)."""
    return _whole(anchor + history_before - history_covered)
