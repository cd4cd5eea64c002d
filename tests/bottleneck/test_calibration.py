"""Calibration: regressions recover known machines; profiles round-trip; bad files and busy
machines are refused."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from perfsleuth.bottleneck import measure
from perfsleuth.bottleneck.kernels.calibration import (
    COSTS,
    ERROR_SCALE,
    Measurement,
    apply_profile,
    fit_profile,
    fit_service_time,
    load_profile,
)
from perfsleuth.bottleneck.kernels.model import load_model
from perfsleuth.errors import ConfigError, DataError, NotEnoughDataError

MODEL = load_model()
FIO = Path(__file__).parents[1] / "data" / "bottleneck" / "fio"
MACHINE = {"ncpu": 8.0, "mem_total": 64.0 * 2**30, "mem_reserved": 2.0 * 2**30, "page_size": 4096.0}


def test_service_time_regression_recovers_a_and_b() -> None:
    a, b = 50e-6, 0.8e-9
    sizes = np.array([4096, 65536, 1 << 20], dtype=float)
    iops = 1 / (a + b * sizes)
    fa, fb = fit_service_time(sizes, iops)
    assert fa == pytest.approx(a, rel=1e-6)
    assert fb == pytest.approx(b, rel=1e-6)
    with pytest.raises(NotEnoughDataError):
        fit_service_time([4096, 4096], [10.0, 11.0])


def synthetic_runs(truth: dict[str, float]) -> list[Measurement]:
    """Device runs obeying the model's tables exactly; CPU runs whose system CPU is what the
    model predicts with the ``truth`` atoms."""
    runs = []
    for kind in ("randread", "randwrite"):
        for depth, a, b in ((1, 80e-6, 1.0e-9), (4, 30e-6, 0.8e-9), (16, 20e-6, 0.7e-9)):
            for size in (4096, 65536, 1 << 20):
                iops = 1 / (a + b * size)
                runs.append(Measurement(kind, size, depth, True, iops, iops * size, 0.0, 0.1, 2.0))
    model = MODEL.with_values(truth)
    cpu_jobs = [
        ("randread", 4096, True, 20000.0, math.nan, math.nan),
        ("randread", 262144, True, 3000.0, math.nan, math.nan),
        ("randwrite", 4096, True, 15000.0, math.nan, math.nan),
        ("randwrite", 262144, True, 4000.0, math.nan, math.nan),
        ("randread", 4096, False, 500000.0, 64 * 2**20, math.nan),
        ("randread", 65536, False, 80000.0, 64 * 2**20, math.nan),
        ("read", 1 << 20, False, 2000.0, math.nan, math.nan),
        ("randread", 4096, False, 20000.0, 512 * 2**20, 64 * 2**20),
        ("write", 1 << 20, False, 2000.0, math.nan, math.nan),
    ]
    for kind, size, direct, iops, extent, limit in cpu_jobs:
        m = Measurement(
            kind,
            size,
            2,
            direct,
            iops,
            iops * size,
            0.01,
            0.0,
            2.0,
            role="cpu",
            engine="psync",
            extent=extent,
            memory_limit=limit,
            app_ram=8e6,
        )
        values, inputs = m.workload()
        w = model.workload({k: v for k, v in values.items() if k in model.parameters})
        sys_cpu = float(model.value("sys_cpu", w[None, :], inputs)[0])
        runs.append(
            Measurement(
                kind,
                size,
                2,
                direct,
                iops,
                iops * size,
                0.01,
                sys_cpu,
                2.0,
                role="cpu",
                engine="psync",
                extent=extent,
                memory_limit=limit,
                app_ram=8e6,
            )
        )
    return runs


TRUTH = {
    "cpu_direct_op": 12e-6,
    "cpu_direct_byte": 0.04e-9,
    "cpu_syscall": 0.6e-6,
    "cpu_buffered_read_byte": 0.12e-9,
    "cpu_buffered_write_byte": 0.3e-9,
    "cpu_miss_op": 25e-6,
}


def test_fit_profile_recovers_tables_and_cpu_atoms() -> None:
    profile = fit_profile(MODEL, synthetic_runs(TRUTH), machine=MACHINE, info={"machine": "t"})
    assert profile.constants["ncpu"] == 8.0
    x, y = profile.tables["read_a"]
    assert x == [1.0, 4.0, 16.0]
    np.testing.assert_allclose(y, [80e-6, 30e-6, 20e-6], rtol=1e-6)
    np.testing.assert_allclose(profile.tables["write_b"][1], [1.0e-9, 0.8e-9, 0.7e-9], rtol=1e-6)
    for name in COSTS:
        assert profile.constants[name] == pytest.approx(TRUTH[name], rel=1e-4), name


def test_profile_round_trips_and_applies(tmp_path: Path) -> None:
    profile = fit_profile(MODEL, synthetic_runs(TRUTH), machine=MACHINE, info={"machine": "t"})
    path = profile.save(tmp_path / "profile.toml")
    again = load_profile(path)
    assert again.constants == pytest.approx(profile.constants)
    assert again.measurements == profile.measurements
    calibrated = apply_profile(MODEL, again)
    assert calibrated.constants["ncpu"] == 8.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[constants]\nncpu = 2\n", "profile.model: missing"),
        ('[profile]\nmodel = "linux"\n[constants]\nncpu = "two"\n', "constants.ncpu: expected a"),
        (
            '[profile]\nmodel = "linux"\n[tables.read_a]\nx = [1]\n',
            "tables.read_a: expected exactly x and y",
        ),
        (
            '[profile]\nmodel = "linux"\n[[measurement]]\nkind = "read"\n',
            r"measurement\[0\].size: missing",
        ),
        (
            '[profile]\nmodel = "linux"\n[[measurement]]\nkind = "read"\nsize = "big"\ndepth = 1\n'
            "direct = true\niops = 1\nbw = 1\nusr = 0\nsys = 0\nseconds = 1\n",
            r"measurement\[0\].size: bad value",
        ),
        ('[profile]\nmodel = "linux"\n[extra]\n', "extra: unknown table"),
        ("[profile\n", "not valid TOML"),
    ],
)
def test_bad_profiles_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_profile(path)


def test_profile_for_another_model_or_unknown_names(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('[profile]\nmodel = "windows"\n')
    with pytest.raises(ConfigError, match="calibrates 'windows', not 'linux'"):
        apply_profile(MODEL, load_profile(path))
    path.write_text('[profile]\nmodel = "linux"\n[constants]\nncpus = 4\n')
    with pytest.raises(ConfigError, match=r"p.toml: constants.ncpus: not a constant.*'ncpu'"):
        apply_profile(MODEL, load_profile(path))
    path.write_text('[profile]\nmodel = "linux"\n[tables.read_a]\nx = [2, 1]\ny = [1, 2]\n')
    with pytest.raises(ConfigError, match="x must be strictly increasing"):
        apply_profile(MODEL, load_profile(path))


def test_busy_machine_is_calibrated_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # issue 20: no longer refused; warned, and the profile's errors are wider
    monkeypatch.setattr(measure, "machine_busy", lambda seconds=1.0: 0.65)
    monkeypatch.setattr(measure, "_check_direct", lambda target: None)
    monkeypatch.setattr(measure.Plan, "device_runs", lambda self: [])
    monkeypatch.setattr(measure.Plan, "cpu_jobs", lambda self, path: [])
    said: list[str] = []
    profile = measure.calibrate(MODEL, path=tmp_path / "f.bin", progress=said.append)
    assert any(re.search(r"65% busy.*1\.65x", line) for line in said)
    assert "65% busy" in caplog.text
    assert profile.info[ERROR_SCALE] == "1.650"
    quiet = measure.calibrate(MODEL, path=tmp_path / "f.bin", max_busy=0.9, progress=said.append)
    assert ERROR_SCALE not in quiet.info


@pytest.mark.parametrize("value", ["0.5", "inf", "many", "1e400"])
def test_a_bad_error_scale_names_file_line_and_key(tmp_path: Path, value: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(f'[profile]\nmodel = "linux"\nerror_scale = "{value}"\n')
    with pytest.raises(ConfigError, match=r"p.toml:3: profile.error_scale: expected a number"):
        load_profile(path)


def test_fio_json_results_become_device_runs() -> None:
    runs, skipped = measure.from_fio(FIO)
    assert sorted((m.kind, m.size, m.depth) for m in runs) == [
        ("randread", 4096.0, 1.0),
        ("randread", 4096.0, 4.0),
        ("randread", 65536.0, 1.0),
        ("randread", 65536.0, 4.0),
    ]
    assert all(
        m.direct and m.iops > 0 and m.bw == pytest.approx(m.iops * m.size, rel=0.01) for m in runs
    )
    assert skipped == ["buffered-read.json: job 'buffered': buffered I/O left out (needs direct=1)"]


def test_files_that_are_not_fio_json_are_named(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(
        '{"jobs": [{"jobname": "a", "job options": {"rw": "randread", "direct": "1"}}]}'
    )
    with pytest.raises(DataError, match=r"x.json: job 'a': not fio's JSON output"):
        measure.from_fio(tmp_path)
    (tmp_path / "x.json").write_text("fio: no such file\n")
    with pytest.raises(DataError, match=r"x.json: not fio's JSON output"):
        measure.from_fio(tmp_path)


def test_machine_busy_reads_proc_stat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readings = iter(
        [
            "cpu  100 0 100 800 0 0 0 0 0 0\n",
            "cpu  150 0 150 900 0 0 0 0 0 0\n",  # 100 busy of 200 ticks
        ]
    )

    def fake_read_text(self: Path) -> str:
        return next(readings)

    monkeypatch.setattr(Path, "read_text", fake_read_text)
    assert measure.machine_busy(0.0, proc=tmp_path) == pytest.approx(0.5)


def test_machine_facts_are_plausible() -> None:
    facts = measure.machine_facts()
    assert facts["ncpu"] >= 1
    assert facts["mem_total"] > facts["mem_reserved"] > 0
    assert facts["page_size"] in (4096.0, 16384.0, 65536.0)


def test_plans() -> None:
    assert len(measure.Plan().device_runs()) == 26
    assert len(measure.Plan.quick().device_runs()) == 16
    jobs = measure.Plan().cpu_jobs("/var/tmp/x")
    assert any(limit is not None for _, limit, _ in jobs)
    assert {job.direct for job, _, _ in jobs} == {True, False}


def _device(kind: str, size: float, depth: float, iops: float) -> Measurement:
    return Measurement(kind, size, depth, True, iops, iops * size, 0.0, 0.1, 1.0)


def test_a_disturbed_run_is_found_by_its_neighbours() -> None:
    # seen on a shared VM: 4 KiB writes at depth 1 "slower" than 1 MiB writes
    runs = [
        _device("randwrite", 4096, 1, 391.0),
        _device("randwrite", 1 << 20, 1, 2544.0),
        _device("randwrite", 4096, 8, 20648.0),
        _device("randwrite", 1 << 20, 8, 2714.0),
        _device("randread", 4096, 1, 13333.0),
        _device("randread", 65536, 1, 14000.0),  # within 10%: noise, not a contradiction
        _device("randread", 1 << 20, 1, 746.0),
    ]
    found = measure.contradictions(runs)
    assert [(m.kind, m.size, m.depth) for m in found] == [("randwrite", 4096, 1)]
    assert measure.contradictions(runs[2:4]) == []


def test_calibration_keeps_the_best_run_and_measures_contradictions_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plan = measure.Plan(
        random_sizes=(4096, 1 << 20),
        random_depths=(1,),
        sequential_sizes=(1 << 20,),
        sequential_depths=(1,),
        cpu_runs=False,
        repeats=2,
        retries=2,
    )
    calls: list[tuple[str, int, int]] = []
    disturbed = {("randwrite", 4096, 1): [300.0, 350.0, 9000.0]}  # two bad runs, then a good one

    def fake_run(
        kind: str, size: int, depth: int, target: Path, plan: measure.Plan, device: str, fio: bool
    ) -> Measurement:
        calls.append((kind, size, depth))
        queue = disturbed.get((kind, size, depth))
        iops = queue.pop(0) if queue else 1e9 / (50_000 + size)
        return _device(kind, size, depth, iops)

    monkeypatch.setattr(measure, "machine_busy", lambda seconds=1.0: 0.0)
    monkeypatch.setattr(measure, "block_device_of", lambda path: "vda")
    monkeypatch.setattr(measure, "_device_run", fake_run)
    monkeypatch.setattr(measure, "fio_path", lambda: "/usr/bin/fio")
    monkeypatch.setattr(measure, "fio_version", lambda: "fio-test")
    profile = measure.calibrate(MODEL, path=tmp_path / "f.bin", plan=plan)
    runs = {(m.kind, int(m.size), int(m.depth)): m for m in profile.measurements}
    assert runs["randwrite", 4096, 1].iops == 9000.0
    assert calls.count(("randwrite", 4096, 1)) == 3  # two repeats, one retry
    assert calls.count(("randread", 4096, 1)) == 2
    assert len(runs) == len(plan.device_runs())
