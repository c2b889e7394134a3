"""The `compactlab` command as a user runs it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from compactlab.cli.main import main
from tests.conftest import bundled

REQUIRED_FIELDS = {"path", "format", "messages", "llm_calls", "max_prompt_tokens", "models", "compactions", "skipped_records"}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_inspect_json_on_a_dataset(capsys) -> None:
    code, out, _ = run(capsys, "inspect", "m-claude", "--json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 54  # 53 files, one of which also holds an inline sub-agent conversation
    assert all(REQUIRED_FIELDS <= set(row) for row in rows)
    by_id = {row["id"]: row for row in rows}
    compacted = by_id["3af9b1a7-6512-4883-ad18-320658ced099"]
    assert (compacted["llm_calls"], compacted["max_prompt_tokens"], compacted["compactions"]) == (114, 154990, 1)
    assert compacted["skipped_records"] == 2  # its two damaged lines, read leniently because the dataset says so


def test_inspect_table_shows_skips(capsys) -> None:
    code, out, _ = run(capsys, "inspect", "m-claude")
    assert code == 0
    assert "damaged records skipped" in out
    assert "\n  skipped in " not in out and "invalid JSON" in out  # grouped by kind (below)


def test_inspect_groups_the_damaged_records_by_kind_with_counts_and_examples(capsys) -> None:
    """The bundled m-claude's real damage: one line per kind of damage, not per record; --all-skips lists each
    session's, --json each session's reasons."""
    code, grouped, _ = run(capsys, "inspect", "m-claude")
    assert code == 0
    head = next(line for line in grouped.splitlines() if "damaged records skipped in" in line)
    total, sessions = re.match(r"\s+(\d+) damaged records skipped in (\d+) sessions, by kind", head).groups()
    kinds = re.findall(r"^    (\d+)× (.+) \(in (\d+) sessions?; e\.g\. (.+)\)$", grouped, re.MULTILINE)
    assert kinds and sum(int(k[0]) for k in kinds) == int(total)
    assert len({k[1] for k in kinds}) == len(kinds)  # one line per kind
    assert all(1 <= len(k[3].split(", ")) <= 3 and int(k[2]) <= int(sessions) for k in kinds)
    code, every, _ = run(capsys, "inspect", "m-claude", "--all-skips")
    assert code == 0 and every.count("  skipped in ") == int(sessions)
    code, lines, _ = run(capsys, "inspect", "m-claude", "--json")
    assert sum(sum(json.loads(line)["skipped_reasons"].values()) for line in lines.splitlines()) == int(total)


def test_inspect_of_a_damaged_file_by_path_is_strict(capsys) -> None:
    path = bundled("m-claude", "21037e11")
    code, _, err = run(capsys, "inspect", str(path))
    assert code == 2
    assert f"{path}:3: invalid JSON" in err
    code, out, _ = run(capsys, "inspect", str(path), "--lenient", "--json")
    assert code == 0 and json.loads(out)["skipped_records"] == 30


def test_unknown_dataset_suggests(capsys) -> None:
    code, _, err = run(capsys, "inspect", "m-claud")
    assert code == 2
    assert "Did you mean 'm-claude'" in err


def test_datasets_lists_counts(capsys) -> None:
    code, out, _ = run(capsys, "datasets", "--json")
    assert code == 0
    rows = {row["name"]: row for row in json.loads(out)}
    assert set(rows) == {
        "claude-code-log",
        "m-claude",
        "mini-swe-agent-pr816",
        "mini-swe-agent-v1",
        "codex-rollouts",
        "condenser-pairs-gpt5mini",
        "pi-sessions",
    }
    assert rows["m-claude"]["compactions"] == 2
    assert rows["pi-sessions"]["compactions"] == 4
    assert rows["condenser-pairs-gpt5mini"]["compactions"] == 10
    assert all(row["files"] > 0 for row in rows.values())


def test_export_writes_canonical_files(capsys, tmp_path: Path) -> None:
    code, out, _ = run(capsys, "export", "condenser-pairs-gpt5mini", "--out", str(tmp_path))
    assert code == 0
    written = [Path(line) for line in out.splitlines()]
    assert len(written) == 5 and all(p.exists() for p in written)
    code, out, _ = run(capsys, "inspect", str(tmp_path), "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert {row["format"] for row in rows} == {"condenser-log"}  # the original format survives the export


def test_console_script_runs() -> None:
    result = subprocess.run([sys.executable, "-m", "compactlab.cli.main", "formats"], capture_output=True, text=True, check=True)
    assert "claude-code" in result.stdout and "mini-swe-agent" in result.stdout
