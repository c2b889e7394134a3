"""What one HTTP attempt of an LLM call may take: a total deadline, and a bound on the answer's size.

httpx's timeouts are per operation: a read that gets one byte resets the clock, so a server
trickling a byte every 0.3 s holds a request with `timeout = 2` for as long as it likes (105 s
measured). Each attempt here has a deadline instead, `timeout` seconds after the SDK hands the
request to the transport (the SDK's own timeout: the largest of httpx's connect, write, read and
pool values): every connect, write and read of the attempt waits at most what is left of it, and
one that finds nothing left raises httpcore's timeout of its kind. To the SDK that is an ordinary
timeout: it retries it as configured (`max_retries`), and each retry has a deadline of its own.

Why in the network stream, rather than a watchdog thread or `anyio.fail_after` around the SDK
call: the SDK clients are synchronous and run in a run's threads (`compactlab.llm.concurrency`);
a watchdog could only abandon the thread (its socket kept open, the call still counted in
flight) or shut down the socket, which `compactlab.llm.cancellation` already does for a whole
client and which the SDK would see as a dropped connection (and retry as one, not as a timeout).
A deadline on the stream's own reads and writes ends the attempt in the thread that sent it,
closes its connection (httpcore drops a connection whose response was not read to the end), and
keeps the SDK's retry and error mapping.

The size bound: an answer cannot be longer than its output budget, `max_tokens`. The longest
token of o200k_base is 128 bytes (a run of spaces), also as JSON escapes it; the mean over the
bundled sessions is 3.7 bytes per token, and the worst 8,000-character window 13.3. Providers'
own tokenizers are not all public, so a token may take twice the longest o200k one,
`BYTES_PER_TOKEN` = 256, plus `ENVELOPE_BYTES` for the status line, headers and the JSON around the
text (ids, usage). Everything one attempt reads counts, headers included, so neither an endless
header nor an endless body gets past it; a bigger answer is refused (`AnswerTooLarge`) after
reading the bound, never held whole in memory (a 60 MB answer took 354 s and 3.4 GB).

The attempt's state is per thread: the sync SDKs send a request and read its answer in the
calling thread, and a run's threads each send their own calls.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (the recorded path reads answer_bytes without loading the HTTP stack)
    import httpcore2

BYTES_PER_TOKEN = 256  # twice o200k_base's longest token (128 bytes): see the module docstring
ENVELOPE_BYTES = 64 * 1024  # status line, headers, and the JSON around the answer's text
MAX_ANSWER_TOKENS = 131_072  # a bound when the output budget is unknown (no model writes more per call)


def answer_bytes(max_tokens: object) -> int:
    """The most bytes an answer of at most `max_tokens` tokens can take (`MAX_ANSWER_TOKENS` when unknown)."""
    tokens = max_tokens if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0 else None
    return ENVELOPE_BYTES + BYTES_PER_TOKEN * (tokens or MAX_ANSWER_TOKENS)


class AnswerTooLarge(BaseException):
    """An attempt read more than its answer can take. A `BaseException`, as `Cancelled` is, so that the
    SDK does not send the request again on its own (it retries any `Exception` of the transport)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer is larger than {limit:,} bytes, more than its output budget can fill")
        self.limit = limit


class _Attempt(threading.local):
    deadline: float | None = None  # time.monotonic() at which the attempt ends
    limit: int | None = None  # bytes the attempt may read
    read: int = 0  # bytes read so far
    answer_limit: int | None = None  # the call's bound, set by the client around its SDK call


_ATTEMPT = _Attempt()


@contextmanager
def bounded_answer(max_tokens: int) -> Iterator[None]:
    """The attempts the SDK makes in this block may each read `answer_bytes(max_tokens)`."""
    saved = _ATTEMPT.answer_limit
    _ATTEMPT.answer_limit = answer_bytes(max_tokens)
    try:
        yield
    finally:
        _ATTEMPT.answer_limit = saved


def start(timeouts: Mapping[str, float | None] | None) -> None:
    """A new attempt in this thread: its deadline from the request's httpx timeouts (none when
    they are all None), its byte count from zero."""
    seconds = [value for value in (timeouts or {}).values() if isinstance(value, (int, float)) and math.isfinite(value)]
    _ATTEMPT.deadline = time.monotonic() + max(seconds) if seconds else None
    _ATTEMPT.limit, _ATTEMPT.read = _ATTEMPT.answer_limit, 0


def left(timeout: float | None, error: type[httpcore2.TimeoutException]) -> float | None:
    """The wait allowed to one connect, write or read of this attempt: its own timeout, at most
    what is left of the deadline; `error` when nothing is."""
    deadline = _ATTEMPT.deadline
    if deadline is None:
        return timeout
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise error("the request's total timeout passed")
    return remaining if timeout is None else min(timeout, remaining)


def count(data: bytes) -> bytes:
    """`data` just read by this attempt; `AnswerTooLarge` once the attempt read more than its bound."""
    _ATTEMPT.read += len(data)
    limit = _ATTEMPT.limit
    if limit is not None and _ATTEMPT.read > limit:
        raise AnswerTooLarge(limit)
    return data
