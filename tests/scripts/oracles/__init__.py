"""One module per engine: how to run its own compaction code on a session (`tests.scripts.engine_oracle`)."""
