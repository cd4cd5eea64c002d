"""The loaders of the short public corpus (benchmarks/changepoints_short.py) and how
benchmarks/changepoints_accuracy.py splits it into halves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import changepoints_accuracy as accuracy  # noqa: E402
import changepoints_short as short  # noqa: E402

MIRROR = Path("/work/.mirror")

# the third batch, annotated from the packages' documentation (the module docstring's table)
THIRD_BATCH = {
    "sweden_accidents_1961": [23, 44],
    "sweden_accidents_1962": [10, 28, 46, 64, 80],
    "crimea_disease_mortality": [12],  # April 1855
    "london_christenings": [13, 32],  # 1642, 1661
    "cholera_soho_attacks": [12],  # 31 August 1854
    "ansett_melbourne_sydney": [112, 119],
    "fmri_cortex1": [16, 32, 48, 64, 80, 96, 112],
    "presidential_approval": [28, 60, 71, 92],
    "us_fertility_rate": [28, 33, 50],  # 1941, 1946, 1963
    "california_accidents_total": [60, 76],  # January 1986, May 1987
    "california_fatal_share": [60, 76],
    "anderson_unemployment_claims": [48],  # January 1984
}


def test_a_missing_snapshot_skips_its_source_with_a_note(tmp_path: Path) -> None:
    batches, notes = short.load_short(tmp_path)
    loaders = [loader for batch in (short.LOADERS, *short.LATER_BATCHES) for loader in batch]
    assert all(batch == [] for batch in batches)
    assert len(notes) == len(loaders)
    assert all("fetch it" in note for note in notes)


def _repo_with(root: Path, repo: str, files: dict[str, str]) -> None:
    work = root / repo.replace("/", "+") / "repo"
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    env = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "add", "."], check=True)
    subprocess.run(["git", "-C", str(work), *env, "commit", "-qm", "data"], check=True)


def test_presidents_leaves_missing_quarters_out_and_dates_the_inaugurations(
    tmp_path: Path,
) -> None:
    quarters = 120  # 1945 Q1 - 1974 Q4
    values = [str(50 + q % 7) for q in range(quarters)]
    for q in (0, 14, 15, 30, 108, 109):  # where R's presidents has NA
        values[q] = "NA"
    text = f'"presidents" <-\nstats::ts(c({", ".join(values)}),\n1945, 1974.75, 4)\n'
    _repo_with(tmp_path, "wch/r-source", {"src/library/datasets/data/presidents.R": text})

    ((name, series, points, _),) = short._presidents(short.Mirror(tmp_path))

    assert name == "presidential_approval"
    assert len(series) == quarters - 6 and np.isfinite(series).all()
    # 1953 Q1, 1961 Q1, 1963 Q4, 1969 Q1 are quarters 32, 64, 75, 96; four NAs come before each
    assert points == [28, 60, 71, 92]
    assert series[28] == 50 + 32 % 7


def _case(name: str) -> tuple[str, np.ndarray, list[int], str]:
    return (name, np.zeros(20), [10], "")


def test_a_later_batch_leaves_the_halves_of_the_earlier_ones(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    first = [_case(n) for n in ("b", "d", "f", "h")]
    later = [_case(n) for n in ("a", "c", "e")]

    def halves(batches: list[list[tuple[str, np.ndarray, list[int], str]]]) -> dict[str, str]:
        monkeypatch.setattr(short, "load_short", lambda root: (batches, []))
        cases, notes = accuracy.load_short(tmp_path, accuracy.Repo(tmp_path / "none"))
        assert notes == ["short: the events series skipped, no strucchange (--strucchange)"]
        return {case.name: case.half for case in cases}

    before, after = halves([first]), halves([first, later])
    assert before == {"b": "tune", "d": "held-out", "f": "tune", "h": "held-out"}
    assert {k: after[k] for k in before} == before
    assert {k: after[k] for k in "ace"} == {"a": "tune", "c": "held-out", "e": "tune"}


@pytest.mark.skipif(not MIRROR.exists(), reason="no fetched snapshots under /work/.mirror")
def test_every_fetched_series_is_short_finite_and_annotated_inside() -> None:
    batches, notes = short.load_short(MIRROR)
    series = [s for batch in batches for s in batch]
    if notes:
        pytest.skip("; ".join(notes))
    names = [name for name, *_ in series]
    assert len(names) == len(set(names)) == 37
    for name, values, points, reference in series:
        bounds = np.diff([0, *points, len(values)])
        assert 15 <= len(values) <= 800, name
        assert np.isfinite(values).all(), name
        assert points == sorted(set(points)) and bounds.min() >= 5, name
        assert reference, name
    assert {s[0]: s[2] for s in batches[-1]} == THIRD_BATCH
