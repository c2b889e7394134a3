"""The compaction stage: the engine, context-overflow errors, and the LLM clients summarizers call."""
