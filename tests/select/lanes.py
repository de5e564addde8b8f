"""The lanes of an integer index, worked out lane by lane: what the lane
slicing tests compare a sliced index against."""

from __future__ import annotations

from hardboiled import ir


def index_lanes(e: ir.Expr) -> list[int]:
    """The lanes of an index of integers, ramps, broadcasts, sums and products."""
    if isinstance(e, ir.IntImm):
        return [e.value]
    if isinstance(e, ir.Broadcast):
        return index_lanes(e.value) * e.lanes
    if isinstance(e, ir.Ramp):
        base, stride = index_lanes(e.base), index_lanes(e.stride)
        assert len(base) == len(stride)
        return [b + i * s for i in range(e.lanes) for b, s in zip(base, stride, strict=True)]
    if isinstance(e, ir.Binary):
        a, b = index_lanes(e.a), index_lanes(e.b)
        a, b = (a * len(b), b) if len(a) == 1 else (a, b * len(a) if len(b) == 1 else b)
        op = {ir.BinOp.ADD: int.__add__, ir.BinOp.MUL: int.__mul__}[e.op]
        return [op(x, y) for x, y in zip(a, b, strict=True)]
    raise AssertionError(type(e))
