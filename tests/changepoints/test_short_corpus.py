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
