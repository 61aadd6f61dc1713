"""Ctrl-C and SIGTERM during training: finish the step, write a checkpoint, then stop.

``stop_on_signals`` installs the handlers for the loop; the ``Signals`` it yields are checked
between steps, and hold a second Ctrl-C back while a checkpoint is being written.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator

log = logging.getLogger(__name__)


class Signals:
    """SIGINT/SIGTERM seen so far; while ``deferred``, a second Ctrl-C does not interrupt."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.saving = False

    def is_set(self) -> bool:
        return self.event.is_set()

    def set(self) -> None:
        self.event.set()

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        saving, self.saving = self.saving, True
        try:
            yield
        finally:
            self.saving = saving


@contextlib.contextmanager
def stop_on_signals() -> Iterator[Signals]:
    """SIGINT/SIGTERM set a flag that the loop checks between steps (then it saves).

    A second Ctrl-C stops at once (KeyboardInterrupt), except while a checkpoint is being
    written: that write always completes first, so the last save is never lost.
    """
    signals = Signals()
    if threading.current_thread() is not threading.main_thread():
        yield signals
        return

    def handler(signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        if signals.saving:
            log.warning("%s received: the checkpoint being written is finished first", name)
            signals.set()
            return
        if signals.is_set() and signum == signal.SIGINT:  # a second Ctrl-C: stop at once
            raise KeyboardInterrupt
        log.warning("%s received: finishing the step, then writing a checkpoint", name)
        signals.set()

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield signals
    finally:
        for s, h in old.items():
            signal.signal(s, h)
