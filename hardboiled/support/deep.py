"""Running a compile where deep IR cannot hit a recursion limit.

Halide's text nests every ``let`` and ``allocate`` around the rest of its
block, so an unrolled schedule makes IR thousands of levels deep, and the
visitors (printer, emitters, interpreter) recurse once per level. The
compile runs in a thread with a large stack and a recursion limit to match
(the stack over ``FRAME_BYTES``):
how deep a program may be is then a matter of memory, not of Python's
default of 1,000 frames.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from hardboiled.support import children
from hardboiled.support.environment import STACK_FRAME_BYTES, too_deep

T = TypeVar("T")

STACK_BYTES = 1 << 30
"""The thread's stack: virtual memory, committed only as deep as it goes."""
FALLBACK_STACK_BYTES = 64 << 20
"""Tried when the process may not map the first (``ulimit -v``)."""
THREAD_NAME = "hardboiled-compile"
FRAME_BYTES = STACK_FRAME_BYTES
"""C stack a Python frame may take at most (the recursion limit is the
stack over this)."""


def on_deep_stack() -> bool:
    """Whether this thread is a deep call's (its recursion limit is the
    deep stack's)."""
    return threading.current_thread().name == THREAD_NAME


def call_deep(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``function(*args, **kwargs)`` on a thread with a deep stack; its
    result or its exception (SystemExit included), as if called here. An
    interrupt reaches the calling thread, which is the main one. An input
    that nests deeper than even that stack holds is ``OutOfMemory``
    (exit 4, ``environment.too_deep``), a limit of the machine, not a bug."""
    if on_deep_stack():
        return function(*args, **kwargs)  # already on a deep stack (a command calling a compile)
    outcome: dict[str, Any] = {}
    limit = {"frames": 0}

    done = threading.Event()

    def run() -> None:
        key = object()
        _raise_limit(key, limit["frames"])
        try:
            outcome["value"] = function(*args, **kwargs)
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc
        finally:
            _lower_limit(key)
            done.set()

    worker = _start(run, limit)
    if worker is None:  # no thread could be made (a tight `ulimit -v`): run here, with the usual limit
        run()
    else:
        try:
            # Not worker.join(): a join that a signal handler's exception
            # interrupts marks the thread stopped while it still runs
            # (CPython 3.11, threading._wait_for_tstate_lock), and the
            # compile would go on writing after the process decided to stop.
            done.wait()
        except BaseException as exc:  # SIGINT or SIGTERM, which reach this (the main) thread
            _stop(worker, done, type(exc))
            raise
        worker.join()
    if "error" in outcome:
        error = outcome["error"]
        if isinstance(error, RecursionError):
            raise too_deep(limit["frames"]) from None
        raise error
    result: T = outcome["value"]
    return result


_LIMIT_LOCK = threading.Lock()
_deep_calls: dict[object, int] = {}
"""The recursion limit each running deep call's stack holds."""
_usual_limit = 0
"""The process's limit before the first of the running deep calls."""


def _raise_limit(key: object, frames: int) -> None:
    """The recursion limit is the process's, not a thread's: while deep
    calls run (from several threads, through the API), it is the smallest
    their stacks hold, and when the last one ends it is what it was."""
    global _usual_limit
    with _LIMIT_LOCK:
        if not _deep_calls:
            _usual_limit = sys.getrecursionlimit()
        _deep_calls[key] = frames
        sys.setrecursionlimit(max(_usual_limit, min(_deep_calls.values())))


def _lower_limit(key: object) -> None:
    with _LIMIT_LOCK:
        _deep_calls.pop(key, None)
        target = max(_usual_limit, min(_deep_calls.values())) if _deep_calls else _usual_limit
        try:
            sys.setrecursionlimit(target)
        except RecursionError:  # this thread is deeper than that now: the next call lowers it
            pass


STOP_WAIT_S = 10.0
"""How long an interrupted compile may take to unwind (remove its
temporary files) before the process exits anyway."""


def _stop(worker: threading.Thread, done: threading.Event, exception: type[BaseException]) -> None:
    """Raise ``exception`` in the compile's thread as well, kill the
    children it may be waiting for, and let it unwind (``done`` is set when
    it has)."""
    from hardboiled.support.fileio import discard_unfinished, hold_commits, release_commits

    hold_commits()  # outputs being renamed into place finish; none start
    ident = worker.ident
    if ident is not None and not done.is_set():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(exception))
    children.kill_all()
    unwound = done.wait(STOP_WAIT_S)
    children.remove_temporary_directories()
    if unwound:
        release_commits()  # its transactions discarded themselves as it unwound
    else:
        discard_unfinished()  # it is still running, and must never commit


def _start(run: Callable[[], None], limit: dict[str, int]) -> threading.Thread | None:
    """A started thread running ``run``, with the deepest stack the process
    limits allow (``limit`` gets the recursion limit it holds), or None."""
    previous = threading.stack_size()
    try:
        for size in (STACK_BYTES, FALLBACK_STACK_BYTES):
            try:
                threading.stack_size(size)
                limit["frames"] = size // FRAME_BYTES
                worker = threading.Thread(target=run, name=THREAD_NAME, daemon=True)
                worker.start()
                return worker
            except (RuntimeError, MemoryError, ValueError):
                continue
        limit["frames"] = sys.getrecursionlimit()
        return None
    finally:
        threading.stack_size(previous)
