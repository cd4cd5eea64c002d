"""Progress lines: the INFO records a terminal sees at the default verbosity.

A step that can take a while (reading a big file, a family's analysis, writing the report)
logs one line before it starts with ``extra=PROGRESS``. The CLI shows such lines on stderr when
stderr is a terminal, even without ``-v``; ``-q`` hides them, and redirected stderr (cron, CI,
pipes) stays quiet unless ``-v`` asks for every INFO line.
"""

from __future__ import annotations

import logging

PROGRESS = {"progress": True}


def is_progress(record: logging.LogRecord) -> bool:
    """Whether ``record`` was logged with ``extra=PROGRESS``."""
    return bool(getattr(record, "progress", False))
