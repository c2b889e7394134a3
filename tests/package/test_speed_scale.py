"""`python -m tests.scripts.speed_scale` copies real sessions: from the shared sessions
beside the repository (found by the repository's own path, not a fallback), of a stated size
class with `--max-calls`, each copy a whole real session with its recorded calls."""

from __future__ import annotations

from pathlib import Path

from compactlab.sessions.loading import load_inputs
from tests.conftest import REPO
from tests.scripts import speed_scale


def test_the_repository_path_is_the_repository() -> None:
    assert speed_scale.REPO == REPO and (speed_scale.REPO / "tests" / "scripts" / "speed_scale.py").is_file()


def test_the_shared_sessions_are_found_beside_the_repository(shared: Path) -> None:
    assert REPO.parent / "shared" / "transcripts" == shared or REPO.parents[1] / "shared" / "transcripts" == shared
    assert speed_scale.sources() == [str(p) for p in sorted(shared.iterdir()) if p.is_dir()]


def test_a_size_class_copies_whole_real_sessions_of_at_most_that_many_calls(tmp_path: Path) -> None:
    every = speed_scale.real_sessions(["mini-swe-agent-pr816"])
    max_calls = sorted(len(t.calls) for t in every)[len(every) // 2]  # the median session's
    small = speed_scale.real_sessions(["mini-swe-agent-pr816"], max_calls)
    assert 0 < len(small) < len(every)  # the class leaves some real sessions out, and keeps some
    assert {t.id for t in small} == {t.id for t in every if len(t.calls) <= max_calls}
    folder = speed_scale.build_corpus(small, len(small) + 2, tmp_path / "corpus")
    copies = load_inputs([str(folder)]).sessions
    assert len(copies) == len(small) + 2
    by_id = {t.id: t for t in small}
    for copy in copies:
        real = by_id[copy.id.rsplit("~", 1)[0]]
        assert copy.calls == real.calls and len(copy.messages) == len(real.messages)  # its calls as recorded
        assert copy.messages[-1].parts != real.messages[-1].parts or not real.messages[-1].parts  # its own texts
