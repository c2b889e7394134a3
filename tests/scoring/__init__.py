"""Tests of the scoring stage: preservation, the model judge, drift, recoverability, statistics."""
