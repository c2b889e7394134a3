"""Tests of the results stage: the metric catalogue, the recommendation rule, figures on every surface."""
