"""Issue 45, the gate's own files: the committed baseline and suite, and a scaffold's recorded answers,
damaged by each test. Every damage is refused before any work with exit 2 and an error naming the file
and the key path (it used to be a traceback, exit 1 — "regression" —, or a check that could not fail,
exit 0); and a suite cannot read environment variables other than the ones of its purpose."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from compactlab.cli.main import main
from tests.conftest import REPO, bundled
from tests.fake_behaviours import summarizing
from tests.fake_providers import serve

SUITE = REPO / "reports" / "baselines" / "suite.toml"
BASELINE = REPO / "reports" / "baselines" / "baseline.json"


def refused(capsys, *argv: str) -> str:
    """The error of a command that must exit 2 and print nothing on stdout (nothing was run)."""
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 2, captured.out + captured.err
    assert captured.out == ""
    return captured.err


def first_session(document: dict, label: str = "summarize", metric: str = "preservation_k5") -> str:
    return sorted(document["values"][label][metric])[0]


def every_value(value: object) -> Callable[[dict], None]:
    """A damage: every value of every metric set to `value`."""

    def damage(document: dict) -> None:
        for per in document["values"].values():
            for values in per.values():
                for session in values:
                    values[session] = value

    return damage


NESTED = "(nested)"  # written as an array 10,000 deep (json.dumps itself cannot write one)


def _set(path: tuple[str, ...], value: object) -> Callable[[dict], None]:
    def damage(document: dict) -> None:
        table = document
        for key in path[:-1]:
            table = table[key]
        table[path[-1]] = value

    return damage


def _value(label: str, metric: str, value: object) -> Callable[[dict], None]:
    def damage(document: dict) -> None:
        document["values"][label][metric][first_session(document, label, metric)] = value

    return damage


def _drop(key: str) -> Callable[[dict], None]:
    return lambda document: document.pop(key)


SESSION = first_session(json.loads(BASELINE.read_text(encoding="utf-8")))
BASELINE_DAMAGE = {
    # A traceback on main (TypeError, AttributeError, numpy's UFuncNoLoopError, RecursionError):
    "strategies a list": (_set(("strategies",), ["summarize"]), "baseline.json: strategies: expected a table"),
    "compactions a string": (_set(("compactions",), "none"), "baseline.json: compactions: expected a table"),
    "a value a string": (
        _value("summarize", "preservation_k5", "abc"),
        f"baseline.json: values.summarize.preservation_k5.{SESSION}: expected a number in [0, 1] (a share) or null, got 'abc'",
    ),
    "a compaction point a string": (
        lambda d: d["compactions"]["summarize"]["preservation_k5"].__setitem__(SESSION, "x"),
        f"baseline.json: compactions.summarize.preservation_k5.{SESSION}: expected a list of",
    ),
    "a sensitivity with a key too many": (
        lambda d: d["sensitivity"]["summarize"]["preservation_k5"].__setitem__("extra", 1),
        "baseline.json: sensitivity.summarize.preservation_k5: unknown keys 'extra'",
    ),
    "values nested 10,000 deep": (_value("summarize", "preservation_k5", NESTED), "nested deeper than 32 levels"),
    # Exit 0 on main: a check that cannot fail.
    "every value NaN": (every_value(float("nan")), "or null, got nan"),
    "every value infinite": (every_value(float("inf")), "got inf"),
    "every value 1e308": (every_value(1e308), "got 1e+308"),
    "every value -1e308": (every_value(-1e308), "got -1e+308"),
    "a count below 0": (
        _value("summarize", "over_window_calls", -1),
        "over_window_calls.",
    ),
    "no metrics": (_drop("metrics"), "baseline.json: the file: missing 'metrics'"),
    "no sessions": (_drop("sessions"), "baseline.json: the file: missing 'sessions'"),
    "another suite's file": (
        _set(("suite",), {"file": "other-suite.toml", "hash": "0123456789abcdef"}),
        "was made from another suite, other-suite.toml (hash 0123456789abcdef), not suite.toml",
    ),
    "a suite hash a number": (_set(("suite", "hash"), 12), "baseline.json: suite.hash: expected a string, got 12"),
}


@pytest.mark.parametrize("kind", BASELINE_DAMAGE)
def test_a_damaged_baseline_is_refused_naming_the_key(kind, tmp_path, capsys) -> None:
    damage, expected = BASELINE_DAMAGE[kind]
    document = json.loads(BASELINE.read_text(encoding="utf-8"))
    damage(document)
    path = tmp_path / "baseline.json"
    text = json.dumps(document).replace(json.dumps(NESTED), "[" * 10_000 + "]" * 10_000)
    path.write_text(text, encoding="utf-8")  # NaN and Infinity as JSON's readers accept them
    err = refused(capsys, "check", "--suite", str(SUITE), "--baseline", str(path))
    assert expected in err, err
    assert err.startswith(f"compactlab: error: {path}") or "another suite" in err


def own_suite(tmp_path: Path, text: str) -> Path:
    """`text` (the committed suite, changed) at the committed suite's place under tmp_path, the datasets linked."""
    (tmp_path / "datasets").symlink_to(REPO / "datasets", target_is_directory=True)
    path = tmp_path / "reports" / "baselines" / "suite.toml"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return path


SUITE_TEXT = SUITE.read_text(encoding="utf-8")
TOLERANCE = '[metrics.preservation_k5]\ndirection = "higher"\ntolerance = 0.01\n'
assert TOLERANCE in SUITE_TEXT
SUITE_DAMAGE = {
    # Exit 0 on main: a tolerance nothing exceeds, or that compares false with everything.
    "tolerance inf": (TOLERANCE.replace("0.01", "inf"), "`tolerance` must be a finite number ≥ 0, got inf"),
    "tolerance nan": (TOLERANCE.replace("0.01", "nan"), "`tolerance` must be a finite number ≥ 0, got nan"),
    "tolerance the whole range of a share": (
        TOLERANCE.replace("0.01", "1"),
        "[metrics.preservation_k5]: `tolerance` = 1 is at least the width of the metric's range [0, 1], so this "
        "check could never fail",
    ),
    "a relative tolerance of all the baseline": (
        TOLERANCE.replace("0.01", "1.5\nrelative = true"),
        "a relative tolerance of 1.5 allows a loss of all of the baseline",
    ),
    # A 7.28 TiB allocation on main, and a RecursionError.
    "resamples 10**12": (
        TOLERANCE + "\n[gate]\nresamples = 1000000000000\n",
        "[gate] resamples must be a whole number from 100 to 100,000",
    ),
    "an array nested 1,000 deep": (TOLERANCE + f"\n[gate]\nseed = {'[' * 1000}{']' * 1000}\n", "nested deeper than 32 levels"),
    "an array nested 40 deep": (TOLERANCE + f"\n[gate]\nseed = {'[' * 40}{']' * 40}\n", "nested deeper than 32 levels"),
}


@pytest.mark.parametrize("kind", SUITE_DAMAGE)
def test_a_suite_whose_check_could_not_fail_or_that_overflows_is_refused(kind, tmp_path, capsys) -> None:
    replacement, expected = SUITE_DAMAGE[kind]
    suite = own_suite(tmp_path, SUITE_TEXT.replace(TOLERANCE, replacement))
    err = refused(capsys, "check", "--suite", str(suite), "--baseline", str(BASELINE))
    assert expected in err and str(suite) in err, err


# --- recorded answers, secrets and markdown: the scaffold on one session -----------------------------

MINI = bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343")
VARIABLES = ("COMPACTLAB_PROVIDER", "COMPACTLAB_MODEL", "COMPACTLAB_KEY_ENV", "COMPACTLAB_BASE_URL", "OPENAI_API_KEY")


def scaffold(folder: Path, change: Callable[[str], str] = lambda text: text) -> Path:
    """`compactlab init`'s suite in `folder`, on one session (quick; its power is test_suite_power's), `change`d."""
    assert main(["init", str(folder)]) == 0
    suite = folder / "ci" / "compactlab-suite.toml"
    text = suite.read_text(encoding="utf-8").replace('["mini-swe-agent-v1"]', f'["{MINI.as_posix()}"]')
    suite.write_text(change(text.replace("window = 12000 ", "window = 20000 ").replace("relative_tolerance = 0.25\n", "")))
    return suite


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """The scaffold's folder with its baseline and the answers a local server gave (no variable set after)."""
    folder = tmp_path_factory.mktemp("scaffold")
    with pytest.MonkeyPatch.context() as patch, serve() as server:
        server.otherwise = summarizing()
        for name in VARIABLES:
            patch.delenv(name, raising=False)
        suite = scaffold(folder)
        patch.setenv("COMPACTLAB_BASE_URL", server.openai_base_url)
        assert main(["baseline", "--suite", str(suite), "--baseline", str(suite.parent / "baseline.json")]) == 0
    return folder


def _answer(field: str, value: object) -> Callable[[dict], None]:
    def damage(answer: dict) -> None:
        table = answer
        keys = field.split(".")
        for key in keys[:-1]:
            table = table[key]
        table[keys[-1]] = value

    return damage


ANSWER_DAMAGE = {
    # TypeError and AttributeError tracebacks on main, or an answer counted as missing with no file named.
    "usage a string": (_answer("response.usage", "many"), "response.usage: expected a table (a JSON object), got 'many'"),
    "tokens a string": (
        _answer("response.usage.input_tokens", "abc"),
        "response.usage.input_tokens: expected a whole number ≥ 0, got 'abc'",
    ),
    "tokens negative": (
        _answer("response.usage.output_tokens", -5),
        "response.usage.output_tokens: expected a whole number ≥ 0, got -5",
    ),
    "text an object": (_answer("response.text", {"a": 1}), "response.text: expected a string, got {'a': 1}"),
    "no response": (lambda answer: answer.pop("response"), ": the file: missing 'response'"),
    "the key of another file": (_answer("key", "0" * 64), "key: expected the file's name"),
    "nested 10,000 deep": (_answer("response.text", NESTED), "nested deeper than 32 levels"),
}


@pytest.mark.parametrize("kind", ANSWER_DAMAGE)
def test_a_damaged_recorded_answer_is_refused_naming_the_file_and_key(kind, recorded, tmp_path, capsys, monkeypatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "copy"
    shutil.copytree(recorded, folder, symlinks=True)
    answer = sorted((folder / "ci" / "compactlab-suite-answers").glob("??/*.json"))[0]
    document = json.loads(answer.read_text(encoding="utf-8"))
    damage, expected = ANSWER_DAMAGE[kind]
    damage(document)
    answer.write_text(json.dumps(document).replace(json.dumps(NESTED), "[" * 10_000 + "]" * 10_000), encoding="utf-8")
    suite = folder / "ci" / "compactlab-suite.toml"
    err = refused(capsys, "check", "--suite", str(suite), "--baseline", str(suite.parent / "baseline.json"), "--offline")
    assert f"compactlab: error: {answer}: " in err and expected in err, err


SECRET = "sk-ci-secret-0d5ea1c3"  # what a CI job holds in CI_SECRET


@pytest.mark.parametrize("key", ["model", "api_key_env", "temperature"])
def test_a_suite_cannot_read_a_variable_it_does_not_name_for_its_purpose(key, tmp_path, capsys, monkeypatch) -> None:
    """A pull request's suite naming `${CI_SECRET}` in its [summarizer]: refused before any work, the variable
    named and its value in no file (on main it was expanded into baseline.json, the answers and the markdown)."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CI_SECRET", SECRET)
    line = {
        "model": 'model = "${COMPACTLAB_MODEL:-gpt-4.1-mini}"',
        "api_key_env": 'api_key_env = "${COMPACTLAB_KEY_ENV:-OPENAI_API_KEY}"',
    }

    def change(text: str) -> str:
        if key in line:
            assert line[key] in text
            return text.replace(line[key], f'{key} = "${{CI_SECRET}}"')
        return text.replace("[summarizer]\n", f'[summarizer]\n{key} = "${{CI_SECRET}}"\n')

    suite = scaffold(tmp_path, change)
    capsys.readouterr()
    with serve() as server:
        server.otherwise = summarizing()
        monkeypatch.setenv("COMPACTLAB_BASE_URL", server.openai_base_url)
        baseline = suite.parent / "baseline.json"
        err = refused(capsys, "baseline", "--suite", str(suite), "--baseline", str(baseline))
        assert f"[summarizer] {key} reads the environment variable CI_SECRET, which a suite may not read" in err
        assert "model from COMPACTLAB_MODEL" in err and SECRET not in err
        markdown = tmp_path / "check.md"
        err = refused(capsys, "check", "--suite", str(suite), "--baseline", str(baseline), "--markdown-out", str(markdown))
        assert "CI_SECRET" in err and SECRET not in err
        assert server.count() == 0
    written = [path for path in tmp_path.rglob("*") if path.is_file() and SECRET.encode() in path.read_bytes()]
    assert written == [] and not baseline.exists() and not markdown.exists()


HOSTILE = {
    "summarize": "<img src=https://tracker.example/p.png>",
    "observation-masking": "mask\x1b]0;pwned\x07 *[link](https://tracker.example)* | cell",
}


def toml_string(text: str) -> str:
    """`text` for a TOML basic string: its control characters as \\uXXXX."""
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


def test_labels_are_written_into_the_markdown_escaped(tmp_path, capsys) -> None:
    """A setting label with HTML, an OSC terminal title sequence, Markdown emphasis, a link and a table cell:
    in check's markdown none of them is markup (they were written raw on main)."""
    strategies = "".join(f'[[strategy]]\nname = "{name}"\nlabel = "{toml_string(label)}"\n\n' for name, label in HOSTILE.items())
    suite = tmp_path / "suite.toml"
    suite.write_text(
        f'datasets = ["{MINI.as_posix()}"]\nwindow = 20000\n\n{strategies}'
        '[metrics.preservation_k5]\ndirection = "higher"\ntolerance = 0.01\n',
        encoding="utf-8",
    )
    baseline = tmp_path / "baseline.json"
    assert main(["baseline", "--suite", str(suite), "--baseline", str(baseline)]) == 0
    capsys.readouterr()
    markdown = tmp_path / "check.md"
    assert main(["check", "--suite", str(suite), "--baseline", str(baseline), "--markdown-out", str(markdown)]) == 0
    text = markdown.read_text(encoding="utf-8")
    assert "<img" not in text and "\x1b" not in text and "\x07" not in text and "](https" not in text
    assert "### <code>&lt;img src=https://tracker.example/p.png&gt;</code>" in text
    assert (
        "### <code>mask&#92;u001b&#93;0;pwned&#92;u0007 &#42;&#91;link&#93;(https://tracker.example)&#42; &#124; cell</code>"
        in text
    )
    # Every table row still has its 8 cells: the label's | is no cell border.
    rows = [row for row in text.splitlines() if "(`preservation_k5`) | higher" in row]
    assert len(rows) == 2 and all(row.count("|") == 9 for row in rows)
