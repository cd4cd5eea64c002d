"""Web server access logs → transaction records (and from there the workload frame).

Reads the Common and Combined Log Formats that Apache httpd and nginx write, with a
response-time field added — Apache ``%D`` (microseconds) or ``%T`` / ``%{ms}T``, nginx
``$request_time`` (seconds, millisecond resolution) — by default as the **last** field::

    LogFormat "%h %l %u %t \\"%r\\" %>s %b \\"%{Referer}i\\" \\"%{User-Agent}i\\" %D" timed
    log_format timed '$remote_addr - $remote_user [$time_local] "$request" $status '
                     '$body_bytes_sent "$http_referer" "$http_user_agent" $request_time';

Each request becomes one transaction whose type comes from a **mapping** of method + URL path
to a name (:class:`Rule`, first match wins, query strings ignored); without rules the type is
the method and first path segment (``GET /api``).

Lines are matched a chunk at a time with RE2 (through pyarrow), so a gigabyte log never becomes
a list of Python dicts. Patterns given by users (rule regexes, a whole-line ``pattern``) are
therefore RE2 syntax: Python's, without backreferences or look-around.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from perfsleuth.errors import ConfigError, DataError, SourceError
from perfsleuth.sources.files import input_name
from perfsleuth.sources.transactions import (
    RejectCounter,
    Transactions,
    TransactionsBuilder,
    read_line_chunks,
    utc_ns,
)
from perfsleuth.tomlfile import read_toml, validate

__all__ = ["CLF_TIME", "Rule", "glob_to_regex", "load_rules", "read_weblog"]

log = logging.getLogger(__name__)

CLF_TIME = "%d/%b/%Y:%H:%M:%S %z"
"""strftime format of the Common Log Format time, ``10/Oct/2000:13:55:36 -0700``."""

OTHER = "other"
"""Type name for requests no rule matches, and for the rare types folded by ``max_types``."""

# A field of a log line: a quoted string (with backslash escapes), a [bracketed] time, or a word.
_TOKEN = r'(?:"(?:[^"\\]|\\.)*"|\[[^\]]*\]|\S+)'
_CLF = r'^\S+ \S+ \S+ \[(?P<time>[^\]]*)\] "(?P<request>(?:[^"\\]|\\.)*)"'
# The target runs to the protocol: clients do send spaces in it, and it is still a request.
_REQUEST = r"^(?P<method>[A-Za-z][A-Za-z0-9._-]{0,31}) (?P<target>.+?)(?: HTTP/[0-9.]{1,5})?$"
_PATH = r"^(?:[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*)?(?P<path>[^?#]*)"
_SEGMENT = r"^/(?P<segment>[A-Za-z0-9._~%!$&'()*+,;=:@-]{0,64})(?:/|$)"
# A number, quoted or not: the quotes must pair up, or '8.50"' (the end of a quoted user agent,
# "... Opera 8.50") would read as 8.5 s.
_NUMBER = r'^(?:"[0-9]+(?:\.[0-9]*)?"|[0-9]+(?:\.[0-9]*)?)$'
_NEGATIVE = r'^(?:"-[0-9]+(?:\.[0-9]*)?"|-[0-9]+(?:\.[0-9]*)?)$'
# A Common (%h %l %u %t "%r" %>s %b) or Combined ("%{Referer}i" "%{User-Agent}i") line and
# nothing after: a log without a response-time field, whose last field is bytes or the agent.
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_BARE = rf"^\S+ \S+ \S+ \[[^\]]*\] {_QUOTED} \S+ \S+(?: {_QUOTED} {_QUOTED})?\s*$"


def _check_re2(pattern: str) -> str:
    try:
        pc.match_substring_regex(pa.array([""]), pattern)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ValueError(f"not a valid RE2 regular expression {pattern!r}: {exc}") from None
    return pattern


def glob_to_regex(glob: str) -> str:
    """Translate a shell-style glob into an anchored RE2 regex.

    ``*`` matches any run of characters **including** ``/`` (so ``/api/*`` matches
    ``/api/users/42``), ``?`` one character, ``[abc]`` / ``[!abc]`` a character set.
    """
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if c == "*":
            while i + 1 < len(glob) and glob[i + 1] == "*":
                i += 1
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "^" + "".join(out) + "$"


class Rule(BaseModel):
    """Maps requests to a transaction type: method(s) + a URL path pattern.

    Give ``path`` (a glob that must match the whole path, see :func:`glob_to_regex`) or
    ``regex`` (RE2, searched anywhere in the path: anchor it with ``^``/``$``). The path is
    the request target without the query string or fragment and without ``scheme://host``
    (proxy requests), not percent-decoded. ``method`` is ``"*"`` (any), one method, or several
    separated by commas (``"GET,HEAD"``); methods compare case-insensitively.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str = Field(min_length=1, description="transaction type of matching requests")
    path: str | None = Field(default=None, description="glob on the URL path")
    regex: str | None = Field(default=None, description="RE2 regex searched in the URL path")
    method: str = Field(default="*", description="'*', 'GET' or 'GET,HEAD'")

    @field_validator("regex")
    @classmethod
    def _re2(cls, value: str | None) -> str | None:
        return None if value is None else _check_re2(value)

    @model_validator(mode="after")
    def _one_pattern(self) -> Rule:
        if self.path is not None and self.regex is not None:
            raise ValueError("give either path (a glob) or regex, not both")
        return self

    def path_regex(self) -> str:
        """The RE2 regex this rule applies to paths."""
        if self.regex is not None:
            return self.regex
        return glob_to_regex(self.path if self.path is not None else "*")

    def methods(self) -> tuple[str, ...] | None:
        """Upper-cased methods, or None for any."""
        names = tuple(m.strip().upper() for m in self.method.split(",") if m.strip())
        return None if not names or "*" in names else names


def load_rules(path: str | Path) -> list[Rule]:
    """Read mapping rules from a TOML file of ``[[rule]]`` tables, in order.

    ::

        [[rule]]
        type = "search"
        method = "GET"
        path = "/search*"

        [[rule]]
        type = "checkout"
        regex = "^/cart/[0-9]+/checkout$"
    """
    path = Path(path)
    if not path.is_file():
        raise SourceError(f"{path}: cannot read: no such file")
    document = read_toml(path, what="rules")
    data = document.data
    extra = sorted(set(data) - {"rule"})
    if extra:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(extra)} (expected [[rule]] tables)")
    rules = data.get("rule", [])
    if not isinstance(rules, list):
        raise ConfigError(f"{path}: 'rule' must be an array of tables ([[rule]])")
    return [
        validate(Rule, item, source=document.source, locate=document.line, prefix=f"rule.{i}")
        for i, item in enumerate(rules)
    ]


@dataclass(frozen=True, slots=True)
class _Spec:
    line: str  # whole-line regex: groups time and request (or method and path) [and latency]
    latency: str | None  # separate regex for the latency field (None: in ``line``)
    split_request: bool  # ``line`` has a request group to split into method and target
    time_format: str
    logged_at_end: bool  # the logged time is the end: subtract the latency
    unit: str
    rules: tuple[tuple[str, tuple[str, ...] | None, int], ...]  # (regex, methods, type index)
    types: tuple[str, ...]  # rule types (unique, in rule order), then maybe ``unmatched``
    unmatched: int | None  # index in ``types`` of the unmatched type; None: reject
    bare: bool  # refuse Common/Combined lines with nothing after (the response time is last)


_REASONS = [
    "not in Common/Combined Log Format",
    "request line is not 'METHOD target [PROTOCOL]'",
    "bad timestamp",
    "no response-time field at the configured position",
    "response time is not a number",
    "response time is negative",
    "no mapping rule matches the request",
    "no response-time field: the line ends with the Common/Combined Log Format's own fields",
]
_FIELDS = [None, "request", "time", "latency", "latency", "latency", "request", "latency"]
_BARE_CODE = 8
_PATTERN_REASONS = ["does not match the pattern", *_REASONS[1:]]


def read_weblog(
    paths: str | Path | Sequence[str | Path],
    *,
    rules: Sequence[Rule] | None = None,
    unmatched: str | None = OTHER,
    max_types: int | None = 50,
    latency_field: int = -1,
    latency_unit: Literal["auto", "s", "ms", "us"] = "auto",
    pattern: str | None = None,
    time_format: str = CLF_TIME,
    logged_at: Literal["start", "end"] = "start",
    strict: bool = False,
    max_examples: int = 20,
    chunk_lines: int = 100_000,
) -> Transactions:
    """Read access logs (plain or gzip) into transaction records.

    Parameters
    ----------
    paths
        One log file or several (their records are pooled; rotated ``.gz`` files are fine).
    rules
        Method + path → type mapping, first match wins. Without rules, the type is the method
        and the first path segment: ``GET /api`` for ``GET /api/users/7?x=1``, ``GET /`` for
        ``GET /``; a segment with characters outside RFC 3986's path characters or longer than
        64 gives ``GET other``, so odd URLs never become type names.
    unmatched
        Type of requests no rule matches; ``None`` rejects them as bad lines instead.
    max_types
        Without rules, keep the ``max_types - 1`` busiest types and fold the rest into
        ``"other"`` (scanners and typos would otherwise add a type per URL); ``None`` keeps all.
    latency_field
        Position of the response-time field among the line's fields, where a quoted string
        and the ``[time]`` count as one field: ``-1`` the last (default), ``-2`` the one before,
        ``7`` the eighth (``%h %l %u %t "%r" %>s %b %D ...``).
    latency_unit
        ``"us"`` for Apache ``%D``, ``"s"`` for nginx ``$request_time`` and Apache ``%T``,
        ``"ms"`` for Apache ``%{ms}T``. ``"auto"`` (default) reads a value with a decimal
        point as seconds (nginx) and a whole number as microseconds (Apache ``%D``); Apache
        ``%T`` logs need ``"s"``.
    pattern
        Instead of the Common Log Format: a whole-line RE2 regex, searched in each line (anchor
        it with ``^``), with named groups ``time``, ``latency`` and either ``request``
        (``GET /x HTTP/1.1``) or ``method`` and ``path``. ``latency_field`` is then unused.
    time_format
        strftime format of the ``time`` field; ISO 8601 is also accepted.
    logged_at
        What the logged time marks: ``"start"`` (Apache ``%t``: when the request arrived) or
        ``"end"`` (nginx ``$time_local``: when the response was logged). Records are filed
        under their start either way — Kelly's model counts the transactions that *began* in
        a window — so ``"end"`` times are moved back by the response time.
    strict
        Raise :class:`~perfsleuth.errors.DataError` naming ``file:line`` on the first bad line
        instead of counting it in :attr:`Transactions.rejects`.
    max_examples
        Rejected lines kept as examples.
    chunk_lines
        Lines matched at a time (memory vs. overhead).

    Returns
    -------
    Transactions
        Records with the start time, type and latency in seconds; rejected lines by reason
        with the first few line numbers; call ``.workload("5m")`` for the frame.

    Notes
    -----
    Bad lines: not in the format, a request line that is not ``METHOD target [PROTOCOL]``
    (including ``"-"`` of connections closed before a request), a timestamp that does not
    parse, a missing, non-numeric or negative response time, and (with ``unmatched=None``) a
    request no rule matches. Blank lines are skipped silently. Bytes that are not UTF-8 are
    replaced, never fatal.
    """
    files = [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]
    if not files:
        raise ConfigError("read_weblog: no files given")
    if logged_at not in ("start", "end"):
        raise ConfigError(f"logged_at must be 'start' or 'end', got {logged_at!r}")
    if max_types is not None and max_types < 1:
        raise ConfigError(f"max_types must be >= 1 or None, got {max_types}")
    spec = _make_spec(
        rules, unmatched, latency_field, latency_unit, pattern, time_format, logged_at == "end"
    )
    rejects = RejectCounter(strict=strict, max_examples=max_examples)
    builder = TransactionsBuilder()
    total = 0
    for path in files:
        for first, lines in read_line_chunks(path, rejects, chunk_lines=chunk_lines):
            total += _parse_chunk(lines, first, str(path), spec, rejects, builder)
    _no_response_times(spec, rejects, files, total)
    result = builder.build(rejects, [input_name(p) for p in files], total)
    if not rules and max_types is not None:
        result = replace(result, records=_fold_rare(result.records, max_types))
    return result


def _no_response_times(
    spec: _Spec, rejects: RejectCounter, files: Sequence[Path], total: int
) -> None:
    """Say once that the log has no response-time field, not once per line."""
    found = rejects.result()
    bare = found.by_reason.get(_REASONS[_BARE_CODE - 1], 0)
    if not spec.bare or not total or found.count < total or bare * 2 <= total:
        return
    first = next((b for b in found.examples if b.reason == _REASONS[_BARE_CODE - 1]), None)
    where = ", ".join(input_name(p) for p in files) if len(files) <= 3 else f"{len(files)} files"
    raise DataError(
        f"{where}: no response-time field: {bare:,} of {total:,} line(s) end with the "
        "Common/Combined Log Format's own fields"
        + (f" (first: line {first.line})" if first is not None else "")
        + "; log the response time last (Apache: %D at the end of LogFormat, nginx: "
        "$request_time at the end of log_format)"
    )


def _make_spec(
    rules: Sequence[Rule] | None,
    unmatched: str | None,
    latency_field: int,
    latency_unit: str,
    pattern: str | None,
    time_format: str,
    logged_at_end: bool,
) -> _Spec:
    if latency_unit not in ("auto", "s", "ms", "us"):
        raise ConfigError(f"latency_unit must be auto, s, ms or us, got {latency_unit!r}")
    if unmatched is not None and not unmatched:
        raise ConfigError("unmatched must be a type name or None")
    if pattern is not None:
        try:
            _check_re2(pattern)
        except ValueError as exc:
            raise ConfigError(f"pattern: {exc}") from None
        groups = set(re.findall(r"\(\?P<(\w+)>", pattern))
        split = "request" in groups
        if not {"time", "latency"} <= groups or not (split or {"method", "path"} <= groups):
            raise ConfigError(
                "pattern needs named groups time, latency and either request or method and "
                f"path; it has {', '.join(sorted(groups)) or 'none'}"
            )
        line, latency = pattern, None
    else:
        line, split = _CLF, True
        if latency_field == -1:
            latency = r"(?P<latency>\S+)\s*$"
        elif latency_field >= 0:
            latency = rf"^(?:{_TOKEN}\s+){{{latency_field}}}(?P<latency>{_TOKEN})"
        else:
            # Lazy prefix: the first field from which exactly k fields remain (see tests).
            k = -latency_field - 1
            latency = rf"^(?:{_TOKEN}\s+)*?(?P<latency>{_TOKEN})(?:\s+{_TOKEN}){{{k}}}\s*$"
    types: list[str] = []
    compiled = []
    for rule in rules or ():
        if rule.type not in types:
            types.append(rule.type)
        compiled.append((rule.path_regex(), rule.methods(), types.index(rule.type)))
    index = None
    if rules and unmatched is not None:
        if unmatched not in types:
            types.append(unmatched)
        index = types.index(unmatched)
    return _Spec(
        line,
        latency,
        split,
        time_format,
        logged_at_end,
        latency_unit,
        tuple(compiled),
        tuple(types),
        index,
        bare=pattern is None and latency_field == -1,
    )


def _bools(array: Any) -> npt.NDArray[np.bool_]:
    return np.asarray(pc.fill_null(array, False).to_numpy(zero_copy_only=False), dtype=bool)


def _parse_chunk(
    lines: list[str],
    first: int,
    source: str,
    spec: _Spec,
    rejects: RejectCounter,
    builder: TransactionsBuilder,
) -> int:
    """Match one chunk, reject its bad lines, add its records; returns non-blank lines."""
    text = pa.array(lines, type=pa.string())
    n = len(text)
    blank = ~_bools(pc.match_substring_regex(text, r"\S"))
    head = pc.extract_regex(text, spec.line)
    code = np.zeros(n, dtype=np.int8)
    bad = ~_bools(head.is_valid()) & ~blank
    code[bad] = 1

    if spec.split_request:
        request = head.field("request")
        parts = pc.extract_regex(request, _REQUEST)
        method, target = parts.field("method"), parts.field("target")
        code[(code == 0) & ~blank & ~_bools(parts.is_valid())] = 2
    else:
        request = None
        method, target = head.field("method"), head.field("path")
    method = pc.utf8_upper(method)
    path = pc.extract_regex(target, _PATH).field("path")
    path = pc.if_else(pc.equal(path, ""), "/", path)

    times, time_text = _times(head.field("time"), spec.time_format)
    code[(code == 0) & ~blank & np.isnat(times)] = 3
    if spec.bare:
        code[(code == 0) & ~blank & _bools(pc.match_substring_regex(text, _BARE))] = _BARE_CODE

    if spec.latency is None:
        raw = head.field("latency")
        located = np.ones(n, dtype=bool)
    else:
        found = pc.extract_regex(text, spec.latency)
        raw = found.field("latency")
        located = _bools(found.is_valid())
    number = _bools(pc.match_substring_regex(raw, _NUMBER))
    negative = _bools(pc.match_substring_regex(raw, _NEGATIVE))
    todo = (code == 0) & ~blank
    code[todo & ~located] = 4
    code[todo & located & ~number & ~negative] = 5
    code[todo & located & negative] = 6
    digits = pc.utf8_trim(pc.if_else(pa.array(number), raw, "0"), '"')
    latency = np.asarray(pc.cast(digits, pa.float64()).to_numpy(zero_copy_only=False))
    if spec.unit == "auto":
        latency = latency * np.where(_bools(pc.match_substring(digits, ".")), 1.0, 1e-6)
    else:
        latency = latency * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[spec.unit]

    if spec.rules:
        codes = _apply_rules(spec, method, path)
        if spec.unmatched is None:
            code[(code == 0) & ~blank & (codes < 0)] = 7
        else:
            codes[codes < 0] = spec.unmatched
        names: Sequence[str] = spec.types
    else:
        codes, names = _default_types(method, path)

    def detail(i: int, k: int) -> tuple[str, str | None]:
        value: object = None
        if k == 2 and request is not None:
            value = request[i].as_py()
        elif k == 3:
            value = time_text[i]
        elif k in (5, 6):
            value = raw[i].as_py()
        elif k == 7:
            value = f"{method[i].as_py()} {path[i].as_py()}"
        reason = reasons[k - 1]
        return (f"{reason}: {value!r}" if value is not None else reason), _FIELDS[k - 1]

    reasons = _PATTERN_REASONS if spec.latency is None else _REASONS
    rejects.add_chunk(source, lambda i: first + i, code, reasons, texts=lines, detail=detail)
    ok = (code == 0) & ~blank
    stamps = times[ok].astype(np.int64)
    if spec.logged_at_end:
        stamps = stamps - np.round(latency[ok] * 1e9).astype(np.int64)
    builder.add(stamps, codes[ok], names, latency[ok])
    return int(n - blank.sum())


def _times(values: Any, time_format: str) -> tuple[npt.NDArray[np.datetime64], _LazyText]:
    """Parse time strings, each distinct one once: datetime64[ns] (UTC), NaT where bad."""
    encoded = pc.dictionary_encode(values)
    uniques = pd.Index(encoded.dictionary.to_pylist(), dtype=object)
    parsed = pd.to_datetime(uniques, format=time_format, utc=True, errors="coerce")
    stamps = utc_ns(parsed)
    retry = np.isnat(stamps) & np.asarray(parsed.isna())
    if retry.any():
        stamps[retry] = utc_ns(
            pd.to_datetime(uniques[retry], format="ISO8601", utc=True, errors="coerce")
        )
    nulls = ~_bools(encoded.indices.is_valid())
    codes = np.asarray(
        pc.fill_null(encoded.indices, 0).to_numpy(zero_copy_only=False), dtype=np.int64
    )
    out = stamps[codes] if len(stamps) else np.full(len(codes), np.datetime64("NaT"), "M8[ns]")
    out[nulls] = np.datetime64("NaT")
    return out, _LazyText(uniques, codes)


class _LazyText:
    """The time string of row ``i``, for error messages only."""

    def __init__(self, uniques: pd.Index, codes: npt.NDArray[np.int64]) -> None:
        self.uniques, self.codes = uniques, codes

    def __getitem__(self, i: int) -> str:
        return str(self.uniques[self.codes[i]]) if len(self.uniques) else ""


def _apply_rules(spec: _Spec, method: Any, path: Any) -> npt.NDArray[np.int64]:
    """Type index of each request under the first matching rule, -1 where none matches."""
    codes = np.full(len(path), -1, dtype=np.int64)
    for regex, methods, type_index in spec.rules:
        open_ = codes < 0
        if not open_.any():
            break
        hit = _bools(pc.match_substring_regex(path, regex))
        if methods is not None:
            hit &= _bools(pc.is_in(method, value_set=pa.array(methods, type=pa.string())))
        codes[open_ & hit] = type_index
    return codes


def _default_types(method: Any, path: Any) -> tuple[npt.NDArray[np.int64], list[str]]:
    """``METHOD /segment`` per request (``METHOD other`` for odd segments), dictionary-coded."""
    found = pc.extract_regex(path, _SEGMENT)
    named = pc.binary_join_element_wise(method, found.field("segment"), " /")
    odd = pc.binary_join_element_wise(method, pa.scalar(OTHER), " ")
    named = pc.fill_null(pc.if_else(found.is_valid(), named, odd), OTHER)
    encoded = pc.dictionary_encode(named)
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    return codes, [str(s) for s in encoded.dictionary.to_pylist()]


def _fold_rare(records: pd.DataFrame, max_types: int) -> pd.DataFrame:
    types = records["type"]
    counts = types.value_counts()
    if len(counts) <= max_types:
        return records
    order = sorted(counts.items(), key=lambda item: (-item[1], str(item[0])))
    keep = {str(name) for name, _ in order[: max_types - 1]}
    log.info("folding %d rare request types into %r", len(counts) - len(keep), OTHER)
    names = [str(c) for c in types.cat.categories]
    target = [n if n in keep else OTHER for n in names]
    merged = sorted(set(target))
    lookup = np.array([merged.index(t) for t in target], dtype=np.int64)
    codes = lookup[types.cat.codes.to_numpy()]
    out = records.copy()
    out["type"] = pd.Categorical.from_codes(codes, categories=merged)
    return out
