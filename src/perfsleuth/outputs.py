"""Writing an output file (the report, findings.jsonl, incidents.json, a coverage file): whole
or not at all, and an error that names it when it cannot be written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from perfsleuth.errors import OutputError

__all__ = ["write_text"]


def write_text(path: str | os.PathLike[str], text: str, *, what: str) -> Path:
    """Write ``text`` to ``path`` (UTF-8), creating its folder; ``what`` names it in errors.

    The file is replaced atomically (a temporary file beside it, then a rename), so a reader
    never sees half of it and a failed write leaves the old one. Raises :class:`OutputError`
    when it cannot be written (a folder of that name, no permission, a full disk).
    """
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"{target}: is a folder; give a file path for the {what}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
                out.write(text)
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise OutputError(f"{target}: cannot write the {what}: {exc.strerror or exc}") from None
    return target
