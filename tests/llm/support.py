"""What the LLM-layer tests share: a key that must never leak, and clients aimed at the local server."""

from __future__ import annotations

from pathlib import Path

from compactlab.contract import SummaryRequest
from compactlab.llm import AnthropicClient, OpenAIChatClient
from tests.conftest import bundled
from tests.fake_providers import FakeProvider

SECRET = "sk-test-DO-NOT-LEAK-0123456789abcdef"
KEY_ENV = "COMPACTLAB_TEST_LLM_KEY"
PROVIDERS = ("openai", "anthropic")
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}

OPEN: list = []  # clients and summarizers made by a test, closed at its end (no leaked sockets)


def client(kind: str, server: FakeProvider, **settings):
    settings = {"max_retries": 2, "timeout": 2.0, "api_key_env": KEY_ENV, **settings}
    if kind == "openai":
        made = OpenAIChatClient(settings.pop("model", MODELS[kind]), base_url=server.openai_base_url, **settings)
    else:
        made = AnthropicClient(settings.pop("model", MODELS[kind]), base_url=server.base_url, **settings)
    OPEN.append(made)
    return made


def request(
    prompt: str = "Summarize the conversation so far.",
    system: str = "You summarize agent sessions.",
    max_output_tokens: int = 256,
) -> SummaryRequest:
    return SummaryRequest(messages=(), prompt=prompt, system=system, prompt_hash="h", max_output_tokens=max_output_tokens)


def cache_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file())


# Two real bundled sessions long enough to compact at a 20,000-token window.
RUN_SESSIONS = (
    bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343"),
    bundled("claude-code-log", "-src-deep-manifest__a7da6a22"),
)


def llm_run_config(tmp_path: Path, base_url: str, extra: str = "", summarizer_extra: str = "") -> Path:
    """A run configuration of `RUN_SESSIONS` with `summarize` on the LLM summarizer at `base_url` (the
    local server) beside `truncate`; `extra`: top-level keys, `summarizer_extra`: [summarizer] keys."""
    path = tmp_path / "run.toml"
    datasets = ", ".join(f'"{p}"' for p in RUN_SESSIONS)
    path.write_text(
        f"datasets = [{datasets}]\nwindow = 20000\n{extra}\n"
        '[[strategy]]\nname = "summarize"\nlabel = "summarize-llm"\nsettings = { summarizer = "llm" }\n\n'
        '[[strategy]]\nname = "truncate"\n\n'
        f'[summarizer]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "{base_url}"\napi_key_env = "{KEY_ENV}"\n'
        f'cache_dir = "{tmp_path / "cache"}"\nmax_retries = 1\ntimeout = 5.0\n{summarizer_extra}\n'
    )
    return path
