"""Running generated C: build it, call it through ctypes on the same random
inputs the interpreter gets, and compare with the original IR.

Both entry points run, each on its own copy of the inputs: the raw one
(pointers, mins, extents, strides) and the halide_buffer_t one."""

from __future__ import annotations

import copy
import ctypes
import pickle
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hardboiled import ir
from hardboiled.codegen.abi import (
    DEFAULT_ENTRY_POINT,
    HALIDE_TYPE_CODES,
    KernelArgument,
    kernel_signature,
    raw_entry_point,
)
from hardboiled.codegen.toolchain import ToolchainError, compile_c, cpu_has_amx, find_compiler, resolve_amx_mode
from hardboiled.ir.buffers import scalar_params
from hardboiled.support import children
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError
from hardboiled.verify.compare import (
    DEFAULT_SEED,
    ORIGINAL,
    VerificationResult,
    compare_outputs,
    error_bounds,
    original_run_for,
    poison_seed,
)
from hardboiled.verify.divergence import divergence
from hardboiled.verify.inputs import DEFAULT_OUTPUT_EXTENTS, make_buffers, scalar_draws
from hardboiled.verify.interp import INTERPRETER_TIMEOUT_S, BufferT, time_limit

if TYPE_CHECKING:
    import numpy as np


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


def scalar_argument(argument: KernelArgument, value: Any) -> object:
    """A scalar param's value as the C type the kernel takes it in."""
    t = argument.type
    if t.is_float:
        return (ctypes.c_double if t.bits == 64 else ctypes.c_float)(float(value))
    c_int = {8: ctypes.c_int8, 16: ctypes.c_int16, 32: ctypes.c_int32, 64: ctypes.c_int64}
    c_uint = {1: ctypes.c_bool, 8: ctypes.c_uint8, 16: ctypes.c_uint16, 32: ctypes.c_uint32, 64: ctypes.c_uint64}
    return (c_uint if t.code is ir.TypeCode.UINT else c_int)[t.bits](int(value))


def run_kernel(library: Path, function: str, arguments: list[KernelArgument], buffers: dict[str, BufferT],
               scalars: Mapping[str, Any] | None = None) -> int:
    """Call the kernel's halide_buffer_t entry point ``function`` on
    ``buffers`` and ``scalars`` (in ``arguments`` order)."""
    kernel = getattr(ctypes.CDLL(str(library)), function)
    kernel.restype = ctypes.c_int
    args: list[object] = []
    for a in arguments:
        if a.scalar:
            args.append(scalar_argument(a, (scalars or {})[a.buffer]))
        else:
            struct = halide_buffer(buffers[a.buffer], a)
            args.append(ctypes.byref(struct))
    return int(kernel(*args))


def run_raw_kernel(library: Path, function: str, arguments: list[KernelArgument],
                   buffers: dict[str, BufferT], scalars: Mapping[str, Any] | None = None) -> int:
    """Call the kernel's raw entry point (``function``_raw) on ``buffers``
    and ``scalars``."""
    kernel = getattr(ctypes.CDLL(str(library)), raw_entry_point(function))
    kernel.restype = ctypes.c_int
    args: list[object] = []
    for argument in arguments:
        if argument.scalar:
            args.append(scalar_argument(argument, (scalars or {})[argument.buffer]))
            continue
        buf = buffers[argument.buffer]
        args.append(ctypes.c_void_p(buf.data.ctypes.data))
        for d in range(argument.dimensions):
            args.extend(ctypes.c_int32(v) for v in (buf.mins[d], buf.extents[d], buf.strides[d]))
    return int(kernel(*args))


def calls_on_verification_inputs(original: ir.Stmt, rewritten: ir.Stmt, seed: int = DEFAULT_SEED,
                                 function: str = DEFAULT_ENTRY_POINT) -> Callable[[Path], Iterator[int]]:
    """For measuring a built kernel (measure/tile_counts.py): a function
    that calls ``function`` of a library once per output size the verifier
    tries, on the inputs it would make, yielding each call's status."""

    def calls(library: Path) -> Iterator[int]:
        arguments = kernel_signature(rewritten)
        scalars = next(scalar_draws(scalar_params(original), {}, seed))
        for extent in DEFAULT_OUTPUT_EXTENTS:
            buffers, _ = make_buffers(original, {}, seed, extent, [])
            yield run_kernel(library, function, arguments, buffers, scalars)

    return calls


ENTRY_POINTS = {"raw": run_raw_kernel, "halide_buffer_t": run_kernel}
"""How each entry point of a kernel is called, by name."""
KERNEL_TIMEOUT_S = 120.0
"""How long the generated code may run on the verification inputs."""
KERNEL_MEMORY_MB = 4096
"""The address space the child running the generated code may use."""


class KernelCrashed(HardboiledError):
    """The generated code, run by --run, crashed or passed its limits."""

    exit_code = ExitCode.KERNEL_CRASHED


def run_isolated(entry: str, library: Path, function: str, arguments: list[KernelArgument],
                 buffers: dict[str, BufferT], scalars: Mapping[str, Any] | None = None) -> int:
    """Call an entry point of the built kernel in a child process, under a
    time and memory limit, and bring its outputs back into ``buffers``.
    A kernel that writes out of bounds or overflows its stack then kills
    the child, not hardboiled, and is reported with its signal."""
    with children.temporary_directory("hardboiled-kernel-") as tmp:
        request, answer = tmp / "request.pickle", tmp / "answer.pickle"
        values = {name: _plain_number(value) for name, value in (scalars or {}).items()}
        request.write_bytes(pickle.dumps((entry, str(library), function, arguments, buffers, values)))
        try:
            proc = children.run([sys.executable, "-m", "hardboiled.verify.run", str(request), str(answer)],
                                KERNEL_TIMEOUT_S, setup=(children.memory_limit(KERNEL_MEMORY_MB),))
        except subprocess.TimeoutExpired:
            raise KernelCrashed(Diagnostic(
                "error", f"the generated kernel's {entry} entry point did not finish within {KERNEL_TIMEOUT_S:g} s",
            )) from None
        if proc.returncode == _CANNOT_LOAD:
            raise ToolchainError(Diagnostic("error", f"the built kernel '{library.name}' cannot be loaded",
                                            notes=(proc.stderr.strip()[-500:],)))
        if proc.returncode != 0 or not answer.exists():
            raise KernelCrashed(Diagnostic("error", f"the generated kernel's {entry} entry point "
                                           + _how_it_ended(proc.returncode, proc.stderr),
                                           notes=("the code ran in a child process, which alone was lost; "
                                                  "this is a bug in the generated code, or a buffer too large "
                                                  f"for the {KERNEL_MEMORY_MB} MB the child may use",)))
        status, results = pickle.loads(answer.read_bytes())
    for name, data in results.items():
        buffers[name].data[...] = data
    return int(status)


def _plain_number(value: Any) -> Any:
    """A scalar param's value as a Python number (the interpreter holds it
    as a one-element array)."""
    return value.reshape(-1)[0].item() if hasattr(value, "reshape") else value


def _how_it_ended(returncode: int, stderr: str) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"crashed ({name})"
    last = stderr.strip().splitlines()[-1:] or ["no message"]
    return f"failed (exit status {returncode}: {last[0][:200]})"


_CANNOT_LOAD = 3
"""The child's exit status when the library it was given cannot be loaded
(a compiler that wrote a broken shared object, a missing symbol): a
toolchain failure, not a crash of the generated code."""


def _child_main(request: str, answer: str) -> None:
    """In the child: call the entry point, write its status and outputs."""
    entry, library, function, arguments, buffers, scalars = pickle.loads(Path(request).read_bytes())
    try:
        getattr(ctypes.CDLL(library), function)
    except (OSError, AttributeError) as exc:  # not a shared object, or not the one generated for this kernel
        sys.stderr.write(f"{exc}\n")
        sys.exit(_CANNOT_LOAD)
    status = ENTRY_POINTS[entry](Path(library), function, arguments, buffers, scalars)
    results = {name: buf.data for name, buf in buffers.items()}
    Path(answer).write_bytes(pickle.dumps((status, results)))


def run_generated_c(original: ir.Stmt, rewritten: ir.Stmt, source: str, *, cc: str | None = None,
                    amx: str = "auto", seed: int = DEFAULT_SEED,
                    params: Mapping[str, float] | None = None,
                    function: str = DEFAULT_ENTRY_POINT, order: tuple[str, ...] | None = None,
                    extra: tuple[str, ...] = (),
                    timeout_s: float = INTERPRETER_TIMEOUT_S,
                    inputs: Mapping[str, np.ndarray] | None = None) -> tuple[VerificationResult, str, str]:
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
        result = run_built_kernel(original, rewritten, library, function, seed=seed, params=params, order=order,
                                  timeout_s=timeout_s, inputs=inputs)
    return result, compiler.name, mode


def run_built_kernel(original: ir.Stmt, rewritten: ir.Stmt, library: Path, function: str, *,
                     seed: int = DEFAULT_SEED, params: Mapping[str, float] | None = None,
                     order: tuple[str, ...] | None = None,
                     timeout_s: float = INTERPRETER_TIMEOUT_S,
                     inputs: Mapping[str, np.ndarray] | None = None) -> VerificationResult:
    """Call ``function`` of a built library (the C generated for
    ``rewritten``, maybe linked with other kernels) on the interpreter's
    random inputs, through each entry point, and compare with the original
    IR's outputs (the interpreter's part within ``timeout_s``)."""
    with time_limit(timeout_s):
        run = original_run_for(original, divergence(original, rewritten), params or {}, seed, inputs)  # verify's
        buffers, outputs, expected = run.buffers, run.outputs, run.expected
        bounds = run.bounds if run.bounded else error_bounds(original, rewritten, buffers, outputs,
                                                             poison_seed(seed, ORIGINAL), run.scalars)
    arguments = kernel_signature(rewritten, order)
    result = VerificationResult(seed, ())
    for entry in ENTRY_POINTS:
        actual = copy.deepcopy(buffers)
        status = run_isolated(entry, library, function, arguments, actual, run.scalars)
        if status != 0:
            return VerificationResult(seed, (), f"the generated kernel's {entry} entry point returned {status} "
                                                "(a failed check)")
        result = VerificationResult(seed, compare_outputs(buffers, outputs, expected, actual, bounds))
        if not result.ok:
            return result
    return result


if __name__ == "__main__":  # python -m hardboiled.verify.run REQUEST ANSWER (run_isolated's child)
    _child_main(sys.argv[1], sys.argv[2])
