"""Maintainer script: build `datasets/` from the shared real sessions.

    python -m tests.scripts.bundle_datasets ../shared/transcripts

It copies a representative subset gzipped (deterministically: same input, same bytes), keeps each
source's LICENSE, writes each dataset's `dataset.toml`, its card `README.md`, and `MANIFEST.tsv`
with the origin (repository, path, commit) of every file. Selection rules are in `SELECTION`.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
from dataclasses import dataclass
from pathlib import Path

from compactlab.sessions.datasets import datasets_dir


@dataclass(frozen=True)
class Selection:
    folder: str
    format: str
    description: str
    caveats: str
    # Keep every n-th file (by largest prompt) of those not kept by `always`; 1 keeps all.
    every: int = 1
    always: tuple[str, ...] = ()
    # The source has real damaged records: bundled files are read leniently (skips counted and shown).
    lenient: bool = False
    # Each sub-folder holds files of another repository with its own licence file.
    licence_per_subfolder: bool = False


SELECTION = (
    Selection(
        folder="claude-code-log",
        format="claude-code",
        description="Claude Code sessions and sub-agent sessions across Sonnet 4/4.5, Opus 4-4.7 and Haiku 4.5",
        caveats=(
            "- The files hold neither the system prompt nor the tool definitions (roughly 15-25k tokens), so a\n"
            "  local token count of the messages is lower than the provider's prompt tokens by that constant.\n"
            "- Thinking blocks of earlier turns are in the file, but the API strips them from later prompts.\n"
            "- `<synthetic>` assistant lines are local error stubs, not LLM calls; they are not counted as calls."
        ),
    ),
    Selection(
        folder="m-claude",
        format="claude-code",
        description="long Claude Code sessions (up to ~155k prompt tokens), two with a real compaction, some damaged lines",
        caveats=(
            "- Two sessions hold a real Claude Code compaction (one auto at ~155k tokens, one manual).\n"
            "- The owner ran a redaction tool over the text (values such as `[REDACTED_IP]`), so the text differs\n"
            "  slightly from what was tokenized, and some lines in about 15 files no longer parse as JSON: real\n"
            "  damaged input. Read them with `--lenient`, which skips and counts those lines.\n"
            "- Same system-prompt caveat as every Claude Code file."
        ),
        lenient=True,
    ),
    Selection(
        folder="mini-swe-agent-pr816",
        format="mini-swe-agent",
        description="mini-swe-agent v2 trajectories on SWE-bench tasks with DeepSeek chat/reasoner, per-call usage, cache hits and cost",
        caveats=(
            "- `messages` is the complete list the model saw; only the small bash tool schema is missing.\n"
            "- A subset of the 98 shared files: all deepseek-reasoner runs, the longest run, and every third\n"
            "  of the rest ordered by largest prompt, so lengths are spread evenly."
        ),
        every=3,
        always=("deepseek_reasoner", "deepseek_chat_dev_rerun_pylint-dev__astroid-1333"),
    ),
    Selection(
        folder="mini-swe-agent-v1",
        format="mini-swe-agent",
        description="mini-swe-agent v1.17.3 trajectories on SWE-bench tasks with gpt-5 / gpt-5-mini / gpt-5-nano, command output returned as user messages",
        caveats=(
            "- The v1 layout: actions are ```bash blocks in the reply and every answer (the command's output, a\n"
            "  timeout, a format error) comes back as a `user` message. compactlab reads each answer as the tool\n"
            '  result of an action read from the reply (`sent_as = "user"`, `from_text`), so strategies treat it\n'
            "  as tool output; the text the model saw is kept verbatim.\n"
            "- Files are named `<run folder>__<task>.traj.json.gz`: several runs (models, reasoning efforts) solved\n"
            "  the same tasks. 35 of the 67 shared files record usage the Responses-API way (`input_tokens`).\n"
            "- A subset of the 67 shared files: the one with the largest prompt and every second of the rest\n"
            "  ordered by largest prompt."
        ),
        every=2,
        always=("mini-reasoning-high-res-api/sphinx-doc__sphinx-8548",),
    ),
    Selection(
        folder="codex-rollouts",
        format="codex-rollout",
        description="long OpenAI Codex CLI sessions (69-456 calls, prompts up to ~271k tokens) from public repositories",
        caveats=(
            "- Each file comes from a different repository under its own licence (MIT or Apache-2.0): the\n"
            "  licences are kept as `LICENSE-<owner>__<repository>`, and `MANIFEST.tsv` names each file's.\n"
            "- Codex writes AGENTS.md and the environment context as user messages, also mid-session; compactlab\n"
            "  flags them as instructions, which strategies keep as they keep the system prompt.\n"
            "- Neither the system prompt nor the tool definitions are in the files; a file from an old CLI (0.34)\n"
            "  does not record the model. No real `compacted` item.\n"
            "- A subset of the 7 shared files: the two that carry AGENTS.md and every second of the rest ordered\n"
            "  by largest prompt."
        ),
        every=2,
        always=("Kocoro-lab__Shannon", "MoonLadderStudios__MoonMind"),
        licence_per_subfolder=True,
    ),
    Selection(
        folder="pi-sessions",
        format="pi-session",
        description="sessions of pi (an anchor engine) with 4 real pi compactions, per-call usage and cost (Claude Opus 4.5)",
        caveats=(
            "- Each `compaction` entry is a real pi compaction: its summary, the context size pi measured\n"
            "  (`tokensBefore`) and the first entry kept verbatim after it. The format does not record whether\n"
            "  the user asked for it (`/compact`) or pi did, so its trigger reads `unknown`.\n"
            "- Neither the system prompt nor the tool definitions are in the files.\n"
            "- In `compact.jsonl` one line holds two records back to back (a lost newline): both are read.\n"
            "- Aborted requests (no content, no usage) are not calls; they are counted as ignored."
        ),
    ),
    Selection(
        folder="condenser-pairs-gpt5mini",
        format="condenser-log",
        description="real (input context -> summary) pairs from a gpt-5-mini condenser on SWE-bench tasks",
        caveats="- No token counts: these serve to compare strategy summaries with a production summary of the same history.",
    ),
)


def read_manifest(shared: Path) -> dict[str, dict[str, str]]:
    rows: dict[str, dict[str, str]] = {}
    header: list[str] = []
    for line in (shared / "MANIFEST.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not header:
            header = cells
        elif not set(line) <= set("|- "):
            rows[cells[0]] = dict(zip(header, cells))
    return rows


def chosen(selection: Selection, manifest: dict[str, dict[str, str]]) -> list[str]:
    names = sorted(k for k in manifest if k.startswith(selection.folder + "/"))
    if selection.every == 1:
        return names
    keep = [n for n in names if any(a in n for a in selection.always)]
    rest = sorted((n for n in names if n not in keep), key=lambda n: int(manifest[n]["max prompt tokens"] or 0))
    return sorted(keep + rest[:: selection.every])


def bundle(shared: Path, out: Path) -> None:
    manifest = read_manifest(shared)
    for selection in SELECTION:
        target = out / selection.folder
        if target.exists():
            shutil.rmtree(target)
        (target / "sessions").mkdir(parents=True)
        names = chosen(selection, manifest)
        rows = []
        for name in names:
            source = shared / name
            # Sub-folders (runs, repositories) become a name prefix: their file names repeat.
            gz = target / "sessions" / (name.removeprefix(selection.folder + "/").replace("/", "__") + ".gz")
            gz.write_bytes(gzip.compress(source.read_bytes(), compresslevel=9, mtime=0))
            info = manifest[name]
            rows.append("\t".join([gz.name, info["source repo"], info["path in repo"], info["commit/blob"], info["license"]]))
        copy_licences(shared / selection.folder, names, target, selection.licence_per_subfolder)
        (target / "MANIFEST.tsv").write_text(
            "file\trepository\tpath\tcommit\tlicense\n" + "\n".join(rows) + "\n", encoding="utf-8"
        )
        (target / "dataset.toml").write_text(
            f'description = "{selection.description}"\n'
            f'format = "{selection.format}"\n'
            f'source = "{joined(names, manifest, "source repo")}"\n'
            f'license = "{joined(names, manifest, "license")}"\n'
            + (
                "lenient = true  # real damaged lines: bundled files are read leniently, skips are counted and shown\n"
                if selection.lenient
                else ""
            ),
            encoding="utf-8",
        )
        (target / "README.md").write_text(card(selection, names, manifest), encoding="utf-8")
        print(f"{selection.folder}: {len(names)} files")


def copy_licences(source: Path, names: list[str], target: Path, per_subfolder: bool) -> None:
    """The source's licence as `LICENSE`; or, per sub-folder, each repository's as `LICENSE-<sub-folder>`."""
    if not per_subfolder:
        [licence] = [p for p in source.glob("LICENSE*") if p.is_file()]
        shutil.copy(licence, target / "LICENSE")
        return
    for sub in sorted({Path(n).parent.name for n in names}):
        [licence] = [p for p in (source / sub).glob("LICENSE*") if p.is_file()]
        shutil.copy(licence, target / f"LICENSE-{sub}")


def joined(names: list[str], manifest: dict[str, dict[str, str]], column: str) -> str:
    """The values of a manifest column over the chosen files, each once, in order of appearance."""
    return ", ".join(dict.fromkeys(manifest[n][column] for n in names))


def card(selection: Selection, names: list[str], manifest: dict[str, dict[str, str]]) -> str:
    commits = joined(names, manifest, "commit/blob")
    licence_files = "`LICENSE-<owner>__<repository>` files" if selection.licence_per_subfolder else "`LICENSE`"
    return (
        f"# {selection.folder}\n\n{selection.description[0].upper()}{selection.description[1:]}.\n\n"
        f"- Format: `{selection.format}` (read by compactlab's importer of that name)\n"
        f"- Source repository: {joined(names, manifest, 'source repo')}\n"
        f"- Commit: {commits if len(commits) < 80 else 'one per file'} (per file: `MANIFEST.tsv`)\n"
        f"- Licence: {joined(names, manifest, 'license')}, see {licence_files} in this folder\n"
        f"- Files: {len(names)}, gzipped under `sessions/`, byte-identical to the source once unzipped\n\n"
        f"## Caveats\n\n{selection.caveats}\n\n"
        "Real sessions of real agents: nobody on this project wrote them. Built by `python -m tests.scripts.bundle_datasets`.\n"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.bundle_datasets", description=__doc__.split("\n\n")[0])
    parser.add_argument("shared", type=Path, help="the shared collection of real sessions (e.g. ../shared/transcripts)")
    parser.add_argument(
        "out", nargs="?", type=Path, default=None, help="where to build the datasets (default: the datasets folder)"
    )
    args = parser.parse_args()
    bundle(args.shared, args.out if args.out is not None else datasets_dir())
