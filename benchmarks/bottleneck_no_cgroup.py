"""The collector without a cgroup, as ``tests/bottleneck/test_importers.py``'s real collection:
the machine-wide counters sampled 7 times, 0.4 s apart, while two ``while True: pass`` burners
run; util(cpu) and P(cpu) of each recording's window (issue 20's flake: once in 12-60 runs a
burst of disk writes made the burners other tenants' CPU, util(cpu) 0.24).

    machine heavy .venv/bin/python benchmarks/bottleneck_no_cgroup.py record DIR [N]
    .venv/bin/python benchmarks/bottleneck_no_cgroup.py analyse DIR

``record`` stores N (default 60) frames as ``DIR/run<k>.parquet``; ``analyse`` prints the
smallest and median util(cpu), the windows below 0.5 and the smallest P(cpu) (run it with
another tree's ``src`` on PYTHONPATH for a side-by-side on the same frames).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from perfsleuth.bottleneck.detector import BottleneckDetector
from perfsleuth.collect.collector import Collector
from perfsleuth.store import Store


def record(out: Path, n: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for k in range(n):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "collected.duckdb"
            burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in "ab"]
            try:
                with Store(path) as store:
                    collector = Collector(store, node="here", batch=100, with_io=False)
                    for _ in range(7):
                        collector.sample()
                        time.sleep(0.4)
                    collector.flush()
            finally:
                for p in burners:
                    p.kill()
                    p.wait()
            with Store(path, read_only=True) as store:
                store.read_frame("counter").to_parquet(out / f"run{k}.parquet")


def analyse(folder: Path) -> None:
    detector = BottleneckDetector(window=pd.Timedelta(minutes=1), min_utilisation=0.1)
    rows = []
    for path in sorted(folder.glob("run*.parquet"), key=lambda p: int(p.stem[3:])):
        inference = detector.analyse(pd.read_parquet(path)).windows[0].inference
        rows.append((path.stem, inference.util("cpu"), inference.p("cpu")))
    utils = sorted(u for _, u, _ in rows)
    low = [f"{name} {u:.3f} (P {p:.3f})" for name, u, p in rows if u < 0.5]
    median, p_min = utils[len(utils) // 2], min(p for *_, p in rows)
    print(f"{len(rows)} recordings: util(cpu) min {utils[0]:.3f}, median {median:.3f}; ", end="")
    print(f"below 0.5: {', '.join(low) or 'none'}; P(cpu) min {p_min:.3f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["record"]:
        record(Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 60)
    elif sys.argv[1:2] == ["analyse"]:
        analyse(Path(sys.argv[2]))
    else:
        sys.exit(__doc__)
