"""Fixtures of the LLM-layer tests: a clean environment, a local provider server, no leaked sockets."""

from __future__ import annotations

import pytest

from tests.fake_providers import FakeProvider, serve
from tests.llm.support import KEY_ENV, OPEN, SECRET


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Real keys or endpoints of whoever runs the tests must never be picked up (or leak).
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(KEY_ENV, SECRET)


@pytest.fixture(autouse=True)
def close_clients():
    yield
    while OPEN:
        OPEN.pop().close()


@pytest.fixture
def server() -> FakeProvider:
    with serve() as state:
        yield state
