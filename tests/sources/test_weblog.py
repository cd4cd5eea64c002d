"""Access logs: Common/Combined formats with a response time, the type mapping, bad lines."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest
from pydantic import ValidationError

from perfsleuth.errors import ConfigError, DataError, SourceError
from perfsleuth.frames import workload_types
from perfsleuth.sources.weblog import Rule, glob_to_regex, load_rules, read_weblog

UA = '"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)"'


def line(
    request: str = "GET /api/users/7?x=1 HTTP/1.1",
    latency: str = "1500",
    when: str = "10/Oct/2000:13:55:36 -0700",
    tail: str = f'"http://example.com/" {UA}',
) -> str:
    """One Combined Log Format line with the response time last (Apache %D by default)."""
    return f'192.0.2.1 - frank [{when}] "{request}" 200 2326 {tail} {latency}'.rstrip()


def write(tmp_path: Path, name: str, lines: list[str], *, zipped: bool = False) -> Path:
    path = tmp_path / name
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if zipped else data)
    return path


# -- formats ------------------------------------------------------------------------------------


def test_apache_combined_with_microseconds(tmp_path: Path) -> None:
    tx = read_weblog(write(tmp_path, "access.log", [line(), line("POST /login HTTP/1.1", "250")]))
    rec = tx.records
    assert rec["type"].tolist() == ["GET /api", "POST /login"]
    assert rec["latency"].tolist() == pytest.approx([0.0015, 0.00025])
    # [10/Oct/2000:13:55:36 -0700] is 20:55:36 UTC
    assert rec["time"].iat[0] == pd.Timestamp("2000-10-10 20:55:36", tz="UTC")
    assert str(rec["time"].dtype) == "datetime64[ns, UTC]"
    assert tx.rejects.count == 0 and tx.lines == 2


def test_nginx_request_time_in_seconds(tmp_path: Path) -> None:
    nginx = [
        line(latency="0.250", when="10/Oct/2000:13:55:36 +0000"),
        line(latency="1.005", when="10/Oct/2000:13:55:37 +0200"),
        line(latency="0.000", when="10/Oct/2000:13:55:38 +0000"),
    ]
    tx = read_weblog(write(tmp_path, "nginx.log", nginx))
    assert tx.records["latency"].tolist() == pytest.approx([0.25, 1.005, 0.0])
    assert tx.records["time"].iat[1] == pd.Timestamp("2000-10-10 11:55:37", tz="UTC")


def test_nginx_times_mark_the_end(tmp_path: Path) -> None:
    path = write(tmp_path, "n.log", [line(latency="2.500", when="10/Oct/2000:13:55:36 +0000")])
    start = read_weblog(path, logged_at="end").records["time"].iat[0]
    assert start == pd.Timestamp("2000-10-10 13:55:33.5", tz="UTC")
    assert read_weblog(path).records["time"].iat[0] == pd.Timestamp("2000-10-10 13:55:36", tz="UTC")
    with pytest.raises(ConfigError, match="logged_at"):
        read_weblog(path, logged_at="middle")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("unit", "value", "seconds"),
    [("s", "2", 2.0), ("ms", "15", 0.015), ("us", "15", 15e-6), ("auto", "15", 15e-6)],
)
def test_latency_units(tmp_path: Path, unit: str, value: str, seconds: float) -> None:
    tx = read_weblog(write(tmp_path, "a.log", [line(latency=value)]), latency_unit=unit)  # type: ignore[arg-type]
    assert tx.records["latency"].iat[0] == pytest.approx(seconds)


def test_common_log_format_with_apache_t(tmp_path: Path) -> None:
    common = '127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 3'
    tx = read_weblog(write(tmp_path, "common.log", [common]), latency_unit="s")
    assert tx.records["latency"].tolist() == [3.0]
    assert tx.types == ["GET /apache_pb.gif"]


@pytest.mark.parametrize(
    ("position", "expected"),
    [(7, 0.0042), (-4, 0.0042), (-1, 0.000009)],
)
def test_latency_field_position(tmp_path: Path, position: int, expected: float) -> None:
    # %h %l %u %t "%r" %>s %b %D "%{Referer}i" "%{User-Agent}i" %{pid}P: %D is field 7, or -4
    text = (
        '192.0.2.1 - - [10/Oct/2000:13:55:36 +0000] "GET /a?q=\\"x\\" HTTP/1.1" 200 12 4200 '
        '"http://ref/ with space" "agent \\"quoted words\\" [x]" 9'
    )
    tx = read_weblog(write(tmp_path, "pos.log", [text]), latency_field=position)
    assert tx.records["latency"].tolist() == pytest.approx([expected])


def test_custom_pattern_with_iso_times(tmp_path: Path) -> None:
    lines = [
        "2024-05-01T09:00:01+02:00 0.120 GET /search?q=x",
        "2024-05-01T09:00:02Z 0.080 POST /cart/1",
        "not matching",
    ]
    tx = read_weblog(
        write(tmp_path, "custom.log", lines),
        pattern=r"^(?P<time>\S+) (?P<latency>\S+) (?P<method>\S+) (?P<path>\S+)$",
    )
    assert tx.records["type"].tolist() == ["GET /search", "POST /cart"]
    assert tx.records["time"].iat[0] == pd.Timestamp("2024-05-01 07:00:01", tz="UTC")
    assert [(b.line, b.reason) for b in tx.rejects.examples] == [(3, "does not match the pattern")]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"^(?P<time>\S+) (?P<latency>\S+)", "needs named groups"),
        (r"^(?P<time>\S+) (?P<latency>\S+) (?P<request>.*)(?<=x)", "not a valid RE2"),
    ],
)
def test_bad_custom_patterns(tmp_path: Path, pattern: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        read_weblog(write(tmp_path, "x.log", [line()]), pattern=pattern)


def test_gzip_and_several_files(tmp_path: Path) -> None:
    old = write(tmp_path, "access.log.1.gz", [line(latency="100")] * 3, zipped=True)
    new = write(tmp_path, "access.log", [line(latency="200")] * 2)
    tx = read_weblog([old, new])
    assert len(tx.records) == 5 and tx.sources == (str(old), str(new))
    assert tx.records["latency"].sum() == pytest.approx(0.0007)


def test_workload_from_a_log(tmp_path: Path) -> None:
    lines = [
        line("GET /a HTTP/1.1", "1000", "10/Oct/2000:13:55:36 +0000"),
        line("GET /a HTTP/1.1", "3000", "10/Oct/2000:13:59:59 +0000"),
        line("GET /b HTTP/1.1", "2000", "10/Oct/2000:14:12:00 +0000"),
    ]
    frame = read_weblog(write(tmp_path, "w.log", lines)).workload("5m")
    assert workload_types(frame) == ["GET /a", "GET /b"]
    assert frame["time"].iat[0] == pd.Timestamp("2000-10-10 13:55", tz="UTC")
    assert frame["n[GET /a]"].tolist() == [2, 0, 0, 0]
    assert frame["rt_sum[GET /a]"].tolist() == pytest.approx([0.004, 0, 0, 0])
    assert frame["n[GET /b]"].tolist() == [0, 0, 0, 1]


# -- the type mapping -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_line", "expected"),
    [
        ("GET /api/users/7?x=1 HTTP/1.1", "GET /api"),
        ("GET / HTTP/1.1", "GET /"),
        ("GET /?page=2 HTTP/1.1", "GET /"),
        ("get /Search#frag HTTP/1.1", "GET /Search"),
        ("POST http://proxy.example:8080/cart/1 HTTP/1.1", "POST /cart"),
        ("HEAD /static/app.js HTTP/2.0", "HEAD /static"),
        ("GET /index.html", "GET /index.html"),  # HTTP/0.9: no protocol
        ("OPTIONS * HTTP/1.1", "OPTIONS other"),
        ("GET /<script>alert(1)</script> HTTP/1.1", "GET other"),
        ("GET /a\\x22b HTTP/1.1", "GET other"),
        ("GET /" + "x" * 65 + " HTTP/1.1", "GET other"),
        ("CONNECT example.com:443 HTTP/1.1", "CONNECT other"),
    ],
)
def test_default_type_is_method_and_first_segment(
    tmp_path: Path, request_line: str, expected: str
) -> None:
    tx = read_weblog(write(tmp_path, "d.log", [line(request_line)]))
    assert tx.records["type"].tolist() == [expected]


RULES = [
    Rule(type="user", method="GET,HEAD", path="/api/users/*"),
    Rule(type="user_write", regex=r"^/api/users/[0-9]+$"),
    Rule(type="static", path="/static/*.[cj]s"),
    Rule(type="api", path="/api/*"),
]


@pytest.mark.parametrize(
    ("request_line", "expected"),
    [
        ("GET /api/users/7?full=1 HTTP/1.1", "user"),
        ("head /api/users/7 HTTP/1.1", "user"),  # methods compare case-insensitively
        ("PUT /api/users/7 HTTP/1.1", "user_write"),  # first rule is GET/HEAD only
        ("PUT /api/users/7/avatar HTTP/1.1", "api"),  # regex is anchored by the user
        ("GET /static/app.js HTTP/1.1", "static"),
        ("GET /static/app.css HTTP/1.1", "other"),  # [cj]s matches one character then 's'
        ("GET /api HTTP/1.1", "other"),  # /api/* needs the slash
        ("DELETE /elsewhere HTTP/1.1", "other"),
    ],
)
def test_rules_first_match_wins(tmp_path: Path, request_line: str, expected: str) -> None:
    tx = read_weblog(write(tmp_path, "r.log", [line(request_line)]), rules=RULES)
    assert tx.records["type"].tolist() == [expected]


def test_unmatched_requests(tmp_path: Path) -> None:
    path = write(tmp_path, "u.log", [line("GET /api/x HTTP/1.1"), line("GET /nope HTTP/1.1")])
    rules = [Rule(type="api", path="/api/*")]
    assert read_weblog(path, rules=rules, unmatched="misc").types == ["api", "misc"]
    tx = read_weblog(path, rules=rules, unmatched=None)
    assert tx.types == ["api"]
    assert [(b.line, b.reason) for b in tx.rejects.examples] == [
        (2, "no mapping rule matches the request: 'GET /nope'")
    ]
    with pytest.raises(DataError, match=r"u\.log:2: column 'request': no mapping rule"):
        read_weblog(path, rules=rules, unmatched=None, strict=True)


def test_rare_types_fold_into_other(tmp_path: Path) -> None:
    lines = [line("GET /busy HTTP/1.1")] * 5 + [line("GET /warm HTTP/1.1")] * 3
    lines += [line(f"GET /rare{i} HTTP/1.1") for i in range(4)]
    path = write(tmp_path, "f.log", lines)
    tx = read_weblog(path, max_types=3)
    assert tx.types == ["GET /busy", "GET /warm", "other"]
    assert (tx.records["type"] == "other").sum() == 4
    assert len(read_weblog(path, max_types=None).types) == 6


def test_glob_translation() -> None:
    assert glob_to_regex("/api/*") == "^/api/.*$"
    assert glob_to_regex("/v?/[!x]y**") == "^/v./[^x]y.*$"
    assert glob_to_regex("/a.b+c") == r"^/a\.b\+c$"


def test_rule_validation() -> None:
    with pytest.raises(ValidationError, match="not both"):
        Rule(type="x", path="/a", regex="/a")
    with pytest.raises(ValidationError, match="RE2"):
        Rule(type="x", regex="(?<=a)b")
    with pytest.raises(ValidationError):
        Rule(type="", path="/a")
    with pytest.raises(ValidationError, match="Extra inputs"):
        Rule.model_validate({"type": "x", "paht": "/a"})
    assert Rule(type="x").methods() is None and Rule(type="x", method="get, Post").methods() == (
        "GET",
        "POST",
    )


def test_load_rules(tmp_path: Path) -> None:
    good = tmp_path / "rules.toml"
    good.write_text(
        '[[rule]]\ntype = "search"\nmethod = "GET"\npath = "/search*"\n\n'
        '[[rule]]\ntype = "cart"\nregex = "^/cart/[0-9]+$"\n'
    )
    assert [r.type for r in load_rules(good)] == ["search", "cart"]
    bad = tmp_path / "bad.toml"
    bad.write_text('[[rule]]\ntype = "x"\npaht = "/a"\n')
    # through the one TOML reader: the line and the key path (was "bad.toml: rule[0]: paht")
    with pytest.raises(ConfigError, match=r"bad\.toml:3: rule\.0\.paht"):
        load_rules(bad)
    bad.write_text("[[rule]\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_rules(bad)
    bad.write_text('[rules]\ntype = "x"\n')
    with pytest.raises(ConfigError, match="unknown key"):
        load_rules(bad)
    with pytest.raises(SourceError):
        load_rules(tmp_path / "missing.toml")


# -- bad lines ---------------------------------------------------------------------------------

BAD_LOG = [
    line(),  # 1 good
    "",  # 2 blank: skipped, not counted
    "garbage that is not a log line",  # 3
    line(when="32/Oct/2000:13:55:36 -0700"),  # 4 bad timestamp
    line(latency="-5"),  # 5 negative
    line(latency="fast"),  # 6 not a number
    line(request="-"),  # 7 no request (408)
    line(tail=""),  # 8 no referer/agent: latency still last, fine
    line(request="\\x16\\x03\\x01\\x00"),  # 9 TLS handshake on the HTTP port
    '192.0.2.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 12 "-" "-"',  # 10
    '192.0.2.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1',  # 11 torn line
    line(latency="1e3"),  # 12
]
EXPECTED = [
    (3, "not in Common/Combined Log Format"),
    (4, "bad timestamp"),
    (5, "response time is negative"),
    (6, "response time is not a number"),
    (7, "request line is not 'METHOD target [PROTOCOL]'"),
    (9, "request line is not 'METHOD target [PROTOCOL]'"),
    (10, "no response-time field"),  # a Combined line and nothing after (was "not a number")
    (11, "not in Common/Combined Log Format"),
    (12, "response time is not a number"),
]


@pytest.mark.parametrize("chunk_lines", [100_000, 1, 3])
def test_bad_lines_are_counted_with_line_numbers(tmp_path: Path, chunk_lines: int) -> None:
    tx = read_weblog(write(tmp_path, "bad.log", BAD_LOG), chunk_lines=chunk_lines)
    assert len(tx.records) == 2
    assert tx.lines == len(BAD_LOG) - 1  # the blank line is not a line of data
    got = [(b.line, b.reason.split(":")[0]) for b in tx.rejects.examples]
    assert got == EXPECTED
    assert tx.rejects.count == len(EXPECTED)
    assert sum(tx.rejects.by_reason.values()) == len(EXPECTED)
    assert "bad.log:4: column 'time': bad timestamp: '32/Oct/2000:13:55:36 -0700'" in (
        tx.rejects.summary()
    )


@pytest.mark.parametrize("year", ["1500", "3000", "0000"])
def test_timestamps_out_of_range_are_bad(tmp_path: Path, year: str) -> None:
    path = write(tmp_path, "y.log", [line(), line(when=f"10/Oct/{year}:13:55:36 +0000")])
    tx = read_weblog(path)
    assert [(b.line, b.field) for b in tx.rejects.examples] == [(2, "time")]


def test_strict_raises_on_the_first_bad_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.log", BAD_LOG)
    with pytest.raises(DataError, match=r"bad\.log:3: not in Common/Combined Log Format"):
        read_weblog(path, strict=True)
    later = write(tmp_path, "later.log", [line()] * 4 + [line(latency="-5")])
    with pytest.raises(DataError, match=r"later\.log:5: column 'latency': response time is neg"):
        read_weblog(later, strict=True, chunk_lines=2)


def test_gzip_bad_lines_keep_their_numbers(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.log.gz", BAD_LOG, zipped=True)
    tx = read_weblog(path)
    assert [b.line for b in tx.rejects.examples] == [n for n, _ in EXPECTED]


def test_examples_are_capped(tmp_path: Path) -> None:
    path = write(tmp_path, "many.log", [line()] + ["junk"] * 50)
    tx = read_weblog(path, max_examples=3)
    assert tx.rejects.count == 50 and [b.line for b in tx.rejects.examples] == [2, 3, 4]


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "empty"), (b"\n\n", "empty"), (b"junk\nmore junk\n", "no usable transactions")],
)
def test_unusable_logs(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "x.log"
    path.write_bytes(content)
    with pytest.raises(DataError, match=message):
        read_weblog(path)


def test_missing_file_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="cannot read"):
        read_weblog(tmp_path / "nope.log")


def test_bad_options() -> None:
    with pytest.raises(ConfigError):
        read_weblog("x.log", latency_unit="minutes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        read_weblog("x.log", max_types=0)
    with pytest.raises(ConfigError):
        read_weblog([])


# -- hostile input ---------------------------------------------------------------------------

HOSTILE_REQUESTS = [
    'GET /search?q=\\"><script>alert(1)</script> HTTP/1.1',
    "GET /%00%0d%0aSet-Cookie:x HTTP/1.1",
    "GET /a\\\\b\\\\c HTTP/1.1",
    "GET /ünïcødé/路径 HTTP/1.1",
    "GET /" + "A" * 20_000 + " HTTP/1.1",
    "GET /'; DROP TABLE users; -- HTTP/1.1",
    "GET /n[GET /x]/rt_sum[y] HTTP/1.1",
    "GET /..%2f..%2fetc/passwd HTTP/1.1",
]


def test_hostile_strings_do_not_crash_and_only_become_types_via_the_mapping(
    tmp_path: Path,
) -> None:
    lines = [
        line(r, tail='"\\"-\\"" "ua \\"with\\" quotes \\\\ and \\x00"') for r in HOSTILE_REQUESTS
    ]
    path = tmp_path / "hostile.log"
    path.write_bytes(("\n".join(lines) + "\n").encode() + line().encode()[:40] + b"\xff\xfe\n")
    tx = read_weblog(path)
    assert len(tx.records) == len(HOSTILE_REQUESTS)
    assert tx.rejects.count == 1  # the torn line with invalid UTF-8
    assert set(tx.types) == {
        "GET /search",
        "GET other",
        "GET /..%2f..%2fetc",
        "GET /%00%0d%0aSet-Cookie:x",
    }
    for name in tx.types:
        assert "<" not in name and '"' not in name and "\\" not in name
    frame = tx.workload("1h")  # type names are safe column names
    assert frame.filter(regex=r"^n\[").to_numpy().sum() == len(HOSTILE_REQUESTS)
    mapped = read_weblog(path, rules=[Rule(type="search", path="/search")])
    assert mapped.types == ["other", "search"]


# -- a real log without a response-time field (tests/data/weblog, elastic/examples) -------------

APACHE = Path(__file__).resolve().parents[1] / "data" / "weblog" / "apache_logs_extract"


def test_a_log_without_response_times_is_refused_once(tmp_path: Path) -> None:
    # 27 real Combined Log Format lines: 26 end with the user agent, one (8899 of the original)
    # is torn in it; none has a response time. Said once, not line by line.
    with pytest.raises(DataError) as error:
        read_weblog(APACHE)
    message = str(error.value)
    assert message.startswith(f"{APACHE}: no response-time field: 26 of 27 line(s) end with")
    assert "(first: line 1)" in message and "%D" in message and "$request_time" in message
    assert len(message.splitlines()) == 1


def test_a_number_at_the_end_of_the_user_agent_is_no_response_time(tmp_path: Path) -> None:
    # "... Opera 8.50" (line 8409 of the original) was read as a response time of 8.5 s
    lines = APACHE.read_text().splitlines()
    opera = next(line for line in lines if line.endswith('Opera 8.50"'))
    tx = read_weblog(write(tmp_path, "mixed.log", [line()] * 3 + [opera]))
    assert len(tx.records) == 3 and tx.records["latency"].max() == pytest.approx(0.0015)
    assert [b.reason.split(":")[0] for b in tx.rejects.examples] == ["no response-time field"]
    # with its response time logged last, the same line is read
    timed = read_weblog(write(tmp_path, "timed.log", [f"{line} 2500" for line in lines]))
    assert len(timed.records) == 27 and set(timed.records["latency"]) == {0.0025}


def test_common_log_format_without_a_response_time(tmp_path: Path) -> None:
    # the last field of a Common line is the byte count: 2326 is not 2.326 ms
    common = '127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326'
    tx = read_weblog(write(tmp_path, "common.log", [common, line()]))
    assert tx.records["latency"].tolist() == pytest.approx([0.0015])
    assert tx.rejects.examples[0].line == 1


def test_a_log_from_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    data = ("\n".join([line(), line("POST /login HTTP/1.1", "250")]) + "\n").encode()
    for content in (data, gzip.compress(data)):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(content)))
        tx = read_weblog("-")
        assert tx.records["type"].tolist() == ["GET /api", "POST /login"]
        assert tx.sources == ("<stdin>",)
