"""The schema of a model file (TOML), validated by pydantic with unknown keys refused.

A model file has these tables (see ``models/linux.toml`` for a complete one):

``[model]``
    ``name``, ``description``.
``[parameters.<name>]``
    A workload parameter: ``unit``, ``prior`` (``lognormal`` with ``median``, ``sigma`` and
    ``offset``; ``uniform``; ``beta`` with ``alpha``, ``beta``), ``lower``/``upper`` bounds,
    ``load = true`` when it scales with the workload's intensity (rates, CPU per second).
    ``background = true`` for other tenants' share of a machine-wide counter: held at its
    lower bound when a window observes none of the workload's own counters (no column a
    counter names as ``workload_part``), where the workload is all the machine runs.
``[constants.<name>]``
    A machine characteristic: ``value``, ``unit``; ``calibrated = true`` when calibration
    measures it.
``[tables.<name>]``
    A 1-D lookup table: ``x``, ``y``, ``x_unit``, ``y_unit``, ``x_scale`` (linear or log).
``[inputs.<name>]``
    Observed context that is not predicted (a cgroup's memory limit): the ``counter`` it is
    read from and a ``default`` formula over constants for when it is not observed.
``[[formula]]``
    Named formulas: ``name``, ``expr``, ``unit``. Written in any order; evaluated in
    dependency order (cycles are errors).
``[counters.<name>]``
    A predicted counter: ``column`` (its name in the counter frame), ``expr``, ``unit``, and
    the default error model on the ``asinh(value / scale)`` scale: ``scale`` (a level below
    which the counter's noise is absolute, in its unit) and ``sd``; ``signed = true`` when an
    observed value may be negative (a change of a level), else a negative value is an error;
    ``workload_part`` names the column of the workload's own share of a machine-wide counter
    (``cg.mem.refault`` of ``mem.refault``): when that column is observed too, the rest is
    other tenants', so the machine counter only bounds the prediction from below (a counter
    may show more than the workload does, not less).
``[resources.<name>]``
    A resource: ``label``, ``utilisation`` (a dimensionless formula; 1 = saturated),
    ``capacity`` (how the explanation names 100%), ``throughput`` (whether it caps throughput as
    load grows), and ``[[resources.<name>.components]]``: ``label``, ``share`` (its part of the
    utilisation) and optional ``size`` (bytes per operation, shown in explanations).
``[load]``
    ``[[load.streams]]``: ``label`` and ``rate`` (operations per second): the unit of throughput
    in upgrade advice is the stream with the highest rate.
``[[golden]]``
    Test cases checked at load: ``parameters`` (others at their prior's centre), optional
    ``inputs`` and ``constants``, and ``expect`` (formula, counter or resource name → value)
    within ``rtol``/``atol``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ComponentSpec",
    "ConstantSpec",
    "CounterSpec",
    "FormulaSpec",
    "GoldenSpec",
    "InputSpec",
    "LoadSpec",
    "ModelFile",
    "ModelInfo",
    "ParameterSpec",
    "ResourceSpec",
    "StreamSpec",
    "TableSpec",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelInfo(_Strict):
    name: str = Field(min_length=1)
    description: str = ""


class ParameterSpec(_Strict):
    unit: str
    prior: Literal["lognormal", "uniform", "beta"]
    description: str = ""
    median: float | None = Field(default=None, gt=0, description="lognormal: median of w - offset")
    sigma: float | None = Field(default=None, gt=0, description="lognormal: sd of ln(w - offset)")
    offset: float = 0.0
    # beyond a million a beta prior is a point mass, and alpha + beta may overflow
    alpha: float | None = Field(default=None, gt=0, le=1e6)
    beta: float | None = Field(default=None, gt=0, le=1e6)
    lower: float | None = None
    upper: float | None = None
    load: bool = False
    background: bool = False


class ConstantSpec(_Strict):
    value: float
    unit: str
    description: str = ""
    calibrated: bool = False


class TableSpec(_Strict):
    x: list[float] = Field(min_length=1)
    y: list[float] = Field(min_length=1)
    x_unit: str
    y_unit: str
    x_scale: Literal["linear", "log"] = "linear"
    description: str = ""
    calibrated: bool = False


class InputSpec(_Strict):
    counter: str = Field(min_length=1)
    unit: str
    default: str
    description: str = ""


class FormulaSpec(_Strict):
    name: str = Field(min_length=1)
    expr: str
    unit: str
    description: str = ""
    held: bool = False
    """A property of the program, not of its load or hardware (its threads, the CPUs it was
    measured on): what-ifs (more load, an upgrade) keep the value of today's workload."""


class CounterSpec(_Strict):
    column: str = Field(min_length=1)
    expr: str
    unit: str
    scale: float = Field(gt=0)
    sd: float = Field(gt=0)
    signed: bool = False
    workload_part: str = ""
    source: str = ""
    description: str = ""


class ComponentSpec(_Strict):
    label: str = Field(min_length=1)
    share: str
    size: str | None = None


class ResourceSpec(_Strict):
    label: str = Field(min_length=1)
    utilisation: str
    capacity: str = "capacity"
    throughput: bool = True
    advice: str = ""
    components: list[ComponentSpec] = Field(default_factory=list)


class StreamSpec(_Strict):
    label: str = Field(min_length=1)
    rate: str


class LoadSpec(_Strict):
    streams: list[StreamSpec] = Field(min_length=1)


class UncontendedSpec(_Strict):
    """Parameters that, set, take away what other tenants cost the workload (the built-in
    model: ``cpu_grant = 1``, a whole CPU whenever its threads are runnable): the resource
    that would limit it then is named beside the headline."""

    label: str = Field(min_length=1)
    set: dict[str, float] = Field(min_length=1)


class GoldenSpec(_Strict):
    name: str = Field(min_length=1)
    parameters: dict[str, float] = Field(default_factory=dict)
    inputs: dict[str, float] = Field(default_factory=dict)
    constants: dict[str, float] = Field(default_factory=dict)
    expect: dict[str, float] = Field(min_length=1)
    rtol: float = Field(default=1e-9, ge=0)
    atol: float = Field(default=1e-12, ge=0)


class ModelFile(_Strict):
    model: ModelInfo
    parameters: dict[str, ParameterSpec] = Field(min_length=1)
    constants: dict[str, ConstantSpec] = Field(default_factory=dict)
    tables: dict[str, TableSpec] = Field(default_factory=dict)
    inputs: dict[str, InputSpec] = Field(default_factory=dict)
    formula: list[FormulaSpec] = Field(default_factory=list)
    counters: dict[str, CounterSpec] = Field(min_length=1)
    resources: dict[str, ResourceSpec] = Field(min_length=1)
    load: LoadSpec
    uncontended: UncontendedSpec | None = None
    golden: list[GoldenSpec] = Field(default_factory=list)
