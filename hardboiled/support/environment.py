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
from pathlib import Path

from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError


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
    if not isinstance(exc, (MemoryError, ImportError, RuntimeError, OSError)):
        return None
    return classify_fault(type(exc).__name__, str(exc), who)


def classify_fault(kind: str, message: str, who: str) -> HardboiledError | None:
    """As ``environment_fault``, from an exception's class name and message
    (one raised in a child process)."""
    lowered = message.lower()
    detail = _last_line(message)
    if kind == "MemoryError" or any(sign in lowered for sign in _MEMORY_SIGNS):
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


def address_space_note() -> str | None:
    """The address-space limit this process runs under, when there is one."""
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    return f"this process runs under an address-space limit of {soft >> 20} MB (ulimit -v)"


def _last_line(message: str) -> str:
    """The message's last non-empty line: numpy's import error is a page of
    advice that ends with the loader's message, which is what tells."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    text = lines[-1] if lines else ""
    return text.removeprefix("Original error was: ")[:300]
