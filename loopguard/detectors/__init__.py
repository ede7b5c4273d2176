"""Detectors: incremental pattern matchers over steps, each with bounded state."""
