"""Tests of the sessions stage: the importers, the canonical model, bad and damaged input."""
