"""A local HTTP server that speaks the OpenAI Chat Completions and Anthropic Messages wire formats.

The real `openai` and `anthropic` SDKs talk to it over real HTTP, so the tests exercise the SDKs'
own retry, timeout and error-parsing code rather than a mock of it. Each test scripts the server
with a queue of behaviours (tests/fake_behaviours.py: answer, rate-limit, fail, stall, trickle, refuse a too-long prompt); once the
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

from tests.fake_behaviours import MAX_STALL_SECONDS, Behaviour, following_summary, ok

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
# Headers that carry credentials: never recorded, so a test can also check they were sent at all.
AUTH_HEADERS = frozenset({"authorization", "x-api-key", "api-key"})


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
    # When each answer started going out (time.monotonic()) and its status; when each request the client
    # abandoned during its delay was given up (its connection closed before the answer).
    answered: list[tuple[float, int]] = field(default_factory=list)
    abandoned: list[float] = field(default_factory=list)
    # What every request gets once the script is empty: a behaviour, or a function that picks one per
    # request (e.g. a seeded mix of faults).
    otherwise: Behaviour | Callable[[], Behaviour] = field(default_factory=ok)
    # How long each trickled answer lasted, from its first byte to its last or to the client hanging up.
    trickled: list[float] = field(default_factory=list)

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

    def ended(self) -> FakeProvider:
        """This server once every request received so far was answered or abandoned. A handler thread
        notes an abandon when it sees the closed connection (it looks every 50 ms), which can be after
        the client has moved on: read `answered` and `abandoned` through this. Waits a bounded time
        (a request still stalled then stays unnoted, and the assertions on it say so)."""
        deadline = time.monotonic() + MAX_STALL_SECONDS + 1
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.answered) + len(self.abandoned) >= len(self.received):
                    break
            time.sleep(0.01)
        return self

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
                "finish_reason": "length" if behaviour.cut_off else "stop",
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
        "stop_reason": "max_tokens" if behaviour.cut_off else "end_turn",
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
            if behaviour.kind == "trickle":
                return self._trickle(json.dumps(payload).encode(), *behaviour.trickle)
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

        def _trickle(self, data: bytes, every: float, seconds: float) -> None:
            """The whole answer, headers included, a byte every `every` s for `seconds` s (less when
            the server is shutting down or the client hangs up), then the rest."""
            self._finished()
            with state.lock:
                state.answered.append((time.monotonic(), 200))
            head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n"
            raw, sent = head.encode() + data, 0
            started = time.monotonic()
            try:
                while sent < len(raw) and time.monotonic() < started + seconds and not state.stop.is_set():
                    self.wfile.write(raw[sent : sent + 1])
                    self.wfile.flush()
                    sent += 1
                    if self._abandoned_within(every):
                        break
                else:
                    self.wfile.write(raw[sent:])
                    self.wfile.flush()
            except OSError:
                pass  # the client gave up: what this fault is for
            with state.lock:
                state.trickled.append(time.monotonic() - started)

        def _send(self, status: int, payload: dict, headers: tuple[tuple[str, str], ...] = ()) -> None:
            self._send_raw(status, json.dumps(payload).encode(), headers)

        def _send_raw(self, status: int, data: bytes, headers: tuple[tuple[str, str], ...] = ()) -> None:
            self._finished()
            # Noted before the answer is written: the client may act on it (close the other requests'
            # connections, which notes them abandoned) before this thread runs again.
            with state.lock:
                state.answered.append((time.monotonic(), status))
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

    return Handler


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
