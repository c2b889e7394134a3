"""Tests of the compaction engine: triggers, events, guards."""
