"""Headless Chromium for report tests: load a page, return the DOM after its scripts ran.

Usage::

    from tests.support.chromium import body_tag, browse

    @pytest.mark.integration
    def test_page_draws(tmp_path):
        dom, console = browse(write_html(tmp_path / "r.html", findings), tmp_path)
        assert 'data-plots="3"' in body_tag(dom)  # the page counts the figures it drew

:func:`browse` skips the test when Chromium is missing (fails under ``CI``); set
``PERFSLEUTH_CHROMIUM`` to use another binary. Chromium runs with its profile and ``HOME`` in
``tmp_path``, and every process it started is killed before :func:`browse` returns.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import die_with_parent

__all__ = ["CHROMIUM", "body_tag", "browse"]

CHROMIUM = os.environ.get("PERFSLEUTH_CHROMIUM", "/usr/bin/chromium")


def _chromium() -> str:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        message = f"headless Chromium not found at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return CHROMIUM


def _ours(marker: str) -> list[int]:
    """Live processes whose command line names ``marker`` (our private directory)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue  # already dead, waiting to be reaped
            if marker.encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
    return pids


@contextlib.contextmanager
def _no_leftovers(marker: str, group: list[int]) -> Iterator[None]:
    """Kill whatever Chromium left behind: its process group, then anything naming our dir."""
    try:
        yield
    finally:
        for pgid in group:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while (left := _ours(marker)) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in _ours(marker):  # e.g. crash handlers, which leave the group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        assert not (left := _ours(marker)), f"Chromium processes left running: {left}"


def browse(page: Path, tmp_path: Path) -> tuple[str, list[str]]:
    """Load ``page`` in headless Chromium; return the DOM after scripts ran and console lines."""
    binary = _chromium()
    home = tmp_path / "chromium-home"
    home.mkdir()
    command = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-crash-reporter",
        f"--user-data-dir={home / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=20000",
        "--window-size=1280,900",
        "--dump-dom",
        page.resolve().as_uri(),
    ]
    # HOME in our directory: Chromium's crash handler then names it too, so we can find it.
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    group: list[int] = []
    with _no_leftovers(str(home), group):
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
            preexec_fn=die_with_parent,  # noqa: PLW1509 - it only calls prctl
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        group.append(process.pid)
        try:
            out, err = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            pytest.fail("headless Chromium did not finish loading the report within 120 s")
    assert process.returncode == 0, f"Chromium failed ({process.returncode}):\n{err[-3000:]}"
    console = [line for line in err.splitlines() if ":CONSOLE" in line]
    return out, console


def body_tag(dom: str) -> str:
    match = re.search(r"<body\b[^>]*>", dom)
    assert match, "no <body> in the dumped DOM"
    return match.group(0)
