"""Calling a built kernel's entry points through ctypes, on buffers given
by address, and the child process that ``--run`` calls them in.

It imports nothing but ctypes and the standard library, so that it can run
as a script (``python -S -P kernel_call.py REQUEST ANSWERS``, by
verify/run.py's ``run_isolated``): the child then starts in about 15 ms.
As ``python -m hardboiled.verify.run`` it loaded numpy and the IR for the
buffers it was sent, 140 ms for each of the two entry points of every run.
The child now gets its buffers' bytes (each call's own copy), calls the
entry points one after the other, and writes each call's status and
buffers before it makes the next: a crash in the second leaves the first's
answer, and the parent reports the first entry point that went wrong, as
before.

Arguments arrive as plain tuples (``Argument``): the parent (verify/run.py)
reads them off the kernel's signature.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    Argument = tuple[str, bool, str, int, int, int]
    """name, whether it is a scalar, the scalar's kind ("f", "i" or "u"),
    its bits, its halide_type_code_t and its dimensions."""
    Buffer = tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    """The host address, then mins, extents and strides."""

CANNOT_LOAD = 3
"""The child's exit status when the library it was given cannot be loaded
(a compiler that wrote a broken shared object, a missing symbol): a
toolchain failure, not a crash of the generated code."""

ALIGNMENT = 64
"""The child's buffers start on a cache line, as wide as any vector load."""


class HalideType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class HalideDimension(ctypes.Structure):
    _fields_ = [("min", ctypes.c_int32), ("extent", ctypes.c_int32), ("stride", ctypes.c_int32),
                ("flags", ctypes.c_uint32)]


class HalideBuffer(ctypes.Structure):
    """halide_buffer_t, as HalideRuntime.h lays it out."""

    _fields_ = [("device", ctypes.c_uint64), ("device_interface", ctypes.c_void_p), ("host", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("type", HalideType), ("dimensions", ctypes.c_int32),
                ("dim", ctypes.POINTER(HalideDimension)), ("padding", ctypes.c_void_p)]


def halide_buffer(buffer: Buffer, argument: Argument) -> HalideBuffer:
    """A halide_buffer_t describing ``buffer`` (whose memory must outlive it)."""
    host, mins, extents, strides = buffer
    dims = (HalideDimension * max(1, len(extents)))(
        *(HalideDimension(m, e, s, 0) for m, e, s in zip(mins, extents, strides)))
    result = HalideBuffer(0, None, host, 0, HalideType(argument[4], argument[3], 1), len(extents), dims, None)
    result._dims = dims  # kept alive with the struct
    return result


_INTS = {8: ctypes.c_int8, 16: ctypes.c_int16, 32: ctypes.c_int32, 64: ctypes.c_int64}
_UINTS = {1: ctypes.c_bool, 8: ctypes.c_uint8, 16: ctypes.c_uint16, 32: ctypes.c_uint32, 64: ctypes.c_uint64}


def scalar_argument(argument: Argument, value: Any) -> object:
    """A scalar param's value as the C type the kernel takes it in."""
    _, _, kind, bits, _, _ = argument
    if kind == "f":
        return (ctypes.c_double if bits == 64 else ctypes.c_float)(float(value))
    return (_UINTS if kind == "u" else _INTS)[bits](int(value))


def call_halide_entry(kernel: Any, arguments: list[Argument], buffers: Mapping[str, Buffer],
                      scalars: Mapping[str, Any]) -> int:
    """Call the halide_buffer_t entry point on ``buffers`` and ``scalars``
    (in ``arguments`` order)."""
    kernel.restype = ctypes.c_int
    args: list[object] = []
    for argument in arguments:
        if argument[1]:
            args.append(scalar_argument(argument, scalars[argument[0]]))
        else:
            args.append(ctypes.byref(halide_buffer(buffers[argument[0]], argument)))
    return int(kernel(*args))


def call_raw_entry(kernel: Any, arguments: list[Argument], buffers: Mapping[str, Buffer],
                   scalars: Mapping[str, Any]) -> int:
    """Call the raw entry point: a pointer, then min, extent and stride of
    each dimension, per buffer."""
    kernel.restype = ctypes.c_int
    args: list[object] = []
    for argument in arguments:
        if argument[1]:
            args.append(scalar_argument(argument, scalars[argument[0]]))
            continue
        host, mins, extents, strides = buffers[argument[0]]
        args.append(ctypes.c_void_p(host))
        for d in range(argument[5]):
            args.extend(ctypes.c_int32(v) for v in (mins[d], extents[d], strides[d]))
    return int(kernel(*args))


ENTRY_POINTS = {"raw": call_raw_entry, "halide_buffer_t": call_halide_entry}
"""How each entry point of a kernel is called, by name."""


def call_entry(library: Any, entry: str, symbol: str, arguments: list[Argument],
               buffers: Mapping[str, Buffer], scalars: Mapping[str, Any]) -> int:
    """Call one entry point (``symbol``) of a loaded library (``ctypes.CDLL``)."""
    return ENTRY_POINTS[entry](getattr(library, symbol), arguments, buffers, scalars)


# ------------------------------------------------------------------ the child
def answer_path(answers: str, index: int) -> str:
    return os.path.join(answers, f"answer-{index}")


def _aligned(size: int) -> tuple[object, memoryview, int]:
    """Zeroed memory for ``size`` bytes starting on ``ALIGNMENT``: the
    block that owns it, a view of the bytes, and their address."""
    block = ctypes.create_string_buffer(size + ALIGNMENT)
    start = -ctypes.addressof(block) % ALIGNMENT
    return block, memoryview(block).cast("B")[start:start + size], ctypes.addressof(block) + start


def child_main(request: str, answers: str) -> int:
    """Read the request: the library, each call's time limit, and per call
    its entry point, the entry point's symbol, arguments, buffers (name,
    bytes, mins, extents, strides; the bytes follow the pickled header,
    call after call) and scalars. Make the calls in order, each answer
    written (status, then each buffer's bytes) before the next call
    starts; only the running call's buffers are in memory."""
    with open(request, "rb") as stream:
        library_path, limit_s, calls = pickle.load(stream)
        try:
            library = ctypes.CDLL(library_path)
            for _, symbol, *_ in calls:
                getattr(library, symbol)
        except (OSError, AttributeError) as exc:  # not a shared object, or not the one generated for this kernel
            sys.stderr.write(f"{exc}\n")
            return CANNOT_LOAD
        for index, (entry, symbol, arguments, layouts, scalars) in enumerate(calls):
            memory = {}
            for name, size, *_ in layouts:
                memory[name] = _aligned(size)
                if stream.readinto(memory[name][1]) != size:
                    raise EOFError("the request ends before its buffers do")
            buffers = {name: (memory[name][2], mins, extents, strides) for name, _, mins, extents, strides in layouts}
            # Each call has its own time limit: SIGALRM, unhandled, ends the
            # process, which the parent reads as this call not finishing.
            signal.setitimer(signal.ITIMER_REAL, limit_s)
            status = call_entry(library, entry, symbol, arguments, buffers, scalars)
            signal.setitimer(signal.ITIMER_REAL, 0)
            partial = answer_path(answers, index) + ".partial"
            with open(partial, "wb") as out:
                pickle.dump(status, out)
                for name, *_ in layouts:
                    out.write(memory[name][1])
            # Freed before the answer counts: a heap the call corrupted
            # aborts here, and the crash is this call's.
            memory.clear()
            os.replace(partial, answer_path(answers, index))
    return 0


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1], sys.argv[2]))
