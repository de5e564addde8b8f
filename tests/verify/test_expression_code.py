"""The interpreter's expressions as closures (verify/expression_code.py):
arithmetic on constants is computed once, when the expression is made into
code, and must give the bits evaluating it every time gives; errors stay
where evaluation meets them; a float sum of lanes rounds left to right."""

from __future__ import annotations

import random

import ml_dtypes
import numpy as np
import pytest

from hardboiled import ir
from hardboiled.ir.printer import print_ir
from hardboiled.ir.visitor import map_expr
from hardboiled.verify.expression_code import code_of
from hardboiled.verify.interp import Interpreter, InterpreterError
from hardboiled.verify.values import dtype_of

_TYPES = (ir.Int(32), ir.Int(16), ir.UInt(8), ir.UInt(32), ir.Float(32), ir.Float(16), ir.BFloat(16), ir.Float(64))
_ARITHMETIC = (ir.BinOp.ADD, ir.BinOp.SUB, ir.BinOp.MUL, ir.BinOp.DIV, ir.BinOp.MOD, ir.BinOp.MIN, ir.BinOp.MAX)
_COMPARISONS = (ir.BinOp.LT, ir.BinOp.LE, ir.BinOp.EQ, ir.BinOp.NE, ir.BinOp.GT, ir.BinOp.GE)


def _literal(t: ir.Type, rng: random.Random) -> ir.Expr:
    if t.is_float:
        return ir.FloatImm(rng.choice([0.0, -0.0, 1.5, -3.25, 1e-3, 65504.0, 3e38, rng.uniform(-100, 100)]), t)
    if t.code is ir.TypeCode.UINT:
        return ir.UIntImm(rng.randrange(0, 1 << min(t.bits, 16)), t)
    return ir.IntImm(rng.randrange(-(1 << (t.bits - 2)), 1 << (t.bits - 2)), t)


def _expression(t: ir.Type, lanes: int, depth: int, rng: random.Random) -> ir.Expr:
    """A random expression of type ``t`` x ``lanes`` whose leaves are literals."""
    choice = rng.randrange(7) if depth > 0 else 0
    if choice == 0:  # a leaf: a literal, broadcast or ramped to the lanes
        if lanes == 1:
            return _literal(t, rng)
        if rng.random() < 0.5 and not t.is_float:
            return ir.Ramp(_literal(t, rng), _literal(t, rng), lanes)
        return ir.Broadcast(_literal(t, rng), lanes)
    if choice == 1:
        return ir.Cast(t.with_lanes(lanes), _expression(rng.choice(_TYPES), lanes, depth - 1, rng))
    if choice == 2:
        condition = ir.Binary(rng.choice(_COMPARISONS), _expression(t, lanes, depth - 1, rng),
                              _expression(t, lanes, depth - 1, rng))
        return ir.Select(condition, _expression(t, lanes, depth - 1, rng), _expression(t, lanes, depth - 1, rng))
    if choice == 3:
        factor = rng.choice([1, 2, 4])
        ops = [ir.ReduceOp.ADD, ir.ReduceOp.MUL, ir.ReduceOp.MIN, ir.ReduceOp.MAX]
        if not t.is_float:
            ops.append(ir.ReduceOp.SATURATING_ADD)
        return ir.VectorReduce(rng.choice(ops), _expression(t, lanes * factor, depth - 1, rng),
                               t.with_lanes(lanes))
    if choice == 4 and lanes > 1:
        halves = _expression(t, lanes, depth - 1, rng), _expression(t, lanes, depth - 1, rng)
        return ir.Shuffle(halves, tuple(rng.randrange(2 * lanes) for _ in range(lanes)))
    return ir.Binary(rng.choice(_ARITHMETIC), _expression(t, lanes, depth - 1, rng),
                     _expression(t, lanes, depth - 1, rng))


def _as_variables(e: ir.Expr, bound: dict[str, np.ndarray]) -> ir.Expr:
    """``e`` with every literal read from a variable bound to its value:
    nothing in it is a constant, so nothing is computed in advance."""
    def replace(node: object) -> ir.Expr | None:
        if isinstance(node, (ir.IntImm, ir.UIntImm, ir.FloatImm)):
            name = f"v{len(bound)}"
            bound[name] = np.array([node.value], dtype=np.float64 if node.type.is_float else np.int64).astype(
                dtype_of(node.type))
            return ir.Variable(name, node.type)
        return None
    return map_expr(e, replace)


def _same_bits(a: object, b: object) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f" or a.dtype == ml_dtypes.bfloat16:
        return bool(np.array_equal(a.astype(np.float64), b.astype(np.float64), equal_nan=True))
    return bool(np.array_equal(a, b))


@pytest.mark.parametrize("seed", range(3))
def test_arithmetic_on_constants_computed_in_advance_gives_what_evaluating_it_gives(seed: int) -> None:
    rng = random.Random(seed)
    folded = failed = 0
    for _ in range(150):
        t, lanes = rng.choice(_TYPES), rng.choice([1, 2, 4, 8])
        e = _expression(t, lanes, rng.randrange(1, 5), rng)
        bound: dict[str, np.ndarray] = {}
        with np.errstate(all="ignore"):  # as the interpreter runs: an overflow is Halide's result
            variable = _as_variables(e, bound)  # (3e38 as a float16 literal is inf, as Halide rounds it)
            try:
                expected = Interpreter(params=bound).eval(variable)  # type: ignore[arg-type]
            except InterpreterError as exc:  # the same failure, from the constant expression
                with pytest.raises(InterpreterError, match=exc.diagnostic.message[:30]):
                    Interpreter().eval(e)
                failed += 1
                continue
            actual = Interpreter().eval(e)
        assert _same_bits(actual, expected), print_ir(e)
        folded += bool(getattr(code_of(e), "constant", False))
    assert folded > 100  # most of these are constants through and through


def test_an_error_is_raised_where_evaluation_meets_it_not_where_code_is_made() -> None:
    unknown = ir.Call("no_such_call", (ir.IntImm(1),), ir.Int(32))
    mismatched = ir.Binary(ir.BinOp.ADD, ir.Broadcast(ir.IntImm(1), 4), ir.Broadcast(ir.IntImm(2), 8))
    for e in (unknown, mismatched, ir.Variable("unbound", ir.Int(32))):
        code = code_of(e)  # made without complaint
        with pytest.raises(InterpreterError):
            code(Interpreter())
    assert not getattr(code_of(mismatched), "constant", False)
    # A node the interpreter has no dtype for fails when it is reached, so
    # the missing name evaluated before it is the error reported.
    no_dtype = ir.Reinterpret(ir.Float(8), ir.Variable("missing", ir.Int(8)))
    first_missing = ir.Binary(ir.BinOp.ADD, ir.Variable("missing"), ir.Cast(ir.Int(32), no_dtype))
    with pytest.raises(InterpreterError, match="'missing' has no value"):
        Interpreter().eval(first_missing)


def test_a_call_that_stands_for_other_ir_is_made_into_code_once() -> None:
    """if_then_else, mux and the lowered intrinsics evaluate the IR they
    stand for: the same node each time, whose code the interpreter keeps,
    rather than a new one (and new code) at every evaluation."""
    call = ir.Call("if_then_else", (ir.Binary(ir.BinOp.LT, ir.Variable("x"), ir.IntImm(3)), ir.Variable("x"),
                                    ir.IntImm(7)), ir.Int(32))
    interpreter = Interpreter({"x": np.array([1], dtype=np.int32)})
    values = {int(interpreter.eval(call)[0]) for _ in range(100)}
    assert values == {1}
    assert len(interpreter._code) <= 2  # the call and the select it stands for


@pytest.mark.parametrize("t", [ir.Float(16), ir.BFloat(16), ir.Float(32)], ids=str)
def test_a_float_sum_of_lanes_rounds_each_partial_sum_left_to_right(t: ir.Type) -> None:
    rng = np.random.default_rng(7)
    dtype = dtype_of(t)
    values = (rng.standard_normal(64) * rng.choice([1.0, 1e3, 1e-3], 64)).astype(dtype)
    bound = {"v": values}
    e = ir.VectorReduce(ir.ReduceOp.ADD, ir.Variable("v", t.with_lanes(64)), t.with_lanes(4))
    actual = Interpreter(params=bound).eval(e)
    expected = []
    for group in values.reshape(4, 16):
        total = group[0]
        for value in group[1:]:
            total = np.array([total + value]).astype(dtype)[0]  # rounded to the element type after each step
        expected.append(total)
    assert _same_bits(actual, np.array(expected, dtype=dtype))
