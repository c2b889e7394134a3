"""The wheel, installed as a user installs it, in a project that has its own `bench/` package.

compactlab's repository keeps its code in bench/ and strategies/, and pyproject.toml installs them
as `compactlab` and `compactlab.strategies`: nothing named `bench` or `strategies` may reach a
user's environment, where a project's own `bench/` package would shadow it (or be shadowed). This
builds the wheel from a copy of the working tree, installs it (not editable) with its dependencies
into a fresh virtual environment, and from such a project runs the command, a small run and the
pytest plugin. It needs the package index (or pip's cache), as installing compactlab does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

# Builds a wheel and installs it with its dependencies into a new virtual environment: minutes.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
NOT_SHIPPED = (".git", ".venv", "build", "dist", "reports", "__pycache__", "*.egg-info", ".pytest_cache", ".compactlab")
SMALL_DATASET = "mini-swe-agent-pr816"

USER_TEST = """
import bench


def test_the_project_keeps_its_own_bench_package():
    assert bench.OWNED_BY_THE_PROJECT


def test_the_plugin_replays_a_bundled_dataset(compactlab_replay):
    result = compactlab_replay("{dataset}", strategy="truncate", window=32000)
    assert result.sessions > 0
    result.assert_metric("removed_share", ">", 0)
"""


def _run(command: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key not in ("COMPACTLAB_DATASETS", "PYTHONPATH")}
    done = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*NOT_SHIPPED))
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(root / "dist"), str(source)], root)
    [wheel] = (root / "dist").glob("compactlab-*.whl")
    environment = root / "venv"
    _run([sys.executable, "-m", "venv", str(environment)], root)
    python = environment / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", str(wheel), "pytest"], root)
    project = root / "project"
    (project / "bench").mkdir(parents=True)
    (project / "bench" / "__init__.py").write_text("OWNED_BY_THE_PROJECT = True\n")
    (project / "tests").mkdir()
    (project / "tests" / "test_mine.py").write_text(USER_TEST.format(dataset=SMALL_DATASET))
    return {"wheel": wheel, "python": python, "command": environment / "bin" / "compactlab", "project": project}


def test_the_wheel_installs_one_namespace_with_its_data(installed: dict[str, Path]):
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"compactlab"}
    for data in (
        "compactlab/py.typed",
        "compactlab/tokens/encodings/o200k_base.tiktoken",
        "compactlab/tokens/calibration_fit.json",
        "compactlab/sessions/schema/canonical-v1.schema.json",
        "compactlab/report/templates/page.html.j2",
        "compactlab/strategies/prompts/summary.j2",
        f"compactlab/bundled_datasets/{SMALL_DATASET}/dataset.toml",
    ):
        assert data in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(installed["wheel"]).read(entry_points).decode()
    assert "compactlab = compactlab.cli.main:main" in text and "compactlab = compactlab.pytest_plugin" in text
    assert "bench." not in text and "= strategies." not in text


def test_the_wheel_ships_no_measurement_script(installed: dict[str, Path]):
    """The measurements run from a checkout (tests/scripts/, issue 46): the wheel's only script is the command."""
    wheel = zipfile.ZipFile(installed["wheel"])
    scripts = sorted(
        name for name in wheel.namelist() if name.endswith(".py") and 'if __name__ == "__main__":' in wheel.read(name).decode()
    )
    assert scripts == ["compactlab/cli/main.py"]
    assert not [name for name in wheel.namelist() if name.startswith(("compactlab/measure/", "tests/"))]


def test_the_command_lists_the_bundled_datasets_and_says_its_version(installed: dict[str, Path]):
    project, command = installed["project"], str(installed["command"])
    version = _run(
        [str(installed["python"]), "-c", "import compactlab, bench; print(compactlab.__version__, bench.OWNED_BY_THE_PROJECT)"],
        project,
    )
    number = version.stdout.split()[0]
    assert version.stdout.split() == [number, "True"] and number != "0+unknown"
    assert _run([command, "--version"], project).stdout.strip() == f"compactlab {number}"
    listed = _run([command, "datasets"], project).stdout
    for name in ("claude-code-log", "codex-rollouts", "m-claude", "mini-swe-agent-pr816", "mini-swe-agent-v1"):
        assert name in listed


def test_a_small_run_from_the_installed_wheel(installed: dict[str, Path]):
    project = installed["project"]
    done = _run(
        [str(installed["command"]), "run", "--dataset", SMALL_DATASET, "--strategy", "truncate", "prune", "--out", "run"], project
    )
    assert "report: run/report.html" in done.stdout
    assert (project / "run" / "report.html").stat().st_size > 10_000
    assert (project / "run" / "sessions.csv").read_text().count("\n") > 2


def test_the_pytest_plugin_in_a_project_with_its_own_bench(installed: dict[str, Path]):
    done = _run([str(installed["python"]), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], installed["project"])
    assert "2 passed" in done.stdout
