"""Precision of the needed-item extractor on the committed hand-labelled sample (docs/needed-items-labelling.md)."""

from __future__ import annotations

from pathlib import Path

from compactlab.measure.needed_items_sample import SAMPLE as DEFAULT_SAMPLE
from compactlab.measure.needed_sample import LABELS, SOURCES, needed_now, read_sample, scores, unlabelled

SAMPLE = Path(__file__).parents[1] / "data" / "needed_items_sample.jsonl"


def test_the_sample_covers_every_shared_source_and_is_labelled() -> None:
    steps = read_sample(SAMPLE)
    assert {s.source for s in steps} == set(SOURCES)
    labels = [i["label"] for s in steps for i in s.items]
    assert len(labels) >= 300 and set(labels) <= set(LABELS)


def test_every_item_the_extractor_needs_in_the_sample_is_labelled(shared: Path) -> None:
    steps = read_sample(SAMPLE)
    missing = unlabelled(steps, needed_now(steps, shared))
    listing = "\n".join(f"  {s.transcript} step {s.step}: {i.kind} {i.text!r}" for s, i in missing)
    assert not missing, (
        f"label these by docs/needed-items-labelling.md (bench/measure/needed_items_sample.py refresh):\n{listing}"
    )


def test_precision_is_at_least_90_percent_per_source(shared: Path) -> None:
    steps = read_sample(SAMPLE)
    per_source = scores(steps, needed_now(steps, shared))
    assert set(per_source) == set(SOURCES)
    low = {s: f"{v.precision:.1%} of {v.labelled}" for s, v in per_source.items() if v.precision is None or v.precision < 0.9}
    assert not low, f"precision below 90%: {low}"
    assert all(v.labelled >= 30 for v in per_source.values())  # each source's figure rests on enough items


def test_the_scoring_command_reads_the_committed_sample_by_default() -> None:
    # Its default path pointed into bench/ after the module moved to bench/measure/: the README's
    # `python -m compactlab.measure.needed_items_sample score` failed with a traceback.
    assert DEFAULT_SAMPLE.resolve() == SAMPLE.resolve() and read_sample(DEFAULT_SAMPLE)
