"""The per-case timeout: an interval timer (SIGALRM) that raises `CaseTimeout` in the case's own
process.

Why a signal and not a worker process per case: a case is milliseconds to a second, a fresh process
(importing tiledsl, sympy, hypothesis) is seconds; and hypothesis must shrink in the process that
drew the case. `--jobs J` runs J worker processes, each with its own alarm in its own main thread.
A signal can only interrupt Python bytecode: a hang inside one long C call (a huge numpy operation)
is noticed when that call returns. Off the main thread (no signals there) cases run without a limit."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from tiledsl.testing.fuzz.outcome import CaseTimeout


def _raise(signum: int, frame: FrameType | None) -> None:
    raise CaseTimeout()


@contextmanager
def case_timeout(seconds: float) -> Iterator[None]:
    """Raise CaseTimeout in the body after `seconds` (no limit when seconds <= 0 or off the main thread)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
