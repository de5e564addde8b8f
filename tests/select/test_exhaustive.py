"""Expressions over their loops' ranges (select/exhaustive.py): ``affine``
and ``decided``, which evaluate on every point at once, against the same
questions answered one point at a time with ``evaluator``, on expressions
drawn from seeds."""

from __future__ import annotations

import random

import pytest

from hardboiled import ir
from hardboiled.select.exhaustive import (
    MAX_POINTS,
    NotEvaluable,
    Ranges,
    affine,
    decided,
    evaluator,
    free_names,
    points,
)

_ARITHMETIC = (ir.BinOp.ADD, ir.BinOp.SUB, ir.BinOp.MUL, ir.BinOp.DIV, ir.BinOp.MOD, ir.BinOp.MIN, ir.BinOp.MAX)
_COMPARISONS = (ir.BinOp.EQ, ir.BinOp.NE, ir.BinOp.LT, ir.BinOp.LE, ir.BinOp.GT, ir.BinOp.GE)


def _integer(rng: random.Random, depth: int, let: str = "t") -> ir.Expr:
    roll = rng.random()
    if depth == 0 or roll < 0.25:
        choice = rng.random()
        if choice < 0.45:
            return ir.Variable(rng.choice(["x", "y", "z"]), ir.INT32)
        if choice < 0.55:
            return ir.Variable(rng.choice([let, "unknown"]), ir.INT32)  # a let's value; a name with none
        return ir.IntImm(rng.choice([0, 1, -1, 2, 3, 7, 16, -24, 1 << 20, (1 << 31) - 1]))
    if roll < 0.4:
        argument = _integer(rng, depth - 1, let)
        return ir.Call("likely", (argument,), argument.type)  # passes its argument through
    if roll < 0.45:
        return ir.Not(_integer(rng, depth - 1, let))
    if roll < 0.85:
        return ir.Binary(rng.choice(_ARITHMETIC), _integer(rng, depth - 1, let), _integer(rng, depth - 1, let))
    return ir.Select(_condition(rng, depth - 1, let), _integer(rng, depth - 1, let), _integer(rng, depth - 1, let))


def _condition(rng: random.Random, depth: int, let: str = "t") -> ir.Expr:
    roll = rng.random()
    if depth > 0 and roll < 0.2:
        return ir.Binary(rng.choice([ir.BinOp.AND, ir.BinOp.OR]), _condition(rng, depth - 1, let),
                         _condition(rng, depth - 1, let))
    if depth > 0 and roll < 0.3:
        return ir.Not(_condition(rng, depth - 1, let))
    operands = [_integer(rng, depth, let), _integer(rng, depth, let)]
    if rng.random() < 0.2:  # a 64-bit value past int32 compared; a cast nothing evaluates
        operands[rng.randrange(2)] = rng.choice([
            ir.IntImm(1 << 40, ir.Int(64)), ir.IntImm(-(1 << 40), ir.Int(64)),
            ir.UIntImm((1 << 64) - 1, ir.UInt(64)), ir.Cast(ir.UInt(64), ir.Variable("x"))])
    return ir.Binary(rng.choice(_COMPARISONS), *operands)


def _point_by_point(e: ir.Expr, ranges: Ranges, known: dict[str, ir.Expr],
                    names: list[str] | None = None) -> list[int] | None:
    """The values on every point of the ranges of ``names`` (those ``e``
    reads, by default), or None where one cannot be evaluated, or where
    ``e`` reads a name without a range (even in a branch no point takes:
    neither question is asked then)."""
    names = sorted(set(free_names(e, known))) if names is None else names
    if any(name not in ranges for name in names):
        return None
    evaluate = evaluator(known)
    try:
        return [evaluate(e, point) for point in points(names, ranges)]
    except NotEvaluable:
        return None


@pytest.mark.parametrize("seed", range(6))
def test_on_every_point_at_once_as_point_by_point(seed: int) -> None:
    rng = random.Random(seed)
    checked = {"affine": 0, "not affine": 0, "decided": 0, "unchecked": 0}
    for _ in range(300):
        # Now and then a range with no point, or more points than are checked.
        widths = rng.choice([(6, 6, 6), (6, 6, 6), (6, 0, 6), (20, 20, 20)])
        ranges = {name: (low, low + rng.randrange(-1 if width == 0 else 0, width)) for (name, low), width in
                  zip((("x", rng.randrange(-3, 3)), ("y", rng.randrange(0, 20)), ("z", rng.randrange(-8, 8))), widths)}
        known = {"t": _integer(rng, 1, let="x")}
        e = _integer(rng, rng.randrange(1, 4))
        values = _point_by_point(e, ranges, known)
        found = affine(e, ranges, known)
        if not _checked(e, ranges, known):
            assert found is None and decided(e, ranges, known) is None
            checked["unchecked"] += 1
            continue
        if found is None:
            # Not affine there, or not evaluable somewhere: point by point agrees.
            if values is not None:
                slopes_fit = _is_affine(values, {name: ranges[name] for name in set(free_names(e, known))})
                assert not slopes_fit, (e, ranges)
                checked["not affine"] += 1
        else:
            names = sorted(set(free_names(e, known)))
            assert values is not None and _point_by_point(found, ranges, {}, names) == values, (e, found)
            checked["affine"] += 1
        condition = _condition(rng, 2)
        truths = _point_by_point(condition, ranges, known) if _checked(condition, ranges, known) else None
        expected = None if truths is None or len({bool(v) for v in truths}) != 1 else bool(truths[0])
        assert decided(condition, ranges, known) == expected, (condition, ranges)
        checked["decided"] += expected is not None
    assert min(checked.values()) > 10, checked


def _checked(e: ir.Expr, ranges: Ranges, known: dict[str, ir.Expr]) -> bool:
    """Whether the expression's points are looked at: every name it reads
    has a range with a point, and they make at most MAX_POINTS points."""
    names = set(free_names(e, known))
    if any(name not in ranges or ranges[name][1] < ranges[name][0] for name in names):
        return False
    count = 1
    for name in names:
        count *= ranges[name][1] - ranges[name][0] + 1
    return count <= MAX_POINTS


def _is_affine(values: list[int], ranges: Ranges) -> bool:
    names = sorted(ranges)
    grid = list(points(names, ranges))
    base = values[0]
    slopes = {}
    for n in names:
        if ranges[n][1] > ranges[n][0]:
            step = next(i for i, p in enumerate(grid) if p[n] == ranges[n][0] + 1
                        and all(p[m] == ranges[m][0] for m in names if m != n))
            slopes[n] = values[step] - base
    return all(v == base + sum(s * (p[n] - ranges[n][0]) for n, s in slopes.items()) for v, p in zip(values, grid))
