"""What the reference interpreter computes with: values of Halide's types
and Halide's arithmetic on them.

A value is a 1-D numpy array (a scalar has one lane) of the dtype that holds
its Halide type (``dtype_of``; float16 and bfloat16 are stored and rounded as
such, through ml_dtypes); a handle is a ``Pointer``, a ``halide_buffer_t`` a
``BufferT``. Where the interpreter runs the iterations of a loop together
(interp.py, "batched"), a value that differs between them is a 2-D array,
one row per iteration, lanes along the last axis; numpy's broadcasting
combines it with the 1-D values every iteration shares. ``binary`` and ``cast_array`` are Halide's operators: integer
arithmetic wraps, integer division rounds down with a remainder that is never
negative, and x / 0 == x % 0 == 0. The interpreter (interp.py) and the calls
it evaluates (calls.py) share them.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from hardboiled import ir
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError

Value = Any
"""A numpy array, a ``Pointer``, a ``BufferT`` or a string (a StringImm)."""


class InterpreterError(HardboiledError):
    """The program cannot be run: an unsupported construct, a failed assert,
    an out-of-bounds access."""


class NonUniform(Exception):
    """A value needed as one number (a loop bound, a size, an offset) differs
    between the iterations the interpreter runs together: the statement
    that asked runs again iteration by iteration (interp.py). Not an
    InterpreterError: nothing is wrong with the program."""


class ResourceLimitError(InterpreterError):
    """The program needs more memory or time than the interpreter gives it."""

    exit_code = ExitCode.RESOURCE_LIMIT


MAX_ALLOCATION_BYTES = 1 << 30
"""The largest buffer the interpreter allocates (inputs, outputs and the
program's own allocations): verification runs on small random inputs, so a
bigger one is a wrong size, not a real need."""


def new_array(size: int, dtype: Any, name: str) -> np.ndarray:
    """A zeroed buffer of ``size`` elements, within ``MAX_ALLOCATION_BYTES``
    (the program's own allocations: its inputs are bounded when they are
    made, verify/compare.py ``MAX_BUFFER_ELEMENTS``)."""
    if size < 0:
        raise fail(f"the program allocates '{name}' with a negative size ({size} elements)")
    if size * np.dtype(dtype).itemsize > MAX_ALLOCATION_BYTES:
        raise ResourceLimitError(Diagnostic(
            "error", f"'{name}' needs {size} elements, more than the interpreter's {MAX_ALLOCATION_BYTES >> 20} MiB "
            "per buffer", notes=("--param sets smaller buffer sizes",)))
    return np.zeros(size, dtype=dtype)


def garbage(size: int, dtype: Any, seed: int, name: str) -> np.ndarray:
    """Contents of memory nobody has written: random values, different for
    each seed and allocation name (finite, so that a read the program
    discards stays harmless), so that two programs that read it differ."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size, endpoint=True, dtype=np.int64 if info.min < 0 else np.uint64
                            ).astype(dtype)
    return (rng.standard_normal(size) * 1000).astype(dtype)


def fail(message: str, notes: tuple[str, ...] = ()) -> InterpreterError:
    """The error to raise when the program cannot go on (``raise fail(...)``)."""
    return InterpreterError(Diagnostic("error", message, notes=notes))


DTYPES = {
    (ir.TypeCode.INT, 8): np.int8, (ir.TypeCode.INT, 16): np.int16,
    (ir.TypeCode.INT, 32): np.int32, (ir.TypeCode.INT, 64): np.int64,
    (ir.TypeCode.UINT, 1): np.bool_, (ir.TypeCode.UINT, 8): np.uint8,
    (ir.TypeCode.UINT, 16): np.uint16, (ir.TypeCode.UINT, 32): np.uint32,
    (ir.TypeCode.UINT, 64): np.uint64,
    (ir.TypeCode.FLOAT, 16): np.float16, (ir.TypeCode.FLOAT, 32): np.float32,
    (ir.TypeCode.FLOAT, 64): np.float64,
    (ir.TypeCode.BFLOAT, 16): ml_dtypes.bfloat16,
}
"""The numpy dtype that holds each Halide element type, (code, bits)."""


_DTYPE_OBJECTS = {(code.value, bits): np.dtype(scalar) for (code, bits), scalar in DTYPES.items()}
"""DTYPES as dtype objects, by the code's value: an enum member hashes in
Python, a string in C (the interpreter asks millions of times)."""
_HANDLE = np.dtype(object)


def dtype_of(t: ir.Type) -> np.dtype:
    """The dtype of ``t``'s lanes; handles are Python objects."""
    if t.code is ir.TypeCode.HANDLE:
        return _HANDLE
    return _DTYPE_OBJECTS[(t.code._value_, t.bits)]


@dataclass
class Definedness:
    """Which elements of an allocation the program has written, and the log
    (shared by an interpreter's allocations) of reads of the others."""

    written: np.ndarray
    """One bool per element of the allocation's array."""
    reads: list[str]
    """'NAME element I' for the first undefined read of each allocation."""

    def write(self, index: np.ndarray) -> None:
        self.written[index] = True

    def read(self, name: str, index: np.ndarray, offset: Any = 0) -> None:
        """Log a read of the elements ``index`` of the array; ``offset``
        (where the reading iteration's own allocation starts in it) is
        taken off the element the log names."""
        undefined = ~self.written[index]
        if undefined.any() and not any(r.startswith(f"'{name}' ") for r in self.reads):
            relative = np.broadcast_to(np.asarray(index) - offset, undefined.shape)
            self.reads.append(f"'{name}' element {int(relative[undefined].reshape(-1)[0])}")


@dataclass
class Pointer:
    """A handle: an array of elements and an element offset into it."""

    array: np.ndarray
    offset: Any = 0
    """An int; for an allocation made once per iteration of a batched loop,
    an int64 column (one row per iteration) of where each iteration's own
    ``row_size`` elements start in ``array``."""
    name: str = ""
    defined: Definedness | None = None
    """For an allocation of the program's own, when the interpreter tracks
    what is written (``poison_seed``): reads of unwritten elements are logged."""
    row_size: int | None = None
    """The elements each iteration may reach from its offset (a batched
    allocation); None: the whole array."""

    def outside(self, index: np.ndarray) -> bool:
        """Whether any of the element indices ``index`` (offset included,
        rows aligned with ``offset``'s) is past what the pointer reaches."""
        if not index.size:
            return False
        if self.row_size is None:
            return bool(index.min() < 0 or index.max() >= self.array.size)
        relative = index - self.offset
        return bool(relative.min() < 0 or relative.max() >= self.row_size)


@dataclass
class BufferT:
    """A ``halide_buffer_t``: what ``X.buffer`` points to."""

    name: str
    type: ir.Type
    data: np.ndarray
    """Flat element storage; element (i0, i1, ...) is at sum((i_d - min_d) * stride_d)."""
    mins: tuple[int, ...]
    extents: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def host(self) -> Pointer:
        return Pointer(self.data, 0, self.name)


def as_int(value: Value) -> int:
    """A one-lane value as a Python int (an index, a size, a dimension);
    NonUniform if it is batched and its iterations' values differ."""
    array = np.asarray(value)
    if array.dtype == object:  # a buffer or a pointer where a number belongs (a mangled input)
        what = {"BufferT": "a buffer", "Pointer": "a pointer"}.get(type(value).__name__, type(value).__name__)
        raise fail(f"expected an integer, got {what}")
    if array.ndim == 2 and array.shape[-1] == 1:
        if array.shape[0] > 1 and not bool((array == array[0]).all()):
            raise NonUniform()
        return int(array[0, 0])
    if array.size != 1:
        raise fail(f"expected a scalar, got {array.size} lanes")
    return int(array.reshape(-1)[0])


def row_ints(value: Value) -> Any:
    """A one-lane value as an int, or, batched, an int64 column of one per
    iteration (an offset each iteration computes its own)."""
    array = np.asarray(value)
    if array.ndim == 2 and array.shape[-1] == 1:
        return array.astype(np.int64)
    return as_int(array)


def lanes(value: np.ndarray) -> int:
    """How many lanes a value has, batched or not."""
    shape = np.shape(value)
    return int(shape[-1]) if shape else 1


def cast_array(values: np.ndarray, t: ir.Type) -> np.ndarray:
    """Halide's cast: wrap between integers, truncate floats to integers."""
    target = dtype_of(t)
    source = values.dtype
    if target == source:
        return values
    # dtype.kind rather than np.issubdtype (the same answer, without its
    # Python-level work: the interpreter casts millions of times): "i" and
    # "u" are numpy's integers, "f" its floats; bfloat16 is neither.
    if target.kind in "iu" or target == np.bool_:
        if target == np.bool_:
            return values != 0
        if source.kind == "f" or source == ml_dtypes.bfloat16:
            wide = np.trunc(values.astype(np.float64, copy=False))
            wide = np.nan_to_num(wide, nan=0.0, posinf=0.0, neginf=0.0)
            return wide.astype(np.int64, copy=False).astype(target, copy=False)
        return values.astype(np.int64 if source != np.uint64 else np.uint64, copy=False).astype(target, copy=False)
    if source == ml_dtypes.bfloat16 or target == ml_dtypes.bfloat16:
        via = np.float64 if source != np.bool_ else np.float32
        return values.astype(via, copy=False).astype(target, copy=False)
    return values.astype(target, copy=False)


def per_row_pointer(value: Value) -> bool:
    """A pointer to allocations of each row's own (its offset a column);
    one made while the rows ran one by one is the same for all of them."""
    return isinstance(value, Pointer) and isinstance(value.offset, np.ndarray)


def row_of(value: Value, row: int) -> Value:
    """What iteration ``row`` of a batch sees of ``value``."""
    if isinstance(value, np.ndarray) and value.ndim == 2:
        return value[row]
    if per_row_pointer(value):
        return Pointer(value.array, int(value.offset[row, 0]), value.name, value.defined, value.row_size)
    return value


def rows_of(value: Value, rows: np.ndarray) -> Value:
    """What the iterations ``rows`` (indices into the batch) see of ``value``."""
    if isinstance(value, np.ndarray) and value.ndim == 2:
        return value[rows]
    if per_row_pointer(value):
        return Pointer(value.array, value.offset[rows], value.name, value.defined, value.row_size)
    return value


def repeated(value: Value, times: int) -> Value:
    """``value`` for a batch whose every row becomes ``times`` rows (a loop
    nested in a batched one, run batched too)."""
    if isinstance(value, np.ndarray) and value.ndim == 2:
        return np.repeat(value, times, axis=0)
    if per_row_pointer(value):
        return Pointer(value.array, np.repeat(value.offset, times, axis=0), value.name, value.defined,
                       value.row_size)
    return value


def uniform(value: Value) -> bool:
    """Whether every iteration of a batch sees the same ``value``."""
    return not (isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[0] > 1
                and not bool((value == value[0]).all()))


_WRAPPING = {ir.BinOp.ADD: np.add, ir.BinOp.SUB: np.subtract, ir.BinOp.MUL: np.multiply}
"""Arithmetic computed wide and wrapped (or rounded) back to the operands' type."""

_EXACT = {
    ir.BinOp.MIN: np.minimum, ir.BinOp.MAX: np.maximum,
    ir.BinOp.EQ: np.equal, ir.BinOp.NE: np.not_equal, ir.BinOp.LT: np.less, ir.BinOp.LE: np.less_equal,
    ir.BinOp.GT: np.greater, ir.BinOp.GE: np.greater_equal,
    ir.BinOp.AND: np.logical_and, ir.BinOp.OR: np.logical_or,
}
"""Operators whose numpy result is already Halide's."""


_ELEMENTWISE = {**{op._value_: (function, True) for op, function in _WRAPPING.items()},
                **{op._value_: (function, False) for op, function in _EXACT.items()}}
"""Each operator numpy computes in one call, and whether its result is cast
back to the operands' type; by the operator's value (hashed in C)."""


def binary(op: ir.BinOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Halide's ``a op b``, lane by lane (a one-lane operand is broadcast).
    Floating-point exceptions (overflow to inf, NaN) are Halide's results,
    not errors: the interpreter runs with numpy's warnings about them off
    (interp.py ``Interpreter.run``)."""
    a_lanes, b_lanes = a.shape[-1], b.shape[-1]
    if a_lanes != b_lanes and a_lanes != 1 and b_lanes != 1:
        raise fail(f"operands of '{op.value}' have {a_lanes} and {b_lanes} lanes")
    elementwise = _ELEMENTWISE.get(op._value_)
    if elementwise is not None:
        function, wraps = elementwise
        return function(a, b).astype(a.dtype, copy=False) if wraps else function(a, b)
    integer = np.issubdtype(a.dtype, np.integer)
    if op is ir.BinOp.DIV:
        return _euclid_div(a, b) if integer else np.true_divide(a, b).astype(a.dtype, copy=False)
    if integer:
        return _euclid_mod(a, b)
    # Halide computes a - b*floor(a/b) in float32 (or float64) and
    # rounds once to a 16-bit type.
    wide = np.float64 if a.dtype == np.float64 else np.float32
    wa, wb = a.astype(wide, copy=False), b.astype(wide, copy=False)
    return (wa - wb * np.floor(np.true_divide(wa, wb))).astype(a.dtype, copy=False)


def _euclid_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Halide's integer division: the remainder is never negative
    (a == q * b + r with 0 <= r < |b|); division by zero gives zero."""
    if np.issubdtype(a.dtype, np.unsignedinteger):
        return np.where(b == 0, 0, a // np.where(b == 0, 1, b)).astype(a.dtype, copy=False)
    wa, wb = a.astype(np.int64, copy=False), b.astype(np.int64, copy=False)
    safe = np.where(wb == 0, 1, wb)
    q = np.floor_divide(wa, np.abs(safe)) * np.sign(safe)
    return np.where(wb == 0, 0, q).astype(a.dtype, copy=False)


def _euclid_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.unsignedinteger):
        return np.where(b == 0, 0, a % np.where(b == 0, 1, b)).astype(a.dtype, copy=False)
    wa, wb = a.astype(np.int64, copy=False), b.astype(np.int64, copy=False)
    safe = np.where(wb == 0, 1, wb)
    r = np.mod(wa, np.abs(safe))
    return np.where(wb == 0, 0, r).astype(a.dtype, copy=False)


__all__ = ["DTYPES", "MAX_ALLOCATION_BYTES", "BufferT", "InterpreterError", "NonUniform", "Pointer",
           "ResourceLimitError", "Value", "as_int", "binary", "cast_array", "dtype_of", "fail", "lanes", "new_array",
           "per_row_pointer", "repeated", "row_ints", "row_of", "rows_of", "uniform"]
