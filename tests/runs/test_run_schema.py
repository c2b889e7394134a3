"""meta.json and summary.json follow their JSON Schemas (bench/runs/schema/, versioned with the run
format, as the canonical session format has bench/sessions/schema/): the real files a run and a
sweep write validate, so do the committed reference run's, and a damaged file is refused naming
what is wrong."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import pytest

from compactlab.runs.run_format import FORMAT
from tests.conftest import SharedRun

SCHEMAS = Path(__file__).resolve().parents[2] / "bench" / "runs" / "schema"
REFERENCE = Path(__file__).resolve().parents[2] / "reports" / "reference"


def _schema(name: str) -> dict:
    schema = json.loads((SCHEMAS / f"run-{name}-v{FORMAT}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def _validate(path: Path, name: str) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(_schema(name)).validate(document)


@pytest.mark.parametrize("name", ["meta", "summary"])
def test_a_runs_and_a_sweeps_files_validate(name: str, small_run: SharedRun, codex_sweep: SharedRun) -> None:
    for folder in (small_run.folder, codex_sweep.folder, REFERENCE):
        _validate(folder / f"{name}.json", name)


def test_the_schemas_are_this_formats(small_run: SharedRun) -> None:
    assert _schema("meta")["properties"]["format"] == {"const": FORMAT}
    assert json.loads((small_run.folder / "meta.json").read_text())["format"] == FORMAT


def test_a_damaged_summary_or_meta_is_refused_naming_what_is_wrong(small_run: SharedRun) -> None:
    summary = json.loads((small_run.folder / "summary.json").read_text(encoding="utf-8"))
    row = summary["leaderboard"][0]
    name = next(key for key, value in row.items() if key.endswith("_mean") and not math.isnan(value))
    damaged = {**summary, "leaderboard": [{**row, name: "12%"}, *summary["leaderboard"][1:]]}
    with pytest.raises(jsonschema.ValidationError, match="'12%' is not of type 'number', 'null'"):
        jsonschema.validate(damaged, _schema("summary"))
    undeclared = {**summary, "leaderboard": [{**row, "removed share": 0.5}]}  # a key of no metric's form
    with pytest.raises(jsonschema.ValidationError, match="removed share"):
        jsonschema.validate(undeclared, _schema("summary"))
    meta = json.loads((small_run.folder / "meta.json").read_text(encoding="utf-8"))
    with pytest.raises(jsonschema.ValidationError, match="4 was expected"):
        jsonschema.validate({**meta, "format": 3}, _schema("meta"))
    without = {k: v for k, v in meta.items() if k != "datasets"}
    with pytest.raises(jsonschema.ValidationError, match="'datasets' is a required property"):
        jsonschema.validate(without, _schema("meta"))
