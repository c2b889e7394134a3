"""The cases docs/needed-items-labelling.md settles (issue 27 §2), each on a real step of the shared sessions.

Each case names items of the step that the history before it holds, so that only the rule keeps
them out of what the step needs (an item absent from the history is never needed anyway), and an
item of the same step that the step does consume, so that the step is read at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from compactlab.scoring.extraction import extract_items
from compactlab.scoring.matching import Haystack, Item, present
from compactlab.scoring.preservation import needed_items
from compactlab.sessions.importers import load_file
from compactlab.sessions.model import Message, ToolCallPart


class Case(NamedTuple):
    session: str  # under the shared sessions folder
    step: int  # the assistant message's index
    needed: tuple[Item, ...]  # what the step consumes (needed)
    not_needed: tuple[str, ...]  # texts of the step the history holds, which the rule keeps out


def _needed_texts(shared: Path, case: Case) -> tuple[set[Item], Haystack, Message]:
    [session] = [t for t in load_file(shared / case.session, lenient=True) if case.step < len(t.messages)][:1]
    step = session.messages[case.step]
    assert step.role == "assistant"
    return set(needed_items(session.messages, case.step, (1,))[1] or ()), Haystack.of(session.messages[: case.step]), step


CASES = {
    "a patch written by a heredoc is read as a patch: its file and context lines consumed": Case(
        "mini-swe-agent-pr816/deepseek_chat_dev_pylint-dev__astroid-1333_pylint-dev__astroid-1333.traj.json",
        308,
        (Item("path", "astroid/modutils.py"), Item("identifier", "is_package_cb")),
        (),
    ),
    "a file re-written whole by Write is produced": Case(
        "claude-code-log/-src-deep-manifest__a7da6a22-facc-4fcd-8bab-f83c87862004.jsonl",
        164,
        (),
        ("/home/cboos/.claude/plans/humble-doodling-wolf.md",),
    ),
    "a file re-written whole by cat > FILE <<EOF is produced": Case(
        "m-claude/e5821007-9ca0-4a36-afc0-94da583da0ea.jsonl",
        94,
        (),
        ("Documents/M-Claude/scripts/sync_raw_logs.py",),
    ),
    "a type's own method on a session variable: the variable is the item": Case(
        "codex-rollouts/Monotoba__OpenPrintKit/rollout-2025-10-31T19-02-58-c61729d4-da6d-46a4-9a29-ec2c614e5e23.jsonl",
        876,
        (Item("identifier", "start_g"), Item("identifier", "end_g")),
        ("start_g.replace",),
    ),
    "a standard-library class's method on a session variable is no item": Case(
        "claude-code-log/-Users-dain-workspace-coderabbit-review-helper__cb2e607c-c758-415a-8b45-c49e4631906a.jsonl",
        67,
        (Item("identifier", "parse_pr_input"), Item("identifier", "args.pr_input")),
        ("parser.parse_args",),
    ),
    "JavaScript's length on a session variable with a plain name is no item": Case(
        "pai-claude/d6a37ffc-384d-4d2a-832a-78cdd493af69.jsonl",
        176,
        (Item("identifier", "learningsList"),),
        ("decisions.length",),
    ),
    "product and OS names (dGPU, CachyOS)": Case(
        "m-claude/agent-ae346a8.jsonl",
        95,
        (Item("identifier", "com.system76.CosmicPanel"),),
        ("dGPU", "CachyOS"),
    ),
    "a public host is no item": Case("m-claude/21037e11-89de-484d-abba-8705254aa991.jsonl", 111, (), ("example.com",)),
    "a system path is no item": Case(
        "m-claude/0300ad9d-25f5-4e67-8fb7-bcee5f9000a5.jsonl", 26, (Item("number", "2.32.0"),), ("/usr/bin/op",)
    ),
    "main and origin are no items": Case("m-claude/57bb5674-54b1-4ce6-9157-2d341cd9bfc1.jsonl", 84, (), ("origin", "main")),
    "a shell tool's name is no item": Case(
        "mini-swe-agent-pr816/deepseek_reasoner_dev_marshmallow-code__marshmallow-1359_marshmallow-code__marshmallow-1359.traj.json",
        56,
        (Item("identifier", "_bind_to_schema"),),
        ("sed",),
    ),
    "an exception name in a python -c script the step writes is produced": Case(
        "mini-swe-agent-pr816/deepseek_chat_dev_pydicom__pydicom-1139_pydicom__pydicom-1139.traj.json",
        94,
        (Item("identifier", "PersonName"),),
        ("TypeError",),
    ),
    "pi's edit: oldText consumed, newText produced": Case(
        "pi-sessions/compact.jsonl",
        649,
        (Item("identifier", "event.cutPoint"),),
        ("examples/hooks/full-compaction.ts",),
    ),
    "a quoted path holding spaces is one path, not its fragment": Case(
        "pai-claude/b566e56e-94a7-425e-a662-d701321e27ce.jsonl",
        5,
        (Item("path", "/Users/pretor/Documents/PAI - TPOS"),),
        ("/Users/pretor/Documents/PAI",),
    ),
    "the text echo prints is written, a product name in it no item": Case(
        "m-claude/f551142a-ef6a-46fd-a3bf-14a924370fb0.jsonl", 97, (), ("YubiKey",)
    ),
    "a path after a glob's * is the file name, not a fragment from /": Case(
        "m-claude/ea6b9704-440b-478b-bcc7-3705480cec17.jsonl", 6, (Item("path", "claude.md"),), ("/claude.md",)
    ),
    "JavaScript globals and template URLs are no items": Case(
        "pai-claude/24a90d02-9724-4548-9f4f-97bcb9f93ef3.jsonl",
        29,
        (Item("identifier", "VOICES.jarvis"),),
        ("console.log", "http://localhost:${PORT"),
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_rule_on_a_real_step(shared: Path, case: Case) -> None:
    needed, history, _ = _needed_texts(shared, case)
    assert set(case.needed) <= needed
    for text in case.not_needed:
        assert text in history.text, f"{text!r}: not in the history, so the case would prove nothing"
        assert text not in {i.text for i in needed}


def test_heredoc_patch_does_not_need_the_patch_file_it_writes_nor_its_added_lines(shared: Path) -> None:
    case = CASES["a patch written by a heredoc is read as a patch: its file and context lines consumed"]
    _, _, step = _needed_texts(shared, case)
    [call] = [p for p in step.parts if isinstance(p, ToolCallPart)]
    assert "cat > fix.patch << 'EOF'" in call.parsed_arguments()["command"]
    found = extract_items([Message("assistant", (call,))])
    assert [i.text for i in found] == [
        "astroid/modutils.py",  # the file of `--- a/astroid/modutils.py`
        "modpath_from_file_with_callback",  # the hunk header
        "is_package_cb",
        "_cache_normalize_path",  # context lines (the added line calls it too)
        "_get_relative_base_path",
    ]
    assert not any("fix.patch" in i.text for i in found)  # the file the heredoc writes: produced


def test_a_redirection_target_is_written(shared: Path) -> None:
    # marshmallow-1359 step 148: `git diff -- src/marshmallow/fields.py > patch.txt`; patch.txt is
    # also named in the step's thinking, which says it is about to produce it (labelled produced).
    case = Case(
        "mini-swe-agent-pr816/deepseek_reasoner_dev_marshmallow-code__marshmallow-1359_marshmallow-code__marshmallow-1359.traj.json",
        148,
        (),
        (),
    )
    _, history, step = _needed_texts(shared, case)
    [call] = [p for p in step.parts if isinstance(p, ToolCallPart)]
    found = [(i.kind, i.text) for i in extract_items([Message("assistant", (call,))])]
    assert ("path", "src/marshmallow/fields.py") in found
    assert present(Item("path", "patch.txt"), history) and not any(t == "patch.txt" for _, t in found)
