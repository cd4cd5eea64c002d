"""The ``perfsleuth`` command line: one grammar, thin commands over one run path.

``perfsleuth [GLOBAL OPTIONS] COMMAND [ARGS]``: global options (``--format``, ``--fail-on``,
``-v``, ``-q``, ``--version``) come before the command. The commands:

* **whole runs** — ``demo``, ``analyze CONFIG``, ``watch CONFIG``, ``detect FILES``,
  ``report``;
* **one family** — named after the family, reading its frame from FILES:
  ``changepoints``, ``workload``, ``segments``, ``processes scan`` (and ``fleet scan`` for a
  whole fleet), ``bottleneck infer``; a family's own tools sit beside its analysis
  (``processes rules``, ``bottleneck simulate|check``, ``calibrate``, ``verify``);
* **data in** — ``collect`` (this machine) and ``import`` (sar, pidstat, perfmon);
* **configuration** — ``config check|schema``.

Every command that analyses data builds a plan and runs it through :mod:`perfsleuth.run`, the
path ``analyze`` takes; ``--store`` and ``--report`` mean the same everywhere. Results go to
stdout, logs to stderr. Exit codes: 0 when no finding is at or above ``--fail-on``, 1 when one
is, 2 for usage, configuration and data errors. Heavy libraries are imported inside commands so
``--help`` is fast.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from perfsleuth.bottleneck.cli import bottleneck_app, calibrate_command, verify_command
from perfsleuth.changepoints.cli import changepoints_command
from perfsleuth.cli.output import FailOn, FindingsAtOrAbove, Format, Options
from perfsleuth.cli.runs import (
    analyze_command,
    config_app,
    demo_command,
    detect_command,
    report_command,
    watch_command,
)
from perfsleuth.collect.cli import collect_command, import_command
from perfsleuth.errors import PerfsleuthError
from perfsleuth.fleet.cli import fleet_app
from perfsleuth.processes.cli import processes_app
from perfsleuth.segments.cli import segments_command
from perfsleuth.workload.cli import workload_command

__all__ = ["app", "main"]

# global option → how it is written before a command (the example of the hint)
_GLOBAL_OPTIONS = {
    "--format": "--format json",
    "--fail-on": "--fail-on warning",
    "--verbose": "-v",
    "-v": "-v",
    "--quiet": "-q",
    "-q": "-q",
}


class _Grammar(TyperGroup):
    """The app's group: a global option given after the command is told where it goes."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            name = getattr(exc, "option_name", None)
            if name in _GLOBAL_OPTIONS:
                # Click's "No such option: --format (Possible options: --report)" points at
                # the wrong option; its message and suggestions are what it prints.
                path = getattr(getattr(exc, "ctx", None), "command_path", "perfsleuth COMMAND")
                command = path.partition(" ")[2] or "COMMAND"
                vars(exc).update(
                    message=f"{name} is a global option: give it before the command, as in "
                    f"perfsleuth {_GLOBAL_OPTIONS[name]} {command} ...",
                    possibilities=None,
                )
            raise


app = typer.Typer(
    name="perfsleuth",
    cls=_Grammar,
    help="Automated performance diagnosis: when did performance change, why, and what to fix.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# whole runs
app.command("demo")(demo_command)
app.command("analyze")(analyze_command)
app.command("watch")(watch_command)
app.command("detect")(detect_command)
app.command("report")(report_command)
# one family each, in the order of the questions
app.command("changepoints")(changepoints_command)
app.command("workload")(workload_command)
app.command("segments")(segments_command)
app.add_typer(processes_app, name="processes")
app.add_typer(fleet_app, name="fleet")
app.add_typer(bottleneck_app, name="bottleneck")
app.command("calibrate")(calibrate_command)
app.command("verify")(verify_command)
# data in, configuration
app.command("collect")(collect_command)
app.command("import")(import_command)
app.add_typer(config_app, name="config")


class _Printable(logging.Formatter):
    """Log lines with control characters escaped: messages quote data (names, paths, lines)."""

    def format(self, record: logging.LogRecord) -> str:
        from perfsleuth.report.console import printable

        return printable(super().format(record))


def _version(value: bool) -> None:
    if value:
        from perfsleuth import __version__

        typer.echo(f"perfsleuth {__version__}")
        raise typer.Exit


@app.callback()
def _global(
    ctx: typer.Context,
    fmt: Annotated[Format, typer.Option("--format", help="How findings are printed.")] = (
        Format.table
    ),
    fail_on: Annotated[
        FailOn, typer.Option(help="Exit 1 when a finding is at or above this severity.")
    ] = FailOn.none,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More logs.")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only errors on stderr.")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    level = (
        logging.ERROR if quiet else (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Printable("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    ctx.obj = Options(format=fmt, fail_on=fail_on)


@functools.cache
def _command() -> Any:
    """The app as a Click command, built once: Typer would rebuild it from every function's
    signature on each call (half a second on a busy machine), and tests call main often."""
    return typer.main.get_command(app)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``perfsleuth`` console script; always exits via ``SystemExit``."""
    try:
        # Standalone mode: Typer handles --help and usage errors (exit 2) itself.
        _command().main(args=list(argv) if argv is not None else None, prog_name="perfsleuth")
    except FindingsAtOrAbove:
        sys.exit(1)
    except PerfsleuthError as exc:
        from perfsleuth.report.console import printable  # data may carry escape sequences

        typer.echo(f"perfsleuth: error: {printable(str(exc))}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
