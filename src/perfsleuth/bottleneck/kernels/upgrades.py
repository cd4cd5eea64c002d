"""Upgrade advice: for each option, the predicted maximum throughput and its cost (§6 of the
paper).

The inferred workload is scaled up (every parameter marked ``load = true``: rates, CPU per
second; sizes, extents and memory stay, and the model's ``held`` formulas keep today's values:
the same program, its threads the same) until the first throughput-limiting resource reaches
100%; that load factor t* times the current throughput is the maximum throughput. The unit of
throughput is, as in the paper, the stream with the highest rate under the inferred workload.
Each catalogue option (and each combination of up to ``max_combined`` options from different
groups) changes the calibration — a whole profile of the new hardware, constants replaced, or
constants and tables scaled — and gets its own t*; its cost per unit of added throughput is
``price / (X_max(option) − X_max(now))``. Only an option that adds throughput (at least
:data:`MIN_GAIN` of today's maximum) is ever recommended: the cheapest that meets the target,
or without a target the lowest price per unit of added throughput; when today's maximum meets
the target already, nothing is.

A catalogue file::

    [catalogue]
    currency = "EUR"
    max_combined = 2

    [[option]]
    name = "NVMe SSD"
    price = 180
    group = "disk"                            # options of one group exclude each other
    scale = { read_a = 0.3, read_b = 0.5 }    # constants or tables (their y) multiplied
    # set = { ncpu = 4 }                      # constants replaced
    # profile = "nvme-profile.toml"           # a calibration measured on the new hardware
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from perfsleuth.bottleneck.kernels.calibration import Profile, apply_profile, load_profile
from perfsleuth.bottleneck.kernels.model import KeyLocator, Model
from perfsleuth.errors import ConfigError
from perfsleuth.tomlfile import read_toml, validate

__all__ = [
    "MIN_GAIN",
    "Catalogue",
    "Option",
    "UpgradeAnalysis",
    "UpgradeResult",
    "analyse_upgrades",
    "apply_option",
    "load_catalogue",
    "max_load",
    "uncontended_limit",
]

Array = npt.NDArray[np.float64]
_T_MIN, _T_MAX = 1e-3, 1e5  # load factors searched
MIN_GAIN = 0.05
"""Added throughput, as a share of today's maximum, below which an option buys nothing."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _OptionSpec(_Strict):
    name: str = Field(min_length=1)
    price: float = Field(ge=0)
    group: str = ""
    description: str = ""
    profile: str | None = None
    set: dict[str, float] = Field(default_factory=dict)
    scale: dict[str, float] = Field(default_factory=dict)


class _CatalogueSpec(_Strict):
    currency: str = "USD"
    max_combined: int = Field(default=2, ge=1, le=4)


class _CatalogueFile(_Strict):
    catalogue: _CatalogueSpec = Field(default_factory=_CatalogueSpec)
    option: list[_OptionSpec] = Field(min_length=1)


@dataclass(frozen=True)
class Option:
    name: str
    price: float
    group: str = ""
    description: str = ""
    profile: Profile | None = None
    set: Mapping[str, float] | None = None
    scale: Mapping[str, float] | None = None


@dataclass(frozen=True)
class Catalogue:
    options: tuple[Option, ...]
    currency: str = "USD"
    max_combined: int = 2
    source: str = "<catalogue>"


def load_catalogue(path: str | Path, model: Model | None = None) -> Catalogue:
    """Read a catalogue; with ``model``, check every option applies to it (names exist).
    Errors name the file, the line and the key."""
    document = read_toml(path, what="catalogue")
    source, at = document.source, KeyLocator.of(document)
    spec = validate(_CatalogueFile, document.data, source=source, locate=document.line)
    options = []
    names: set[str] = set()
    for i, o in enumerate(spec.option):
        if o.name in names:
            raise at.error(f"option[{i}].name", f"{o.name!r} appears twice")
        names.add(o.name)
        profile = None
        if o.profile is not None:
            profile_path = Path(o.profile)
            if not profile_path.is_absolute():
                profile_path = Path(path).parent / profile_path
            try:
                profile = load_profile(profile_path)
            except ConfigError as exc:
                raise at.error(f"option[{i}].profile", str(exc)) from None
        for key, factor in o.scale.items():
            if not (math.isfinite(factor) and factor > 0):
                raise at.error(f"option[{i}].scale.{key}", f"must be positive, got {factor}")
        options.append(Option(o.name, o.price, o.group, o.description, profile, o.set, o.scale))
    catalogue = Catalogue(
        tuple(options), spec.catalogue.currency, spec.catalogue.max_combined, source
    )
    if model is not None:
        for i, option in enumerate(catalogue.options):
            try:
                apply_option(model, option)
            except ConfigError as exc:
                line = at.line(f"option[{i}]")
                where = f"{source}:{line}" if line else source
                raise ConfigError(f"{where}: option[{i}] ({option.name!r}): {exc}") from None
    return catalogue


def apply_option(model: Model, option: Option) -> Model:
    """``model`` after the option: its profile, then ``set``, then ``scale``."""
    changed = apply_profile(model, option.profile) if option.profile is not None else model
    constants: dict[str, float] = dict(option.set or {})
    tables: dict[str, tuple[list[float], list[float]]] = {}
    for name, factor in (option.scale or {}).items():
        if name in changed.constants:
            constants[name] = constants.get(name, changed.constants[name]) * factor
        elif name in changed.tables:
            table = changed.tables[name]
            tables[name] = (list(map(float, table.x)), list(map(float, table.y * factor)))
        else:
            raise ConfigError(f"scale.{name}: not a constant or table of model {model.name!r}")
    if not constants and not tables:
        return changed
    return changed.with_values(constants, tables, source=f"option {option.name!r}")


def max_load(
    model: Model,
    w: Array,
    inputs: Mapping[str, float] | None = None,
    held: Mapping[str, Array] | None = None,
) -> tuple[float, str]:
    """The load factor at which the first throughput-limiting resource reaches 100%, and that
    resource. Capped at 1e5 (nothing saturates) and floored at 1e-3. The model's held
    formulas (the workload's threads, the CPUs it was measured on) keep ``held``, by default
    their values for ``w`` under ``model``: more load is more work for the same program."""
    limited = np.array([r.throughput for r in model.resources], dtype=bool)
    names = [r.name for r in model.resources]
    today = model.held_values(w, inputs) if held is None else held

    def worst(factors: Array) -> tuple[Array, Array]:
        loads = np.where(model.load_mask, w[None, :] * factors[:, None], w[None, :])
        _, utils = model.predict(loads, inputs, today)
        utils = np.where(np.isfinite(utils), utils, np.inf)[:, limited]
        return utils.max(axis=1), utils.argmax(axis=1)

    grid = np.geomspace(_T_MIN, _T_MAX, 161)
    low, high = _T_MIN, _T_MAX
    for _ in range(3):
        peak, _ = worst(grid)
        over = np.flatnonzero(peak > 1.0)
        if not len(over):
            low = float(grid[-1])
            break
        first = int(over[0])
        if first == 0:
            low = high = float(grid[0])
            break
        low, high = float(grid[first - 1]), float(grid[first])
        grid = np.geomspace(low, high, 33)
    factor = low if high in (low, _T_MAX) else math.sqrt(low * high)
    _, which = worst(np.array([max(factor, _T_MIN) * 1.0001]))
    resource = [n for n, keep in zip(names, limited, strict=True) if keep][int(which[0])]
    return factor, resource


def uncontended_limit(
    model: Model, w: Array, inputs: Mapping[str, float] | None = None
) -> tuple[str, float] | None:
    """The resource that would limit workload ``w`` without what other tenants cost it (the
    model's ``uncontended`` parameters set, its held formulas at today's values), and the
    load factor at which it would; ``None`` when the model declares no such parameters."""
    if model.uncontended is None:
        return None
    free = np.array(w, dtype=np.float64)
    for i, value in model.uncontended[1].items():
        free[i] = value
    factor, limit = max_load(model, free, inputs, model.held_values(w, inputs))
    return limit, factor


@dataclass(frozen=True)
class UpgradeResult:
    """One option (or combination) and what it does for the inferred workload."""

    options: tuple[str, ...]
    price: float
    max_load: float
    """Load factor at which the next resource saturates (×current workload)."""
    max_throughput: float
    added: float
    cost_per_unit: float
    """price / added throughput (inf when it adds none)."""
    limit: str
    """The resource that saturates first after the upgrade."""
    meets_target: bool

    @property
    def name(self) -> str:
        return " + ".join(self.options)


@dataclass(frozen=True)
class UpgradeAnalysis:
    """Every option's result, the current state and the recommendation."""

    unit: str
    """The throughput unit: the stream with the highest rate (operations per second)."""
    throughput: float
    """Current rate of that stream."""
    base_max_load: float
    base_max_throughput: float
    base_limit: str
    currency: str
    target: float | None
    results: tuple[UpgradeResult, ...]
    recommended: UpgradeResult | None

    def reason(self) -> str:
        """One sentence: what to buy and why, or why nothing fits."""
        unit = f"{self.unit}/s"
        if self.recommended is None:
            if self.target is not None and self.base_max_throughput >= self.target:
                return (
                    f"the target of {_rate(self.target)} {unit} is within today's maximum "
                    f"({_rate(self.base_max_throughput)}): no upgrade needed"
                )
            if self.target is not None:
                best = max(self.results, key=lambda r: r.max_throughput, default=None)
                reach = (
                    ""
                    if best is None
                    else (f"; the best, {best.name}, reaches {_rate(best.max_throughput)} {unit}")
                )
                return (
                    f"no option meets the target of {_rate(self.target)} {unit} (now "
                    f"{_rate(self.base_max_throughput)} at most){reach}"
                )
            return f"no option adds throughput: {self.base_limit} stays the limit"
        r = self.recommended
        why = (
            "the cheapest that meets the target"
            if self.target is not None
            else ("the lowest price per added throughput")
        )
        return (
            f"{r.name} ({_money(r.price, self.currency)}) is {why}: maximum "
            f"{_rate(self.base_max_throughput)} → {_rate(r.max_throughput)} {unit} "
            f"({_money(r.cost_per_unit, self.currency)} per added {unit}); then {r.limit} limits"
        )


def analyse_upgrades(
    model: Model,
    w: Array,
    catalogue: Catalogue,
    *,
    inputs: Mapping[str, float] | None = None,
    target: float | None = None,
    target_factor: float | None = None,
) -> UpgradeAnalysis:
    """Evaluate every option and combination for workload ``w``.

    ``target`` is a throughput in the unit stream's operations per second; ``target_factor``
    a multiple of the current throughput (give at most one).
    """
    if target is not None and target_factor is not None:
        raise ConfigError("give a target throughput or a target factor, not both")
    w = np.asarray(w, dtype=np.float64)
    rates = model.stream_rates(w[None, :], inputs)[0]
    main = int(np.argmax(rates))
    unit = model.streams[main][0]
    now = float(rates[main])
    # what the options keep: today's threads and the CPUs they were measured on
    today = model.held_values(w, inputs)
    base_t, base_limit = max_load(model, w, inputs, today)
    base_max = base_t * now
    goal = (
        target if target is not None else (None if target_factor is None else target_factor * now)
    )
    results = []
    for combo in _combinations(catalogue.options, catalogue.max_combined):
        changed = model
        for option in combo:
            changed = apply_option(changed, option)
        t, limit = max_load(changed, w, inputs, today)
        top = t * now
        added = top - base_max
        price = float(sum(o.price for o in combo))
        per_unit = price / added if added > 1e-9 * max(base_max, 1e-300) else math.inf
        results.append(
            UpgradeResult(
                options=tuple(o.name for o in combo),
                price=price,
                max_load=t,
                max_throughput=top,
                added=added,
                cost_per_unit=per_unit,
                limit=limit,
                meets_target=goal is not None and top >= goal,
            )
        )
    results.sort(key=lambda r: (r.cost_per_unit, r.price, r.name))
    useful = [
        r for r in results if math.isfinite(r.cost_per_unit) and r.added > MIN_GAIN * base_max
    ]
    if goal is not None:
        meeting = [r for r in useful if r.meets_target] if base_max < goal else []
        recommended = min(meeting, key=lambda r: (r.price, r.cost_per_unit), default=None)
    else:
        recommended = useful[0] if useful else None
    return UpgradeAnalysis(
        unit=unit,
        throughput=now,
        base_max_load=base_t,
        base_max_throughput=base_max,
        base_limit=base_limit,
        currency=catalogue.currency,
        target=goal,
        results=tuple(results),
        recommended=recommended,
    )


def _combinations(options: Sequence[Option], most: int) -> list[tuple[Option, ...]]:
    combos: list[tuple[Option, ...]] = []
    for size in range(1, min(most, len(options)) + 1):
        for combo in itertools.combinations(options, size):
            groups = [o.group for o in combo if o.group]
            if len(groups) == len(set(groups)):
                combos.append(combo)
    return combos


def _rate(value: float) -> str:
    if not math.isfinite(value):
        return "∞"
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.3g}{suffix}"
    return f"{value:.3g}"


def _money(value: float, currency: str) -> str:
    if not math.isfinite(value):
        return "n/a"
    return f"{value:,.2f} {currency}" if value < 100 else f"{value:,.0f} {currency}"


def describe(result: UpgradeResult, analysis: UpgradeAnalysis) -> dict[str, Any]:
    """A row for tables: option, price, max throughput, added, cost per unit, limit."""
    return {
        "option": result.name,
        "price": result.price,
        "max_throughput": result.max_throughput,
        "added": result.added,
        "cost_per_unit": result.cost_per_unit,
        "limit": result.limit,
        "meets_target": result.meets_target,
        "unit": analysis.unit,
    }
