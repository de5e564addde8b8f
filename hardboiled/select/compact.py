"""An accumulator shrunk to the block of it that its accesses touch.

Under a GuardWithIf tail Halide sizes a producer computed at the tile for
the largest tile it may hold: a GPU block allocates ``prod[int32 * 24 *
24]`` and fills, updates and reads a 16 x 16 block of it at rows 24 apart.
Selection lays an accumulator out as whole tiles of its own width, so a
block narrower than the allocation fits no tile. Once specialize.py has
given each version of the tile constant sizes, this rewrites such an
allocation to the block its accesses touch: every flat offset ``r * W + c``
becomes ``(r - r0) * W' + (c - c0)``.

The offsets are computed from the loops' constant ranges (exhaustive.py),
and the rewritten index of every access is checked against the remapped
offsets at every point and lane, so the rewrite is exact or not made.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from hardboiled import ir
from hardboiled.ir.visitor import rewrite
from hardboiled.select.exhaustive import Known, NotEvaluable, Ranges, affine, enumerable_names, evaluator, points


@dataclasses.dataclass(frozen=True, slots=True)
class _Block:
    width: int
    """The allocation's columns."""
    row0: int
    col0: int
    rows: int
    cols: int

    def offset(self, flat: int) -> int:
        return (flat // self.width - self.row0) * self.cols + flat % self.width - self.col0


def compacted(alloc: ir.Allocate, ranges: Ranges, known: Known,
              made_from: Callable[[ir.Stmt, ir.Stmt], object] = lambda new, old: None) -> ir.Allocate:
    """``alloc`` shrunk to the block its accesses touch, where that is
    smaller and every access can be rewritten exactly; else ``alloc``.
    ``made_from(new, old)`` is told of each store rebuilt."""
    width = _width(alloc)
    if width is None or any(isinstance(n, ir.Variable) and n.name == alloc.name for n in ir.walk(alloc.body)):
        return alloc
    ranges = {**ranges, **_loop_ranges(alloc.body)}
    known = {**known, **{n.name: n.value for n in ir.walk(alloc.body) if isinstance(n, ir.LetStmt)}}
    indices = {n.index for n in ir.walk(alloc.body) if isinstance(n, (ir.Load, ir.Store)) and n.name == alloc.name}
    block = _touched_block(indices, width, ranges, known)
    if block is None or (block.cols == width and block.row0 == 0 and block.rows * width == alloc.constant_elements):
        return alloc
    rewritten: dict[ir.Expr, ir.Expr] = {}
    for index in indices:
        new = _remapped(index, block, ranges, known)
        if new is None or not _agrees(index, new, block, ranges, known):
            return alloc
        rewritten[index] = new

    def replace(node: ir.Node) -> ir.Node | None:
        if isinstance(node, ir.Load) and node.name == alloc.name:
            return dataclasses.replace(node, index=rewritten[node.index])
        if isinstance(node, ir.Store):
            fields: dict[str, Any] = {f.name: rewrite(getattr(node, f.name), replace) for f in dataclasses.fields(node)
                                      if isinstance(getattr(node, f.name), ir.Expr)}
            if node.name == alloc.name:
                fields["index"] = rewritten[node.index]
            new = dataclasses.replace(node, **fields)
            made_from(new, node)
            return new
        return None

    extents = (ir.IntImm(block.cols), ir.IntImm(block.rows), *(ir.IntImm(1) for _ in alloc.extents[2:]))
    return dataclasses.replace(alloc, extents=extents, body=rewrite(alloc.body, replace))


def _touched_block(indices: set[ir.Expr], width: int, ranges: Ranges, known: Known) -> _Block | None:
    offsets = _offsets(indices, ranges, known)
    if not offsets:
        return None
    rows = [o // width for o in offsets]
    cols = [o % width for o in offsets]
    return _Block(width, min(rows), min(cols), max(rows) - min(rows) + 1, max(cols) - min(cols) + 1)


def _width(alloc: ir.Allocate) -> int | None:
    if alloc.type.lanes != 1 or alloc.constant_elements is None or not alloc.extents:
        return None
    width = alloc.extents[0]
    return width.value if isinstance(width, ir.IntImm) and width.value > 0 else None


def _loop_ranges(body: ir.Stmt) -> Ranges:
    """The ranges of the loops in ``body`` with constant bounds (the union
    where a name is looped over twice)."""
    found: Ranges = {}
    for n in ir.walk(body):
        if isinstance(n, ir.For) and isinstance(n.min, ir.IntImm) and isinstance(n.extent, ir.IntImm) \
                and n.extent.value > 0:
            low, high = n.min.value, n.min.value + n.extent.value - 1
            if n.name in found:
                low, high = min(low, found[n.name][0]), max(high, found[n.name][1])
            found[n.name] = (low, high)
    return found


def _lanes(e: ir.Expr, point: dict[str, int], known: Known) -> list[int]:
    if isinstance(e, ir.Ramp):
        base, stride = _lanes(e.base, point, known), _lanes(e.stride, point, known)
        return [b + i * s for i in range(e.lanes) for b, s in zip(base, stride)]
    if isinstance(e, ir.Broadcast):
        return _lanes(e.value, point, known) * e.lanes
    if e.type.lanes != 1:
        raise NotEvaluable
    return [evaluator(known)(e, point)]


def _offsets(indices: set[ir.Expr], ranges: Ranges, known: Known) -> set[int]:
    """Every offset the indices reach; empty when one cannot be evaluated."""
    found: set[int] = set()
    for index in indices:
        names = enumerable_names(index, ranges, known)
        if names is None:
            return set()
        try:
            for point in points(names, ranges):
                found.update(_lanes(index, point, known))
        except NotEvaluable:
            return set()
    return found if found and min(found) >= 0 else set()


def _remapped(index: ir.Expr, block: _Block, ranges: Ranges, known: Known) -> ir.Expr | None:
    """The index of the compacted buffer: constant strides split into rows
    and columns, the scalar base remapped as one affine expression."""
    if isinstance(index, ir.Ramp):
        base = _remapped(index.base, block, ranges, known)
        stride = _remapped_stride(index.stride, block)
        return None if base is None or stride is None else ir.Ramp(base, stride, index.lanes)
    if isinstance(index, ir.Broadcast):
        value = _remapped(index.value, block, ranges, known)
        return None if value is None else ir.Broadcast(value, index.lanes)
    flat = ir.IntImm(block.width)
    row = ir.Binary(ir.BinOp.SUB, ir.Binary(ir.BinOp.DIV, index, flat), ir.IntImm(block.row0))
    col = ir.Binary(ir.BinOp.SUB, ir.Binary(ir.BinOp.MOD, index, flat), ir.IntImm(block.col0))
    remapped = ir.Binary(ir.BinOp.ADD, ir.Binary(ir.BinOp.MUL, row, ir.IntImm(block.cols)), col)
    return affine(remapped, ranges, known)


def _remapped_stride(stride: ir.Expr, block: _Block) -> ir.Expr | None:
    if isinstance(stride, ir.Broadcast):
        value = _remapped_stride(stride.value, block)
        return None if value is None else ir.Broadcast(value, stride.lanes)
    if not isinstance(stride, ir.IntImm) or stride.value < 0:
        return None
    return ir.IntImm(stride.value // block.width * block.cols + stride.value % block.width)


def _agrees(old: ir.Expr, new: ir.Expr, block: _Block, ranges: Ranges, known: Known) -> bool:
    """Whether ``new`` reaches, lane by lane and at every point, the
    compacted offset of what ``old`` reaches."""
    names = enumerable_names(old, ranges, known)
    if names is None:
        return False
    try:
        return all(_lanes(new, point, known) == [block.offset(o) for o in _lanes(old, point, known)]
                   for point in points(names, ranges))
    except NotEvaluable:
        return False

