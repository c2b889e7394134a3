"""A content-addressed on-disk cache of LLM calls, so replays are repeatable and CI needs no key.

The key is the sha256 of the canonical JSON of everything that determines the answer: provider,
model, the full request (system prompt and prompt) and the sampling parameters (max_tokens,
temperature, ...). Parameters that are None are left out, so a new optional setting does not
invalidate every recording. The server's address is not part of the key: a recording made against
one OpenAI-compatible server answers for the same model name on another, and a cache committed
next to a suite does not depend on where it was recorded.

Each entry is one JSON file `<dir>/<key[:2]>/<key>.json` holding the response text and usage, not
the request (prompts are large; the key already identifies them). Files are deterministic (sorted
keys, no timestamps) so they diff and commit cleanly. The cost is not stored: it is computed from
the price table when read, so a price correction applies to old recordings too.

Modes: "use" reads, calls on a miss and records; "offline" only reads and raises `CacheMiss` on a
miss; "refresh" always calls and overwrites. A failed call raises and nothing is written; an empty
answer, or one cut off at its output budget (`Completion.cut_off`), is a failed call, never recorded
(one recorded by an older version, or written by hand into a suite's answers, counts as missing).
A recorded file bigger than its answer can be (`compactlab.llm.attempts.answer_bytes` of the
request's max_tokens) is damaged, and is not read.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from compactlab.llm.attempts import answer_bytes
from compactlab.sessions.model import LLMCall

Mode = Literal["use", "offline", "refresh"]
MODES: tuple[str, ...] = ("use", "offline", "refresh")
FORMAT = 1  # bump when the key recipe or the file layout changes


# Stop reasons of an answer cut off at its output budget: OpenAI's (and compatible servers')
# finish_reason, Anthropic's stop_reason (and its stop at the context window's end).
CUT_OFF_STOPS = frozenset({"length", "max_tokens", "model_context_window_exceeded"})


@dataclass(frozen=True)
class Completion:
    """One LLM answer: its text and usage as the provider reported it."""

    text: str
    usage: LLMCall
    stop_reason: str | None = None

    @property
    def cut_off(self) -> bool:
        """The model stopped at its output budget, not where it meant to: a failed call, never recorded."""
        return self.stop_reason in CUT_OFF_STOPS

    def cut_off_reason(self, max_tokens: object) -> str:
        return f"the answer was cut off at its output budget of {max_tokens} tokens (stop reason {self.stop_reason!r})"


@dataclass(frozen=True)
class CacheRequest:
    """Everything that determines an LLM answer, and so its cache key."""

    provider: str
    model: str
    system: str
    prompt: str
    params: Mapping[str, object] = field(default_factory=dict)

    def canonical(self) -> bytes:
        document = {
            "format": FORMAT,
            "provider": self.provider,
            "model": self.model,
            "request": {"system": self.system, "prompt": self.prompt},
            "params": {k: v for k, v in self.params.items() if v is not None},
        }
        return canonical_json(document).encode("utf-8")

    def key(self) -> str:
        return hashlib.sha256(self.canonical()).hexdigest()


def canonical_json(value: object) -> str:
    """One spelling per value: sorted keys, no whitespace, real Unicode, no NaN."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class CacheError(RuntimeError):
    """A cache file that exists but cannot be used (damaged, or for another key)."""


class CacheMiss(LookupError):
    """An offline run asked for a call that was never recorded."""

    def __init__(self, request: CacheRequest, key: str, directory: Path, detail: str = "") -> None:
        self.key, self.provider, self.model, self.directory = key, request.provider, request.model, directory
        reason = f" ({detail})" if detail else ""
        super().__init__(
            f"no recorded LLM response for provider {request.provider!r}, model {request.model!r} "
            f"(cache key {key}){reason} in cache dir {directory}. This run is offline: it only reads "
            f"recorded responses. To record this one, run once without --offline (cache mode 'use') "
            f"with the provider's API key set; the response is then stored as "
            f"{directory / key[:2] / f'{key}.json'}. The key covers provider, model, system prompt, "
            f"prompt and parameters (max_tokens, temperature), so changing any of them needs a new recording."
        )


class LLMCache:
    """The cache directory plus its mode. Safe to share between threads."""

    def __init__(self, directory: str | os.PathLike[str], mode: Mode = "use") -> None:
        if mode not in MODES:
            raise ValueError(f"cache mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.directory = Path(directory)
        self.mode: Mode = mode
        self.hits = 0
        self.misses = 0  # calls made because nothing usable was recorded (or mode is refresh)
        self.used: set[str] = set()  # keys answered (replayed or recorded): the rest of the folder is unused
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}

    def path_for(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str, max_bytes: int | None = None) -> Completion | None:
        """The recorded completion, None when there is none; CacheError when the file is damaged or
        bigger than `max_bytes` (then it is not read)."""
        path = self.path_for(key)
        try:
            with path.open("rb") as handle:
                # One byte more than allowed tells a file too big from one that fits, whatever its size.
                data = handle.read(max_bytes + 1 if max_bytes is not None else -1)
        except FileNotFoundError:
            return None
        if max_bytes is not None and len(data) > max_bytes:
            raise CacheError(
                f"cache file {path} is larger than {max_bytes:,} bytes, more than an answer of its max_tokens can "
                "take; delete it or run in 'refresh' mode"
            )
        try:
            raw = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CacheError(f"cache file {path} is damaged ({exc}); delete it or run in 'refresh' mode") from exc
        try:
            data = json.loads(raw)
            if data.get("format") != FORMAT or data.get("key") != key:
                raise ValueError(f"format {data.get('format')!r} / key {data.get('key')!r} do not match")
            response, usage = data["response"], data["response"]["usage"]
            return Completion(
                text=response["text"],
                stop_reason=response.get("stop_reason"),
                usage=LLMCall(
                    model=usage["model"],
                    input_tokens=usage["input_tokens"],
                    cache_read_tokens=usage["cache_read_tokens"],
                    cache_write_tokens=usage["cache_write_tokens"],
                    output_tokens=usage["output_tokens"],
                    request_id=usage.get("request_id"),
                ),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CacheError(f"cache file {path} is damaged ({exc}); delete it or run in 'refresh' mode") from exc

    def put(self, request: CacheRequest, completion: Completion) -> Path:
        """Record a completion atomically: a reader sees the old file or the new one, never half."""
        if not completion.text.strip():
            raise ValueError("an empty answer is a failed call: it is never recorded")
        if completion.cut_off:
            raise ValueError(f"{completion.cut_off_reason(request.params.get('max_tokens'))}: a failed call, never recorded")
        key = request.key()
        usage = completion.usage
        document = {
            "format": FORMAT,
            "key": key,
            "provider": request.provider,
            "model": request.model,
            "params": {k: v for k, v in request.params.items() if v is not None},
            "response": {
                "text": completion.text,
                "stop_reason": completion.stop_reason,
                "usage": {
                    "model": usage.model,
                    "input_tokens": usage.input_tokens,
                    "cache_read_tokens": usage.cache_read_tokens,
                    "cache_write_tokens": usage.cache_write_tokens,
                    "output_tokens": usage.output_tokens,
                    "request_id": usage.request_id,
                },
            },
        }
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(document, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def fetch(self, request: CacheRequest, call: Callable[[], Completion]) -> tuple[Completion, bool]:
        """The completion for `request` and whether it came from the cache.

        `call` runs only on a miss (or in refresh mode); if it raises, nothing is recorded. Two
        threads asking for the same key wait for one another, so a parallel replay pays once.
        """
        key = request.key()
        with self._lock_for(key):
            if self.mode != "refresh":
                try:
                    cached = self.get(key, answer_bytes(request.params.get("max_tokens")))
                except CacheError as exc:
                    if self.mode == "offline":
                        raise CacheMiss(request, key, self.directory, str(exc)) from exc
                    cached = None  # "use": the new answer replaces the damaged file
                unusable = None if cached is None else self._unusable(cached, request)
                if unusable is not None:
                    if self.mode == "offline":
                        raise CacheMiss(request, key, self.directory, unusable)
                    cached = None  # "use": asked again, and the answer replaces the unusable one
                if cached is not None:
                    with self._lock:
                        self.hits += 1
                        self.used.add(key)
                    return cached, True
                if self.mode == "offline":
                    raise CacheMiss(request, key, self.directory)
            completion = call()
            self.put(request, completion)
            with self._lock:
                self.misses += 1
                self.used.add(key)
            return completion, False

    @staticmethod
    def _unusable(cached: Completion, request: CacheRequest) -> str | None:
        """Why a recorded answer is a failed call (as no version records today), None when it is not."""
        if not cached.text.strip():
            return "the recorded answer is empty"
        if cached.cut_off:
            return f"the recorded answer: {cached.cut_off_reason(request.params.get('max_tokens'))}"
        return None

    def keys(self) -> set[str]:
        """The keys recorded in the folder (one `<key[:2]>/<key>.json` file each)."""
        return {path.stem for path in self.directory.glob("??/*.json") if path.parent.name == path.stem[:2]}

    def _lock_for(self, key: str) -> threading.Lock:
        with self._lock:
            return self._key_locks.setdefault(key, threading.Lock())
