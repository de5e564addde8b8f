"""Starting egglog children, and the spare one.

The ``hardboiled`` command starts a spare egglog child for a compile that
may saturate before it loads anything else (cli/direct.py): the child
starts Python, loads egglog's bindings and waits, and the compile hands it
the rule files (select/eqsat.py, ``prestart``) instead of starting one then.
This module is apart from eqsat.py, and imports little (subprocess, and
support/children.py for ctypes), so that the spare starts about 15 ms into
the process rather than after eqsat.py's own imports (dataclasses, typing,
pathlib, json: 15 to 20 ms): a child started there was the last to be
ready, by about 5 ms, on the path of every cold compile.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from hardboiled.select.limits import DEFAULT_MEMORY_MB
from hardboiled.support import children


def spawn(memory_mb: int) -> subprocess.Popen[bytes]:
    """An egglog child: killed with its parent, tracked until it is waited
    for (support/children.py)."""
    return children.track(subprocess.Popen([sys.executable, "-m", "hardboiled.select.eqsat_child"], bufsize=0,
                                           stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           preexec_fn=children.preexec(children.memory_limit(memory_mb))))


class Spare:
    """A child started by ``start_spare``: the process and thread that
    started it (``PR_SET_PDEATHSIG`` ties it to that thread), and when."""

    __slots__ = ("proc", "owner", "thread", "started")

    def __init__(self, proc: subprocess.Popen[bytes], owner: int, thread: threading.Thread, started: float):
        self.proc, self.owner, self.thread, self.started = proc, owner, thread, started


_spare: Spare | None = None


def start_spare() -> None:
    """Start an egglog child now, at the default memory limit, for a
    compile that may saturate: it loads egglog's bindings and waits for its
    first request. Started before the command line loads, it is ready by
    the time ``prestart`` gives it the rule files, which a child started
    then would reach 25 ms later (its Python, its imports and the bindings),
    on the path of every cold compile. Only on the main thread, which lives
    as long as the process, so that any thread's compile may take it; and
    not where a prestarted or kept child is there already (the compile
    server's worker). One no compile took is stopped by ``discard_spare``
    (the command's end, or the exit). A spare costs time only: where it
    cannot be started, the compile starts its own child as before (and says
    why it cannot)."""
    global _spare
    eqsat = sys.modules.get("hardboiled.select.eqsat")  # not imported for this: it is what a spare runs ahead of
    if (_spare is not None or (eqsat is not None and eqsat.has_prestarted_child())
            or threading.current_thread() is not threading.main_thread()):
        return
    try:
        _spare = Spare(spawn(DEFAULT_MEMORY_MB), os.getpid(), threading.current_thread(), time.perf_counter())
    except Exception:  # no memory, no child now (an OSError, a failed preexec_fn): prestart tries again
        _spare = None


def take_spare(memory_mb: int) -> Spare | None:
    """The spare, where this process started it, it is alive and it has
    the memory limit asked for; any other spare is stopped (or, one
    inherited through a fork, left to its owner)."""
    global _spare
    spare, _spare = _spare, None
    if spare is None:
        return None
    if spare.owner != os.getpid():
        children.untrack(spare.proc)  # its owner's: an interrupt here must not kill it
        close_pipes(spare.proc)
        return None
    if memory_mb == DEFAULT_MEMORY_MB and spare.proc.poll() is None:
        return spare
    stop_unused(spare.proc)
    return None


def discard_spare() -> None:
    """Stop a spare that no compile took."""
    take_spare(-1)  # a limit no compile asks for: stopped, or left to its owner


def stop_unused(proc: subprocess.Popen[bytes]) -> None:
    """Kill a child that was never sent anything and wait for it, reading
    nothing it wrote (there is nothing to report)."""
    try:
        proc.kill()
    except OSError:
        pass
    close_pipes(proc)
    proc.wait()
    children.untrack(proc)


def close_pipes(proc: subprocess.Popen[bytes]) -> None:
    """Close this process's ends of a child's pipes."""
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
