"""The command line: outputs, exit codes 0/1/2, and a fast --help."""

from __future__ import annotations

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
