"""Tests of the CI gate: check, baseline, its sensitivity, a suite with a model."""
