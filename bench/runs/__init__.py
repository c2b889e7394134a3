"""The runs stage: run configuration, running and sweeping, a run's files and stored rows."""
