"""What a run must know of its sessions before it writes anything: their models and how small a
prompt each could ever be sent with, read in a pass over the files before the first replay.

A `--context-window` key no model of the data has, or a `--window` smaller than every session's
smallest possible prompt, was found only after the whole replay; the run directory it left was then
refused for a new run and for `--resume`. The pass reads every file as the run does (the same
importers, the same lenient files, in worker processes) and keeps of each session a `SessionShape`: a
few numbers, so its cost is reading the files once more, a few percent of a run (the replay's token
estimation and strategies are the rest; `compactlab.runs.run_checks` says what is checked with it).

A shape's floor is that of `compactlab.results.metrics.smallest_prompts` over the calls before the
session's first real compaction, whose replayed size is the recorded count exactly. After a real
compaction the replay sizes the history with the last ratio measured before it, which only grows
from there: the floor of the calls before is then a lower bound of the replay's, never above it, so
a window the pass refuses is one the replay's own check (`check_window_fits_some_session`) refuses.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from compactlab.sessions.loading import FailedFile, nothing_read, read_files
from compactlab.sessions.model import Session


@dataclass(frozen=True)
class SessionShape:
    """What the run's checks need of one session."""

    id: str
    models: tuple[str, ...]  # the recorded calls' models, each once
    first_model: str | None  # the first call's: the model a setting's window is looked up by (None: no call)
    recorded_window: int | None  # the window the session records (Codex), which the lookup takes
    fixed: int | None  # the smallest recorded prompt before any real compaction (None: no call before one)
    floor: int | None  # the smallest possible prompt's lower bound (see the module docstring)
    skipped: int = 0  # damaged records reading it skipped (with --lenient)
    compactions: int = 0  # real compactions it records (a condenser log's are scored without calls)


def shape_of(session: Session) -> SessionShape:
    messages = session.messages
    first_marker = min((m.at_message for m in session.compactions), default=len(messages))
    calls = [m.call for m in messages if m.call is not None]
    prompts = [m.call.prompt_tokens for m in messages[:first_marker] if m.call is not None]
    fixed = floor = None
    if prompts:
        largest, step = prompts[0], 0
        for tokens in prompts[1:]:
            step = max(step, tokens - largest)
            largest = max(largest, tokens)
        fixed = min(prompts)
        floor = fixed + step
    return SessionShape(
        session.id,
        tuple(dict.fromkeys(call.model for call in session.calls)),
        calls[0].model if calls else None,
        session.context_window,
        fixed,
        floor,
        len(session.skipped),
        len(session.compactions),
    )


def prescan(
    files: Sequence[Path],
    lenient_files: Collection[Path],
    lenient: bool,
    workers: int | None = None,
    progress: bool = False,
    refused: Collection[Path] = (),
) -> tuple[SessionShape, ...]:
    """The shape of every session of `files`, read as a run reads them: a file that cannot be read
    is the run's error now (with `lenient`, it is passed over here and counted by the run; when every
    file is passed over, that is the error: the run would have no session)."""
    shapes: list[SessionShape] = []
    failed: list[FailedFile] = []
    reads = read_files(files, lenient_files, lenient=lenient, workers=workers, keep=shape_of, refused=refused)
    bar = tqdm(total=len(files), desc="checking sessions", unit="file", disable=not progress, leave=False)
    with closing(reads), bar:
        for read in reads:
            bar.update()
            if read.error is not None:
                if not read.lenient:
                    raise read.error
                failed.append(FailedFile(path=read.path, error=str(read.error)))
                continue
            shapes += read.sessions
    if not shapes and failed:
        raise nothing_read(failed)
    if shapes and not any(shape.models or shape.compactions for shape in shapes):
        raise nothing_to_replay(shapes, len(failed))
    return tuple(shapes)


def nothing_to_replay(shapes: Sequence[SessionShape], failed: int) -> ValueError:
    """The error of a run whose sessions record no LLM call and no real compaction: a replay measures
    each recorded call, and a real compaction is scored without one (a condenser log's), so there is
    no result to show (a lenient read that skipped every damaged record ends here)."""
    skipped = sum(shape.skipped for shape in shapes)
    why = [f"{skipped:,} damaged records skipped" if skipped else "", f"{failed:,} files not read" if failed else ""]
    said = "; ".join(w for w in why if w)
    return ValueError(
        f"no session to replay: the {len(shapes):,} sessions read record no LLM call and no compaction{f' ({said})' if said else ''}; "
        f"`compactlab inspect` shows what each holds"
    )
