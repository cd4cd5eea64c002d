"""Whether two source trees' segments detector gives the same analysis, configuration by
configuration.

Speed work must not move a result unnoticed: this runs ``SegmentDetector().analyse`` (the
defaults) on every configuration of the recorded corpus (``benchmarks/data/segments``, both
halves, 1 s and 5 s windows × the ``db`` and ``all`` CPU, read as
``benchmarks/segments_accuracy.py`` reads them; runs ``h21`` and later are left out: a fresh
held-out batch not to be read) and on ``benchmarks/segmentation.py``'s simulated detector
frames (``--sizes``), once with another tree's ``src`` first on PYTHONPATH and once with this
tree's, each in its own process. Per configuration it prints whether the analysis is the same
— every field of the segmentation, the pieces, the anomalies, the periods and their CPU
models, the signatures, the boundaries (cuts, kinds, types named, CPU cost shifts, own-latency
steps), the findings (kinds, severities, explanations, evidence) and the warnings — with
numbers equal to ``--rtol`` (relative), and whether it is bit-for-bit the same (one digest).
The segmentation's ``evaluated`` (a count of work done, not a result) is left out. Then each
tree's CPU seconds, summed and per configuration.

Run: .venv/bin/python benchmarks/segments_same.py --compare /work/main/src [--sizes 1800]
[--only c01 h03] [--no-corpus]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import datetime as dt  # noqa: E402
import enum  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
OWN_SRC = HERE.parent / "src"
CORPUS = HERE / "data" / "segments"
FRESH = 21  # h21 and later: the fresh held-out batch, never read here
SKIP = {"detector", "evaluated"}  # the detector's settings; a count of work, not a result


def held_back(run: str) -> bool:
    """A run of the fresh held-out batch (``h21`` and later)."""
    match = re.fullmatch(r"h(\d+)", run)
    return match is not None and int(match.group(1)) >= FRESH


def corpus_runs(only: list[str]) -> list[str]:
    runs = [
        p.name
        for p in sorted(CORPUS.iterdir())
        if (p / "truth.json").exists() and not held_back(p.name)
    ]
    return [r for r in runs if not only or r in only]


def frames(only: list[str], sizes: list[int], corpus: bool) -> Iterator[tuple[str, Any]]:
    """(name, workload frame) of every configuration compared, in a fixed order."""
    from perfsleuth.cli.inputs import WorkloadFormat, workload_source
    from perfsleuth.sources.load import read_source

    sys.path.insert(0, str(HERE))
    import segmentation as speed

    if corpus:
        for run in corpus_runs(only):
            for window_s in (1, 5):
                for cpu in ("db", "all"):
                    spec = workload_source(
                        [CORPUS / run / f"agg_{window_s}s.csv"],
                        WorkloadFormat.aggregated,
                        cpu=CORPUS / run / f"cpu_{cpu}.csv",
                    )
                    yield f"{run} {window_s}s {cpu}", read_source(spec)[0]
    for m in sizes:
        design, y, truth, changed = speed.make_data(m)
        yield f"simulated M={m}", speed.detector_frame(design, y, truth, changed)


def plain(value: Any) -> Any:
    """The analysis as JSON-able nested lists and dicts (floats kept as floats)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name not in SKIP
        }
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        if np.issubdtype(value.dtype, np.datetime64):
            return [str(v) for v in value]
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, dt.datetime | pd.Timestamp):
        return value.isoformat()
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    return value


def dump(only: list[str], sizes: list[int], corpus: bool, path: Path) -> None:
    """Analyse every configuration with whatever ``perfsleuth`` imports; write JSON."""
    import perfsleuth
    from perfsleuth.segments.detector import SegmentDetector

    logging.getLogger("perfsleuth").setLevel(logging.ERROR)
    results: dict[str, Any] = {"source": str(Path(perfsleuth.__file__).parent)}
    for name, frame in frames(only, sizes, corpus):
        started = time.process_time()
        analysis = SegmentDetector().analyse(frame)
        seconds = time.process_time() - started
        tree = plain(analysis)
        text = json.dumps(tree, sort_keys=True)  # float reprs round-trip: equal text, equal bits
        results[name] = {
            "analysis": tree,
            "digest": hashlib.sha256(text.encode()).hexdigest(),
            "cpu": seconds,
        }
    path.write_text(json.dumps(results))


def differences(a: Any, b: Any, rtol: float, where: str = "") -> Iterator[str]:
    """Where two plain analyses differ beyond ``rtol`` (relative, for numbers)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                yield f"{where}.{key} only on one side"
            else:
                yield from differences(a[key], b[key], rtol, f"{where}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield f"{where}: {len(a)} → {len(b)} items"
        else:
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                yield from differences(x, y, rtol, f"{where}[{i}]")
    elif isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        if a != b and abs(a - b) > rtol * max(abs(a), abs(b)):
            yield f"{where}: {a!r} → {b!r}"
    elif a != b:
        yield f"{where}: {str(a)[:80]!r} → {str(b)[:80]!r}"


def compare(other: Path, only: list[str], sizes: list[int], corpus: bool, rtol: float) -> int:
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, src in (("other", other), ("this", OWN_SRC)):
            out = Path(tmp) / f"{label}.json"
            env = {**os.environ, "PYTHONPATH": str(src)}
            cmd = [sys.executable, __file__, "--dump", str(out), "--sizes"]
            cmd += [",".join(map(str, sizes)), "--only", *only]
            cmd += [] if corpus else ["--no-corpus"]
            subprocess.run(cmd, check=True, env=env)
            runs[label] = json.loads(out.read_text())
    before, after = runs["other"], runs["this"]
    print(f"other: {before.pop('source')}")
    print(f"this:  {after.pop('source')}")
    differ = exact = 0
    cpu_before = cpu_after = 0.0
    for name, old in before.items():
        new = after[name]
        cpu_before += old["cpu"]
        cpu_after += new["cpu"]
        found = list(differences(old["analysis"], new["analysis"], rtol))
        bits = old["digest"] == new["digest"]
        differ += bool(found)
        exact += bits
        verdict = "same" if not found else "DIFFERENT"
        detail = "bit-for-bit" if bits else f"within {rtol:g}" if not found else found[0]
        speed = f"{old['cpu']:.2f} → {new['cpu']:.2f} s CPU"
        print(f"{verdict:<9}  {name:<18}  {speed:<22}  ({detail})")
        for line in found[1:6]:
            print(f"{'':>31}{line}")
    n = len(before)
    print(f"{n - differ} of {n} configurations give the same analysis (numbers to {rtol:g})")
    print(f"{exact} of {n} configurations give bit-for-bit the same analysis")
    ratio = cpu_before / cpu_after if cpu_after > 0 else math.inf
    print(f"CPU: other {cpu_before:.1f} s, this {cpu_after:.1f} s ({ratio:.2f}× less)")
    return 1 if differ else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", type=Path, help="the other tree's src directory")
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default="1800", help="simulated frames' window counts")
    parser.add_argument("--only", nargs="*", default=[], help="corpus runs (default: all)")
    parser.add_argument("--no-corpus", action="store_true", help="the simulated frames only")
    parser.add_argument("--rtol", type=float, default=1e-9)
    args = parser.parse_args()
    sizes = [int(v) for v in args.sizes.split(",") if v]
    only = [r for r in args.only if not held_back(r)]
    if args.dump:
        dump(only, sizes, not args.no_corpus, args.dump)
    elif args.compare:
        sys.exit(compare(args.compare, only, sizes, not args.no_corpus, args.rtol))
    else:
        parser.error("give --compare SRC")


if __name__ == "__main__":
    main()
