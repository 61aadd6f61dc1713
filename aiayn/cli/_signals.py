"""What Ctrl-C does on the command line: stop at once, or, where a verb asks, KeyboardInterrupt.

By default SIGINT ends the process at once with one line (``aiayn VERB: interrupted``) and exit
status 130. That is as safe as ``kill -9``, which every writer survives (docs/reliability.md:
atomic writes, manifests, leftovers removed on the next run), and it is the only reliable answer
while modules load: a KeyboardInterrupt raised inside an import can be swallowed by the import
machinery ("Exception ignored in ... _get_module_lock") so that the command carries on, or it can
leave CPython's flag for an unhandled interrupt set so that the process dies of SIGINT (status
-2) after it has printed its line. Torch imports large parts of itself lazily, on first use (the
first ``normal_`` imports ``torch._dynamo``), so "while modules load" lasts until the model is
built.

A verb that can do better than stopping (flush what it has translated, remove a half-written
directory, finish a step and save a checkpoint) says so with ``interruptible()`` around that part,
or installs its own handler (the training loop's ``stop_on_signals``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

_verb = ["aiayn"]  # the name the line gives; main() sets it once the verb is known


def _exit_at_once(signum: int, frame: object) -> None:
    sys.stderr.write(f"{_verb[-1]}: interrupted\n")
    sys.stderr.flush()
    os._exit(130)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def stop_at_once() -> Iterator[None]:
    """Inside this block Ctrl-C ends the process at once (main thread only; nests)."""
    if not _main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _exit_at_once)
    depth = len(_verb)
    _verb.append(_verb[-1])
    try:
        yield
    finally:
        del _verb[depth:]
        signal.signal(signal.SIGINT, previous)


def name_verb(name: str) -> None:
    """The verb that the interruption line names from now on (innermost ``stop_at_once``)."""
    _verb[-1] = name


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Inside this block Ctrl-C raises KeyboardInterrupt, for verbs that clean up or flush."""
    if not _main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
