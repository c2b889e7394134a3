"""The prompt template decides whether a summary carries file lists (its `files` macro), for the
extractive summarizer as for an LLM; the prompt hash covers imported templates."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from compactlab.contract import CompactionRequest, Context
from compactlab.sessions.importers import load_file
from compactlab.strategies.prompting import PROMPTS_DIR, file_lists, fixed_templates, prompt_set_hash, render
from compactlab.strategies.registry import get_strategy
from compactlab.strategies.summarize import files_in
from compactlab.tokens.metering import Meter
from tests.conftest import bundled

SESSION = load_file(bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343"))[0]
FILES_IMPORT = '{%- from "files.j2" import files -%}'


def summary_of(**settings) -> str:
    meter = Meter(SESSION, "chars/4")
    request = CompactionRequest(reason="threshold", window=20_000, target_tokens=10_000, count_tokens=meter.count)
    result = get_strategy("summarize", keep_recent_tokens=4000, **settings).compact(Context(messages=SESSION.messages), request)
    assert result.messages_removed > 0
    return result.context.summary


def without_file_lists(tmp_path: Path) -> str:
    path = tmp_path / "summary.j2"
    path.write_text((PROMPTS_DIR / "summary.j2").read_text(encoding="utf-8").replace(FILES_IMPORT, "", 1), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("name", sorted(p.name for p in PROMPTS_DIR.glob("*.j2") if p.name not in ("system.j2", "files.j2")))
def test_every_bundled_summary_template_carries_the_file_lists(name: str) -> None:
    assert (
        file_lists(name, ["a.py"], ["b.py"]) == "<read-files>\na.py\n</read-files>\n\n<modified-files>\nb.py\n</modified-files>"
    )
    assert file_lists(name, [], []) == ""


def test_the_template_decides_whether_summaries_list_files(tmp_path) -> None:
    with_lists = summary_of()
    found = files_in(with_lists)
    assert found.read and found.modified
    assert "## Files read" not in with_lists and "## Files modified" not in with_lists  # not listed twice

    dropped = summary_of(template=without_file_lists(tmp_path))
    assert files_in(dropped).read == () and files_in(dropped).modified == ()
    assert "## Files read" not in dropped and "<read-files>" not in dropped
    # The rest of the summary is the same: only the lists went.
    assert with_lists.split("\n\n<read-files>")[0] == dropped.split("\n\nLast request from user was:")[0]


def test_without_track_files_the_extractive_summary_lists_the_files_itself() -> None:
    summary = summary_of(track_files=False)
    assert "<read-files>" not in summary and "## Files modified" in summary


def test_a_template_may_render_the_lists_its_own_way(tmp_path) -> None:
    template = tmp_path / "mine.j2"
    template.write_text(
        "{% macro files(read, modified) %}## Files\n<read-files>\n{{ (read + modified) | join('\\n') }}\n</read-files>{% endmacro %}"
        "Summarize:\n{{ conversation }}\n",
        encoding="utf-8",
    )
    assert file_lists(str(template), ["a.py"], ["b.py"]) == "## Files\n<read-files>\na.py\nb.py\n</read-files>"
    assert render(str(template), conversation="x").text == "Summarize:\nx\n"  # the macro is not part of the prompt


def test_the_prompt_hash_covers_imported_templates(tmp_path) -> None:
    files = tmp_path / "files.j2"
    files.write_text((PROMPTS_DIR / "files.j2").read_text(encoding="utf-8"), encoding="utf-8")
    template = tmp_path / "summary.j2"
    template.write_text((PROMPTS_DIR / "summary.j2").read_text(encoding="utf-8"), encoding="utf-8")
    before, lists = prompt_set_hash(str(template)), file_lists(str(template), ["a.py"], [])
    assert before == prompt_set_hash("summary.j2")  # the same texts as the bundled ones
    files.write_text("{% macro files(read, modified) %}FILES: {{ read | join(' ') }}{% endmacro %}", encoding="utf-8")
    os.utime(files, (files.stat().st_atime, files.stat().st_mtime + 5))  # a later edit, whatever the clock's resolution
    assert prompt_set_hash(str(template)) != before
    assert file_lists(str(template), ["a.py"], []) == "FILES: a.py" != lists


def test_a_template_name_follows_the_files_as_they_change(tmp_path, monkeypatch) -> None:
    # Templates are looked up once and then only re-checked: a file of the same name appearing in
    # the working directory, an edit, and its removal must still each be seen.
    bundled_hash = render("summary.j2", conversation="x").hash
    monkeypatch.chdir(tmp_path)
    assert render("summary.j2", conversation="x").hash == bundled_hash
    local = tmp_path / "summary.j2"
    local.write_text("Summarize:\n{{ conversation }}\n", encoding="utf-8")
    assert render("summary.j2", conversation="x").text == "Summarize:\nx\n"
    local.write_text("Briefly:\n{{ conversation }}\n", encoding="utf-8")
    os.utime(local, (local.stat().st_atime, local.stat().st_mtime + 5))
    assert render("summary.j2", conversation="x").text == "Briefly:\nx\n"
    local.unlink()
    assert render("summary.j2", conversation="x").hash == bundled_hash
    with pytest.raises(FileNotFoundError, match="not found"):
        render("gone.j2")


def test_a_run_uses_the_templates_as_they_were_at_their_first_use(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    local = tmp_path / "summary.j2"
    local.write_text("Before:\n{{ conversation }}\n", encoding="utf-8")
    assert render("summary.j2", conversation="x").text == "Before:\nx\n"
    local.write_text("Edited before the run:\n{{ conversation }}\n", encoding="utf-8")
    os.utime(local, (local.stat().st_atime, local.stat().st_mtime + 5))
    with fixed_templates():
        assert render("summary.j2", conversation="x").text == "Edited before the run:\nx\n"  # nothing stale is kept
        local.write_text("Edited during the run:\n{{ conversation }}\n", encoding="utf-8")
        os.utime(local, (local.stat().st_atime, local.stat().st_mtime + 10))
        assert render("summary.j2", conversation="x").text == "Edited before the run:\nx\n"
    assert render("summary.j2", conversation="x").text == "Edited during the run:\nx\n"
