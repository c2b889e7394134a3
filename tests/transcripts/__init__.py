"""Tests of the transcripts stage: the importers, the canonical model, bad and damaged input."""
