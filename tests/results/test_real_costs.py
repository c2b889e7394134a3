"""The real cost of each production compaction beside the replay's model of it
(compactlab.results.real_costs), on the bundled pi sessions and Anthropic's documented
server-side compaction response, damaged or extended here."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from compactlab.llm.prices import cost_of, price_for
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.results.fidelity_figures import COPY, REPEAT
from compactlab.results.metrics import calls_frame, compactions_frame
from compactlab.results.real_costs import WITHIN, costs_document, real_costs
from compactlab.sessions.importers import load_file
from tests.conftest import bundled
from tests.sessions.test_compaction_usage import documented

PI = ("compact", "pi-mono-before-compaction")


def costs_of(session, strategy: str = "recorded") -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    replayed = replay(session, Setting(strategy, strategy))
    calls, compactions = calls_frame(replayed.calls), compactions_frame(replayed.compactions)
    return real_costs(calls, compactions, [session], None), calls, compactions


@pytest.mark.parametrize("stem", PI)
def test_a_pi_compaction_costs_its_next_prompt_and_no_recorded_summarizer(stem: str) -> None:
    [session] = load_file(bundled("pi-sessions", stem), lenient=True)
    frame, calls, compactions = costs_of(session)
    # Every compaction the replay made (a real one no call followed is past the last call: no row).
    assert len(frame) == len(compactions) >= 1
    for row, compaction in zip(frame.to_dict("records"), compactions.to_dict("records")):
        # pi's compaction entry records no summarizer usage, and the recorded strategy runs no summarizer.
        assert row["summarizer_real"] is None and row["summarizer_modelled"] is None
        assert row["family"] == "pi" and row["compared"] == "first call"
        # Real: the recorded prompt of the first call after it, priced without its output.
        call = session.calls[row["call"]]
        price = price_for(call.model)
        assert price is not None and call.output_tokens > 0
        assert row["first_call_real"] == pytest.approx(cost_of(call) - call.output_tokens * price.output / 1e6)
        assert (row["real_cache_read"], row["real_cache_write"], row["real_input"]) == (
            call.cache_read_tokens,
            call.cache_write_tokens,
            call.input_tokens,
        )
        # Modelled: the replay's row of that call, its prompt the one the fidelity check predicted.
        [after] = calls[calls["call"] == row["call"]].to_dict("records")
        assert row["modelled_cache_read"] + row["modelled_new"] == after["context_tokens"] == compaction["fidelity_predicted"]
        assert row["first_call_modelled"] == pytest.approx(after["cost_context"] - after["output_tokens"] * price.output / 1e6)
        assert row["relative_difference"] == pytest.approx((row["modelled"] - row["real"]) / row["real"])


def test_only_the_production_agents_compactions_have_a_real_cost() -> None:
    [session] = load_file(bundled("pi-sessions", PI[1]), lenient=True)
    frame, _, compactions = costs_of(session, "summarize")
    assert not compactions.empty and frame.empty


def test_the_summarizer_billed_in_usage_iterations_is_its_real_cost(tmp_path: Path) -> None:
    data = documented()
    # An exchange before the documented response, so that a call precedes the compaction (else it is a copy).
    data["messages"][:1] = [
        {"role": "user", "content": "Help me build a website"},
        {"role": "assistant", "content": "Which kind of website?", "usage": {"input_tokens": 12, "output_tokens": 8}},
        {"role": "user", "content": "A web scraper"},
    ]
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    [session] = load_file(path)
    frame, _, _ = costs_of(session)
    [row] = frame.to_dict("records")
    [marker] = session.compactions
    assert row["summarizer_real"] == pytest.approx(cost_of(marker.usage)) and row["summarizer_real"] > 0
    # Modelled as nothing (the recorded strategy calls no summarizer): shown apart, not compared as 0.
    assert row["summarizer_modelled"] is None and row["compared"] == "first call"
    assert row["real"] == row["first_call_real"] and row["family"] == "anthropic-messages"


def test_copies_and_repeats_are_in_no_figure() -> None:
    frames = [costs_of(s)[0] for stem in PI for s in load_file(bundled("pi-sessions", stem), lenient=True)]
    frame = pd.concat(frames, ignore_index=True)
    document = costs_document(frame)
    [pi] = document["families"].values()
    within = sum(abs(r["relative_difference"]) <= WITHIN for r in document["rows"])
    assert (pi["compactions"], pi["compared"], pi["within"], pi["summarizer_recorded"]) == (len(frame), len(frame), within, 0)
    damaged = pd.concat([frame, frame.iloc[[0]]], ignore_index=True)  # the same compaction saved in another file
    damaged.loc[1, "call"] = 0  # and one with no call before it in its file
    again = costs_document(damaged)
    assert again["rows"][-1]["left_out"].startswith(REPEAT) and again["rows"][1]["left_out"] == COPY
    assert again["families"]["pi"]["compactions"] == len(frame) - 1
