"""The replay stage: a session replayed call by call through the engine with a strategy."""
