"""Integer expressions of loop variables over their constant ranges, decided by checking every point.

A loop nest of constant bounds gives each of its variables a range; an
expression of them (and of constants) takes finitely many values there.
Where the ranges hold few enough points, the expression can be checked at
every one: found equal to an affine expression everywhere, or to a
constant, it may be replaced by it exactly. select/specialize.py and
select/compact.py rewrite the tiles a GuardWithIf tail sizes this way.
Halide's semantics are kept: division and modulo are Euclidean, x / 0 and
x % 0 are 0, and a value past int32 is left to the program (not evaluated).

``affine`` and ``decided`` evaluate an expression on all its points at
once, in numpy arrays (``_on_every_point``): one pass over the expression
rather than one per point (a GuardWithIf tail of a K=80 matmul asked 50,000
evaluations of one tree). A point where the expression cannot be evaluated
(a value past int32, a name without a value) is marked, not raised, so that
a ``select`` fails only at the points that take the failing branch, as
``evaluator`` does point by point.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

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
    """The affine expression of the ranges' variables equal to ``e`` on
    every point of their ranges, or None."""
    names = enumerable_names(e, ranges, known)
    if names is None or any(ranges[n][1] < ranges[n][0] for n in names):
        return None  # (no point at all: nothing says what it would be)
    grid = _grid(names, ranges)
    values = _values(e, grid, names, ranges, known)
    if values is None:
        return None
    lowest = {n: ranges[n][0] for n in names}
    base = int(values[0])  # the first point is the lowest (grid's order)
    # One step up the range of n is the point _stride(n) further in the grid.
    slopes = {n: int(values[_stride(names, ranges, n)]) - base for n in names if ranges[n][1] > ranges[n][0]}
    expected = values * 0 + base
    for n, slope in slopes.items():
        expected += slope * (grid[n] - lowest[n])
    if not (values == expected).all():
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
    if any(n not in ranges for n in names) or not 0 < _point_count(names, ranges) <= MAX_POINTS:
        return None
    values = _values(condition, _grid(names, ranges), names, ranges, known)
    if values is None:
        return None
    true = values != 0
    if true.all():
        return True
    return False if not true.any() else None


def _point_count(names: list[str], ranges: Ranges) -> int:
    count = 1
    for n in names:
        count *= max(0, ranges[n][1] - ranges[n][0] + 1)
    return count


def _stride(names: list[str], ranges: Ranges, name: str) -> int:
    """How far apart in the grid two points are whose ``name`` differs by one."""
    return _point_count(names[names.index(name) + 1:], ranges)


def _grid(names: list[str], ranges: Ranges) -> dict[str, Any]:
    """Every point of the ranges, as one int64 array per name, in the order
    ``points`` gives them (the last name varies fastest)."""
    import numpy as np

    axes = [np.arange(ranges[n][0], ranges[n][1] + 1, dtype=np.int64) for n in names]
    mesh = np.meshgrid(*axes, indexing="ij") if axes else []
    grid: dict[str, Any] = {n: m.ravel() for n, m in zip(names, mesh)}
    grid[_SIZE] = _point_count(names, ranges)
    return grid


_SIZE = "\0size"
"""The number of points, in a grid (not a name: a name has no NUL)."""


def _values(e: ir.Expr, grid: dict[str, Any], names: list[str], ranges: Ranges, known: dict[str, ir.Expr]) -> Any:
    """``e``'s value on each point of ``grid`` (an int64 array), or None
    where it cannot be evaluated on some point. All at once where every
    constant it holds is an int32 (then no value that is not past int32
    overflows int64 on the way); point by point otherwise."""
    if _int32_constants(e, known, set()):
        return _on_every_point(e, grid, known)
    import numpy as np

    evaluate = evaluator(known)
    try:
        return np.array([evaluate(e, point) for point in points(names, ranges)], dtype=np.int64)
    except (NotEvaluable, OverflowError):
        return None


def _int32_constants(e: ir.Expr, known: dict[str, ir.Expr], seen: set[str]) -> bool:
    """Whether every integer constant of ``e``, and of the lets it reads,
    is an int32 value."""
    for n in ir.walk(e):
        if isinstance(n, (ir.IntImm, ir.UIntImm)) and not -(1 << 31) <= n.value < (1 << 31):
            return False
        if isinstance(n, ir.Variable) and n.name in known and n.name not in seen:
            seen.add(n.name)
            if not _int32_constants(known[n.name], known, seen):
                return False
    return True


def _on_every_point(e: ir.Expr, grid: dict[str, Any], known: dict[str, ir.Expr]) -> Any:
    """``e``'s value on each point of ``grid`` (an int64 array), or None
    where it cannot be evaluated on some point."""
    import numpy as np

    size = grid[_SIZE]
    failing = (np.zeros(size, dtype=np.int64), np.ones(size, dtype=bool))
    lets: dict[str, tuple[Any, Any]] = {}

    def evaluate(e: ir.Expr) -> tuple[Any, Any]:
        """The values, and where they could not be computed."""
        if isinstance(e, (ir.IntImm, ir.UIntImm)):
            return np.full(size, e.value, dtype=np.int64), np.zeros(size, dtype=bool)
        if isinstance(e, ir.Variable):
            if e.name in grid:
                return grid[e.name], np.zeros(size, dtype=bool)
            if e.name in known:
                if e.name not in lets:
                    lets[e.name] = evaluate(known[e.name])
                return lets[e.name]
            return failing
        if isinstance(e, ir.Binary):
            (a, a_bad), (b, b_bad) = evaluate(e.a), evaluate(e.b)
            if e.type.lanes != 1 or not (e.a.type.is_int or e.a.type.is_uint):
                return failing
            value = _binary_arrays(e.op, a, b)
            bad = a_bad | b_bad
            if not e.type.is_bool:
                bad = bad | (value < -(1 << 31)) | (value >= (1 << 31))  # past int32: left to the program
            return value, bad
        if isinstance(e, ir.Not):
            value, bad = evaluate(e.value)
            return (value == 0).astype(np.int64), bad
        if isinstance(e, ir.Select):
            (condition, condition_bad), (t, t_bad), (f, f_bad) = map(evaluate, (e.condition, e.true_value,
                                                                                 e.false_value))
            chosen = condition != 0
            return np.where(chosen, t, f), condition_bad | np.where(chosen, t_bad, f_bad)
        if isinstance(e, ir.Call) and e.args and e.type.lanes == 1:
            operation = operations.find(e.name)
            if operation is not None and operation.kind is operations.Kind.PASS_THROUGH:
                return evaluate(e.args[0])
        return failing

    with np.errstate(all="ignore"):  # at points already marked failing, garbage may overflow
        values, bad = evaluate(e)
    return None if bad.any() else values


def _binary_arrays(op: ir.BinOp, a: Any, b: Any) -> Any:
    """``integer_binary`` on int64 arrays, point by point."""
    import numpy as np

    if op is ir.BinOp.DIV or op is ir.BinOp.MOD:
        zero = b == 0
        divisor = np.where(zero, 1, b)
        remainder = np.mod(a, np.abs(divisor))  # never negative, as Python's % by a positive number
        value = remainder if op is ir.BinOp.MOD else (a - remainder) // divisor
        return np.where(zero, 0, value)
    if op is ir.BinOp.AND or op is ir.BinOp.OR:
        both = (a != 0) & (b != 0) if op is ir.BinOp.AND else (a != 0) | (b != 0)
        return both.astype(np.int64)
    if op is ir.BinOp.MIN or op is ir.BinOp.MAX:
        return (np.minimum if op is ir.BinOp.MIN else np.maximum)(a, b)
    value = _ARRAY_OPERATIONS[op](a, b)
    return value.astype(np.int64) if value.dtype == bool else value


_ARRAY_OPERATIONS: dict[ir.BinOp, Callable[[Any, Any], Any]] = {
    ir.BinOp.ADD: lambda a, b: a + b, ir.BinOp.SUB: lambda a, b: a - b, ir.BinOp.MUL: lambda a, b: a * b,
    ir.BinOp.EQ: lambda a, b: a == b, ir.BinOp.NE: lambda a, b: a != b,
    ir.BinOp.LT: lambda a, b: a < b, ir.BinOp.LE: lambda a, b: a <= b,
    ir.BinOp.GT: lambda a, b: a > b, ir.BinOp.GE: lambda a, b: a >= b,
}


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
