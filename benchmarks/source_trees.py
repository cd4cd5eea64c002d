"""Run one benchmark's measurement in several source trees, each in a fresh interpreter.

A benchmark that compares this tree with another (``--compare SRC``) re-runs itself as a worker
with ``--worker SRC`` in front of ``sys.path``; the worker measures, checks that the perfsleuth it
imported is that tree's, and prints its result as JSON. Used by ``changepoints_joint_jumps.py``
and ``changepoints_jump_scale.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

THIS_TREE = str(Path(__file__).resolve().parent.parent / "src")


def work(tree: str, measure: Callable[[], Any]) -> None:
    """The worker's part: ``measure()`` with ``tree`` first on ``sys.path``, printed as JSON."""
    sys.path.insert(0, tree)
    result = measure()
    import perfsleuth

    if not perfsleuth.__file__ or not perfsleuth.__file__.startswith(tree):
        raise SystemExit(f"measured {perfsleuth.__file__}, not the tree {tree}")
    print(json.dumps(result))


def measured(script: str, other: str | None, *args: str) -> dict[str, Any]:
    """Each tree's result of ``script --worker TREE *args``, by label: ``other`` (when given)
    first, then ``now`` (this tree)."""
    trees = ([("other", other)] if other else []) + [("now", THIS_TREE)]
    results = {}
    for label, src in trees:
        out = subprocess.run(
            [sys.executable, script, "--worker", src, *args],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        results[label] = json.loads(out.stdout.strip().splitlines()[-1])
    return results


def arguments(doc: str) -> argparse.Namespace:
    """A comparing benchmark's options: ``--compare SRC``, ``--reps R`` (200) and the
    worker's own ``--worker TREE``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--compare", help="another source tree (its src directory)")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    return parser.parse_args()


def results(script: str, args: argparse.Namespace, measure: Callable[[], Any]) -> dict[str, Any]:
    """In a worker, measure, print and exit; otherwise each tree's result (:func:`measured`)."""
    if args.worker is not None:
        work(args.worker, measure)
        raise SystemExit(0)
    return measured(script, args.compare, "--reps", str(args.reps))
