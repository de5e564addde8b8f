"""Running generated C: build it, call it through ctypes on the same random
inputs the interpreter gets, and compare with the original IR."""

from __future__ import annotations

import copy
import ctypes
import tempfile
from pathlib import Path

from hardboiled import ir
from hardboiled.codegen.abi import DEFAULT_ENTRY_POINT, kernel_signature
from hardboiled.codegen.toolchain import compile_c, cpu_has_amx, find_compiler, resolve_amx_mode
from hardboiled.support.diagnostics import Diagnostic, HardboiledError
from hardboiled.verify.compare import DEFAULT_SEED, VerificationResult, compare_outputs, error_bounds, run_original
from hardboiled.verify.interp import BufferT


def run_kernel(library: Path, function: str, arguments: list[tuple[str, int]], buffers: dict[str, BufferT]) -> int:
    """Call the kernel on ``buffers`` (in ``arguments`` order: name, dims)."""
    lib = ctypes.CDLL(str(library))
    kernel = getattr(lib, function)
    kernel.restype = ctypes.c_int
    args: list[object] = []
    for name, dimensions in arguments:
        buf = buffers[name]
        args.append(ctypes.c_void_p(buf.data.ctypes.data))
        for d in range(dimensions):
            args.extend(ctypes.c_int32(v) for v in (buf.mins[d], buf.extents[d], buf.strides[d]))
    return int(kernel(*args))


def run_generated_c(original: ir.Stmt, rewritten: ir.Stmt, source: str, *, cc: str | None = None,
                    amx: str = "auto", seed: int = DEFAULT_SEED,
                    params: dict[str, int] | None = None,
                    function: str = DEFAULT_ENTRY_POINT,
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
    with tempfile.TemporaryDirectory(prefix="hardboiled-run-") as tmp:
        library = Path(tmp) / "kernel.so"
        compiler = compile_c(source, library, shared=True, amx=mode, compiler=find_compiler(cc), extra=extra)
        result = run_built_kernel(original, rewritten, library, function, seed=seed, params=params)
    return result, compiler.name, mode


def run_built_kernel(original: ir.Stmt, rewritten: ir.Stmt, library: Path, function: str, *,
                     seed: int = DEFAULT_SEED, params: dict[str, int] | None = None) -> VerificationResult:
    """Call ``function`` of a built library (the C generated for
    ``rewritten``, maybe linked with other kernels) on the interpreter's
    random inputs, and compare with the original IR's outputs."""
    buffers, outputs, expected = run_original(original, params or {}, seed)
    actual = copy.deepcopy(buffers)
    arguments = [(a.buffer, a.dimensions) for a in kernel_signature(rewritten)]
    status = run_kernel(library, function, arguments, actual)
    if status != 0:
        return VerificationResult(seed, (), f"the generated kernel returned {status} (a failed check)")
    bounds = error_bounds(original, rewritten, buffers, outputs)
    return VerificationResult(seed, compare_outputs(buffers, outputs, expected, actual, bounds))
