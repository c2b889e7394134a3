"""Shared test helpers: where the bundled and the shared real transcripts are."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO / "datasets"
# The real transcripts that the bundled datasets were chosen from; CI clones the repo next to it
# (a git worktree of the repo may sit one folder deeper).
SHARED = next(
    (p for p in (REPO.parent / "shared" / "transcripts", REPO.parents[1] / "shared" / "transcripts") if p.is_dir()),
    REPO.parent / "shared" / "transcripts",
)

# How the report's headline names the recommended setting (issue 33: doubt is said first).
VERDICT = r"(Use|No clear winner\. Best by the rule:|Tentatively \(too few compactions to go by\):) <strong>"


def bundled(dataset: str, stem: str) -> Path:
    """The bundled file of `dataset` whose name starts with `stem`."""
    matches = sorted((DATASETS / dataset / "transcripts").glob(f"{stem}*"))
    assert len(matches) == 1, f"expected one bundled file for {dataset}/{stem}*, found {matches}"
    return matches[0]


@pytest.fixture
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"the shared real transcripts are not at {SHARED}")
    return SHARED
