"""Recorded answers: a suite's LLM summaries kept beside it, so CI replays them with no key.

The answers are the LLM call cache (`compactlab.llm.cache`) in a folder relative to the
suite: `[summarizer] cache_dir`, by default `<suite file stem>-answers/`. One JSON file per request,
`<key[:2]>/<key>.json`, where the key is the sha256 of the full request (provider, model, system
prompt, prompt and parameters); the file holds the answer's text, stop reason and usage, never the
prompt. `compactlab baseline` run with a provider writes every request → answer it made there.

How a `check` (or `baseline`) gets its summaries:
- a provider whose key is set (or a `base_url`): recorded answers are replayed, a request that is
  not recorded is sent and its answer recorded;
- `--offline`, provider "recorded", or no key in the environment: recorded answers only. A
  request that is not recorded is counted (by the prompt template that wrote it) and fails as an
  unanswered summary would (the strategy's fallback), so the run goes on and every missing answer
  is counted; the command then exits 2 (`compactlab.gate.measured`), never compares.

Answers the run did not use are counted, so the folder can be pruned.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from compactlab.contract import CompactionFailed, SummaryRequest, SummaryResponse
from compactlab.gate.fields import MAX_DEPTH, Fields, SuiteError, check_depth
from compactlab.llm import CacheMiss, RecordedSummarizer
from compactlab.llm.cache import FORMAT as CACHE_FORMAT
from compactlab.runs.llm_config import make_run_summarizer
from compactlab.runs.run_config import RunConfig

KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}  # what the SDK clients read by default


@dataclass
class Answers:
    """Where a run's summaries came from: the answers folder, whether unrecorded requests could be
    sent (and why not), the requests with no recorded answer (by prompt hash) and the keys used."""

    folder: Path
    model: str  # "provider:model" as the suite configures it
    sends: bool
    why_not: str = ""  # when not sending: "--offline", "no key in OPENAI_API_KEY", ...
    missing: Counter[str] = field(default_factory=Counter)
    used: set[str] = field(default_factory=set)

    def unused(self) -> list[Path]:
        """Answer files in the folder that this run did not read or write."""
        if not self.folder.is_dir():
            return []
        return sorted(
            path for path in self.folder.glob("??/*.json") if path.parent.name == path.stem[:2] and path.stem not in self.used
        )


class CountingRecordedSummarizer(RecordedSummarizer):
    """Recorded answers only; a request without one is counted and fails as a summary (so the
    strategy falls back and the run goes on) instead of stopping the run at the first."""

    def __init__(self, *args, missing: Counter[str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.missing = missing
        self._count_lock = threading.Lock()

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        try:
            return super().summarize(request)
        except CacheMiss:
            with self._count_lock:
                self.missing[request.prompt_hash] += 1
            raise CompactionFailed(f"{self.name}: no recorded answer for this summary request") from None


def check_answers(folder: Path) -> int:
    """Every recorded answer in `folder` checked field by field, before the run reads any (`SuiteError`
    naming the file and the key path of the first bad one); the number of answers."""
    paths = sorted(folder.glob("??/*.json")) if folder.is_dir() else []
    for path in paths:
        f = Fields(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SuiteError(f"{path}: not a readable recorded answer ({exc}); delete it to record it again") from exc
        except RecursionError:
            raise SuiteError(f"{path}: lists or tables nested deeper than {MAX_DEPTH} levels: not a recorded answer") from None
        top = f.table(data, "the file")
        check_depth(top, path)
        f.keys(top, "", ("format", "key", "provider", "model", "response"), tuple(set(top) - {"response"}))
        if top["format"] != CACHE_FORMAT:
            raise f.fail("format", str(CACHE_FORMAT), top["format"])
        if top["key"] != path.stem:
            raise f.fail("key", f"the file's name, {path.stem!r}", top["key"])
        f.text(top["provider"], "provider")
        f.text(top["model"], "model")
        f.table(top.get("params", {}), "params")
        response = f.table(top["response"], "response")
        f.keys(response, "response", ("text", "usage"), tuple(set(response) - {"usage"}))
        f.text(response["text"], "response.text")
        f.text(response.get("stop_reason"), "response.stop_reason", optional=True)
        usage = f.table(response["usage"], "response.usage")
        f.keys(usage, "response.usage", ("model", *TOKEN_FIELDS), tuple(set(usage)))
        f.text(usage["model"], "response.usage.model")
        for name in TOKEN_FIELDS:
            f.whole(usage[name], f"response.usage.{name}")
        f.text(usage.get("request_id"), "response.usage.request_id", optional=True)
    return len(paths)


TOKEN_FIELDS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")


def gate_summarizer(config: RunConfig, offline: bool):
    """The summarizer a gate run uses and its `Answers`; (None, None) without a `[summarizer]`.
    The recorded answers are checked first (`check_answers`)."""
    settings = dict(config.summarizer)
    if not settings:
        return None, None
    if isinstance(settings.get("cache_dir"), str):
        check_answers(Path(settings["cache_dir"]))
    provider, model = str(settings.get("provider")), str(settings.get("model"))
    why_not = _why_not_sending(settings, offline)
    if not why_not:
        summarizer = make_run_summarizer(config)
        cache = summarizer.cache
        if cache is None:
            raise ValueError("[summarizer] cache_dir is needed: the recorded answers live there")
        return summarizer, Answers(cache.directory, f"{provider}:{model}", True, used=cache.used)
    # The table's keys checked as for any run (offline: no client, so no key is needed).
    make_run_summarizer(replace(config, summarizer={**settings, "mode": "offline"}))
    if not settings.get("cache_dir"):
        raise ValueError("[summarizer] cache_dir is needed: the recorded answers live there")
    recorded = settings.get("recorded_provider") if provider == "recorded" else provider
    answers = Answers(Path(str(settings["cache_dir"])), f"{provider}:{model}", False, why_not)
    summarizer = CountingRecordedSummarizer(
        recorded,
        model,
        answers.folder,
        prices=config.prices or None,
        temperature=settings.get("temperature"),
        missing=answers.missing,
    )
    assert summarizer.cache is not None
    answers.used = summarizer.cache.used
    return summarizer, answers


def _why_not_sending(settings: dict, offline: bool) -> str:
    """Why unrecorded requests cannot be sent ('' when they can)."""
    provider = settings.get("provider")
    if offline:
        return "--offline"
    if provider == "recorded" or settings.get("mode") == "offline":
        return f"[summarizer] {'provider = recorded' if provider == 'recorded' else 'mode = offline'}"
    variable = settings.get("api_key_env") or KEY_VARIABLES.get(str(provider), "")
    if not settings.get("base_url") and not os.environ.get(variable, "").strip():
        return f"no key in {variable}"
    return ""
