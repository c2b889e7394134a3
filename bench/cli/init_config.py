"""`compactlab init`: a commented compactlab.toml and a CI suite skeleton to start from.

The configuration is written from the schema (`compactlab.runs.config_schema`), so every key it shows is one
loading accepts, with its type, default and meaning; the keys a first run needs are set (to a
bundled dataset, so it runs as written), the others are commented out. The suite is a run
configuration plus the metrics a CI gate guards (`bench/gate/suite.py`), ready for `compactlab baseline`:
its summarizer comes from the environment and its recorded answers live beside it (`bench/gate/answers.py`).
"""

from __future__ import annotations

from pathlib import Path

from compactlab.runs.config_schema import TABLE_HELP, Key, keys_of
from compactlab.strategies.prompt_files import bundled_path, imported_files

CONFIG_NAME = "compactlab.toml"
SUITE_NAME = "ci/compactlab-suite.toml"
STARTER_DATASET = "mini-swe-agent-v1"  # small and bundled, so the file runs as written

_HEAD = f"""# compactlab run configuration: `compactlab run --config {CONFIG_NAME}` (or `compactlab sweep --config ...`).
# Every key compactlab reads is listed here with its type and default; lines starting with # are off.
# `compactlab strategies` lists the strategies, presets and their settings.
"""

ANSWERS_DIR = "compactlab-suite-answers"  # the suite's recorded answers, beside it
SUITE_TEMPLATES = ("summary.j2",)  # the templates the suite names, written beside it with what they import

_SUITE = f"""# compactlab CI suite: a run configuration plus the metrics a regression gate guards.
#   compactlab baseline --suite {SUITE_NAME} --baseline ci/compactlab-baseline.json   (once, with the key set)
#   compactlab check    --suite {SUITE_NAME} --baseline ci/compactlab-baseline.json   (in CI)
# Commit the baseline and ci/{ANSWERS_DIR}/. check exits 0 when no metric regressed, 1 on a
# regression, 2 when it has no result: a configuration error (e.g. a metric it cannot measure), a prompt
# template changed that no model read, or summaries with no recorded answer and no key to ask for them.
#
# The summaries are written by the [summarizer] model, which is what reads the prompt templates (without one,
# the extractive stand-in writes them and reads no prompt). Every answer is recorded in {ANSWERS_DIR}/: CI
# replays them with no key and no network; a request a change made new is sent when the key is set (a CI
# secret), and without it the check exits 2 counting the summaries that need a model. Provider, model and key
# variable come from the environment (COMPACTLAB_PROVIDER, COMPACTLAB_MODEL, COMPACTLAB_KEY_ENV,
# COMPACTLAB_BASE_URL), with these defaults. Paths are relative to this file. Every key of compactlab.toml is
# accepted here too.

datasets = ["{STARTER_DATASET}"]   # your own sessions: a folder, e.g. "../sessions"
window = 12000   # simulated: small enough that the sessions compact often (the check's power comes from compactions)

[summarizer]
provider = "${{COMPACTLAB_PROVIDER:-openai}}"          # openai (or an OpenAI-compatible server) or anthropic
model = "${{COMPACTLAB_MODEL:-gpt-4.1-mini}}"
api_key_env = "${{COMPACTLAB_KEY_ENV:-OPENAI_API_KEY}}"  # the variable holding the key
base_url = "${{COMPACTLAB_BASE_URL:-}}"                # unset: the provider's own API
cache_dir = "{ANSWERS_DIR}"             # the recorded answers: commit them

[[strategy]]
name = "summarize"
label = "summarize-70"
trigger = {{ fraction = 0.7 }}
settings = {{ summarizer = "llm", template = "summary.j2" }}   # ci/summary.j2, yours to edit (a path relative to this file)

[[strategy]]
name = "observation-masking"

# One table per guarded metric (names: the columns in `compactlab run`'s sessions.csv).
# direction: which way is better; tolerance: a change smaller than this never fails the check.
[metrics.removed_share]
direction = "higher"
tolerance = 0.01

[metrics.preservation_or_untouched]
direction = "higher"
tolerance = 0.02

# What the summaries carry: of the facts the next five steps used that a compaction dropped, the share the
# summary kept. Its baseline is small (10-30%), so its tolerance is also relative: a quarter of the baseline,
# the stricter of the two applying; a fall by half fails, and so does any guarded metric falling to 0.
# `compactlab baseline` measures the smallest loss the suite detects (by resampling its compactions), records
# it, and refuses a suite that cannot detect a loss of twice its tolerance; `check` states it. On the bundled
# sessions at this window, with a model that follows the prompt, it detects a loss of about half the recall.
[metrics.summary_recall_k5]
direction = "higher"
tolerance = 0.05
relative_tolerance = 0.25

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
    """Write compactlab.toml, the suite skeleton and the templates it names (with their imports) into
    `folder`; an existing file is kept unless `force`."""
    targets = {Path(folder) / CONFIG_NAME: config_text(), Path(folder) / SUITE_NAME: _SUITE}
    suite_folder = (Path(folder) / SUITE_NAME).parent
    for name in SUITE_TEMPLATES:
        for source in (bundled_path(name), *imported_files(name)):
            targets[suite_folder / source.name] = source.read_text(encoding="utf-8")
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
