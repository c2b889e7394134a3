"""Scripts that drive compactlab from outside and need what only tests/ holds: the wire-format fake
providers, the damaged-input cases, the gate's test suites. Run each as `python -m tests.scripts.NAME`.

A script that needs nothing from tests/ lives in bench/measure/ (`python -m compactlab.measure.NAME`);
these cannot, because the package never imports tests/ and the wheel does not ship it.
"""
