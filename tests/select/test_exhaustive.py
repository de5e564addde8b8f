"""Expressions over their loops' ranges (select/exhaustive.py): ``affine``
and ``decided``, which evaluate on every point at once, against the same
questions answered one point at a time with ``evaluator``, on expressions
drawn from seeds."""

from __future__ import annotations

import random

import pytest

from hardboiled import ir
from hardboiled.select.exhaustive import NotEvaluable, Ranges, affine, decided, evaluator, free_names, points

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
    return ir.Binary(rng.choice(_COMPARISONS), _integer(rng, depth, let), _integer(rng, depth, let))


def _point_by_point(e: ir.Expr, ranges: Ranges, known: dict[str, ir.Expr]) -> list[int] | None:
    """The values on every point of the ranges, or None where one cannot be
    evaluated, or where ``e`` reads a name without a range (even in a
    branch no point takes: neither question is asked then)."""
    if any(name not in ranges for name in free_names(e, known)):
        return None
    evaluate = evaluator(known)
    try:
        return [evaluate(e, point) for point in points(sorted(ranges), ranges)]
    except NotEvaluable:
        return None


@pytest.mark.parametrize("seed", range(6))
def test_on_every_point_at_once_as_point_by_point(seed: int) -> None:
    rng = random.Random(seed)
    checked = {"affine": 0, "not affine": 0, "decided": 0}
    for _ in range(300):
        ranges = {name: (low, low + rng.randrange(0, 6)) for name, low in
                  (("x", rng.randrange(-3, 3)), ("y", rng.randrange(0, 20)), ("z", rng.randrange(-8, 8)))}
        known = {"t": _integer(rng, 1, let="x")}
        e = _integer(rng, rng.randrange(1, 4))
        values = _point_by_point(e, ranges, known)
        found = affine(e, ranges, known)
        if found is None:
            # Not affine there, or not evaluable somewhere: point by point agrees.
            if values is not None:
                slopes_fit = _is_affine(values, ranges)
                assert not slopes_fit, (e, ranges)
                checked["not affine"] += 1
        else:
            assert values is not None and _point_by_point(found, ranges, {}) == values, (e, found)
            checked["affine"] += 1
        condition = _condition(rng, 2)
        truths = _point_by_point(condition, ranges, known)
        expected = None if truths is None or len({bool(v) for v in truths}) != 1 else bool(truths[0])
        assert decided(condition, ranges, known) == expected, (condition, ranges)
        checked["decided"] += expected is not None
    assert min(checked.values()) > 10, checked


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
