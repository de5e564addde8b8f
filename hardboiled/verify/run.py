"""Running generated C: build it, call it through ctypes on the same random
inputs the interpreter gets, and compare with the original IR.

Both entry points run, each on its own copy of the inputs: the raw one
(pointers, mins, extents, strides) and the halide_buffer_t one."""

from __future__ import annotations

import copy
import ctypes
from pathlib import Path

from hardboiled import ir
from hardboiled.codegen.abi import (
    DEFAULT_ENTRY_POINT,
    HALIDE_TYPE_CODES,
    KernelArgument,
    kernel_signature,
    raw_entry_point,
)
from hardboiled.codegen.toolchain import compile_c, cpu_has_amx, find_compiler, resolve_amx_mode
from hardboiled.support import children
from hardboiled.support.diagnostics import Diagnostic, HardboiledError
from hardboiled.verify.compare import DEFAULT_SEED, VerificationResult, compare_outputs, error_bounds, run_original
from hardboiled.verify.interp import BufferT


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


def halide_buffer(buf: BufferT, argument: KernelArgument) -> HalideBuffer:
    """A halide_buffer_t describing ``buf`` (which must outlive it)."""
    dims = (HalideDimension * max(1, len(buf.extents)))(
        *(HalideDimension(m, e, s, 0) for m, e, s in zip(buf.mins, buf.extents, buf.strides)))
    result = HalideBuffer(0, None, buf.data.ctypes.data, 0,
                          HalideType(HALIDE_TYPE_CODES[argument.type.code], argument.type.bits, 1),
                          len(buf.extents), dims, None)
    result._dims = dims  # kept alive with the struct
    return result


def run_kernel(library: Path, function: str, arguments: list[KernelArgument], buffers: dict[str, BufferT]) -> int:
    """Call the kernel's halide_buffer_t entry point ``function`` on
    ``buffers`` (in ``arguments`` order)."""
    kernel = getattr(ctypes.CDLL(str(library)), function)
    kernel.restype = ctypes.c_int
    structs = [halide_buffer(buffers[a.buffer], a) for a in arguments]
    return int(kernel(*(ctypes.byref(b) for b in structs)))


def run_raw_kernel(library: Path, function: str, arguments: list[KernelArgument],
                   buffers: dict[str, BufferT]) -> int:
    """Call the kernel's raw entry point (``function``_raw) on ``buffers``."""
    kernel = getattr(ctypes.CDLL(str(library)), raw_entry_point(function))
    kernel.restype = ctypes.c_int
    args: list[object] = []
    for argument in arguments:
        buf = buffers[argument.buffer]
        args.append(ctypes.c_void_p(buf.data.ctypes.data))
        for d in range(argument.dimensions):
            args.extend(ctypes.c_int32(v) for v in (buf.mins[d], buf.extents[d], buf.strides[d]))
    return int(kernel(*args))


def run_generated_c(original: ir.Stmt, rewritten: ir.Stmt, source: str, *, cc: str | None = None,
                    amx: str = "auto", seed: int = DEFAULT_SEED,
                    params: dict[str, int] | None = None,
                    function: str = DEFAULT_ENTRY_POINT, order: tuple[str, ...] | None = None,
                    extra: tuple[str, ...] = ()) -> tuple[VerificationResult, str, str]:
    """Build the C generated for ``rewritten``, run it on the same random
    inputs as the interpreter, and compare with the original IR's outputs.

    Returns the comparison, the compiler's name and the AMX mode used.
    """
    mode = resolve_amx_mode(amx)
    if mode == "native" and not cpu_has_amx():
        # The kernel would only fail its own AMX permission request at run
        # time, which reads like wrong code; say what is really wrong.
        raise HardboiledError(Diagnostic(
            "error", "--amx native cannot run here: this CPU has no AMX (no amx_tile in /proc/cpuinfo)",
            notes=("use --amx emulate (or auto) to run, or --build alone to compile with native intrinsics",),
        ))
    with children.temporary_directory("hardboiled-run-") as tmp:
        library = tmp / "kernel.so"
        compiler = compile_c(source, library, shared=True, amx=mode, compiler=find_compiler(cc), extra=extra)
        result = run_built_kernel(original, rewritten, library, function, seed=seed, params=params, order=order)
    return result, compiler.name, mode


def run_built_kernel(original: ir.Stmt, rewritten: ir.Stmt, library: Path, function: str, *,
                     seed: int = DEFAULT_SEED, params: dict[str, int] | None = None,
                     order: tuple[str, ...] | None = None) -> VerificationResult:
    """Call ``function`` of a built library (the C generated for
    ``rewritten``, maybe linked with other kernels) on the interpreter's
    random inputs, through each entry point, and compare with the original
    IR's outputs."""
    buffers, outputs, expected = run_original(original, params or {}, seed)
    arguments = kernel_signature(rewritten, order)
    bounds = error_bounds(original, rewritten, buffers, outputs)
    result = VerificationResult(seed, ())
    for entry, call in (("raw", run_raw_kernel), ("halide_buffer_t", run_kernel)):
        actual = copy.deepcopy(buffers)
        status = call(library, function, arguments, actual)
        if status != 0:
            return VerificationResult(seed, (), f"the generated kernel's {entry} entry point returned {status} "
                                                "(a failed check)")
        result = VerificationResult(seed, compare_outputs(buffers, outputs, expected, actual, bounds))
        if not result.ok:
            return result
    return result
