"""Check first, then work (issue 43 §3): a run refused for its arguments or configuration leaves the
output folder exactly as it was (no folder, no `.lock`, no config.json), and is refused before any
session is replayed; the refusal only the replay can make (a window no session fits where the pass
before could not bound every floor) removes what the run created. Real bundled sessions throughout."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from compactlab.cli.main import main
from compactlab.runs import prescan, run_checks, runs, session_job
from compactlab.runs.run_config import RunConfig
from compactlab.runs.run_files import DONE
from compactlab.runs.run_storage import ROWS
from tests.runs.run_inputs import SESSIONS, session_folder


def _listing(folder: Path) -> dict[str, str]:
    """Every path under `folder`, with its bytes' hash (a folder: "dir")."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return session_folder(tmp_path_factory.mktemp("check") / "sessions", SESSIONS[:2])


def _bad_config(tmp_path: Path) -> Path:
    config = tmp_path / "bad.toml"
    config.write_text('[prices."claude-sonnet-4-5"]\ninput = 3.0\noutput = 15.0\ninptu_cache = 1.0\n')
    return config


# Each kind of early error: the arguments after `run --dataset DATA --out OUT`, and what the message says.
REFUSALS = {
    "context-window key no model has": (["--context-window", "claude-sonet-4=100000"], "matches no model in the data"),
    "window no session fits": (["--window", "100"], "smaller than the smallest possible prompt of every one"),
    "unknown strategy": (["--strategy", "no-such-strategy"], "unknown strategy"),
    "unknown estimator": (["--estimator", "no-such-estimator"], "unknown estimator"),
    "limit out of range": (["--limit", "0"], "--limit: 0 out of range"),
    "workers out of range": (["--workers", "0"], "--workers: 0 out of range"),
    "bad price key": (["--config", "{bad_config}"], "unknown field"),
}


@pytest.mark.parametrize("folder", ["absent", "existing"])
@pytest.mark.parametrize("kind", sorted(REFUSALS))
def test_a_refused_run_leaves_the_folder_as_it_was(kind: str, folder: str, data: Path, tmp_path: Path, capsys) -> None:
    flags, message = REFUSALS[kind]
    out = tmp_path / "out"
    if folder == "existing":
        out.mkdir()
        (out / "notes.txt").write_text("mine\n")
    flags = [f.format(bad_config=_bad_config(tmp_path)) for f in flags]
    before = _listing(tmp_path)
    assert main(["run", "--dataset", str(data), "--out", str(out), *flags]) == 2
    assert message in capsys.readouterr().err
    assert _listing(tmp_path) == before


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_out_inside_the_dataset_is_refused_without_writing_there(command: str, data: Path, tmp_path: Path, capsys) -> None:
    dataset = shutil.copytree(data, tmp_path / "dataset")
    before = _listing(tmp_path)
    assert main([command, "--dataset", str(dataset), "--out", str(dataset / "out")]) == 2
    assert "is inside the dataset folder" in capsys.readouterr().err
    assert _listing(tmp_path) == before  # no out/.lock inside the dataset


def test_a_sweep_with_a_bad_context_window_key_writes_nothing(data: Path, tmp_path: Path, capsys) -> None:
    before = _listing(tmp_path)
    args = ["sweep", "--dataset", str(data), "--out", str(tmp_path / "out"), "--context-window", "gpt-99=1000"]
    assert main(args) == 2
    assert "'gpt-99' matches no model in the data" in capsys.readouterr().err
    assert _listing(tmp_path) == before


def test_a_finished_run_and_a_resume_of_another_configuration_are_refused_as_they_are(data: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["run", "--dataset", str(data), "--out", str(out), "--strategy", "truncate", "--workers", "1"]) == 0
    before = _listing(tmp_path)
    assert main(["run", "--dataset", str(data), "--out", str(out), "--strategy", "truncate"]) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert main(["run", "--dataset", str(data), "--out", str(out), "--strategy", "prune", "--resume"]) == 2
    assert "--resume with a different configuration" in capsys.readouterr().err
    assert _listing(tmp_path) == before


def test_a_bad_context_window_key_is_refused_before_any_session_is_replayed(data: Path, tmp_path: Path, monkeypatch) -> None:
    def replayed(*args, **kwargs):
        raise AssertionError("a session was replayed before the configuration was checked")

    monkeypatch.setattr(session_job.SessionJob, "replay_file", replayed)
    config = RunConfig(datasets=(str(data),), context_windows={"claude-sonet-4": 100_000})
    with pytest.raises(ValueError, match="'claude-sonet-4' matches no model in the data.*models seen: claude-"):
        runs.run(config, tmp_path / "out", workers=1)
    assert not (tmp_path / "out").exists()


def test_the_pass_before_the_run_finds_the_floors_the_replay_measures(data: Path, tmp_path: Path) -> None:
    """The pass's floor is the replay's to the token for a session without real compactions (and never
    above it for one with them): its window check refuses only what the replay's refuses."""
    config = RunConfig(datasets=(str(data),), strategies=("truncate",), window=40_000)
    result = runs.run(config, tmp_path / "out", workers=1)
    inputs = run_checks.check_run(config, tmp_path / "other").inputs
    shapes = {s.id: s for s in prescan.prescan(inputs.files, inputs.lenient_files, lenient=False, workers=1)}
    measured = result.sessions.drop_duplicates("session").set_index("session")
    assert set(shapes) == set(measured.index)
    for session, row in measured.iterrows():
        assert (shapes[session].fixed, shapes[session].floor) == (row["fixed_tokens"], row["floor_tokens"])


def test_a_window_refused_only_after_the_replay_leaves_the_folder_as_it_was(data: Path, tmp_path: Path, monkeypatch) -> None:
    # As where the pass could not bound every floor (real compactions before the first call): its check passes.
    monkeypatch.setattr(run_checks, "_check_window_fits", lambda *args: None)
    for existing in (False, True):
        out = tmp_path / f"out-{existing}"
        if existing:
            out.mkdir()
            (out / "notes.txt").write_text("mine\n")
        before = _listing(tmp_path)
        config = RunConfig(datasets=(str(data),), strategies=("truncate",), window=100)
        with pytest.raises(ValueError, match="smaller than the smallest possible prompt.*Nothing of this run was kept"):
            runs.run(config, out, workers=1)
        assert _listing(tmp_path) == before
    out = tmp_path / "out-True"
    runs.run(RunConfig(datasets=(str(data),), strategies=("truncate",), window=40_000), out, workers=1)  # a new run there works
    assert (out / DONE).exists() and (out / ROWS).is_dir() and (out / "notes.txt").exists()


def test_paths_and_strings_both_name_datasets(data: Path, tmp_path: Path) -> None:
    import compactlab

    strategies = ("truncate",)
    by_path = compactlab.run(RunConfig(datasets=[data], strategies=strategies), tmp_path / "a", workers=1)
    by_str = compactlab.run(RunConfig(datasets=str(data), strategies=strategies), str(tmp_path / "b"), workers=1)
    assert len(by_path.calls) == len(by_str.calls) > 0
    assert RunConfig(datasets=data).datasets == RunConfig(datasets=[str(data)]).datasets == (str(data),)
    assert (tmp_path / "a" / "config.json").read_text() == (tmp_path / "b" / "config.json").read_text()
    with pytest.raises(TypeError, match=r"RunConfig\(datasets=...\): each is a dataset name, a file or a folder"):
        RunConfig(datasets=[data, 3])
    assert compactlab.load_inputs(data).sessions == compactlab.load_inputs([str(data)]).sessions
