"""The address-space limit (``ulimit -v``) this process runs under.

Standard library only, and ``resource`` loaded on first use: the
``hardboiled`` command asks on every start, before anything heavy loads
(cli/direct.py), and support/environment.py words its diagnoses with it.
"""

from __future__ import annotations


def address_space_note() -> str | None:
    """The address-space limit this process runs under, when there is one."""
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    return f"this process runs under an address-space limit of {soft >> 20} MB (ulimit -v)"


M_ARENA_MAX = -8
"""glibc's mallopt parameter for the number of malloc arenas (malloc.h)."""


def fit_address_limit() -> None:
    """Under an address-space limit, make this process use less of it: one
    malloc arena for every thread (glibc reserves 64 MB of address space
    for each thread's own arena, and the compile runs on a thread of its
    own, support/deep.py). Only the command calls this: it owns its process,
    a program embedding the API does not hand us its allocator."""
    if address_space_note() is None:
        return  # the common case, on every start: nothing more is loaded
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(M_ARENA_MAX, 1)
    except (OSError, AttributeError):
        pass  # not glibc: its allocator is its own business
