"""Tests of the strategies: each strategy's invariants and each preset's rules on real sessions."""
