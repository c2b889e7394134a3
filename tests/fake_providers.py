"""A local HTTP server that speaks the OpenAI Chat Completions and Anthropic Messages wire formats.

The real `openai` and `anthropic` SDKs talk to it over real HTTP, so the tests exercise the SDKs'
own retry, timeout and error-parsing code rather than a mock of it. Each test scripts the server
with a queue of behaviours (answer, rate-limit, fail, stall, refuse a too-long prompt); once the
queue is empty every further request gets `otherwise` (a normal answer unless the test sets it, e.g.
to `summarizing()`, a summarizer whose answer follows its prompt). Every request received is recorded
(path, headers without credentials, JSON body) so a test can assert what the client sent and how
often; so is the end of each delayed request: answered (its status and when), or abandoned by the
client before its answer (it closed the connection while the server waited).

The server binds to 127.0.0.1 on a free port only; `serve()` is a context manager that always shuts
it down, and a stalled handler sleeps a bounded time, so nothing outlives its test.
"""

from __future__ import annotations

import hashlib
import json
import re
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
# Headers that carry credentials: never recorded, so a test can also check they were sent at all.
AUTH_HEADERS = frozenset({"authorization", "x-api-key", "api-key"})
MAX_STALL_SECONDS = 5.0  # a "slow" behaviour never holds a handler thread longer than this


@dataclass(frozen=True)
class Behaviour:
    """What the server does with one request."""

    kind: str  # "ok" | "summarize" | "error" | "stall" | "echo_credentials" | "truncated"
    status: int = 200
    text: str | None = None  # None: "Summary of: <the prompt's start>", so answers differ per prompt
    usage: dict | None = None  # provider-shaped usage; None -> a default for the provider
    delay: float = 0.0  # seconds to wait before answering (also for "ok": keeps requests in flight)
    headers: tuple[tuple[str, str], ...] = ()
    # For errors: (openai_body, anthropic_body), so one script works for either provider.
    bodies: tuple[dict, dict] | None = None


def ok(text: str | None = None, usage: dict | None = None, delay: float = 0.0) -> Behaviour:
    return Behaviour("ok", text=text, usage=usage, delay=delay)


def summarizing() -> Behaviour:
    """Answer as a summarizer that does what the prompt asks (`following_summary`)."""
    return Behaviour("summarize")


# What a prompt may ask a summary to keep exactly, and how this fake finds each kind in the conversation.
_ASKED = {
    "path": (re.compile(r"file paths?", re.I), re.compile(r"(?<![\w/.-])(?:[\w.-]+/)*[\w-]+\.[A-Za-z]{1,5}(?![\w/])")),
    "identifier": (
        re.compile(r"function names?|identifiers?", re.I),
        re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:_\w+|[a-z][A-Z]\w*|(?:\.[A-Za-z_]\w*)+)"),
    ),
    "error": (re.compile(r"error messages?|errors", re.I), re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b")),
    "url": (re.compile(r"\bURLs?\b"), re.compile(r"https?://[^\s'\"<>`)]+")),
    "command": (re.compile(r"\bcommands?\b", re.I), re.compile(r"^```(?:bash|sh)?\n(.+)$", re.M)),
}
_CONVERSATION = re.compile(r"^<conversation>\n(.*?)\n</conversation>$", re.S | re.M)
_FIRST_MESSAGE = re.compile(r"^\[(?:User|Assistant|Tool|System)", re.M)  # how bench's `serialize` labels each part


def following_summary(prompt: str, max_chars: int) -> str:
    """The summary a model that follows the prompt literally would write.

    The instructions are the prompt outside its `<conversation>` tags; without tags, what precedes the
    first message of the transcript and the prompt's last line (where a template puts its
    instruction after `{{ conversation }}`). When they ask to keep something exactly ("exact" or "preserve"), the summary lists every
    fact of each kind they name (file paths, function names or identifiers, commands, URLs, error
    messages) found in the conversation, newest first, as far as the output budget goes. Otherwise
    it is one line: what a model writes when asked to "summarize briefly"."""
    found = _CONVERSATION.search(prompt)
    if found:
        conversation, instructions = found.group(1), _CONVERSATION.sub(" ", prompt)
    else:
        start = next((m.start() for m in _FIRST_MESSAGE.finditer(prompt)), 0)
        conversation, instructions = prompt[start:], prompt[:start] + "\n" + prompt.rstrip().rsplit("\n", 1)[-1]
    first_request = next(
        (block[len("[User]: ") :].split("\n", 1)[0] for block in conversation.split("\n\n") if block.startswith("[User]: ")), ""
    )
    brief = f"The agent worked on the user's request ({first_request[:80]}) and made progress."
    if not re.search(r"\bexact|\bpreserve", instructions, re.I):
        return brief
    lines = [brief, ""]
    for kind, (asked, pattern) in _ASKED.items():
        if not asked.search(instructions):
            continue
        facts = [m.group(m.lastindex or 0).strip() for m in pattern.finditer(conversation)]
        facts = [fact for fact in reversed(dict.fromkeys(facts)) if fact]
        if facts:
            lines += [f"## {kind}s", *(f"- {fact}" for fact in facts), ""]
    text = "\n".join(lines).strip()
    return text if len(text) <= max_chars else text[: text.rfind("\n", 0, max_chars)]


def empty_answer() -> Behaviour:
    """200 with an empty answer text, as overloaded or filtered models sometimes send."""
    return Behaviour("ok", text="")


def truncated_body() -> Behaviour:
    """200 whose JSON body is cut off in the middle (a proxy or server that died while sending it)."""
    return Behaviour("truncated")


def echo_credentials() -> Behaviour:
    """401 whose message quotes the key the client sent, as some servers do: clients must scrub it."""
    return Behaviour("echo_credentials", status=401)


def rate_limited(retry_after: str = "0", retry_after_ms: str | None = None) -> Behaviour:
    """429 as both providers send it. `retry-after-ms` is the SDKs' finer-grained hint."""
    headers = [("retry-after", retry_after)]
    if retry_after_ms is not None:
        headers.append(("retry-after-ms", retry_after_ms))
    return Behaviour(
        "error",
        status=429,
        headers=tuple(headers),
        bodies=(
            {
                "error": {
                    "message": "Rate limit reached for requests",
                    "type": "requests",
                    "param": None,
                    "code": "rate_limit_exceeded",
                }
            },
            {
                "type": "error",
                "error": {
                    "type": "rate_limit_error",
                    "message": "Number of request tokens has exceeded your per-minute rate limit",
                },
                "request_id": "req_fake_429",
            },
        ),
    )


def server_error(status: int = 500) -> Behaviour:
    """500 (both), 503, or Anthropic's 529 overloaded_error."""
    anthropic_type, anthropic_message = (
        ("overloaded_error", "Overloaded") if status == 529 else ("api_error", "Internal server error")
    )
    return Behaviour(
        "error",
        status=status,
        # A tiny server hint keeps the SDKs' backoff (0.5 s and up otherwise) out of test time.
        headers=(("retry-after-ms", "10"),),
        bodies=(
            {
                "error": {
                    "message": "The server had an error while processing your request. Sorry about that!",
                    "type": "server_error",
                    "param": None,
                    "code": None,
                }
            },
            {
                "type": "error",
                "error": {"type": anthropic_type, "message": anthropic_message},
                "request_id": f"req_fake_{status}",
            },
        ),
    )


def stall(seconds: float) -> Behaviour:
    """Hold the request longer than the client's timeout, then answer (too late to matter)."""
    return Behaviour("stall", delay=min(seconds, MAX_STALL_SECONDS))


def context_overflow(tokens: int = 210_000, limit: int = 200_000) -> Behaviour:
    """400 with each provider's real context-length error body and wording."""
    return Behaviour(
        "error",
        status=400,
        bodies=(
            {
                "error": {
                    "message": f"This model's maximum context length is {limit} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
            {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": f"prompt is too long: {tokens} tokens > {limit} maximum"},
                "request_id": "req_fake_400",
            },
        ),
    )


def bad_request(message: str = "max_tokens: must be greater than or equal to 1") -> Behaviour:
    """A 400 that is not an overflow (must surface as a plain LLMError)."""
    return Behaviour(
        "error",
        status=400,
        bodies=(
            {"error": {"message": message, "type": "invalid_request_error", "param": "max_tokens", "code": None}},
            {"type": "error", "error": {"type": "invalid_request_error", "message": message}, "request_id": "req_fake_bad"},
        ),
    )


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]  # lower-cased names, credentials removed
    body: dict
    had_credentials: bool
    credential_sha256: str | None  # compare with a known key without keeping the key itself


@dataclass
class FakeProvider:
    """State shared by the handler threads: the script, the log, and in-flight accounting."""

    script: deque[Behaviour] = field(default_factory=deque)
    received: list[Received] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    # When each answer went out (time.monotonic()) and its status; when each request the client
    # abandoned during its delay was given up (its connection closed before the answer).
    answered: list[tuple[float, int]] = field(default_factory=list)
    abandoned: list[float] = field(default_factory=list)
    # What every request gets once the script is empty: a behaviour, or a function that picks one per
    # request (e.g. a seeded mix of faults).
    otherwise: Behaviour | Callable[[], Behaviour] = field(default_factory=ok)

    @property
    def base_url(self) -> str:
        """What the SDKs take as base_url (both append their own path under /v1)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    def queue(self, *behaviours: Behaviour) -> None:
        with self.lock:
            self.script.extend(behaviours)

    def count(self, path: str | None = None) -> int:
        with self.lock:
            return sum(1 for r in self.received if path is None or r.path == path)

    def _next(self) -> Behaviour:
        with self.lock:
            if self.script:
                return self.script.popleft()
            return self.otherwise() if callable(self.otherwise) else self.otherwise


def _answer_text(body: dict, behaviour: Behaviour) -> str:
    if behaviour.text is not None:
        return behaviour.text
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content", "")
    if behaviour.kind == "summarize":
        prompt = (
            content if isinstance(content, str) else " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        )
        return following_summary(prompt, 4 * int(body.get("max_tokens") or body.get("max_completion_tokens") or 1024))
    return f"Summary of: {content[:60] if isinstance(content, str) else '?'}"


def _openai_response(body: dict, behaviour: Behaviour, n: int) -> dict:
    usage = behaviour.usage or {
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "total_tokens": 150,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    return {
        "id": f"chatcmpl-fake{n}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body.get("model", "unknown"),
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": _answer_text(body, behaviour), "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }


def _anthropic_response(body: dict, behaviour: Behaviour, n: int) -> dict:
    usage = behaviour.usage or {
        "input_tokens": 120,
        "output_tokens": 30,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    return {
        "id": f"msg_fake{n}",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": _answer_text(body, behaviour)}],
        "model": body.get("model", "unknown"),
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def _handler(state: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect

        def log_message(self, format: str, *args: object) -> None:  # keep pytest output clean
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_unparsed": raw.decode("utf-8", "replace")}
            headers = {k.lower(): v for k, v in self.headers.items()}
            had_credentials = any(h in headers for h in AUTH_HEADERS)
            visible = {k: v for k, v in headers.items() if k not in AUTH_HEADERS}
            credential = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
            digest = hashlib.sha256(credential.encode()).hexdigest() if credential else None
            with state.lock:
                state.received.append(Received(self.path, visible, body, had_credentials, digest))
                n = len(state.received)
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            self.counted = True
            try:
                self._answer(state._next(), body, n, credential)
            finally:
                self._finished()

        def _finished(self) -> None:
            """The request stops counting as in flight once its answer starts going out: the client
            can send its next request as soon as it has read the answer, possibly before this
            thread runs again (on a loaded machine a count taken after the write came late, and a
            bound of 6 read as 7)."""
            if getattr(self, "counted", False):
                self.counted = False
                with state.lock:
                    state.in_flight -= 1

        def _answer(self, behaviour: Behaviour, body: dict, n: int, credential: str) -> None:
            is_openai = self.path.startswith(OPENAI_PATH)
            if not is_openai and not self.path.startswith(ANTHROPIC_PATH):
                return self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            if behaviour.delay and self._abandoned_within(min(behaviour.delay, MAX_STALL_SECONDS)):
                with state.lock:
                    state.abandoned.append(time.monotonic())
                return
            if behaviour.kind == "stall":
                # The client has given up by now; answering may hit a closed socket.
                try:
                    self._send(200, _openai_response(body, ok(), n) if is_openai else _anthropic_response(body, ok(), n))
                except OSError:
                    pass
                return
            if behaviour.kind == "echo_credentials":
                message = f"Incorrect API key provided: {credential}. You can find your API key in your account settings."
                payload = (
                    {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}
                    if is_openai
                    else {
                        "type": "error",
                        "error": {"type": "authentication_error", "message": message},
                        "request_id": "req_fake_401",
                    }
                )
                return self._send(401, payload)
            if behaviour.kind == "error":
                assert behaviour.bodies is not None
                payload = behaviour.bodies[0] if is_openai else behaviour.bodies[1]
                return self._send(behaviour.status, payload, behaviour.headers)
            payload = _openai_response(body, behaviour, n) if is_openai else _anthropic_response(body, behaviour, n)
            if behaviour.kind == "truncated":
                data = json.dumps(payload).encode()
                return self._send_raw(200, data[: len(data) // 2])
            self._send(200, payload, (("x-request-id" if is_openai else "request-id", f"req_fake{n}"),))

        def _abandoned_within(self, seconds: float) -> bool:
            """Wait `seconds` (less when the server is shutting down); True as soon as the client
            closes the connection meanwhile (it reads as the end of the stream)."""
            deadline = time.monotonic() + seconds
            while not state.stop.is_set() and (left := deadline - time.monotonic()) > 0:
                readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
                if not readable:
                    continue
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        return True
                except OSError:
                    return True
                state.stop.wait(min(left, 0.05))  # more bytes from the client (not sent by the SDKs): keep waiting
            return False

        def _send(self, status: int, payload: dict, headers: tuple[tuple[str, str], ...] = ()) -> None:
            self._send_raw(status, json.dumps(payload).encode(), headers)

        def _send_raw(self, status: int, data: bytes, headers: tuple[tuple[str, str], ...] = ()) -> None:
            self._finished()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            with state.lock:
                state.answered.append((time.monotonic(), status))

    return Handler


def fault_mix(seed: int, shares: dict[Callable[[], Behaviour], float]) -> Callable[[], Behaviour]:
    """A seeded chooser for `FakeProvider.otherwise`: each behaviour maker with its share of the
    requests, the rest answered normally (e.g. {rate_limited: 0.15, server_error: 0.15})."""
    import random

    rng = random.Random(seed)
    makers = list(shares)
    weights = [shares[m] for m in makers]

    def choose() -> Behaviour:
        pick = rng.random()
        for maker, weight in zip(makers, weights):
            if pick < weight:
                return maker()
            pick -= weight
        return ok()

    return choose


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """A client that closed its connection (a cancelled request) is no server error: not printed."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]  # (typeshed: a socket, an address)


@contextmanager
def serve() -> Iterator[FakeProvider]:
    """Run a fake provider on 127.0.0.1 for the duration of the `with` block."""
    state = FakeProvider()
    server = _Server(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True  # a handler stuck on a dead socket never blocks interpreter exit
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()  # wake stalled handlers
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
