"""Pipeline: run strategies in order until the context is under the target."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compactlab.contract import CompactionFailed, CompactionRequest, CompactionResult, Context, Strategy, fallback_note
from compactlab.sessions.model import LLMCall
from compactlab.strategies.base import named_strategy, setting, strategy_setting


@dataclass(frozen=True)
class Pipeline:
    """Run stages in order (cheap first, truncate as the last resort), stopping once under the target.

    Each stage is a registered strategy name, a `path/to/file.py:Name` reference (built with the
    pipeline by `compactlab.strategies.registry`, so a user's own strategies compose too) or a strategy
    object. After every stage the context is measured with the request's counter; at or under
    `request.target_tokens` the pipeline stops (`stop_when_under_target`). The result adds up the
    stages: messages removed, every summarizer call, the last prompt hash, the notes joined by "; ".
    A stage that raises `CompactionFailed` is noted and skipped (`skip_failed_stages`) so that a
    later stage can still compact; if every stage that ran failed, the last failure is raised.
    """

    name = "pipeline"
    source: ClassVar[str] = (
        "layered compaction as production agents do it: opencode prunes tool outputs before summarizing; "
        "truncation as the last resort"
    )

    stages: tuple[str | Strategy, ...] = strategy_setting(
        ("prune", "summarize", "truncate"), "strategies to run in order: registered names or path/to/file.py:Name"
    )
    stop_when_under_target: bool = setting(True, "stop as soon as the context is at or under the engine's target")
    skip_failed_stages: bool = setting(True, "when a stage fails (CompactionFailed), note it and go on to the next stage")

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        if not self.stages:
            return CompactionResult(context=context, messages_removed=0, note="nothing to do: the pipeline has no stages")
        current = context
        removed = 0
        calls: list[LLMCall] = []
        prompt_hash: str | None = None
        notes: list[str] = []
        failures: list[CompactionFailed] = []
        ran = 0
        for stage in self.stages:
            strategy = named_strategy(stage, "a pipeline stage")
            label = stage if isinstance(stage, str) else getattr(stage, "name", type(stage).__name__)
            ran += 1
            try:
                result = strategy.compact(current, request)
            except CompactionFailed as exc:
                if not self.skip_failed_stages:
                    raise
                failures.append(exc)
                notes.append(fallback_note(f"{label} failed ({exc})", "went on to the next stage"))
                continue
            current = result.context
            removed += result.messages_removed
            calls.extend(result.summarizer_calls)
            prompt_hash = result.prompt_hash or prompt_hash
            notes.append(f"{label}: {result.note}" if result.note else label)
            if self.stop_when_under_target:
                tokens = request.prompt_size(current.messages)
                if tokens <= request.target_tokens:
                    if ran < len(self.stages):
                        notes.append(f"under target ({tokens:,} <= {request.target_tokens:,}) after {label}")
                    break
        if failures and len(failures) == ran:
            raise CompactionFailed("; ".join(notes)) from failures[-1]
        return CompactionResult(
            context=current,
            messages_removed=removed,
            summarizer_calls=tuple(calls),
            prompt_hash=prompt_hash,
            note="; ".join(notes),
        )
