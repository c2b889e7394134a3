"""Requests in flight that another thread can cancel: one refused key stops a run's calls at once.

A run sends its calls from many threads (`compactlab.llm.concurrency`). When one is refused (401 or
403), the others already sent must end too: no answer to them can be used. Closing the SDK's httpx
client from another thread does not end them: `close()` on a socket that another thread is reading
leaves the connection open until that read returns, i.e. until the server answers. So the SDK
clients send through a `CancellableTransport`, whose connections are opened by a network backend
that keeps their sockets; `Cancellation.cancel()` shuts each one down (`shutdown(SHUT_RDWR)`),
which wakes a blocked read at once and closes the connection (the server sees the request
abandoned). From then on no connection is opened and nothing more is written: every request of
the transport ends with `Cancelled`.

`Cancelled` is a `BaseException`, as asyncio's `CancelledError` is, because the SDKs retry a
request after any `Exception` from the transport: a cancelled request would be sent again.

The same transport holds each attempt to its total deadline and its answer to its size bound
(`compactlab.llm.attempts`), and marks a 429 that says the account's quota is used up as not to be
retried (`x-should-retry: false`, the header both SDKs obey before their own retry rules): waiting
does not bring a quota back, and the SDKs retry every other 429, so 6 prompts sent 17 requests.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.request
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2

from compactlab.llm import attempts
from compactlab.llm.errors import quota_code

# The SDKs' own pool limits (openai.DEFAULT_CONNECTION_LIMITS, anthropic's are the same): a run's
# gates bound the calls in flight far below them.
CONNECTION_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100, keepalive_expiry=5.0)


class Cancelled(BaseException):
    """The request was cancelled (its connection shut down) because the run stopped sending calls."""


class Cancellation:
    """The sockets of one client's open connections, and whether its requests are cancelled."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self.cancelled = False

    def cancel(self) -> None:
        """End every request in flight now and refuse new ones (until `allow`)."""
        with self._lock:
            self.cancelled = True
            sockets = list(self._sockets)
        for sock in sockets:
            try:
                # The plain socket's shutdown, also for a TLS socket: SSLSocket.shutdown would first
                # drop its TLS state under the thread still reading it.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass  # closed meanwhile

    def allow(self) -> None:
        """Requests may be sent again (a new run with the same client)."""
        with self._lock:
            self.cancelled = False

    def check(self) -> None:
        if self.cancelled:
            raise Cancelled()

    def _track(self, stream: httpcore2.NetworkStream) -> _Stream:
        sock = stream.get_extra_info("socket")
        with self._lock:
            if not self.cancelled:
                self._sockets.add(sock)
                return _Stream(stream, sock, self)
        stream.close()  # cancelled while it connected
        raise Cancelled()

    def _forget(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)


class _Stream(httpcore2.NetworkStream):
    """A connection's stream whose reads and writes end in `Cancelled` once its client cancelled."""

    def __init__(self, inner: httpcore2.NetworkStream, sock: socket.socket, cancellation: Cancellation) -> None:
        self._inner, self._sock, self._cancellation = inner, sock, cancellation

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        cancellation = self._cancellation
        cancellation.check()
        try:
            data = self._inner.read(max_bytes, attempts.left(timeout, httpcore2.ReadTimeout))
        except Exception:
            cancellation.check()  # a shut-down socket's read error is the cancellation, not a network fault
            raise
        cancellation.check()  # (a shut-down socket reads as closed by the server)
        return attempts.count(data)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        cancellation = self._cancellation
        cancellation.check()
        try:
            self._inner.write(buffer, attempts.left(timeout, httpcore2.WriteTimeout))
        except Exception:
            cancellation.check()
            raise

    def close(self) -> None:
        self._cancellation._forget(self._sock)
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> _Stream:
        self._cancellation._forget(self._sock)  # TLS wraps the socket into a new one
        return self._cancellation._track(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore2.NetworkBackend):
    """The default network backend, whose connections a `Cancellation` keeps."""

    def __init__(self, cancellation: Cancellation) -> None:
        self._inner, self._cancellation = httpcore2.SyncBackend(), cancellation

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        self._cancellation.check()
        timeout = attempts.left(timeout, httpcore2.ConnectTimeout)
        return self._cancellation._track(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.NetworkStream:
        self._cancellation.check()
        timeout = attempts.left(timeout, httpcore2.ConnectTimeout)
        return self._cancellation._track(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class CancellableTransport(httpx2.HTTPTransport):
    """httpx's default transport (no proxy) on connections that `cancellation` can shut down."""

    def __init__(self, cancellation: Cancellation, limits: httpx2.Limits = CONNECTION_LIMITS) -> None:
        # httpx's transport takes no network backend and keeps its connection pool in `_pool` alone
        # (handle_request and close use nothing else): it is made here as httpx makes it, with ours.
        self._pool = httpcore2.ConnectionPool(
            ssl_context=httpx2.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_Backend(cancellation),
        )

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        attempts.start(request.extensions.get("timeout"))
        response = super().handle_request(request)
        return _final_if_out_of_quota(response) if response.status_code == 429 else response


def _final_if_out_of_quota(response: httpx2.Response) -> httpx2.Response:
    """The 429, read (it is small, and bounded as every answer is), marked `x-should-retry: false`
    when its body says the quota is used up."""
    raw = b"".join(response.iter_raw())  # as sent (maybe compressed): the SDK decodes it as it would have
    response.close()
    marked = httpx2.Response(response.status_code, headers=response.headers, content=raw, extensions=response.extensions)
    try:
        quota = quota_code(json.loads(marked.read()))
    except (ValueError, RecursionError, httpx2.DecodingError):  # not JSON (a proxy's page): a rate limit as any other
        quota = None
    if quota is not None:
        marked.headers["x-should-retry"] = "false"
    return marked


def cancellable_http_client(default_client: type[httpx2.Client], cancellation: Cancellation) -> httpx2.Client | None:
    """The SDK's default httpx client (`default_client`: its DefaultHttpxClient) on a
    `CancellableTransport`; None (the SDK's own client, whose requests in flight finish) when a
    proxy is set in the environment, which httpx uses only on its own transport."""
    if urllib.request.getproxies():
        return None
    return default_client(transport=CancellableTransport(cancellation))
