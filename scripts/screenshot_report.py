"""Screenshot of the demo report with headless Chromium, for the README (docs/report.png).

    .venv/bin/python scripts/screenshot_report.py                 # run the demo, shoot its report
    .venv/bin/python scripts/screenshot_report.py --report r.html --out shot.png --height 3000

Without ``--report`` the demo runs in a temporary folder (seed 7, the same as
``perfsleuth demo``). Chromium gets a private profile and home in a temporary folder and its
whole process group is ended afterwards, whatever happens.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM = os.environ.get("PERFSLEUTH_CHROMIUM", "/usr/bin/chromium")


def shoot(
    page: Path,
    out: Path,
    *,
    width: int,
    height: int,
    scale: float = 1.0,
    chromium: str = CHROMIUM,
) -> Path:
    """Load ``page`` in headless Chromium after its scripts ran and write a PNG to ``out``.

    The page is laid out ``width`` × ``height`` CSS pixels wide and tall; the PNG has ``scale``
    times as many pixels each way (below 1: a smaller file, as the README wants).
    """
    if not (os.path.isfile(chromium) and os.access(chromium, os.X_OK)):
        raise SystemExit(f"headless Chromium not found at {chromium} (apt-get install chromium)")
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="perfsleuth-shot-") as home:
        command = [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-crash-reporter",
            f"--user-data-dir={Path(home) / 'profile'}",
            "--virtual-time-budget=20000",  # let every plot draw before the shot
            f"--window-size={width},{height}",
            f"--force-device-scale-factor={scale:g}",
            f"--screenshot={out}",
            page.resolve().as_uri(),
        ]
        env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": home, "XDG_CACHE_HOME": home}
        process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
            text=True,
            errors="replace",
        )
        try:
            _, err = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            err = "timed out after 120 s"
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if process.returncode != 0 or not out.exists():
        raise SystemExit(f"Chromium failed ({process.returncode}):\n{err[-2000:]}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--report", type=Path, help="HTML report (default: run the demo)")
    parser.add_argument("--out", type=Path, default=Path("docs/report.png"))
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1900, help="CSS pixels from the top")
    parser.add_argument("--scale", type=float, default=0.75, help="PNG pixels per CSS pixel")
    parser.add_argument("--chromium", default=CHROMIUM)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="perfsleuth-demo-") as tmp:
        page = args.report
        if page is None:
            from perfsleuth.demo import run_demo

            page = run_demo(Path(tmp) / "out", Path(tmp) / "demo.duckdb").report
        out = shoot(
            page,
            args.out,
            width=args.width,
            height=args.height,
            scale=args.scale,
            chromium=args.chromium,
        )
    print(f"{out} ({out.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
