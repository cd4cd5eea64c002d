"""Seeded simulators for demo, tests and benchmarks; nothing is downloaded."""

from perfsleuth.datasets.mm1 import MM1Run, simulate_mm1
from perfsleuth.datasets.transactions import (
    Fault,
    TransactionRun,
    WorkloadShift,
    simulate_transactions,
    transaction_scenario,
)

__all__ = [
    "Fault",
    "MM1Run",
    "TransactionRun",
    "WorkloadShift",
    "simulate_mm1",
    "simulate_transactions",
    "transaction_scenario",
]
