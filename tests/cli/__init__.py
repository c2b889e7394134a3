"""Tests of the command line as a user runs it: commands, inputs, outputs, limits."""
