"""The outbox: every notification is written here before it is delivered, and leaves only once
delivered. A notification that cannot be delivered stays (with its attempts and last error) and is
retried on the next run: nothing is lost.

Layout: ``<dir>/pending/<created>-<id>.json`` (one file per delivery, written atomically by
rename) and ``<dir>/state.json`` (when each pathology was last notified, for the repeat policy).
Notifications carry findings about the estate: the folders are private (0700) and the files
too (0600); no webhook URL or other secret is written here.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perfsleuth.errors import SourceError

__all__ = ["Outbox", "OutboxItem"]

log = logging.getLogger(__name__)


@dataclass
class OutboxItem:
    """One delivery: ``channel`` (email, webhook, ticket, history) and what it needs."""

    channel: str
    payload: dict[str, Any]
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    attempts: int = 0
    last_error: str = ""

    def to_json(self) -> str:
        return json.dumps(self.__dict__, ensure_ascii=False, sort_keys=True)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # created private: a umask must not make it readable by others even for a moment
    descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(tmp, 0o600)  # O_CREAT keeps the mode of a file left by a crash
    os.replace(tmp, path)


class Outbox:
    """A folder of pending deliveries and the notification state."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.pending_dir = self.path / "pending"
        try:
            self.pending_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            for folder in (self.path, self.pending_dir):  # also one made by an older version
                os.chmod(folder, 0o700)
        except OSError as exc:
            raise SourceError(f"{self.path}: cannot create the outbox: {exc.strerror}") from exc

    def put(self, item: OutboxItem) -> Path:
        """Keep ``item`` until it is delivered."""
        stamp = item.created.replace(":", "").replace("-", "")[:15]
        path = self.pending_dir / f"{stamp}-{item.id}.json"
        _write_atomic(path, item.to_json())
        return path

    def pending(self) -> list[tuple[Path, OutboxItem]]:
        """Undelivered items, oldest first. Unreadable files are logged and left in place."""
        items = []
        for path in sorted(self.pending_dir.glob("*.json")):
            try:
                os.chmod(path, 0o600)  # an item an older version left readable by others
                data = json.loads(path.read_text(encoding="utf-8"))
                items.append((path, OutboxItem(**data)))
            except (OSError, ValueError, TypeError) as exc:
                log.error("%s: unreadable outbox item left in place: %s", path, exc)
        return items

    def delivered(self, path: Path) -> None:
        path.unlink(missing_ok=True)

    def failed(self, path: Path, item: OutboxItem, error: str) -> None:
        item.attempts += 1
        item.last_error = error
        _write_atomic(path, item.to_json())

    # -- repeat state --------------------------------------------------------------------------

    @property
    def _state_path(self) -> Path:
        return self.path / "state.json"

    def state(self) -> dict[str, str]:
        """Pathology key → ISO time it was last notified."""
        try:
            data = json.loads(self._state_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise SourceError(f"{self._state_path}: unreadable notification state: {exc}") from exc
        return {str(k): str(v) for k, v in data.items()}

    def save_state(self, state: dict[str, str]) -> None:
        _write_atomic(self._state_path, json.dumps(state, indent=1, sort_keys=True))
