"""What `run` and `sweep` print and add to summary.json around the verdict: the window it is at, the
stress verdict beside a real-window one that rests on too few compactions, the triggers a simulated
window rescales, and the next command for every dead end, built from the user's own arguments."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from compactlab.results.recommendation import MIN_KEPT
from compactlab.runs.next_command import CommandLine
from compactlab.runs.next_steps import changed, next_steps
from compactlab.runs.run_files import write_atomic
from compactlab.runs.stress_verdict import STRESS_WINDOW, second_verdict, stress_verdict, why_stress
from compactlab.runs.sweep import DEFAULT_STRATEGIES, DEFAULT_THRESHOLDS
from compactlab.runs.verdict_window import SCALED


def command_line(command: str, args: argparse.Namespace) -> CommandLine:
    """The user's command as parsed (abbreviated flags written in full), with what shapes its results."""
    flags = {
        "--config": [args.config] if args.config else None,
        "--dataset": args.dataset,
        "--window": None if args.window is None else [args.window],
        "--context-window": args.context_window,
        "--estimator": [args.estimator] if args.estimator else None,
        "--lenient": args.lenient,
        "--limit": None if args.limit is None else [args.limit],
        "--strategy": getattr(args, "strategy", None),
    }
    if command == "sweep":  # the grid's flags where the user set them (their defaults need not be spelt out)
        flags |= {
            "--strategy": None if args.strategy == list(DEFAULT_STRATEGIES) else args.strategy,
            "--thresholds": None if args.thresholds == list(DEFAULT_THRESHOLDS) else [f"{t:g}" for t in args.thresholds],
            "--keep": args.keep,
            "--min-preservation": None if args.min_preservation == MIN_KEPT else [f"{args.min_preservation:g}"],
        }
    return CommandLine.of(command, flags, args.out)


def add_stress_verdict(document: dict, result, config, out: Path, command: CommandLine, run_options: dict) -> None:
    """Where a real-window verdict rests on too few compactions, the same sessions at a simulated window
    into OUT/stress-N/ (offline runs only: an LLM run names the command instead of spending on it)."""
    why = why_stress(document, result.sessions)
    if why is None:
        return
    if run_options.get("summarizer") is not None or config.judge:
        document["stress_verdict"] = {
            "window": STRESS_WINDOW,
            "why": why,
            "command": changed(command, "--window", STRESS_WINDOW),
        }
        return
    options = {k: v for k, v in run_options.items() if k in ("resume", "progress", "executor", "workers", "limit")}
    document["stress_verdict"] = stress_verdict(config, out, why, **options)


def finish_document(document: dict, out: Path, command: CommandLine) -> None:
    """summary.json, with the next steps of its dead ends, written."""
    document["next_steps"] = [step.as_json() for step in next_steps(document, command)]
    write_atomic(out / "summary.json", json.dumps(document, indent=2, default=str) + "\n")


def verdict_lines(document: dict, out: Path) -> list[str]:
    """The window line, the stress verdict, the rescaled triggers and the next steps, as printed."""
    lines = []
    window = document.get("verdict_window") or {}
    if window:
        lines.append(f"window: the verdict is {window['text']}")
    stress = document.get("stress_verdict")
    if stress:
        at = f"at a simulated {stress['window']:,}-token window (a stress test"
        if "recommendation" in stress:
            lines += [f"{stress['why']}; {at}, {out / stress['out']}/):", f"  {second_verdict(stress)}"]
        else:
            lines.append(f"{stress['why']}; {at}): {second_verdict(stress)}")
    scaled = (document.get("windows") or {}).get("scaled_rules", [])
    if scaled:
        lines.append(f"{SCALED}:")
        lines += [f"  {rule}" for rule in scaled]
    for step in document.get("next_steps", []):
        lines.append(f"next: {step['cause']}; try: {step['command']}")
    return lines
