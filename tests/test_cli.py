"""The command line: outputs, exit codes 0/1/2, and a fast --help."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from perfsleuth.cli import main
from perfsleuth.findings import read_jsonl


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out, err = capsys.readouterr()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 0 if code is None else 2), out, err


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo")
    with pytest.raises(SystemExit) as exit_info:
        main(["-q", "demo", "--out", str(folder / "out"), "--store", str(folder / "s.duckdb")])
    assert exit_info.value.code == 0
    return folder


def test_help_does_not_import_heavy_libraries() -> None:
    code = (
        "import sys\n"
        "from perfsleuth.cli import app\n"
        "heavy = {'pandas', 'numpy', 'duckdb', 'plotly', 'scipy', 'jinja2', 'pydantic'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


_DATA = Path(__file__).parent / "data"
_COMMAND_MODULES = {
    "perfsleuth.cli.runs",
    "perfsleuth.changepoints.cli",
    "perfsleuth.workload.cli",
    "perfsleuth.segments.cli",
    "perfsleuth.processes.cli",
    "perfsleuth.fleet.cli",
    "perfsleuth.bottleneck.cli",
    "perfsleuth.collect.cli",
}
# Only a store, the table format and the HTML report need these: never a JSON run without them.
_OUTPUT_MODULES = {
    "duckdb",
    "rich",
    "jinja2",
    "plotly",
    "perfsleuth.store",
    "perfsleuth.report.html",
}


@pytest.mark.parametrize(
    ("args", "own", "also_absent"),
    [
        (
            ["bottleneck", "infer", str(_DATA / "bottleneck/controlled/corpus-r5.parquet")],
            "perfsleuth.bottleneck.cli",
            {"scipy"},
        ),
        (
            [
                "changepoints",
                str(_DATA / "nab/exchange-2_cpc_results.csv"),
                "--duplicates",
                "first",
            ],
            "perfsleuth.changepoints.cli",
            {"perfsleuth.bottleneck.detector", "perfsleuth.bottleneck.kernels"},
        ),
    ],
)
def test_a_json_run_imports_only_what_its_command_uses(
    args: list[str], own: str, also_absent: set[str]
) -> None:
    # the fixed cost of every call: another command's module, the other kinds of source (their
    # validators are built on first use), a store, the console renderer and the HTML report
    script = (
        "import sys\n"
        "from perfsleuth.cli import main\n"
        "try:\n"
        f"    main(['--format', 'json', *{args!r}])\n"
        "except SystemExit:\n"
        "    pass\n"
        "from perfsleuth.sources import specs\n"
        "built = [k for k, m in specs._MODELS.items() if m.__pydantic_complete__]\n"
        "print(sorted(sys.modules), built, file=sys.stderr, sep='\\n')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300
    )
    assert "findings" in json.loads(done.stdout)
    modules, built = (ast.literal_eval(line) for line in done.stderr.strip().splitlines()[-2:])
    loaded = set(modules)
    assert own in loaded
    assert loaded & (_COMMAND_MODULES - {own}) == set()
    assert {
        m for m in loaded if m.split(".")[0] in _OUTPUT_MODULES or m in _OUTPUT_MODULES
    } == set()
    assert {m for m in loaded for a in also_absent if m == a or m.startswith(a + ".")} == set()
    assert built == ["file"]


def test_the_command_is_the_first_word_after_the_global_options() -> None:
    from perfsleuth.cli import _VALUED, _command, _command_name

    # every global option that takes a value is known, so its value is never taken for a command
    root = _command(None)
    takes_value = {o for p in root.params if not (p.is_flag or p.count) for o in p.opts}
    assert takes_value == set(_VALUED)
    cases = {
        ("--format", "json", "-v", "--fail-on", "demo", "bottleneck", "infer", "x"): "bottleneck",
        ("--format=json", "-qv", "changepoints", "x.csv"): "changepoints",
        ("--help",): None,
        ("--format", "json"): None,
        ("--", "demo"): None,
        (): None,
    }
    for args, name in cases.items():
        assert _command_name(args) == name, args


def test_help_lists_the_commands() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    for command in ("demo", "detect", "report", "config"):
        assert command in result.stdout


@pytest.mark.slow  # the demo runs every family: 20 s and more on a busy machine
def test_demo_writes_report_findings_and_store(demo_dir: Path) -> None:
    out = demo_dir / "out"
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<html" in html.lower()
    findings = read_jsonl((out / "findings.jsonl").read_text(encoding="utf-8"))
    assert findings
    assert {f.entity for f in findings} >= {"checkout", "search"}
    assert "inventory" not in {f.entity for f in findings}, "the control service has no change"
    from perfsleuth.store import Store

    with Store(demo_dir / "s.duckdb", read_only=True) as store:
        assert len(store.findings()) == len(findings)


@pytest.mark.slow  # the demo runs every family: 20 s and more on a busy machine
def test_demo_is_deterministic(
    tmp_path: Path, demo_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = run(
        capsys, "-q", "demo", "--out", str(tmp_path), "--store", str(tmp_path / "s.duckdb")
    )
    assert code == 0
    assert (tmp_path / "findings.jsonl").read_text() == (
        demo_dir / "out" / "findings.jsonl"
    ).read_text()


@pytest.mark.parametrize(("fmt", "parse"), [("json", json.loads), ("jsonl", read_jsonl)])
def test_report_formats_and_fail_on(
    demo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, parse: object
) -> None:
    store = str(demo_dir / "s.duckdb")
    code, out, _ = run(
        capsys, "--format", fmt, "report", "--store", store, "-o", str(tmp_path / "r.html")
    )
    assert code == 0
    assert parse(out)  # type: ignore[operator]
    assert (tmp_path / "r.html").exists()
    code, _, _ = run(
        capsys, "--fail-on", "debug", "report", "--store", store, "-o", str(tmp_path / "r.html")
    )
    assert code == 1
    code, _, _ = run(
        capsys, "--fail-on", "critical", "report", "--store", store, "-o", str(tmp_path / "r.html")
    )
    assert code == 0


def test_report_from_findings_file(
    demo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys,
        "report",
        "--findings",
        str(demo_dir / "out/findings.jsonl"),
        "-o",
        str(tmp_path / "r.html"),
    )
    assert code == 0, err
    assert "checkout" in out


def test_detect_on_a_good_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["time,entity,metric,value,unit"]
    for i in range(200):
        lines.append(f"{1_700_000_000 + 60 * i},api,latency,{20 if i < 120 else 45}{i % 3},ms")
    path = tmp_path / "lat.csv"
    path.write_text("\n".join(lines) + "\n")
    code, out, err = run(
        capsys,
        "--format",
        "jsonl",
        "detect",
        str(path),
        "--store",
        str(tmp_path / "s.duckdb"),
        "--report",
        str(tmp_path / "r.html"),
    )
    assert code == 0, err
    findings = read_jsonl(out)
    assert [f.evidence_dict()["index"] for f in findings] == [120]


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("time,entity,metric,value\n2024-01-01T00:00:00Z,a,m,1,2\n", r"bad\.csv:2: malformed row"),
        ("time,entity,metric,value\n2024-01-01T00:00:00Z,a,m,NaN\n", r"bad\.csv:2: column 'value'"),
        ("", r"bad\.csv: empty file"),
    ],
)
def test_bad_input_exits_2_with_a_located_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, pattern: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    code, out, err = run(capsys, "detect", str(path))
    assert code == 2
    assert out == ""
    assert err.startswith("perfsleuth: error: ")
    assert len(err.strip().splitlines()) == 1
    import re

    assert re.search(pattern, err), err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run(capsys, "--format", "xml", "demo")
    assert code == 2
    code, _, _ = run(capsys, "no-such-command")
    assert code == 2


def test_missing_store_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "report", "--store", str(tmp_path / "none.duckdb"))
    assert code == 2
    assert "no such store" in err


def test_config_check_and_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.toml"
    good.write_text("[detectors.changepoints]\nalpha = 0.01\n")
    code, out, _ = run(capsys, "config", "check", str(good))
    assert code == 0 and "ok" in out
    bad = tmp_path / "bad.toml"
    bad.write_text("[output]\ndirr = 'x'\n")
    code, _, err = run(capsys, "config", "check", str(bad))
    assert code == 2 and "output.dirr" in err
    code, out, _ = run(capsys, "config", "schema")
    assert code == 0 and json.loads(out)["title"] == "perfsleuth.toml"


# -- issue 16: real input, one way; every user error exits 2 with one line ----------------------

DATA = Path(__file__).resolve().parent / "data"
NAB = DATA / "nab"


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def _one_error(code: int, out: str, err: str) -> str:
    assert code == 2, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perfsleuth: error: "), err
    return lines[0]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from perfsleuth import __version__

    code, out, _ = run(capsys, "--version")
    assert code == 0 and out == f"perfsleuth {__version__}\n"


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["detect", "x.csv", "--format", "json"], "perfsleuth --format json detect ..."),
        (["processes", "scan", "x.csv", "-vv"], "perfsleuth -v processes scan ..."),
        (["changepoints", "x.csv", "--fail-on", "error"], "perfsleuth --fail-on warning"),
        (["report", "-q"], "perfsleuth -q report ..."),
    ],
)
def test_a_global_option_after_the_command_says_where_it_goes(
    capsys: pytest.CaptureFixture[str], args: list[str], hint: str
) -> None:
    code, _, err = run(capsys, *args)
    assert code == 2
    assert "is a global option: give it before the command, as in" in err and hint in err
    assert "Possible options" not in err  # the old hint offered --report for --format


MESSY_FLAGS = ["--missing", "--disorder", "--duplicates", "--time-unit", "--tz", "--since"]


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        (["changepoints"], MESSY_FLAGS),
        (["detect"], MESSY_FLAGS),
        (["processes", "scan"], MESSY_FLAGS),
        (["bottleneck", "infer"], MESSY_FLAGS),
        (["workload"], MESSY_FLAGS),
        (["segments"], MESSY_FLAGS),
        (["import"], ["--missing", "--disorder", "--duplicates", "--tz", "--since"]),
    ],
)
def test_every_command_that_reads_files_takes_the_messy_options(
    capsys: pytest.CaptureFixture[str], command: list[str], flags: list[str]
) -> None:
    code, out, _ = run(capsys, *command, "--help")
    assert code == 0
    for flag in [*flags, "--until"]:
        assert flag in out, (command, flag)


@pytest.mark.parametrize(
    ("args", "advice"),
    [
        (["changepoints", str(NAB / "exchange-2_cpc_results.csv")], ["--duplicates", "first"]),
        (
            ["detect", str(NAB / "ec2_request_latency_system_failure.csv")],
            ["--duplicates", "first"],
        ),
        (
            ["changepoints", str(NAB / "machine_temperature_system_failure.csv"), "-c", "value"],
            ["--disorder", "sort"],
        ),
    ],
)
def test_the_advice_of_an_error_can_be_followed_where_the_user_is(
    capsys: pytest.CaptureFixture[str], args: list[str], advice: list[str]
) -> None:
    line = _one_error(*run(capsys, *args))
    assert f"use {' '.join(advice)}" in line
    code, _, err = run(capsys, *args, *advice, "--duplicates", "first")
    assert code == 0, err


def test_import_takes_the_advice_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = (DATA / "perfmon" / "relog.csv").read_bytes().decode("utf-8-sig").split("\r\n")
    cells = rows[2].split('","')
    cells[4] = " "  # one blank machine CPU sample
    rows[2] = '","'.join(cells)
    path = tmp_path / "relog.csv"
    path.write_bytes("\r\n".join(rows).encode())
    store = str(tmp_path / "s.duckdb")
    line = _one_error(*run(capsys, "import", "perfmon", str(path), "--store", store))
    assert "relog.csv:3: column 'machine_cpu': missing value" in line
    assert "use --missing drop" in line
    code, out, err = run(
        capsys, "import", "perfmon", str(path), "--store", store, "--missing", "drop"
    )
    assert code == 0, err
    assert json.loads(out)["rows"]["process"] > 0


def test_epoch_milliseconds_and_standard_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = ["time,entity,metric,value"]
    lines += [
        f"{1_700_000_000_000 + 60_000 * i},api,latency,{20 if i < 120 else 45}{i % 3}"
        for i in range(200)
    ]
    _stdin(monkeypatch, ("\n".join(lines) + "\n").encode())
    code, out, err = run(capsys, "--format", "jsonl", "detect", "-")
    assert code == 0, err
    assert [f.evidence_dict()["index"] for f in read_jsonl(out)] == [120]
    _stdin(monkeypatch, ("\n".join(lines) + "\n").encode())
    code, out, err = run(
        capsys, "--format", "jsonl", "changepoints", "-", "--until", "2023-11-14T23:00:00Z"
    )
    assert code == 0 and read_jsonl(out) == [], err  # the change is after --until


@pytest.mark.parametrize(
    ("rows", "pattern"),
    [
        # a value whose square overflows: a traceback ("phi must be finite") before issue 16
        (["1700000000,a,m,1", "1700000060,a,m,1e155"], r"big\.csv:3: column 'value': value out"),
        # a bad time in a Unix-seconds column: line 2 was blamed
        (
            ["1700000000,a,m,1", "1700000060,a,m,2", "17000001x0,a,m,3"],
            r"big\.csv:4: column 'time': not a time: '17000001x0'",
        ),
        (["9999-01-01T00:00:00Z,a,m,1"], r"big\.csv:2: column 'time': time .* is outside"),
    ],
)
def test_values_and_times_that_do_not_fit_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rows: list[str], pattern: str
) -> None:
    import re

    path = tmp_path / "big.csv"
    path.write_text("\n".join(["time,entity,metric,value", *rows]) + "\n")
    for command in (["detect"], ["changepoints"]):
        line = _one_error(*run(capsys, *command, str(path)))
        assert re.search(pattern, line), line


HUGE = '"99999999999w"'
PROMETHEUS = '[[sources]]\nkind = "prometheus"\nurl = "http://x"\nqueries = {a = "up"}\n'


@pytest.mark.parametrize(
    "config",
    [
        f"[watch]\nevery = {HUGE}\n",
        f"[watch]\nbackoff_max = {HUGE}\n",
        f"[watch]\ngrace = {HUGE}\n",
        f'[notify]\nrecipients = ["a@example.com"]\nrepeat = {HUGE}\n',
        f"{PROMETHEUS}step = {HUGE}\n",
        f"{PROMETHEUS}range = {HUGE}\n",
        f"{PROMETHEUS}timeout = {HUGE}\n",
        f'[[sources]]\nkind = "store"\nrange = {HUGE}\n',
        f'[[sources]]\nkind = "weblog"\npaths = ["a.log"]\nwindow = {HUGE}\n',
        f'[[sources]]\nkind = "aggregated"\npath = "a.csv"\nwindow = {HUGE}\n',
        f"[detectors.workload]\nonline = {HUGE}\n",
        f"[detectors.bottleneck]\nwindow = {HUGE}\n",
    ],
)
def test_huge_durations_in_a_config_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str
) -> None:
    path = tmp_path / "perfsleuth.toml"
    path.write_text(config)
    line = _one_error(*run(capsys, "config", "check", str(path)))
    assert "perfsleuth.toml:" in line and "'99999999999w' is longer than a century" in line


@pytest.mark.parametrize(
    "args",
    [
        ["workload", "a.log", "--source", "weblog", "--window", "99999999999w"],
        ["segments", "a.log", "--source", "weblog", "--window", "99999999999w"],
        ["workload", "a.log", "--source", "weblog", "--online", "--history", "99999999999w"],
        ["bottleneck", "infer", "c.csv", "--window", "99999999999w"],
        ["collect", "--interval", "99999999999w", "--samples", "1"],
        ["collect", "--seconds", "99999999999w"],
        ["collect", "--keep-raw", "99999999999w", "--samples", "1"],
        ["watch", "{config}", "--every", "99999999999w"],
        ["processes", "scan", "p.csv", "--rules", "{rules}"],
    ],
)
def test_huge_durations_on_the_command_line_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "perfsleuth.toml").write_text('[store]\npath = "s.duckdb"\n')
    (tmp_path / "rules.toml").write_text(f"[settings]\nperiod = {HUGE}\n")
    filled = [a.format(config="perfsleuth.toml", rules="rules.toml") for a in args]
    line = _one_error(*run(capsys, *filled))
    assert "'99999999999w' is longer than a century" in line


def test_control_characters_in_data_are_shown_not_obeyed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from perfsleuth.findings import Kind, write_jsonl
    from tests.conftest import make_finding

    evil = make_finding(kind=Kind.CPU_LOOP, entity="web-1/\x1b[2J\x1b]0;owned\x07spin\rx\u202e")
    path = tmp_path / "findings.jsonl"
    path.write_text(write_jsonl([evil]))
    for fmt in ("table", "json", "jsonl"):
        code, out, err = run(
            capsys,
            "--format",
            fmt,
            "report",
            "--findings",
            str(path),
            "-o",
            str(tmp_path / "r.html"),
        )
        assert code == 0, err
        for control in ("\x1b", "\x07", "\r", "\u202e"):
            assert control not in out + err, (fmt, control)
        if fmt == "table":
            assert "\\x1b[2J" in out  # shown, escaped
        else:
            found = read_jsonl(out) if fmt == "jsonl" else json.loads(out)["findings"]
            assert found  # escaped JSON still reads back
    bad = tmp_path / "bad\x1b[31m.csv"
    bad.write_text("time,entity,metric,value\n1700000000,a,m,\x1b[5mfast\n")
    line = _one_error(*run(capsys, "detect", str(bad)))
    assert "\x1b" not in line and "bad\\x1b[31m.csv:2" in line


def test_control_characters_in_log_lines_are_shown_not_obeyed(tmp_path: Path) -> None:
    path = tmp_path / "\x1b]0;owned\x07m.csv"
    path.write_text("time,entity,metric,value\n" + "1700000000,a,m,1\n")
    result = subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "-v", "detect", str(path)],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "INFO perfsleuth.sources.load: reading " in result.stderr
    assert "\\x1b]0;owned\\x07m.csv" in result.stderr  # the file's name, escaped


def test_a_line_break_in_data_cannot_start_a_log_line(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("time,entity,metric,value\n" + "1700000000,a,m,1\n")
    forged = tmp_path / "x\nperfsleuth: error: forged.csv"
    forged.write_bytes(path.read_bytes())
    result = subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "-v", "detect", str(forged)],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert "x\\nperfsleuth: error: forged.csv" in result.stderr  # shown, escaped
    assert not [
        line for line in result.stderr.splitlines() if line.startswith("perfsleuth: error: forged")
    ]


def test_diagnose_is_a_function_whatever_was_imported() -> None:
    import importlib
    import pkgutil
    import types

    import perfsleuth

    assert isinstance(perfsleuth.diagnose, types.FunctionType)
    for module in pkgutil.walk_packages(perfsleuth.__path__, "perfsleuth."):
        if module.name != "perfsleuth.cli.__main__":
            importlib.import_module(module.name)
    assert isinstance(perfsleuth.diagnose, types.FunctionType)
    assert perfsleuth.diagnose.__module__ == "perfsleuth.pipeline"


def test_run_is_a_function_whatever_was_imported() -> None:
    # the run path lives in perfsleuth.pipeline: a module named run would shadow the function
    import types

    import perfsleuth
    import perfsleuth.pipeline

    assert isinstance(perfsleuth.run, types.FunctionType)
    assert perfsleuth.run is perfsleuth.pipeline.run


def test_verbose_shows_progress_on_stderr(tmp_path: Path) -> None:
    report = tmp_path / "cp.html"
    result = subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "-v", "changepoints",
         str(NAB / "exchange-2_cpc_results.csv"), "--duplicates", "first", "--report", str(report)],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # each long step says so before it starts: reading, each family's analysis, the report
    assert "INFO perfsleuth.sources.load: reading " in result.stderr
    assert "exchange-2_cpc_results.csv (file) ..." in result.stderr
    # (101 rows, the repeated hour's second one left out)
    assert "INFO perfsleuth.pipeline: changepoints: analysing 100 row(s) ..." in result.stderr
    assert f"INFO perfsleuth.pipeline: writing the report {report} ..." in result.stderr


def _stderr_on_a_terminal(*args: str) -> tuple[int, str]:
    """Run the CLI with stderr on a pseudo-terminal; its exit code and what it wrote there."""
    import os
    import pty

    primary, secondary = pty.openpty()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "perfsleuth.cli", *args],
            stdout=subprocess.DEVNULL, stderr=secondary, check=False, timeout=600,
        )  # fmt: skip
    finally:
        os.close(secondary)
    chunks = []
    try:
        while chunk := os.read(primary, 65536):
            chunks.append(chunk)
    except OSError:  # the terminal's other side is closed: all read
        pass
    os.close(primary)
    return result.returncode, b"".join(chunks).decode()


def test_a_terminal_sees_the_long_steps_start_without_verbose(tmp_path: Path) -> None:
    data = str(NAB / "exchange-2_cpc_results.csv")
    code, err = _stderr_on_a_terminal("changepoints", data, "--duplicates", "first")
    assert code == 0, err
    assert "INFO perfsleuth.sources.load: reading " in err
    assert "INFO perfsleuth.pipeline: changepoints: analysing 100 row(s) ..." in err
    assert "finding(s)" not in err  # other INFO lines only with -v
    code, err = _stderr_on_a_terminal("-q", "changepoints", data, "--duplicates", "first")
    assert code == 0 and err == "", err
    # redirected stderr stays quiet by default
    piped = subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "changepoints", data, "--duplicates", "first"],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert piped.returncode == 0 and "INFO" not in piped.stderr, piped.stderr


# -- numeric times that are years or an index, not Unix seconds --------------------------------


def _annual(path: Path, column: str = "year", years: list[str] | None = None) -> Path:
    """A public-data style ``year,value`` file: 60 years, a step from 10 to 14 in 1980."""
    import numpy as np

    rng = np.random.default_rng(7)
    years = years or [str(y) for y in range(1950, 2010)]
    levels = [10.0 if i < 30 else 14.0 for i in range(len(years))]
    rows = [f"{y},{level + rng.normal(0, 0.3):.3f}" for y, level in zip(years, levels, strict=True)]
    path.write_text("\n".join([f"{column},value", *rows]) + "\n")
    return path


@pytest.mark.parametrize(
    "options",
    [[], ["--time-column", "year"], ["--time-unit", "year"], ["--time-unit", "auto"]],
)
def test_a_year_column_is_read_as_calendar_years(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str]
) -> None:
    # before: without options "metric frame is missing column(s)"; with --time-column year a
    # change point "at 1970-01-01 00:33 UTC" (1980 read as Unix seconds)
    path = _annual(tmp_path / "yr.csv")
    code, out, err = run(capsys, "--format", "jsonl", "changepoints", str(path), *options)
    assert code == 0, err
    starts = [f.start.isoformat() for f in read_jsonl(out)]
    assert starts == ["1980-01-01T00:00:00+00:00"]


def test_an_index_column_is_refused_unless_its_unit_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: read as the first minute of 1970 without a word
    path = _annual(tmp_path / "idx.csv", "t", [str(i) for i in range(60)])
    line = _one_error(*run(capsys, "changepoints", str(path), "--time-column", "t"))
    assert "idx.csv:2: column 't': not a clock time: '0' as Unix seconds is within 10 days" in line
    assert "--time-unit" in line
    code, out, err = run(
        capsys, "--format", "jsonl", "changepoints", str(path), "--time-column", "t",
        "--time-unit", "s",
    )  # fmt: skip
    assert code == 0, err
    assert [f.start.isoformat() for f in read_jsonl(out)] == ["1970-01-01T00:00:30+00:00"]


YEARS = [str(y) for y in range(1950, 2010)]


@pytest.mark.parametrize(
    ("years", "unit", "pattern"),
    [
        # a non-integer among years: named by its line, whether guessed or given
        ([*YEARS[:9], "1959.5", *YEARS[10:]], [], r"yr\.csv:11: column 'year': not a whole year: "),
        (
            [*YEARS[:9], "1959.5", *YEARS[10:]],
            ["--time-unit", "year"],
            r"yr\.csv:11: column 'year': not a whole year: ",
        ),
        # a negative year: not all years, so not guessed as years; as seconds near 1970: refused
        (["-1950", *YEARS[1:]], [], r"yr\.csv:2: column 'year': not a clock time: '-1950' .*year"),
        (["-1950", *YEARS[1:]], ["--time-unit", "year"], r"yr\.csv:2: .*year '-1950' is outside"),
        # years mixed with Unix seconds: the years are not taken for seconds
        ([*YEARS[:59], "1700000000"], [], r"yr\.csv:2: column 'year': not a clock time: '1950' "),
        (
            [*YEARS[:59], "1700000000"],
            ["--time-unit", "year"],
            r"yr\.csv:61: column 'year': year '1700000000' is outside the years 1900 to 2099",
        ),
    ],
)
def test_bad_years_are_refused_naming_the_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    years: list[str],
    unit: list[str],
    pattern: str,
) -> None:
    import re

    path = _annual(tmp_path / "yr.csv", years=years)
    line = _one_error(*run(capsys, "changepoints", str(path), *unit))
    assert re.search(pattern, line), line


def test_a_file_of_values_alone_says_what_it_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "latency.csv"
    path.write_text("latency_ms\n95\n105\n510\n490\n", encoding="utf-8")
    line = _one_error(*run(capsys, "changepoints", str(path)))
    assert "latency.csv: metric frame is missing column(s) 'time'" in line
    assert "if it holds values alone, add a time to each reading" in line
    assert "perfsleuth.find_change_points(values)" in line
    named = tmp_path / "hosts.csv"
    named.write_text("host,value\nweb-1,1\nweb-2,2\n", encoding="utf-8")
    assert "values alone" not in _one_error(*run(capsys, "changepoints", str(named)))


def test_a_file_neither_long_nor_wide_says_how_to_name_its_time_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _annual(tmp_path / "when.csv", "when")
    line = _one_error(*run(capsys, "changepoints", str(path)))
    assert "when.csv: metric frame is missing column(s) 'time', 'entity', 'metric'" in line
    assert "name its time column with --time-column" in line
    code, out, err = run(
        capsys, "--format", "jsonl", "changepoints", str(path), "--time-column", "when"
    )
    assert code == 0, err  # the advice, followed
    assert [f.start.isoformat() for f in read_jsonl(out)] == ["1980-01-01T00:00:00+00:00"]
