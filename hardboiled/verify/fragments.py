"""The reference interpreter's Tensor Core operations: the whole-fragment
``wmma.*`` calls selection produces, before the warp-lane
post-processing (interp.py calls ``wmma_call`` for them).

A fragment value holds its logical matrix, row-major, rows x columns lanes;
loads and stores address elements of the buffer they are given and, unless
``fragment_alignment_unchecked`` says otherwise, must meet
load/store_matrix_sync's alignment, as the GPU requires.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from hardboiled import ir
from hardboiled.ir import operations
from hardboiled.targets import wmma
from hardboiled.verify.values import Pointer, Value, as_int, dtype_of, fail, lanes, row_ints

_fragment_alignment: ContextVar[bool] = ContextVar("fragment_alignment_checked", default=True)
"""Whether WMMA loads and stores must meet load/store_matrix_sync's
alignment (not asked of a selected statement checked on its own, which
staging aligns afterwards: rewrite_check.py)."""


@contextmanager
def fragment_alignment_unchecked() -> Iterator[None]:
    """WMMA loads and stores inside the block (in this thread) may be
    unaligned, and their leading dimension any integer."""
    token = _fragment_alignment.set(False)
    try:
        yield
    finally:
        _fragment_alignment.reset(token)


def wmma_call(call: ir.Call, args: list[Value]) -> Value:
    """Whole-fragment WMMA semantics (a fragment value holds the logical
    matrix, row-major, rows x columns lanes):

    * ``wmma.load.{a,b,c}.sync.aligned.<layout>.<shape>.<type>(ptr, offset,
      ldm)``: A is m x k, B is k x n, C is m x n; element (i, j) is at
      ``offset + i*ldm + j`` (row) or ``offset + j*ldm + i`` (col), counted
      in elements of ``type``, which must be the buffer's;
    * ``wmma.mma.sync.aligned.<a layout>.<b layout>.<shape>.<d type>.<c
      type>(A, B, C)``: D = A.B + C; 16-bit products are exact in float32,
      the sum is rounded once to D's type (hardware adds in an unspecified
      order: verification's tolerance covers the difference);
    * ``wmma.store.d.sync.aligned.<layout>.<shape>.<type>(ptr, D, offset,
      ldm)``: the inverse of load.c;
    * ``wmma.fill.<shape>.<type>(value)``: an accumulator fragment holding
      ``value`` everywhere (fill_fragment).

    Shapes and types must be in wmma.WMMA_TENSOR_CORE, and every address
    must meet load/store_matrix_sync's alignment (relative to the buffer's
    start): a rewrite that breaks it would fail on the GPU, so it fails here.
    """
    intrinsic = wmma.wmma_intrinsic(call)
    if intrinsic is None:
        raise fail(f"the interpreter does not know the WMMA call '{call.name}'")
    if intrinsic.shape not in wmma.WMMA_TENSOR_CORE.all_shapes:
        raise fail(f"{call.name}: {intrinsic.shape.name} is not a WMMA fragment shape")
    if not wmma.WMMA_TENSOR_CORE.defines(intrinsic):
        raise fail(f"the interpreter does not know the WMMA call '{call.name}'")
    return _WMMA_OPERATIONS[intrinsic.op](call, intrinsic, args)


def _wmma_load(call: ir.Call, intrinsic: wmma.WMMAIntrinsic, args: list[Value]) -> Value:
    rows, cols = intrinsic.extent
    pointer, offset, ldm = args[0], row_ints(args[1]), as_int(args[2])
    addresses = _wmma_addresses(call.name, pointer, intrinsic.type, intrinsic.layout, rows, cols, offset, ldm)
    if pointer.defined is not None:
        pointer.defined.read(pointer.name, addresses, pointer.offset)
    return pointer.array[addresses].astype(dtype_of(intrinsic.type))


def _wmma_mma(call: ir.Call, intrinsic: wmma.WMMAIntrinsic, args: list[Value]) -> Value:
    shape, d_type, c_type = intrinsic.shape, intrinsic.type, intrinsic.c_type
    a, b, c = args
    operand_type = _type_of_dtype(a.dtype)
    element = wmma.WMMA_TENSOR_CORE.element(operand_type) if operand_type is not None else None
    if element is None or c_type is None or b.dtype != a.dtype or d_type not in element.accumulators \
            or c.dtype != dtype_of(c_type):
        raise fail(f"{call.name}: no Tensor Core instruction multiplies {a.dtype} by {b.dtype} "
                    f"with a {c.dtype} accumulator")
    # Integer products are exact and wrap to the accumulator's width, as
    # integer arithmetic does in Halide; float ones are rounded once.
    if lanes(a) != shape.m * shape.k or lanes(b) != shape.k * shape.n or lanes(c) != shape.m * shape.n:
        raise fail(f"{call.name}: fragments of {lanes(a)}, {lanes(b)} and {lanes(c)} elements are not an "
                   f"{shape.m} x {shape.k} A, a {shape.k} x {shape.n} B and an {shape.m} x {shape.n} C")
    # Fragments of iterations run together (a row each) multiply row by row.
    wide = np.int64 if d_type.is_int else np.float64
    a_matrix = a.astype(wide).reshape(*a.shape[:-1], shape.m, shape.k)
    b_matrix = b.astype(wide).reshape(*b.shape[:-1], shape.k, shape.n)
    c_matrix = c.astype(wide).reshape(*c.shape[:-1], shape.m, shape.n)
    if element.split_significand is not None:
        d = _split_products(a, b, element.split_significand, shape) + c_matrix
    else:
        d = np.matmul(a_matrix, b_matrix) + c_matrix
    with np.errstate(over="ignore", invalid="ignore"):  # a float16 D overflows to inf, as on the GPU
        return d.reshape(*d.shape[:-2], shape.m * shape.n).astype(dtype_of(d_type))


def _split_products(a: Value, b: Value, bits: int, shape: wmma.WMMAShape) -> np.ndarray:
    """A x B as the Tensor Cores compute it from operands split into high
    and low parts (``split_operand``): low x high + high x low +
    high x high, each product exact, in float64."""
    def parts(x: Value, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
        high, low = split_operand(x, bits)
        shape = (*x.shape[:-1], rows, cols)
        return high.astype(np.float64).reshape(shape), low.astype(np.float64).reshape(shape)
    a_high, a_low = parts(a, shape.m, shape.k)
    b_high, b_low = parts(b, shape.k, shape.n)
    return np.matmul(a_low, b_high) + np.matmul(a_high, b_low) + np.matmul(a_high, b_high)


def split_operand(x: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """float32 values as a high and a low part of ``bits`` significant bits
    each, as the generated CUDA splits them (``SPLIT_MMA``): the high part
    is the value rounded to nearest, ties away from zero (toward zero where
    that would overflow), the low part the remainder (exact in float32)
    rounded alike. Infinities and NaNs are their own high part, with a low
    part of 0, so that they multiply as they do in float32."""
    finite = np.isfinite(x)
    high = _truncated(x, bits, np.where(finite, round_significand(x, bits), x))
    with np.errstate(invalid="ignore"):
        low = np.where(finite, round_significand((x - high).astype(x.dtype), bits), np.float32(0))
    return high, low.astype(x.dtype)


def _truncated(x: np.ndarray, bits: int, rounded: np.ndarray) -> np.ndarray:
    """``rounded``, except where rounding a finite value overflowed: there
    ``x`` rounded toward zero."""
    overflowed = np.isfinite(x) & ~np.isfinite(rounded)
    mask = np.uint32(wmma.split_rounding_bits(bits)[1])
    return np.where(overflowed, (x.view(np.uint32) & mask).view(np.float32), rounded)


def round_significand(x: np.ndarray, bits: int) -> np.ndarray:
    """float32 values rounded to ``bits`` significant bits, to nearest with
    ties away from zero (``cvt.rna.tf32.f32``), keeping float32's exponent
    range: a value that rounds past the largest finite one becomes
    infinite; infinities and NaNs stay as they are."""
    assert x.dtype == np.float32
    half, keep = wmma.split_rounding_bits(bits)
    raw = x.view(np.uint32)
    rounded = ((raw + np.uint32(half)) & np.uint32(keep)).view(np.float32)
    return np.where(np.isfinite(x), rounded, x)


def _wmma_fill(call: ir.Call, intrinsic: wmma.WMMAIntrinsic, args: list[Value]) -> Value:
    shape = intrinsic.shape
    value = np.asarray(args[0])
    first = value[..., :1] if value.ndim else value.reshape(1)
    return np.broadcast_to(first, (*first.shape[:-1], shape.m * shape.n)).astype(dtype_of(intrinsic.type))


def _wmma_store(call: ir.Call, intrinsic: wmma.WMMAIntrinsic, args: list[Value]) -> Value:
    rows, cols = intrinsic.extent
    pointer, fragment, offset, ldm = args[0], args[1], row_ints(args[2]), as_int(args[3])
    addresses = _wmma_addresses(call.name, pointer, intrinsic.type, intrinsic.layout, rows, cols, offset, ldm)
    shape = np.broadcast_shapes(addresses.shape, fragment.shape)
    pointer.array[np.broadcast_to(addresses, shape)] = np.broadcast_to(fragment, shape).astype(pointer.array.dtype)
    if pointer.defined is not None:
        pointer.defined.write(addresses)
    return np.array([0], dtype=np.int32)


_WMMA_OPERATIONS = {
    wmma.WMMAOp.LOAD: _wmma_load,
    wmma.WMMAOp.MMA: _wmma_mma,
    wmma.WMMAOp.FILL: _wmma_fill,
    wmma.WMMAOp.STORE: _wmma_store,
}


def _type_of_dtype(dtype: np.dtype) -> ir.Type | None:
    return next((t for t in wmma.WMMA_TYPE_NAMES.values() if dtype_of(t) == dtype), None)


def _wmma_addresses(name: str, pointer: Value, t: ir.Type, layout: wmma.Layout | None, rows: int, cols: int,
                    offset: Any, ldm: int) -> np.ndarray:
    """Element indices (rows x cols, flattened) of a fragment in
    ``pointer``'s array; with a row per iteration where the offset (an
    int64 column, values.row_ints) or the pointer's is batched."""
    if not isinstance(pointer, Pointer):
        raise fail(f"{name} needs a buffer")
    if pointer.array.dtype != dtype_of(t):
        raise fail(f"{name} reads {t} elements from '{pointer.name}', which holds {pointer.array.dtype}")
    core = wmma.WMMA_TENSOR_CORE
    start = pointer.offset + offset
    if _fragment_alignment.get():
        misaligned = np.asarray((start * t.bytes) % core.pointer_alignment).reshape(-1)
        if misaligned.any() or (ldm * t.bytes) % core.leading_dimension_alignment or ldm <= 0:
            first = int(np.asarray(start).reshape(-1)[int(np.argmax(misaligned))])
            raise fail(f"{name} on '{pointer.name}': element offset {first} or leading "
                        f"dimension {ldm} breaks the alignment load/store_matrix_sync need ({core.pointer_alignment}"
                        f"-byte addresses, a leading dimension of a multiple of {core.leading_dimension_alignment} "
                        "bytes; it is unsigned: it must be positive)")
    i, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    pattern = (i * ldm + j if layout is wmma.Layout.ROW else j * ldm + i).reshape(-1)
    addresses = start + pattern
    if pointer.outside(addresses):
        relative = addresses - pointer.offset
        raise fail(f"{name} on '{pointer.name}' out of bounds: elements "
                   f"{int(relative.min())}..{int(relative.max())}")
    return addresses


def is_warp_collective(loop: ir.For, nodes: list[Any]) -> bool:
    """A lane loop as legalization builds it: WMMA operations, the copies
    that stage their operands, the barriers between them and the operand
    fragments loaded into lets, never reading the lane index. Every lane
    does the same thing, as one warp-wide step, so the body runs once. Any
    other lane loop runs as the loop it is. ``nodes``: the body's."""
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
