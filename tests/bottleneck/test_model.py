"""Model files: the built-in one loads and passes its golden cases; broken ones are refused with
the file, line and key named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfsleuth.bottleneck.kernels.model import load_model
from perfsleuth.errors import ConfigError

SMALL = """
[model]
name = "tiny"

[parameters.rate]
unit = "op/s"
prior = "lognormal"
median = 100
sigma = 2
load = true

[parameters.size]
unit = "B/op"
prior = "uniform"
lower = 512
upper = 1048576

[constants]
cost = { value = 1e-4, unit = "s/op" }

[tables.speed]
x = [1, 100]
y = [1e-9, 2e-9]
x_unit = "1"
y_unit = "s/B"

[[formula]]
name = "bw"
expr = "rate * size"
unit = "B/s"

[[formula]]
name = "busy"
expr = "rate * cost + bw * lookup(speed, 1)"
unit = "1"

[counters.ops]
column = "dev.ops"
expr = "rate"
unit = "op/s"
scale = 1
sd = 0.1

[counters.bytes]
column = "dev.bytes"
expr = "bw"
unit = "B/s"
scale = 1000
sd = 0.1

[resources.dev]
label = "device"
utilisation = "busy"

[load]
streams = [{ label = "requests", rate = "rate" }]

[[golden]]
name = "100 requests of 1000 B"
parameters = { rate = 100, size = 1000 }
expect = { bw = 100000, busy = 0.0101, ops = 100, dev = 0.0101 }
rtol = 1e-12
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "model.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_builtin_model_loads_and_passes_its_golden_cases() -> None:
    model = load_model()
    assert model.name == "linux"
    assert {"cpu", "disk", "memory"} == set(model.resource_names)
    assert len(model.spec.golden) >= 2
    w = model.priors.median_w()
    counters, utils = model.predict(np.vstack([w, w]))
    assert counters.shape == (2, len(model.counters))
    assert utils.shape == (2, 3)
    assert np.isfinite(counters).all() and np.isfinite(utils).all()


def test_small_model_evaluates(tmp_path: Path) -> None:
    model = load_model(write(tmp_path, SMALL))
    w = model.workload({"rate": 10.0, "size": 4096.0})
    counters, utils = model.predict(w[None, :])
    assert counters[0].tolist() == [10.0, 40960.0]
    assert utils[0, 0] == pytest.approx(10 * 1e-4 + 40960 * 1e-9)


def test_with_values_replaces_constants_and_tables(tmp_path: Path) -> None:
    model = load_model(write(tmp_path, SMALL))
    faster = model.with_values({"cost": 0.5e-4}, {"speed": ([1, 100], [0.5e-9, 1e-9])})
    w = model.workload({"rate": 10.0, "size": 4096.0})
    assert faster.predict(w[None, :])[1][0, 0] == pytest.approx(
        0.5 * model.predict(w[None, :])[1][0, 0]
    )
    with pytest.raises(ConfigError, match=r"constants.costt: not a constant.*did you mean 'cost'"):
        model.with_values({"costt": 1.0}, source="profile.toml")


BROKEN = [
    # (what to replace, replacement, message the error must contain)
    (
        'expr = "rate * size"',
        'expr = "rate * sise"',
        r"model.toml:\d+: formula\[0\].expr: "
        r"unknown name 'sise' \(did you mean 'size'\?\)",
    ),
    ('expr = "rate * size"', 'expr = "rate * busy"', r"formulas form a cycle: bw -> busy -> bw"),
    ('expr = "rate * size"', 'expr = "rate + size"', r"formula\[0\].expr: .*units of '\+' differ"),
    ('unit = "B/s"\n', 'unit = "B"\n', r"formula\[0\].expr: the formula is in B/s, declared B"),
    ('expr = "rate * size"', 'expr = "rate.real"', r"formula\[0\].expr: attribute access"),
    ('expr = "rate * size"', 'expr = "__import__(1)"', r"'__import__'"),
    ('expr = "rate * size"', 'expr = "speed * rate"', r"table 'speed' used as a value"),
    ("lookup(speed, 1)", "lookup(sped, 1)", r"lookup of unknown table 'sped'"),
    ("median = 100\n", "", r"model.toml:\d+: parameters.rate: a lognormal prior needs median"),
    ("lower = 512\n", "", r"parameters.size: a uniform prior needs lower and upper"),
    ("upper = 1048576", "upper = 100", r"parameters.size: bounds must satisfy lower < upper"),
    ("y = [1e-9, 2e-9]", "y = [1e-9]", r"tables.speed: x and y must be lists of the same length"),
    ("x = [1, 100]", "x = [100, 1]", r"tables.speed: x must be strictly increasing"),
    (
        'unit = "op/s"\nprior',
        'unit = "ops/sec"\nprior',
        r"parameters.rate.unit: unknown unit 'sec'",
    ),
    (
        "expect = { bw = 100000",
        "expect = { bw = 100001",
        r"model.toml:\d+: golden\[0\]: golden case '100 requests of 1000 B': bw = 100000.0, "
        r"expected 100001.0",
    ),
    ("expect = { bw = 100000", "expect = { bandwidth = 100000", r"nothing named 'bandwidth'"),
    ("parameters = { rate = 100", "parameters = { rat = 100", r"rat: not a parameter"),
    ('name = "bw"', 'name = "rate"', r"'rate' is already defined in parameters"),
    ('name = "bw"', 'name = "exp"', r"'exp' is the name of a function"),
    ('column = "dev.bytes"', 'column = "dev.ops"', r"column 'dev.ops' is already predicted"),
    (
        "sd = 0.1\n\n[resources",
        "sd = -1\n\n[resources",
        r"counters.bytes.sd: Input should be "
        r"greater than 0",
    ),
    ('label = "device"', 'label = "device"\ncolour = "red"', r"resources.dev.colour: Extra inputs"),
    (
        'utilisation = "busy"',
        'utilisation = "bw"',
        r"resources.dev.utilisation: the formula is "
        r"in B/s, declared 1",
    ),
    ("[[golden]]", "[[golden]\n", r"not valid TOML"),
    (
        "[[golden]]",
        '[uncontended]\nlabel = "x"\nset = { rat = 1 }\n\n[[golden]]',
        r"model.toml:\d+: uncontended.set.rat: not a parameter \(did you mean 'rate'\?\)",
    ),
]


@pytest.mark.parametrize(("old", "new", "message"), BROKEN)
def test_broken_models_are_refused_with_file_line_and_key(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    assert old in SMALL
    path = write(tmp_path, SMALL.replace(old, new, 1))
    with pytest.raises(ConfigError, match=message) as info:
        load_model(path)
    assert str(path) in str(info.value)


def test_error_names_the_line_of_the_formula(tmp_path: Path) -> None:
    # an error in a formula's expression names the line of that expression
    text = SMALL.replace('expr = "rate * size"', 'expr = "rate * sise"')
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_model(path)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "rate * sise" in t)
    assert f"model.toml:{line}:" in str(info.value)
    # an error about the whole formula (a cycle) names the line of its [[formula]]
    text = SMALL.replace('expr = "rate * size"', 'expr = "rate * busy"')
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_model(path)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip() == "[[formula]]")
    assert f"model.toml:{line}:" in str(info.value)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read model"):
        load_model(tmp_path / "absent.toml")


def test_workload_checks_names_and_bounds(tmp_path: Path) -> None:
    model = load_model(write(tmp_path, SMALL))
    with pytest.raises(ConfigError, match=r"size: 10\.0 is outside its bounds"):
        model.workload({"size": 10.0})
    with pytest.raises(ConfigError, match="speed: not a parameter"):
        model.workload({"speed": 1.0})


@pytest.mark.parametrize(
    ("app_cpu", "idle_threads", "cpu_grant", "limit", "expected"),
    [
        # alone on 2 CPUs, one thread always running: CPU-bound, though half the machine idles
        (1.0, 0.0, 1.0, 2.0, 1.0),
        # two threads on the CPU 40% of the time, asleep the rest (0.75 of 1.875 threads): 40%
        (0.75, 1.125, 1.0, 2.0, 0.4),
        # starved among co-tenants: a sixth of a core, but always runnable (2 threads, one
        # asleep a twentieth of the time)
        (0.3, 2 / 0.95 - 2, 0.15, 2.0, 0.95),
        # a workload waiting for CPUs: its threads are runnable 30% of the time
        (0.1, 0.5 / 0.3 - 0.5, 0.2, 2.0, 0.3),
        # the whole of its cgroup's quota of half a core
        (0.5, 0.5 / 0.6 - 0.5, 1.0, 0.5, 1.0),
        # most of the machine: 1.8 of 2 cores
        (1.8, 1.8, 1.0, 2.0, 0.9),
    ],
)
def test_cpu_utilisation_is_of_what_the_workload_can_get(
    app_cpu: float, idle_threads: float, cpu_grant: float, limit: float, expected: float
) -> None:
    model = load_model()
    quiet = dict.fromkeys(
        ("seq_read_bw", "seq_write_bw", "rand_read_rate", "rand_write_rate", "app_sys"), 0.0
    )
    w = model.workload(
        {
            **quiet,
            "app_cpu": app_cpu,
            "idle_threads": idle_threads,
            "cpu_grant": cpu_grant,
            "bg_cpu": 0.0,
            "bg_read_bw": 0.0,
        }
    )
    _, utils = model.predict(w[None, :], {"mem_limit": 1 << 30, "cpu_limit": limit})
    cpu = float(utils[0, model.resource_names.index("cpu")])
    assert cpu == pytest.approx(expected, rel=1e-9)


def test_a_threads_time_runnable_is_what_its_io_and_sleep_leave() -> None:
    """Without any counter of the workload's threads, the share of their time they want a CPU
    is their CPU demand (cores used over the grant the run queue implies) against the
    requests they wait for and their sleep: four threads each blocked on a direct read most
    of the time are not CPU-bound, though they wait for a CPU when they wake."""
    model = load_model()
    base = {
        "seq_read_bw": 0.0,
        "seq_write_bw": 0.0,
        "rand_write_rate": 0.0,
        "app_sys": 0.0,
        "app_cpu": 0.0,
        "idle_threads": 0.0,
        "bg_read_bw": 0.0,
        "bg_write_bw": 0.0,
        "bg_cpu": 1.0,
        "cpu_grant": 0.5,
    }
    reader = model.workload(
        {**base, "rand_read_rate": 40000.0, "rand_read_size": 32768.0, "rand_read_direct": 1.0,
         "io_depth": 4.0}
    )  # fmt: skip
    inputs = {"mem_limit": 1 << 30}
    counters, utils = model.predict(reader[None, :], inputs)
    at = {c: i for i, c in enumerate(model.counter_columns)}
    demand = float(model.value("cpu_demand", reader, inputs)[0])
    inflight = float(model.value("wl_inflight", reader, inputs)[0])
    assert 3.0 < inflight < 4.0  # the device is saturated: about its depth of 4 in flight
    runnable = float(counters[0, at["cg.cpu.runnable"]])
    assert runnable == pytest.approx(demand / (demand + inflight), rel=1e-9)
    assert runnable < 0.5
    names = model.resource_names
    assert utils[0, names.index("disk")] > utils[0, names.index("cpu")]
    # the run queue: its demand and the co-tenants' (waiting as long as it does)
    # (and the collector reading it)
    assert counters[0, at["cpu.runqueue"]] == pytest.approx(demand + 1.0 / 0.5 + 1, rel=1e-9)


def test_held_formulas_keep_todays_values_in_a_what_if() -> None:
    """The workload's busy threads and the CPUs it was measured on are the program's, not its
    load's: at three times the load with them held, its CPU use against what its threads
    can get is three times today's runnable share (the utilisation law): saturated;
    recomputed, its threads would grow with the load and the CPU stay short of saturation."""
    model = load_model()
    assert set(model.held) == {"busy_threads", "cpus_measured"}
    w = model.workload(
        {
            **dict.fromkeys(("seq_read_bw", "seq_write_bw", "rand_write_rate", "app_sys"), 0.0),
            "app_cpu": 0.01,
            "cpu_grant": 0.05,
            "idle_threads": 0.5,
            "rand_read_rate": 2000.0,
            "rand_read_direct": 1.0,
        }
    )
    inputs = {"mem_limit": 1 << 30}
    today = model.held_values(w, inputs)
    runnable = float(model.value("runnable", w, inputs)[0])
    more = np.where(model.load_mask, 3 * w, w)
    cpu = model.resource_names.index("cpu")
    held = float(model.predict(more[None, :], inputs, today)[1][0, cpu])
    free = float(model.predict(more[None, :], inputs)[1][0, cpu])
    assert held == pytest.approx(3 * runnable, rel=1e-9)
    assert free < 1.0 < held
    # a held constant is not folded into what reads it: twice the CPUs, today's measured on
    bigger = model.with_values({"ncpu": 2 * model.constants["ncpu"]})
    grant = float(bigger.environment(w[None, :], inputs, today)["thread_grant"][0])
    assert grant == pytest.approx(0.1, rel=1e-9)
