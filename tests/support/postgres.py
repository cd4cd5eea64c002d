"""A throw-away PostgreSQL server for tests, benchmarks and the pgbench scripts (DESIGN §3).

:func:`temporary_postgres` runs ``initdb`` into a fresh folder, starts ``postgres`` listening on
127.0.0.1 only (a free port, its Unix socket inside the folder, trust authentication for the
``postgres`` role), waits until it accepts connections, and always stops it and deletes the
folder on the way out. Binaries come from ``/usr/lib/postgresql/<version>/bin`` (Debian's
``postgresql-<version>`` package) or ``pg_config --bindir``.

PostgreSQL refuses to run as root: when we are root, ``initdb`` and ``postgres`` run as the
``postgres`` OS user (the Debian package creates it) and the folder is handed to that user.
Clients (``psql``, ``pgbench``) connect over TCP and can run as anyone.
"""

from __future__ import annotations

import logging
import os
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from perfsleuth.errors import ConfigError, SourceError
from tests.support.processes import die_with_parent

__all__ = ["PostgresServer", "find_postgres_bindir", "temporary_postgres"]

log = logging.getLogger(__name__)

_SOCKET_PATH_MAX = 100  # sun_path is 108 bytes; "/.s.PGSQL.<port>" is appended to the folder


@dataclass(frozen=True, slots=True)
class PostgresServer:
    """A running server: where it listens and how to reach it."""

    host: str
    port: int
    user: str
    dbname: str
    bindir: Path
    root: Path
    """The folder holding ``data/``, ``sockets/`` and ``server.log``; removed on exit."""

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root / "sockets"

    @property
    def log_file(self) -> Path:
        return self.root / "server.log"

    @property
    def dsn(self) -> str:
        """libpq connection string."""
        return f"host={self.host} port={self.port} user={self.user} dbname={self.dbname}"

    def env(self) -> dict[str, str]:
        """This process's environment plus PGHOST, PGPORT, PGUSER, PGDATABASE for clients."""
        env = dict(os.environ)
        env.update(
            PGHOST=self.host, PGPORT=str(self.port), PGUSER=self.user, PGDATABASE=self.dbname
        )
        env.pop("PGPASSWORD", None)
        return env

    def tool(self, name: str) -> Path:
        """Path of a client program of this server's version (``psql``, ``pgbench``)."""
        path = self.bindir / name
        if not path.is_file():
            raise SourceError(f"{path}: no such PostgreSQL program")
        return path

    def run(
        self,
        tool: str,
        args: Sequence[str],
        *,
        cwd: str | Path | None = None,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a client program against this server; raises :class:`SourceError` on failure."""
        command = [str(self.tool(tool)), *args]
        try:
            done = subprocess.run(
                command,
                env=self.env(),
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise SourceError(f"{tool} did not finish within {timeout} s") from exc
        if done.returncode != 0:
            raise SourceError(
                f"{tool} failed (exit {done.returncode}): {_tail(done.stderr or done.stdout)}"
            )
        return done

    def psql(self, sql: str, *, timeout: float = 60.0) -> str:
        """Run SQL with ``psql`` (stop at the first error); returns its unaligned output."""
        args = ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql]
        return self.run("psql", args, timeout=timeout).stdout


def find_postgres_bindir() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with initdb and postgres in it.

    Falls back to ``pg_config --bindir``. Raises :class:`SourceError` when there is none.
    """
    candidates: list[tuple[float, Path]] = []
    for folder in Path("/usr/lib/postgresql").glob("*/bin"):
        version = folder.parent.name
        if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", version):
            candidates.append((float(version), folder))
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
            candidates.append((-1.0, Path(out)))
        except (OSError, subprocess.SubprocessError):
            pass
    for _, folder in sorted(candidates, key=lambda c: -c[0]):
        if (folder / "initdb").is_file() and (folder / "postgres").is_file():
            return folder
    raise SourceError(
        "PostgreSQL server programs (initdb, postgres) not found under /usr/lib/postgresql; "
        "install the Debian package postgresql (bash scripts/install-system-deps.sh)"
    )


@contextmanager
def temporary_postgres(
    parent: str | Path | None = None,
    *,
    settings: Mapping[str, str] | None = None,
    start_timeout: float = 60.0,
    keep: bool = False,
) -> Iterator[PostgresServer]:
    """Start a throw-away PostgreSQL server on 127.0.0.1; stop and delete it on exit.

    Parameters
    ----------
    parent
        Folder in which to create the server's folder (default: the system temp folder).
        When running as root and the ``postgres`` user cannot reach it (a 0700 ancestor, as
        pytest's ``tmp_path`` has) or the socket path would be too long, the system temp
        folder is used instead.
    settings
        Extra server settings, as ``postgres -c name=value`` (``{"fsync": "off"}``).
    start_timeout
        Seconds to wait for the server to accept connections.
    keep
        Keep the folder (data, log) after stopping, for a post-mortem.

    Yields
    ------
    PostgresServer
        Host, port, role ``postgres`` (trust authentication), database ``postgres``.
    """
    bindir = find_postgres_bindir()
    owner = _server_user()
    root = _make_root(Path(parent) if parent is not None else None, owner)
    process: subprocess.Popen[bytes] | None = None
    try:
        if owner is not None:
            os.chown(root, owner.pw_uid, owner.pw_gid)
        (root / "sockets").mkdir()
        if owner is not None:
            os.chown(root / "sockets", owner.pw_uid, owner.pw_gid)
        _initdb(bindir, root, owner)
        process, port = _start(bindir, root, owner, dict(settings or {}), start_timeout)
        server = PostgresServer("127.0.0.1", port, "postgres", "postgres", bindir, root)
        log.info("PostgreSQL started on 127.0.0.1:%d (data in %s)", port, root / "data")
        yield server
    finally:
        if process is not None:
            _stop(process)
        if keep:
            log.info("kept the PostgreSQL folder %s", root)
        else:
            shutil.rmtree(root, ignore_errors=True)


def _server_user() -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        raise SourceError(
            "running as root, and PostgreSQL will not: there is no 'postgres' OS user to run it "
            "as (the Debian postgresql package creates one)"
        ) from None


def _make_root(parent: Path | None, owner: pwd.struct_passwd | None) -> Path:
    if parent is not None:
        if not parent.is_dir():
            raise ConfigError(f"{parent}: not a directory")
        root = Path(tempfile.mkdtemp(prefix="pg-", dir=parent))
        socket_path = root / "sockets" / ".s.PGSQL.65535"
        if len(str(socket_path)) <= _SOCKET_PATH_MAX and (
            owner is None or _reachable(root.parent, owner)
        ):
            return root
        log.info("%s is out of the postgres user's reach; using the temp folder", parent)
        root.rmdir()
    return Path(tempfile.mkdtemp(prefix="perfsleuth-pg-"))


def _reachable(folder: Path, user: pwd.struct_passwd) -> bool:
    """Whether ``user`` may traverse every folder from / down to ``folder``."""
    for part in [folder.resolve(), *folder.resolve().parents]:
        st = part.stat()
        if st.st_uid == user.pw_uid:
            ok = st.st_mode & stat.S_IXUSR
        elif st.st_gid == user.pw_gid or st.st_gid in os.getgrouplist(user.pw_name, user.pw_gid):
            ok = st.st_mode & stat.S_IXGRP
        else:
            ok = st.st_mode & stat.S_IXOTH
        if not ok:
            return False
    return True


def _ids(owner: pwd.struct_passwd | None) -> tuple[int | None, int | None, list[int] | None]:
    """``user``, ``group``, ``extra_groups`` for subprocess: the server's, or ours (None)."""
    if owner is None:
        return None, None, None
    return owner.pw_uid, owner.pw_gid, []


def _server_env(root: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": str(root)}


def _initdb(bindir: Path, root: Path, owner: pwd.struct_passwd | None) -> None:
    command = [
        str(bindir / "initdb"),
        "-D",
        str(root / "data"),
        "-U",
        "postgres",
        "--auth=trust",
        "-E",
        "UTF8",
        "--locale=C",
        "--no-sync",  # a throw-away cluster need not survive a power cut
    ]
    uid, gid, groups = _ids(owner)
    try:
        done = subprocess.run(
            command,
            cwd=root,
            env=_server_env(root),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            user=uid,
            group=gid,
            extra_groups=groups,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise SourceError(f"initdb could not run: {exc}") from exc
    if done.returncode != 0:
        raise SourceError(f"initdb failed (exit {done.returncode}): {_tail(done.stderr)}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(
    bindir: Path,
    root: Path,
    owner: pwd.struct_passwd | None,
    settings: dict[str, str],
    timeout: float,
) -> tuple[subprocess.Popen[bytes], int]:
    for attempt in range(3):  # another process may take the free port before we bind it
        port = _free_port()
        options = {
            "listen_addresses": "127.0.0.1",
            "port": str(port),
            "unix_socket_directories": str(root / "sockets"),
            **settings,
        }
        command = [str(bindir / "postgres"), "-D", str(root / "data")]
        for name, value in options.items():
            command += ["-c", f"{name}={value}"]
        uid, gid, groups = _ids(owner)
        with (root / "server.log").open("ab") as log_file:
            process = subprocess.Popen(
                command,
                cwd=root,
                env=_server_env(root),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                user=uid,
                group=gid,
                extra_groups=groups,
                preexec_fn=die_with_parent,  # noqa: PLW1509 (no threads run at start-up)
            )
        if _wait_ready(process, bindir, port, timeout):
            return process, port
        if process.poll() is None:
            _stop(process)
        text = (root / "server.log").read_text(errors="replace")
        if "could not bind" in text and attempt < 2:
            continue
        raise SourceError(f"PostgreSQL did not start within {timeout:g} s: {_tail(text)}")
    raise SourceError("PostgreSQL could not bind a port on 127.0.0.1")  # pragma: no cover


def _wait_ready(process: subprocess.Popen[bytes], bindir: Path, port: int, timeout: float) -> bool:
    ready = [str(bindir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port), "-t", "1"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        done = subprocess.run(ready, capture_output=True, timeout=10, check=False)
        if done.returncode == 0:
            return True
        time.sleep(0.1)
    return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Fast shutdown (SIGINT), then immediate (SIGQUIT), then SIGKILL."""
    for sig, wait in ((signal.SIGINT, 30.0), (signal.SIGQUIT, 10.0), (signal.SIGKILL, 10.0)):
        if process.poll() is not None:
            return
        try:
            process.send_signal(sig)
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            log.warning("PostgreSQL (pid %d) ignored %s", process.pid, sig.name)
        except ProcessLookupError:
            return


def _tail(text: str, lines: int = 8) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:] if line.strip())
