"""pgbench per-transaction logs (``pgbench -l``) → transaction records.

Each line of a log describes one transaction (PostgreSQL 15, ``man pgbench``, "Per-Transaction
Logging")::

    client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]

``time`` is the latency in microseconds, ``script_no`` the 0-based position of the script among
the ``-f``/``-b`` options, ``time_epoch`` + ``time_us`` the **completion** time.
``schedule_lag`` is there with ``--rate``, ``retries`` with ``--max-tries`` other than 1. With
``--rate`` and ``--latency-limit``, transactions that were never run have ``skipped`` in the time
field; failed ones have ``failed`` (or ``serialization`` / ``deadlock`` with
``--failures-detailed``). Those are counted in :attr:`Transactions.untimed`, not as records.

pgbench writes one file per worker thread: ``<prefix>.<pid>`` for the first, then
``<prefix>.<pid>.<n>``; the prefix is ``pgbench_log`` unless ``--log-prefix`` says otherwise.
Logs written with ``--aggregate-interval`` have a different layout and are rejected.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from perfsleuth.errors import ConfigError, SourceError
from perfsleuth.sources.transactions import (
    RejectCounter,
    Transactions,
    TransactionsBuilder,
    read_line_chunks,
)

__all__ = ["find_pgbench_logs", "read_pgbench", "script_names"]

_LINE = (
    r"^\s*(?P<client>[0-9]+) (?P<tx>[0-9]+) (?P<time>\S+) (?P<script>[0-9]{1,9}) "
    r"(?P<epoch>[0-9]{1,12}) (?P<us>[0-9]{1,9})(?: \S+){0,2}\s*$"
)
_UNTIMED = ("skipped", "failed", "serialization", "deadlock")
# Completion times outside 2000..2100 mean the line is not what it seems (an aggregated log,
# a column shifted): reject rather than put a transaction in 1970.
_EPOCH_MIN, _EPOCH_MAX = 946_684_800, 4_102_444_800
_LOG_NAME = re.compile(r"^.+\.[0-9]+(?:\.[0-9]+)?(?:\.gz)?$")

_REASONS = [
    "expected 6 to 8 fields: client_id transaction_no time script_no time_epoch time_us "
    "[schedule_lag] [retries]",
    "latency is negative",
    "latency is not a number of microseconds",
    "time_epoch is not a Unix time between 2000 and 2100 (an --aggregate-interval log?)",
    "time_us must be below 1000000",
    "unknown script number",
]
_FIELDS = [None, "time", "time", "time_epoch", "time_us", "script_no"]


def script_names(scripts: Sequence[str | Path]) -> list[str]:
    """Type names for the scripts of a pgbench run, in ``-f`` order.

    ``["sql/point_select.sql@10", "tpcb-like"]`` → ``["point_select", "tpcb-like"]``: file
    name without directory, ``@weight`` and ``.sql``; built-in names (``-b``) stay as they are.
    """
    names = []
    for script in scripts:
        name = Path(str(script).rsplit("@", 1)[0]).name
        names.append(name.removesuffix(".sql") or str(script))
    if len(set(names)) != len(names):
        raise ConfigError(f"script names are not unique: {names}")
    return names


def find_pgbench_logs(folder: str | Path) -> list[Path]:
    """pgbench ``-l`` logs in ``folder``: files named ``<prefix>.<pid>[.<thread>][.gz]``, sorted."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SourceError(f"{folder}: not a directory")
    return sorted(p for p in folder.iterdir() if p.is_file() and _LOG_NAME.match(p.name))


def read_pgbench(
    paths: str | Path | Sequence[str | Path],
    *,
    scripts: Sequence[str] | Mapping[int, str] | None = None,
    at: Literal["start", "end"] = "start",
    strict: bool = False,
    max_examples: int = 20,
    chunk_lines: int = 100_000,
) -> Transactions:
    """Read pgbench per-transaction logs (plain or gzip) into transaction records.

    Parameters
    ----------
    paths
        Log files, or a folder (every ``<prefix>.<pid>[.<thread>]`` file in it, see
        :func:`find_pgbench_logs`). Files of one run (one per thread) are pooled.
    scripts
        Names of the scripts by ``script_no``: a sequence in ``-f``/``-b`` order (see
        :func:`script_names`) or a mapping. Without it every script is ``script<N>``. With it,
        a line whose script number has no name is a bad line ("unknown script number"): the
        log does not come from the run the names describe.
    at
        Time a transaction is filed under: ``"start"`` (the completion time pgbench logs minus
        the latency; Kelly's model counts the transactions that *began* in a window) or
        ``"end"`` (the completion time as logged).
    strict
        Raise :class:`~perfsleuth.errors.DataError` naming ``file:line`` on the first bad line
        instead of counting it.
    max_examples
        Rejected lines kept as examples.
    chunk_lines
        Lines parsed at a time.

    Returns
    -------
    Transactions
        Records (time as ``at`` says, script name as type, latency in seconds), ``untimed``
        counts of skipped and failed transactions, rejected lines with line numbers.
    """
    if isinstance(paths, str | Path) and Path(paths).is_dir():
        files = find_pgbench_logs(paths)
        if not files:
            raise SourceError(f"{paths}: no pgbench logs (<prefix>.<pid>[.<thread>]) in it")
    elif isinstance(paths, str | Path):
        files = [Path(paths)]
    else:
        files = [Path(p) for p in paths]
    if not files:
        raise ConfigError("read_pgbench: no files given")
    if at not in ("start", "end"):
        raise ConfigError(f"at must be 'start' or 'end', got {at!r}")
    names = _name_table(scripts)
    rejects = RejectCounter(strict=strict, max_examples=max_examples)
    builder = TransactionsBuilder()
    total = 0
    for path in files:
        for first, lines in read_line_chunks(path, rejects, chunk_lines=chunk_lines):
            total += _parse_chunk(lines, first, str(path), names, at, rejects, builder)
    return builder.build(rejects, [str(p) for p in files], total)


def _name_table(scripts: Sequence[str] | Mapping[int, str] | None) -> dict[int, str] | None:
    if scripts is None:
        return None
    table = dict(scripts) if isinstance(scripts, Mapping) else dict(enumerate(scripts))
    for number, name in table.items():
        if not isinstance(number, int) or number < 0:
            raise ConfigError(f"script numbers must be integers >= 0, got {number!r}")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"script {number}: name must be non-empty text, got {name!r}")
    return table


def _parse_chunk(
    lines: list[str],
    first: int,
    source: str,
    names: dict[int, str] | None,
    at: str,
    rejects: RejectCounter,
    builder: TransactionsBuilder,
) -> int:
    text = pa.array(lines, type=pa.string())
    n = len(text)
    blank = ~_bools(pc.match_substring_regex(text, r"\S"))
    parts = pc.extract_regex(text, _LINE)
    code = np.zeros(n, dtype=np.int8)
    code[~blank & ~_bools(parts.is_valid())] = 1
    todo = code == 0

    raw = parts.field("time")
    digits = _bools(pc.match_substring_regex(raw, r"^[0-9]{1,15}$"))
    status = {word: _bools(pc.equal(raw, word)) & todo & ~blank for word in _UNTIMED}
    untimed = np.logical_or.reduce(list(status.values()))
    negative = _bools(pc.match_substring_regex(raw, r"^-[0-9.]+$"))
    code[todo & ~blank & negative] = 2
    code[todo & ~blank & ~negative & ~digits & ~untimed] = 3

    epoch = _ints(parts.field("epoch"))
    micros = _ints(parts.field("us"))
    script = _ints(parts.field("script"))
    todo = (code == 0) & ~blank
    code[todo & ((epoch < _EPOCH_MIN) | (epoch >= _EPOCH_MAX))] = 4
    code[(code == 0) & ~blank & (micros >= 1_000_000)] = 5
    if names is None:
        known = np.ones(n, dtype=bool)
    else:
        known = np.isin(script, np.fromiter(names, dtype=np.int64, count=len(names)))
    code[(code == 0) & ~blank & ~known] = 6

    def detail(i: int, k: int) -> tuple[str, str | None]:
        column = _FIELDS[k - 1]
        if column is None:
            return _REASONS[k - 1], None
        group = {"time": "time", "time_epoch": "epoch", "time_us": "us", "script_no": "script"}
        value = parts.field(group[column])[i].as_py()
        return f"{_REASONS[k - 1]}: {value!r}", column

    rejects.add_chunk(source, lambda i: first + i, code, _REASONS, texts=lines, detail=detail)
    good = (code == 0) & ~blank
    for word, mask in status.items():
        builder.count_untimed(word, int((mask & good).sum()))
    ok = good & digits
    latency = _ints(pc.if_else(pa.array(digits), raw, "0"))[ok] * 1e-6
    end_ns = epoch[ok] * 1_000_000_000 + micros[ok] * 1_000
    times = end_ns if at == "end" else end_ns - np.round(latency * 1e9).astype(np.int64)
    used, codes = np.unique(script[ok], return_inverse=True)
    labels = [names[int(s)] if names is not None else f"script{int(s)}" for s in used]
    builder.add(times, codes, labels, latency)
    return int(n - blank.sum())


def _bools(array: object) -> npt.NDArray[np.bool_]:
    return np.asarray(pc.fill_null(array, False).to_numpy(zero_copy_only=False), dtype=bool)


def _ints(array: object) -> npt.NDArray[np.int64]:
    """Digit strings → int64 (0 where empty or null; callers mask those rows)."""
    filled = pc.if_else(pc.equal(pc.fill_null(array, ""), ""), "0", pc.fill_null(array, "0"))
    return np.asarray(pc.cast(filled, pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
