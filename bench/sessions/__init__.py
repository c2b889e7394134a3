"""The sessions stage: the canonical model, importers for real agent logs, sources, the bundled datasets."""
