"""What a gate run measured of the prompt templates, and the rule that it never passes what it did not.

Per strategy setting the baseline records the hash of every prompt template its compactions may
render (`prompt_templates`, `template_hash`: the template, what it imports, and the system prompt)
and which model read them (`read_by`: "provider:model", or None). None when no `[summarizer]` is
configured or the setting's summarizer is the extractive stand-in, which reads no prompt: then a
template shapes only the file lists its `files` macro appends, and what the prompt asks a model
for is not measured at all.

`check` (and `baseline`) is no result, exit 2, when for a setting
- a template's hash differs from the baseline's and no model read it in this run;
- the baseline's summaries were written by a model and this run's by none;
- it had recorded answers only (`compactlab.gate.answers`) and requests had none: they are
  counted per template ("summary.j2 changed: 37 summaries need a model").
"""

from __future__ import annotations

from pathlib import Path

from compactlab.gate.answers import Answers
from compactlab.gate.suite import Suite
from compactlab.strategies.prompting import prompt_templates, template_hash
from compactlab.strategies.registry import get_strategy

# Whether the gate can see a prompt change at all, and how finely: said in the check's markdown and docs/gate.md.
SENSITIVITY_NOTE = (
    "With a model (live or from recorded answers) the check measures what the summaries carry, and it is only as "
    "sensitive as the bootstrap over the suite's compactions allows: a smaller loss than the one stated under "
    "'What this suite detects' (measured by `compactlab baseline`) passes."
)


def template_name(template: str, folder: Path) -> str:
    """A template as a person names it: relative to the suite's folder, else as configured."""
    path = Path(template)
    if path.is_absolute():
        try:
            return path.relative_to(folder.resolve()).as_posix()
        except ValueError:
            return path.as_posix()
    return template


def prompt_records(suite: Suite, answers: Answers | None) -> dict[str, dict]:
    """label -> {"templates": {name: hash}, "read_by": "provider:model" | None} for the suite's settings."""
    records = {}
    for strategy in suite.config.strategies:
        templates = prompt_templates(get_strategy(strategy.strategy, **dict(strategy.settings)))
        read = answers is not None and any(templates.values())
        records[strategy.label] = {
            "templates": {template_name(t, suite.path.parent): template_hash(t) for t in templates},
            "read_by": answers.model if read and answers is not None else None,
        }
    return records


def unmeasured(
    suite: Suite,
    records: dict[str, dict],
    answers: Answers | None,
    baseline: dict | None,
    baseline_path: Path,
    cause: str = "",
) -> list[str]:
    """Why this run cannot stand as a result (one line each); [] when it can. `cause`: why recorded
    answers of unchanged templates were not found, when known ("the summarizer's model changed")."""
    problems = []
    before = (baseline or {}).get("strategies", {})
    changed: dict[str, list[str]] = {}  # template -> settings whose hash differs and no model read it
    for label, now in records.items():
        old = before.get(label, {})
        if baseline is not None and old.get("read_by") and not now["read_by"]:
            problems.append(
                f"`{label}`: the baseline's summaries were written by model {old['read_by']}, this run's by none "
                "(no [summarizer], or the extractive stand-in): the two cannot be compared"
            )
        if baseline is None or now["read_by"]:
            continue
        # By content: a template moved or copied unchanged is the same prompt.
        old_templates = old.get("templates", {})
        new = [name for name, h in now["templates"].items() if h not in old_templates.values()]
        gone = [name for name, h in old_templates.items() if h not in now["templates"].values()]
        for name in new or gone:
            changed.setdefault(name, []).append(label)
    for name, labels in changed.items():
        problems.append(
            f"{name} changed since the baseline (settings {', '.join(labels)}), but no model read it: the extractive "
            "stand-in reads no prompt, so the change was not measured (only the template's file lists were)"
        )
    if answers is not None and answers.missing:
        names = {h: name for now in records.values() for name, h in now["templates"].items()}
        recorded = {h for r in before.values() for h in r.get("templates", {}).values()}
        changed_any = baseline is not None and any(h not in recorded for h in answers.missing)
        for prompt_hash, count in sorted(answers.missing.items(), key=lambda item: -item[1]):
            name = names.get(prompt_hash, "a template")
            state = "" if baseline is None else " unchanged" if prompt_hash in recorded else " changed"
            why = ""
            if state == " unchanged":  # its requests differ all the same: what they summarize changed
                why = (
                    f" ({cause})"
                    if cause
                    else " (they summarize what the changed template's summaries left)"
                    if changed_any
                    else " (the conversations it summarizes changed: the replay, a strategy or the data)"
                )
            problems.append(f"{name}{state}: {count} summar{'y needs' if count == 1 else 'ies need'} a model{why}")
    if problems:
        problems.append(_what_to_do(suite, answers, baseline_path, baseline is None))
    return problems


def _what_to_do(suite: Suite, answers: Answers | None, baseline_path: Path, making_baseline: bool) -> str:
    update = f"`compactlab baseline --suite {suite.path} --baseline {baseline_path} --update`"
    if making_baseline and answers is not None:
        return (
            f"what to do: a baseline's summaries come from a model: run it with the key set ({answers.why_not} now); "
            f"it records every answer in {answers.folder}, which CI then replays (commit it)"
        )
    if answers is None:
        return (
            "what to do: configure a [summarizer] (provider, model, api_key_env; `compactlab init` writes one), set the "
            f'strategies\' `summarizer = "llm"`, and run {update} with the key set: its answers are recorded beside '
            "the suite (cache_dir) and CI checks from them with no key"
        )
    return (
        f"what to do: the answers are not recorded in {answers.folder} and this run could not ask for them "
        f"({answers.why_not}): run the check with the key set (it records them), or {update} if the change is "
        f"deliberate; commit {answers.folder.name}/"
    )


def scope_lines(records: dict[str, dict], answers: Answers | None) -> list[str]:
    """What this check could and could not detect, for its markdown."""
    read = sorted({name for r in records.values() if r["read_by"] for name in r["templates"]})
    unread = sorted({name for r in records.values() if not r["read_by"] for name in r["templates"]} - set(read))
    lines = []
    if read and answers is not None:
        source = "live, answers recorded" if answers.sends else f"from recorded answers only ({answers.why_not})"
        lines.append(f"Prompt templates read by model {answers.model} ({source}): {', '.join(read)}.")
    if unread:
        lines.append(
            f"Prompt templates no model read: {', '.join(unread)}. Their summaries come from the extractive stand-in, which "
            "reads no prompt: only their file lists are measured, and a change to them exits 2."
        )
    lines.append(SENSITIVITY_NOTE)
    return lines
