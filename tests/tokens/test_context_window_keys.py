"""Context-window overrides: provider-prefixed and bare keys both apply; a key that matches no model is an error."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from compactlab.cli.main import main
from compactlab.runs.run_config import RunConfig, windows_of
from compactlab.sessions.importers import load_file
from compactlab.sessions.model import Session
from compactlab.tokens.estimation import run_estimation
from tests.conftest import bundled

MINI_PATH = bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343")
[MINI] = load_file(MINI_PATH)


def as_model(session: Session, model: str) -> Session:
    """The real session with every call attributed to `model` (the bundled data has no Gemini session)."""
    messages = tuple(m if m.call is None else replace(m, call=replace(m.call, model=model)) for m in session.messages)
    return replace(session, messages=messages, models=(model,))


@pytest.mark.parametrize(
    "key", ["google/gemini-3-pro-preview", "gemini-3-pro-preview", "gemini-3", "GOOGLE/Gemini-3-Pro-Preview"]
)
@pytest.mark.parametrize("model", ["google/gemini-3-pro-preview", "gemini-3-pro-preview"])
def test_prefixed_and_bare_keys_apply_to_prefixed_and_bare_models(key: str, model: str) -> None:
    from compactlab.tokens.context_windows import ContextWindows

    windows = ContextWindows(overrides={key: 64_000})
    calls = run_estimation([as_model(MINI, model)], ["hybrid"], windows).calls
    assert set(calls["window"]) == {64_000}
    # Without the override the table's Gemini 3 window applies.
    assert set(run_estimation([as_model(MINI, model)], ["hybrid"]).calls["window"]) == {1_048_576}


def test_a_key_matching_no_model_is_an_error_listing_the_models(capsys) -> None:
    code = main(["estimate", str(MINI_PATH), "--estimators", "hybrid", "--context-window", "google/gemini-3-pro-preview=64000"])
    error = capsys.readouterr().err
    assert code == 2
    assert "'google/gemini-3-pro-preview' matches no model" in error and "models seen: deepseek-reasoner" in error


def test_run_applies_a_models_own_window_over_the_simulated_one() -> None:
    windows = windows_of(RunConfig(window=64_000, context_windows={"openrouter/deepseek-reasoner": 32_000}))
    assert windows.lookup("deepseek-reasoner").tokens == 32_000
    assert windows.lookup("claude-opus-4-5").tokens == 64_000


def test_run_refuses_an_override_that_matches_no_model(tmp_path: Path, capsys) -> None:
    code = main(
        [
            "run",
            "--dataset",
            str(MINI_PATH),
            "--strategy",
            "truncate",
            "--out",
            str(tmp_path / "run"),
            "--context-window",
            "google/gemini-3-pro-preview=64000",
        ]
    )
    assert code == 2
    assert "models seen: deepseek-reasoner" in capsys.readouterr().err
