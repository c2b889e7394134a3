"""Reading a shell command line for the needed-item extractor (compactlab.scoring.extraction):
which line is the command, whether it is a command item, and which of its words the step consumes.
"""

from __future__ import annotations

import re

_CD_PREFIX = re.compile(r"^cd\s+\S+\s*&&\s*")
# Text `shlex.split` accepts: every quote closed, no backslash left at the end. (A regular
# expression rather than shlex's character-by-character tokenizer, which is slow in Python.)
_SHELL_WORDS = re.compile(r"""(?:[^'"\\]|\\.|'[^']*'|"(?:[^"\\]|\\.)*")*""", re.S)


def command_line(value: object) -> str | None:
    """The first line of a shell command, whitespace-normalised, without a leading `cd DIR &&`."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        # Codex-style argv: ["bash", "-lc", "the command"] means the last element.
        value = value[-1] if value[0] in ("bash", "sh", "zsh") and len(value) >= 3 else " ".join(value)
    if not isinstance(value, str):
        return None
    line = " ".join(value.strip().split("\n", 1)[0].split())
    return _CD_PREFIX.sub("", line) or None


def opens_script(line: str) -> bool:
    """A first line that only opens a heredoc or a multi-line quoted script (`python -c "`): the
    command is really the script, which is content being written, so the line is no command item."""
    return "<<" in line or _SHELL_WORDS.fullmatch(line) is None  # no closing quotation on this line


# A command of plain words and options only (`git status -sb`, `ls -la`, `pytest -q`): anyone runs
# it without the session, so it is no command item (its words were never items either).
GENERAL_COMMAND = re.compile(r"(?:[A-Za-z][\w-]*|--?[\w-]+(?:=[\w,-]*)?)(?: (?:[A-Za-z][\w-]*|--?[\w-]+(?:=[\w,-]*)?))*")
# What a command line holds that the step does not consume: the program run at the start of each
# piece (a tool, not a fact: `apply_patch`, `sc_auth`; a path stays), a heredoc's delimiter, the
# module `-m` runs, and what the step writes: the text `echo`/`printf` print (into a file, a pipe or
# the terminal), the script
# an interpreter's `-c`/`-e` runs (code the step writes, as a heredoc's body: an exception name in
# it is produced), and the file a `>`/`>>` redirection writes (the step writes it whole or adds to
# it; nothing of the old content is read).
NOT_CONSUMED = re.compile(
    r"\b(?:echo|printf)\s+(?P<written>(?:[^|;&>]|&(?!&))*?)\s*(?=>|\||;|&&|$)"
    r"|\s-m\s+(?P<module>[\w.]+|\"[^\"]*\"|'[^']*')"
    r"|<<-?\s*['\"]?\w+['\"]?"
    r"|\b(?:python[\d.]*|node|ruby|perl|php|bun|deno)\s+-[ce]\s+(?P<script>'[^']*'?|\"(?:[^\"\\]|\\.)*\"?)"
    r"|(?:^|&&|\|\|?|;)\s*(?:\w+=\S*\s+)*(?P<program>[\w+-]+(?:\.[\w+-]+)*)(?![\w./])"
    r"|(?<![\d&>])>>?\s*(?P<target>[^\s&|;<>()]+)"
)
PATCH_START = "*** Begin Patch"


def _blank_groups(m: re.Match[str]) -> str:
    """The match with what it does not consume blanked (see NOT_CONSUMED); a program given by its path stays."""
    group = m.lastgroup
    if group is None:  # a heredoc's operator and delimiter
        return " " * len(m.group(0))
    if group == "program" and "/" in m.group(group):
        return m.group(0)
    start, end = m.start(group) - m.start(), m.end(group) - m.start()
    text = m.group(0)
    return text[:start] + " " * (end - start) + text[end:]


def consumed_part(line: str) -> str:
    """A command line with what the step does not consume blanked (`NOT_CONSUMED`), the rest in place."""
    return NOT_CONSUMED.sub(_blank_groups, line)


def command_item(line: str) -> str | None:
    """The line as a command item, or None: a line opening a script, or plain words and options."""
    return line if " " in line and not opens_script(line) and not GENERAL_COMMAND.fullmatch(line) else None
