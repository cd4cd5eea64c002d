"""Upgrade advice: maximum throughput, cost per unit of added throughput, the cheapest option
that meets a target."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfsleuth.bottleneck.kernels.model import load_model
from perfsleuth.bottleneck.kernels.upgrades import (
    Catalogue,
    Option,
    analyse_upgrades,
    apply_option,
    load_catalogue,
    max_load,
    uncontended_limit,
)
from perfsleuth.errors import ConfigError

MODEL = load_model()
EXAMPLE = Path(__file__).parents[2] / "src/perfsleuth/bottleneck/examples/upgrades.toml"


def disk_bound() -> np.ndarray:
    """Direct 16 KiB random reads at depth 4 loading the disk, little else."""
    quiet = {
        "seq_read_bw": 0.0,
        "seq_write_bw": 0.0,
        "rand_write_rate": 0.0,
        "bg_cpu": 0.0,
        "bg_read_bw": 0.0,
        "bg_write_bw": 0.0,
        "app_cpu": 0.01,
    }
    return MODEL.workload(
        {
            **quiet,
            "rand_read_rate": 20000.0,
            "rand_read_size": 16384.0,
            "rand_read_direct": 1.0,
            "io_depth": 4.0,
        }
    )


def test_max_load_is_the_inverse_of_a_linear_utilisation() -> None:
    w = disk_bound()
    _, utils = MODEL.predict(w[None, :])
    disk = float(utils[0, MODEL.resource_names.index("disk")])
    factor, limit = max_load(MODEL, w)
    assert limit == "disk"
    assert factor == pytest.approx(1.0 / disk, rel=1e-3)


def test_an_idle_workload_is_capped() -> None:
    w = MODEL.workload(
        {
            "app_cpu": 0.0,
            "seq_read_bw": 0.0,
            "seq_write_bw": 0.0,
            "rand_read_rate": 0.0,
            "rand_write_rate": 0.0,
            "bg_cpu": 0.0,
            "bg_read_bw": 0.0,
            "bg_write_bw": 0.0,
            "app_sys": 0.0,  # no kernel work either: nothing that load would scale
        }
    )
    factor, _ = max_load(MODEL, w)
    assert factor == 1e5


def test_faster_disk_raises_throughput_and_cheapest_meeting_target_wins() -> None:
    options = (
        Option("fast disk", 300.0, "disk", scale={"read_a": 0.5, "read_b": 0.5}),
        Option("ok disk", 100.0, "disk", scale={"read_a": 0.8, "read_b": 0.8}),
        Option("cores", 50.0, "cpu", scale={"ncpu": 2.0}),
    )
    catalogue = Catalogue(options, currency="EUR", max_combined=2)
    w = disk_bound()
    analysis = analyse_upgrades(MODEL, w, catalogue, target_factor=1.5)
    names = {r.name for r in analysis.results}
    assert "fast disk + ok disk" not in names  # same group: exclusive
    assert "fast disk + cores" in names
    by_name = {r.name: r for r in analysis.results}
    assert by_name["cores"].added == pytest.approx(0.0, abs=1e-6 * analysis.base_max_throughput)
    assert by_name["fast disk"].max_throughput == pytest.approx(
        2 * analysis.base_max_throughput, rel=0.01
    )
    assert by_name["ok disk"].max_throughput == pytest.approx(
        analysis.base_max_throughput / 0.8, rel=0.01
    )
    assert analysis.unit == "random reads"
    assert analysis.recommended is not None
    assert analysis.recommended.name == "fast disk"  # 1.25x is short of 1.5x
    assert "fast disk (300 EUR) is the cheapest that meets the target" in analysis.reason()
    # without a target: the best price per added throughput
    free = analyse_upgrades(MODEL, w, catalogue)
    assert free.recommended is not None
    assert free.recommended.cost_per_unit == min(r.cost_per_unit for r in free.results)


def test_no_option_meets_an_impossible_target() -> None:
    catalogue = Catalogue((Option("ok disk", 100.0, "disk", scale={"read_a": 0.8}),))
    analysis = analyse_upgrades(MODEL, disk_bound(), catalogue, target=1e9)
    assert analysis.recommended is None
    assert "no option meets the target" in analysis.reason()


def test_example_catalogue_loads_and_applies() -> None:
    catalogue = load_catalogue(EXAMPLE, MODEL)
    assert catalogue.currency == "EUR"
    assert len(catalogue.options) == 5
    bigger = apply_option(MODEL, next(o for o in catalogue.options if o.name == "twice the cores"))
    assert bigger.constants["ncpu"] == 2 * MODEL.constants["ncpu"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[option]]\nname = "x"\n', r"option.0.price: Field required"),
        ('[[option]]\nname = "x"\nprice = -1\n', r"option.0.price: Input should be greater"),
        ('[[option]]\nname = "x"\nprice = 1\ncolour = "red"\n', "option.0.colour: Extra inputs"),
        (
            '[[option]]\nname = "x"\nprice = 1\n[[option]]\nname = "x"\nprice = 2\n',
            r"option\[1\].name: 'x' appears twice",
        ),
        (
            '[[option]]\nname = "x"\nprice = 1\nscale = { read_a = 0 }\n',
            r"option\[0\].scale.read_a: must be positive",
        ),
        (
            '[[option]]\nname = "x"\nprice = 1\nscale = { reed_a = 2 }\n',
            r"option\[0\] \('x'\): scale.reed_a: not a constant or table",
        ),
        (
            '[[option]]\nname = "x"\nprice = 1\nset = { ncpus = 2 }\n',
            r"option\[0\] \('x'\).*constants.ncpus: not a constant",
        ),
        ('[[option]]\nname = "x"\nprice = 1\nprofile = "absent.toml"\n', "cannot read calibration"),
        ("[catalogue]\n", "option: Field required"),
    ],
)
def test_bad_catalogues_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "cat.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_catalogue(path, MODEL)


def starved_reader() -> np.ndarray:
    """Four threads of direct 32 KiB reads that wait for a CPU most of the time: each runs
    3% of its runnable time among other tenants' threads (the heavy corpus's rand-read#1)."""
    return MODEL.workload(
        {
            "seq_read_bw": 0.0,
            "seq_write_bw": 0.0,
            "rand_write_rate": 0.0,
            "bg_read_bw": 0.0,
            "bg_write_bw": 0.0,
            "app_cpu": 0.01,
            "app_sys": 0.0,
            "bg_cpu": 1.8,
            "cpu_grant": 0.03,
            "idle_threads": 0.5,
            "rand_read_rate": 2800.0,
            "rand_read_size": 32768.0,
            "rand_read_direct": 1.0,
            "io_depth": 4.0,
        }
    )


def test_a_workload_starved_of_cpu_gains_from_cpus_not_from_a_faster_disk() -> None:
    """Its busy threads are held (more load is more work for the same program): they can get
    no more CPU than their grant, so the CPU limits at 1 / runnable, more CPUs (a larger
    grant for each) raise that, and a faster device adds nothing, as the headline says."""
    w = starved_reader()
    inputs = {"mem_limit": 1 << 30, "cpu_limit": 2.0}
    _, utils = MODEL.predict(w[None, :], inputs)
    names = MODEL.resource_names
    cpu, disk = float(utils[0, names.index("cpu")]), float(utils[0, names.index("disk")])
    runnable = float(MODEL.value("runnable", w, inputs)[0])
    assert cpu == pytest.approx(runnable, rel=1e-9) and cpu > 0.7 and disk < 0.3
    factor, limit = max_load(MODEL, w, inputs)
    assert limit == "cpu"
    assert factor == pytest.approx(1.0 / runnable, rel=1e-3)
    options = (
        Option("fast disk", 300.0, "disk", scale={"read_a": 0.5, "read_b": 0.5}),
        Option("cores", 180.0, "cpu", scale={"ncpu": 2.0}),
    )
    analysis = analyse_upgrades(MODEL, w, Catalogue(options, currency="EUR"), inputs=inputs)
    by_name = {r.name: r for r in analysis.results}
    assert by_name["fast disk"].added == pytest.approx(0.0, abs=1e-6 * analysis.base_max_throughput)
    assert by_name["cores"].max_throughput == pytest.approx(
        2 * analysis.base_max_throughput, rel=0.01
    )
    assert analysis.recommended is not None and analysis.recommended.name == "cores"
    assert analysis.base_limit == "cpu"


def test_a_cgroup_limit_at_the_machines_cpus_is_no_quota() -> None:
    """The collector reports the CPUs as the cgroup's limit when it has no quota: more CPUs
    raise it (they did not: twice the cores added nothing to any workload), where a real
    quota stays."""
    w = MODEL.workload(
        {
            **dict.fromkeys(
                ("seq_read_bw", "seq_write_bw", "rand_read_rate", "rand_write_rate", "app_sys"),
                0.0,
            ),
            **dict.fromkeys(("bg_cpu", "bg_read_bw", "bg_write_bw"), 0.0),
            "app_cpu": 1.8,
            "cpu_grant": 1.0,
            "idle_threads": 8.0,  # threads to spare: the cores limit it, not its threads
        }
    )
    cores = Catalogue((Option("cores", 180.0, "cpu", scale={"ncpu": 2.0}),))
    unlimited = analyse_upgrades(MODEL, w, cores, inputs={"cpu_limit": 2.0})
    assert unlimited.base_max_load == pytest.approx(2.0 / 1.8, rel=1e-3)
    assert unlimited.results[0].max_load == pytest.approx(4.0 / 1.8, rel=1e-3)
    quota = analyse_upgrades(MODEL, w, cores, inputs={"cpu_limit": 1.9})
    assert quota.results[0].max_load == pytest.approx(quota.base_max_load, rel=1e-6)


def test_without_its_neighbours_the_starved_reader_would_be_limited_by_its_disk() -> None:
    """What other tenants cost it set aside (a whole CPU whenever its threads are runnable,
    the same threads): the disk would limit the starved reader, at the load that fills it; a
    CPU burner among hogs would still be limited by the CPU."""
    inputs = {"mem_limit": 1 << 30, "cpu_limit": 2.0}
    reader = starved_reader()
    limit = uncontended_limit(MODEL, reader, inputs)
    assert limit is not None
    resource, factor = limit
    _, utils = MODEL.predict(reader[None, :], inputs)
    disk = float(utils[0, MODEL.resource_names.index("disk")])
    assert resource == "disk"
    assert factor == pytest.approx(1.0 / disk, rel=0.05)  # the device's share grows with load
    burner = MODEL.workload(
        {
            **dict.fromkeys(
                ("seq_read_bw", "seq_write_bw", "rand_read_rate", "rand_write_rate", "app_sys"),
                0.0,
            ),
            **dict.fromkeys(("bg_read_bw", "bg_write_bw", "idle_threads"), 0.0),
            "app_cpu": 0.22,
            "cpu_grant": 0.11,
            "bg_cpu": 1.78,
        }
    )
    limit = uncontended_limit(MODEL, burner, inputs)
    assert limit is not None and limit[0] == "cpu"
    assert limit[1] == pytest.approx(2.0 / 0.22, rel=1e-3)  # its 2 threads would fill 2 CPUs
