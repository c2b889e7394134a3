"""The bundled prompt templates as files a user can read and copy (`compactlab prompts`, `compactlab init`).

A template is copied with the bundled templates it imports (`{% from "files.j2" import files %}`), so
the copy renders from its own folder: imports resolve beside a template first (`compactlab.strategies.prompting`).
The system prompt (`system.j2`) is not among them: it is read from the working directory or the bundle,
never from beside a template.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from compactlab.strategies.prompting import PROMPTS_DIR, SYSTEM_TEMPLATE, template_files


@dataclass(frozen=True)
class Copied:
    """What copying a template did: the files written, and the imports kept because a file was there."""

    written: tuple[Path, ...]
    kept: tuple[Path, ...]


def bundled_names() -> list[str]:
    """The bundled templates' file names, sorted."""
    return sorted(path.name for path in PROMPTS_DIR.glob("*.j2"))


def bundled_path(name: str) -> Path:
    """The bundled template `name`; a name that is none of them is a ValueError with the nearest ones."""
    names = bundled_names()
    if name in names:
        return PROMPTS_DIR / name
    if f"{name}.j2" in names:
        return PROMPTS_DIR / f"{name}.j2"
    close = difflib.get_close_matches(name, names + [n.removesuffix(".j2") for n in names], n=1, cutoff=0.5)
    hint = f" (did you mean {close[0] if close[0].endswith('.j2') else close[0] + '.j2'!r}?)" if close else ""
    raise ValueError(f"no bundled prompt template {name!r}{hint}; the bundled ones: {', '.join(names)}")


def imported_files(name: str) -> tuple[Path, ...]:
    """The bundled files the template `name` imports, recursively (not itself, not the system prompt)."""
    path = bundled_path(name)
    system = set(template_files(str(PROMPTS_DIR / SYSTEM_TEMPLATE)))
    return tuple(p for p in template_files(str(path)) if p != path.resolve() and p not in system)


def first_line(name: str) -> str:
    """What a bundled template is: its leading comment (after the import line), else its first line."""
    lines = bundled_path(name).read_text(encoding="utf-8").splitlines()
    body = "\n".join(lines[1:] if lines and lines[0].startswith("{%") else lines).strip()
    text = body.split("{#", 1)[1].split("#}", 1)[0].strip("- \n") if body.startswith("{#") else body.split("\n", 1)[0]
    words = " ".join(text.split())
    return words if len(words) <= 100 else words[:99] + "…"


def copy_template(name: str, destination: Path, force: bool = False) -> Copied:
    """Copy the bundled template `name` to `destination` (a folder, or a file name ending in .j2) with
    the bundled files it imports beside it. An existing target is replaced only with `force`; an
    existing import is kept (it is the user's own, and the copy renders with it)."""
    source = bundled_path(name)
    target = destination / source.name if destination.is_dir() or destination.suffix != ".j2" else destination
    if target.exists() and not force:
        raise ValueError(f"{target} exists: pass --force to replace it, or give another destination")
    target.parent.mkdir(parents=True, exist_ok=True)
    written, kept = [target], []
    target.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    for imported in imported_files(source.name):
        beside = target.parent / imported.name
        if beside.exists():
            kept.append(beside)
        else:
            beside.write_text(imported.read_text(encoding="utf-8"), encoding="utf-8")
            written.append(beside)
    return Copied(tuple(written), tuple(kept))
