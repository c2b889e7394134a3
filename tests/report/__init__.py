"""Tests of the report: the run report as HTML and in a browser, the estimation page."""
