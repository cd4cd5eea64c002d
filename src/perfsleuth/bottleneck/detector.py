"""The ``bottleneck`` detector: counter frame in, ``bottleneck`` (and ``upgrade``) findings out.

Per entity, counters are averaged over windows of ``window``; each window's counters go to the
inference (:func:`perfsleuth.bottleneck.infer.infer`). Windows whose most utilised resource is
at least ``min_utilisation`` busy and that agree on it form an episode (consecutive windows, no
hole); the episode's mean counters are inferred once more and become one finding, from the
first sample to the last. With an upgrade catalogue, each episode also gets an ``upgrade``
finding.

Counter values must be in the model's units (:mod:`perfsleuth.bottleneck.linux` writes them
so); frames of the local collector (``perfsleuth collect``) and of ``sar`` are translated
first (:mod:`perfsleuth.bottleneck.importers`). A NaN is an error, as is a negative value
of a counter the model does not mark ``signed`` (a rate of a cumulative counter cannot be
negative: a reset or wrap the collector should have caught).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
from pydantic import Field
from pydantic.dataclasses import dataclass as pydantic_dataclass

from perfsleuth.bottleneck.calibration import apply_profile, load_profile
from perfsleuth.bottleneck.errormodel import ErrorModel
from perfsleuth.bottleneck.explain import bottleneck_finding, upgrade_finding
from perfsleuth.bottleneck.importers import to_model_counters
from perfsleuth.bottleneck.infer import Inference, infer
from perfsleuth.bottleneck.model import Model, load_model
from perfsleuth.bottleneck.upgrades import UpgradeAnalysis, analyse_upgrades, load_catalogue
from perfsleuth.config import Duration
from perfsleuth.detectors.base import PARAMS
from perfsleuth.errors import ConfigError, DataError
from perfsleuth.findings import Finding
from perfsleuth.frames import coverage_of, normalise

__all__ = ["BottleneckDetector", "WindowResult", "load_setup"]

log = logging.getLogger(__name__)


def _stamp(path: str | None) -> tuple[str | None, float]:
    if path is None or path == "linux":
        return path, 0.0
    try:
        return path, Path(path).stat().st_mtime
    except OSError:
        return path, -1.0  # let the loader report the error


@functools.lru_cache(maxsize=16)
def _setup(
    model: tuple[str | None, float],
    calibration: tuple[str | None, float],
    errors: tuple[str | None, float],
) -> tuple[Model, ErrorModel]:
    loaded = load_model(model[0])
    if calibration[0] is not None:
        loaded = apply_profile(loaded, load_profile(calibration[0]))
    error_model = (
        ErrorModel.default(loaded) if errors[0] is None else ErrorModel.load(errors[0], loaded)
    )
    return loaded, error_model


def load_setup(
    model: str | None = None, calibration: str | None = None, error_model: str | None = None
) -> tuple[Model, ErrorModel]:
    """The model with its calibration and error model applied (cached while the files are
    unchanged); ``None`` or ``""`` means none."""
    return _setup(_stamp(model or None), _stamp(calibration or None), _stamp(error_model or None))


@dataclass(frozen=True, eq=False)
class WindowResult:
    """One window of one entity and what the inference made of it."""

    entity: str
    index: int
    """Window number from the entity's first window (consecutive numbers are adjacent)."""
    start: pd.Timestamp
    end: pd.Timestamp
    samples: int
    counters: dict[str, float]
    inference: Inference


@pydantic_dataclass(frozen=True, config=PARAMS)
class BottleneckDetector:
    """Which resource limits the workload, inferred from OS counters (Blake & Breese 1995).

    Parameters
    ----------
    model
        Model file, or ``"linux"`` for the built-in one.
    calibration
        Calibration profile of the machine (``perfsleuth calibrate``); empty: the model's
        nominal values.
    error_model
        Error model learned by ``perfsleuth verify``; empty: the model's.
    window
        Counters are averaged over windows this long.
    min_utilisation
        A window whose most utilised resource is below this has no bottleneck to report.
    warning_utilisation, error_utilisation
        Severity of a finding by the bottleneck's utilisation.
    min_counters
        Windows with fewer of the model's counters are skipped.
    upgrades
        An upgrade catalogue (TOML); each episode then gets an ``upgrade`` finding.
    target
        Throughput to reach (operations per second of the main stream); 0: none.
    target_factor
        Or: a multiple of the current throughput to reach; 0: none.
    device
        Block device whose counters to use in frames of the local collector or sar; empty:
        the whole disk that moved the most bytes.

    Empty strings and zeros stand for "not given" so the parameters round-trip through TOML,
    which has no null.
    seed
        Seeds the inference (starts and Laplace draws).
    """

    name: ClassVar[str] = "bottleneck"
    contract: ClassVar[str] = "counter"

    model: str = "linux"
    calibration: str = ""
    error_model: str = ""
    window: Duration = Field(default=timedelta(minutes=1))
    min_utilisation: float = Field(default=0.5, gt=0.0)
    warning_utilisation: float = Field(default=0.8, gt=0.0)
    error_utilisation: float = Field(default=0.95, gt=0.0)
    min_counters: int = Field(default=3, ge=1)
    upgrades: str = ""
    target: float = Field(default=0.0, ge=0.0)
    target_factor: float = Field(default=0.0, ge=0.0)
    device: str = ""
    seed: int = 0

    def detect(self, frame: pd.DataFrame) -> list[Finding]:
        """One ``bottleneck`` finding per episode (and an ``upgrade`` finding with a
        catalogue)."""
        if len(frame) == 0:
            return []
        model, errors = load_setup(self.model, self.calibration, self.error_model)
        catalogue = load_catalogue(self.upgrades, model) if self.upgrades else None
        findings: list[Finding] = []
        for entity, windows in self._windows(frame, model, errors).items():
            for episode in self._episodes(windows):
                result = self._episode_inference(episode, model, errors)
                start = episode[0].start.to_pydatetime()
                end = episode[-1].end.to_pydatetime()
                findings.append(
                    bottleneck_finding(
                        model,
                        result,
                        entity=entity,
                        start=start,
                        end=end,
                        detector=self.name,
                        warning=self.warning_utilisation,
                        error=self.error_utilisation,
                        windows=len(episode),
                    )
                )
                if catalogue is not None:
                    analysis = analyse_upgrades(
                        model,
                        result.w,
                        catalogue,
                        inputs=result.inputs,
                        target=self.target or None,
                        target_factor=self.target_factor or None,
                    )
                    findings.append(
                        upgrade_finding(
                            analysis, entity=entity, start=start, end=end, detector=self.name
                        )
                    )
        return findings

    def analyse(self, frame: pd.DataFrame) -> list[WindowResult]:
        """Every window's inference, bottleneck or not (for reports)."""
        if len(frame) == 0:
            return []
        model, errors = load_setup(self.model, self.calibration, self.error_model)
        return [w for ws in self._windows(frame, model, errors).values() for w in ws]

    def overall(self, windows: list[WindowResult]) -> Inference:
        """One inference on the mean counters of ``windows`` (sample-weighted)."""
        model, errors = load_setup(self.model, self.calibration, self.error_model)
        return self._episode_inference(windows, model, errors)

    def upgrade_analyses(self, frame: pd.DataFrame) -> dict[str, UpgradeAnalysis]:
        """Upgrade analysis of each entity's whole period (needs ``upgrades``), for reports."""
        if not self.upgrades:
            raise ConfigError("upgrade analysis needs an upgrades catalogue (upgrades = FILE)")
        model, _ = load_setup(self.model, self.calibration, self.error_model)
        catalogue = load_catalogue(self.upgrades, model)
        windows = self.analyse(frame)
        out: dict[str, UpgradeAnalysis] = {}
        for entity in sorted({w.entity for w in windows}):
            whole = self.overall([w for w in windows if w.entity == entity])
            out[entity] = analyse_upgrades(
                model,
                whole.w,
                catalogue,
                inputs=whole.inputs,
                target=self.target or None,
                target_factor=self.target_factor or None,
            )
        return out

    # -- internals --------------------------------------------------------------------------

    def _windows(
        self, frame: pd.DataFrame, model: Model, errors: ErrorModel
    ) -> dict[str, list[WindowResult]]:
        # before normalising: the collector's units are its own
        frame = to_model_counters(frame, device=self.device or None)
        coverage = coverage_of(frame)
        if coverage is None or coverage.contract != "counter":
            frame = normalise(frame, "counter")
        _check_values(frame, model)
        width = pd.Timedelta(self.window)
        wanted = set(model.counter_columns) | {i.counter for i in model.inputs}
        data = frame[frame["counter"].isin(wanted)]
        out: dict[str, list[WindowResult]] = {}
        for entity, rows in data.groupby("entity", sort=True):
            origin = (
                rows["time"].min().floor(width)
                if width >= pd.Timedelta(seconds=1)
                else (rows["time"].min())
            )
            bins = ((rows["time"] - origin) // width).astype("int64")
            results = []
            for index, part in rows.groupby(bins, sort=True):
                means = part.groupby("counter")["value"].mean()
                counters = {str(k): float(v) for k, v in means.items()}
                observed = sum(1 for c in model.counter_columns if c in counters)
                if observed < self.min_counters:
                    log.info("%s: window %s has %d counters; skipped", entity, index, observed)
                    continue
                inference = infer(
                    model,
                    counters,
                    error_model=errors,
                    seed=self.seed,
                    min_counters=self.min_counters,
                )
                results.append(
                    WindowResult(
                        entity=str(entity),
                        index=int(index),
                        start=part["time"].min(),
                        end=part["time"].max(),
                        samples=int(part["time"].nunique()),
                        counters=counters,
                        inference=inference,
                    )
                )
            out[str(entity)] = results
        return out

    def _episodes(self, windows: list[WindowResult]) -> list[list[WindowResult]]:
        episodes: list[list[WindowResult]] = []
        last_index = None
        for w in windows:
            util = float(np.max(w.inference.utilisation))
            index = w.index
            if util < self.min_utilisation:
                last_index = None
                continue
            if (
                episodes
                and last_index is not None
                and index == last_index + 1
                and episodes[-1][-1].inference.bottleneck == w.inference.bottleneck
            ):
                episodes[-1].append(w)
            else:
                episodes.append([w])
            last_index = index
        return episodes

    def _episode_inference(
        self, episode: list[WindowResult], model: Model, errors: ErrorModel
    ) -> Inference:
        if len(episode) == 1:
            return episode[0].inference
        keys = set().union(*(w.counters for w in episode))
        means = {}
        for key in keys:
            values = [w.counters[key] for w in episode if key in w.counters]
            weights = [w.samples for w in episode if key in w.counters]
            means[key] = float(np.average(values, weights=weights))
        return infer(
            model, means, error_model=errors, seed=self.seed, min_counters=self.min_counters
        )


def _check_values(frame: pd.DataFrame, model: Model) -> None:
    values = frame["value"].to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"counter {frame['counter'].iat[i]!r} of {frame['entity'].iat[i]!r} at "
            f"{frame['time'].iat[i].isoformat()}: not a finite number ({values[i]!r})"
        )
    unsigned = [c.column for c in model.counters if not c.signed]
    unsigned += [i.counter for i in model.inputs]
    negative = (values < 0) & frame["counter"].isin(unsigned).to_numpy()
    if negative.any():
        i = int(np.flatnonzero(negative)[0])
        raise DataError(
            f"counter {frame['counter'].iat[i]!r} of {frame['entity'].iat[i]!r} at "
            f"{frame['time'].iat[i].isoformat()}: negative value {values[i]:g} (a rate of a "
            "cumulative counter cannot be negative: was the counter reset?)"
        )
