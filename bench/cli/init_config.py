"""`compactlab init`: a commented compactlab.toml and a CI suite skeleton to start from.

The configuration is written from the schema (`compactlab.runs.config_schema`), so every key it shows is one
loading accepts, with its type, default and meaning; the keys a first run needs are set (to a
bundled dataset, so it runs as written), the others are commented out. The suite is a run
configuration plus the metrics a CI gate guards (`bench/gate/suite.py`), ready for `compactlab baseline`.
"""

from __future__ import annotations

from pathlib import Path

from compactlab.runs.config_schema import TABLE_HELP, Key, keys_of

CONFIG_NAME = "compactlab.toml"
SUITE_NAME = "ci/compactlab-suite.toml"
STARTER_DATASET = "mini-swe-agent-v1"  # small and bundled, so the file runs as written

_HEAD = f"""# compactlab run configuration: `compactlab run --config {CONFIG_NAME}` (or `compactlab sweep --config ...`).
# Every key compactlab reads is listed here with its type and default; lines starting with # are off.
# `compactlab strategies` lists the strategies, presets and their settings.
"""

_SUITE = f"""# compactlab CI suite: a run configuration plus the metrics a regression gate guards.
#   compactlab baseline --suite {SUITE_NAME} --baseline ci/compactlab-baseline.json   (once; commit the file)
#   compactlab check    --suite {SUITE_NAME} --baseline ci/compactlab-baseline.json   (in CI)
# check exits 0 when no metric regressed, 1 on a regression, 2 on a configuration error (a metric
# that cannot be measured, such as a cost when no model of the data has a price, is one).
# Paths are relative to this file. Every key of compactlab.toml is accepted here too.

datasets = ["{STARTER_DATASET}"]   # your own sessions: a folder, e.g. "../sessions"
window = 32000

[[strategy]]
name = "summarize"
label = "summarize-70"
trigger = {{ fraction = 0.7 }}

[[strategy]]
name = "observation-masking"

# One table per guarded metric (names: the columns in `compactlab run`'s transcripts.csv).
# direction: which way is better; tolerance: a change smaller than this never fails the check.
[metrics.removed_share]
direction = "higher"
tolerance = 0.01

[metrics.preservation_or_untouched]
direction = "higher"
tolerance = 0.02

# [metrics.unrecoverable_loss]  # facts the next steps needed, lost and not re-readable (docs/recoverability.md)
# direction = "lower"
# tolerance = 0.02

# [metrics.total_cost]          # only when every model of the datasets has a price ([prices."MODEL"])
# direction = "lower"
# tolerance = 0.05
# relative = true               # tolerance as a share of the baseline mean

[gate]                           # the paired bootstrap that decides a regression
confidence = 0.95
resamples = 10000
seed = 0
"""


def _line(key: Key, on: bool) -> list[str]:
    example = key.example
    if key.table == "" and key.name == "datasets":
        example = f'["{STARTER_DATASET}"]'
    name = '"my-model"' if key.name == "MODEL" else key.name
    return [f"# {key.description} ({key.type}; default: {key.default})", f"{'' if on else '# '}{name} = {example}"]


def config_text() -> str:
    lines = [_HEAD.rstrip(), ""]
    for key in keys_of(""):
        lines += _line(key, key.enabled)
    lines += ["", f"# {TABLE_HELP['strategy']}; without any, every built-in offline strategy is replayed.", "[[strategy]]"]
    for key in keys_of("strategy"):
        lines += _line(key, key.enabled)
    lines += ["", "[[strategy]]", 'name = "codex"                   # a preset: a real agent\'s design, trigger and estimator']
    for table, header in (
        ("context_windows", "[context_windows]"),
        ("prices.MODEL", '[prices."my-model"]'),
        ("summarizer", "[summarizer]"),
        ("judge", "[judge]"),
    ):
        lines += ["", f"# {TABLE_HELP[table]}", f"# {header}"]
        for key in keys_of(table):
            lines += _line(key, False)
    return "\n".join(lines) + "\n"


def write_init(folder: Path, force: bool = False) -> list[Path]:
    """Write compactlab.toml and the suite skeleton into `folder`; an existing file is kept unless `force`."""
    targets = {Path(folder) / CONFIG_NAME: config_text(), Path(folder) / SUITE_NAME: _SUITE}
    existing = [path for path in targets if path.exists()]
    if existing and not force:
        raise ValueError(
            f"{', '.join(map(str, existing))} exist{'s' if len(existing) == 1 else ''}: "
            "pass --force to replace, or choose another folder"
        )
    for path, text in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(targets)
