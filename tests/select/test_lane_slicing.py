"""Lane slicing on generated index forms: nested ramps and broadcasts over
drawn shapes, sliced along every axis, must keep exactly the selected lanes
and stay well typed (a ramp's stride as wide as its base)."""

from __future__ import annotations

import math
import random

import pytest

from hardboiled import ir
from hardboiled.ir.invariants import node_problem
from hardboiled.select.lane_slicing import PLAIN_SLICER

from .lanes import index_lanes

EXTENTS = (1, 2, 3, 4, 6, 8)


def _index(draw: random.Random, extents: tuple[int, ...]) -> ir.Expr:
    """An index over ``extents`` (row-major): the outermost axes are a ramp
    or a broadcast of an index over the rest, the stride a scalar or a
    broadcast as wide as the base."""
    if not extents or math.prod(extents) == 1:
        return ir.IntImm(draw.randrange(0, 100))
    split = draw.randrange(1, len(extents) + 1)
    outer, inner = math.prod(extents[:split]), _index(draw, extents[split:])
    if outer == 1:
        return inner
    if draw.random() < 0.3:
        return ir.Broadcast(inner, outer)
    step = ir.IntImm(draw.randrange(1, 200))
    stride = step if inner.type.lanes == 1 else ir.Broadcast(step, inner.type.lanes)
    return ir.Ramp(inner, stride, outer)


def _coarser(draw: random.Random, fine: tuple[int, ...]) -> tuple[int, ...]:
    """``fine`` with some neighbouring axes merged: the forms then run over
    parts of an axis (what ``refined`` handles)."""
    merged = [fine[0]]
    for extent in fine[1:]:
        if draw.random() < 0.3:
            merged[-1] *= extent
        else:
            merged.append(extent)
    return tuple(merged)


def _kept(whole: list[int], extents: tuple[int, ...], axis: int, start: int, count: int) -> list[int]:
    stride = math.prod(extents[axis + 1:])
    return [lane for i, lane in enumerate(whole) if start <= (i // stride) % extents[axis] < start + count]


@pytest.mark.parametrize("seed", range(2))
def test_every_slice_of_a_drawn_index_keeps_its_lanes_and_types(seed: int) -> None:
    draw = random.Random(seed)
    sliced_somewhere = 0
    for _ in range(150):
        fine = tuple(draw.choice(EXTENTS) for _ in range(draw.randrange(1, 5)))
        index = _index(draw, fine)
        extents = _coarser(draw, fine)
        whole = index_lanes(index)
        for axis, extent in enumerate(extents):
            for start in range(extent):
                for count in range(1, extent - start + 1):
                    sliced = PLAIN_SLICER.slice(index, extents, axis, start, count)
                    if sliced is None:
                        continue  # a form the slicer cannot cut (a miss, never a wrong cut)
                    problems = [p for node in ir.walk(sliced) if (p := node_problem(node))]
                    assert not problems, (index, extents, axis, start, count, problems)
                    assert index_lanes(sliced) == _kept(whole, extents, axis, start, count), (
                        index, extents, axis, start, count)
                    sliced_somewhere += 1
    assert sliced_somewhere > 1000
