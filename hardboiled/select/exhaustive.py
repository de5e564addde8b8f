"""Integer expressions of loop variables over their constant ranges, decided by checking every point.

A loop nest of constant bounds gives each of its variables a range; an
expression of them (and of constants) takes finitely many values there.
Where the ranges hold few enough points, the expression can be checked at
every one: found equal to an affine expression everywhere, or to a
constant, it may be replaced by it exactly. select/specialize.py and
select/compact.py rewrite the tiles a GuardWithIf tail sizes this way.
Halide's semantics are kept: division and modulo are Euclidean, x / 0 and
x % 0 are 0, and a value past int32 is left to the program (not evaluated).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

from hardboiled import ir
from hardboiled.ir import operations
from hardboiled.ir.visitor import rewrite

MAX_POINTS = 4096
"""The most points of the enclosing loops' ranges an expression is checked on."""

Ranges = dict[str, tuple[int, int]]
"""Loop variable -> its inclusive range."""

Known = dict[str, ir.Expr]
"""Let-bound name -> its value, where that is an expression of the ranges' variables."""

_NONLINEAR = (ir.BinOp.DIV, ir.BinOp.MOD, ir.BinOp.MIN, ir.BinOp.MAX)

class NotEvaluable(Exception):
    pass


def free_names(e: ir.Expr, known: dict[str, ir.Expr]) -> Iterator[str]:
    for n in ir.walk(e):
        if isinstance(n, ir.Variable):
            if n.name in known:
                yield from free_names(known[n.name], {})
            else:
                yield n.name


def depends_only_on(e: ir.Expr, ranges: Ranges) -> bool:
    return e.type == ir.INT32 and all(
        isinstance(n, (ir.IntImm, ir.Variable, ir.Binary)) and (not isinstance(n, ir.Variable) or n.name in ranges)
        for n in ir.walk(e))


def simplified(e: ir.Expr, ranges: Ranges, known: dict[str, ir.Expr]) -> ir.Expr:
    """``e`` with each integer subexpression of the ranges' variables that
    is not yet affine replaced by the affine expression equal to it on
    every point of the ranges."""
    if not ranges:
        return e

    def replace(node: ir.Node) -> ir.Node | None:
        if not isinstance(node, ir.Expr) or node.type != ir.INT32 or not _worth_it(node, known):
            return None
        return affine(node, ranges, known)

    return rewrite(e, replace, (ir.Expr,))


def _worth_it(e: ir.Expr, known: dict[str, ir.Expr]) -> bool:
    return any((isinstance(n, ir.Binary) and n.op in _NONLINEAR) or isinstance(n, (ir.Select, ir.Call))
               or (isinstance(n, ir.Variable) and n.name in known) for n in ir.walk(e))


def points(names: list[str], ranges: Ranges) -> Iterator[dict[str, int]]:
    for values in itertools.product(*(range(ranges[n][0], ranges[n][1] + 1) for n in names)):
        yield dict(zip(names, values))


def enumerable_names(e: ir.Expr, ranges: Ranges, known: dict[str, ir.Expr]) -> list[str] | None:
    """The names ``e`` reads, when each has a range and together they span
    at most MAX_POINTS points; None otherwise."""
    names = sorted(set(free_names(e, known)))
    if any(n not in ranges for n in names):
        return None
    count = 1
    for n in names:
        count *= ranges[n][1] - ranges[n][0] + 1
    return names if count <= MAX_POINTS else None


def affine(e: ir.Expr, ranges: Ranges, known: dict[str, ir.Expr]) -> ir.Expr | None:
    names = enumerable_names(e, ranges, known)
    if names is None:
        return None
    evaluate = evaluator(known)
    try:
        lowest = {n: ranges[n][0] for n in names}
        base = evaluate(e, lowest)
        slopes = {n: evaluate(e, {**lowest, n: lowest[n] + 1}) - base
                  for n in names if ranges[n][1] > ranges[n][0]}
        for point in points(names, ranges):
            if evaluate(e, point) != base + sum(s * (point[n] - lowest[n]) for n, s in slopes.items()):
                return None
    except NotEvaluable:
        return None
    offset = base - sum(s * lowest[n] for n, s in slopes.items())
    result: ir.Expr | None = None
    for n, s in slopes.items():
        if s:
            term: ir.Expr = ir.Variable(n) if s == 1 else ir.Binary(ir.BinOp.MUL, ir.Variable(n), ir.IntImm(s))
            result = term if result is None else ir.Binary(ir.BinOp.ADD, result, term)
    if result is None:
        return ir.IntImm(offset)
    return result if offset == 0 else ir.Binary(ir.BinOp.ADD, result, ir.IntImm(offset))


def decided(condition: ir.Expr, ranges: Ranges, known: dict[str, ir.Expr]) -> bool | None:
    """True or False where ``condition`` has that value on every point of
    the ranges; None where it varies or cannot be evaluated."""
    if condition.type.lanes != 1:
        return None
    names = sorted(set(free_names(condition, known)))
    if any(n not in ranges for n in names):
        return None
    evaluate = evaluator(known)
    seen: set[bool] = set()
    try:
        for count, point in enumerate(points(names, ranges)):
            if count >= MAX_POINTS:
                return None
            seen.add(bool(evaluate(condition, point)))
            if len(seen) > 1:
                return None
    except NotEvaluable:
        return None
    return seen.pop() if seen else None


def evaluator(known: dict[str, ir.Expr]) -> Callable[[ir.Expr, dict[str, int]], int]:
    def evaluate(e: ir.Expr, point: dict[str, int]) -> int:
        if isinstance(e, (ir.IntImm, ir.UIntImm)):
            return e.value
        if isinstance(e, ir.Variable):
            if e.name in point:
                return point[e.name]
            if e.name in known:
                return evaluate(known[e.name], point)
            raise NotEvaluable
        if isinstance(e, ir.Binary):
            return _binary(e, evaluate(e.a, point), evaluate(e.b, point))
        if isinstance(e, ir.Not):
            return int(not evaluate(e.value, point))
        if isinstance(e, ir.Select):
            chosen = e.true_value if evaluate(e.condition, point) else e.false_value
            return evaluate(chosen, point)
        if isinstance(e, ir.Call) and e.args and e.type.lanes == 1:
            operation = operations.find(e.name)
            if operation is not None and operation.kind is operations.Kind.PASS_THROUGH:
                return evaluate(e.args[0], point)
        raise NotEvaluable

    return evaluate


def integer_binary(op: ir.BinOp, a: int, b: int) -> int:
    """``a op b`` on Python integers as Halide computes it on integers, before
    any wrapping: division and modulo Euclidean (the remainder is never
    negative), x / 0 and x % 0 both 0; comparisons and logic as 0 or 1."""
    if op is ir.BinOp.DIV:
        return (a - a % abs(b)) // b if b else 0
    if op is ir.BinOp.MOD:
        return a % abs(b) if b else 0
    return _SIMPLE[op](a, b)


def _binary(e: ir.Binary, a: int, b: int) -> int:
    if e.type.lanes != 1 or not (e.a.type.is_int or e.a.type.is_uint):
        raise NotEvaluable
    value = integer_binary(e.op, a, b)
    if not e.type.is_bool and not -(1 << 31) <= value < (1 << 31):
        raise NotEvaluable  # past int32: leave wrapping to the program
    return value


_SIMPLE: dict[ir.BinOp, Callable[[int, int], int]] = {
    ir.BinOp.ADD: lambda a, b: a + b, ir.BinOp.SUB: lambda a, b: a - b, ir.BinOp.MUL: lambda a, b: a * b,
    ir.BinOp.MIN: min, ir.BinOp.MAX: max,
    ir.BinOp.EQ: lambda a, b: int(a == b), ir.BinOp.NE: lambda a, b: int(a != b),
    ir.BinOp.LT: lambda a, b: int(a < b), ir.BinOp.LE: lambda a, b: int(a <= b),
    ir.BinOp.GT: lambda a, b: int(a > b), ir.BinOp.GE: lambda a, b: int(a >= b),
    ir.BinOp.AND: lambda a, b: int(bool(a) and bool(b)), ir.BinOp.OR: lambda a, b: int(bool(a) or bool(b)),
}
