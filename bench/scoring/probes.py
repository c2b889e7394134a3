"""Probe questions about a compacted context, graded by a judge model (optional; see next_action).

Four kinds, each with a question and a reference answer taken deterministically from the recorded
history, so no model writes the questions:

    recall        "What file did the agent modify most recently?"   the last file a tool call wrote
    artifact      "Which files has the agent created or modified?"  every file tool calls wrote (up to 20)
    continuation  "What is the agent's next step?"                  the recorded next action
    decision      "What plan, conclusion or decision did the agent
                   state most recently?"                             the last assistant text of 40+ characters

A kind without a reference in this history (no file written yet) is not asked. The model answers
from the context; the judge (a yes/no prompt with a per-kind criterion) grades the answer against
the reference; an answer that says neither yes nor no is recorded as None. Each probe is asked on
the full history and on the compacted context, like the next action, so a weak model's misses
on the full history can be told apart from what the compaction lost.

Limits: references are heuristics (file activity is read off tool-call arguments and shell
command lines, so a file written by a script is missed; the "decision" is the last long assistant
text, which may be an aside); the judge is a model with its own errors and leniency; answers and
references are cut to 500 characters in rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from compactlab.scoring.actions import ANSWER_CHARS, Action
from compactlab.scoring.next_action import DEFAULT_MAX_OUTPUT_TOKENS, Completer, ask
from compactlab.sessions.messages import file_activity
from compactlab.sessions.model import Message, TextPart, ThinkingPart
from compactlab.strategies.prompting import serialize

PROBE_KINDS = ("recall", "artifact", "continuation", "decision")
ANSWER_SYSTEM = "Answer a question about an AI agent's conversation from what the conversation shows. If it does not show the answer, say you do not know."
ANSWER_PROMPT = "<conversation>\n{conversation}\n</conversation>\n\nQuestion: {question}\nAnswer briefly."
GRADE_SYSTEM = "You grade an answer against a reference answer. Reply with yes or no only."
GRADE_PROMPT = "Question: {question}\nReference answer: {reference}\nCandidate answer: {answer}\n\nDoes the candidate answer {criterion}? Reply yes or no."


@dataclass(frozen=True)
class Probe:
    kind: str
    question: str
    reference: str
    criterion: str  # what the judge checks: "Does the candidate answer <criterion>?"


@dataclass(frozen=True)
class ProbeVerdict:
    probe: Probe
    answer: str
    verdict: bool | None  # None: the judge answered neither yes nor no
    cost_usd: float | None = None


def _last_modified(history: Sequence[Message]) -> str | None:
    for message in reversed(history):
        if modified := file_activity([message]).modified:
            return modified[-1]
    return None


def _last_statement(history: Sequence[Message]) -> str | None:
    for message in reversed(history):
        if message.role == "assistant":
            for part in reversed(message.parts):
                if isinstance(part, (TextPart, ThinkingPart)) and len(part.text.strip()) >= 40:
                    return part.text.strip()[:ANSWER_CHARS]
    return None


def probe_questions(history: Sequence[Message], recorded: Sequence[Action], kinds: Sequence[str] = PROBE_KINDS) -> list[Probe]:
    """The probes of `kinds` that have a reference in this history (deterministic, no model)."""
    unknown = sorted(set(kinds) - set(PROBE_KINDS))
    if unknown:
        raise ValueError(f"unknown probe kinds {unknown}; known: {list(PROBE_KINDS)}")
    modified = file_activity(history).modified
    references = {
        "recall": (
            _last_modified(history),
            "What file did the agent modify most recently? Give its path.",
            "name the same file (the same path, or clearly the same file)",
        ),
        "artifact": (
            ", ".join(modified[:20]),
            "Which files has the agent created or modified so far? List their paths.",
            "name at least half of the files in the reference",
        ),
        "continuation": (
            " or ".join(a.render() for a in recorded)[:ANSWER_CHARS],
            "What is the agent's next step? Name the tool it calls and the main argument, or the message it sends.",
            "describe the same action (the same tool and essentially the same target or command)",
        ),
        "decision": (
            _last_statement(history),
            "What was the most recent plan, conclusion or decision the agent stated?",
            "state essentially the same plan, conclusion or decision",
        ),
    }
    return [
        Probe(kind, question, reference, criterion)
        for kind in kinds
        for reference, question, criterion in [references[kind]]
        if reference
    ]


def probe(
    completer: Completer,
    judge: Completer,
    context: Sequence[Message],
    question: Probe,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
) -> ProbeVerdict:
    """`completer` answers `question` from `context`; `judge` grades the answer against the reference."""
    prompt = ANSWER_PROMPT.format(conversation=serialize(context), question=question.question)
    answer, cost = ask(completer, ANSWER_SYSTEM, prompt, max_output_tokens)
    answer = answer.strip()
    grading = GRADE_PROMPT.format(
        question=question.question, reference=question.reference, answer=answer[: ANSWER_CHARS * 4], criterion=question.criterion
    )
    grade, grade_cost = ask(judge, GRADE_SYSTEM, grading, max_output_tokens)
    found = re.search(r"\b(yes|no)\b", grade.lower())
    total = None if cost is None or grade_cost is None else cost + grade_cost
    return ProbeVerdict(question, answer[:ANSWER_CHARS], None if found is None else found.group(1) == "yes", total)


def probe_entries(questions: Sequence[Probe], verdicts: Sequence[ProbeVerdict]) -> list[dict]:
    """Row entries of the judge's probes: `verdicts` holds each question's verdict on the full
    history, then on the compacted context (the order `next_action.score_compactions` asks them in)."""
    entries = []
    for question, full, mine in zip(questions, verdicts[::2], verdicts[1::2]):
        costs = (full.cost_usd, mine.cost_usd)
        entries.append(
            {
                "kind": question.kind,
                "question": question.question,
                "reference": question.reference,
                "full": full.verdict,
                "compacted": mine.verdict,
                "full_answer": full.answer,
                "compacted_answer": mine.answer,
                "cost_usd": None if None in costs else sum(costs),  # type: ignore[arg-type]
            }
        )
    return entries
