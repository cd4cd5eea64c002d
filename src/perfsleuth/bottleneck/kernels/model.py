"""Load, check and compile a model file into a vectorised function f(w) (Blake & Breese §3).

:func:`load_model` reads a TOML model (:mod:`perfsleuth.bottleneck.kernels.spec`) through
:mod:`perfsleuth.tomlfile`, and refuses it with an error naming the file, line and key when it
is not TOML, a key is unknown or mistyped, a name is undefined or misspelt, formulas form a
cycle, units do not fit, a prior lacks what its kind needs, a table is not increasing, or a
golden case does not come out as written. The result, :class:`Model`, evaluates a batch of
workloads at once: ``model.predict(w)`` with ``w`` of shape (k, m) gives the predicted counters
(k, n) and resource utilisations (k, r).

A calibration (:mod:`perfsleuth.bottleneck.kernels.calibration`) or an upgrade replaces
constants and tables with :meth:`Model.with_values`, which recompiles (cheap: folding constants
again). Formulas marked ``held`` are properties of the program rather than of its load or
hardware (the built-in model's busy threads and the CPUs it was measured on): a what-if passes
today's values (:meth:`Model.held_values`) to :meth:`Model.predict`, which uses them instead.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources as package_data
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from perfsleuth.bottleneck.kernels import expr
from perfsleuth.bottleneck.kernels.priors import ParameterPrior, Priors
from perfsleuth.bottleneck.kernels.spec import ModelFile, ParameterSpec
from perfsleuth.bottleneck.kernels.units import DIMENSIONLESS, Unit, parse_unit
from perfsleuth.errors import ConfigError
from perfsleuth.tomlfile import TomlDocument, parse_toml, read_toml, validate

__all__ = [
    "BUILTIN_MODELS",
    "Component",
    "CounterInfo",
    "InputInfo",
    "KeyLocator",
    "Model",
    "ResourceInfo",
    "load_model",
]

Array = npt.NDArray[np.float64]
BUILTIN_MODELS = ("linux",)
_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_INDEXED = re.compile(r"^(\w+)\[(\d+)\]$")  # formula[2]: the third [[formula]]


@dataclass(frozen=True, slots=True)
class CounterInfo:
    """A predicted counter: model name, frame column, unit and default error model."""

    name: str
    column: str
    unit: Unit
    unit_text: str
    scale: float
    sd: float
    signed: bool
    source: str
    description: str
    workload_part: str = ""
    """Column of the workload's share of this machine-wide counter ('' if none)."""


@dataclass(frozen=True, slots=True)
class InputInfo:
    """Observed context: read from ``counter`` when present, else ``default``."""

    name: str
    counter: str
    unit: Unit
    default: float


@dataclass(frozen=True, slots=True)
class Component:
    label: str
    share: expr.Compiled
    size: expr.Compiled | None


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    name: str
    label: str
    capacity: str
    throughput: bool
    advice: str
    components: tuple[Component, ...]


class KeyLocator:
    """Errors that name the file, the line and the key, written ``formula[0].expr`` (the
    first ``[[formula]]``'s ``expr``); every bottleneck file's semantic checks use it."""

    def __init__(self, source: str, document: TomlDocument | None) -> None:
        self.source = source
        self.document = document

    @classmethod
    def of(cls, document: TomlDocument) -> KeyLocator:
        return cls(document.source, document)

    def error(self, key: str, message: str) -> ConfigError:
        """A :class:`ConfigError` ``file:line: key: message`` (no line when not found)."""
        line = self.line(key)
        where = f"{self.source}:{line}" if line else self.source
        return ConfigError(f"{where}: {key}: {message}")

    def line(self, key: str) -> int | None:
        """The line of ``key`` (``formula[2].expr``, ``parameters.rate.unit``) in the file, or
        of its nearest table or key that is written there."""
        if self.document is None:
            return None
        path: list[str | int] = []
        for part in key.split("."):
            indexed = _INDEXED.match(part)
            if indexed:
                path += [indexed.group(1), int(indexed.group(2))]
            else:
                path.append(part)
        return self.document.line(path)


def load_model(path: str | Path | None = None) -> Model:
    """Load a model file; ``None`` or a built-in name (``"linux"``) loads the shipped model."""
    if path is None or str(path) in BUILTIN_MODELS:
        name = "linux" if path is None else str(path)
        text = package_data.files("perfsleuth.bottleneck").joinpath(f"models/{name}.toml")
        return Model.from_text(text.read_text(encoding="utf-8"), source=f"<built-in {name}>")
    return Model.from_document(read_toml(path, what="model"))


class Model:
    """A compiled model: parameters with priors, counters, resources, all vectorised."""

    def __init__(
        self,
        spec: ModelFile,
        *,
        source: str,
        document: TomlDocument | None = None,
        constants: Mapping[str, float] | None = None,
        tables: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
        check_golden: bool = True,
    ) -> None:
        self.spec = spec
        self.source = source
        self._document = document
        self._where = KeyLocator(source, document)
        self.name = spec.model.name
        self.description = spec.model.description
        self._build(dict(constants or {}), dict(tables or {}))
        if check_golden:
            self._check_golden()

    @classmethod
    def from_text(cls, text: str, *, source: str = "<model>") -> Model:
        """Compile a model from TOML ``text`` (``source`` names it in errors)."""
        return cls.from_document(parse_toml(text, source=source))

    @classmethod
    def from_document(cls, document: TomlDocument) -> Model:
        """Compile a parsed model file; errors name its file, line and key."""
        spec = validate(ModelFile, document.data, source=document.source, locate=document.line)
        return cls(spec, source=document.source, document=document)

    def with_values(
        self,
        constants: Mapping[str, float] | None = None,
        tables: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
        *,
        source: str = "",
    ) -> Model:
        """A copy with constants and tables replaced (calibration, upgrades); unknown names
        are errors naming ``source``."""
        where = source or "values"
        for name in constants or {}:
            if name not in self.spec.constants:
                raise ConfigError(
                    f"{where}: constants.{name}: not a constant of model "
                    f"{self.name!r}{_suggest(name, self.spec.constants)}"
                )
        for name in tables or {}:
            if name not in self.spec.tables:
                raise ConfigError(
                    f"{where}: tables.{name}: not a table of model "
                    f"{self.name!r}{_suggest(name, self.spec.tables)}"
                )
        merged_c = {**self._constant_overrides, **(constants or {})}
        merged_t = {**self._table_overrides, **(tables or {})}
        return Model(
            self.spec,
            source=self.source,
            document=self._document,
            constants=merged_c,
            tables=merged_t,
            check_golden=False,
        )

    # -- building ---------------------------------------------------------------------------

    def _unit(self, key: str, text: str) -> Unit:
        try:
            return parse_unit(text)
        except ValueError as exc:
            raise self._where.error(key, str(exc)) from None

    def _build(
        self,
        constant_overrides: dict[str, float],
        table_overrides: dict[str, tuple[Sequence[float], Sequence[float]]],
    ) -> None:
        spec = self.spec
        self._constant_overrides = constant_overrides
        self._table_overrides = table_overrides
        groups = {
            "parameters": list(spec.parameters),
            "constants": list(spec.constants),
            "tables": list(spec.tables),
            "inputs": list(spec.inputs),
            "formula": [f.name for f in spec.formula],
        }
        seen: dict[str, str] = {}
        for group, names in groups.items():
            for position, name in enumerate(names):
                key = f"formula[{position}].name" if group == "formula" else f"{group}.{name}"
                if not _IDENTIFIER.match(name):
                    raise self._where.error(
                        key, f"{name!r} is not a name formulas can use (letters, digits, '_')"
                    )
                if name in expr.FUNCTIONS:
                    raise self._where.error(key, f"{name!r} is the name of a function")
                if name in seen:
                    raise self._where.error(key, f"{name!r} is already defined in {seen[name]}")
                seen[name] = group

        units: dict[str, Unit] = {}
        self.parameters = tuple(spec.parameters)
        priors = []
        for name, p in spec.parameters.items():
            units[name] = self._unit(f"parameters.{name}.unit", p.unit)
            priors.append(self._prior(name, p))
        self.priors = Priors(priors)
        self.parameter_units = tuple(units[n] for n in self.parameters)
        self.load_mask = np.array([p.load for p in spec.parameters.values()], dtype=bool)
        self.background_mask = np.array(
            [p.background for p in spec.parameters.values()], dtype=bool
        )
        self._alone_priors = self.priors.pinned(self.background_mask)
        self.uncontended: tuple[str, dict[int, float]] | None = None
        if spec.uncontended is not None:
            freed: dict[int, float] = {}
            for name, value in spec.uncontended.set.items():
                key = f"uncontended.set.{name}"
                if name not in spec.parameters:
                    raise self._where.error(
                        key, f"not a parameter{_suggest(name, spec.parameters)}"
                    )
                if not math.isfinite(value):
                    raise self._where.error(key, f"not a finite number: {value}")
                freed[self.parameters.index(name)] = float(value)
            self.uncontended = (spec.uncontended.label, freed)

        self.constants: dict[str, float] = {}
        for name, c in spec.constants.items():
            units[name] = self._unit(f"constants.{name}.unit", c.unit)
            value = float(constant_overrides.get(name, c.value))
            if not math.isfinite(value):
                raise self._where.error(f"constants.{name}.value", f"not a finite number: {value}")
            self.constants[name] = value

        self.tables: dict[str, expr.Table] = {}
        for name, t in spec.tables.items():
            x, y = table_overrides.get(name, (t.x, t.y))
            self.tables[name] = self._table(
                name,
                x,
                y,
                self._unit(f"tables.{name}.x_unit", t.x_unit),
                self._unit(f"tables.{name}.y_unit", t.y_unit),
                t.x_scale == "log",
            )

        parsed: dict[str, expr.Node] = {}

        def parse(key: str, text: str) -> expr.Node:
            try:
                node = expr.parse(text)
            except expr.ExpressionError as exc:
                raise self._where.error(key, f"{exc} in {text!r}") from None
            parsed[key] = node
            return node

        values = set(spec.parameters) | set(spec.constants) | set(spec.inputs)
        values |= {f.name for f in spec.formula}

        def check_names(key: str, node: expr.Node, allowed: set[str]) -> set[str]:
            used, tables = expr.names(node)
            for name in sorted(used):
                if name not in allowed:
                    if name in spec.tables:
                        raise self._where.error(
                            key, f"table {name!r} used as a value; write lookup(table, x)"
                        )
                    raise self._where.error(key, f"unknown name {name!r}{_suggest(name, allowed)}")
            for name in sorted(tables):
                if name not in spec.tables:
                    raise self._where.error(
                        key, f"lookup of unknown table {name!r}{_suggest(name, spec.tables)}"
                    )
            return used

        # inputs: a default over constants only
        self.inputs: list[InputInfo] = []
        default_env: dict[str, float] = {}
        for name, i in spec.inputs.items():
            key = f"inputs.{name}.default"
            node = parse(key, i.default)
            check_names(key, node, set(spec.constants))
            units[name] = self._unit(f"inputs.{name}.unit", i.unit)
            self._check_unit(key, node, units, units[name])
            default = expr.compile_node(node, self.constants, self.tables)
            if callable(default) or not np.isfinite(default):
                raise self._where.error(key, "the default must be a finite number")
            default_env[name] = float(default)
            self.inputs.append(InputInfo(name, i.counter, units[name], float(default)))
        self.input_defaults = default_env

        # formulas: dependency order, cycles refused
        nodes: dict[str, expr.Node] = {}
        deps: dict[str, set[str]] = {}
        formula_names = {f.name for f in spec.formula}
        for position, f in enumerate(spec.formula):
            key = f"formula[{position}].expr"
            node = parse(key, f.expr)
            nodes[f.name] = node
            deps[f.name] = check_names(key, node, values) & formula_names
        order = self._order(deps)
        position_of = {f.name: i for i, f in enumerate(spec.formula)}
        folded: dict[str, Any] = dict(self.constants)
        self._formulas: list[tuple[str, expr.Compiled]] = []
        for name in order:
            f = spec.formula[position_of[name]]
            key = f"formula[{position_of[name]}]"
            units[name] = self._unit(f"{key}.unit", f.unit)
            self._check_unit(f"{key}.expr", nodes[name], units, units[name])
            compiled = expr.compile_node(nodes[name], folded, self.tables)
            if callable(compiled):
                self._formulas.append((name, compiled))
            elif f.held:  # never folded into what reads it: a what-if replaces it
                self._formulas.append((name, _constant(compiled)))
            else:
                folded[name] = compiled
        self._folded = folded
        self.units = units
        self.held = tuple(f.name for f in spec.formula if f.held)

        def compile_expr(key: str, text: str, unit: Unit | None) -> expr.Compiled:
            node = parse(key, text)
            check_names(key, node, values)
            if unit is not None:
                self._check_unit(key, node, units, unit)
            return expr.compile_node(node, folded, self.tables)

        counters = []
        self._counter_fns: list[expr.Compiled] = []
        columns: dict[str, str] = {}
        for name, spec_c in spec.counters.items():
            unit = self._unit(f"counters.{name}.unit", spec_c.unit)
            if spec_c.column in columns:
                raise self._where.error(
                    f"counters.{name}.column",
                    f"column {spec_c.column!r} is already predicted by counter "
                    f"{columns[spec_c.column]!r}",
                )
            columns[spec_c.column] = name
            self._counter_fns.append(compile_expr(f"counters.{name}.expr", spec_c.expr, unit))
            counters.append(
                CounterInfo(
                    name,
                    spec_c.column,
                    unit,
                    spec_c.unit,
                    spec_c.scale,
                    spec_c.sd,
                    spec_c.signed,
                    spec_c.source,
                    spec_c.description,
                    spec_c.workload_part,
                )
            )
        self.counters = tuple(counters)
        # the workload's own share of machine-wide counters (the cgroup's columns)
        self.workload_columns = frozenset(c.workload_part for c in counters if c.workload_part)
        for name, spec_c in spec.counters.items():
            part = spec_c.workload_part
            if part and (part not in columns or part == spec_c.column):
                raise self._where.error(
                    f"counters.{name}.workload_part",
                    f"{part!r} is not the column of another counter{_suggest(part, columns)}",
                )

        resources = []
        self._util_fns: list[expr.Compiled] = []
        for name, r in spec.resources.items():
            self._util_fns.append(
                compile_expr(f"resources.{name}.utilisation", r.utilisation, DIMENSIONLESS)
            )
            parts = []
            for position, comp in enumerate(r.components):
                key = f"resources.{name}.components[{position}]"
                share = compile_expr(f"{key}.share", comp.share, DIMENSIONLESS)
                size = None
                if comp.size is not None:
                    size = compile_expr(f"{key}.size", comp.size, parse_unit("B/op"))
                parts.append(Component(comp.label, share, size))
            resources.append(
                ResourceInfo(name, r.label, r.capacity, r.throughput, r.advice, tuple(parts))
            )
        self.resources = tuple(resources)
        if not any(r.throughput for r in self.resources):
            raise self._where.error("resources", "no resource limits throughput")

        self.streams = tuple(
            (s.label, compile_expr(f"load.streams[{i}].rate", s.rate, parse_unit("op/s")))
            for i, s in enumerate(spec.load.streams)
        )

    def _prior(self, name: str, p: ParameterSpec) -> ParameterPrior:
        key = f"parameters.{name}"
        if p.prior == "lognormal":
            if p.median is None or p.sigma is None:
                raise self._where.error(key, "a lognormal prior needs median and sigma")
            lower = p.offset if p.lower is None else p.lower
            if lower < p.offset:
                raise self._where.error(key, f"lower bound {lower} is below the offset {p.offset}")
            upper = math.inf if p.upper is None else p.upper
        else:
            if p.lower is None or p.upper is None:
                raise self._where.error(key, f"a {p.prior} prior needs lower and upper bounds")
            lower, upper = p.lower, p.upper
            if p.prior == "beta" and (p.alpha is None or p.beta is None):
                raise self._where.error(key, "a beta prior needs alpha and beta")
            for extra in ("median", "sigma"):
                if getattr(p, extra) is not None:
                    raise self._where.error(key, f"{extra} is for lognormal priors")
        if not (math.isfinite(lower) and upper > lower):
            raise self._where.error(key, f"bounds must satisfy lower < upper, got {lower}, {upper}")
        return ParameterPrior(
            kind=p.prior,
            lower=lower,
            upper=upper,
            median=p.median or 1.0,
            sigma=p.sigma or 1.0,
            offset=p.offset,
            alpha=p.alpha or 1.0,
            beta=p.beta or 1.0,
        )

    def _table(
        self,
        name: str,
        x: Sequence[float],
        y: Sequence[float],
        x_unit: Unit,
        y_unit: Unit,
        log_x: bool,
    ) -> expr.Table:
        key = f"tables.{name}"
        xs = np.asarray(x, dtype=np.float64)
        ys = np.asarray(y, dtype=np.float64)
        if xs.ndim != 1 or xs.shape != ys.shape or len(xs) == 0:
            raise self._where.error(
                key, f"x and y must be lists of the same length, got {xs.size} and {ys.size}"
            )
        if not (np.isfinite(xs).all() and np.isfinite(ys).all()):
            raise self._where.error(key, "x and y must be finite numbers")
        if (np.diff(xs) <= 0).any():
            raise self._where.error(key, "x must be strictly increasing")
        if log_x and (xs <= 0).any():
            raise self._where.error(key, "x_scale = 'log' needs x > 0")
        return expr.Table(xs, ys, x_unit, y_unit, log_x)

    def _check_unit(
        self, key: str, node: expr.Node, units: Mapping[str, Unit], declared: Unit
    ) -> None:
        try:
            found = expr.infer_unit(node, units, self.tables)
        except expr.ExpressionError as exc:
            raise self._where.error(key, str(exc)) from None
        if found is not None and not found.same(declared):
            raise self._where.error(key, f"the formula is in {found}, declared {declared}")

    def _order(self, deps: dict[str, set[str]]) -> list[str]:
        """Formulas in dependency order (file order among equals); a cycle is an error."""
        names = [f.name for f in self.spec.formula]
        done: set[str] = set()
        order: list[str] = []
        state: dict[str, int] = {}  # 1 visiting, 2 done

        def visit(name: str, path: list[str]) -> None:
            if state.get(name) == 2:
                return
            if state.get(name) == 1:
                cycle = [*path[path.index(name) :], name]
                position = names.index(name)
                raise self._where.error(
                    f"formula[{position}]", f"formulas form a cycle: {' -> '.join(cycle)}"
                )
            state[name] = 1
            for dep in sorted(deps[name], key=names.index):
                visit(dep, [*path, name])
            state[name] = 2
            if name not in done:
                done.add(name)
                order.append(name)

        for name in names:
            visit(name, [])
        return order

    # -- evaluation -------------------------------------------------------------------------

    def environment(
        self,
        w: Array,
        inputs: Mapping[str, Any] | None = None,
        held: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Every formula's value for the workloads ``w`` (k, m) (constants folded in);
        ``held``: values of the model's held formulas to use instead (a what-if's, today's)."""
        w = np.atleast_2d(np.asarray(w, dtype=np.float64))
        env: dict[str, Any] = dict(self._folded)
        env.update(self.input_defaults)
        if inputs:
            env.update({k: v for k, v in inputs.items() if k in self.input_defaults})
        for j, name in enumerate(self.parameters):
            env[name] = w[:, j]
        if held:
            env.update({k: v for k, v in held.items() if k in self.held})
        pinned = set(held or ()) & set(self.held)
        with np.errstate(all="ignore"):
            for name, fn in self._formulas:
                if name not in pinned:
                    env[name] = fn(env)  # type: ignore[operator]
        return env

    def held_values(self, w: Array, inputs: Mapping[str, Any] | None = None) -> dict[str, Array]:
        """The held formulas' values for workloads ``w``: what a what-if of them keeps."""
        w = np.atleast_2d(np.asarray(w, dtype=np.float64))
        env = self.environment(w, inputs)
        return {
            name: np.broadcast_to(np.asarray(env[name], dtype=np.float64), (w.shape[0],))
            for name in self.held
        }

    def predict(
        self,
        w: Array,
        inputs: Mapping[str, Any] | None = None,
        held: Mapping[str, Any] | None = None,
    ) -> tuple[Array, Array]:
        """Predicted counters (k, n) and resource utilisations (k, r) for workloads (k, m)
        (``held``: see :meth:`environment`)."""
        w = np.atleast_2d(np.asarray(w, dtype=np.float64))
        env = self.environment(w, inputs, held)
        k = w.shape[0]
        with np.errstate(all="ignore"):
            counters = _stack([_value(fn, env) for fn in self._counter_fns], k)
            utils = _stack([_value(fn, env) for fn in self._util_fns], k)
        return counters, utils

    def components(
        self, w: Array, inputs: Mapping[str, Any] | None = None
    ) -> dict[str, list[tuple[str, Array, Array | None]]]:
        """Per resource: (label, share of utilisation, size in B/op or None) per component."""
        w = np.atleast_2d(np.asarray(w, dtype=np.float64))
        env = self.environment(w, inputs)
        k = w.shape[0]
        out: dict[str, list[tuple[str, Array, Array | None]]] = {}
        with np.errstate(all="ignore"):
            for resource in self.resources:
                out[resource.name] = [
                    (
                        c.label,
                        np.broadcast_to(_value(c.share, env), (k,)).astype(np.float64),
                        None
                        if c.size is None
                        else np.broadcast_to(_value(c.size, env), (k,)).astype(np.float64),
                    )
                    for c in resource.components
                ]
        return out

    def stream_rates(self, w: Array, inputs: Mapping[str, Any] | None = None) -> Array:
        """Operations per second of each load stream, shape (k, streams)."""
        w = np.atleast_2d(np.asarray(w, dtype=np.float64))
        env = self.environment(w, inputs)
        with np.errstate(all="ignore"):
            return _stack([_value(fn, env) for _, fn in self.streams], w.shape[0])

    def value(self, name: str, w: Array, inputs: Mapping[str, Any] | None = None) -> Array:
        """One named formula, parameter, constant or input for workloads ``w``."""
        w = np.atleast_2d(np.asarray(w, dtype=np.float64))
        env = self.environment(w, inputs)
        if name not in env:
            raise ConfigError(f"{self.source}: no value named {name!r}{_suggest(name, env)}")
        return np.broadcast_to(np.asarray(env[name], dtype=np.float64), (w.shape[0],))

    def workload(self, values: Mapping[str, float], *, source: str = "workload") -> Array:
        """A workload vector (m,) from named values; parameters not named sit at their prior's
        centre. Unknown names and values outside the bounds are errors."""
        w = self.priors.median_w().copy()
        for name, value in values.items():
            if name not in self.parameters:
                raise ConfigError(
                    f"{source}: {name}: not a parameter of model {self.name!r}"
                    f"{_suggest(name, self.parameters)}"
                )
            j = self.parameters.index(name)
            lo, hi = self.priors.lower[j], self.priors.upper[j]
            if not (lo <= value <= hi) or not math.isfinite(value):
                raise ConfigError(f"{source}: {name}: {value} is outside its bounds [{lo}, {hi}]")
            w[j] = value
        return w

    def priors_for(self, columns: Iterable[str]) -> Priors:
        """The priors of a window observing ``columns``. Other tenants' terms (``background``
        parameters) separate the workload's share of a machine-wide counter from the rest, which
        only the workload's own counters can do: with none of those observed (machine-wide
        counters alone: sar, node-exporter, a collector without a cgroup) the workload is all
        the machine runs, and the background terms are held at their lower bound (0)."""
        return self.priors if self.workload_columns.intersection(columns) else self._alone_priors

    @property
    def counter_columns(self) -> tuple[str, ...]:
        return tuple(c.column for c in self.counters)

    @property
    def resource_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.resources)

    # -- golden cases -----------------------------------------------------------------------

    def _check_golden(self) -> None:
        for position, case in enumerate(self.spec.golden):
            key = f"golden[{position}]"
            label = f"golden case {case.name!r}"
            model = self
            if case.constants:
                try:
                    model = self.with_values(case.constants, source=f"{self.source}: {key}")
                except ConfigError as exc:
                    raise self._where.error(key, f"{label}: {exc}") from None
            try:
                w = self.workload(case.parameters, source=f"{key}.parameters")
            except ConfigError as exc:
                raise self._where.error(key, str(exc)) from None
            for name in case.inputs:
                if name not in self.input_defaults:
                    raise self._where.error(key, f"{label}: {name!r} is not an input")
            env = model.environment(w[None, :], case.inputs)
            counters, utils = model.predict(w[None, :], case.inputs)
            results: dict[str, float] = {}
            for j, c in enumerate(self.counters):
                results[c.name] = float(counters[0, j])
            for j, r in enumerate(self.resources):
                results[r.name] = float(utils[0, j])
            for name, value in env.items():
                if np.ndim(value) <= 1 and np.size(value) == 1:
                    results.setdefault(name, float(np.asarray(value).reshape(-1)[0]))
            for name, expected in case.expect.items():
                if name not in results:
                    raise self._where.error(
                        key, f"{label}: nothing named {name!r} to check{_suggest(name, results)}"
                    )
                got = results[name]
                if not (
                    math.isfinite(got)
                    and abs(got - expected) <= case.atol + case.rtol * abs(expected)
                ):
                    raise self._where.error(
                        key,
                        f"{label}: {name} = {got!r}, expected {expected!r} "
                        f"(rtol {case.rtol:g}, atol {case.atol:g})",
                    )


def _constant(value: float) -> expr.Compiled:
    def constant(env: Mapping[str, Any]) -> float:
        return value

    return constant


def _value(fn: expr.Compiled, env: Mapping[str, Any]) -> Any:
    return fn(env) if callable(fn) else fn


def _stack(values: list[Any], k: int) -> Array:
    out = np.empty((k, len(values)), dtype=np.float64)
    for j, v in enumerate(values):
        out[:, j] = v
    return out


def _suggest(name: str, choices: Any) -> str:
    close = difflib.get_close_matches(name, [str(c) for c in choices], n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""
