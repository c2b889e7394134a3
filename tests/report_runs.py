"""Small real runs for the report tests: a few bundled files, and one real session with hostile text."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from compactlab.cli.main import main
from compactlab.sessions.importers import load_file
from compactlab.sessions.importers.canonical import write_canonical
from compactlab.sessions.model import CompactionMarker, TextPart, ToolResultPart
from tests.conftest import bundled

# The real compaction of m-claude (3af9b1a7), a session without one (97b0ffde), a long Claude Code
# session that compacts at the 64k window, and a condenser log (production summaries, no calls).
SMALL_FILES = (
    ("m-claude", "3af9b1a7"),
    ("m-claude", "97b0ffde"),
    ("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9"),
    ("condenser-pairs-gpt5mini", "astropy__astropy-12907"),
    # A session summarize compacts with a loss (7 of 8 facts kept), so the recommendation tests have one.
    ("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__aa5c5ada"),
)
SMALL_STRATEGIES = ("summarize", "prune", "recorded", "pi")

SCRIPT = "<script>document.title='pwned'</script>"
IMG = "<img src=x onerror=\"document.title='pwned'\">"
END = "</html>"
HOSTILE = f"{SCRIPT} {IMG} {END}"


def run_argv(out: Path, files: list[Path], strategies: tuple[str, ...]) -> list[str]:
    """`compactlab run` as a user runs it (it writes the report too)."""
    # At a simulated 64,000 (a stress test), where the bundled sessions compact; their real windows are rarely reached.
    return ["run", "--dataset", *map(str, files), "--strategy", *strategies, "--window", "64000", "--lenient", "--out", str(out)]


def make_run(out: Path, files: list[Path], strategies: tuple[str, ...]) -> Path:
    assert main(run_argv(out, files, strategies)) == 0
    return out


def small_run_argv(out: Path) -> list[str]:
    """The small run, made once per test session (the `small_run` fixture of tests/conftest.py)."""
    return run_argv(out, [bundled(dataset, stem) for dataset, stem in SMALL_FILES], SMALL_STRATEGIES)


def hostile_file(folder: Path) -> Path:
    """A real session with hostile text in a user message, a tool result, its id and a production summary."""
    [session] = load_file(bundled("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9"))
    messages = list(session.messages)
    user = next(i for i, m in enumerate(messages) if m.role == "user" and any(isinstance(p, TextPart) for p in m.parts))
    messages[user] = replace(
        messages[user],
        parts=tuple(replace(p, text=f"{HOSTILE} {p.text}") if isinstance(p, TextPart) else p for p in messages[user].parts),
    )
    tool = next(i for i, m in enumerate(messages) if any(isinstance(p, ToolResultPart) for p in m.parts))
    messages[tool] = replace(
        messages[tool],
        parts=tuple(
            replace(p, content=f"{HOSTILE}\n{p.content}") if isinstance(p, ToolResultPart) else p for p in messages[tool].parts
        ),
    )
    at = next(i for i in range(2 * len(messages) // 3, len(messages)) if messages[i].role == "user")
    marker = CompactionMarker(at_message=at, trigger="auto", pre_tokens=None, summary=f"Production summary. {HOSTILE}")
    hostile = replace(session, id=f"hostile {HOSTILE}", messages=tuple(messages), compactions=(marker,))
    folder.mkdir(parents=True, exist_ok=True)
    return write_canonical([hostile], folder / "hostile.jsonl")


def hostile_run(folder: Path) -> Path:
    return make_run(folder / "run", [hostile_file(folder / "data")], ("summarize", "prune", "recorded"))
