"""Children of the test run die with it, even when it is killed with SIGKILL.

A server or a CPU burner a test starts is stopped by the test's own clean-up; but when the test
process itself is killed (a CI timeout, a SIGKILL), no clean-up runs. The kernel's parent-death
signal (``prctl(PR_SET_PDEATHSIG)``) covers that case: pass :func:`die_with_parent` as the
``preexec_fn`` of ``subprocess.Popen``.
"""

from __future__ import annotations

import ctypes
import signal

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1
# Looked up once in the parent: the child only calls it (no dlopen between fork and exec).
_prctl = ctypes.CDLL(None, use_errno=True).prctl


def die_with_parent() -> None:
    """``preexec_fn``: SIGKILL this child when the process that started it dies."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
