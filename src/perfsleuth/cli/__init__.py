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

Every command that analyses data builds a plan and runs it through :mod:`perfsleuth.pipeline`, the
path ``analyze`` takes; ``--store`` and ``--report`` mean the same everywhere. Results go to
stdout, logs to stderr. Exit codes: 0 when no finding is at or above ``--fail-on``, 1 when one
is, 2 for usage, configuration and data errors. Heavy libraries are imported inside commands so
``--help`` is fast, and a command imports its own module only (:data:`_COMMANDS`).
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from perfsleuth.cli.output import FailOn, FindingsAtOrAbove, Format, Options
from perfsleuth.errors import PerfsleuthError

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


# Every command: its Typer function or sub-app as "module:name", imported only when that command
# runs (or for --help, which lists them all), so a command pays for its own imports only. The
# order is the one --help lists them in (Typer lists the sub-apps after the commands).
_COMMANDS = {
    # whole runs
    "demo": "perfsleuth.cli.runs:demo_command",
    "analyze": "perfsleuth.cli.runs:analyze_command",
    "watch": "perfsleuth.cli.runs:watch_command",
    "detect": "perfsleuth.cli.runs:detect_command",
    "report": "perfsleuth.cli.runs:report_command",
    # one family each, in the order of the questions
    "changepoints": "perfsleuth.changepoints.cli:changepoints_command",
    "workload": "perfsleuth.workload.cli:workload_command",
    "segments": "perfsleuth.segments.cli:segments_command",
    "processes": "perfsleuth.processes.cli:processes_app",
    "fleet": "perfsleuth.fleet.cli:fleet_app",
    "bottleneck": "perfsleuth.bottleneck.cli:bottleneck_app",
    "calibrate": "perfsleuth.bottleneck.cli:calibrate_command",
    "verify": "perfsleuth.bottleneck.cli:verify_command",
    # data in, configuration
    "collect": "perfsleuth.collect.cli:collect_command",
    "import": "perfsleuth.collect.cli:import_command",
    "config": "perfsleuth.cli.runs:config_app",
}
# global options that take a value (the word after one is not a command)
_VALUED = ("--format", "--fail-on")


class _Printable(logging.Formatter):
    """Log lines with control characters escaped: messages quote data (names, paths, lines).

    A message is one line (its line breaks shown as ``\\n``), so a name from the data cannot
    start a line of its own that reads ``perfsleuth: error: ...``; a traceback keeps its lines.
    """

    def format(self, record: logging.LogRecord) -> str:
        from perfsleuth.report.console import one_line, printable

        message = one_line(record.getMessage())
        return printable(
            super().format(logging.makeLogRecord({**vars(record), "msg": message, "args": None}))
        )


def _version(value: bool) -> None:
    if value:
        from perfsleuth import __version__

        typer.echo(f"perfsleuth {__version__}")
        raise typer.Exit


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
    if level == logging.WARNING and sys.stderr.isatty():
        from perfsleuth.progress import is_progress

        # a person waiting at a terminal sees long steps start; warnings and errors as ever
        level = logging.INFO
        handler.addFilter(lambda record: record.levelno >= logging.WARNING or is_progress(record))
    handler.setFormatter(_Printable("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    ctx.obj = Options(format=fmt, fail_on=fail_on)


@functools.cache
def _app(names: tuple[str, ...] = tuple(_COMMANDS)) -> typer.Typer:
    """The ``perfsleuth`` app with the global options and the commands ``names`` (all)."""
    app = typer.Typer(
        name="perfsleuth",
        cls=_Grammar,
        help="Automated performance diagnosis: when did performance change, why, and what to fix.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback()(_global)
    for name in names:
        module, _, attr = _COMMANDS[name].partition(":")
        target = getattr(importlib.import_module(module), attr)
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=name)
        else:
            app.command(name)(target)
    return app


def _command_name(args: Sequence[str]) -> str | None:
    """The command ``args`` invoke: the first word after the global options (None if none)."""
    words = iter(args)
    for arg in words:
        if arg == "--":
            return None
        if arg in _VALUED:
            next(words, None)
        elif not arg.startswith("-"):
            return arg
    return None


@functools.cache
def _command(name: str | None) -> Any:
    """The app as a Click command, built once: with command ``name`` alone when it is one (the
    others' modules are not imported, their signatures not read), else with every command
    (--help, a misspelt command and its suggestions). Typer reads a command's signature each
    time it builds one, and tests call main often."""
    return typer.main.get_command(_app((name,)) if name in _COMMANDS else _app())


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole app, e.g. for typer.testing.CliRunner
        return _app()
    raise AttributeError(f"module 'perfsleuth.cli' has no attribute {name!r}")


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``perfsleuth`` console script; always exits via ``SystemExit``."""
    try:
        args = list(argv) if argv is not None else sys.argv[1:]
        # Standalone mode: Typer handles --help and usage errors (exit 2) itself.
        _command(_command_name(args)).main(args=args, prog_name="perfsleuth")
    except FindingsAtOrAbove:
        sys.exit(1)
    except PerfsleuthError as exc:
        from perfsleuth.report.console import printable  # data may carry escape sequences

        typer.echo(f"perfsleuth: error: {printable(str(exc))}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
