"""Measurement scripts: speed, footprint and the figures the README and issues quote, each rerunnable with `python -m`."""
