"""Change points on public real annotated series: perfsleuth's defaults against the peers.

Corpus (nothing here is tuned per series; every method runs with its defaults):

* ``nab`` — the 24 series of NAB ``realKnownCause`` and ``realAWSCloudwatch`` with their
  labelled anomaly windows (``labels/combined_windows.json``), the issue's reference set;
* ``nab-other`` — the other 23 real NAB series (``realAdExchange``, ``realTraffic``,
  ``realTweets``), labelled the same way;
* ``machine`` — this project's own recordings with injected, timed events
  (``benchmarks/data/changepoints``, made by ``scripts/collect_operational_series.py``);
* ``events`` — short series from R's ``strucchange`` package whose change points are documented
  events: Boston youth homicides and Operation Ceasefire (May 1996), German M1 and the monetary
  union (1990 Q3), the Grossarl parish series and the dated moral, political and marriage
  regulations (the ``morals``/``politics``/``nuptiality`` factors shipped with the data);
* ``short`` — 41 short (24–646 points) public real series with change points documented outside
  any benchmark: the four ``events`` series (in their ``events`` halves) and 37 more from R's
  datasets and CRAN packages (``benchmarks/changepoints_short.py`` lists each series, its
  licence and the reference for its annotation), read from fetched snapshots under ``--mirror``.

NAB (MIT licence) and strucchange (GPL-2/3) are read from their public repositories
(``numenta/NAB``, ``cran/strucchange``) as checked out or as bare git snapshots (``--nab``,
``--strucchange``); nothing of them is copied into this repository. A group whose source is
missing is skipped with a note. The NAB ``.rda`` files need ``pyreadr``.

Halves: within each group the series are sorted by name and alternate between ``tune`` (even
positions) and ``held-out`` (odd); in ``short`` each batch of series added alternates on its own
(``changepoints_short.py``), so the halves of the earlier ones stay. Only the ``tune`` half was
looked at while choosing the defaults; both are printed.

Methods: ``perfsleuth`` (``find_change_points(values)``, defaults); ``binseg-default``, binary
segmentation with its default penalty as the change-point literature's benchmarks run it: R
``changepoint``'s ``cpt.mean(x, method="BinSeg")`` with every other default (Normal cost with unit
variance, ``penalty="MBIC"``: 3 ln n, each segment's cost + ln length; ``Q = 5``, ``minseglen =
1``) on the series standardised to mean 0 and standard deviation 1, ported line by line from the
package's C code (``cran/changepoint``: ``src/BinSeg_one_func_minseglen.c``); ``zero``, no change
point at all (what a series with no annotated change rewards); ruptures ``Pelt`` and
``Binseg`` with ``model="l2"``, ruptures' default ``min_size``/``jump`` and the usual BIC
penalty ``σ̂² ln n`` (σ̂ robust, from first differences); Apache Otava
(``compute_change_points`` with its defaults: window 50, p ≤ .001) when ``otava`` imports;
``bocd`` (Bayesian online change-point detection, Adams & MacKay 2007; constant hazard 1/100,
Student-t predictive with a unit normal-gamma prior, data standardised robustly; a change
point wherever the most probable run length drops).

Scores:

* point annotations (``machine``, ``events``): F1 with a margin of 5 observations and the
  covering metric, as defined by van den Burg & Williams (2020, "An evaluation of change point
  detection algorithms"): index 0 counts as a change point in both sets, each annotation
  matches at most one detection;
* window annotations (NAB): windows hit (a detection inside the window), the share of
  detections outside every window, and a window F1 (precision = share inside, recall = share
  of windows hit; a series with no window and no detection scores 1). NAB labels anomalies, not
  only changes of level, so perfsleuth's detections there are everything its detector shows an
  operator: the change points and the spike findings (``ChangePoints.notable_spikes()``, each at
  its most extreme reading), both counted in the ``points`` / ``spikes`` columns; the point
  annotations are scored on the change points alone.

Run: ``.venv/bin/python benchmarks/changepoints_accuracy.py [--methods perfsleuth,pelt,...]
[--groups nab,events] [--per-series]``
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import io  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
import pandas as pd  # noqa: E402

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Detections:
    """What a method reports beyond change points: ``spikes``, the indices of the spike
    findings an operator sees (perfsleuth: the most extreme observation of each spike run of
    ``ChangePoints.notable_spikes()``, the ``DEFAULT_TOP_SPIKES`` largest apart from the change
    points)."""

    points: Sequence[int]
    spikes: Sequence[int] = ()


Detector = Callable[[FloatArray], Sequence[int] | Detections]

MACHINE = Path(__file__).resolve().parent / "data" / "changepoints"
NAB_DEFAULT = Path("/work/.mirror/numenta+NAB/repo")
STRUCCHANGE_DEFAULT = Path("/work/.mirror/cran+strucchange/repo")
MIRROR_DEFAULT = Path("/work/.mirror")
MARGIN = 5
NAB_ISSUE = ("realKnownCause", "realAWSCloudwatch")
NAB_OTHER = ("realAdExchange", "realTraffic", "realTweets")


# -- reading a repository, checked out or bare --------------------------------------------------


class Repo:
    """Files of a public repository: a working tree or a bare git directory (HEAD)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bare = not (path / "data").exists() and (path / "HEAD").exists()

    def exists(self) -> bool:
        return self.path.exists()

    def read(self, name: str) -> bytes:
        if not self.bare:
            return (self.path / name).read_bytes()
        out = subprocess.run(
            ["git", f"--git-dir={self.path}", "show", f"HEAD:{name}"],
            check=True,
            capture_output=True,
        )
        return out.stdout

    def listing(self, folder: str) -> list[str]:
        if not self.bare:
            return sorted(f"{folder}/{p.name}" for p in (self.path / folder).iterdir())
        out = subprocess.run(
            ["git", f"--git-dir={self.path}", "ls-tree", "--name-only", f"HEAD:{folder}"],
            check=True,
            capture_output=True,
            text=True,
        )
        return sorted(f"{folder}/{line}" for line in out.stdout.split())


# -- the corpus -----------------------------------------------------------------------------------


@dataclass
class Case:
    group: str
    name: str
    values: FloatArray
    points: list[int] | None = None  # annotated change points (first index of a new segment)
    windows: list[tuple[int, int]] | None = None  # labelled windows [start, stop] (inclusive)
    half: str = ""

    @property
    def n(self) -> int:
        return len(self.values)


def load_nab(repo: Repo, categories: Sequence[str], group: str) -> list[Case]:
    labels = json.loads(repo.read("labels/combined_windows.json"))
    cases = []
    for category in categories:
        for name in repo.listing(f"data/{category}"):
            frame = pd.read_csv(io.BytesIO(repo.read(name)))
            times = pd.to_datetime(frame["timestamp"]).to_numpy()
            windows = []
            for lo, hi in labels[name.removeprefix("data/")]:
                a = int(np.searchsorted(times, np.datetime64(pd.Timestamp(lo)), "left"))
                b = int(np.searchsorted(times, np.datetime64(pd.Timestamp(hi)), "right")) - 1
                windows.append((a, b))
            values = frame["value"].to_numpy(dtype=float)
            cases.append(Case(group, Path(name).stem, values, windows=windows))
    return cases


def load_machine(data: Path = MACHINE) -> list[Case]:
    truth = json.loads((data / "truth.json").read_text())
    cases = []
    for name, info in truth["series"].items():
        values = pd.read_csv(data / info["file"])["value"].to_numpy(dtype=float)
        cases.append(Case("machine", name, values, points=[int(i) for i in info["change_indices"]]))
    return cases


def load_events(repo: Repo) -> list[Case]:
    import pyreadr  # only this group needs it

    def frame(name: str) -> pd.DataFrame:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{name}.rda"
            path.write_bytes(repo.read(f"data/{name}.rda"))
            return next(iter(pyreadr.read_r(str(path)).values()))

    cases = []
    boston = frame("BostonHomicide")  # monthly from January 1992; Ceasefire: late spring 1996
    cases.append(
        Case("events", "boston_homicides", boston["homicides"].to_numpy(float), points=[52])
    )
    m1 = pd.DataFrame(frame("GermanM1"))  # quarterly from 1961 Q1; monetary union 1990-07
    cases.append(Case("events", "german_m1", m1["m"].to_numpy(float), points=[118]))
    grossarl = frame("Grossarl")  # yearly from 1700; the factors date the interventions

    def changes(*columns: str) -> list[int]:
        out: set[int] = set()
        for column in columns:
            v = grossarl[column].astype(str).to_numpy()
            out.update(i for i in range(1, len(v)) if v[i] != v[i - 1])
        return sorted(out)

    cases.append(
        Case(
            "events",
            "grossarl_illegitimate_fraction",
            grossarl["fraction"].to_numpy(float),
            points=changes("morals", "politics"),
        )
    )
    cases.append(
        Case(
            "events",
            "grossarl_marriages",
            grossarl["marriages"].to_numpy(float),
            points=changes("nuptiality", "politics"),
        )
    )
    return cases


def load_short(mirror: Path, sc_repo: Repo) -> tuple[list[Case], list[str]]:
    """The ``short`` group: its own series alternate between the halves by name, each batch on
    its own; the ``events`` series keep their ``events`` halves (part of them was tuned on)."""
    from changepoints_short import load_short as series_of

    batches, notes = series_of(mirror)
    cases = []
    for found in batches:
        batch = [Case("short", name, values, points=points) for name, values, points, _ in found]
        for i, case in enumerate(sorted(batch, key=lambda c: c.name)):
            case.half = "tune" if i % 2 == 0 else "held-out"
        cases += batch
    if sc_repo.exists():
        for i, case in enumerate(sorted(load_events(sc_repo), key=lambda c: c.name)):
            case.group, case.half = "short", "tune" if i % 2 == 0 else "held-out"
            cases.append(case)
    else:
        notes.append("short: the events series skipped, no strucchange (--strucchange)")
    return sorted(cases, key=lambda c: c.name), notes


def corpus(
    nab: Path, strucchange: Path, groups: Sequence[str], mirror: Path = MIRROR_DEFAULT
) -> tuple[list[Case], list[str]]:
    notes, cases = [], []
    nab_repo, sc_repo = Repo(nab), Repo(strucchange)
    for group in groups:
        if group == "short":
            part, more = load_short(mirror, sc_repo)
            cases += part
            notes += more
            continue
        if group in ("nab", "nab-other") and not nab_repo.exists():
            notes.append(f"{group}: skipped, no NAB at {nab} (--nab)")
            continue
        if group == "events" and not sc_repo.exists():
            notes.append(f"events: skipped, no strucchange at {strucchange} (--strucchange)")
            continue
        if group == "nab":
            part = load_nab(nab_repo, NAB_ISSUE, group)
        elif group == "nab-other":
            part = load_nab(nab_repo, NAB_OTHER, group)
        elif group == "machine":
            part = load_machine()
        elif group == "events":
            part = load_events(sc_repo)
        else:
            raise SystemExit(f"unknown group {group!r}")
        for i, case in enumerate(sorted(part, key=lambda c: c.name)):
            case.half = "tune" if i % 2 == 0 else "held-out"
            cases.append(case)
    return cases, notes


# -- scores (van den Burg & Williams 2020) ----------------------------------------------------


def _true_positives(truth: set[int], found: set[int], margin: int) -> int:
    left = set(found)
    hits = 0
    for tau in sorted(truth):
        close = sorted((abs(tau - x), x) for x in left if abs(tau - x) <= margin)
        if close:
            hits += 1
            left.remove(close[0][1])
    return hits


def f1_margin(truth: Sequence[int], found: Sequence[int], margin: int = MARGIN) -> float:
    """F1 of one annotator, index 0 counted in both sets."""
    t, x = {0, *truth}, {0, *found}
    tp = _true_positives(t, x, margin)
    precision, recall = tp / len(x), tp / len(t)
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def _partition(points: Sequence[int], n: int) -> list[tuple[int, int]]:
    bounds = sorted({0, *(p for p in points if 0 < p < n), n})
    return list(itertools.pairwise(bounds))


def covering(truth: Sequence[int], found: Sequence[int], n: int) -> float:
    """How well the found segments cover the annotated ones (Jaccard, length-weighted)."""
    mine = _partition(found, n)
    total = 0.0
    for a, b in _partition(truth, n):
        best = 0.0
        for c, d in mine:
            inter = max(0, min(b, d) - max(a, c))
            if inter:
                best = max(best, inter / (max(b, d) - min(a, c)))
        total += (b - a) * best
    return total / n


# -- methods ----------------------------------------------------------------------------------


def noise_sigma(x: FloatArray) -> float:
    d = np.diff(x)
    centred = np.abs(d - np.median(d))
    for spread in (1.4826 * np.median(centred), 1.2533 * np.mean(centred), np.std(d)):
        if spread > 0:
            return float(spread / math.sqrt(2))
    return 1.0


def perfsleuth_defaults(x: FloatArray) -> Detections:
    return perfsleuth_with({})(x)


def perfsleuth_with(options: dict[str, float]) -> Callable[[FloatArray], Detections]:
    """perfsleuth with some options changed (``--variant min_effect=2,penalty=5``); its spike
    findings are those of :class:`~perfsleuth.ChangePointDetector` (``top_spikes`` largest spike
    runs of each series, or ``top_spikes=K`` among the options)."""
    from perfsleuth import find_change_points
    from perfsleuth.changepoints.kernels.results import DEFAULT_TOP_SPIKES

    chosen = dict(options)
    top = int(chosen.pop("top_spikes", DEFAULT_TOP_SPIKES))

    def detect(x: FloatArray) -> Detections:
        result = find_change_points(x, **chosen)  # type: ignore[arg-type]
        return Detections(list(result.indices), [r.index for r in result.notable_spikes(top)])

    return detect


def binseg_default(x: FloatArray) -> list[int]:
    """R ``changepoint::cpt.mean(x, method="BinSeg")`` with its defaults, on ``x`` standardised.

    A port of ``binseg`` in the package's ``src/BinSeg_one_func_minseglen.c`` with the
    ``mean.norm.mbic`` cost (a segment costs its sum of squares about its mean plus ln of its
    length) and the MBIC penalty 3 ln n: Q = 5 greedy splits, each the largest gain over all
    segments; the first q splits whose gains (made non-increasing) reach the penalty are kept.
    """
    n = len(x)
    spread = float(np.std(x, ddof=1)) if n > 1 else 0.0
    z = (x - x.mean()) / spread if spread > 0 else x - x.mean()
    s1, s2 = np.r_[0.0, np.cumsum(z)], np.r_[0.0, np.cumsum(z * z)]

    def cost(a: int, b: int) -> float:  # observations a..b-1
        length = b - a
        total = s1[b] - s1[a]
        return float(s2[b] - s2[a] - total * total / length + math.log(length))

    q_max, min_len, penalty = 5, 1, 3 * math.log(n)
    if n < 4 or q_max > n / min_len + 1:
        return []
    bounds, gains, found = [0, n], [], []
    previous = math.inf
    for _ in range(q_max):
        best, where = 0.0, 0  # the C code starts every position at 0 and keeps the first max
        for a, b in itertools.pairwise(bounds):
            whole = cost(a, b)
            # the C loop: 2 <= j <= n - 3, left part a..j-1 longer than minseglen (its test
            # is on j - st with st 1-based), right part at least minseglen long
            for j in range(max(a + min_len + 1, 2), min(b - min_len, n - 3) + 1):
                gain = 0.5 * (whole - cost(a, j) - cost(j, b))
                if gain > best:
                    best, where = gain, j
        previous = min(previous, best)
        gains.append(previous)
        found.append(where)
        bounds = sorted({*bounds, where})
    kept = 0
    while kept < q_max and 2 * gains[kept] >= penalty:
        kept += 1
    return sorted(p for p in found[:kept] if 0 < p < n)


def zero(x: FloatArray) -> list[int]:
    """No change point: the score of saying nothing."""
    return []


def ruptures_bic(search: str) -> Detector:
    def detect(x: FloatArray) -> list[int]:
        import ruptures as rpt

        cls = {"binseg": rpt.Binseg, "pelt": rpt.Pelt}[search]
        pen = noise_sigma(x) ** 2 * math.log(len(x))
        return [int(b) for b in cls(model="l2").fit(x).predict(pen=pen) if b < len(x)]

    return detect


def otava_defaults(x: FloatArray) -> list[int]:
    from otava.analysis import compute_change_points

    points, _weak = compute_change_points(list(x))
    return sorted(int(p.index) for p in points)


def bocpd(x: FloatArray) -> list[int]:
    from bocd import BayesianOnlineChangePointDetection, ConstantHazard, StudentT

    med = float(np.median(x))
    spread = 1.4826 * float(np.median(np.abs(x - med))) or float(np.std(x)) or 1.0
    z = (x - med) / spread
    model = BayesianOnlineChangePointDetection(ConstantHazard(100), StudentT(0.0, 1.0, 1.0, 1.0))
    found, previous = [], 0
    for t, value in enumerate(z):
        model.update(value)
        run = int(model.rt[0])
        if run < previous and t + 1 - run > 0:
            found.append(t + 1 - run)
        previous = run
    return sorted({p for p in found if 0 < p < len(x)})


def available_methods() -> tuple[dict[str, Detector], list[str]]:
    table: dict[str, Detector] = {
        "perfsleuth": perfsleuth_defaults,
        "binseg-default": binseg_default,
        "zero": zero,
        "pelt-l2 BIC": ruptures_bic("pelt"),
        "binseg-l2 BIC": ruptures_bic("binseg"),
    }
    notes = []
    try:
        import otava.analysis  # noqa: F401

        table["otava"] = otava_defaults
    except ImportError as exc:
        notes.append(f"otava: not available ({exc}); pip install apache-otava")
    try:
        import bocd  # noqa: F401

        table["bocpd"] = bocpd
    except ImportError as exc:
        notes.append(f"bocpd: not available ({exc}); pip install bocd")
    return table, notes


# -- running ----------------------------------------------------------------------------------


@dataclass
class Row:
    series: int = 0
    points: int = 0
    spikes: int = 0  # spike findings (window groups count them as detections)
    windows: int = 0
    hit: int = 0
    inside: int = 0
    f1: list[float] = field(default_factory=list)
    cover: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def add(
        self, case: Case, points: Sequence[int], spikes: Sequence[int], seconds: float
    ) -> dict[str, float]:
        """Score one series: change points against annotated points; change points and spike
        findings (everything an operator is shown) against labelled anomaly windows."""
        self.series += 1
        self.points += len(points)
        self.spikes += len(spikes)
        self.seconds += seconds
        out: dict[str, float] = {"points": len(points), "spikes": len(spikes), "seconds": seconds}
        found = points
        if case.windows is not None:
            found = [*points, *spikes]
            inside = sum(any(a <= p <= b for a, b in case.windows) for p in found)
            hit = sum(any(a <= p <= b for p in found) for a, b in case.windows)
            self.windows += len(case.windows)
            self.hit += hit
            self.inside += inside
            precision = inside / len(found) if found else 1.0
            recall = hit / len(case.windows) if case.windows else 1.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            self.f1.append(f1)
            out.update(hit=hit, windows=len(case.windows), f1=f1)
        if case.points is not None:
            f1, cover = f1_margin(case.points, points), covering(case.points, points, case.n)
            self.f1.append(f1)
            self.cover.append(cover)
            out.update(f1=f1, cover=cover)
        return out

    def cells(self) -> list[str]:
        hit = f"{self.hit}/{self.windows}" if self.windows else "–"
        found = self.points + self.spikes
        outside = f"{1 - self.inside / found:.0%}" if self.windows and found else "–"
        cover = f"{np.mean(self.cover):.3f}" if self.cover else "–"
        return [
            str(self.series),
            str(self.points),
            str(self.spikes),
            hit,
            outside,
            f"{np.mean(self.f1):.3f}" if self.f1 else "–",
            cover,
            f"{self.seconds:.1f}",
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nab", type=Path, default=NAB_DEFAULT)
    parser.add_argument("--strucchange", type=Path, default=STRUCCHANGE_DEFAULT)
    parser.add_argument("--mirror", type=Path, default=MIRROR_DEFAULT, help="fetched snapshots")
    parser.add_argument("--groups", default="nab,nab-other,machine,events,short")
    parser.add_argument("--methods", default="", help="comma-separated substrings")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="also run perfsleuth with these options, e.g. min_effect=2,penalty=5",
    )
    parser.add_argument("--half", choices=("tune", "held-out"), help="only this half")
    parser.add_argument("--per-series", action="store_true")
    parser.add_argument(
        "--summarise",
        type=Path,
        help="print the table from the --per-series lines of an earlier run (e.g. one cut short)",
    )
    args = parser.parse_args()
    if args.summarise:
        print_table(*from_log(args.summarise))
        return

    cases, notes = corpus(args.nab, args.strucchange, args.groups.split(","), args.mirror)
    if args.half:
        cases = [c for c in cases if c.half == args.half]
    table, more = available_methods()
    notes += more
    for variant in args.variant:
        options = {k: float(v) for k, v in (kv.split("=") for kv in variant.split(","))}
        table[f"perfsleuth {variant}"] = perfsleuth_with(options)
    if args.methods:
        wanted = args.methods.split(",")
        table = {k: v for k, v in table.items() if any(w in k for w in wanted)}
    rows: dict[tuple[str, str, str], Row] = {}
    for case in cases:
        for name, detect in table.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                found = detect(case.values)
                seconds = time.perf_counter() - t0
            if not isinstance(found, Detections):
                found = Detections(found)
            points = sorted(int(p) for p in found.points)
            spikes = sorted(int(p) for p in found.spikes)
            for key in ((case.group, case.half, name), (case.group, "both", name)):
                out = rows.setdefault(key, Row()).add(case, points, spikes, seconds)
            if args.per_series:
                detail = " ".join(f"{k}={v:.3g}" for k, v in out.items())
                print(f"{case.group:9} {case.half:8} {case.name:42} {name:14} {detail}")
    print_table(rows, list(table))
    for note in notes:
        print("note:", note)


def print_table(rows: dict[tuple[str, str, str], Row], methods: list[str]) -> None:
    header = ["group", "half", "method", "series", "points", "spikes", "windows hit", "outside",
              "F1", "cover", "seconds"]  # fmt: skip
    lines = [header]
    halves = {"tune": 0, "held-out": 1, "both": 2}
    for (group, half, name), row in sorted(
        rows.items(), key=lambda kv: (kv[0][0], halves[kv[0][1]], methods.index(kv[0][2]))
    ):
        lines.append([group, half, name, *row.cells()])
    widths = [max(len(r[i]) for r in lines) for i in range(len(header))]
    print()
    for r in lines:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def from_log(path: Path) -> tuple[dict[tuple[str, str, str], Row], list[str]]:
    """Rows rebuilt from ``--per-series`` lines: group, half, series, method, key=value..."""
    rows: dict[tuple[str, str, str], Row] = {}
    methods: list[str] = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) < 5 or parts[1] not in ("tune", "held-out") or "=" not in line:
            continue
        group, half = parts[0], parts[1]
        name = " ".join(p for p in parts[3:] if "=" not in p)
        v = {k: float(x) for k, x in (p.split("=") for p in parts[3:] if "=" in p)}
        if name not in methods:
            methods.append(name)
        for key in ((group, half, name), (group, "both", name)):
            row = rows.setdefault(key, Row())
            row.series += 1
            row.points += int(v["points"])
            row.spikes += int(v.get("spikes", 0))
            row.seconds += v["seconds"]
            if "windows" in v:
                row.windows += int(v["windows"])
                row.hit += int(v["hit"])
                # inside = points · precision, recovered from the window F1 and recall
                recall = v["hit"] / v["windows"] if v["windows"] else 1.0
                f1 = v["f1"]
                precision = f1 * recall / (2 * recall - f1) if 2 * recall - f1 > 0 else 0.0
                found = v["points"] + v.get("spikes", 0)
                row.inside += round(precision * found) if found else 0
            if "f1" in v:
                row.f1.append(v["f1"])
            if "cover" in v:
                row.cover.append(v["cover"])
    return rows, methods


if __name__ == "__main__":
    main()
