"""Running a compile where deep IR cannot hit a recursion limit.

Halide's text nests every ``let`` and ``allocate`` around the rest of its
block, so an unrolled schedule makes IR thousands of levels deep, and the
visitors (printer, emitters, interpreter) recurse once per level. The
compile runs in a thread with a large stack and a recursion limit to match:
how deep a program may be is then a matter of memory, not of Python's
default of 1,000 frames.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

STACK_BYTES = 1 << 30
"""The thread's stack: virtual memory, committed only as deep as it goes."""
RECURSION_LIMIT = 1_000_000
"""Python frames; the stack above holds them (about 1 KB each at most)."""


def call_deep(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``function(*args, **kwargs)`` on a thread with a deep stack; its
    result or its exception (SystemExit included), as if called here. An
    interrupt reaches the calling thread, which is the main one."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = function(*args, **kwargs)
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    previous_limit = sys.getrecursionlimit()
    previous_stack = threading.stack_size()
    try:
        threading.stack_size(STACK_BYTES)
        sys.setrecursionlimit(max(previous_limit, RECURSION_LIMIT))
        worker = threading.Thread(target=run, name="hardboiled-compile", daemon=True)
        worker.start()
    finally:
        threading.stack_size(previous_stack)
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    result: T = outcome["value"]
    return result
