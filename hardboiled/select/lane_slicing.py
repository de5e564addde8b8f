"""Slicing vector expressions along one axis of their lanes' shape.

Halide prints a vector statement's lanes as nested ramps and broadcasts
over a row-major shape (M x N, or M x N x K under a reduction). Partitioning
(partition.py) cuts a statement into instruction-sized pieces by taking, for
each piece, the lanes whose index along one axis lies in a range; the
result is again in the nested forms the rules match, with constant offsets
folded in where they fit (``ramp(b, s, n) + xn(c)`` is ``ramp(b + c, s, n)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar

from hardboiled import ir
from hardboiled.select.lane_order import map_lanewise

LoadHook = Callable[[ir.Load, int, int, int], ir.Expr | None]
"""Slices a load of the accumulator itself: (load, axis, start, count)."""


def split_extents(extents: tuple[int, ...], outer_lanes: int) -> int | None:
    """The position p where extents[:p] multiply to ``outer_lanes``."""
    product = 1
    for p, extent in enumerate(extents):
        if product == outer_lanes:
            return p
        product *= extent
    return len(extents) if product == outer_lanes else None


def refined(extents: tuple[int, ...], outer_lanes: int, axis: int, start: int,
            count: int) -> tuple[tuple[int, ...], int, int, int] | None:
    """The same slice over finer extents, where ``outer_lanes`` ends inside
    an axis: an axis of 64 K values that a form runs over as 4 groups of 16
    is split in (4, 16), and a slice of it that takes whole groups ([0, 32):
    groups [0, 2)) is a slice of the groups. None where no split fits."""
    product = 1
    for d, extent in enumerate(extents):
        if product * extent > outer_lanes:
            if outer_lanes % product or extent % (outer_lanes // product):
                return None
            groups = outer_lanes // product
            inner = extent // groups
            finer = (*extents[:d], groups, inner, *extents[d + 1 :])
            if axis < d:
                return finer, axis, start, count
            if axis > d:
                return finer, axis + 1, start, count
            if start % inner or count % inner:
                return None
            return finer, d, start // inner, count // inner
        product *= extent
    return None


def scaled(e: ir.Expr, factor: int) -> ir.Expr:
    if factor == 1:
        return e
    if isinstance(e, ir.IntImm):
        return ir.IntImm(e.value * factor, e.type)
    if isinstance(e, ir.Broadcast) and isinstance(e.value, ir.IntImm):
        return ir.Broadcast(ir.IntImm(e.value.value * factor, e.value.type), e.lanes)
    lanes = e.type.lanes
    constant: ir.Expr = ir.IntImm(factor, e.type.element())
    return ir.Binary(ir.BinOp.MUL, e, constant if lanes == 1 else ir.Broadcast(constant, lanes))


def plus(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    # (a zero, scalar or broadcast, is left out: accesses keep the forms
    # _access_block reads)
    zero = b.value if isinstance(b, ir.Broadcast) else b
    if isinstance(zero, ir.IntImm) and zero.value == 0:
        return a
    if isinstance(a, ir.IntImm) and isinstance(b, ir.IntImm):
        return ir.IntImm(a.value + b.value, a.type)
    if isinstance(a, ir.Ramp) and isinstance(b, ir.Broadcast) and a.lanes == b.lanes:
        return ir.Ramp(plus(a.base, b.value), a.stride, a.lanes)
    return ir.Binary(ir.BinOp.ADD, a, b)


def ramp_of(base: ir.Expr, stride: ir.Expr, lanes: int) -> ir.Expr:
    return base if lanes == 1 else ir.Ramp(base, stride, lanes)


class LaneSlicer:
    """Slices vector index forms along one axis of their lanes' shape. Each
    form has its own rule (``_FORMS``); a form without one cannot be cut."""

    def __init__(self, accumulator_load: LoadHook | None = None):
        self.accumulator_load = accumulator_load

    def slice(self, e: ir.Expr, extents: tuple[int, ...], axis: int, start: int, count: int) -> ir.Expr | None:
        """Lanes of ``e`` (laid out row-major over ``extents``) with index
        ``axis`` in [start, start + count); None if the form does not allow it."""
        if isinstance(e, ir.Load) and e.type.lanes > 1 and math.prod(extents) == e.type.lanes:
            # the accumulator's own reads move to their tile's slot, even
            # where the slice keeps every lane (a block one tile wide)
            hooked = self.accumulator_load(e, axis, start, count) if self.accumulator_load else None
            if hooked is not None:
                return hooked
        if e.type.lanes == 1:
            return e
        if start == 0 and count == extents[axis] and not self._moves_loads_in(e):
            return e
        if math.prod(extents) != e.type.lanes:
            return None
        form = self._FORMS.get(type(e))
        return None if form is None else form(self, e, extents, axis, start, count)

    def _moves_loads_in(self, e: ir.Expr) -> bool:
        """Whether slicing ``e`` whole may still change it: the hook may move
        a vector load inside it (an update reads the block it writes)."""
        return self.accumulator_load is not None and any(
            isinstance(n, ir.Load) and n.type.lanes > 1 for n in ir.walk(e))

    def _ramp(self, e: ir.Ramp, extents: tuple[int, ...], axis: int, start: int,
              count: int) -> ir.Expr | None:
        p = split_extents(extents, e.lanes)
        if p is None:
            finer = refined(extents, e.lanes, axis, start, count)
            return None if finer is None else self._ramp(e, *finer)
        if axis >= p:
            base = self.slice(e.base, extents[p:], axis - p, start, count)
            stride = self.slice(e.stride, extents[p:], axis - p, start, count)
            return None if base is None or stride is None else ir.Ramp(base, stride, e.lanes)
        # The ramp's own lanes run over extents[:p], row-major: lane i of
        # the ramp is base + i * stride, and i = sum(index_d * weight_d).
        weights = [math.prod(extents[d + 1 : p]) for d in range(p)]
        base = plus(e.base, scaled(e.stride, start * weights[axis]))
        inner = ramp_of(base, e.stride, count * weights[axis])
        outer_lanes = math.prod(extents[:axis])
        if outer_lanes == 1:
            return inner
        # the outer ramp's stride is as wide as its base: the inner ramp's
        # lanes, each of them as wide as the (maybe vector) stride
        step = scaled(e.stride, weights[axis - 1])
        copies = inner.type.lanes // step.type.lanes
        return ir.Ramp(inner, step if copies == 1 else ir.Broadcast(step, copies), outer_lanes)

    def _broadcast(self, e: ir.Broadcast, extents: tuple[int, ...], axis: int, start: int,
                   count: int) -> ir.Expr | None:
        p = split_extents(extents, e.lanes)
        if p is None:
            finer = refined(extents, e.lanes, axis, start, count)
            return None if finer is None else self._broadcast(e, *finer)
        if axis >= p:
            inner = self.slice(e.value, extents[p:], axis - p, start, count)
            return None if inner is None else ir.Broadcast(inner, e.lanes)
        # Slicing the broadcast's own lanes keeps the same value in fewer of them.
        return ir.Broadcast(e.value, e.lanes // extents[axis] * count)

    def _load(self, e: ir.Load, extents: tuple[int, ...], axis: int, start: int, count: int) -> ir.Expr | None:
        index = self.slice(e.index, extents, axis, start, count)
        if index is None or e.predicate is not None:
            return None
        return ir.Load(e.name, index, e.type.with_lanes(index.type.lanes))

    def _binary(self, e: ir.Binary, extents: tuple[int, ...], axis: int, start: int,
                count: int) -> ir.Expr | None:
        a = self.slice(e.a, extents, axis, start, count)
        b = self.slice(e.b, extents, axis, start, count)
        return None if a is None or b is None else ir.Binary(e.op, a, b)

    def _cast(self, e: ir.Cast, extents: tuple[int, ...], axis: int, start: int, count: int) -> ir.Expr | None:
        value = self.slice(e.value, extents, axis, start, count)
        return None if value is None else ir.Cast(e.type.with_lanes(value.type.lanes), value)

    def _vector_reduce(self, e: ir.VectorReduce, extents: tuple[int, ...], axis: int, start: int,
                       count: int) -> ir.Expr | None:
        # The reduced value has one more, innermost, axis: the products summed into each lane.
        factor = e.value.type.lanes // e.type.lanes
        value = self.slice(e.value, (*extents, factor), axis, start, count)
        if value is None:
            return None
        return ir.VectorReduce(e.op, value, e.type.with_lanes(value.type.lanes // factor))

    def _lanewise(self, e: ir.Expr, extents: tuple[int, ...], axis: int, start: int,
                  count: int) -> ir.Expr | None:
        """A select, or a call that computes lane by lane (a hint, float math)."""
        return map_lanewise(e, lambda x: self.slice(x, extents, axis, start, count))

    _FORMS: ClassVar[dict[type, Callable[..., ir.Expr | None]]] = {
        ir.Ramp: _ramp,
        ir.Broadcast: _broadcast,
        ir.Load: _load,
        ir.Binary: _binary,
        ir.Cast: _cast,
        ir.VectorReduce: _vector_reduce,
        ir.Select: _lanewise,
        ir.Call: _lanewise,
    }
    """The rule for each form that slices, by the node's class (the IR's
    node classes have no subclasses, so the class alone picks it)."""


PLAIN_SLICER = LaneSlicer()
"""A slicer that treats every load alike (operands, not the accumulator)."""
