"""The interpreter's expressions, each made once into a Python closure that
computes its value.

The interpreter (interp.py) evaluates an expression every time its
statement runs: once per batch of a loop's iterations, once per iteration
of a serial loop. Walking the tree each time cost a dispatch on the node's
type, a method call and the reads of its fields per node per evaluation,
as much again as the numpy call the node stands for. A closure made once
holds its children's closures, its constants as read-only arrays and what
it looks up by name (an operator's numpy function, a call's handler), and
pays only for the numpy work.

``code_of(e)`` is a function of the interpreter: its values by name
(``interp.env``), how many iterations run together (``interp.batch``), its
memory (``interp.pointer_of``, ``interp.check_access``, which a subclass
may change) and its ``eval`` (for the calls computed from their
expression). Arithmetic on constants is computed once, when it is made
into code (``_folded``). An error a node raises (an unknown call, a name
with no value, a type with no dtype) is raised when the node is evaluated,
as before, never when it is made into code: a branch that never runs
cannot fail.

This module is the interpreter's one definition of what each kind of
expression computes (Halide's semantics, see interp.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hardboiled import ir
from hardboiled.support.memo import by_identity
from hardboiled.verify.calls import EXPRESSION_HANDLERS, PER_ITERATION_CALLS, VALUE_HANDLERS, unknown_call
from hardboiled.verify.fragments import wmma_call
from hardboiled.verify.tiles import AMX_CALLS
from hardboiled.verify.values import BufferT, NonUniform, Pointer, Value, binary, cast_array, dtype_of, fail, lanes

Code = Callable[[Any], Value]
"""An expression's value, given the interpreter that evaluates it."""

MISSING = object()
"""What an environment holds for a name it does not bind."""

CALLS = {**VALUE_HANDLERS, **AMX_CALLS}
"""The calls computed from their arguments' values, by name: the Halide
calls of ir/operations.py (calls.py) and the AMX tile operations."""


@by_identity(size=1 << 14)
def code_of(e: ir.Expr) -> Code:
    """``e``'s closure, made once for every interpreter that evaluates it
    (a verification runs each program once per layout it tries)."""
    return _code(e)


def _code(e: ir.Expr) -> Code:
    make = _MAKERS.get(type(e))
    if make is None:
        def unknown(interp: Any) -> Value:
            raise fail(f"the interpreter does not evaluate {type(e).__name__} expressions")
        return unknown
    try:
        return make(e)
    except RecursionError:
        raise
    except Exception as exc:  # a node that cannot be made into code (a type with no dtype): it fails when evaluated
        failure = exc

        def failing(interp: Any) -> Value:
            raise failure
        return failing


def _constant(value: np.ndarray) -> Code:
    value.flags.writeable = False  # shared by every evaluation: nothing may change it

    def constant(interp: Any) -> Value:
        return value
    constant.constant = True  # type: ignore[attr-defined]
    return constant


class _NoInterpreter:
    """What a constant's code is computed with: no iterations run together,
    and nothing else (a node that reads more is not folded)."""

    batch = None


_NO_INTERPRETER = _NoInterpreter()


def _folded(code: Code, *operands: Code) -> Code:
    """``code`` computed once, now, when its operands are constants (a
    broadcast of a literal, a ramp of literals, arithmetic on them): a
    constant too. Where computing it fails, ``code`` is kept, and fails
    when it is evaluated, as it would have."""
    if not all(getattr(operand, "constant", False) for operand in operands):
        return code
    try:
        with np.errstate(all="ignore"):  # as the interpreter runs (interp.py ``run``)
            value = code(_NO_INTERPRETER)
    except Exception:
        return code
    return _constant(value) if type(value) is np.ndarray and value.dtype.kind != "O" else code


def _int_imm(e: ir.IntImm | ir.UIntImm) -> Code:
    return _constant(np.array([e.value], dtype=dtype_of(e.type)))


def _float_imm(e: ir.FloatImm) -> Code:
    return _constant(np.array([e.value], dtype=np.float64).astype(dtype_of(e.type)))


def _string_imm(e: ir.StringImm) -> Code:
    text = e.value

    def string(interp: Any) -> Value:
        return text
    return string


def _variable(e: ir.Variable) -> Code:
    name = e.name

    def variable(interp: Any) -> Value:
        value = interp.env.values.get(name, MISSING)
        if value is MISSING:
            raise fail(f"'{name}' has no value: pass it with --param {name}=VALUE")
        return value
    return variable


def _cast(e: ir.Cast) -> Code:
    value, t = _code(e.value), e.type
    if t.is_handle:
        return value

    def cast(interp: Any) -> Value:
        return cast_array(np.asarray(value(interp)), t)
    return _folded(cast, value)


def _reinterpret(e: ir.Reinterpret) -> Code:
    operand, t = _code(e.value), e.type
    if t.is_handle:
        return operand
    dtype = dtype_of(t)

    def reinterpret(interp: Any) -> Value:
        value = operand(interp)
        if isinstance(value, (BufferT, Pointer)):
            return np.array([1], dtype=dtype)  # a non-null address
        if isinstance(value, np.ndarray) and value.dtype == object:
            # A handle reinterpreted as an integer: null or not.
            return np.array([0 if v is None else 1 for v in value], dtype=dtype)
        return np.ascontiguousarray(value).view(dtype)
    return reinterpret


def _binary(e: ir.Binary) -> Code:
    left, right, op = _code(e.a), _code(e.b), e.op

    def binary_operation(interp: Any) -> Value:
        a, b = left(interp), right(interp)
        if type(a) is np.ndarray and type(b) is np.ndarray and a.dtype.kind != "O" and b.dtype.kind != "O":
            return binary(op, a, b)  # numbers (the common case, checked first)
        if isinstance(a, np.ndarray) and a.dtype == object or isinstance(b, np.ndarray) and b.dtype == object:
            return _handle_compare(op, a, b)
        if isinstance(a, Pointer) or isinstance(b, Pointer):
            return _handle_compare(op, a, b)
        return binary(op, a, b)
    return _folded(binary_operation, left, right)


def _handle_compare(op: ir.BinOp, a: Value, b: Value) -> Value:
    """Handles compare only as null or not."""
    if op is ir.BinOp.EQ:
        return np.array([_is_null(a) == _is_null(b)])
    if op is ir.BinOp.NE:
        return np.array([_is_null(a) != _is_null(b)])
    raise fail(f"cannot apply {op.value} to handles")


def _is_null(v: Value) -> bool:
    if isinstance(v, Pointer):
        return False
    if isinstance(v, np.ndarray):
        return v.dtype != object and not bool(np.any(v))
    return v is None


def _not(e: ir.Not) -> Code:
    operand = _code(e.value)

    def logical_not(interp: Any) -> Value:
        return np.logical_not(operand(interp))
    return _folded(logical_not, operand)


def _select(e: ir.Select) -> Code:
    condition, when_true, when_false = _code(e.condition), _code(e.true_value), _code(e.false_value)

    def select(interp: Any) -> Value:
        cond = condition(interp)
        t, f = when_true(interp), when_false(interp)
        chosen: Any = np.where(cond, t, f)  # lane-wise (np.where of three arguments)
        return chosen.astype(t.dtype, copy=False)
    return _folded(select, condition, when_true, when_false)


def _load(e: ir.Load) -> Code:
    name, dtype, index_code = e.name, dtype_of(e.type), _code(e.index)
    if e.predicate is not None:
        return _predicated_load(e, index_code)

    def load(interp: Any) -> Value:
        pointer = interp.pointer_of(name)
        index = index_code(interp).astype(np.int64, copy=False) + pointer.offset
        interp.check_access(pointer, index, name, None)
        if pointer.defined is not None:
            pointer.defined.read(name, index, pointer.offset)
        return _as_loaded(pointer.array[index], dtype, name)
    return load


def _predicated_load(e: ir.Load, index_code: Code) -> Code:
    assert e.predicate is not None
    name, dtype, predicate = e.name, dtype_of(e.type), _code(e.predicate)

    def predicated_load(interp: Any) -> Value:
        pointer = interp.pointer_of(name)
        offsets = index_code(interp).astype(np.int64, copy=False) + pointer.offset
        lanes_kept = predicate(interp)
        shape = np.broadcast_shapes(offsets.shape, np.shape(lanes_kept))
        index, mask = np.broadcast_to(offsets, shape), np.broadcast_to(lanes_kept, shape)
        interp.check_access(pointer, index, name, mask)
        out = np.zeros(shape, dtype=dtype)
        if pointer.defined is not None:
            pointer.defined.read(name, index[mask], np.broadcast_to(pointer.offset, shape)[mask])
        out[mask] = _as_loaded(pointer.array[index[mask]], dtype, name)
        return out
    return predicated_load


def _as_loaded(values: np.ndarray, dtype: np.dtype, name: str) -> np.ndarray:
    """Elements read from memory as the load's type: the same bits when the
    sizes agree (Halide reinterprets), an error otherwise."""
    if values.dtype == dtype or dtype.kind == "O":
        return values
    if values.dtype.itemsize != dtype.itemsize:
        raise fail(f"load of {dtype} from '{name}', which holds {values.dtype}")
    return values.view(dtype)


def _ramp(e: ir.Ramp) -> Code:
    base_code, stride_code, count = _code(e.base), _code(e.stride), e.lanes

    def ramp(interp: Any) -> Value:
        base, stride = base_code(interp), stride_code(interp)
        steps = np.arange(count).astype(base.dtype)
        lanes_of = base[..., None, :] + steps[:, None] * stride[..., None, :]
        return lanes_of.astype(base.dtype, copy=False).reshape(*lanes_of.shape[:-2], -1)
    return _folded(ramp, base_code, stride_code)


def _broadcast(e: ir.Broadcast) -> Code:
    operand, count = _code(e.value), e.lanes

    def broadcast(interp: Any) -> Value:
        value = operand(interp)
        return np.tile(value, (1,) * (value.ndim - 1) + (count,))
    return _folded(broadcast, operand)


def _let(e: ir.Let) -> Code:
    name, value_code, body = e.name, _code(e.value), _code(e.body)

    def let(interp: Any) -> Value:
        env = interp.env
        previous = env.bind(name, value_code(interp))
        try:
            return body(interp)
        finally:
            env.restore(name, previous)
    return let


def _shuffle(e: ir.Shuffle) -> Code:
    vectors = [_code(v) for v in e.vectors]
    indices = np.array(e.indices, dtype=np.int64)

    def shuffle(interp: Any) -> Value:
        parts = [vector(interp) for vector in vectors]
        if interp.batch is not None and any(p.ndim == 2 for p in parts):
            parts = [np.broadcast_to(p, (interp.batch, lanes(p))) for p in parts]
        joined = np.concatenate(parts, axis=-1)
        return joined[..., indices]
    return _folded(shuffle, *vectors)


def _vector_reduce(e: ir.VectorReduce) -> Code:
    operand, op, count, dtype = _code(e.value), e.op, e.type.lanes, dtype_of(e.type)

    def vector_reduce(interp: Any) -> Value:
        value = operand(interp)
        return _reduce(op, value.reshape(*value.shape[:-1], count, -1), dtype)
    return _folded(vector_reduce, operand)


def _reduce(op: ir.ReduceOp, groups: np.ndarray, dtype: np.dtype) -> Value:
    """Each group of lanes (the last axis) reduced by ``op`` to ``dtype``."""
    if op is ir.ReduceOp.ADD:
        return _reduce_add(groups).astype(dtype, copy=False)
    if op is ir.ReduceOp.MUL:
        out = groups[..., 0]
        for j in range(1, groups.shape[-1]):
            out = binary(ir.BinOp.MUL, out, groups[..., j])
        return out
    if op is ir.ReduceOp.MIN:
        return groups.min(axis=-1)
    if op is ir.ReduceOp.MAX:
        return groups.max(axis=-1)
    if op is ir.ReduceOp.AND:
        return groups.all(axis=-1)
    if op is ir.ReduceOp.OR:
        return groups.any(axis=-1)
    info = np.iinfo(dtype)
    return np.clip(groups.astype(np.int64, copy=False).sum(axis=-1), info.min, info.max).astype(dtype, copy=False)


def _reduce_add(groups: np.ndarray) -> np.ndarray:
    """Lane-group sums in the element type, left to right (Halide's order)."""
    if np.issubdtype(groups.dtype, np.integer):
        return groups.astype(np.int64, copy=False).sum(axis=-1).astype(groups.dtype, copy=False)
    # A running sum (accumulate adds one lane at a time, rounding each
    # partial sum to the element type; ``sum`` would add pairwise), of
    # which the last is the group's.
    sums: np.ndarray = np.add.accumulate(groups, axis=-1)
    return sums[..., -1]


def _call(e: ir.Call) -> Code:
    by_expression = EXPRESSION_HANDLERS.get(e.name)
    if by_expression is not None:
        def computed_from_expression(interp: Any) -> Value:
            return by_expression(e, interp.eval)
        return computed_from_expression
    handler = CALLS.get(e.name)
    if handler is None and ir.is_wmma_call(e):
        handler = wmma_call
    if handler is None:
        def unknown(interp: Any) -> Value:
            raise unknown_call(e)
        return unknown
    per_iteration = e.name in PER_ITERATION_CALLS or e.name in AMX_CALLS
    arguments = [_code(a) for a in e.args]
    known = handler

    def call(interp: Any) -> Value:
        if per_iteration and interp.batch is not None:
            raise NonUniform()  # memory or tiles of each iteration's own: one by one
        return known(e, [argument(interp) for argument in arguments])
    return call


_MAKERS: dict[type, Callable[[Any], Code]] = {
    ir.IntImm: _int_imm, ir.UIntImm: _int_imm, ir.FloatImm: _float_imm, ir.StringImm: _string_imm,
    ir.Variable: _variable, ir.Cast: _cast, ir.Reinterpret: _reinterpret, ir.Binary: _binary, ir.Not: _not,
    ir.Select: _select, ir.Load: _load, ir.Ramp: _ramp, ir.Broadcast: _broadcast, ir.Let: _let,
    ir.Shuffle: _shuffle, ir.VectorReduce: _vector_reduce, ir.Call: _call,
}
"""How each kind of expression is made into code, by the node's class."""


__all__ = ["MISSING", "Code", "code_of"]
