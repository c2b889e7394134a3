"""What the fake provider (tests/fake_providers.py) does with a request: answer, summarize as a model
following its prompt would, or fail as the real providers do (rate limit, server error, overflow,
stall, a cut-off body), each with both providers' real error bodies so one script serves either.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

MAX_STALL_SECONDS = 5.0  # a "slow" behaviour never holds a handler thread longer than this


@dataclass(frozen=True)
class Behaviour:
    """What the server does with one request."""

    kind: str  # "ok" | "summarize" | "error" | "stall" | "echo_credentials" | "truncated" | "trickle"
    status: int = 200
    text: str | None = None  # None: "Summary of: <the prompt's start>", so answers differ per prompt
    usage: dict | None = None  # provider-shaped usage; None -> a default for the provider
    delay: float = 0.0  # seconds to wait before answering (also for "ok": keeps requests in flight)
    headers: tuple[tuple[str, str], ...] = ()
    # For errors: (openai_body, anthropic_body), so one script works for either provider.
    bodies: tuple[dict, dict] | None = None
    cut_off: bool = False  # stopped at the output budget: finish_reason "length" / stop_reason "max_tokens"
    trickle: tuple[float, float] = (0.0, 0.0)  # "trickle": one byte every [0] s for [1] s, then the rest


def ok(text: str | None = None, usage: dict | None = None, delay: float = 0.0) -> Behaviour:
    return Behaviour("ok", text=text, usage=usage, delay=delay)


def summarizing() -> Behaviour:
    """Answer as a summarizer that does what the prompt asks (`following_summary`)."""
    return Behaviour("summarize")


IGNORED_PROMPT_SUMMARY = "The agent worked on the user's request and made progress."


def prompt_ignoring() -> Behaviour:
    """Answer as a model that ignores its prompt: the same one-line summary whatever it asks for
    (what the template adds around the answer, such as its file lists, is all a summary then carries)."""
    return Behaviour("ok", text=IGNORED_PROMPT_SUMMARY)


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
    first message of the session and the prompt's last line (where a template puts its
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


def length_stop(text: str = "The agent edited bench/llm/clients.py and then started to") -> Behaviour:
    """200 with an answer cut off at the output budget, as a model that ran out of tokens sends it."""
    return Behaviour("ok", text=text, cut_off=True)


def trickle(every: float = 0.3, seconds: float = MAX_STALL_SECONDS) -> Behaviour:
    """A normal answer, status line and headers included, sent one byte every `every` s for
    `seconds` s, then the rest at once: each read gets a byte, so no per-read timeout ever fires."""
    return Behaviour("trickle", trickle=(every, seconds))


def huge_answer(megabytes: float = 2.0) -> Behaviour:
    """200 with an answer of `megabytes` MB of prose, far more than any output budget can fill."""
    sentence = "The agent read bench/llm/clients.py, ran the tests and fixed the timeout. "
    return Behaviour("ok", text=sentence * int(megabytes * 1_000_000 / len(sentence)))


def quota_exceeded() -> Behaviour:
    """429 saying the account's quota is used up: OpenAI's insufficient_quota, Anthropic's monthly
    spend limit (a rate_limit_error whose details name enforced_spend_limit_reached, no retry-after)."""
    return Behaviour(
        "error",
        status=429,
        bodies=(
            {
                "error": {
                    "message": "You exceeded your current quota, please check your plan and billing details.",
                    "type": "insufficient_quota",
                    "param": None,
                    "code": "insufficient_quota",
                }
            },
            {
                "type": "error",
                "error": {
                    "type": "rate_limit_error",
                    "message": "You have reached your monthly usage limit for your API tier.",
                    "details": {"error_code": "enforced_spend_limit_reached"},
                },
                "request_id": "req_fake_quota",
            },
        ),
    )


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


def fault_mix(seed: int, shares: dict[Callable[[], Behaviour], float]) -> Callable[[], Behaviour]:
    """A seeded chooser for `FakeProvider.otherwise`: each behaviour maker with its share of the
    requests, the rest answered normally (e.g. {rate_limited: 0.15, server_error: 0.15})."""
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
