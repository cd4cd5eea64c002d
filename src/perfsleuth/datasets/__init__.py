"""Seeded simulators for demo, tests and benchmarks; nothing is downloaded."""

from perfsleuth.datasets.mm1 import MM1Run, simulate_mm1

__all__ = ["MM1Run", "simulate_mm1"]
