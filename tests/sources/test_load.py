"""Sources as the config writes them (specs) and as :func:`load` reads them: the messy-input
keys, wide files, standard input, and the progress a long read logs."""

from __future__ import annotations

import io
import logging
import shutil
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import TypeAdapter, ValidationError

from perfsleuth.config import parse_config
from perfsleuth.errors import ConfigError, DataError
from perfsleuth.sources.load import load, read_source
from perfsleuth.sources.specs import KINDS, Source

DATA = Path(__file__).resolve().parents[1] / "data"
MESSY_KEYS = {"missing", "disorder", "duplicates", "time_unit", "tz", "since", "until"}


def spec(**keys: Any) -> Source:
    return TypeAdapter(Source).validate_python(keys)


def test_a_wide_nab_file_from_the_config(tmp_path: Path) -> None:
    shutil.copy(DATA / "nab" / "exchange-2_cpc_results.csv", tmp_path / "cpc.csv")
    config = parse_config(
        {"sources": [{"path": "cpc.csv", "duplicates": "first", "since": "2011-08-23"}]},
        source="perfsleuth.toml",
    )
    loaded = load(config.sources, base=tmp_path)
    frame = loaded.frames["metric"]
    assert set(frame["metric"]) == {"value"} and set(frame["entity"]) == {"cpc"}
    assert frame["time"].min() == pd.Timestamp("2011-08-23T00:00:01Z")
    named = spec(path=tmp_path / "cpc.csv", values=["value"], time_column="timestamp",
                 entity="exchange", unit="%", duplicates="first")  # fmt: skip
    frame, _ = read_source(named)
    assert set(frame["entity"]) == {"exchange"} and frame["value"].max() < 0.01  # % → fraction


@pytest.mark.parametrize(
    ("kind", "keys"),
    [
        ("file", MESSY_KEYS),
        ("transactions", {"time_unit", "tz", "since", "until"}),
        ("aggregated", {"time_unit", "tz", "since", "until"}),
        ("weblog", {"since", "until"}),
        ("pgbench", {"since", "until"}),
        ("sar", {"missing", "disorder", "duplicates", "since", "until"}),
        ("pidstat", {"missing", "disorder", "duplicates", "tz", "since", "until"}),
        ("perfmon", {"missing", "disorder", "duplicates", "since", "until"}),
        ("store", set()),
        ("prometheus", set()),
    ],
)
def test_each_kind_takes_the_messy_keys_that_apply(kind: str, keys: set[str]) -> None:
    from perfsleuth.sources import specs

    model = {
        "file": specs.FileSource, "transactions": specs.TransactionsSource,
        "aggregated": specs.AggregatedSource, "weblog": specs.WeblogSource,
        "pgbench": specs.PgbenchSource, "sar": specs.SarSource, "pidstat": specs.PidstatSource,
        "perfmon": specs.PerfmonSource, "store": specs.StoreSource,
        "prometheus": specs.PrometheusSource,
    }[kind]  # fmt: skip
    assert kind in KINDS
    assert MESSY_KEYS & set(model.model_fields) == keys


def test_messy_keys_are_validated_where_they_are_written() -> None:
    with pytest.raises(ValidationError, match="unknown time zone 'Mars/Olympus'"):
        spec(path="x.csv", tz="Mars/Olympus")
    with pytest.raises(ValidationError, match="until: must be later than since"):
        spec(path="x.csv", since="2024-01-02", until="2024-01-01")
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        spec(kind="weblog", paths=["a.log"], time_unit="ms")
    with pytest.raises(ConfigError, match=r"perfsleuth\.toml: sources\.0\.time_unit: Input"):
        parse_config(
            {"sources": [{"path": "x.csv", "time_unit": "hours"}]}, source="perfsleuth.toml"
        )


def test_epoch_milliseconds_in_a_transaction_table(tmp_path: Path) -> None:
    rows = [f"{1_714_554_000_000 + 1000 * i},search,0.1" for i in range(10)]
    (tmp_path / "tx.csv").write_text("time,type,latency\n" + "\n".join(rows) + "\n")
    source = spec(kind="transactions", path=tmp_path / "tx.csv", window="1m",
                  since="2024-05-01T09:00:05Z")  # fmt: skip
    frame, info = read_source(source)
    assert frame["n[search]"].sum() == 5  # 09:00:05 .. 09:00:09
    assert info.rejects is not None and info.rejects.count == 0


def test_standard_input_is_named_in_labels_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    csv = b"time,entity,metric,value\n1700000000,a,m,1\n1700000060,a,m,x\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(csv)))
    with pytest.raises(DataError, match=r"^<stdin>:3: column 'value': not a number: 'x'"):
        load([spec(path="-")], base=Path("/somewhere/else"))


def test_reading_is_logged_before_it_starts(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="perfsleuth.sources.load"):
        load([spec(kind="sar", path=DATA / "sysstat" / "sar.json")])
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0].startswith("reading ") and messages[0].endswith("sar.json (sar) ...")
    assert "row(s) of counter" in messages[1]
