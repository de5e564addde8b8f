"""Child processes and temporary directories that never outlive hardboiled.

hardboiled starts egglog children, C compilers and nvcc, and ``-j``
workers. Each is started so that the kernel kills it when its parent
goes (``PR_SET_PDEATHSIG`` on Linux, ``die_with_parent``), and the live
ones are tracked, so that an interrupt or a SIGTERM can stop them at once
(``kill_all``): the compile's thread, blocked waiting for one, then
unwinds. The temporary directories made with ``temporary_directory`` are
also removed by ``remove_temporary_directories``, which the main thread
calls after an interrupt: the exception raised in the compile's thread
may land in the middle of its own clean-up (support/deep.py).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
from contextlib import contextmanager

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: the spare child starts after this module
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path
    from typing import Any

_PR_SET_PDEATHSIG = 1
try:  # looked up here, in the parent: a child between fork and exec must not load libraries
    _prctl: Any = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux
    _prctl = None

_live: set[Any] = set()
"""Live children: ``subprocess.Popen`` or ``multiprocessing.Process`` (both can ``kill()``)."""
_group_leaders: set[Any] = set()
"""Tracked children started in a process group of their own."""
_lock = threading.Lock()


def die_with_parent() -> None:
    """In a child (a ``preexec_fn`` or a worker's initializer): be killed
    when the parent dies, even by SIGKILL."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def preexec(*also: Callable[[], None]) -> Callable[[], None]:
    """A ``preexec_fn`` that ties the child to its parent, then runs ``also``."""

    def setup() -> None:
        die_with_parent()
        for step in also:
            step()

    return setup


def track(proc: Any) -> Any:
    with _lock:
        _live.add(proc)
    return proc


def untrack(proc: Any) -> None:
    with _lock:
        _live.discard(proc)


def kill_all() -> None:
    """Kill every tracked child (an interrupt, a SIGTERM)."""
    with _lock:
        procs = list(_live)
    for proc in procs:
        _kill(proc)


def _kill(proc: Any) -> None:
    """Kill a child, and its whole process group when it leads one (a
    compiler driver's cc1, as and ld, or a shell script's commands)."""
    try:
        if proc in _group_leaders:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except OSError:
        pass


def run(command: Sequence[str], timeout_s: float, *, setup: tuple[Callable[[], None], ...] = (),
        **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(command, capture_output=True, text=True)``, tied to
    this process and tracked; ``subprocess.TimeoutExpired`` after
    ``timeout_s``, with the child killed. ``setup`` runs in the child
    before it starts (resource limits)."""
    # A process group of its own, so that a timeout or an interrupt kills
    # what it started too (whose open pipes would keep communicate waiting).
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=preexec(*setup), start_new_session=True, **kwargs)
    _group_leaders.add(proc)
    track(proc)
    try:
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except BaseException:
            _kill(proc)
            proc.communicate()
            raise
    finally:
        untrack(proc)
        _group_leaders.discard(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


_directories: set[str] = set()


@contextmanager
def temporary_directory(prefix: str) -> Iterator[Path]:
    """A temporary directory, removed when the block ends, or by
    ``remove_temporary_directories`` if the block is interrupted."""
    # Imported here, not with the module: a compile the cache answers starts
    # the spare egglog child (select/eqsat.py) and makes no directory.
    import shutil
    import tempfile
    from pathlib import Path

    path = tempfile.mkdtemp(prefix=prefix)
    with _lock:
        _directories.add(path)
    try:
        yield Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)
        with _lock:
            _directories.discard(path)


def remove_temporary_directories() -> None:
    with _lock:
        paths = list(_directories)
        _directories.clear()
    if not paths:
        return
    import shutil  # loaded already, by the temporary_directory that made them

    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


def effective_memory_mb(megabytes: int) -> int:
    """The address space a child asked to get ``megabytes`` really gets: no
    more than this process's own hard limit (``ulimit -v``), which a child
    can never raise."""
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY:
        return megabytes
    return min(megabytes, hard // (1024 * 1024))


def memory_limit(megabytes: int) -> Callable[[], None]:
    """A ``setup`` step capping the child's address space (``RLIMIT_AS``) at
    ``megabytes``, or at the hard limit hardboiled itself runs under when
    that is lower (asking for more would fail in the child). It runs
    between fork and exec, while other threads of the parent may hold
    locks, so it must not import: resource is imported here."""
    import resource

    limit = effective_memory_mb(megabytes) * 1024 * 1024

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply

