"""The replay stage: a transcript replayed call by call through the engine with a strategy."""
