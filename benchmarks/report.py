"""Time to write the HTML report with a 10⁴-point series per finding (DESIGN §4: ≤ 2 s).

Run: .venv/bin/python benchmarks/report.py
There is no peer tool that writes this report, so the time is printed against the target.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from perfsleuth.findings import Evidence, Finding, Kind, Severity
from perfsleuth.report import write_html

TARGET_S = 2.0


def main() -> None:
    n, findings_count = 10_000, 5
    start = pd.Timestamp("2024-05-01T00:00:00Z")
    times = start + pd.to_timedelta(np.arange(n), unit="s")
    rng = np.random.default_rng(0)
    frames, findings = [], []
    for k in range(findings_count):
        entity = f"svc-{k}"
        values = rng.gamma(2.0, 0.01, n) * np.where(np.arange(n) < n // 2, 1.0, 1.5)
        frames.append(
            pd.DataFrame(
                {"time": times, "entity": entity, "metric": "rt", "value": values, "unit": "s"}
            )
        )
        at = times[n // 2].to_pydatetime()
        findings.append(
            Finding(
                kind=Kind.CHANGE_POINT,
                entity=entity,
                metric="rt",
                start=at,
                end=at,
                severity=Severity.WARNING,
                explanation="mean rose by 50%",
                evidence=(Evidence("index", n // 2),),
                detector="bench",
            )
        )
    series = pd.concat(frames, ignore_index=True)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.html"
        write_html(path, findings[:1], series=series)  # warm-up: imports, plotly.js read
        began = time.perf_counter()
        write_html(path, findings, series=series)
        elapsed = time.perf_counter() - began
        size = path.stat().st_size
    print(
        f"report, {findings_count} findings × {n:,}-point series: {elapsed:.3f} s "
        f"(target ≤ {TARGET_S} s for one; {elapsed / findings_count:.3f} s per finding), "
        f"{size / 1e6:.1f} MB"
    )


if __name__ == "__main__":
    main()
