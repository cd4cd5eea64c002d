"""Writing an output file (the report, findings.jsonl, incidents.json, a coverage file, a saved
frame): whole or not at all, and an error that names it when it cannot be written."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from perfsleuth.errors import OutputError

__all__ = ["write_text", "writing"]


@contextlib.contextmanager
def writing(path: str | os.PathLike[str], *, what: str) -> Iterator[Path]:
    """A temporary path beside ``path`` to write the output to; it replaces ``path`` when the
    block ends (atomically: a reader never sees half of it, and a failed write leaves the old
    file). ``what`` names the output in errors: :class:`OutputError` when it cannot be written
    (a folder of that name, no permission, a full disk)."""
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"{target}: is a folder; give a file path for the {what}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
    except OSError as exc:
        raise OutputError(f"{target}: cannot write the {what}: {exc.strerror or exc}") from None
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as exc:
        raise OutputError(f"{target}: cannot write the {what}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: str | os.PathLike[str], text: str, *, what: str) -> Path:
    """Write ``text`` to ``path`` (UTF-8), creating its folder, as :func:`writing` does."""
    with writing(path, what=what) as tmp, tmp.open("w", encoding="utf-8", newline="\n") as out:
        out.write(text)
    return Path(path)
