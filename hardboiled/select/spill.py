"""Spilling an accumulator that an epilogue reads.

A tile or fragment can only be stored, or fed to the next matmul; a
consumer that computes with the accumulator (a ReLU, a scale, a bias, a
cast to bf16) reads it inside arithmetic, which no instruction does. The
consumer is rewritten to read a copy in ordinary memory instead:

    allocate mm.spill.0[float32 * 256] in Stack
     mm.spill.0[ramp(0, 1, 256)] = mm[ramp(0, 1, 256)]     <- a tile_store
     out[...] = max(mm.spill.0[ramp(0, 1, 256)], x256(0))   <- plain vector code

The copy keeps the lanes in the order the consumer read them, so the
rewrite changes no value; selection then lowers the copy like any store of
an accumulator. A consumer that only copies the accumulator out, but in an
order no fragment store writes (a multiphase upsample interleaves its four
phases into the output), reads a copy of the whole accumulator instead, at
its own index:

    conv.spill.0[ramp(0, 1, 256)] = conv[ramp(0, 1, 256)]     <- a dense fragment store
    output[...] = conv.spill.0[<the interleaving index>]        <- plain vector code

The copy lives in SCRATCH_MEMORY (extract.py): on Tensor Cores that is
shared memory, where store_matrix_sync can write it for the whole warp.
"""

from __future__ import annotations

from collections.abc import Callable

from hardboiled import ir
from hardboiled.ir.visitor import map_expr
from hardboiled.select.exhaustive import integer_binary
from hardboiled.select.extract import SCRATCH_MEMORY, iter_stores

SPILL = ".spill."
"""Infix of the name of a spilled accumulator copy."""


def reads_accelerator_in_arithmetic(store: ir.Store, accelerator_buffers: set[str]) -> bool:
    """Whether ``store`` writes ordinary memory from a value that computes
    with an accelerator buffer (rather than copying it out)."""
    if store.name in accelerator_buffers or isinstance(store.value, ir.Load):
        return False
    return any(isinstance(n, ir.Load) and n.name in accelerator_buffers for n in ir.walk(store.value))


def gathers_accelerator(store: ir.Store, accelerator_buffers: set[str]) -> bool:
    """Whether ``store`` copies an accelerator buffer to ordinary memory
    (selection decides whether a fragment store can do it in that order)."""
    return (store.name not in accelerator_buffers and isinstance(store.value, ir.Load)
            and store.value.name in accelerator_buffers)


def _replacing(copies: dict[ir.Load, ir.Load]) -> Callable[[ir.Expr], ir.Expr | None]:
    return lambda e: copies.get(e) if isinstance(e, ir.Load) else None


def spill_accelerator_reads(stmt: ir.Stmt, positions: set[int], accelerators: dict[str, str],
                            allocations: dict[str, ir.Allocate]) -> dict[int, ir.Stmt]:
    """For the stores at these pre-order positions, the statement that reads
    copies of the accelerator buffers instead (``accelerators``: buffer ->
    "AMX" or "WMMA"), by position. A store that only copies an accumulator
    out (``gathers_accelerator``) reads a copy of the part of the
    allocation it gathers from (``_gathered_region``), in storage order, at
    its own index."""
    replacements: dict[int, ir.Stmt] = {}
    counter = 0
    stores = list(iter_stores(stmt))
    # The most lanes the program stores into each buffer with, for
    # _gathered_region: found once, not in a walk per copied load.
    widest: dict[str, int] = {}
    for store in stores:
        widest[store.name] = max(widest.get(store.name, 1), store.value.type.lanes)
    for position, store in enumerate(stores):
        if position not in positions:
            continue
        gather = gathers_accelerator(store, set(allocations))
        copies: dict[ir.Load, tuple[ir.Load, ir.Store, int]] = {}
        for n in ir.walk(store.value):
            if isinstance(n, ir.Load) and n.name in accelerators and n not in copies:
                spill = f"{n.name}{SPILL}{counter}"
                counter += 1
                # A gather, or a read whose lanes are constant but not in
                # storage order (a transposed accumulator), copies the region
                # whole: a tile store writes only whole tiles in order.
                region = (_gathered_region(widest.get(n.name, 1), n, allocations[n.name])
                          if gather or not _in_storage_order(n.index) else None)
                index: ir.Expr
                if region is None:
                    size, index = n.type.lanes, ir.Ramp(ir.IntImm(0), ir.IntImm(1), n.type.lanes)
                    fill = ir.Store(spill, n, index)
                else:
                    start, size = region
                    index = n.index if start == 0 else ir.Binary(
                        ir.BinOp.SUB, n.index, ir.Broadcast(ir.IntImm(start), n.type.lanes))
                    dense = ir.Ramp(ir.IntImm(0), ir.IntImm(1), size)
                    read = ir.Ramp(ir.IntImm(start), ir.IntImm(1), size)
                    fill = ir.Store(spill, ir.Load(n.name, read, n.type.with_lanes(size)), dense)
                copies[n] = (ir.Load(spill, index, n.type), fill, size)
        value = map_expr(store.value, _replacing({load: copy for load, (copy, _, _) in copies.items()}))
        fills = [fill for _, fill, _ in copies.values()]
        result = ir.make_block([*fills, ir.Store(store.name, value, store.index, store.predicate, store.alignment)])
        for load, (copy, _, size) in reversed(copies.items()):
            result = ir.Allocate(copy.name, load.type.element(), SCRATCH_MEMORY[accelerators[load.name]],
                                 (ir.IntImm(size),), result)
        replacements[position] = result
    return replacements


def _in_storage_order(index: ir.Expr) -> bool:
    """Whether ``index`` reads consecutive elements, or is not constant
    (then a copy in the reader's lane order is all that is known)."""
    lanes = constant_lanes(index)
    return lanes is None or all(b - a == 1 for a, b in zip(lanes, lanes[1:]))


def _gathered_region(unit: int, load: ir.Load, allocation: ir.Allocate) -> tuple[int, int] | None:
    """The dense part of an accumulator a copy-out gathers from, as (start,
    size): the span of its index's lanes widened to whole accumulation
    stores (``unit``: the most lanes the program stores into the buffer
    with), so that fragment stores of the tiles it covers fill it,
    and cut at the allocation's end. The whole allocation where the index
    is not constant (or spans it). None where the allocation's size is not
    constant either, or the region is more than a vector holds (then the
    copy is of the lanes read, in their order)."""
    size = allocation.constant_elements
    lanes = constant_lanes(load.index)
    if size is None:
        return None
    region = (0, size)
    if lanes is not None:
        start = min(lanes) // unit * unit
        end = min(-(-(max(lanes) + 1) // unit) * unit, size)
        if 0 <= start < end:
            region = (start, end - start)
    return region if region[1] <= ir.MAX_LANES else None


def constant_lanes(e: ir.Expr) -> tuple[int, ...] | None:
    """The lane values of an integer vector expression built of constants
    (ramps, broadcasts, + - * / % min max over them); None for anything
    else. Division and modulo are Halide's (Euclidean, exhaustive.integer_binary),
    for a positive divisor only; any other divisor gives None."""
    if isinstance(e, ir.IntImm):
        return (e.value,)
    if isinstance(e, ir.Broadcast):
        value = constant_lanes(e.value)
        return None if value is None else value * e.lanes
    if isinstance(e, ir.Ramp):
        base, stride = constant_lanes(e.base), constant_lanes(e.stride)
        if base is None or stride is None:
            return None
        return tuple(b + i * s for i in range(e.lanes) for b, s in zip(base, stride, strict=True))
    if isinstance(e, ir.Binary) and e.op in _CONSTANT_OPS:
        a, b = constant_lanes(e.a), constant_lanes(e.b)
        if a is None or b is None or len(a) != len(b):
            return None
        if e.op in (ir.BinOp.DIV, ir.BinOp.MOD) and min(b) <= 0:
            return None
        return tuple(integer_binary(e.op, x, y) for x, y in zip(a, b, strict=True))
    return None


_CONSTANT_OPS = frozenset({ir.BinOp.ADD, ir.BinOp.SUB, ir.BinOp.MUL, ir.BinOp.DIV, ir.BinOp.MOD, ir.BinOp.MIN,
                           ir.BinOp.MAX})
