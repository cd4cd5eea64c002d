"""Run the cases of issue 16 part B (messy input, user errors, parsers, papercuts) through the
command line and print, for each, how it ended: exit code and the first error line (or a
summary of the output).

Run it against the working tree, and against any other version of the package for a
before/after table, e.g. the last commit exported with ``git archive``::

    .venv/bin/python scripts/messy_input_cases.py
    git archive HEAD src | tar -x -C /tmp/head
    PYTHONPATH=/tmp/head/src .venv/bin/python scripts/messy_input_cases.py

Each case runs ``perfsleuth`` in a fresh process (``perfsleuth.cli.main``) on real files from
``tests/data`` or small files written to a temporary folder; nothing is left behind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
NAB = DATA / "nab"
MAIN = "import sys; from perfsleuth.cli import main; sys.argv[0] = 'perfsleuth'; main()"


def run(args: list[str], *, stdin: bytes | None = None, cwd: Path | None = None) -> str:
    """``perfsleuth args``: its exit code and first error line (or a summary of stdout)."""
    done = subprocess.run(
        [sys.executable, "-c", MAIN, *args],
        input=stdin,
        capture_output=True,
        timeout=600,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )
    err = done.stderr.decode("utf-8", "backslashreplace")
    out = done.stdout.decode("utf-8", "backslashreplace")
    if "Traceback" in err:
        last = [line for line in err.splitlines() if line.strip()][-1]
        return f"exit {done.returncode}: TRACEBACK {last[:150]}"
    errors = [line for line in err.splitlines() if "rror" in line or "Usage" in line]
    if done.returncode != 0 and errors:
        shown = next((e for e in errors if "rror" in e), errors[0])
        return f"exit {done.returncode}: {shown.strip()[:200]}"
    findings = out.count("\n")
    return f"exit {done.returncode}: ok ({findings} output lines)" + (
        f"; stderr {len(err.splitlines())} lines" if err else ""
    )


def case_nab_repeated_hour(tmp: Path) -> str:
    return run(["changepoints", str(NAB / "exchange-2_cpc_results.csv"), "-c", "value",
                "--time-column", "timestamp"])  # fmt: skip


def case_nab_repeated_hour_advice_followed(tmp: Path) -> str:
    return run(["changepoints", str(NAB / "exchange-2_cpc_results.csv"), "-c", "value",
                "--time-column", "timestamp", "--duplicates", "first"])  # fmt: skip


def case_nab_daylight_saving(tmp: Path) -> str:
    return run(["changepoints", str(NAB / "ec2_request_latency_system_failure.csv"), "-c",
                "value", "--time-column", "timestamp", "--duplicates", "first"])  # fmt: skip


def case_nab_backwards(tmp: Path) -> str:
    return run(["detect", str(NAB / "machine_temperature_system_failure.csv"), "--disorder",
                "sort", "--duplicates", "first"])  # fmt: skip


def case_nab_no_column_flags(tmp: Path) -> str:
    return run(["changepoints", str(NAB / "machine_temperature_system_failure.csv")])


def _series(tmp: Path, name: str, times: list[str], values: list[str]) -> Path:
    path = tmp / name
    rows = "".join(f"{t},{v}\n" for t, v in zip(times, values, strict=True))
    path.write_text("time,value\n" + rows)
    return path


def _steady(n: int = 40) -> list[str]:
    return [str(10.0 if i < n // 2 else 20.0) for i in range(n)]


def case_epoch_milliseconds(tmp: Path) -> str:
    times = [str(1_700_000_000_000 + 60_000 * i) for i in range(40)]
    return run(["changepoints", str(_series(tmp, "ms.csv", times, _steady())), "-c", "value"])


def case_stdin(tmp: Path) -> str:
    times = [str(1_700_000_000 + 60 * i) for i in range(40)]
    data = _series(tmp, "s.csv", times, _steady()).read_bytes()
    return run(["changepoints", "-", "-c", "value"], stdin=data)


def case_missing_value_advice_followed(tmp: Path) -> str:
    times = [str(1_700_000_000 + 60 * i) for i in range(40)]
    values = _steady()
    values[7] = ""
    path = _series(tmp, "gap.csv", times, values)
    return run(["changepoints", str(path), "-c", "value", "--missing", "drop"])


def case_import_takes_advice(tmp: Path) -> str:
    sar = json.loads((DATA / "sysstat" / "sar.json").read_text())
    stats = sar["sysstat"]["hosts"][0]["statistics"]
    stats[1]["timestamp"], stats[2]["timestamp"] = stats[2]["timestamp"], stats[1]["timestamp"]
    path = tmp / "swapped.json"
    path.write_text(json.dumps(sar))
    return run(["import", "sar", str(path), "--store", str(tmp / "s.duckdb"), "--disorder", "sort"])


def _config(tmp: Path, source: str) -> Path:
    path = tmp / "perfsleuth.toml"
    path.write_text(
        '[analyze]\nfamilies = ["changepoints"]\n\n[output]\ndir = "out"\n\n'
        f'[[sources]]\nkind = "file"\npath = "{NAB / "exchange-2_cpc_results.csv"}"\n'
        f'duplicates = "first"\n{source}'
    )
    return path


def case_config_wide_file(tmp: Path) -> str:
    return run(["analyze", str(_config(tmp, ""))], cwd=tmp)


def case_config_wide_file_named(tmp: Path) -> str:
    config = _config(tmp, 'values = ["value"]\ntime_column = "timestamp"\n')
    return run(["analyze", str(config)], cwd=tmp)


def case_value_1e155(tmp: Path) -> str:
    times = [str(1_700_000_000 + 60 * i) for i in range(40)]
    values = _steady()
    values[30] = "1e155"
    return run(["changepoints", str(_series(tmp, "huge.csv", times, values)), "-c", "value"])


def case_bad_unix_time_line(tmp: Path) -> str:
    times = [str(1_700_000_000 + 60 * i) for i in range(40)]
    times[20] = "1700001200x"  # file line 22
    return run(["changepoints", str(_series(tmp, "t.csv", times, _steady())), "-c", "value"])


def case_toml_not_utf8(tmp: Path) -> str:
    path = tmp / "latin1.toml"
    path.write_bytes('[analyze]\ntitle = "caf\xe9"\n'.encode("latin-1"))
    return run(["config", "check", str(path)])


def case_toml_5000_deep(tmp: Path) -> str:
    path = tmp / "deep.toml"
    path.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    return run(["config", "check", str(path)])


def case_huge_duration_config(tmp: Path) -> str:
    path = tmp / "d.toml"
    path.write_text('[watch]\nevery = "99999999999w"\n')
    return run(["config", "check", str(path)])


def case_huge_duration_flag(tmp: Path) -> str:
    log = DATA / "weblog" / "apache_logs_extract"
    return run(["workload", str(log), "--source", "weblog", "--window", "99999999999w"])


def case_access_log_user_agent(tmp: Path) -> str:
    log = DATA / "weblog" / "apache_logs_extract"
    return run(["workload", str(log), "--source", "weblog", "--window", "1m"])


def case_access_log_opera_latency(tmp: Path) -> str:
    # what the reader makes of line 8409 of the original log: '... "Opera 8.50"', no latency
    code = (
        "import sys\n"
        "from perfsleuth.sources.weblog import read_weblog\n"
        "from perfsleuth.errors import PerfsleuthError\n"
        "try:\n"
        f"    tx = read_weblog({str(DATA / 'weblog' / 'apache_logs_extract')!r})\n"
        "except PerfsleuthError as e:\n"
        "    print('refused:', str(e)[:120]); sys.exit(2)\n"
        "ms = sorted(set((tx.records['latency'] * 1000).round(1)))\n"
        "print(f'{len(tx.records)} transactions, latencies (ms): {ms}')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=600, check=False
    )
    out = (done.stdout + done.stderr).decode().strip().splitlines()
    return f"exit {done.returncode}: {out[-1] if out else ''}"


def case_sysstat_serial_lines(tmp: Path) -> str:
    path = DATA / "sysstat" / "upstream" / "expected.sadf-j"
    return run(["import", "sar", str(path), "--store", str(tmp / "s.duckdb")])


def case_sysstat_sensors(tmp: Path) -> str:
    path = DATA / "sysstat" / "upstream" / "expected.data-11.6.5-sadf-j"
    return run(["import", "sar", str(path), "--store", str(tmp / "s.duckdb")])


def case_sa_file_named_like_an_option(tmp: Path) -> str:
    shutil.copy(DATA / "sysstat" / "sa.bin", tmp / "-C")
    return run(["import", "sar", "--store", str(tmp / "s.duckdb"), "--", "-C"], cwd=tmp)


def case_ansi_in_data(tmp: Path) -> str:
    # the file's name and a value hold escape sequences (retitle the terminal, clear it)
    path = tmp / "\x1b]0;pwned\x07p.csv"
    path.write_text("time,entity,metric,value\n1700000000,web,m,\x1b[2Jfast\n")
    done = subprocess.run(
        [sys.executable, "-c", MAIN, "detect", str(path)],
        capture_output=True,
        timeout=600,
        check=False,
    )
    raw = b"\x1b" in done.stdout or b"\x1b" in done.stderr
    return f"exit {done.returncode}: ESC byte in the output: {'yes' if raw else 'no'}"


def case_diagnose_after_import(tmp: Path) -> str:
    code = (
        "import perfsleuth\n"
        "try:\n    import perfsleuth.diagnose\nexcept ImportError as e:\n    print('import:', e)\n"
        "print('perfsleuth.diagnose is', type(perfsleuth.diagnose).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=600, check=False
    )
    out = (done.stdout + done.stderr).decode().strip().splitlines()
    return f"exit {done.returncode}: {out[-1] if out else ''}"


def case_version(tmp: Path) -> str:
    return run(["--version"])


def case_format_after_command(tmp: Path) -> str:
    return run(["changepoints", str(NAB / "exchange-2_cpc_results.csv"), "--format", "json"])


def case_verbose_progress(tmp: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", MAIN, "-vv", "changepoints", "--duplicates", "first",
         str(NAB / "exchange-2_cpc_results.csv"), "-c", "value", "--time-column", "timestamp"],
        capture_output=True, timeout=600, check=False,
    )  # fmt: skip
    err = done.stderr.decode()
    if "Traceback" in err or done.returncode == 2:
        return run(done.args[3:])
    info = [line for line in err.splitlines() if "INFO" in line]
    return f"exit {done.returncode}: {len(info)} INFO lines on stderr"


def case_schema_duration_defaults(tmp: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", MAIN, "config", "schema"],
        capture_output=True,
        timeout=600,
        check=False,
    )
    schema = json.loads(done.stdout)
    bad: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            pattern, default = node.get("pattern"), node.get("default")
            if (
                isinstance(pattern, str)
                and isinstance(default, str)
                and not re.search(pattern, default)
            ):
                bad.append(default)
            for value in node.values():
                walk(value)
            for option in node.get("anyOf", []):
                pattern = option.get("pattern") if isinstance(option, dict) else None
                if pattern and default is not None and not re.search(pattern, str(default)):
                    bad.append(str(default))
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return f"exit {done.returncode}: defaults not matching their pattern: {sorted(set(bad))}"


CASES: dict[str, Callable[[Path], str]] = {
    name.removeprefix("case_"): function
    for name, function in globals().items()
    if name.startswith("case_")
}


def main() -> None:
    import perfsleuth

    print(f"# perfsleuth from {Path(perfsleuth.__file__).parent}")
    only = set(sys.argv[1:])
    for name, case in CASES.items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as folder:
            print(f"{name}\t{case(Path(folder))}", flush=True)


if __name__ == "__main__":
    main()
