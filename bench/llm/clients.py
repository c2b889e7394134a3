"""Thin clients over the official SDKs: one `complete(system, prompt, max_tokens)` per provider.

Retries (429, 408/409, 5xx including Anthropic's 529, timeouts, dropped connections) are the
SDKs' own: exponential backoff with jitter that honours `retry-after`/`retry-after-ms`. We only
set `max_retries` and `timeout`. A 400 is never retried by the SDKs, which is what a context
overflow needs: it is recognised with `compactlab.compaction.overflow.classify_overflow` and raised as
`ContextOverflowError` so the engine can compact instead of paying for hopeless retries.

A 429 the SDK's retries did not get past is `RateLimited`, carrying the server's `retry-after`:
`compactlab.llm.concurrency` waits and sends it again, however often, without counting a failure (a
burst of 429s slows a run, never fails it). A 429 that says the account's quota is used up
(`compactlab.llm.errors.QUOTA_CODES`) is `LLMUnavailable`, and the SDK does not retry it first (the
transport marks it, `compactlab.llm.cancellation`): waiting does not help. So is Anthropic's 402
(`billing_error`), which the SDK never retries.

`timeout` is each attempt's total time (connect, send, wait, read), not the longest pause between
two bytes as httpx has it; an answer bigger than its output budget can fill is refused after that
many bytes (`compactlab.llm.attempts`). Both are a failed call: a timeout as the SDK retries it, a
too-big answer as a `BadAnswer`.

What the SDKs do not retry, we do, as often as they would (`max_retries`): an answer that is no
answer (`BadAnswer`: an empty text, a body that is not the JSON it claims to be, no choices, an
answer cut off at its output budget, `finish_reason` "length" or `stop_reason` "max_tokens": a
summary that stops mid-sentence is no summary, and a later attempt may be shorter). Such
a call is a failure like any other, so it is never cached. A refused key (401/403) or a server
that cannot be reached after the SDK's retries is `LLMUnavailable`: no later call can do better,
so a run stops there instead of recording one failure per compaction, and the calls it sent
meanwhile are cancelled (each client's `cancellation`, `compactlab.llm.cancellation`): they end
with `RequestCancelled`, their connections closed, none of them sent again.

Usage is mapped onto `LLMCall` exactly as the importers map recorded usage: OpenAI's
`prompt_tokens` includes cached tokens (input = prompt - cached - cache writes); Anthropic's
`input_tokens` is already the uncached part.

API keys come from the environment only. They live in the SDK client (and privately here, to
scrub them) but never in a repr, a log line, a cache file or an error message: provider messages
are scrubbed of the key in case a server echoes it, and SDK exceptions are not chained.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from compactlab.compaction.overflow import Overflow, classify_overflow
from compactlab.llm.attempts import AnswerTooLarge, bounded_answer
from compactlab.llm.cache import Completion
from compactlab.llm.cancellation import Cancellation, Cancelled, cancellable_http_client
from compactlab.llm.errors import (
    CANCELLED,
    BadAnswer,
    ContextOverflowError,
    LLMError,
    LLMUnavailable,
    RateLimited,
    RequestCancelled,
    quota_code,
)
from compactlab.sessions.model import LLMCall

log = logging.getLogger(__name__)

DEFAULT_MAX_RETRIES = 4  # the SDKs default to 2; a long replay should ride out a short outage
DEFAULT_TIMEOUT = 300.0  # seconds per attempt, in total: long summaries of long sessions are slow
NO_AUTH_KEY = "no-key-needed"  # what local servers without auth (Ollama, vLLM, llama.cpp) get
MAX_MESSAGE_CHARS = 1000  # of a provider's error message kept in ours


def retry_after_seconds(headers: Any) -> float | None:
    """The wait a 429's headers ask for: `retry-after-ms`, else `retry-after` in seconds (a date
    form is not worth parsing here: None, and the caller backs off on its own)."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if seconds >= 0:
            return seconds
    return None


@runtime_checkable
class LLMClient(Protocol):
    provider: str
    model: str

    def params(self) -> dict[str, object]:
        """Settings that shape the answer besides the prompt (part of the cache key)."""
        ...

    def complete(self, system: str, prompt: str, max_tokens: int) -> Completion: ...


def api_key_from_env(env_name: str, provider: str, model: str, base_url: str | None) -> str:
    """The key in `env_name`; a dummy for a custom server that has none; else a clear error."""
    key = os.environ.get(env_name, "").strip()
    if key:
        return key
    if base_url is not None:
        return NO_AUTH_KEY
    raise LLMError(
        provider, model, f"no API key: set the environment variable {env_name} (or give base_url for a local server without auth)"
    )


def _scrub(text: str, secret: str) -> str:
    return text.replace(secret, "***") if secret and secret != NO_AUTH_KEY else text


class _SDKClient:
    """What both clients share: settings, closing, and turning SDK errors into ours."""

    provider = "unknown"
    key_env = ""  # where the API key is read from unless `api_key_env` names another variable
    _client: Any  # the SDK client (`_sdk_client`)
    _key: str  # the API key, scrubbed from every error message

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        temperature: float | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        self.model, self.base_url = model, base_url
        self.max_retries, self.timeout = max_retries, float(timeout)
        self.temperature = float(temperature) if temperature is not None else None
        self._key = api_key_from_env(api_key_env or self.key_env, self.provider, model, base_url)
        self.cancellation = Cancellation()  # cancel() ends the requests in flight (the run stopped)
        self._client = self._sdk_client()

    def _sdk_client(self) -> Any:
        """The SDK's client, with `_sdk_settings`."""
        raise NotImplementedError

    def _sdk_settings(self, default_http_client: Any) -> dict[str, Any]:
        """This client's key, server, retries and timeout, and an httpx client (the SDK's default
        one) whose requests `self.cancellation` can end (None: the SDK's own, behind a proxy)."""
        http_client = cancellable_http_client(default_http_client, self.cancellation)
        return {
            "api_key": self._key,
            "base_url": self.base_url,
            "max_retries": self.max_retries,
            "timeout": self.timeout,
            "http_client": http_client,
        }

    def __repr__(self) -> str:  # no key here, by construction
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, max_retries={self.max_retries}, timeout={self.timeout})"

    def params(self) -> dict[str, object]:
        return {"temperature": self.temperature}

    def close(self) -> None:
        """Close the SDK's connection pool (keep-alive sockets to the provider)."""
        self._client.close()

    def __enter__(self) -> _SDKClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def complete(self, system: str, prompt: str, max_tokens: int) -> Completion:
        """One answer; a `BadAnswer` is asked again, up to `max_retries` more times (what the
        provider billed for the bad ones is in the last one's `billed`)."""
        billed: tuple[LLMCall, ...] = ()
        for attempt in range(self.max_retries + 1):
            try:
                return self._complete_once(system, prompt, max_tokens)
            except BadAnswer as exc:
                failure, billed = exc, billed + exc.billed
                log.warning(
                    "%s model %r: %s (attempt %d of %d)", self.provider, self.model, exc, attempt + 1, self.max_retries + 1
                )
        raise BadAnswer(self.provider, self.model, f"{failure.reason} ({self._attempts()})", billed)

    def _complete_once(self, system: str, prompt: str, max_tokens: int) -> Completion:
        raise NotImplementedError

    def _answer(self, ask: Callable[[], Completion], sdk_error: type[Exception], max_tokens: int) -> Completion:
        """The completion `ask` gets from the SDK, checked; an SDK error or a malformed body becomes ours."""
        error: LLMError | None = None
        try:
            with bounded_answer(max_tokens):
                completion = ask()
        except sdk_error as exc:
            error = self._translate(exc)
        except Cancelled:
            error = RequestCancelled(self.provider, self.model, CANCELLED)
        except AnswerTooLarge as exc:
            error = BadAnswer(self.provider, self.model, f"{exc} ({max_tokens} tokens): refused")
        except (ValueError, TypeError, AttributeError) as exc:  # a body cut off or not shaped as promised
            error = self._malformed(exc)
        if error is not None:
            raise error  # outside the except block: the SDK exception (and its request) is not chained
        return self._checked(completion, max_tokens)

    def _translate(self, exc: Exception) -> LLMError:
        raise NotImplementedError

    def _checked(self, completion: Completion, max_tokens: int) -> Completion:
        if not completion.text.strip():
            raise BadAnswer(self.provider, self.model, f"empty answer (stop reason {completion.stop_reason!r})")
        if completion.cut_off:  # billed in full: the budget counts it
            raise BadAnswer(self.provider, self.model, completion.cut_off_reason(max_tokens), (completion.usage,))
        return completion

    def _malformed(self, exc: Exception) -> BadAnswer:
        return BadAnswer(
            self.provider, self.model, f"malformed response ({type(exc).__name__}: {_scrub(str(exc), self._key)[:200]})"
        )

    def _unreachable(self, exc: Exception, where: str) -> LLMUnavailable:
        return LLMUnavailable(
            self.provider, self.model, f"cannot reach {where} ({_scrub(str(exc), self._key)}; {self._attempts()})"
        )

    def _status_error(
        self, status: int, provider_message: str, code: object, key: str, headers: Any = None, body: object = None
    ) -> LLMError:
        message = _scrub(provider_message, key)
        if status in (401, 403):
            return LLMUnavailable(
                self.provider,
                self.model,
                f"{message[:MAX_MESSAGE_CHARS]} (the server refused the credentials: check the API key)",
                status,
            )
        if (status == 429 and quota_code(body) is not None) or status == 402:
            return LLMUnavailable(
                self.provider, self.model, f"{message[:MAX_MESSAGE_CHARS]} (the account's quota is used up)", status
            )
        if status == 429:
            return RateLimited(self.provider, self.model, message[:MAX_MESSAGE_CHARS], retry_after_seconds(headers))
        overflow = classify_overflow(message)
        if len(message) > MAX_MESSAGE_CHARS:  # e.g. a proxy's HTML error page
            message = message[:MAX_MESSAGE_CHARS] + " [...]"
        if overflow is None and code == "context_length_exceeded":  # wording changed, code did not
            overflow = Overflow(self.provider, None, None)
        if overflow is not None:
            return ContextOverflowError(self.provider, self.model, message, status, overflow)
        return LLMError(self.provider, self.model, message, status)

    def _attempts(self) -> str:
        return f"{self.max_retries + 1} attempt(s), {self.timeout:g} s timeout each"


class OpenAIChatClient(_SDKClient):
    """Chat Completions through the `openai` SDK; any OpenAI-compatible server via `base_url`."""

    provider = "openai"
    key_env = "OPENAI_API_KEY"

    def _sdk_client(self) -> Any:
        import openai

        return openai.OpenAI(**self._sdk_settings(openai.DefaultHttpxClient))

    @property
    def max_tokens_param(self) -> str:
        """OpenAI's own API wants max_completion_tokens (reasoning models reject max_tokens); many
        compatible servers only know max_tokens."""
        return "max_completion_tokens" if self.base_url is None else "max_tokens"

    def _complete_once(self, system: str, prompt: str, max_tokens: int) -> Completion:
        import openai

        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        extra: dict[str, object] = {self.max_tokens_param: max_tokens}
        if self.temperature is not None:
            extra["temperature"] = self.temperature

        def ask() -> Completion:
            response = self._client.chat.completions.create(model=self.model, messages=messages, **extra)
            if not response.choices:
                raise BadAnswer(self.provider, self.model, "the response has no choices")
            choice = response.choices[0]
            return Completion(text=choice.message.content or "", usage=self._usage(response), stop_reason=choice.finish_reason)

        return self._answer(ask, openai.OpenAIError, max_tokens)

    def _translate(self, exc: Exception) -> LLMError:
        import openai

        if isinstance(exc, openai.APIStatusError):
            body = exc.body if isinstance(exc.body, dict) else {}  # the SDK unwraps {"error": {...}}
            message = body.get("message")
            message = message if isinstance(message, str) else exc.message
            return self._status_error(exc.status_code, message, body.get("code"), self._key, exc.response.headers, body)
        if isinstance(exc, openai.APITimeoutError):
            return LLMError(self.provider, self.model, f"timed out ({self._attempts()})")
        if isinstance(exc, openai.APIConnectionError):
            return self._unreachable(exc, self.base_url or "the OpenAI API")
        return LLMError(self.provider, self.model, _scrub(str(exc), self._key))

    def _usage(self, response: object) -> LLMCall:
        model = getattr(response, "model", None) or self.model
        request_id = getattr(response, "id", None)
        usage = getattr(response, "usage", None)
        if usage is None:
            log.warning("%s server returned no usage for model %r; recording zero tokens", self.provider, model)
            return LLMCall(model=model, input_tokens=0, request_id=request_id)
        prompt = usage.prompt_tokens or 0
        details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", None)
        if cached is None:  # DeepSeek reports the cached part under its own name
            cached = getattr(usage, "prompt_cache_hit_tokens", None) or 0
        written = getattr(details, "cache_write_tokens", None) or 0  # OpenRouter; usually absent
        cached = min(cached, prompt)
        written = min(written, prompt - cached)
        return LLMCall(
            model=model,
            input_tokens=prompt - cached - written,
            cache_read_tokens=cached,
            cache_write_tokens=written,
            output_tokens=usage.completion_tokens or 0,
            request_id=request_id,
        )


class AnthropicClient(_SDKClient):
    """The Messages API through the `anthropic` SDK."""

    provider = "anthropic"
    key_env = "ANTHROPIC_API_KEY"

    def _sdk_client(self) -> Any:
        import anthropic

        return anthropic.Anthropic(**self._sdk_settings(anthropic.DefaultHttpxClient))

    def _complete_once(self, system: str, prompt: str, max_tokens: int) -> Completion:
        import anthropic

        extra: dict[str, object] = {}
        if system:
            extra["system"] = system
        if self.temperature is not None:
            # Recent SDKs dropped `temperature` from messages.create(); the body field still passes.
            extra["extra_body"] = {"temperature": self.temperature}

        def ask() -> Completion:
            response = self._client.messages.create(
                model=self.model,
                max_tokens=max_tokens,
                messages=[{"role": "user", "content": prompt}],
                **extra,
            )
            text = "".join(block.text for block in response.content if getattr(block, "type", None) == "text")
            usage = response.usage
            call = LLMCall(
                model=response.model or self.model,
                input_tokens=usage.input_tokens or 0,
                cache_read_tokens=getattr(usage, "cache_read_input_tokens", None) or 0,
                cache_write_tokens=getattr(usage, "cache_creation_input_tokens", None) or 0,
                output_tokens=usage.output_tokens or 0,
                request_id=getattr(response, "_request_id", None) or response.id,
            )
            return Completion(text=text, usage=call, stop_reason=response.stop_reason)

        return self._answer(ask, anthropic.AnthropicError, max_tokens)

    def _translate(self, exc: Exception) -> LLMError:
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):
            body = exc.body if isinstance(exc.body, dict) else {}
            error = body.get("error")
            error = error if isinstance(error, dict) else {}
            message = getattr(exc, "api_message", None) or error.get("message") or exc.message
            return self._status_error(exc.status_code, str(message), error.get("type"), self._key, exc.response.headers, body)
        if isinstance(exc, anthropic.APITimeoutError):
            return LLMError(self.provider, self.model, f"timed out ({self._attempts()})")
        if isinstance(exc, anthropic.APIConnectionError):
            return self._unreachable(exc, self.base_url or "the Anthropic API")
        return LLMError(self.provider, self.model, _scrub(str(exc), self._key))
