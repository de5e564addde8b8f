"""Where a rewritten program parts from the original: the buffers it
computes another way, the original's stores it still computes alike, and
whether it multiplies float32 operands as split tf32 parts. The error
model (``error_bound.bound_program``) bounds only what diverges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hardboiled import ir
from hardboiled.ir.visitor import map_expr
from hardboiled.select.specialize import EDGE
from hardboiled.select.spill import SPILL
from hardboiled.targets.wmma import mma_split_significand


@dataclass(frozen=True)
class Divergence:
    """Where a rewritten program parts from the original."""

    buffers: frozenset[str]
    """Buffers that some store of the original writes and the rewritten
    program no longer writes the same way: where the two programs part."""
    alike: frozenset[ir.Store]
    """The original's stores that the rewritten program computes with the
    same operations: unchanged, or reading a copy of a differing buffer
    instead of the buffer (an epilogue that reads a spilled accumulator)."""
    split_significand: int | None = None
    """Where the rewritten program multiplies float32 operands split into
    high and low parts of this many significant bits (3xTF32 on Tensor
    Cores, ``WMMAElement.split_significand``): each float32 product it
    changes may be off by more than one rounding (``split_product_error``)."""


def divergence(original: ir.Stmt, rewritten: ir.Stmt) -> Divergence:
    original_stores = [n for n in ir.walk(original) if isinstance(n, ir.Store)]
    rewritten_stores = [n for n in ir.walk(rewritten) if isinstance(n, ir.Store)]
    kept = set(rewritten_stores)
    differing = {n.name for n in original_stores if n not in kept}

    def form(store: ir.Store) -> tuple[Any, ...]:
        """The store with its reads of differing buffers (or of their
        copies: NAME.spill.N, an edge copy NAME.edge.N and its spills) as
        names: what it computes from them."""
        def read(e: ir.Expr) -> ir.Expr | None:
            source = e.name.split(SPILL)[0].split(EDGE)[0] if isinstance(e, ir.Load) else ""
            if source in differing:
                return ir.Variable("hb.read." + source, e.type)
            return None
        return store.name, _elements(store.index), store.predicate, map_expr(store.value, read)

    computed = {form(n) for n in rewritten_stores}
    alike = frozenset(n for n in original_stores if form(n) in computed)
    split = next((bits for n in ir.walk(rewritten) if (bits := mma_split_significand(n)) is not None), None)
    return Divergence(frozenset(differing), alike, split)


def _elements(index: ir.Expr) -> object:
    """What identifies the elements a store writes, whatever the order of
    its lanes: a nest of ramps with scalar strides by its base and its
    (stride, lanes) levels in stride order (a copy-out the rewrite stores in
    the accumulator's order, ``lane_order.py``, writes the same elements).
    Taking a store for alike only tightens its bound, so a match that were
    wrong could only fail verification, never pass it."""
    levels: list[tuple[ir.Expr, int]] = []
    while isinstance(index, ir.Ramp):
        stride = index.stride.value if isinstance(index.stride, ir.Broadcast) else index.stride
        if stride.type.lanes != 1:
            return index
        levels.append((stride, index.lanes))
        index = index.base
    # a symbolic stride (an output's row stride) is a level like a constant
    # one: levels are ordered by their printed form, constants by value
    return index if not levels else (index, _merged(sorted(levels, key=_level_order)))


def _merged(levels: list[tuple[ir.Expr, int]]) -> tuple[tuple[ir.Expr, int], ...]:
    """Levels in stride order, each one that continues the level before it
    (a constant stride of that level's stride times its lanes) merged into
    it: ramp(0, 1, 512) and ramp(ramp(0, 16, 32), x32(1), 16) write the
    same elements."""
    merged: list[tuple[ir.Expr, int]] = []
    for stride, lanes in levels:
        if merged:
            inner, inner_lanes = merged[-1]
            if isinstance(stride, ir.IntImm) and isinstance(inner, ir.IntImm) \
                    and stride.value == inner.value * inner_lanes:
                merged[-1] = (inner, inner_lanes * lanes)
                continue
        merged.append((stride, lanes))
    return tuple(merged)


def _level_order(level: tuple[ir.Expr, int]) -> tuple[int, int, str, int]:
    stride, lanes = level
    if isinstance(stride, ir.IntImm):
        return (0, stride.value, "", lanes)
    return (1, 0, repr(stride), lanes)


__all__ = ["Divergence", "divergence"]
