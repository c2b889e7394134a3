"""The runnable scripts, none of them in the installed package: every measurement (the figures the
docs state, the speed checks, the engine oracles, the labelled samples), the tools that regenerate
committed data (`bundle_datasets`, `fit_calibration`, `preset_table`), and those that drive compactlab
from outside with what only tests/ holds (the wire-format fake providers, the damaged-input cases, the
gate's test suites). Run each from a checkout as `python -m tests.scripts.NAME` (an engine oracle:
`python -m tests.scripts.oracles.NAME`).

They live here, not in bench/, because the wheel ships bench/ as compactlab and does not ship tests/:
a user installs the benchmark, not the measurements of it. What the product needs from a measurement
lives in its stage (the prompt-size rows of a run's report: `compactlab.replay.prompt_size_errors`).
"""
