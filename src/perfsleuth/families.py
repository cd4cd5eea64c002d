"""The one list of detector families, in the order of the questions they answer.

The config, the run path, the report and the CLI read this list; adding a family means adding
its package (same files as the others) and one line here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfsleuth import bottleneck, changepoints, processes, segments, workload
from perfsleuth.analysis import Detector, Family
from perfsleuth.errors import ConfigError
from perfsleuth.findings import Finding

__all__ = ["FAMILIES", "create", "family", "family_of", "names"]

FAMILIES: tuple[Family, ...] = (
    changepoints.FAMILY,
    workload.FAMILY,
    segments.FAMILY,
    processes.FAMILY,
    bottleneck.FAMILY,
)
"""Every family, in the order a diagnosis reads: when → workload → application → process →
resource."""

_BY_NAME = {f.name: f for f in FAMILIES}
_BY_CHECK = {check: f for f in FAMILIES for check in f.checks}
_BY_KIND: dict[str, Family] = {}
for _family in FAMILIES:
    for _kind in _family.kinds:
        _BY_KIND.setdefault(_kind, _family)

RENAMED = {
    "changepoint": "changepoints",
    "workload_mix": "workload",
    "workload_segments": "segments",
    "process": "processes",
    **{check: "processes" for check in processes.FAMILY.checks},
}
"""Names of families before release 0.2 (detectors then), for a helpful error message."""


def names() -> list[str]:
    """Every family's name, in :data:`FAMILIES` order."""
    return [f.name for f in FAMILIES]


def family(name: str) -> Family:
    """The family called ``name``; an unknown name is a :class:`ConfigError` listing them."""
    try:
        return _BY_NAME[name]
    except KeyError:
        hint = f" (renamed {RENAMED[name]!r})" if name in RENAMED else ""
        raise ConfigError(f"unknown family {name!r}{hint}; known: {', '.join(names())}") from None


def family_of(finding: Finding) -> Family | None:
    """The family a finding came from: by the check that made it, else by its kind."""
    return _BY_CHECK.get(finding.detector) or _BY_KIND.get(finding.kind.value)


def create(
    name: str,
    params: Mapping[str, Any] | None = None,
    *,
    source: str = "parameters",
    prefix: str | None = None,
) -> Detector:
    """Family ``name``'s detector built from plain parameters (as read from TOML), validated.

    Errors name ``source`` and the key path after ``prefix`` (default ``detectors.<name>``;
    commands pass ``""`` and their options as the source).
    """
    from perfsleuth.tomlfile import validate

    cls = family(name).detector_class()
    where = f"detectors.{name}" if prefix is None else prefix
    detector: Detector = validate(cls, dict(params or {}), source=source, prefix=where)
    return detector


def from_options(
    name: str, params: Mapping[str, Any], *, flags: Mapping[str, str] | None = None
) -> Detector:
    """Family ``name``'s detector built from a command's options, validated.

    Errors name the option as the user typed it: parameter ``min_size`` is ``--min-size``;
    ``flags`` gives the options whose flag is not the parameter's name (``--min-change`` for
    ``min_relative_change``).
    """
    from perfsleuth.tomlfile import validate

    renamed = dict(flags or {})

    def flag(key: str) -> str:
        top, _, rest = key.partition(".")
        option = renamed.get(top, "--" + top.replace("_", "-"))
        return f"{option}.{rest}" if rest else option

    cls = family(name).detector_class()
    detector: Detector = validate(cls, dict(params), source="options", label=flag)
    return detector
