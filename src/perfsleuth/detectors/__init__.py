"""Detectors: frame in, ``list[Finding]`` out; one module per family."""
