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
an accumulator. The copy lives in SCRATCH_MEMORY (extract.py): on Tensor
Cores that is shared memory, where store_matrix_sync can write it for the
whole warp.
"""

from __future__ import annotations

from collections.abc import Callable

from hardboiled import ir
from hardboiled.ir.visitor import map_expr
from hardboiled.select.extract import SCRATCH_MEMORY, iter_stores

SPILL = ".spill."
"""Infix of the name of a spilled accumulator copy."""


def reads_accelerator_in_arithmetic(store: ir.Store, accelerator_buffers: set[str]) -> bool:
    """Whether ``store`` writes ordinary memory from a value that computes
    with an accelerator buffer (rather than copying it out)."""
    if store.name in accelerator_buffers or isinstance(store.value, ir.Load):
        return False
    return any(isinstance(n, ir.Load) and n.name in accelerator_buffers for n in ir.walk(store.value))


def _replacing(copies: dict[ir.Load, ir.Load]) -> Callable[[ir.Expr], ir.Expr | None]:
    return lambda e: copies.get(e) if isinstance(e, ir.Load) else None


def spill_accelerator_reads(stmt: ir.Stmt, positions: set[int], accelerators: dict[str, str]) -> dict[int, ir.Stmt]:
    """For the stores at these pre-order positions, the statement that reads
    copies of the accelerator buffers instead (``accelerators``: buffer ->
    "AMX" or "WMMA"), by position."""
    replacements: dict[int, ir.Stmt] = {}
    counter = 0
    for position, store in enumerate(iter_stores(stmt)):
        if position not in positions:
            continue
        copies: dict[ir.Load, ir.Load] = {}
        for n in ir.walk(store.value):
            if isinstance(n, ir.Load) and n.name in accelerators and n not in copies:
                spill = f"{n.name}{SPILL}{counter}"
                counter += 1
                copies[n] = ir.Load(spill, ir.Ramp(ir.IntImm(0), ir.IntImm(1), n.type.lanes), n.type)
        value = map_expr(store.value, _replacing(copies))
        fills = [ir.Store(copy.name, load, copy.index) for load, copy in copies.items()]
        result = ir.make_block([*fills, ir.Store(store.name, value, store.index, store.predicate, store.alignment)])
        for load, copy in reversed(copies.items()):
            result = ir.Allocate(copy.name, load.type.element(), SCRATCH_MEMORY[accelerators[load.name]],
                                 (ir.IntImm(load.type.lanes),), result)
        replacements[position] = result
    return replacements
