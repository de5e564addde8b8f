"""Faults of the machine hardboiled runs on, told apart from its bugs.

An exception that reaches the command's last line of defence is a bug in
hardboiled (exit 70), unless the machine caused it: an address-space limit
(``ulimit -v``) too small for a thread, a library or an allocation, or a
shared object of the installation that cannot be loaded (a damaged or
half-upgraded egglog or numpy). Those are the user's to fix, so they get
their own documented exit codes (docs/cli.md) and a diagnosis that says
what to do:

* out of memory: exit 4 (``ExitCode.RESOURCE_LIMIT``), with the limit the
  process runs under when there is one;
* a library that cannot be loaded: exit 3 (``ExitCode.TOOLCHAIN_FAILURE``),
  naming the library and the loader's own message.

The egglog child reports the same faults to its parent by name and
message (select/eqsat.py), so ``classify_fault`` works from those.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError
from hardboiled.support.limits import address_space_note


class OutOfMemory(HardboiledError):
    """The machine, or a limit it was given, ran out of memory."""

    exit_code = ExitCode.RESOURCE_LIMIT


class BrokenInstallation(HardboiledError):
    """A library hardboiled needs is installed but cannot be loaded."""

    exit_code = ExitCode.TOOLCHAIN_FAILURE


_MEMORY_SIGNS = ("failed to map segment", "cannot allocate memory", "can't start new thread", "out of memory",
                 "memory allocation", "memoryerror")
"""How a loader, the thread library or an allocator says it had no memory:
ld.so's "failed to map segment from shared object", errno ENOMEM,
CPython's thread start, OpenBLAS's and Rust's allocation failures."""


def environment_fault(exc: BaseException, who: str = "hardboiled") -> HardboiledError | None:
    """The diagnosis of ``exc`` if the machine caused it, else None (a bug)."""
    if isinstance(exc, RecursionError):
        return too_deep(sys.getrecursionlimit())
    if not isinstance(exc, (MemoryError, ImportError, RuntimeError, OSError, SystemError)):
        return None
    return classify_fault(type(exc).__name__, str(exc), who)


STACK_FRAME_BYTES = 1024
"""C stack a Python frame may take at most (support/deep.py sets the
recursion limit to its stack over this)."""


def too_deep(frames: int) -> HardboiledError:
    """An input that nests deeper than the compile's stack holds (support/
    deep.py: 1 GB, or 64 MB when an address-space limit leaves no room for
    that): a limit of the machine, exit 4, not a bug."""
    notes = [f"the compile's stack holds {frames} Python frames ({frames * STACK_FRAME_BYTES >> 20} MB)"]
    limited = address_space_note()
    if limited is not None:
        notes += [limited, "under it the stack is smaller than the usual 1 GB; raise the limit"]
    notes.append("a schedule that unrolls less makes the IR less deep")
    return OutOfMemory(Diagnostic("error", "hardboiled ran out of stack: the input nests too deeply",
                                  notes=tuple(notes)))


def classify_fault(kind: str, message: str, who: str) -> HardboiledError | None:
    """As ``environment_fault``, from an exception's class name and message
    (one raised in a child process)."""
    lowered = message.lower()
    detail = _last_line(message)
    # A C extension whose allocation failed may return an error without
    # setting one ("error return without exception set"): under an
    # address-space limit, that is the limit's doing.
    limited_system_error = kind == "SystemError" and address_space_note() is not None
    if kind == "MemoryError" or limited_system_error or any(sign in lowered for sign in _MEMORY_SIGNS):
        notes = [note for note in (detail and f"{kind}: {detail}", address_space_note()) if note]
        return OutOfMemory(Diagnostic("error", f"{who} ran out of memory", notes=tuple(notes)))
    if kind in ("ImportError", "ModuleNotFoundError"):
        # The loader names the shared object it failed on; its directory is
        # the package (numpy/, egglog/, numpy.libs/ for numpy's BLAS).
        shared_object = re.search(r"(/[^\s:]+\.so(?:\.[\d.]+)?)\b", message)
        library = Path(shared_object.group(1)).parent.name.removesuffix(".libs") if shared_object else \
            "a library it needs"
        return BrokenInstallation(Diagnostic(
            "error", f"{who} cannot load {library}: {detail}",
            notes=("the installation is damaged (a shared object that cannot be loaded, or a module missing); "
                   "reinstall it: make install in a checkout, or pip install --force-reinstall hardboiled",),
        ))
    return None


def require_address_space(megabytes: int, purpose: str) -> None:
    """Under an address-space limit, raise OutOfMemory unless ``megabytes``
    more can be mapped now. For a library whose loading cannot fail in a
    way Python sees: numpy's OpenBLAS maps its buffers as it loads and,
    when that fails, calls exit(1) after "Memory allocation still failed".
    Probing first turns that into exit 4 with a diagnosis. Without a limit
    this does nothing (the kernel overcommits; nothing is mapped)."""
    import mmap
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return
    try:
        probe = mmap.mmap(-1, megabytes << 20)
    except (OSError, MemoryError):
        raise OutOfMemory(Diagnostic("error", "hardboiled ran out of memory", notes=tuple(
            note for note in (f"{purpose} needs about {megabytes} MB more address space than is left",
                              address_space_note()) if note))) from None
    probe.close()


NUMPY_LOAD_MB = 128
"""Address space numpy needs to load, with a margin: 85 MB measured for
numpy 2 with a one-thread OpenBLAS (126 MB with two threads)."""


def load_numpy() -> None:
    """Load numpy as hardboiled needs it, before any module imports it.
    OpenBLAS starts a pool with a buffer per core as it loads; the
    interpreter's only products are single fragments (16x16), for which one
    thread is right, and it leaves more of a limited address space. Under
    such a limit, loading fails as exit 4, not OpenBLAS's exit(1)."""
    import os
    import sys

    if "numpy" in sys.modules:
        return
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    require_address_space(NUMPY_LOAD_MB, "loading numpy")
    import numpy  # noqa: F401


def _last_line(message: str) -> str:
    """The message's last non-empty line: numpy's import error is a page of
    advice that ends with the loader's message, which is what tells."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    text = lines[-1] if lines else ""
    return text.removeprefix("Original error was: ")[:300]
