"""The kernel ABI: which buffers a generated function takes, in which order
and with which fields. Code generation declares it; verification calls
generated code through it.

A generated kernel has two entry points:

* ``NAME(halide_buffer_t *a, ..., halide_buffer_t *out)``: Halide's AOT
  calling convention, so that the object can replace a Halide AOT function
  or be called through ``define_extern``. It checks each buffer's type and
  dimensions, then runs the pipeline, whose own checks (extents, strides,
  sizes) return Halide's error codes;
* ``NAME_raw(T *a, int32_t a_min0, int32_t a_extent0, int32_t a_stride0,
  ...)``: host (or, for CUDA, device) pointers and each dimension's fields,
  returning -N when the pipeline's N-th check fails.

A scalar param of the pipeline (a ``Param``: a name the program reads and
never binds) is an argument too, passed by value in both entry points, as
Halide's AOT convention passes it.

Arguments come in Halide's order: inputs then outputs, as the pipeline
declares them. A dump does not record that order (Halide unpacks the
buffers sorted by name), so it comes from a lowered module's signature or
from ``--args``; without either, inputs come before outputs, each sorted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hardboiled import ir
from hardboiled.codegen.naming import (  # re-exported: the ABI's names
    DEFAULT_ENTRY_POINT as DEFAULT_ENTRY_POINT,
)
from hardboiled.codegen.naming import entry_point_name as entry_point_name
from hardboiled.codegen.naming import is_entry_point_name as is_entry_point_name
from hardboiled.codegen.naming import raw_entry_point as raw_entry_point
from hardboiled.ir.buffers import discover_buffers, scalar_params
from hardboiled.support.diagnostics import Diagnostic, HardboiledError


@dataclass(frozen=True, slots=True)
class KernelArgument:
    buffer: str
    type: ir.Type
    dimensions: int
    output: bool = False
    """Whether the pipeline writes it (the dump's checks say so)."""
    scalar: bool = False
    """A scalar param of the pipeline (a ``Param``), passed by value;
    ``buffer`` is then its name and ``dimensions`` 0."""


def kernel_signature(stmt: ir.Stmt, order: Sequence[str] | None = None) -> list[KernelArgument]:
    """The pipeline buffers and scalar params the generated function
    takes: in ``order`` (their names, Halide's argument order) when given,
    else inputs (buffers and scalars) then outputs, each sorted by name."""
    args = {name: KernelArgument(name, t, 0, scalar=True) for name, t in scalar_params(stmt).items()}
    for name, spec in discover_buffers(stmt).items():
        if spec.type is None or spec.dimensions is None:
            raise HardboiledError(Diagnostic(
                "error", f"cannot tell the type and dimensions of buffer '{name}' from the IR"))
        args[name] = KernelArgument(name, spec.type, spec.dimensions, spec.output)
    if order is None:
        return sorted(args.values(), key=lambda a: (a.output, a.buffer))
    known = ", ".join(sorted(args)) or "none"
    unknown = [name for name in order if name not in args]
    if unknown:
        raise HardboiledError(Diagnostic(
            "error", f"argument '{unknown[0]}' is not a buffer or param of this pipeline (its arguments: {known})"))
    repeated = sorted({name for name in order if list(order).count(name) > 1})
    missing = sorted(set(args) - set(order))
    if repeated or missing:
        problem = f"names '{repeated[0]}' twice" if repeated else f"leaves out '{missing[0]}'"
        raise HardboiledError(Diagnostic(
            "error", f"the argument order {problem}: list each of the pipeline's buffers and params once ({known})"))
    return [args[name] for name in order]


HALIDE_TYPE_CODES = {ir.TypeCode.INT: 0, ir.TypeCode.UINT: 1, ir.TypeCode.FLOAT: 2, ir.TypeCode.HANDLE: 3,
                     ir.TypeCode.BFLOAT: 4}
"""halide_type_code_t (HalideRuntime.h)."""

HALIDE_BUFFER_FLAGS = {"host_dirty": 1, "device_dirty": 2}
"""halide_buffer_flags (HalideRuntime.h)."""

HALIDE_ERROR_CODES = {
    "success": 0, "generic_error": -1, "explicit_bounds_too_small": -2, "bad_type": -3,
    "access_out_of_bounds": -4, "buffer_allocation_too_large": -5, "buffer_extents_too_large": -6,
    "constraints_make_required_region_smaller": -7, "constraint_violated": -8, "param_too_small": -9,
    "param_too_large": -10, "out_of_memory": -11, "buffer_argument_is_null": -12,
    "device_malloc_failed": -16, "no_device_interface": -19, "device_run_failed": -23,
    "unaligned_host_ptr": -24, "bad_fold": -25, "fold_factor_too_small": -26, "requirement_failed": -27,
    "buffer_extents_negative": -28, "specialize_fail": -31, "host_is_null": -34,
    "device_interface_no_device": -36, "host_and_device_dirty": -37, "bad_dimensions": -43,
    "device_dirty_with_no_device_support": -44, "storage_bound_too_small": -45,
    "split_factor_not_positive": -46,
}
"""The halide_error_code_t values (HalideRuntime.h) the generated entry
points return; tests check them against the halide package's header."""


RAW_FAILURES = {-200000: "out_of_memory", -200001: "buffer_extents_too_large",
                -200002: "buffer_allocation_too_large", -200003: "amx_unavailable",
                -200004: "buffer_extents_negative"}
"""NAME_raw's own failures, beside -N for the dump's N-th check: an
allocation that failed; a buffer argument whose elements lie further apart
than int32 index arithmetic reaches; an allocation of more than 2^31 - 1
bytes; a buffer argument with a negative extent; AMX code built natively on a CPU (or a kernel) that grants no AMX
tiles. NAME returns ``halide_error_code`` of each name: the
halide_error_code_t of that name, or generic_error for amx_unavailable,
which Halide has no code for."""
RAW_STATUS = {name: status for status, name in RAW_FAILURES.items()}


def halide_error_code(message_call: str) -> int:
    """The halide_error_code_t Halide's runtime returns for a failed check
    whose message is a call of ``message_call`` (``halide_error_bad_type``
    gives bad_type; ``halide_error_param_too_small_i64`` param_too_small);
    generic_error for a check Halide reports some other way."""
    name = message_call.removeprefix("halide_error_")
    matches = [key for key in HALIDE_ERROR_CODES if name == key or name.startswith(key + "_")]
    return HALIDE_ERROR_CODES[max(matches, key=len)] if matches else HALIDE_ERROR_CODES["generic_error"]
