"""The rules file of the process family: per-OS loop parameters, groups, exceptions, policies.

Kaminski (2003) runs his checks from "parameter files ... to minimise the need to change code":
one line per OS for the loop checker (``process_loop,Linux,.05,1,span,8,...``) and one per
exception (``process_loop_exception,WindowsNT,sqlservr,12``). Here the same facts live in one
TOML file, validated by pydantic (``extra="forbid"``: a typo is an error naming its file, line
and key path)::

    [settings]
    period = "1h"          # the aggregation interval (the paper: one hour)
    window = "24h"         # the review period (default: 24 periods, the paper's day)

    [os.linux]             # the paper's Linux line: deviation .05 around a mean of 1.00, 8 h
    mean = 1.00
    deviation = 0.05
    hours = 8

    [[exceptions]]         # sqlservr needs 12 more looping hours than the OS asks for
    process = "sqlservr"
    os = ["windowsnt", "windows2000"]
    extra_hours = 12

    [[groups]]             # "Tools should never take more than 10% of any box"
    name = "tools"
    processes = ["backup*", "antivirus*"]
    max_cpu_fraction = 0.10
    stealth = true         # a fact about the group: only the analysts hear about it

    [[groups]]             # a service restarted under new pids: its memory as one series
    name = "cache"
    processes = ["cachesrv"]
    by_name = true

The built-in defaults (:data:`DEFAULT_RULES`, the file ``default_rules.toml`` shipped in this
package) work out of the box; a user's file only lists what it changes, and its tables replace
the defaults' tables of the same name (``[os.linux]`` in a user file replaces the default
``[os.linux]``; ``exceptions`` and ``groups`` lists replace the default lists).

Who is notified, and how, is not a fact about processes: it is the config's ``[notify]``
section. A rules file with a ``[notify]`` table is an error saying so.

Units: CPU in cores (1.0 = one full CPU), memory and files in bytes, "hours" in periods.

Durations follow the period: the window defaults to 24 periods and the ramp's
``min_duration`` to 12 (the paper's day and half-day at one-hour periods), so changing only
``period`` scales the rules; durations given explicitly must be whole numbers of periods. A
period is at least one second (finer is not what process accounting measures).

Processes are identified by node, pid and start time; memory and file series are per process.
Only the groups marked ``by_name`` are followed per process *name* (their pids summed), e.g. a
service restarted under new pids whose leak shows as a saw-tooth.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from perfsleuth.durations import Duration
from perfsleuth.tomlfile import read_toml, validate
from perfsleuth.units import to_base

__all__ = [
    "DEFAULT_RULES",
    "Bytes",
    "CapturePolicy",
    "ConstrainedPolicy",
    "ExceptionRule",
    "Group",
    "HumPolicy",
    "NeverAlert",
    "OsRule",
    "ProcessRules",
    "RampPolicy",
    "Settings",
    "default_rules_text",
    "load_rules",
    "matches",
    "members",
    "os_key",
    "parse_rules",
]

LOOP_KINDS = ("cpu_loop", "constrained_loop", "hum")

_BYTES = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def _bytes(value: object) -> float:
    """``4096``, ``"512 MiB"``, ``"2GB"`` → bytes (a float)."""
    if isinstance(value, bool):
        raise ValueError(f"not a size in bytes: {value!r}")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str) and (m := _BYTES.match(value)):
        try:
            base, factor = to_base(m.group(2) or "bytes")
        except KeyError:
            raise ValueError(f"unknown size unit {m.group(2)!r} in {value!r}") from None
        if base != "bytes":
            raise ValueError(f"not a size in bytes: {value!r}")
        number = float(m.group(1)) * factor
    else:
        raise ValueError(f"not a size in bytes: {value!r} (write e.g. 4096 or '512 MiB')")
    if number < 0:
        raise ValueError(f"a size must not be negative, got {value!r}")
    return number


Bytes = Annotated[float, BeforeValidator(_bytes)]
"""A size in bytes: a number or a string with a unit (``"512 MiB"``, ``"2 GB"``)."""


def os_key(name: str) -> str:
    """The rules-table key of an OS name: ``"Windows 2000"`` → ``"windows2000"``."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Settings(_Strict):
    """Timing and the machine-level tests shared by every check."""

    period: Duration = Field(default=timedelta(hours=1), description="aggregation interval")
    window: Duration | None = Field(default=None, description="review period (default: 24 periods)")
    cull_cpu: float = Field(
        default=0.10, ge=0.0, description="processes below this CPU (cores) are not reviewed"
    )
    saturation: float = Field(
        default=0.90,
        gt=0.0,
        description="a period is saturated when machine CPU / ncpu reaches this fraction",
    )
    saturation_margin: float = Field(
        default=0.10,
        ge=0.0,
        lt=1.0,
        description="periods this close below the saturation level are saturated too when "
        "they run on from a saturated one (hysteresis)",
    )

    @model_validator(mode="after")
    def _window_holds_whole_periods(self) -> Settings:
        if self.period < timedelta(seconds=1):
            raise ValueError(
                f"period ({self.period}) must be at least 1s: process accounting is not finer"
            )
        ratio = self.review_window / self.period
        if ratio < 1 or abs(ratio - round(ratio)) > 1e-9:
            raise ValueError(
                f"window ({self.review_window}) must be a whole number of periods ({self.period})"
            )
        return self

    @property
    def review_window(self) -> timedelta:
        """The window, or 24 periods when none is given."""
        return self.window if self.window is not None else 24 * self.period

    @property
    def periods_per_window(self) -> int:
        return round(self.review_window / self.period)


class OsRule(_Strict):
    """The simple-loop line of one OS: CPU within ``mean ± deviation`` for ``hours`` periods."""

    mean: float = Field(gt=0.0, description="loop mean, cores")
    deviation: float = Field(ge=0.0, description="allowed deviation, cores")
    hours: int = Field(ge=1, description="looping periods per window to qualify")

    @property
    def low(self) -> float:
        return self.mean - self.deviation

    @property
    def high(self) -> float:
        return self.mean + self.deviation


class ExceptionRule(_Strict):
    """A process that needs ``extra_hours`` more qualifying periods than its OS asks for.

    ``extra_hours`` above ``periods_per_window - hours`` means the process never triggers.
    """

    process: str = Field(min_length=1, description="glob on the process name")
    os: tuple[str, ...] = Field(default=(), description="OS names it applies to (all if empty)")
    extra_hours: int = Field(ge=0)
    kinds: tuple[str, ...] = Field(default=LOOP_KINDS, description="checks it applies to")

    @model_validator(mode="after")
    def _known_kinds(self) -> ExceptionRule:
        unknown = sorted(set(self.kinds) - set(LOOP_KINDS))
        if unknown:
            raise ValueError(f"kinds {unknown} are not hour-counting checks {list(LOOP_KINDS)}")
        return self


class NeverAlert(_Strict):
    """Processes, users and nodes no check ever alerts on (globs)."""

    processes: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()


class Group(_Strict):
    """A named workload (process group): members by name glob and/or user, with caps."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    processes: tuple[str, ...] = Field(default=(), description="globs on process names")
    users: tuple[str, ...] = Field(default=(), description="globs on user names")
    max_cpu_fraction: float = Field(
        default=0.0, ge=0.0, description="cap as a fraction of the whole box (0 = no cap)"
    )
    max_rss_bytes: Bytes = Field(default=0.0, description="memory cap, bytes (0 = no cap)")
    min_periods: int = Field(default=1, ge=1, description="periods over the cap to report")
    stealth: bool = Field(default=False, description="notify only the analysts")
    by_name: bool = Field(
        default=False,
        description="follow each member name's memory and files as one series (pids summed): "
        "restarts of one service; other processes are followed one by one",
    )

    @model_validator(mode="after")
    def _has_members(self) -> Group:
        if not self.processes and not self.users:
            raise ValueError(f"group {self.name!r} needs processes or users")
        return self


class ConstrainedPolicy(_Strict):
    """Constrained loops on saturated machines (both of the paper's ways)."""

    correlation: float = Field(default=0.66, ge=-1.0, le=1.0)
    means_sigmas: float = Field(default=2.0, gt=0.0, description="the means-within-kσ test")
    means_max_cv: float = Field(
        default=0.25,
        gt=0.0,
        description="means test only for steady suspects (σ/μ at most this): dormant machines",
    )
    max_volume_correlation: float = Field(
        default=0.5, description="suspects following business volume this closely are work"
    )


class HumPolicy(_Strict):
    """Hums: steady consumption all day, unrelated to business volume."""

    min_cpu: float = Field(default=0.10, ge=0.0, description="cores; below this is not a hum")
    hours: int = Field(default=20, ge=1, description="humming periods per window to qualify")
    max_cv: float = Field(default=0.25, gt=0.0, description="σ/μ of CPU over those periods")
    max_volume_correlation: float = Field(default=0.5, ge=0.0, le=1.0)


class RampPolicy(_Strict):
    """Ramps (leaks, growing files) and saw-tooths (ramps that reset)."""

    columns: tuple[str, ...] = ("rss_bytes", "file_bytes")
    alpha: float = Field(default=0.001, gt=0.0, lt=1.0, description="trend test level")
    min_duration: Duration | None = Field(
        default=None, description="shortest ramp (default: 12 periods)"
    )
    min_growth: float = Field(
        default=0.25, ge=0.0, description="total rise as a fraction of the starting level"
    )
    min_growth_bytes: Bytes = Field(default=16 * 2**20)
    limit_bytes: Bytes = Field(default=0.0, description="projected time to this (0 = none)")
    reset_drop: float = Field(
        default=0.5, gt=0.0, lt=1.0, description="a fall of this fraction in a period is a reset"
    )
    min_teeth: int = Field(default=2, ge=1, description="ramps that reset, to be a saw-tooth")
    min_tooth_periods: int = Field(default=3, ge=2)
    max_step: float = Field(
        default=0.6, gt=0.0, le=1.0, description="largest one-period rise / tooth rise"
    )


class CapturePolicy(_Strict):
    """Capture ratio: Σ process CPU / machine CPU per period."""

    low: float = Field(default=0.80, ge=0.0)
    high: float = Field(default=1.20, ge=0.0)
    min_busy: float = Field(default=0.05, ge=0.0, description="cores; idle periods are skipped")
    min_fraction: float = Field(
        default=0.5, gt=0.0, le=1.0, description="share of periods out of range to report"
    )


_DEFAULT_OS: dict[str, OsRule] = {
    "default": OsRule(mean=1.00, deviation=0.05, hours=8),
    "linux": OsRule(mean=1.00, deviation=0.05, hours=8),
    "windows2000": OsRule(mean=0.92, deviation=0.08, hours=8),
    "windowsnt": OsRule(mean=0.92, deviation=0.08, hours=8),
}


class ProcessRules(_Strict):
    """The whole rules file (see the module docstring)."""

    settings: Settings = Field(default_factory=Settings)
    os: dict[str, OsRule] = Field(default_factory=lambda: dict(_DEFAULT_OS))
    exceptions: tuple[ExceptionRule, ...] = ()
    never_alert: NeverAlert = Field(default_factory=NeverAlert)
    groups: tuple[Group, ...] = (
        Group(
            name="tools",
            processes=("backup*", "antivirus*", "av*scan*", "defrag*", "collector*", "restore*"),
            max_cpu_fraction=0.10,
            stealth=True,
        ),
    )
    constrained: ConstrainedPolicy = Field(default_factory=ConstrainedPolicy)
    hum: HumPolicy = Field(default_factory=HumPolicy)
    ramp: RampPolicy = Field(default_factory=RampPolicy)
    capture: CapturePolicy = Field(default_factory=CapturePolicy)

    @model_validator(mode="before")
    @classmethod
    def _no_notify(cls, data: Any) -> Any:
        if isinstance(data, dict) and "notify" in data:
            # the blamed key first: the TOML loader turns it into the error's key path and line
            raise ValueError(
                "notify: notification settings are not part of the process rules any more: "
                "move this [notify] table to the [notify] section of the config "
                "(perfsleuth.toml)"
            )
        return data

    @model_validator(mode="before")
    @classmethod
    def _os_keys(cls, data: Any) -> Any:
        # a user's [os.linux] replaces the default linux line; the other lines stay
        if isinstance(data, dict) and isinstance(data.get("os"), dict):
            given = {os_key(str(k)): v for k, v in data["os"].items()}
            data = {**data, "os": {**_DEFAULT_OS, **given}}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> ProcessRules:
        if "default" not in self.os:
            raise ValueError("os: needs a 'default' entry for nodes whose OS is not listed")
        n = self.settings.periods_per_window
        for name, rule in self.os.items():
            if rule.hours > n:
                raise ValueError(f"os.{name}.hours = {rule.hours} exceeds the {n} periods a window")
        if self.hum.hours > n:
            raise ValueError(f"hum.hours = {self.hum.hours} exceeds the {n} periods a window")
        for group in self.groups:
            if group.min_periods > n:
                raise ValueError(
                    f"groups: {group.name}.min_periods = {group.min_periods} exceeds the {n} "
                    "periods a window"
                )
        if self.ramp.min_duration is not None:
            ratio = self.ramp.min_duration / self.settings.period
            if ratio < 2 or abs(ratio - round(ratio)) > 1e-9:
                raise ValueError(
                    f"ramp.min_duration ({self.ramp.min_duration}) must be a whole number of "
                    f"periods ({self.settings.period}), at least two: set both, or leave "
                    "min_duration out to get 12 periods"
                )
        names = [g.name for g in self.groups]
        if len(set(names)) != len(names):
            raise ValueError(f"groups: duplicate group names in {names}")
        return self

    # -- lookups --------------------------------------------------------------------------------

    @property
    def ramp_periods(self) -> int:
        """The ramp's minimum duration in periods (12 unless ``ramp.min_duration`` says)."""
        if self.ramp.min_duration is None:
            return 12
        return round(self.ramp.min_duration / self.settings.period)

    def os_rule(self, os_name: str) -> OsRule:
        """The loop line for ``os_name`` (matched case- and punctuation-blind), else default."""
        return self.os.get(os_key(os_name), self.os["default"])

    def extra_hours(self, process: str, os_name: str, kind: str) -> int:
        """Additional periods ``process`` needs for check ``kind`` (the largest matching)."""
        key = os_key(os_name)
        extra = 0
        for rule in self.exceptions:
            if kind not in rule.kinds or not fnmatch.fnmatchcase(process, rule.process):
                continue
            if rule.os and key not in {os_key(o) for o in rule.os}:
                continue
            extra = max(extra, rule.extra_hours)
        return extra

    def never_node(self, node: str) -> bool:
        """True when the never-alert list covers the whole node."""
        return _any_match(node, self.never_alert.nodes)

    def never(self, node: str, process: str, user: str) -> bool:
        """True when the never-alert lists cover this node, process name or user."""
        lists = self.never_alert
        return (
            _any_match(node, lists.nodes)
            or _any_match(process, lists.processes)
            or _any_match(user, lists.users)
        )


@functools.lru_cache(maxsize=1 << 16)
def _any_match(value: str, patterns: tuple[str, ...]) -> bool:
    # cached: a fleet scan asks about the same few hundred names on every node
    return any(fnmatch.fnmatchcase(value, p) for p in patterns)


def matches(value: str, patterns: tuple[str, ...]) -> bool:
    """True when ``value`` matches one of the globs ``patterns``."""
    return _any_match(value, patterns)


def members(group: Group, names: list[str], users: list[str]) -> list[bool]:
    """Which (name, user) pairs belong to ``group``: a name glob or a user glob matches."""
    return [
        _any_match(n, group.processes) or _any_match(u, group.users)
        for n, u in zip(names, users, strict=True)
    ]


DEFAULT_RULES = ProcessRules()
"""The built-in rules: the paper's Linux and Windows lines, a stealthy 10% cap on tools."""


def default_rules_text() -> str:
    """The shipped ``default_rules.toml`` (a commented copy of :data:`DEFAULT_RULES`)."""
    return resources.files("perfsleuth.processes").joinpath("default_rules.toml").read_text("utf-8")


def parse_rules(data: dict[str, Any], *, source: str) -> ProcessRules:
    """Validate a parsed TOML document; errors name ``source`` and the key path."""
    return validate(ProcessRules, data, source=source)


def load_rules(path: str | Path | None = None) -> ProcessRules:
    """Read a rules file (``None``: the built-in defaults); errors name file:line: key."""
    if path is None:
        return DEFAULT_RULES
    document = read_toml(path, what="rules")
    return validate(ProcessRules, document.data, source=document.source, locate=document.line)
