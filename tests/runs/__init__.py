"""Tests of runs and sweeps: the run directory, resuming, executors, LLM-bound and faulty runs."""
