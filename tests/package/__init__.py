"""Tests of the package as a whole: layers, dependencies, public API, wheel, documentation, plugin."""
