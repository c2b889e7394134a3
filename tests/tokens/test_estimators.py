"""Each estimator on texts whose counts are known, and the offline tiktoken loading."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tiktoken.load

from compactlab.sessions.model import ImagePart, Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from compactlab.tokens import tokenizers
from compactlab.tokens.context_windows import ContextWindows, parse_override
from compactlab.tokens.estimators import KnownUsage, encodings_of, estimate, get_estimator
from compactlab.tokens.framing import Framing, anthropic_image_tokens, framing_for, openai_image_tokens
from compactlab.tokens.tokenizers import EncodingUnavailable, TokenCache, get_encoding

PLAIN = Framing()


def user(text: str) -> Message:
    return Message(role="user", parts=(TextPart(text),))


def test_shipped_encodings_are_tiktokens_own() -> None:
    # Token ids published for these encodings: "hello world" is [15339, 1917] in cl100k_base and
    # [24912, 2375] in o200k_base.
    assert get_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert get_encoding("o200k_base").encode("hello world") == [24912, 2375]
    assert get_encoding("cl100k_base").n_vocab == 100277
    assert get_encoding("o200k_base").n_vocab == 200019


def test_special_token_strings_are_counted_as_text() -> None:
    cache = TokenCache()
    text = "before <|endoftext|> after"
    expected = len(get_encoding("cl100k_base").encode_ordinary(text))
    assert cache.count("cl100k_base", text) == expected > 3


def test_damaged_encoding_file_is_refused_with_the_fix(tmp_path: Path, monkeypatch) -> None:
    shutil.copy(tokenizers.ENCODINGS_DIR / "cl100k_base.tiktoken", tmp_path / "cl100k_base.tiktoken")
    with open(tmp_path / "cl100k_base.tiktoken", "ab") as damaged:
        damaged.write(b"extra")
    monkeypatch.setattr(tokenizers, "ENCODINGS_DIR", tmp_path)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    tokenizers.get_encoding.cache_clear()
    try:
        with pytest.raises(EncodingUnavailable, match="damaged .*restore it from the repository"):
            tokenizers.get_encoding("cl100k_base")
    finally:
        tokenizers.get_encoding.cache_clear()


def test_unknown_encoding() -> None:
    with pytest.raises(EncodingUnavailable, match="cl100k_base, o200k_base"):
        get_encoding("p50k_base")


def test_load_does_not_touch_the_network(monkeypatch) -> None:
    def no_network(*args, **kwargs):
        raise AssertionError("tried to download")

    monkeypatch.setattr(tiktoken.load, "read_file", lambda path: open(path, "rb").read() if "://" not in path else no_network())
    tokenizers.get_encoding.cache_clear()
    assert tokenizers.get_encoding("o200k_base").encode("hi")


def test_chars_estimators() -> None:
    cache = TokenCache()
    assert estimate(get_estimator("chars/4"), [user("x" * 400)], PLAIN, cache) == 100
    assert estimate(get_estimator("chars/3.5"), [user("x" * 350)], PLAIN, cache) == 100


def test_word_heuristic_of_seed_003() -> None:
    words = get_estimator("words")
    cache = TokenCache()
    # 4 English words (3.0) + 4 CJK characters (2.0) + 4 special characters (1.0) + 50 overhead.
    assert estimate(words, [user("four plain English words 你好世界 !?#$")], PLAIN, cache) == 56
    assert estimate(words, [], PLAIN, cache) == 50


def test_tiktoken_estimators_add_openai_chat_framing() -> None:
    cache = TokenCache()
    # 2 tokens of text + 3 per message + 3 reply priming.
    assert estimate(get_estimator("tiktoken-cl100k"), [user("hello world")], PLAIN, cache) == 8
    assert estimate(get_estimator("tiktoken-o200k"), [user("hello world"), user("hello world")], PLAIN, cache) == 13


def test_tool_calls_and_results_count_their_text() -> None:
    cache = TokenCache()
    call = Message(role="assistant", parts=(ToolCallPart(id="c1", name="bash", arguments='{"command": "ls"}'),))
    result = Message(role="tool", parts=(ToolResultPart(call_id="c1", content="a.py b.py"),))
    expected = len("bash") + len('{"command": "ls"}') + len("a.py b.py")
    assert estimate(get_estimator("chars/4"), [call, result], PLAIN, cache) == round(expected / 4)


def test_thinking_is_dropped_where_the_provider_drops_it() -> None:
    message = Message(role="assistant", parts=(ThinkingPart("x" * 400), TextPart("y" * 40)))
    cache = TokenCache()
    chars = get_estimator("chars/4")
    assert estimate(chars, [message], framing_for("claude-code"), cache) == 10
    assert estimate(chars, [message], framing_for("mini-swe-agent"), cache) == 110


def test_image_formulas() -> None:
    assert anthropic_image_tokens(ImagePart("image/png", 1, 1000, 1000)) == 1334  # 1e6 / 750
    assert anthropic_image_tokens(ImagePart("image/png", 1, 3136, 1568)) == 1640  # scaled to 1568×784
    assert anthropic_image_tokens(ImagePart("image/png", 1)) == 1600
    assert openai_image_tokens(ImagePart("image/png", 1, 1024, 1024)) == 765  # 768² → 4 tiles
    assert openai_image_tokens(ImagePart("image/png", 1, 2048, 4096)) == 1105  # 768×1536 → 6 tiles


def test_hybrid_uses_known_usage_and_falls_back() -> None:
    cache = TokenCache()
    messages = [user("x" * 4000), user("y" * 40)]
    hybrid = get_estimator("hybrid")
    assert estimate(hybrid, messages, PLAIN, cache, KnownUsage(upto=1, tokens=1234)) == 1244
    assert estimate(hybrid, messages, PLAIN, cache) == 1010


def test_calibrated_applies_its_line() -> None:
    from compactlab.tokens.estimators import Calibrated

    calibrated = Calibrated(base="chars/4", slope=1.5, intercept=100)
    assert estimate(calibrated, [user("x" * 400)], PLAIN, TokenCache()) == 250


def test_unknown_estimator_suggests() -> None:
    with pytest.raises(KeyError, match="Did you mean 'tiktoken-o200k'"):
        get_estimator("tiktoken-o200")


def test_context_windows() -> None:
    windows = ContextWindows()
    assert windows.lookup("claude-sonnet-4-5-20250929").tokens == 200_000
    assert windows.lookup("deepseek-chat").tokens == 128_000
    assert windows.lookup("openrouter/google/gemini-3-pro-preview").tokens == 1_048_576
    unknown = windows.lookup("my-local-model")
    assert (unknown.tokens, unknown.known, unknown.source) == (128_000, False, "unknown")
    assert windows.lookup("gpt-5-codex", recorded=272_000).source == "session"
    overridden = ContextWindows(overrides=dict([parse_override("claude-sonnet-4-5=1000000")]))
    assert overridden.lookup("claude-sonnet-4-5-20250929").tokens == 1_000_000
    with pytest.raises(ValueError, match="MODEL=TOKENS"):
        parse_override("claude=lots")


# Where a split could go wrong: whitespace runs around newlines, punctuation followed by newlines
# and "/", a text ending at a newline, contractions and numbers after newlines, separators Python
# calls whitespace, special-token text, lone surrogates.
BLOCK_EDGES = [
    "a.\n/b/c.py\nnext",
    "x  \n\nfoo\n  bar\n\tbaz\n",
    "end:\n",
    "\n\n\nlead",
    "say:\n'll go\n's\n123456\n7",
    "path:\n/usr/bin\n./x\n",
    "a\r\nb\r\n\r\nc",
    "info\x1c\nsep\x1d\n\x1eword",
    "nbsp\n\u00a0x\n\u2028y\n\u3000z",
    "tok\n<|endoftext|>\nafter",
    "lone \ud800\nsurrogate\n\udc00x",
    "日本語\n中文\nक्षि\n",
    "",
]


def test_a_text_counts_as_the_sum_of_its_blocks_on_real_texts_and_summaries() -> None:
    from compactlab.contract import CompactionRequest, Context
    from compactlab.sessions.importers import load_file
    from compactlab.sessions.messages import is_summary
    from compactlab.strategies.registry import get_strategy
    from compactlab.tokens.metering import Meter
    from tests.conftest import bundled

    texts = list(BLOCK_EDGES)
    for dataset, name in (
        ("claude-code-log", "-Users-dain-workspace-danieldemmel-me-next__9e953218"),
        ("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343"),
    ):
        session = load_file(bundled(dataset, name))[0]
        texts += [t for m in session.messages for t in PLAIN.texts(m)]
        meter = Meter(session, "chars/4")
        request = CompactionRequest(reason="threshold", window=20_000, target_tokens=10_000, count_tokens=meter.count)
        for end in range(40, len(session.messages), 25):  # summaries as a sweep writes them, one after another
            context = get_strategy("summarize", keep_recent_tokens=4000).compact(Context(session.messages[:end]), request).context
            texts += [m.text() for m in context.messages if is_summary(m)]
    for encoding in ("cl100k_base", "o200k_base"):
        whole, blocks = TokenCache(), TokenCache()
        assert [blocks.count_blocks(encoding, t) for t in texts] == [whole.count(encoding, t) for t in texts]
        assert blocks.encoded_texts(encoding) > whole.encoded_texts(encoding)  # texts were really split


def test_a_bounded_cache_starts_afresh_and_counts_the_same() -> None:
    texts = [f"message {i}: " + "words and more words " * (i % 7 + 1) for i in range(200)] * 2
    bounded, whole = TokenCache(max_chars=2_000), TokenCache()
    assert [bounded.count("o200k_base", t) for t in texts] == [whole.count("o200k_base", t) for t in texts]
    assert 0 < bounded.encoded_texts("o200k_base") < whole.encoded_texts("o200k_base") == 200
    assert [bounded.count_blocks("o200k_base", "a\n" + t) for t in texts[:50]] == [
        whole.count("o200k_base", "a\n" + t) for t in texts[:50]
    ]


def test_the_encodings_an_estimator_counts_with_include_its_bases() -> None:
    # What a run builds before its workers fork (compactlab.runs.runs) and what estimation warms.
    assert encodings_of(["hybrid", "chars/4", "words"]) == []
    assert encodings_of(["calibrated"]) == ["o200k_base"]  # through its base
    assert encodings_of(["tiktoken-cl100k", "calibrated", "hybrid"]) == ["cl100k_base", "o200k_base"]
