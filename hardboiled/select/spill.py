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
    out (``gathers_accelerator``) reads a copy of the whole allocation, in
    storage order, at its own index."""
    replacements: dict[int, ir.Stmt] = {}
    counter = 0
    for position, store in enumerate(iter_stores(stmt)):
        if position not in positions:
            continue
        gather = gathers_accelerator(store, set(allocations))
        copies: dict[ir.Load, tuple[ir.Load, ir.Store, int]] = {}
        for n in ir.walk(store.value):
            if isinstance(n, ir.Load) and n.name in accelerators and n not in copies:
                spill = f"{n.name}{SPILL}{counter}"
                counter += 1
                size = allocations[n.name].constant_elements if gather else None
                index: ir.Expr
                if size is None:
                    size, index = n.type.lanes, ir.Ramp(ir.IntImm(0), ir.IntImm(1), n.type.lanes)
                    fill = ir.Store(spill, n, index)
                else:
                    index = n.index
                    everything = ir.Ramp(ir.IntImm(0), ir.IntImm(1), size)
                    fill = ir.Store(spill, ir.Load(n.name, everything, n.type.with_lanes(size)), everything)
                copies[n] = (ir.Load(spill, index, n.type), fill, size)
        value = map_expr(store.value, _replacing({load: copy for load, (copy, _, _) in copies.items()}))
        fills = [fill for _, fill, _ in copies.values()]
        result = ir.make_block([*fills, ir.Store(store.name, value, store.index, store.predicate, store.alignment)])
        for load, (copy, _, size) in reversed(copies.items()):
            result = ir.Allocate(copy.name, load.type.element(), SCRATCH_MEMORY[accelerators[load.name]],
                                 (ir.IntImm(size),), result)
        replacements[position] = result
    return replacements
