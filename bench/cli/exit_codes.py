"""Every exit code of `compactlab`, in one place: the top-level help lists them all, and `run`'s and
`sweep`'s help the ones they use, from this table (a test checks the two agree)."""

from __future__ import annotations

from compactlab.results.run_failures import INCOMPLETE_EXIT

DONE = 0
REGRESSION = 1  # `check`
BAD_INPUT = 2
INCOMPLETE = INCOMPLETE_EXIT  # `run`/`sweep`: 3
BUDGET = 4  # `run`/`sweep`: stopped before passing max_cost_usd
INTERRUPTED = 130  # Ctrl-C, as a shell reports a process ended by SIGINT
# A reader that stops early (`compactlab strategies | head`) is not an error of ours: exit quietly,
# with the status a process killed by SIGPIPE would have.
BROKEN_PIPE = 141

MEANINGS: dict[int, str] = {
    DONE: "done",
    REGRESSION: "`check` found a regression",
    BAD_INPUT: "bad input or configuration (the message names the file or flag and what is wrong), or an LLM provider "
    "that refuses the key or cannot be reached",
    INCOMPLETE: "`run`/`sweep` done, but a strategy's compactions failed or fell back beyond `max_failed_share`, so it is "
    "not ranked",
    BUDGET: "`run`/`sweep` stopped before passing `max_cost_usd` (--resume continues)",
    INTERRUPTED: "interrupted (Ctrl-C); `run`/`sweep` keep the sessions finished and print the --resume command",
    BROKEN_PIPE: "a reader closed the output early (| head): ended quietly",
}


def described(*codes: int) -> str:
    """'exit codes: 0 done; 2 ...' for `codes` (all of them when none is named)."""
    return "exit codes: " + "; ".join(f"{code} {MEANINGS[code]}" for code in codes or MEANINGS)
