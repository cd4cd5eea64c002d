"""The Gaussian error model between predicted and observed counters (Blake & Breese §4).

The paper takes ``c_a = f(w) + ε`` with ``ε ~ N(μ, Σ)`` learned from verification runs. Counters
here span nine orders of magnitude (bytes per second next to CPU cores), and their errors grow
with their size, so the Gaussian is on a variance-stabilised scale,

    g(c) = asinh(c / scale),

which is about ``ln(2c / scale)`` above the counter's ``scale`` (errors relative there) and about
``c / scale`` below it (errors absolute): ``g(c_a) - g(f(w)) ~ N(μ, Σ)``.

Before verification, μ = 0 and Σ is diagonal with each counter's ``sd`` from the model file.
:func:`learn_error_model` updates both from verification cases as the posterior mean under a
normal–inverse-Wishart prior centred on those defaults (DeGroot's update, which the paper
mentions): with few cases Σ stays near the default diagonal, with many it approaches the sample
covariance — the shrinkage the issue asks for when cases are few. Counters missing from a case
are skipped pairwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from perfsleuth.bottleneck.kernels.model import KeyLocator, Model
from perfsleuth.errors import ConfigError, DataError
from perfsleuth.tomlfile import read_toml

__all__ = ["ErrorModel", "learn_error_model"]

Array = npt.NDArray[np.float64]
PRIOR_CASES = 5.0
"""Weight of the model's default error model, in verification cases."""


@dataclass(frozen=True, eq=False)
class ErrorModel:
    """Mean and covariance of ``g(observed) - g(predicted)`` for the model's counters."""

    columns: tuple[str, ...]
    scale: Array
    mean: Array
    cov: Array
    cases: int = 0
    source: str = "model defaults"
    _cache: dict[tuple[int, ...], tuple[Array, Array]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def default(cls, model: Model) -> ErrorModel:
        """μ = 0 and Σ = diag(sd²) from the model file."""
        sd = np.array([c.sd for c in model.counters], dtype=np.float64)
        return cls(
            columns=model.counter_columns,
            scale=np.array([c.scale for c in model.counters], dtype=np.float64),
            mean=np.zeros(len(sd)),
            cov=np.diag(sd**2),
        )

    def widened(self, factor: float) -> ErrorModel:
        """The same errors with standard deviations ``factor`` times as wide."""
        if factor == 1.0:
            return self
        return replace(
            self,
            cov=self.cov * factor**2,
            source=f"{self.source}, widened {factor:g}x",
            _cache={},
        )

    def transform(self, values: Array) -> Array:
        """``asinh(values / scale)`` along the last axis."""
        out: Array = np.arcsinh(np.asarray(values, dtype=np.float64) / self.scale)
        return out

    def whitening(self, observed: Sequence[int] | npt.NDArray[np.intp]) -> tuple[Array, Array]:
        """(mean, W) for the counters at positions ``observed``, with ``WᵀW = Σ⁻¹``: the
        Gaussian marginal of the observed counters (dropping the rest is exact)."""
        key = tuple(int(i) for i in observed)
        if key not in self._cache:
            idx = np.asarray(key, dtype=np.intp)
            sub = self.cov[np.ix_(idx, idx)]
            lower = np.linalg.cholesky(sub)
            w = np.linalg.solve(lower, np.eye(len(idx)))  # L⁻¹: (L⁻¹)ᵀL⁻¹ = Σ⁻¹
            self._cache[key] = (self.mean[idx], w)
        return self._cache[key]

    @property
    def sd(self) -> Array:
        out: Array = np.sqrt(np.diag(self.cov))
        return out

    # -- files ------------------------------------------------------------------------------

    def to_toml(self) -> str:
        """The error model as TOML (``perfsleuth verify`` writes this)."""
        lines = [
            "# Error model of perfsleuth's bottleneck inference: g = asinh(counter / scale),",
            "# g(observed) - g(predicted) ~ N(mean, cov). Learned by `perfsleuth verify`.",
            "[error_model]",
            f"cases = {self.cases}",
            f"source = {_quote(self.source)}",
            "columns = [" + ", ".join(_quote(c) for c in self.columns) + "]",
            "scale = [" + ", ".join(_num(v) for v in self.scale) + "]",
            "mean = [" + ", ".join(_num(v) for v in self.mean) + "]",
            "cov = [",
        ]
        for row in self.cov:
            lines.append("  [" + ", ".join(_num(v) for v in row) + "],")
        lines.append("]")
        return "\n".join(lines) + "\n"

    def save(self, path: str | Path) -> Path:
        target = Path(path)
        target.write_text(self.to_toml(), encoding="utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path, model: Model) -> ErrorModel:
        """Read an error model written by :meth:`save`; counters are matched to ``model`` by
        column, and counters it lacks keep the model's defaults."""
        document = read_toml(path, what="error model")
        source, at = document.source, KeyLocator.of(document)
        section = document.data.get("error_model")
        if not isinstance(section, dict):
            raise ConfigError(f"{source}: no [error_model] table")
        extra = set(section) - {"cases", "source", "columns", "scale", "mean", "cov"}
        if extra:
            raise at.error(f"error_model.{sorted(extra)[0]}", "unknown key")
        try:
            columns = [str(c) for c in section["columns"]]
            scale = np.asarray(section["scale"], dtype=np.float64)
            mean = np.asarray(section["mean"], dtype=np.float64)
            cov = np.asarray(section["cov"], dtype=np.float64)
        except KeyError as exc:
            raise at.error(f"error_model.{exc.args[0]}", "missing") from None
        except (TypeError, ValueError) as exc:
            raise at.error("error_model", f"not numbers: {exc}") from None
        n = len(columns)
        for key, array, shape in (
            ("scale", scale, (n,)),
            ("mean", mean, (n,)),
            ("cov", cov, (n, n)),
        ):
            if array.shape != shape or not np.isfinite(array).all():
                raise at.error(f"error_model.{key}", f"expected {shape} finite numbers")
        if (scale <= 0).any():
            raise at.error("error_model.scale", "must be positive")
        if not np.allclose(cov, cov.T) or np.linalg.eigvalsh(cov).min() <= 0:
            raise at.error("error_model.cov", "not symmetric positive definite")
        cases = section.get("cases", 0)
        if isinstance(cases, bool) or not isinstance(cases, int) or cases < 0:
            raise at.error("error_model.cases", f"expected a count, got {cases!r}")
        base = cls.default(model)
        index = {c: i for i, c in enumerate(base.columns)}
        unknown = [c for c in columns if c not in index]
        if unknown:
            raise at.error(
                "error_model.columns", f"{unknown[0]!r} is not a counter of model {model.name!r}"
            )
        pos = np.array([index[c] for c in columns], dtype=np.intp)
        if not np.allclose(scale, base.scale[pos]):
            raise at.error(
                "error_model.scale",
                f"differs from model {model.name!r}'s counter scales (learned for another "
                "model version?)",
            )
        full_mean = base.mean.copy()
        full_cov = base.cov.copy()
        full_mean[pos] = mean
        full_cov[np.ix_(pos, pos)] = cov
        return cls(
            columns=base.columns,
            scale=base.scale,
            mean=full_mean,
            cov=full_cov,
            cases=cases,
            source=source,
        )


def learn_error_model(
    model: Model,
    predicted: Array,
    observed: Array,
    *,
    prior: ErrorModel | None = None,
    prior_cases: float = PRIOR_CASES,
    source: str = "verification",
) -> ErrorModel:
    """Learn μ and Σ from verification cases (rows): predicted and observed counters in the
    model's counter order; NaN marks a counter a case did not observe.

    The posterior mean under a normal–inverse-Wishart prior centred on ``prior`` (default: the
    model's), worth ``prior_cases`` cases, computed entrywise over the cases observing both
    counters, then made positive definite.
    """
    base = ErrorModel.default(model) if prior is None else prior
    predicted = np.atleast_2d(np.asarray(predicted, dtype=np.float64))
    observed = np.atleast_2d(np.asarray(observed, dtype=np.float64))
    n = len(base.columns)
    if predicted.shape != observed.shape or predicted.shape[1] != n:
        raise DataError(
            f"{source}: expected cases × {n} counters, got {predicted.shape} and {observed.shape}"
        )
    if not np.isfinite(predicted).all():
        raise DataError(f"{source}: predicted counters must be finite")
    if np.isinf(observed).any():
        raise DataError(f"{source}: observed counters must be finite or NaN (not observed)")
    resid = base.transform(observed) - base.transform(predicted)
    seen = np.isfinite(resid)
    counts = seen.sum(axis=0).astype(np.float64)
    sums = np.where(seen, resid, 0.0).sum(axis=0)
    k0 = prior_cases
    mean = (k0 * base.mean + sums) / (k0 + counts)
    centred = np.where(seen, resid - mean, 0.0)
    both = seen.T.astype(np.float64) @ seen.astype(np.float64)  # cases observing i and j
    scatter = centred.T @ centred
    cov = (k0 * base.cov + scatter) / (k0 + both)
    cov = 0.5 * (cov + cov.T)
    # pairwise estimates need not be positive definite: clip the spectrum
    values, vectors = np.linalg.eigh(cov)
    floor = 1e-6 * max(float(values.max()), 1e-12)
    cov = (vectors * np.maximum(values, floor)) @ vectors.T
    cases = int(seen.any(axis=1).sum())
    return ErrorModel(base.columns, base.scale, mean, cov, cases=cases, source=source)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _num(value: Any) -> str:
    v = float(value)
    if not math.isfinite(v):  # pragma: no cover - checked before writing
        raise ValueError(f"not finite: {v}")
    return repr(v)
