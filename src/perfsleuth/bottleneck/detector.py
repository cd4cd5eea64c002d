"""The ``bottleneck`` detector: counter frame in, a :class:`BottleneckAnalysis` out.

Per entity, the samples are cut into windows aligned to the data
(:func:`perfsleuth.bottleneck.kernels.windows.steady_windows`): from the first sample, at the
changes of the counters, at most ``window`` and at least ``min_window`` long (a shorter
recording is one window). Each window's mean counters go to the inference
(:func:`perfsleuth.bottleneck.kernels.infer.infer_many`: every window of the frame at once),
whose headline is the most probable state — no bottleneck (no resource at
``min_utilisation``), or a resource. Consecutive windows in the same bottleneck state form an
episode; its mean counters are inferred once more and become one ``bottleneck`` finding, from
its first sample to its last. The whole period of each entity is inferred too (what the
report's bars and tables show). With an upgrade catalogue, each episode and each entity's whole
period get an upgrade analysis, and each episode an ``upgrade`` finding.

Counter values must be in the model's units (:mod:`perfsleuth.bottleneck.linux` writes them
so); frames of the local collector (``perfsleuth collect``) and of ``sar`` are translated
first (:mod:`perfsleuth.bottleneck.importers`). A NaN is an error, as is a negative value
of a counter the model does not mark ``signed`` (a rate of a cumulative counter cannot be
negative: a reset or wrap the collector should have caught).
"""

from __future__ import annotations

import functools
import html
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
from pydantic import Field
from pydantic.dataclasses import dataclass as pydantic_dataclass

from perfsleuth.analysis import PARAMS, DetectorMixin, Summary
from perfsleuth.bottleneck.explain import bottleneck_finding, upgrade_finding
from perfsleuth.bottleneck.importers import by_entity, to_model_counters
from perfsleuth.bottleneck.kernels.calibration import ERROR_SCALE, apply_profile, load_profile
from perfsleuth.bottleneck.kernels.errormodel import ErrorModel
from perfsleuth.bottleneck.kernels.infer import NONE, Inference, infer_many
from perfsleuth.bottleneck.kernels.model import Model, load_model
from perfsleuth.bottleneck.kernels.upgrades import (
    Catalogue,
    UpgradeAnalysis,
    analyse_upgrades,
    load_catalogue,
    uncontended_limit,
)
from perfsleuth.bottleneck.kernels.windows import noise_scale, steady_windows
from perfsleuth.durations import Duration
from perfsleuth.errors import DataError
from perfsleuth.findings import Finding
from perfsleuth.frames import coverage_of, normalise

__all__ = [
    "CHECK",
    "BottleneckAnalysis",
    "BottleneckDetector",
    "EntityBottlenecks",
    "Episode",
    "ErrorModel",
    "Inference",
    "Model",
    "UpgradeAnalysis",
    "WindowResult",
    "load_setup",
]

log = logging.getLogger(__name__)

CHECK = "bottleneck"
"""What findings of this family record as their ``detector``."""

TEMPERATURE = 4.0
"""The likelihood temperature with the least Brier score on the tuning halves of the three real
corpora, with and without the per-thread schedstat counters, against their construction labels
(``benchmarks/bottleneck_accuracy.py --fit``; 1, 1.5, 2, 3, 4, 6 and 8 tried, every one with
the same headlines: 162 of 180): Brier 0.190 at 1, 0.179 at 4. Since the workload's CPU demand
comes from the counters a user has, widening no longer turns CPU-bound windows without
schedstat into "none" (it did before, and the fit chose 1); see docs/bottleneck.md."""


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
    widen = 1.0
    if calibration[0] is not None:
        profile = load_profile(calibration[0])
        loaded = apply_profile(loaded, profile)
        # calibrated on a busy machine: its maxima are less sure (load_profile checked it)
        widen = float(profile.info.get(ERROR_SCALE, "1"))
    error_model = (
        ErrorModel.default(loaded) if errors[0] is None else ErrorModel.load(errors[0], loaded)
    )
    return loaded, error_model.widened(widen)


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


@dataclass(frozen=True, eq=False)
class Episode:
    """Consecutive windows of one entity that saturate the same resource (one finding)."""

    entity: str
    windows: tuple[WindowResult, ...]
    inference: Inference
    """The inference on the episode's mean counters (sample-weighted)."""
    upgrades: UpgradeAnalysis | None
    """The upgrade analysis of that inference (``None`` without a catalogue)."""

    @property
    def start(self) -> pd.Timestamp:
        return self.windows[0].start

    @property
    def end(self) -> pd.Timestamp:
        return self.windows[-1].end

    @property
    def bottleneck(self) -> str:
        """The episode's resource: the state its windows agree on."""
        return self.windows[0].inference.state


@dataclass(frozen=True, eq=False)
class EntityBottlenecks:
    """One entity: its windows, its whole period, its episodes and upgrade advice."""

    entity: str
    windows: tuple[WindowResult, ...]
    overall: Inference
    """One inference on the mean counters of all its windows (sample-weighted)."""
    episodes: tuple[Episode, ...]
    upgrades: UpgradeAnalysis | None
    """Upgrade analysis of the whole period (``None`` without a catalogue)."""

    @property
    def state(self) -> str:
        """The entity's headline: its longest episode's bottleneck (the first of equals), or
        ``"none"`` when no window has one."""
        if not self.episodes:
            return NONE
        longest = max(self.episodes, key=lambda e: (e.end - e.start, -e.start.value))
        return longest.bottleneck


@dataclass(frozen=True, eq=False)
class BottleneckAnalysis:
    """Every entity of a counter frame inferred: the findings and what the report draws.

    ``model`` and ``error_model`` are the ones the inference used (calibration applied);
    ``entities`` are sorted by name and hold only entities with at least one window.
    """

    detector: BottleneckDetector
    model: Model
    error_model: ErrorModel
    entities: tuple[EntityBottlenecks, ...]
    findings: tuple[Finding, ...]

    @property
    def windows(self) -> tuple[WindowResult, ...]:
        """Every window of every entity, entity by entity."""
        return tuple(w for e in self.entities for w in e.windows)

    @property
    def episodes(self) -> tuple[Episode, ...]:
        """Every episode (one ``bottleneck`` finding each), entity by entity."""
        return tuple(p for e in self.entities for p in e.episodes)

    @property
    def overall(self) -> dict[str, Inference]:
        """The whole-period inference of each entity."""
        return {e.entity: e.overall for e in self.entities}

    @property
    def upgrades(self) -> dict[str, UpgradeAnalysis]:
        """The whole-period upgrade analysis of each entity (empty without a catalogue)."""
        return {e.entity: e.upgrades for e in self.entities if e.upgrades is not None}

    @property
    def calibrated(self) -> bool:
        """Whether a calibration profile replaced the model's nominal values."""
        return bool(self.detector.calibration)

    def entity(self, name: str) -> EntityBottlenecks:
        """The analysis of one entity (``KeyError`` if it had no window)."""
        for e in self.entities:
            if e.entity == name:
                return e
        raise KeyError(name)

    def summary(self) -> Summary:
        """Per entity: the bottleneck (or none) with its probability, and the upgrade."""
        calibrated = "calibrated" if self.calibrated else "uncalibrated"
        n = len(self.entities)
        head = (
            f"{n} entit{'y' if n == 1 else 'ies'}, {len(self.windows)} window(s) (model "
            f"{self.model.name!r}, {calibrated}); {len(self.episodes)} bottleneck episode(s), "
            f"{len(self.findings)} finding(s)."
        )
        lines = [_entity_line(self.model, e) for e in self.entities]
        items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        return Summary(
            text="\n".join([head, *(f"  {line}" for line in lines)]),
            html=f"<p>{html.escape(head)}</p>" + (f"<ul>{items}</ul>" if items else ""),
        )


def _entity_line(model: Model, entity: EntityBottlenecks) -> str:
    if entity.episodes:
        parts = []
        for episode in entity.episodes:
            inference = episode.inference
            name = episode.bottleneck
            parts.append(
                f"{_label(model, name)} (P = {inference.p(name):.2f}, "
                f"{inference.util(name):.0%} busy) {_span(episode.start, episode.end)}"
            )
        text = f"{entity.entity}: bottleneck " + "; then ".join(parts)
    else:
        whole = entity.overall
        busiest = whole.bottleneck
        text = (
            f"{entity.entity}: no bottleneck (busiest: {_label(model, busiest)} at "
            f"{whole.util(busiest):.0%} over the period)"
        )
    if entity.upgrades is not None:
        recommended = entity.upgrades.recommended
        text += (
            f"; upgrade: {entity.upgrades.reason()}"
            if recommended is not None
            else f"; no upgrade recommended: {entity.upgrades.reason()}"
        )
    return text


def _label(model: Model, resource: str) -> str:
    for r in model.resources:
        if r.name == resource:
            return r.label
    return resource


def _span(start: pd.Timestamp, end: pd.Timestamp) -> str:
    first = start.strftime("%Y-%m-%d %H:%M:%S")
    last = end.strftime("%H:%M:%S" if end.date() == start.date() else "%Y-%m-%d %H:%M:%S")
    return f"{first}–{last} UTC"


@pydantic_dataclass(frozen=True, config=PARAMS)
class BottleneckDetector(DetectorMixin):
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
    min_window
        Windows are at least this long (a shorter recording is one window); they start at the
        first sample and at the changes of the counters.
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
    seed
        Seeds the inference (starts and Laplace draws).
    temperature
        Likelihood temperature of the probabilities (≥ 1: errors √T times as wide as the
        error model says, for the probabilities and intervals, not the most probable
        workload); default :data:`TEMPERATURE`.

    Empty strings and zeros stand for "not given" so the parameters round-trip through TOML,
    which has no null.
    """

    name: ClassVar[str] = "bottleneck"
    contract: ClassVar[str] = "counter"

    model: str = "linux"
    calibration: str = ""
    error_model: str = ""
    window: Duration = Field(default=timedelta(minutes=1))
    min_window: Duration = Field(default=timedelta(seconds=15))
    min_utilisation: float = Field(default=0.5, gt=0.0)
    warning_utilisation: float = Field(default=0.8, gt=0.0)
    error_utilisation: float = Field(default=0.95, gt=0.0)
    min_counters: int = Field(default=3, ge=1)
    upgrades: str = ""
    target: float = Field(default=0.0, ge=0.0)
    target_factor: float = Field(default=0.0, ge=0.0)
    device: str = ""
    seed: int = 0
    temperature: float = Field(default=TEMPERATURE, ge=1.0, allow_inf_nan=False)

    def analyse(self, frame: pd.DataFrame) -> BottleneckAnalysis:
        """Every window, episode and entity inferred; one ``bottleneck`` finding per episode
        (and an ``upgrade`` finding with a catalogue)."""
        model, errors = load_setup(self.model, self.calibration, self.error_model)
        if len(frame) == 0:
            return BottleneckAnalysis(self, model, errors, (), ())
        catalogue = load_catalogue(self.upgrades, model) if self.upgrades else None
        windows = self._windows(frame, model, errors)
        # each entity's episodes and whole period: inferred once more on their mean counters
        # (all of them in one batch), unless one window is all of it
        parts: dict[str, list[list[WindowResult]]] = {}
        pending: list[list[WindowResult]] = []
        for entity, found in windows.items():
            runs = self._episodes(found)
            parts[entity] = runs
            pending += [run for run in runs if len(run) > 1]
            if len(found) > 1 and not any(len(run) == len(found) for run in runs):
                pending.append(found)
        means = self._infer([_mean_counters(p) for p in pending], model, errors)
        again = {id(p): inference for p, inference in zip(pending, means, strict=True)}

        def inferred(part: list[WindowResult]) -> Inference:
            return part[0].inference if len(part) == 1 else again[id(part)]

        entities: list[EntityBottlenecks] = []
        findings: list[Finding] = []
        for entity, found in windows.items():
            episodes = [
                Episode(
                    entity,
                    tuple(part),
                    inferred(part),
                    self._upgrades(model, inferred(part), catalogue),
                )
                for part in parts[entity]
            ]
            same = next((e for e in episodes if len(e.windows) == len(found)), None)
            if same is not None:
                overall, upgrades = same.inference, same.upgrades
            else:
                overall = inferred(found)
                upgrades = self._upgrades(model, overall, catalogue)
            result = EntityBottlenecks(entity, tuple(found), overall, tuple(episodes), upgrades)
            entities.append(result)
            findings.extend(self._findings(result, model))
        return BottleneckAnalysis(self, model, errors, tuple(entities), tuple(findings))

    def resources(self) -> tuple[str, ...]:
        """The resources of the detector's model, in its order."""
        return load_setup(self.model, self.calibration, self.error_model)[0].resource_names

    # -- internals --------------------------------------------------------------------------

    def _infer(
        self, observations: list[dict[str, float]], model: Model, errors: ErrorModel
    ) -> list[Inference]:
        if not observations:
            return []
        return infer_many(
            model,
            observations,
            error_model=errors,
            seed=self.seed,
            min_counters=self.min_counters,
            threshold=self.min_utilisation,
            temperature=self.temperature,
        )

    def _findings(self, entity: EntityBottlenecks, model: Model) -> list[Finding]:
        out = []
        for episode in entity.episodes:
            # a datetime has no nanoseconds: widen the span to whole microseconds
            start = episode.start.floor("us").to_pydatetime()
            end = episode.end.ceil("us").to_pydatetime()
            out.append(
                bottleneck_finding(
                    model,
                    episode.inference,
                    entity=entity.entity,
                    start=start,
                    end=end,
                    detector=CHECK,
                    warning=self.warning_utilisation,
                    error=self.error_utilisation,
                    windows=len(episode.windows),
                    uncontended=uncontended_limit(
                        model, episode.inference.w, episode.inference.inputs
                    ),
                )
            )
            if episode.upgrades is not None:
                out.append(
                    upgrade_finding(
                        episode.upgrades,
                        entity=entity.entity,
                        start=start,
                        end=end,
                        detector=CHECK,
                    )
                )
        return out

    def _upgrades(
        self, model: Model, inference: Inference, catalogue: Catalogue | None
    ) -> UpgradeAnalysis | None:
        if catalogue is None:
            return None
        return analyse_upgrades(
            model,
            inference.w,
            catalogue,
            inputs=inference.inputs,
            target=self.target or None,
            target_factor=self.target_factor or None,
        )

    def _windows(
        self, frame: pd.DataFrame, model: Model, errors: ErrorModel
    ) -> dict[str, list[WindowResult]]:
        """Each entity's windows (entities by name; those without a usable window left out),
        every window inferred in one batch."""
        # a counter frame already normalised (the run path's) stays so when mapped: its
        # times, values and keys are what the mapping reshapes (normalising it again cost as
        # much as inferring a window)
        coverage = coverage_of(frame)
        # before normalising: the collector's units are its own
        frame = to_model_counters(frame, device=self.device or None)
        if coverage is None or coverage.contract != "counter":
            frame = normalise(frame, "counter")
        _check_values(frame, model, source=coverage.source if coverage is not None else "")
        wanted = set(model.counter_columns) | {i.counter for i in model.inputs}
        data = frame[frame["counter"].isin(wanted)]
        longest = pd.Timedelta(self.window)
        shortest = pd.Timedelta(self.min_window)
        usable: list[tuple[str, int, pd.DataFrame, dict[str, float]]] = []
        for entity, wide in by_entity(data):
            before = len(usable)
            for index, (a, b) in enumerate(self._cuts(wide, model, errors, longest, shortest)):
                part = wide.iloc[a:b]
                counters = {str(k): float(v) for k, v in part.mean().dropna().items()}
                observed = sum(1 for c in model.counter_columns if c in counters)
                if observed < self.min_counters:
                    log.info("%s: window %s has %d counters; skipped", entity, index, observed)
                    continue
                usable.append((str(entity), index, part, counters))
            if len(usable) == before:  # say why an entity gets no answer at all
                have = [c for c in model.counter_columns if c in wide.columns]
                log.warning(
                    "%s: %d of the model's counters (%s), %d needed: not inferred",
                    entity,
                    len(have),
                    ", ".join(have) or "none",
                    self.min_counters,
                )
        inferences = self._infer([u[3] for u in usable], model, errors)
        out: dict[str, list[WindowResult]] = {}
        for (entity, index, part, counters), inference in zip(usable, inferences, strict=True):
            out.setdefault(entity, []).append(
                WindowResult(
                    entity=entity,
                    index=index,
                    start=part.index[0],
                    end=part.index[-1],
                    samples=len(part),
                    counters=counters,
                    inference=inference,
                )
            )
        return out

    def _cuts(
        self,
        wide: pd.DataFrame,
        model: Model,
        errors: ErrorModel,
        longest: pd.Timedelta,
        shortest: pd.Timedelta,
    ) -> list[tuple[int, int]]:
        """Sample ranges of one entity's windows (``wide``: time × counter)."""
        times = wide.index
        if len(times) < 2:
            return [(0, len(times))]
        step = max(pd.Series(times).diff().median(), pd.Timedelta(microseconds=1))
        # counters in units of their noise (at least the model's error), on the error model's
        # asinh scale: a change the model could not tell from noise does not cut a window
        columns = [c for c in model.counter_columns if c in wide.columns]
        position = [model.counter_columns.index(c) for c in columns]
        values = wide[columns].ffill().bfill().fillna(0.0).to_numpy(dtype=np.float64)
        g = np.arcsinh(values / errors.scale[position])
        spread = np.maximum(noise_scale(g), errors.sd[position])
        return steady_windows(
            g / spread,
            min_size=max(int(shortest / step), 1),
            max_size=max(int(longest / step), 1),
        )

    def _episodes(self, windows: Sequence[WindowResult]) -> list[list[WindowResult]]:
        """Runs of consecutive windows in the same bottleneck state (a window with none ends a
        run)."""
        episodes: list[list[WindowResult]] = []
        last_index = None
        for w in windows:
            state = w.inference.state
            if state == NONE:
                last_index = None
                continue
            if (
                episodes
                and last_index is not None
                and w.index == last_index + 1
                and episodes[-1][-1].inference.state == state
            ):
                episodes[-1].append(w)
            else:
                episodes.append([w])
            last_index = w.index
        return episodes


def _mean_counters(windows: Sequence[WindowResult]) -> dict[str, float]:
    """The sample-weighted mean counters of ``windows``."""
    keys: set[str] = set().union(*(w.counters for w in windows))
    means: dict[str, float] = {}
    for key in sorted(keys):
        values = [w.counters[key] for w in windows if key in w.counters]
        weights = [w.samples for w in windows if key in w.counters]
        means[key] = float(np.average(values, weights=weights))
    return means


def _check_values(frame: pd.DataFrame, model: Model, *, source: str = "") -> None:
    """Refuse what the model cannot read; ``source`` (the file the frame came from) leads the
    message, the counter, entity and time then name the row."""
    where = f"{source}: " if source else ""
    values = frame["value"].to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{where}counter {frame['counter'].iat[i]!r} of {frame['entity'].iat[i]!r} at "
            f"{frame['time'].iat[i].isoformat()}: not a finite number ({values[i]!r})"
        )
    unsigned = [c.column for c in model.counters if not c.signed]
    unsigned += [i.counter for i in model.inputs]
    negative = (values < 0) & frame["counter"].isin(unsigned).to_numpy()
    if negative.any():
        i = int(np.flatnonzero(negative)[0])
        raise DataError(
            f"{where}counter {frame['counter'].iat[i]!r} of {frame['entity'].iat[i]!r} at "
            f"{frame['time'].iat[i].isoformat()}: negative value {values[i]:g} (a rate of a "
            "cumulative counter cannot be negative: was the counter reset?)"
        )
