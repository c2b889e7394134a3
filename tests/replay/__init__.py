"""Tests of the replay: its bookkeeping, the prompt size, the fast path against the plain replay."""
