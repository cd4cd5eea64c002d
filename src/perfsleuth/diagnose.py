"""Run detectors over frames: the library-level entry point (the CLI's commands build on it)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from perfsleuth.detectors.base import Detector
from perfsleuth.findings import Finding, ordered
from perfsleuth.registry import create

__all__ = ["diagnose"]

log = logging.getLogger(__name__)


def diagnose(
    frames: Mapping[str, pd.DataFrame],
    detectors: Iterable[Detector] | Mapping[str, Mapping[str, Any]],
) -> list[Finding]:
    """Run each detector on the frame of its contract and return all findings, ordered.

    Parameters
    ----------
    frames
        Normalised frames by contract name (``{"metric": frame, ...}``).
    detectors
        Detector objects, or ``{name: params}`` as in the ``[detectors]`` table of the config.
        A detector whose contract has no frame is skipped (logged), not an error.
    """
    if isinstance(detectors, Mapping):
        detectors = [create(name, params) for name, params in detectors.items()]
    findings: list[Finding] = []
    for detector in detectors:
        frame = frames.get(detector.contract)
        if frame is None:
            log.info("skipping %s: no %s frame", detector.name, detector.contract)
            continue
        found = detector.detect(frame)
        log.info("%s: %d finding(s)", detector.name, len(found))
        findings.extend(found)
    return ordered(findings)
