"""The reference interpreter's AMX tile operations (interp.py calls them
by name, ``AMX_CALLS``): tiles are read and written byte by byte at the
given byte offsets and strides, B tiles are in VNNI order, bf16 products
are summed in float32 and int8 dot products in int32, as the hardware does.
A tile value holds the tile's bytes as elements of its type."""

from __future__ import annotations

import numpy as np

from hardboiled import ir
from hardboiled.targets import amx
from hardboiled.verify.calls import ValueHandler
from hardboiled.verify.values import Pointer, Value, as_int, dtype_of, fail


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
    itemsize = pointer.array.itemsize
    if addresses.min() < 0 or addresses.max() >= raw.size or pointer.outside(
            np.array([addresses.min() // itemsize, addresses.max() // itemsize])):
        raise fail(f"{op} on '{pointer.name}' out of bounds")
    return raw, addresses, rows * colbytes


def _tile_elements(pointer: Pointer, addresses: np.ndarray) -> np.ndarray:
    """The elements of ``pointer``'s array that the byte ``addresses`` touch,
    in order, each once: what ``np.unique`` returns, which also imports
    ``numpy.ma`` (to ask whether its argument is masked; 9 ms, a quarter of
    numpy's own import) the first time it is called."""
    elements = np.sort(addresses.reshape(-1) // pointer.array.itemsize)
    first = np.empty(elements.size, dtype=bool)
    first[:1] = True
    np.not_equal(elements[1:], elements[:-1], out=first[1:])
    return elements[first]


def _tile_load(call: ir.Call, args: list[Value]) -> Value:
    raw, addresses, size = _tile_rows(call.name, args)
    if args[2].defined is not None:
        args[2].defined.read(args[2].name, _tile_elements(args[2], addresses), args[2].offset)
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

AMX_CALLS: dict[str, ValueHandler] = {amx.AMX_INTRINSIC[op].name: handler for op, handler in _AMX_OPERATIONS.items()}
"""The tile operations by name (the interpreter's handlers for them)."""


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


__all__ = ["AMX_CALLS"]
