"""One module per engine: how to run its own compaction code on a session (`compactlab.measure.engine_oracle`)."""
