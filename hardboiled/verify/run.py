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
from typing import Any

import numpy as np

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
from hardboiled.verify import kernel_call
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


def plain_arguments(arguments: list[KernelArgument]) -> list[kernel_call.Argument]:
    """The kernel's arguments as verify/kernel_call.py takes them."""
    def kind(t: ir.Type) -> str:
        return "f" if t.is_float else "u" if t.code is ir.TypeCode.UINT else "i"

    return [(a.buffer, a.scalar, kind(a.type), a.type.bits, HALIDE_TYPE_CODES[a.type.code], a.dimensions)
            for a in arguments]


def _address(buf: BufferT) -> kernel_call.Buffer:
    return buf.data.ctypes.data, buf.mins, buf.extents, buf.strides


def _addresses(buffers: Mapping[str, BufferT]) -> dict[str, kernel_call.Buffer]:
    return {name: _address(buf) for name, buf in buffers.items()}


HalideBuffer = kernel_call.HalideBuffer
HalideDimension = kernel_call.HalideDimension
HalideType = kernel_call.HalideType


def halide_buffer(buf: BufferT, argument: KernelArgument) -> kernel_call.HalideBuffer:
    """A halide_buffer_t describing ``buf`` (which must outlive it)."""
    return kernel_call.halide_buffer(_address(buf), plain_arguments([argument])[0])


def scalar_argument(argument: KernelArgument, value: Any) -> object:
    """A scalar param's value as the C type the kernel takes it in."""
    return kernel_call.scalar_argument(plain_arguments([argument])[0], value)


def run_kernel(library: Path, function: str, arguments: list[KernelArgument], buffers: dict[str, BufferT],
               scalars: Mapping[str, Any] | None = None) -> int:
    """Call the kernel's halide_buffer_t entry point ``function`` on
    ``buffers`` and ``scalars`` (in ``arguments`` order), in this process."""
    return kernel_call.call_entry(ctypes.CDLL(str(library)), "halide_buffer_t", function,
                                  plain_arguments(arguments), _addresses(buffers), scalars or {})


ENTRY_POINT_NAMES = tuple(kernel_call.ENTRY_POINTS)
"""The entry points --run calls, in order."""


def entry_symbol(entry: str, function: str) -> str:
    return raw_entry_point(function) if entry == "raw" else function


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


KERNEL_TIMEOUT_S = 120.0
"""How long each entry point of the generated code may run on the verification inputs (each call its own)."""
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
    (outcome,) = run_in_child(library, function, arguments, [(entry, buffers)], scalars)
    if isinstance(outcome, KernelCrashed):
        raise outcome
    return outcome


def run_in_child(library: Path, function: str, arguments: list[KernelArgument],
                 calls: list[tuple[str, dict[str, BufferT]]],
                 scalars: Mapping[str, Any] | None = None) -> list[int | KernelCrashed]:
    """Call each ``(entry point, buffers)`` of ``calls`` in turn, in one child
    process (verify/kernel_call.py), and bring each call's outputs back into
    its buffers. Per call, in order: its status, or how it was lost (the
    child crashed or ran out of time during it, so no later call ran
    either). A library the child cannot load is a ToolchainError."""
    values = {name: _plain_number(value) for name, value in (scalars or {}).items()}
    plain = plain_arguments(arguments)
    header = [(entry, entry_symbol(entry, function), plain,
               [(name, buf.data.nbytes, buf.mins, buf.extents, buf.strides) for name, buf in buffers.items()], values)
              for entry, buffers in calls]
    with children.temporary_directory("hardboiled-kernel-") as tmp:
        request = tmp / "request"
        with open(request, "wb") as stream:
            pickle.dump((str(library), KERNEL_TIMEOUT_S, header), stream)
            for _, buffers in calls:
                for buf in buffers.values():
                    stream.write(np.ascontiguousarray(buf.data).view(np.uint8).data)
        # -P: the script's directory (verify/) does not go first on sys.path.
        command = [sys.executable, "-S", "-P", kernel_call.__file__, str(request), str(tmp)]
        try:
            # Each call stops itself at KERNEL_TIMEOUT_S (SIGALRM); this is the backstop.
            proc: subprocess.CompletedProcess[str] | None = children.run(
                command, (KERNEL_TIMEOUT_S + 5.0) * len(calls), setup=(children.memory_limit(KERNEL_MEMORY_MB),))
        except subprocess.TimeoutExpired:
            proc = None
        if proc is not None and proc.returncode == kernel_call.CANNOT_LOAD:
            raise ToolchainError(Diagnostic("error", f"the built kernel '{library.name}' cannot be loaded",
                                            notes=(proc.stderr.strip()[-500:],)))
        outcomes: list[int | KernelCrashed] = []
        for index, (entry, buffers) in enumerate(calls):
            answer = Path(kernel_call.answer_path(str(tmp), index))
            if not answer.exists():
                outcomes.extend(_lost(entry, proc) for entry, _ in calls[index:])
                break
            with open(answer, "rb") as stream:
                outcomes.append(int(pickle.load(stream)))
                for buf in buffers.values():
                    data = np.frombuffer(stream.read(buf.data.nbytes), dtype=buf.data.dtype)
                    buf.data[...] = data.reshape(buf.data.shape)
        if len(outcomes) == len(calls) and (proc is None or proc.returncode != 0):
            # Every call answered, yet the child did not end well (an abort
            # as it shut down): the last call's, as a child of its own
            # would have been.
            outcomes[-1] = _lost(calls[-1][0], proc)
    return outcomes


def _lost(entry: str, proc: subprocess.CompletedProcess[str] | None) -> KernelCrashed:
    """What to say of a call that left no answer."""
    if proc is None or proc.returncode == -signal.SIGALRM:  # its own limit (kernel_call.py), or the backstop
        return KernelCrashed(Diagnostic(
            "error", f"the generated kernel's {entry} entry point did not finish within {KERNEL_TIMEOUT_S:g} s"))
    return KernelCrashed(Diagnostic("error", f"the generated kernel's {entry} entry point "
                                    + _how_it_ended(proc.returncode, proc.stderr),
                                    notes=("the code ran in a child process, which alone was lost; "
                                           "this is a bug in the generated code, or a buffer too large "
                                           f"for the {KERNEL_MEMORY_MB} MB the child may use",)))


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
    # Each entry point on its own copy of the inputs, in one child; the
    # first that goes wrong is what is reported.
    calls = [(entry, copy.deepcopy(buffers)) for entry in ENTRY_POINT_NAMES]
    for (entry, actual), status in zip(calls, run_in_child(library, function, arguments, calls, run.scalars)):
        if isinstance(status, KernelCrashed):
            raise status
        if status != 0:
            return VerificationResult(seed, (), f"the generated kernel's {entry} entry point returned {status} "
                                                "(a failed check)")
        result = VerificationResult(seed, compare_outputs(buffers, outputs, expected, actual, bounds))
        if not result.ok:
            return result
    return result

