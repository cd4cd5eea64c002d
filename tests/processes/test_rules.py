"""The rules file: the shipped defaults, partial files, and errors that name file, line and key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from perfsleuth.errors import ConfigError
from perfsleuth.processes.rules import DEFAULT_RULES, ProcessRules, default_rules_text, load_rules


def test_shipped_rules_file_is_the_defaults() -> None:
    assert load_rules(None) == DEFAULT_RULES
    assert ProcessRules.model_validate(tomllib.loads(default_rules_text())) == DEFAULT_RULES


def test_paper_parameter_lines() -> None:
    linux, windows = DEFAULT_RULES.os_rule("Linux"), DEFAULT_RULES.os_rule("Windows 2000")
    assert (linux.deviation, linux.mean, linux.hours) == (0.05, 1.0, 8)
    assert (windows.deviation, windows.mean, windows.hours) == (0.08, 0.92, 8)


def test_partial_rules_file_keeps_defaults(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(
        "[os.Linux]\nmean = 0.9\ndeviation = 0.1\nhours = 6\n\n"
        '[[exceptions]]\nprocess = "sqlservr"\nos = ["Windows NT"]\nextra_hours = 12\n'
    )
    rules = load_rules(path)
    assert rules.os_rule("linux").hours == 6
    assert rules.os_rule("windows2000").mean == 0.92  # untouched
    assert rules.extra_hours("sqlservr", "WindowsNT", "cpu_loop") == 12
    assert rules.extra_hours("sqlservr", "Linux", "cpu_loop") == 0
    assert rules.settings == DEFAULT_RULES.settings


# (TOML text, text the error must contain)
BAD_RULES = [
    ("[settings]\nperiodd = '1h'\n", "settings.periodd"),
    ("[os.linux]\nmean = 1.0\ndeviation = 0.05\nhours = 30\n", "os.linux.hours = 30"),
    # the window follows the period (24 periods) unless given: a given one must fit
    ("[settings]\nperiod = '7m'\nwindow = '24h'\n", "whole number of periods"),
    ("[settings]\nperiod = '1ms'\n", "must be at least 1s"),
    ("[settings]\nperiod = '10s'\n\n[ramp]\nmin_duration = '15s'\n", "whole number of periods"),
    ("[[exceptions]]\nprocess = 'x'\nextra_hours = -1\n", "exceptions.0.extra_hours"),
    ("[[groups]]\nname = 'tools'\nmax_cpu_fraction = 0.1\n", "needs processes or users"),
    ("[ramp]\nlimit_bytes = '3 parsecs'\n", "ramp.limit_bytes"),
    # notifications moved to the config: the old table is an error that says where it goes
    ("[notify]\nrepeat = 'daily'\n", "move this [notify] table to the [notify] section"),
    ("not toml at all [", "not valid TOML"),
]


@pytest.mark.parametrize(("text", "message"), BAD_RULES)
def test_bad_rules_name_the_key_path(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_rules(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)


# (TOML text, the start of the error after the file name: line and key path)
LOCATED = [
    ("[settings]\nperiodd = '1h'\n", ":2: settings.periodd: "),
    ("[hum]\nhours = 20\nhourz = 3\n", ":3: hum.hourz: "),
    (
        "[[groups]]\nname = 'a'\nusers = ['x']\n\n[[groups]]\nname = 'b'\nmin_periods = 0\n",
        ":7: groups.1.min_periods: ",
    ),
    ("[ramp]\nalpha = 0.01\n\n[notify]\nanalysts = ['ron@example.com']\n", ":4: notify: "),
]


@pytest.mark.parametrize(("text", "where"), LOCATED)
def test_errors_name_file_line_and_key(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_rules(path)
    assert str(info.value).startswith(f"{path}{where}"), str(info.value)


def test_notify_is_not_a_rule_but_stealth_groups_are() -> None:
    assert "notify" not in ProcessRules.model_fields
    assert "notify" not in tomllib.loads(default_rules_text())
    with pytest.raises(ValueError, match=r"config"):
        ProcessRules.model_validate({"notify": {"stealth": True}})
    rules = ProcessRules.model_validate(
        {"groups": [{"name": "batch", "users": ["etl"], "stealth": True}]}
    )
    assert rules.groups[0].stealth is True
    assert DEFAULT_RULES.groups[0].stealth is True  # the tools group: only the analysts hear


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read rules"):
        load_rules(tmp_path / "absent.toml")
    path = tmp_path / "latin1.toml"
    path.write_bytes(b"[settings]\n# caf\xe9\n")
    with pytest.raises(ConfigError, match=r"latin1\.toml:2: not UTF-8"):
        load_rules(path)
