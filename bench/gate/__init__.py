"""The CI gate: a suite of transcripts and the check that a change did not make compaction worse."""
