"""Plain sentences and findings from an inference ("disk: reads of 8 KiB bypassing the cache,
94% of the calibrated device time").

The wording comes from the model file — each resource's label, what 100% means (``capacity``)
and its components (labels, shares, request sizes) — so a model other than the built-in one
explains itself the same way.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from perfsleuth.findings import Evidence, Finding, Kind, Severity

if TYPE_CHECKING:  # only annotations: the report imports this module for format_value
    from perfsleuth.bottleneck.kernels.infer import Inference
    from perfsleuth.bottleneck.kernels.model import Model
    from perfsleuth.bottleneck.kernels.upgrades import UpgradeAnalysis

__all__ = [
    "UNEXPLAINED_SD",
    "bottleneck_finding",
    "explain",
    "format_bytes",
    "format_value",
    "unexplained",
    "upgrade_finding",
]

_BEYOND_CALIBRATION = 1.25  # utilisation of a throughput resource that questions its calibration
UNEXPLAINED_SD = 4.0
"""A counter this many error-model standard deviations off is one the model does not explain."""


def format_bytes(value: float) -> str:
    """Binary units as people say them: 8 KiB, 1.5 MiB."""
    if not math.isfinite(value):
        return str(value)
    size = abs(value)
    for limit, suffix in ((2.0**40, "TiB"), (2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**10, "KiB")):
        if size >= limit:
            return f"{value / limit:.3g} {suffix}"
    return f"{value:.0f} B"


def format_value(value: float, unit: str) -> str:
    """A model quantity with its unit, bytes in binary units."""
    if unit in ("B", "B/op"):
        return format_bytes(value) + ("" if unit == "B" else " per request")
    if unit == "B/s":
        return format_bytes(value) + "/s"
    if unit in ("1", ""):
        return f"{value:.3g}"
    return f"{value:.3g} {unit}"


def unexplained(inference: Inference, most: int = 2) -> list[tuple[str, float, float, float]]:
    """The counters the model does not explain (at least :data:`UNEXPLAINED_SD` off), worst
    first: ``(column, observed, predicted, standard deviations)``."""
    off = np.abs(inference.residual_sd)
    order = [int(i) for i in np.argsort(-off, kind="stable") if off[i] >= UNEXPLAINED_SD]
    return [
        (
            inference.columns[i],
            float(inference.observed[i]),
            float(inference.predicted[i]),
            float(inference.residual_sd[i]),
        )
        for i in order[:most]
    ]


def explain(
    model: Model, inference: Inference, uncontended: tuple[str, float] | None = None
) -> str:
    """One sentence: the most probable state — no bottleneck, or the bottleneck, how full it
    is, what fills it and the runner-up — and the counters the model does not explain.
    ``uncontended``: the resource that would limit the workload without what other tenants
    cost it, and at what load factor (:func:`~perfsleuth.bottleneck.kernels.upgrades.
    uncontended_limit`), named when it is not the headline's."""
    return (
        _headline(model, inference)
        + _uncontended(model, inference, uncontended)
        + (_misfit(model, inference))
    )


def _uncontended(model: Model, inference: Inference, uncontended: tuple[str, float] | None) -> str:
    if uncontended is None or model.uncontended is None or inference.state == "none":
        return ""
    resource, factor = uncontended
    headline = model.resources[model.resource_names.index(inference.state)]
    if resource == inference.state or not headline.throughput:
        return ""  # a memory shortage is no throughput limit: nothing to set beside it
    label = model.resources[model.resource_names.index(resource)].label
    return (
        f"; {model.uncontended[0]}, {label} would limit it instead (at {factor:.1f}x today's load)"
    )


def _misfit(model: Model, inference: Inference) -> str:
    units = {c.column: c.unit_text for c in model.counters}
    parts = [
        f"{column} (observed {format_value(observed, units[column])}, predicted "
        f"{format_value(predicted, units[column])})"
        for column, observed, predicted, _ in unexplained(inference)
    ]
    if not parts:
        return ""
    return ". The model does not explain " + " or ".join(parts) + ": weigh the answer with that"


def _headline(model: Model, inference: Inference) -> str:
    if inference.state == "none":
        j = int(np.argmax(inference.utilisation))
        resource = model.resources[j]
        return (
            f"no bottleneck (P = {inference.p('none'):.2f}): the busiest resource, "
            f"{resource.label}, is at {float(inference.utilisation[j]):.0%} "
            f"{resource.capacity}"
        )
    j = model.resource_names.index(inference.state)
    resource = model.resources[j]
    util = float(inference.utilisation[j])
    p = inference.p(inference.state)
    text = f"{resource.label} is the bottleneck (P = {p:.2f}): {util:.0%} {resource.capacity}"
    parts = model.components(inference.w[None, :], inference.inputs)[resource.name]
    if parts:
        shares = np.array([float(share[0]) for _, share, _ in parts])
        k = int(np.argmax(shares))
        label, share, size = parts[k]
        total = float(shares.sum())
        detail = label
        if size is not None and math.isfinite(float(size[0])):
            detail += f", {format_bytes(float(size[0]))} each"
        if total > 0:
            detail += f" ({float(share[0]) / total:.0%} of it)"
        text += f", mostly {detail}"
    others = [i for i in np.argsort(-inference.utilisation) if i != j]
    if others:
        nxt = int(others[0])
        text += f"; next: {model.resources[nxt].label} at {float(inference.utilisation[nxt]):.0%}"
    if p < 0.5:
        text += " (uncertain: the counters fit other explanations too)"
    elif inference.p("none") >= 0.2:
        text += f" (or no bottleneck: P = {inference.p('none'):.2f})"
    if resource.throughput and util > _BEYOND_CALIBRATION:
        # A resource that serves work cannot be busier than all of its time; the counters show
        # more work than the calibration says it can do, so its maxima are too low (calibrated
        # while other work shared the device, or at other request sizes and depths).
        text += (
            f". {resource.label} did more than its calibrated maximum: recalibrate while the "
            "machine is quiet"
        )
    return text


def bottleneck_finding(
    model: Model,
    inference: Inference,
    *,
    entity: str,
    start: datetime,
    end: datetime,
    detector: str = "bottleneck",
    warning: float = 0.8,
    error: float = 0.95,
    windows: int = 1,
    uncontended: tuple[str, float] | None = None,
) -> Finding:
    """A ``bottleneck`` finding about the inference's most probable resource: the explanation,
    and as evidence the probability of each state (no bottleneck, each resource), each
    resource's utilisation (with its 90% interval), how much the residuals widened the error
    model, the resource that would limit the workload without what other tenants cost it
    (``uncontended``, when given), the inferred workload, and the observed and predicted
    counters."""
    j = model.resource_names.index(inference.bottleneck)
    util = float(inference.utilisation[j])
    severity = (
        Severity.ERROR
        if util >= error
        else Severity.WARNING
        if util >= warning
        else (Severity.INFO)
    )
    evidence: list[Evidence] = [
        Evidence("bottleneck", model.resources[j].name),
        Evidence("windows", windows),
        Evidence("misfit", round(inference.misfit, 4), "sd"),
        Evidence("dispersion", _round(inference.dispersion)),
        Evidence("p.none", _round(inference.p("none"))),
    ]
    for i, r in enumerate(model.resources):
        evidence += [
            Evidence(f"util.{r.name}", _round(inference.utilisation[i]), "fraction"),
            Evidence(f"util.{r.name}.p05", _round(inference.util_low[i]), "fraction"),
            Evidence(f"util.{r.name}.p95", _round(inference.util_high[i]), "fraction"),
            Evidence(f"p.{r.name}", _round(inference.p(r.name))),
        ]
    if uncontended is not None:
        evidence += [
            Evidence("uncontended.limit", uncontended[0]),
            Evidence("uncontended.load", _round(uncontended[1]), "x"),
        ]
    for column, _, _, sd in unexplained(inference, most=len(inference.columns)):
        evidence.append(Evidence(f"unexplained.{column}", round(sd, 2), "sd"))
    for i, name in enumerate(model.parameters):
        unit = model.spec.parameters[name].unit
        evidence.append(Evidence(f"w.{name}", _round(inference.w[i]), unit))
    units = {c.column: c.unit_text for c in model.counters}
    for i, column in enumerate(inference.columns):
        evidence.append(
            Evidence(f"observed.{column}", _round(inference.observed[i]), units[column])
        )
        evidence.append(
            Evidence(f"predicted.{column}", _round(inference.predicted[i]), units[column])
        )
    return Finding(
        kind=Kind.BOTTLENECK,
        entity=entity,
        metric=model.resources[j].name,
        start=start,
        end=end,
        severity=severity,
        explanation=explain(model, inference, uncontended),
        evidence=tuple(evidence),
        detector=detector,
    )


def upgrade_finding(
    analysis: UpgradeAnalysis,
    *,
    entity: str,
    start: datetime,
    end: datetime,
    detector: str = "bottleneck",
) -> Finding:
    """An ``upgrade`` finding: the recommendation (or why there is none) with every option's
    maximum throughput and cost per unit of added throughput as evidence."""
    unit = f"{analysis.unit}/s"
    evidence: list[Evidence] = [
        Evidence("throughput", _round(analysis.throughput), unit),
        Evidence("max_throughput", _round(analysis.base_max_throughput), unit),
        Evidence("limit", analysis.base_limit),
    ]
    if analysis.target is not None:
        evidence.append(Evidence("target", _round(analysis.target), unit))
    if analysis.recommended is not None:
        evidence.append(Evidence("recommended", analysis.recommended.name))
    for r in analysis.results:
        evidence += [
            Evidence(f"{r.name}.price", r.price, analysis.currency),
            Evidence(f"{r.name}.max_throughput", _round(r.max_throughput), unit),
            Evidence(
                f"{r.name}.cost_per_unit",
                _round(r.cost_per_unit) if math.isfinite(r.cost_per_unit) else "n/a",
                f"{analysis.currency} per {unit}",
            ),
        ]
    return Finding(
        kind=Kind.UPGRADE,
        entity=entity,
        metric=analysis.unit,
        start=start,
        end=end,
        severity=Severity.INFO if analysis.recommended is not None else Severity.WARNING,
        explanation=analysis.reason(),
        evidence=tuple(evidence),
        detector=detector,
    )


def _round(value: float) -> float:
    v = float(value)
    if not math.isfinite(v) or v == 0:
        return v
    return float(f"{v:.6g}")
