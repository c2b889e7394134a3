"""The CI gate: a suite of sessions and the check that a change did not make compaction worse."""
