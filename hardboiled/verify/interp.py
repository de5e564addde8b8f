"""A numpy reference interpreter for Halide IR.

It runs a lowered statement (the vectorizing stage, or what ``compile``
rewrote it into) on concrete buffers, following Halide's semantics:

* integer division rounds down and the remainder is never negative
  (Euclidean, for positive and negative divisors), and x / 0 == x % 0 == 0;
* integer arithmetic wraps; casts between integers wrap, float to integer
  truncates toward zero;
* float16 and bfloat16 values are stored and rounded as such (ml_dtypes);
* every loop kind runs serially; vectors are numpy arrays, nested ramps and
  broadcasts included;
* the AMX tile intrinsics behave as the hardware does: tiles are read and
  written byte by byte at the given byte offsets and strides, B tiles are in
  VNNI order, bf16 products are summed in float32 and int8 dot products in
  int32;
* the WMMA intrinsics (``wmma.load.{a,b,c}``, ``wmma.mma``,
  ``wmma.store.d``) act on whole fragments, as selection produces them
  before the warp-lane post-processing: see ``_wmma_call``.

Values are 1-D numpy arrays (a scalar has one lane); handles are
``Pointer`` objects (values.py). The Halide calls it knows are those of
ir/operations.py, evaluated by calls.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hardboiled import ir
from hardboiled.ir import operations
from hardboiled.ir.visitor import Visitor
from hardboiled.support.diagnostics import Diagnostic
from hardboiled.targets import amx
from hardboiled.verify.calls import EXPRESSION_HANDLERS, VALUE_HANDLERS, ValueHandler
from hardboiled.verify.fragments import fragment_alignment_unchecked, wmma_call
from hardboiled.verify.values import (
    DTYPES,
    BufferT,
    Definedness,
    InterpreterError,
    Pointer,
    ResourceLimitError,
    Value,
    as_int,
    binary,
    cast_array,
    dtype_of,
    fail,
    garbage,
    new_array,
)

INTERPRETER_TIMEOUT_S = 300.0
"""How long one verification may run the interpreter (--verify-timeout):
its inputs are small random buffers, so a run past it is a program that
loops far longer than its sizes justify, or sizes far too large."""

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("interpreter_deadline", default=None)
"""(time.monotonic() past which interpreting stops, the limit in seconds)."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Every interpreter run inside the block (in this thread) stops with a
    ResourceLimitError once ``seconds`` have passed since it began."""
    token = _deadline.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _deadline.reset(token)


def _check_deadline(deadline: tuple[float, float] | None) -> None:
    if deadline is not None and time.monotonic() > deadline[0]:
        raise ResourceLimitError(Diagnostic(
            "error", f"the reference interpreter did not finish within {deadline[1]:g} s",
            notes=("raise the limit with --verify-timeout, or pass smaller sizes with --param",)))


class ProgramAssertFailed(InterpreterError):
    """The program stopped at one of its own asserts (a bounds or size
    check): the buffers it was given are not ones it accepts."""


@dataclass
class _Env:
    values: dict[str, Value] = field(default_factory=dict)

    def bind(self, name: str, value: Value) -> Value:
        previous = self.values.get(name, _MISSING)
        self.values[name] = value
        return previous

    def restore(self, name: str, previous: Value) -> None:
        if previous is _MISSING:
            self.values.pop(name, None)  # a loop that ran no iteration never bound it
        else:
            self.values[name] = previous


_MISSING = object()
_BODY_ONLY = (ir.ProducerConsumer, ir.Atomic, ir.Acquire, ir.HoistedStorage)


def _lanes(value: Value) -> int:
    return len(value)


class Interpreter(Visitor[Any]):
    """Runs statements against an environment of buffers and parameters."""

    def __init__(self, params: dict[str, Value] | None = None, buffers: dict[str, BufferT] | None = None,
                 poison_seed: int | None = None):
        self.poison_seed = poison_seed
        """With a seed, the program's own allocations start as garbage drawn
        from it (values.garbage) and what they have written is tracked:
        ``undefined_reads`` logs reads of the rest. Without, they start as
        zeros, untracked."""
        self.undefined_reads: list[str] = []
        self.env = _Env()
        for name, value in (params or {}).items():
            self.env.values[name] = np.array([value], dtype=np.int32) if isinstance(value, int) else value
        for name, buf in (buffers or {}).items():
            self.env.values[f"{name}.buffer"] = buf
        self.calls: dict[str, ValueHandler] = {**VALUE_HANDLERS, **_AMX_CALLS}
        """The calls computed from their arguments' values, by name: the Halide
        calls of ir/operations.py (calls.py) and the AMX tile operations."""

    # ----------------------------------------------------------- statements
    def run(self, s: ir.Stmt) -> None:
        if isinstance(s, _BODY_ONLY):
            # Markers for other passes (produce/consume, atomic, semaphores,
            # hoisted storage): a serial run just enters the body.
            self.run(s.body)
            return
        self.visit(s)

    def visit_block(self, s: ir.Block) -> None:
        for child in s.stmts:
            self.run(child)

    def visit_no_op(self, s: ir.NoOp) -> None:
        pass

    def visit_let_stmt(self, s: ir.LetStmt) -> None:
        value = self.eval(s.value)
        if isinstance(value, BufferT) and s.name.endswith(".buffer") and value.data.size == 0:
            # A stage computed at root on the GPU: Halide describes its
            # device allocation with a halide_buffer_t and no host memory.
            # The interpreter has one memory: the Allocate of the same name.
            storage = self.env.values.get(s.name[: -len(".buffer")])
            if isinstance(storage, Pointer):
                value = BufferT(s.name[: -len(".buffer")], value.type, storage.array,
                                value.mins, value.extents, value.strides)
        previous = self.env.bind(s.name, value)
        try:
            self.run(s.body)
        finally:
            self.env.restore(s.name, previous)

    def visit_assert_stmt(self, s: ir.AssertStmt) -> None:
        if not bool(np.all(self.eval(s.condition))):
            message = s.message
            text = message.name if isinstance(message, ir.Call) else str(message)
            raise ProgramAssertFailed(Diagnostic("error", f"assertion failed in the program: {text}"))

    def visit_for(self, s: ir.For) -> None:
        if s.kind is ir.ForKind.GPU_LANE and _is_warp_collective(s):
            # The lanes of a warp execute a WMMA operation together, once:
            # run a body that no lane tells apart from another one time.
            self.run(s.body)
            return
        lo, extent = as_int(self.eval(s.min)), as_int(self.eval(s.extent))
        previous = self.env.values.get(s.name, _MISSING)
        deadline = _deadline.get()
        try:
            for i in range(lo, lo + extent):
                _check_deadline(deadline)
                self.env.values[s.name] = np.array([i], dtype=np.int32)
                self.run(s.body)
        finally:
            self.env.restore(s.name, previous)

    def visit_allocate(self, s: ir.Allocate) -> None:
        device_buffer = isinstance(s.body, ir.LetStmt) and s.body.name == f"{s.name}.buffer"
        if (s.condition is not None and not device_buffer
                and not bool(np.all(self.eval(s.condition)))):
            size = 0
        else:
            size = s.type.lanes
            for extent in s.extents:
                size *= as_int(self.eval(extent))
            if s.padding is not None:
                size += as_int(self.eval(s.padding))
        array = new_array(size, dtype_of(s.type.element()), s.name)
        defined = None
        if self.poison_seed is not None:
            array[:] = garbage(size, array.dtype, self.poison_seed, s.name)
            defined = Definedness(np.zeros(size, dtype=np.bool_), self.undefined_reads)
        previous = self.env.bind(s.name, Pointer(array, 0, s.name, defined))
        try:
            self.run(s.body)
        finally:
            self.env.restore(s.name, previous)

    def visit_free(self, s: ir.Free) -> None:
        pass

    def visit_if_then_else(self, s: ir.IfThenElse) -> None:
        if bool(np.all(self.eval(s.condition))):
            self.run(s.then_case)
        elif s.else_case is not None:
            self.run(s.else_case)

    def visit_evaluate(self, s: ir.Evaluate) -> None:
        self.eval(s.value)

    def visit_fork(self, s: ir.Fork) -> None:
        self.run(s.first)
        self.run(s.rest)

    def visit_prefetch(self, s: ir.Prefetch) -> None:
        pass

    def visit_store(self, s: ir.Store) -> None:
        pointer = self._pointer(s.name)
        index = self.eval(s.index).astype(np.int64) + pointer.offset
        value = self.eval(s.value)
        if _lanes(value) == 1 and _lanes(index) > 1:
            value = np.repeat(value, _lanes(index))
        if s.predicate is not None:
            mask = np.broadcast_to(self.eval(s.predicate), index.shape)
            index, value = index[mask], value[mask]
        self._check_bounds(pointer, index, s.name)
        pointer.array[index] = cast_array(value, _array_type(pointer.array, value))
        if pointer.defined is not None:
            pointer.defined.write(index)

    # ----------------------------------------------------------- expressions
    def eval(self, e: ir.Expr) -> Value:
        value: Value = self.visit(e)
        return value

    def visit_default(self, node: Any) -> Any:
        if isinstance(node, ir.Stmt):
            raise fail(f"the interpreter does not run {type(node).__name__} statements")
        raise fail(f"the interpreter does not evaluate {type(node).__name__} expressions")

    def visit_int_imm(self, e: ir.IntImm) -> Value:
        return np.array([e.value], dtype=dtype_of(e.type))

    def visit_uint_imm(self, e: ir.UIntImm) -> Value:
        return np.array([e.value], dtype=dtype_of(e.type))

    def visit_float_imm(self, e: ir.FloatImm) -> Value:
        return np.array([e.value], dtype=np.float64).astype(dtype_of(e.type))

    def visit_string_imm(self, e: ir.StringImm) -> Value:
        return e.value

    def visit_variable(self, e: ir.Variable) -> Value:
        value = self.env.values.get(e.name, _MISSING)
        if value is _MISSING:
            raise fail(f"'{e.name}' has no value: pass it with --param {e.name}=VALUE")
        return value

    def visit_cast(self, e: ir.Cast) -> Value:
        value = self.eval(e.value)
        if e.type.is_handle:
            return value
        return cast_array(np.asarray(value), e.type)

    def visit_reinterpret(self, e: ir.Reinterpret) -> Value:
        value = self.eval(e.value)
        if e.type.is_handle:
            return value
        if isinstance(value, (BufferT, Pointer)):
            return np.array([1], dtype=dtype_of(e.type))  # a non-null address
        if isinstance(value, np.ndarray) and value.dtype == object:
            # A handle reinterpreted as an integer: null or not.
            return np.array([0 if v is None else 1 for v in value], dtype=dtype_of(e.type))
        return value.view(dtype_of(e.type))

    def visit_binary(self, e: ir.Binary) -> Value:
        a, b = self.eval(e.a), self.eval(e.b)
        if isinstance(a, np.ndarray) and a.dtype == object or isinstance(b, np.ndarray) and b.dtype == object:
            return self._handle_compare(e.op, a, b)
        if isinstance(a, Pointer) or isinstance(b, Pointer):
            return self._handle_compare(e.op, a, b)
        return binary(e.op, a, b)

    def _handle_compare(self, op: ir.BinOp, a: Value, b: Value) -> Value:
        def is_null(v: Value) -> bool:
            if isinstance(v, Pointer):
                return False
            if isinstance(v, np.ndarray):
                return v.dtype != object and not bool(np.any(v))
            return v is None
        if op is ir.BinOp.EQ:
            return np.array([is_null(a) == is_null(b)])
        if op is ir.BinOp.NE:
            return np.array([is_null(a) != is_null(b)])
        raise fail(f"cannot apply {op.value} to handles")

    def visit_not(self, e: ir.Not) -> Value:
        return np.logical_not(self.eval(e.value))

    def visit_select(self, e: ir.Select) -> Value:
        cond = self.eval(e.condition)
        t, f = self.eval(e.true_value), self.eval(e.false_value)
        return _where(cond, t, f).astype(t.dtype)

    def visit_load(self, e: ir.Load) -> Value:
        pointer = self._pointer(e.name)
        index = self.eval(e.index).astype(np.int64) + pointer.offset
        dtype = dtype_of(e.type)
        if e.predicate is not None:
            mask = np.broadcast_to(self.eval(e.predicate), index.shape)
            out = np.zeros(index.shape, dtype=dtype)
            self._check_bounds(pointer, index[mask], e.name)
            if pointer.defined is not None:
                pointer.defined.read(e.name, index[mask])
            out[mask] = _as_loaded(pointer.array[index[mask]], dtype, e.name)
            return out
        self._check_bounds(pointer, index, e.name)
        if pointer.defined is not None:
            pointer.defined.read(e.name, index)
        return _as_loaded(pointer.array[index], dtype, e.name)

    def visit_ramp(self, e: ir.Ramp) -> Value:
        base, stride = self.eval(e.base), self.eval(e.stride)
        steps = np.arange(e.lanes).astype(base.dtype)
        return (base[None, :] + steps[:, None] * stride[None, :]).astype(base.dtype).reshape(-1)

    def visit_broadcast(self, e: ir.Broadcast) -> Value:
        return np.tile(self.eval(e.value), e.lanes)

    def visit_let(self, e: ir.Let) -> Value:
        previous = self.env.bind(e.name, self.eval(e.value))
        try:
            return self.eval(e.body)
        finally:
            self.env.restore(e.name, previous)

    def visit_shuffle(self, e: ir.Shuffle) -> Value:
        joined = np.concatenate([self.eval(v) for v in e.vectors])
        return joined[np.array(e.indices, dtype=np.int64)]

    def visit_vector_reduce(self, e: ir.VectorReduce) -> Value:
        value = self.eval(e.value)
        groups = value.reshape(e.type.lanes, -1)
        dtype = dtype_of(e.type)
        op = e.op
        if op is ir.ReduceOp.ADD:
            return _reduce_add(groups).astype(dtype)
        if op is ir.ReduceOp.MUL:
            out = groups[:, 0]
            for j in range(1, groups.shape[1]):
                out = binary(ir.BinOp.MUL, out, groups[:, j])
            return out
        if op is ir.ReduceOp.MIN:
            return groups.min(axis=1)
        if op is ir.ReduceOp.MAX:
            return groups.max(axis=1)
        if op is ir.ReduceOp.AND:
            return groups.all(axis=1)
        if op is ir.ReduceOp.OR:
            return groups.any(axis=1)
        info = np.iinfo(dtype)
        return np.clip(groups.astype(np.int64).sum(axis=1), info.min, info.max).astype(dtype)

    def visit_call(self, e: ir.Call) -> Value:
        by_expression = EXPRESSION_HANDLERS.get(e.name)
        if by_expression is not None:
            return by_expression(e, self.eval)
        handler = self.calls.get(e.name)
        if handler is None and ir.is_wmma_call(e):
            handler = wmma_call
        if handler is None:
            raise fail(f"the interpreter does not know the call '{e.name}'")
        return handler(e, [self.eval(a) for a in e.args])

    # ----------------------------------------------------------- memory
    def _pointer(self, name: str) -> Pointer:
        value = self.env.values.get(name, _MISSING)
        if isinstance(value, Pointer):
            return value
        raise fail(f"buffer '{name}' is not allocated or bound")

    @staticmethod
    def _check_bounds(pointer: Pointer, index: np.ndarray, name: str) -> None:
        if index.size and (index.min() < 0 or index.max() >= pointer.array.size):
            raise fail(
                f"access to '{name}' out of bounds: element {int(index.min())}..{int(index.max())} "
                f"of {pointer.array.size}"
            )


def _as_loaded(values: np.ndarray, dtype: np.dtype, name: str) -> np.ndarray:
    """Elements read from memory as the load's type: the same bits when the
    sizes agree (Halide reinterprets), an error otherwise."""
    if values.dtype == dtype or dtype == np.dtype(object):
        return values
    if values.dtype.itemsize != dtype.itemsize:
        raise fail(f"load of {dtype} from '{name}', which holds {values.dtype}")
    return values.view(dtype)


def _array_type(array: np.ndarray, value: np.ndarray) -> ir.Type:
    for (code, bits), dt in DTYPES.items():
        if np.dtype(dt) == array.dtype:
            return ir.Type(code, bits)
    raise fail(f"cannot store {value.dtype} into {array.dtype}")


def _reduce_add(groups: np.ndarray) -> np.ndarray:
    """Lane-group sums in the element type, left to right (Halide's order)."""
    if np.issubdtype(groups.dtype, np.integer):
        return groups.astype(np.int64).sum(axis=1).astype(groups.dtype)
    out = groups[:, 0].copy()
    for j in range(1, groups.shape[1]):
        out = (out + groups[:, j]).astype(groups.dtype)
    return out


def _where(condition: np.ndarray, when_true: np.ndarray, when_false: np.ndarray) -> np.ndarray:
    """Lane-wise select (``np.where`` with three arguments)."""
    chosen: np.ndarray = np.where(condition, when_true, when_false)
    return chosen


# --------------------------------------------------------------------------
# AMX tiles
# --------------------------------------------------------------------------


def _byte_view(pointer: Pointer) -> tuple[np.ndarray, int]:
    data = pointer.array
    if not data.flags["C_CONTIGUOUS"]:
        raise fail("tile memory must be contiguous")
    return data.view(np.uint8), pointer.offset * data.itemsize


def _tile_rows(op: str, args: list[Value]) -> tuple[np.ndarray, np.ndarray, int]:
    """The memory bytes a tile_load/tile_store touches: (memory viewed as
    bytes, the byte addresses rows x colbytes, the tile's byte count)."""
    rows, colbytes = as_int(args[0]), as_int(args[1])
    pointer = args[2]
    if not isinstance(pointer, Pointer):
        raise fail(f"{op} needs a buffer")
    offset, stride = as_int(args[3]), as_int(args[4])
    raw, base = _byte_view(pointer)
    addresses = base + offset + np.arange(rows)[:, None] * stride + np.arange(colbytes)[None, :]
    if addresses.min() < 0 or addresses.max() >= raw.size:
        raise fail(f"{op} on '{pointer.name}' out of bounds")
    return raw, addresses, rows * colbytes


def _tile_elements(pointer: Pointer, addresses: np.ndarray) -> np.ndarray:
    """The elements of ``pointer``'s array that the byte ``addresses`` touch."""
    return np.unique(addresses.reshape(-1) // pointer.array.itemsize)


def _tile_load(call: ir.Call, args: list[Value]) -> Value:
    raw, addresses, size = _tile_rows(call.name, args)
    if args[2].defined is not None:
        args[2].defined.read(args[2].name, _tile_elements(args[2], addresses))
    tile_bytes = np.zeros(call.type.lanes * call.type.bytes, dtype=np.uint8)
    tile_bytes[:size] = raw[addresses].reshape(-1)
    return tile_bytes.view(dtype_of(call.type))


def _tile_store(call: ir.Call, args: list[Value]) -> Value:
    raw, addresses, size = _tile_rows(call.name, args)
    raw[addresses.reshape(-1)] = np.ascontiguousarray(args[5]).view(np.uint8)[:size]
    if args[2].defined is not None:
        args[2].defined.write(_tile_elements(args[2], addresses))
    return np.array([0], dtype=np.int32)


def _tile_matmul(call: ir.Call, args: list[Value]) -> Value:
    """C += A . B for an M x K A tile and a VNNI-ordered B tile.

    bf16: each K pair's two products are added to the float32 accumulator
    one after the other, rounding to float32 each time; int8: four products
    summed exactly into the wrapping int32 accumulator.
    """
    m, colbytes, k = (as_int(a) for a in args[:3])
    acc, a, b = args[3], args[4], args[5]
    if _amx_dot_product(a.dtype, b.dtype, acc.dtype) is None:
        raise fail(f"no AMX instruction multiplies {a.dtype} by {b.dtype} into {acc.dtype}")
    n = colbytes // 4
    element_bytes = a.dtype.itemsize
    kpack = 4 // element_bytes
    if a.size < m * k or b.size < (k // kpack) * n * kpack or acc.size < m * n:
        raise fail(f"tile_matmul({m}, {colbytes}, {k}): tiles of {acc.size}, {a.size} and {b.size} elements "
                   f"cannot hold an {m} x {n} product of an {m} x {k} A and a VNNI B")
    a_rows = a[: m * k].reshape(m, k)
    b_vnni = b[: (k // kpack) * n * kpack].reshape(k // kpack, n, kpack)
    c = acc[: m * n].reshape(m, n).copy()
    if np.issubdtype(c.dtype, np.floating):
        return _finish_matmul(call, _bf16_dot(c, a_rows, b_vnni, k, kpack), m, n)
    ai = a_rows.astype(np.int64)
    bi = b_vnni.astype(np.int64)
    total = c.astype(np.int64)
    for q in range(k // kpack):
        for p in range(kpack):
            total = total + ai[:, q * kpack + p][:, None] * bi[q, :, p][None, :]
    return _finish_matmul(call, total.astype(np.int32), m, n)


_AMX_OPERATIONS: dict[amx.AMXOp, ValueHandler] = {
    amx.AMXOp.ZERO: lambda call, args: np.zeros(call.type.lanes, dtype=dtype_of(call.type)),
    amx.AMXOp.LOAD: _tile_load,
    amx.AMXOp.MATMUL: _tile_matmul,
    amx.AMXOp.STORE: _tile_store,
}

_AMX_CALLS = {amx.AMX_INTRINSIC[op].name: handler for op, handler in _AMX_OPERATIONS.items()}
"""The tile operations by name."""


def _amx_dot_product(a: np.dtype, b: np.dtype, acc: np.dtype) -> amx.AMXDotProduct | None:
    """The instruction of the table for these operand and accumulator dtypes."""
    return next((d for d in amx.AMX_TILE.dot_products
                 if (dtype_of(d.a), dtype_of(d.b), dtype_of(d.accumulator)) == (a, b, acc)), None)


def _bf16_dot(c: np.ndarray, a_rows: np.ndarray, b_vnni: np.ndarray, k: int, kpack: int) -> np.ndarray:
    af = a_rows.astype(np.float32)
    bf = b_vnni.astype(np.float32)
    with np.errstate(all="ignore"):  # garbage inputs (a wrong rewrite) may overflow
        for q in range(k // kpack):
            for p in range(kpack):
                c = (c + af[:, q * kpack + p][:, None] * bf[q, :, p][None, :]).astype(np.float32)
    return c


def _finish_matmul(call: ir.Call, c: np.ndarray, m: int, n: int) -> np.ndarray:
    out = np.zeros(call.type.lanes, dtype=dtype_of(call.type))
    out[: m * n] = c.reshape(-1)
    return out


# --------------------------------------------------------------------------
# WMMA fragments
# --------------------------------------------------------------------------

def _is_warp_collective(loop: ir.For) -> bool:
    """A lane loop as legalization builds it: WMMA operations, the copies
    that stage their operands, the barriers between them and the operand
    fragments loaded into lets, never reading the lane index. Every lane
    does the same thing, as one warp-wide step, so the body runs once. Any
    other lane loop runs as the loop it is."""
    nodes = list(ir.walk(loop.body))
    if any(isinstance(n, ir.Variable) and n.name == loop.name for n in nodes):
        return False
    if not any(ir.is_wmma_call(n) for n in nodes):
        return False
    for node in nodes:
        if isinstance(node, ir.Store):
            staging = ir.WMMA_STAGE in node.name or (
                isinstance(node.value, ir.Load) and ir.WMMA_STAGE in node.value.name)
            if not (staging or ir.is_wmma_call(node.value)):
                return False
        elif isinstance(node, ir.Evaluate) and not (ir.is_wmma_call(node.value) or _is_barrier(node.value)):
            return False
        elif isinstance(node, ir.LetStmt) and not ir.is_wmma_call(node.value):
            return False
        elif isinstance(node, (ir.For, ir.IfThenElse, ir.Allocate)):
            return False
    return True


_BARRIERS = frozenset(operation.name for operation in operations.of_kind(operations.Kind.BARRIER))


def _is_barrier(e: ir.Expr) -> bool:
    return isinstance(e, ir.Call) and e.name in _BARRIERS


__all__ = ["BufferT", "Interpreter", "InterpreterError", "Pointer", "ResourceLimitError", "cast_array", "dtype_of",
           "fragment_alignment_unchecked"]
