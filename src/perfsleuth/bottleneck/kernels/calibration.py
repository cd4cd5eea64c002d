"""Calibration profiles: this machine's maxima, fitted by regression (Blake & Breese §3.1).

A profile is a TOML file with the constants and tables of a model measured on one machine::

    [profile]
    model = "linux"
    machine = "db-7"
    created = "2024-05-01T12:00:00Z"
    method = "fio 3.33"

    [constants]
    ncpu = 2
    cpu_direct_op = 1.9e-05

    [tables.read_a]          # device time per request, fixed part, by depth
    x = [1, 4, 16]
    y = [7.8e-05, 3.1e-05, 2.8e-05]

    [[measurement]]          # the raw points behind the fits, for the record and the report
    kind = "randread"
    size = 4096
    depth = 1
    iops = 12800.0
    ...

:func:`fit_profile` turns measurements (from :mod:`perfsleuth.bottleneck.measure`) into values:
per request kind and depth, the time per request is regressed on its size,
``1 / IOPS = a + b · size`` (non-negative least squares, relative errors), the paper's figure 2;
the kernel's CPU per direct request and per byte is regressed on the runs' rates, and so on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from perfsleuth.bottleneck.kernels.model import KeyLocator, Model
from perfsleuth.errors import ConfigError, NotEnoughDataError
from perfsleuth.tomlfile import read_toml

__all__ = [
    "ERROR_SCALE",
    "Measurement",
    "Profile",
    "apply_profile",
    "fit_profile",
    "load_profile",
]

Array = npt.NDArray[np.float64]

# request kind of a measurement -> the model's tables (fixed part, per-byte part)
TABLES = {
    "randread": ("read_a", "read_b"),
    "randwrite": ("write_a", "write_b"),
    "read": ("seq_read_a", "seq_read_b"),
    "write": ("seq_write_a", "seq_write_b"),
}
_NUMBERS = (
    "size",
    "depth",
    "iops",
    "bw",
    "usr",
    "sys",
    "seconds",
    "device_reads",
    "device_read_bytes",
    "device_writes",
    "device_write_bytes",
    "extent",
    "memory_limit",
    "app_ram",
)
_MEASUREMENT_KEYS = {"kind", "direct", "engine", "role", *_NUMBERS}
ERROR_SCALE = "error_scale"
"""Profile key: the factor (at least 1) by which the inference widens the error model's
standard deviations, set when the machine was busy while it was calibrated."""
COSTS = (
    "cpu_direct_op",
    "cpu_direct_byte",
    "cpu_syscall",
    "cpu_buffered_read_byte",
    "cpu_buffered_write_byte",
    "cpu_miss_op",
)
"""The kernel's CPU atoms, fitted together from the ``role = "cpu"`` runs."""


@dataclass(frozen=True, slots=True)
class Measurement:
    """One calibration run: a request kind at a size and depth, and what it achieved.

    ``role = "device"`` runs (AIO, direct) measure the device: their IOPS feed the service-time
    tables. ``role = "cpu"`` runs (synchronous, in their own cgroup) measure the kernel's CPU:
    ``sys`` is then the cgroup's system CPU in cores. ``device_*`` are the block device's
    counts per second over the run (read-ahead and write-back request sizes come from them);
    ``extent`` and ``memory_limit`` describe cached random reads; ``app_ram`` is the job's
    resident memory.
    """

    kind: str
    size: float
    depth: float
    direct: bool
    iops: float
    bw: float
    usr: float
    sys: float
    seconds: float
    device_reads: float = math.nan
    device_read_bytes: float = math.nan
    device_writes: float = math.nan
    device_write_bytes: float = math.nan
    engine: str = "libaio"
    role: str = "device"
    extent: float = math.nan
    memory_limit: float = math.nan
    app_ram: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if not _nan(getattr(self, k))}

    def workload(self) -> tuple[dict[str, float], dict[str, float]]:
        """The run as workload parameters and inputs of the Linux model (nothing else ran)."""
        values = {
            "app_cpu": self.usr,
            "app_sys": 0.0,  # its kernel time is its I/O's: what the run measures
            "seq_read_bw": 0.0,
            "seq_write_bw": 0.0,
            "rand_read_rate": 0.0,
            "rand_write_rate": 0.0,
            "bg_cpu": 0.0,
            "bg_read_bw": 0.0,
            "bg_write_bw": 0.0,
            "io_depth": max(float(self.depth), 1.0),
        }
        values.update(
            job_parameters(self.kind, self.size, self.direct, self.iops, self.bw, self.extent)
        )
        if math.isfinite(self.app_ram):
            values["app_ram"] = self.app_ram
        inputs = {} if math.isnan(self.memory_limit) else {"mem_limit": self.memory_limit}
        return values, inputs


def job_parameters(
    kind: str, size: float, direct: bool, iops: float, bw: float, extent: float
) -> dict[str, float]:
    """The Linux model's parameters of one synthetic job: buffered sequential reads and writes
    are the page-cache streams; any other read (direct, or random) is a random read; any other
    write a direct write."""
    if kind == "cpu":
        return {}
    if kind == "read" and not direct:
        return {"seq_read_bw": bw, "seq_read_size": float(size)}
    if kind == "write" and not direct:
        return {"seq_write_bw": bw, "seq_write_size": float(size)}
    if kind in ("read", "randread"):
        out = {
            "rand_read_rate": iops,
            "rand_read_size": float(size),
            "rand_read_direct": 1.0 if direct else 0.0,
        }
        if math.isfinite(extent):
            out["rand_read_extent"] = float(extent)
        return out
    return {"rand_write_rate": iops, "rand_write_size": float(size)}


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


@dataclass(frozen=True)
class Profile:
    """Constants and tables for a model, with where they came from."""

    model: str
    constants: dict[str, float]
    tables: dict[str, tuple[list[float], list[float]]]
    info: dict[str, str] = field(default_factory=dict)
    measurements: tuple[Measurement, ...] = ()
    source: str = "<profile>"

    def to_toml(self) -> str:
        lines = [
            "# perfsleuth calibration profile (written by `perfsleuth calibrate`)",
            "[profile]",
        ]
        lines.append(f"model = {_quote(self.model)}")
        for key, value in sorted(self.info.items()):
            lines.append(f"{key} = {_quote(value)}")
        lines += ["", "[constants]"]
        for name, number in sorted(self.constants.items()):
            lines.append(f"{name} = {_num(number)}")
        for name, (x, y) in sorted(self.tables.items()):
            lines += ["", f"[tables.{name}]"]
            lines.append("x = [" + ", ".join(_num(v) for v in x) + "]")
            lines.append("y = [" + ", ".join(_num(v) for v in y) + "]")
        for m in self.measurements:
            lines += ["", "[[measurement]]"]
            for key, value in m.to_dict().items():
                if isinstance(value, bool):
                    lines.append(f"{key} = {'true' if value else 'false'}")
                elif isinstance(value, str):
                    lines.append(f"{key} = {_quote(value)}")
                else:
                    lines.append(f"{key} = {_num(value)}")
        return "\n".join(lines) + "\n"

    def save(self, path: str | Path) -> Path:
        target = Path(path)
        target.write_text(self.to_toml(), encoding="utf-8")
        return target


def load_profile(path: str | Path) -> Profile:
    """Read a profile; malformed ones are errors that name the file, line and key."""
    document = read_toml(path, what="calibration")
    return profile_from_dict(document.data, source=document.source, where=KeyLocator.of(document))


def profile_from_dict(
    data: Mapping[str, Any], *, source: str, where: KeyLocator | None = None
) -> Profile:
    """A profile from parsed TOML; ``where`` finds the lines errors name."""
    at = KeyLocator(source, None) if where is None else where
    extra = set(data) - {"profile", "constants", "tables", "measurement"}
    if extra:
        raise at.error(
            sorted(extra)[0], "unknown table (expected profile, constants, tables, measurement)"
        )
    head = data.get("profile", {})
    if not isinstance(head, dict) or not isinstance(head.get("model"), str):
        raise at.error("profile.model", "missing (the model the profile is for)")
    info = {str(k): str(v) for k, v in head.items() if k != "model"}
    if ERROR_SCALE in info:
        try:
            scale = float(info[ERROR_SCALE])
        except ValueError:
            scale = math.nan
        if not (math.isfinite(scale) and 1.0 <= scale <= 100.0):
            raise at.error(
                f"profile.{ERROR_SCALE}",
                f"expected a number from 1 to 100, got {head[ERROR_SCALE]!r}",
            )
    constants: dict[str, float] = {}
    for key, value in dict(data.get("constants", {})).items():
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise at.error(f"constants.{key}", f"expected a finite number, got {value!r}")
        constants[str(key)] = float(value)
    tables: dict[str, tuple[list[float], list[float]]] = {}
    for name, table in dict(data.get("tables", {})).items():
        if not isinstance(table, dict) or set(table) != {"x", "y"}:
            raise at.error(f"tables.{name}", "expected exactly x and y")
        try:
            x = [float(v) for v in table["x"]]
            y = [float(v) for v in table["y"]]
        except (TypeError, ValueError):
            raise at.error(f"tables.{name}", "x and y must be lists of numbers") from None
        tables[str(name)] = (x, y)
    measurements = []
    for i, row in enumerate(data.get("measurement", [])):
        if not isinstance(row, dict):
            raise at.error(f"measurement[{i}]", "expected a table")
        unknown = set(row) - _MEASUREMENT_KEYS
        if unknown:
            raise at.error(f"measurement[{i}].{sorted(unknown)[0]}", "unknown key")
        for key in ("kind", "size", "depth", "direct", "iops", "bw", "usr", "sys", "seconds"):
            if key not in row:
                raise at.error(f"measurement[{i}].{key}", "missing")
        for key, value in row.items():
            text = key in ("kind", "engine", "role")
            want: type | tuple[type, ...] = (
                str if text else bool if key == "direct" else (int, float)
            )
            if not isinstance(value, want) or (
                key in _NUMBERS
                and (
                    isinstance(value, bool)
                    or not isinstance(value, int | float)
                    or not math.isfinite(value)
                )
            ):
                raise at.error(f"measurement[{i}].{key}", f"bad value {value!r}")
        measurements.append(Measurement(**row))
    return Profile(str(head["model"]), constants, tables, info, tuple(measurements), source)


def apply_profile(model: Model, profile: Profile) -> Model:
    """``model`` with the profile's constants and tables; a profile for another model, or with
    names the model lacks, is an error naming the profile file."""
    if profile.model != model.name:
        raise ConfigError(
            f"{profile.source}: profile.model: calibrates {profile.model!r}, not {model.name!r}"
        )
    return model.with_values(profile.constants, profile.tables, source=profile.source)


# ---------------------------------------------------------------------------------------------
# Fitting
# ---------------------------------------------------------------------------------------------


def fit_service_time(sizes: Sequence[float], iops: Sequence[float]) -> tuple[float, float]:
    """``1/iops = a + b · size`` with a, b ≥ 0, minimising relative errors (each point weighted
    by its own time per request, so 4 KiB and 1 MiB points count alike)."""
    s = np.asarray(sizes, dtype=np.float64)
    t = 1.0 / np.asarray(iops, dtype=np.float64)
    if len(s) < 2 or len(np.unique(s)) < 2:
        raise NotEnoughDataError("a service-time regression needs two request sizes or more")
    from scipy.optimize import nnls  # here: the inference imports this module, not fits

    design = np.column_stack([np.ones_like(s), s]) / t[:, None]
    (a, b), _ = nnls(design, np.ones_like(t))
    return float(a), float(b)


def fit_cpu_costs(rates: Array, cores: Array) -> Array:
    """CPU cost per unit of each rate column: ``cores ≈ rates @ costs``, costs ≥ 0 (NNLS)."""
    rates = np.asarray(rates, dtype=np.float64)
    cores = np.asarray(cores, dtype=np.float64)
    if rates.shape[0] < rates.shape[1]:
        raise NotEnoughDataError("fewer runs than CPU costs to fit")
    from scipy.optimize import nnls

    norms = np.maximum(np.abs(rates).max(axis=0), 1e-300)
    costs, _ = nnls(rates / norms, cores)
    out: Array = costs / norms
    return out


def fit_profile(
    model: Model,
    measurements: Sequence[Measurement],
    *,
    machine: Mapping[str, float],
    info: Mapping[str, str] | None = None,
) -> Profile:
    """Fit a profile for ``model`` from calibration runs and machine facts.

    ``machine`` holds what is read, not measured: ``ncpu``, ``mem_total``, ``mem_reserved``,
    ``page_size``. Device tables are fitted per request kind and depth from the direct
    ``role = "device"`` runs (depths with fewer than two sizes are skipped). The read-ahead and
    write-back request sizes are the device's bytes per request in buffered runs. The kernel's
    CPU atoms (:data:`COSTS`) are fitted together on the ``role = "cpu"`` runs through the
    model itself: its system CPU is linear in them, so each atom's column is the model's system
    CPU for the run's workload with that atom at 1 and the others at 0, and the atoms are the
    non-negative least-squares solution. Atoms no run exercises keep their values.
    """
    constants: dict[str, float] = {
        k: float(v) for k, v in machine.items() if k in model.spec.constants
    }
    tables: dict[str, tuple[list[float], list[float]]] = {}
    device = [m for m in measurements if m.direct and m.role == "device"]
    for kind, (a_name, b_name) in TABLES.items():
        runs = [m for m in device if m.kind == kind and m.iops > 0]
        xs, a_values, b_values = [], [], []
        for depth in sorted({m.depth for m in runs}):
            at = [m for m in runs if m.depth == depth]
            if len({m.size for m in at}) < 2:
                continue
            a, b = fit_service_time([m.size for m in at], [m.iops for m in at])
            xs.append(float(depth))
            a_values.append(a)
            b_values.append(b)
        if xs and a_name in model.spec.tables:
            tables[a_name] = (xs, a_values)
            tables[b_name] = (xs, b_values)
    buffered = [m for m in measurements if not m.direct and m.bw > 0]
    sizes = [
        m.device_read_bytes / m.device_reads
        for m in buffered
        if m.kind == "read" and m.device_reads > 0
    ]
    if sizes:
        constants["readahead_size"] = float(np.median(sizes))
    sizes = [
        m.device_write_bytes / m.device_writes
        for m in buffered
        if m.kind == "write" and m.device_writes > 0
    ]
    if sizes:
        constants["writeback_size"] = float(np.median(sizes))
    constants = {k: v for k, v in constants.items() if k in model.spec.constants}
    tables = {k: v for k, v in tables.items() if k in model.spec.tables}
    cpu_runs = [m for m in measurements if m.role == "cpu"]
    if cpu_runs:
        constants.update(_fit_costs(model.with_values(constants, tables), cpu_runs))
    return Profile(
        model.name,
        constants,
        tables,
        dict(info or {}),
        tuple(measurements),
        source="<fitted>",
    )


def _fit_costs(model: Model, runs: Sequence[Measurement]) -> dict[str, float]:
    costs = [c for c in COSTS if c in model.spec.constants]
    if not costs or "sys_cpu" not in model.units:
        return {}
    workloads = []
    for m in runs:
        values, inputs = m.workload()
        known = {k: v for k, v in values.items() if k in model.parameters}
        workloads.append((model.workload(known, source=f"calibration run {m.kind}"), inputs))
    columns = np.zeros((len(runs), len(costs)))
    zero = dict.fromkeys(costs, 0.0)
    for j, cost in enumerate(costs):
        unit = model.with_values({**zero, cost: 1.0})
        for i, (w, inputs) in enumerate(workloads):
            columns[i, j] = float(unit.value("sys_cpu", w[None, :], inputs)[0])
    exercised = np.abs(columns).max(axis=0) > 0
    if not exercised.any():
        return {}
    fitted = fit_cpu_costs(columns[:, exercised], np.array([m.sys for m in runs]))
    return {c: float(v) for c, v in zip(np.array(costs)[exercised], fitted, strict=True)}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _num(value: float) -> str:
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"not finite: {v}")
    return repr(v)
