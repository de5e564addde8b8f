"""The Halide calls of ir/operations.py, as the reference interpreter
evaluates them.

The table names each call's evaluation (``operations.Evaluation``) and, where
one numpy function computes it, that function by name; this module is where
those names become numpy code (the ir package does not import numpy). Most
calls are computed from their arguments' values (``VALUE_HANDLERS``); a
call that stands for other IR (mux, if_then_else, strict_add), or whose
arguments are not the interpreter's to build (halide_print's text), is
computed from its expression instead (``EXPRESSION_HANDLERS``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hardboiled import ir
from hardboiled.ir import operations
from hardboiled.ir.operations import Evaluation, Operation
from hardboiled.verify.values import (
    BufferT,
    InterpreterError,
    Pointer,
    Value,
    as_int,
    binary,
    dtype_of,
    fail,
    new_array,
)

ValueHandler = Callable[[ir.Call, list[Value]], Value]
"""Computes a call from the values of its arguments, in order."""

ExpressionHandler = Callable[[ir.Call, Callable[[ir.Expr], Value]], Value]
"""Computes a call from the call itself, with the interpreter's ``eval``."""


def _buffer_of(value: Value) -> BufferT:
    if isinstance(value, BufferT):
        return value
    raise fail("expected a halide_buffer_t")


def _int32(v: int) -> Value:
    return np.array([v], dtype=np.int32)


def _dimension(args: list[Value], field: str) -> int:
    """``field`` (mins, extents or strides) of dimension args[1] of the buffer args[0]."""
    buffer, d = _buffer_of(args[0]), as_int(args[1])
    values = getattr(buffer, field)
    if not 0 <= d < len(values):
        raise fail(f"the program asks for dimension {d} of buffer '{buffer.name}', which has {len(values)}")
    return int(values[d])


def _packed_type(t: ir.Type) -> int:
    """``t`` as a packed halide_type_t: code, bits << 8, one lane << 16."""
    code = {ir.TypeCode.INT: 0, ir.TypeCode.UINT: 1, ir.TypeCode.FLOAT: 2, ir.TypeCode.HANDLE: 3,
            ir.TypeCode.BFLOAT: 4}[t.code]
    return code | (t.bits << 8) | (1 << 16)


def _buffer_description(call: ir.Call, args: list[Value]) -> Value:
    """A BufferT over the host memory args[2], of the type args[5] (code),
    args[6] (bits), with args[7] dimensions whose min, extent, stride and
    flags are args[8] (a make_struct), in that order."""
    code, bits, dims, shape = as_int(args[5]), as_int(args[6]), as_int(args[7]), args[8]
    host = args[2]
    data = host.array if isinstance(host, Pointer) else np.zeros(0, dtype=np.uint8)
    fields = [tuple(int(shape[4 * d + f]) for d in range(dims)) for f in range(3)]
    element = ir.type_from_packed_halide_type(code | (bits << 8) | (1 << 16))
    if element is None:
        raise fail(f"{call.name} of an unknown type (code {code}, {bits} bits)")
    return BufferT("", element, data, fields[0], fields[1], fields[2])


_EXTRA_FUNCTIONS = {"rsqrt": lambda x: 1.0 / np.sqrt(x)}
"""Functions the table names that numpy has under no name."""


def _float_function(operation: Operation) -> ValueHandler:
    """The function of the arguments in float64, rounded once to the call's
    type (a float16 call: Halide computes in float32, which rounds to the
    same float16 but in rare double-rounding ties)."""
    assert operation.numpy is not None
    function = _EXTRA_FUNCTIONS.get(operation.numpy) or getattr(np, operation.numpy)

    def evaluate(call: ir.Call, args: list[Value]) -> Value:
        with np.errstate(all="ignore"):  # NaN and inf as the C library gives them
            return function(*(a.astype(np.float64, copy=False) for a in args)).astype(dtype_of(call.type), copy=False)

    return evaluate


def _integer_function(operation: Operation) -> ValueHandler:
    assert operation.numpy is not None
    function = getattr(np, operation.numpy)
    return lambda call, args: function(*args)


def _shift(operation: Operation) -> ValueHandler:
    assert operation.numpy is not None
    function = getattr(np, operation.numpy)
    return lambda call, args: function(args[0], args[1].astype(args[0].dtype, copy=False))


def _magnitude(call: ir.Call, args: list[Value]) -> Value:
    wide = np.float64 if np.issubdtype(args[0].dtype, np.floating) else np.int64
    return np.abs(args[0].astype(wide, copy=False)).astype(dtype_of(call.type), copy=False)


def _widening_product(call: ir.Call, args: list[Value]) -> Value:
    wide = dtype_of(call.type)
    return np.multiply(args[0].astype(wide, copy=False), args[1].astype(wide, copy=False))


_BY_VALUES: dict[Evaluation, Callable[[Operation], ValueHandler]] = {
    Evaluation.FIRST_ARGUMENT: lambda _: lambda call, args: args[0],
    Evaluation.SECOND_ARGUMENT: lambda _: lambda call, args: args[1],
    Evaluation.FLOAT_FUNCTION: _float_function,
    Evaluation.INTEGER_FUNCTION: _integer_function,
    Evaluation.SHIFT: _shift,
    Evaluation.MAGNITUDE: lambda _: _magnitude,
    Evaluation.WIDENING_PRODUCT: lambda _: _widening_product,
    Evaluation.PRODUCT_THEN_SUM: lambda _: lambda call, args: binary(
        ir.BinOp.ADD, binary(ir.BinOp.MUL, args[0], args[1]), args[2]),
    Evaluation.ZERO: lambda _: lambda call, args: _int32(0),
    Evaluation.FALSE: lambda _: lambda call, args: np.array([False]),
    Evaluation.STRUCT: lambda _: lambda call, args: np.array([as_int(a) for a in args], dtype=np.int64),
    Evaluation.STACK_BYTES: lambda _: lambda call, args: Pointer(
        new_array(as_int(args[0]), np.uint8, call.name), 0, call.name),
    Evaluation.BUFFER_HOST: lambda _: lambda call, args: _buffer_of(args[0]).host,
    Evaluation.BUFFER_TYPE: lambda _: lambda call, args: np.array(
        [_packed_type(_buffer_of(args[0]).type)], dtype=np.uint32),
    Evaluation.BUFFER_DIMENSIONS: lambda _: lambda call, args: _int32(len(_buffer_of(args[0]).extents)),
    Evaluation.BUFFER_MIN: lambda _: lambda call, args: _int32(_dimension(args, "mins")),
    Evaluation.BUFFER_EXTENT: lambda _: lambda call, args: _int32(_dimension(args, "extents")),
    Evaluation.BUFFER_STRIDE: lambda _: lambda call, args: _int32(_dimension(args, "strides")),
    Evaluation.BUFFER_DESCRIPTION: lambda _: _buffer_description,
}
"""The code of each evaluation computed from argument values, given the entry."""


def _equivalent(call: ir.Call, evaluate: Callable[[ir.Expr], Value]) -> Value:
    equivalent = operations.equivalent_ir(call)
    assert equivalent is not None
    return evaluate(equivalent)


_BY_EXPRESSION: dict[Evaluation, ExpressionHandler] = {
    Evaluation.EQUIVALENT_IR: _equivalent,
    Evaluation.ZERO_IGNORING_ARGUMENTS: lambda call, evaluate: np.zeros(call.type.lanes, dtype=dtype_of(call.type)),
}
"""The code of each evaluation computed from the call's expression."""

assert not _BY_VALUES.keys() & _BY_EXPRESSION.keys() and set(Evaluation) == _BY_VALUES.keys() | _BY_EXPRESSION.keys()

VALUE_HANDLERS: dict[str, ValueHandler] = {
    operation.name: _BY_VALUES[operation.evaluation](operation)
    for operation in operations.OPERATIONS if operation.evaluation in _BY_VALUES}
"""Every call of the table computed from its arguments' values, by name."""

EXPRESSION_HANDLERS: dict[str, ExpressionHandler] = {
    operation.name: _BY_EXPRESSION[operation.evaluation]
    for operation in operations.OPERATIONS if operation.evaluation in _BY_EXPRESSION}
"""Every call of the table computed from its expression, by name."""

_PER_ITERATION = frozenset({Evaluation.STACK_BYTES, Evaluation.BUFFER_DESCRIPTION})
"""Evaluations that make memory or a buffer from their arguments, which
iterations run together would share: each iteration runs them on its own."""

PER_ITERATION_CALLS = frozenset(
    operation.name for operation in operations.OPERATIONS if operation.evaluation in _PER_ITERATION)
"""The calls a batched loop (interp.py) runs iteration by iteration; every
other handler here computes lane by lane, so it takes values with a row per
iteration as they are."""


def unknown_call(e: ir.Call) -> InterpreterError:
    """What to say of a call the interpreter has no code for: for a buffer
    Halide describes to pass to an extern stage, what that means."""
    operation = operations.find(e.name)
    notes: tuple[str, ...] = ()
    if operation is not None and operation.kind is operations.Kind.BUFFER_DESCRIPTION:
        notes = ("the pipeline describes a buffer for Halide's runtime, to call an extern stage "
                 "(define_extern): neither the interpreter nor generated code has buffer objects to pass; "
                 "compile it without --verify and --run, or tensorize the stages around the extern stage as "
                 "pipelines of their own",)
    return fail(f"the interpreter does not know the call '{e.name}'", notes)


__all__ = ["EXPRESSION_HANDLERS", "PER_ITERATION_CALLS", "VALUE_HANDLERS", "ExpressionHandler", "ValueHandler",
           "unknown_call"]
