"""Which file a suite's template setting named: one beside the suite, or, when none is there, a bundled one.

A `*template` setting is a path relative to the suite (`bench/gate/suite.py`); a name that matches no file
there falls back to a file of that name in the working directory, then to the bundled template of that
name (`compactlab.strategies.prompting.template_path`). That fallback is said, in `check`'s markdown and
by `baseline`, so nobody edits a template the suite does not read.
"""

from __future__ import annotations

from pathlib import Path

from compactlab.gate.suite import Suite
from compactlab.strategies.prompting import PROMPTS_DIR, template_path


def fallback_notes(suite: Suite) -> list[str]:
    """One line per strategy setting whose template name matches no file beside the suite."""
    folder = suite.path.parent
    shown = folder.as_posix() if folder.parts else "."
    lines = []
    for label, entry in suite.strategies_written.items():
        for key, name in sorted((entry.get("settings") or {}).items()):
            if not key.endswith("template") or not isinstance(name, str) or Path(name).is_absolute():
                continue
            if (folder / name).is_file():
                continue
            try:
                used = template_path(name)
            except FileNotFoundError:
                continue  # the run itself fails, naming it
            if used.resolve().parent == PROMPTS_DIR.resolve():
                which = (
                    f"the bundled {used.name} was used (`compactlab prompts show {used.name}` prints it; "
                    f"`compactlab prompts copy {used.name} {shown}` copies it there to edit)"
                )
            else:
                which = f"{used.resolve()} was used (relative to the working directory, not the suite)"
            lines.append(f'`{label}`: {key} = "{name}" matches no file beside the suite ({shown}/): {which}')
    return lines
