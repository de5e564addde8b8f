"""Property tests of the parser and printer.

1. Random well-typed IR (tests/ir_strategies.py) survives a trip through the
   text: ``parse_text(print_ir(s)) == s``, and printing the result gives the
   same text again.
2. Real Halide is the oracle for the printer: random expressions built with
   Halide's Python bindings are printed by Halide itself (``repr``), parsed,
   and must print back to exactly Halide's text, with the type Halide gives.
3. Pinned cases: text that Halide 21 printed in this project's probes, and
   minimal IR, for forms the random tests also reach.
"""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hardboiled import ir
from hardboiled.frontend.parse import parse_text
from hardboiled.ir.printer import Printer, print_ir

from .. import ir_strategies as irs

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _roundtrip(stmt: ir.Stmt) -> None:
    text = print_ir(stmt)
    parsed = parse_text(text, "<generated>")
    assert parsed == stmt, f"parse(print(ir)) differs from ir; the text was:\n{text}"
    assert print_ir(parsed) == text


# --------------------------------------------------------------------------
# 1. Random IR -> text -> IR
# --------------------------------------------------------------------------


@SETTINGS
@given(irs.statements())
def test_random_ir_roundtrips(stmt: ir.Stmt) -> None:
    _roundtrip(stmt)


# A scope with bound names of several types and allocations, so that deep
# expressions meet bound variables, allocation loads and bfloat16 buffers.
_EXPR_SCOPE = (
    irs.EMPTY.bind("x", ir.INT32)
    .bind("t18", ir.Float(32, 4))
    .bind("f.s0.y.yo", ir.Int(16))
    .allocate("buf0", irs.BF16)
    .allocate("mm", ir.Float(32))
    .allocate("a.0", ir.UInt(8))
)


def _in_expr_scope(body: ir.Stmt) -> ir.Stmt:
    """``body`` under the bindings of _EXPR_SCOPE, as the text states them."""
    body = ir.Allocate("a.0", ir.UInt(8), "Heap", (), body)
    body = ir.Allocate("mm", ir.Float(32), "Stack", (ir.IntImm(16),), body)
    body = ir.Allocate("buf0", irs.BF16, "Auto", (ir.IntImm(16),), body)
    body = ir.LetStmt("f.s0.y.yo", ir.Cast(ir.Int(16), ir.Variable("x")), body)
    body = ir.LetStmt("t18", ir.Broadcast(ir.FloatImm(0.5, ir.Float(32)), 4), body)
    return ir.For("x", ir.IntImm(0), ir.IntImm(8), ir.ForKind.SERIAL, None, body)


@SETTINGS
@given(st.data())
def test_random_expressions_roundtrip(data: st.DataObject) -> None:
    """Deeper expressions than the statement test, one Evaluate at a time."""
    t = data.draw(st.one_of(irs.value_types(), st.sampled_from(irs.HANDLE_TYPES)), "type")
    e = data.draw(irs.exprs(_EXPR_SCOPE, t, 4), "expr")
    assert e.type == t
    _roundtrip(_in_expr_scope(ir.Evaluate(e)))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_generator_draws_well_typed_ir(data: st.DataObject) -> None:
    """The strategies draw what they promise (a check of the generator)."""
    t = data.draw(irs.value_types())
    e = data.draw(irs.exprs(_EXPR_SCOPE, t, 3))
    assert e.type == t
    for node in ir.walk(e):
        if isinstance(node, ir.Binary):
            assert node.a.type == node.b.type
            if node.op.is_logical:
                assert node.a.type.is_bool
        elif isinstance(node, ir.Select):
            assert node.true_value.type == node.false_value.type
            assert node.condition.type.is_bool
        elif isinstance(node, ir.Shuffle):
            assert all(v.type.lanes >= 2 for v in node.vectors)
            assert len({v.type.element() for v in node.vectors}) == 1
            assert all(0 <= i < node.input_lanes for i in node.indices)
        elif isinstance(node, ir.VectorReduce):
            assert node.value.type.lanes % node.type.lanes == 0
            assert node.value.type.element() == node.type.element()
        elif isinstance(node, ir.Load):
            assert node.index.type == ir.Int(32, node.type.lanes)
            if node.predicate is not None:
                assert node.predicate.type == ir.Bool(node.type.lanes)
        elif isinstance(node, ir.Ramp):
            assert node.base.type == node.stride.type
        elif isinstance(node, ir.Cast):
            assert node.type.lanes == node.value.type.lanes


# --------------------------------------------------------------------------
# 2. Halide as the oracle
# --------------------------------------------------------------------------

try:
    import halide as hl
except ImportError:  # pragma: no cover - halide is a dev dependency
    hl = None
needs_halide = pytest.mark.skipif(hl is None, reason="needs the halide==21.0.0 Python package")

_REPR_RE = re.compile(r"<halide\.Expr of type ([^:]+): (.*)>", re.DOTALL)

# The Halide types the oracle builds, by the name ir.Type prints.
_HL_TYPES = {
    "int32": lambda: hl.Int(32),
    "float32": lambda: hl.Float(32),
    "uint1": lambda: hl.Bool(),
    "int16": lambda: hl.Int(16),
    "uint8": lambda: hl.UInt(8),
    "float64": lambda: hl.Float(64),
    "int64": lambda: hl.Int(64),
}
_HL_TYPE_NAMES = sorted(_HL_TYPES)
_SPECIAL = (math.inf, -math.inf, math.nan, -math.nan)


def _hl_const(t: str, k: int, special: float | None):
    if t == "int32":
        return hl.Expr(k)
    if t == "float32":
        return hl.f32(k / 64 if special is None else special)
    if t == "float64":
        return hl.f64(k / 64 if special is None else special)
    if t == "uint1":
        return hl.Expr(bool(k & 1))
    if t == "uint8":
        return hl.u8(k % 256)
    return hl.cast(_HL_TYPES[t](), k)


@st.composite
def halide_exprs(draw, t: str, depth: int):
    """A random Halide expression of type ``t`` (a key of _HL_TYPES)."""
    pick = irs.pick
    if depth <= 0 or irs.chance(draw, 4):
        kind = pick(draw, ("const", "var", "param", "image"))
        if kind == "const":
            special = pick(draw, _SPECIAL) if t.startswith("float") and irs.chance(draw, 8) else None
            return _hl_const(t, draw(st.integers(-640, 640)), special)
        if kind == "var" and t == "int32":
            return hl.Expr(hl.Var(pick(draw, ("x", "y", "f.s0.x"))))
        if kind == "image" and t != "uint1":  # a typed call: (uint8)img_im(x)
            image = hl.ImageParam(_HL_TYPES[t](), 1, pick(draw, ("img", "in_b$1")))
            return image[hl.Var("x")]
        # A typed free variable: (float32)p
        return hl.Expr(hl.Param(_HL_TYPES[t](), pick(draw, ("p", "q.min.0", "s$1"))))
    d = depth - 1
    kinds = ["select", "cast", "call"]
    if t == "uint1":
        kinds += ["compare", "compare", "logical", "invert"]
    else:
        kinds += ["arith", "arith", "minmax", "negate"]
    kind = pick(draw, kinds)

    def sub(u: str = t):
        return draw(halide_exprs(u, d))

    if kind == "select":
        return hl.select(sub("uint1"), sub(), sub())
    if kind == "cast":
        return hl.cast(_HL_TYPES[t](), sub(pick(draw, _HL_TYPE_NAMES)))
    if kind == "call":
        if t == "uint1":
            return hl.likely(sub()) if draw(st.booleans()) else hl.is_nan(sub("float32"))
        if t.startswith("float"):
            return hl.sqrt(sub()) if draw(st.booleans()) else hl.floor(sub())
        if t == "int32":
            which = draw(st.integers(0, 2))
            if which == 0:
                return sub() & sub()  # bitwise_and(a, b)
            if which == 1:
                return hl.popcount(sub())
            return hl.mux(sub(), [sub(), sub(), sub()])
        if t == "int64":
            return hl.reinterpret(hl.Int(64), sub("float64"))
        return sub() | sub()  # bitwise_or(a, b)
    if kind == "compare":
        u = pick(draw, _HL_TYPE_NAMES)
        a, b = sub(u), sub(u)
        ops = ["==", "!="] if u == "uint1" else ["==", "!=", "<", "<=", ">", ">="]
        op = pick(draw, ops)
        return {"==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b,
                "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b}[op]()
    if kind == "logical":
        a, b = sub(), sub()
        return (a & b) if draw(st.booleans()) else (a | b)
    if kind == "invert":  # (uint1)bitwise_not(...)
        return ~sub()
    if kind == "negate":  # (0 - a)
        return -sub()
    a, b = sub(), sub()
    if kind == "minmax":
        return hl.min(a, b) if draw(st.booleans()) else hl.max(a, b)
    op = pick(draw, "+-*/%")
    return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
            "/": lambda: a / b, "%": lambda: a % b}[op]()


def _check_against_halide(expr) -> None:
    m = _REPR_RE.fullmatch(repr(expr))
    assert m is not None, repr(expr)
    halide_type, text = m.group(1), m.group(2)
    if halide_type == "bool":
        halide_type = "uint1"
    stmt = parse_text(text + "\n", "<halide>")
    assert isinstance(stmt, ir.Evaluate)
    # Halide's ``operator<<(Expr)`` prints a top-level binary operator in
    # parentheses, as in an operand position; a statement's value has none.
    assert Printer().expr(stmt.value, True) == text
    assert str(stmt.value.type) == halide_type
    assert parse_text(print_ir(stmt)) == stmt


@pytest.mark.slow
@needs_halide
@SETTINGS
@given(st.sampled_from(_HL_TYPE_NAMES).flatmap(lambda t: halide_exprs(t, 4)))
def test_printer_matches_halide(expr) -> None:
    _check_against_halide(expr)


@pytest.mark.slow
@needs_halide
@pytest.mark.parametrize("bits", [16, 32, 64])
@pytest.mark.parametrize("value", _SPECIAL, ids=["inf", "-inf", "nan", "-nan"])
def test_special_float_literals_match_halide(bits: int, value: float) -> None:
    """Halide prints these as inf, -inf, nan and -nan, with the f/h suffix."""
    _check_against_halide(hl.cast(hl.Float(bits), hl.f64(value)))


# --------------------------------------------------------------------------
# 3. Pinned cases
# --------------------------------------------------------------------------

# Verbatim Halide 21 output (HL_DEBUG_CODEGEN=2 logs of small pipelines).
HALIDE_TEXTS = {
    # A load from a buffer not in scope shows its type, even int32
    # (stage "storage flattening", before buffer arguments are unpacked).
    "int32_load": (
        "g[0 + ((g.s0.x - g.min.0)*g.stride.0)] = (int32)inp[(0 + (g.s0.x*inp.stride.0))"
        " - (0 + (inp.min.0*inp.stride.0))]*2\n"
    ),
    # One async producer: two children, and a space after the last brace.
    "fork_two_children": """\
fork {
 produce a {
  for (a.s0.x, f.min.0, f.extent.0) {
   a(a.s0.x, f.s0.y) = inp(a.s0.x, f.s0.y)*2
  }
  halide_semaphore_release(a.semaphore_0, 1)
 }
} {
 produce b {
  for (b.s0.x, f.min.0, f.extent.0) {
   b(b.s0.x, f.s0.y) = inp(b.s0.x, f.s0.y) + 3
  }
 }
 acquire (a.semaphore_0, 1) {
  consume b {
   consume a {
    for (f.s0.x, f.min.0, f.extent.0) {
     f(f.s0.x, f.s0.y) = a(f.s0.x, f.s0.y) + b(f.s0.x, f.s0.y)
    }
   }
  }
 }
} \n""",
    # Two async producers: Halide flattens Fork(a, Fork(b, c)) into three
    # children.
    "fork_three_children": """\
fork {
 produce a {
  for (a.s0.x, f.min.0, f.extent.0) {
   a(a.s0.x, f.s0.y) = inp(a.s0.x, f.s0.y)*2
  }
  halide_semaphore_release(a.semaphore_0, 1)
 }
} {
 produce b {
  for (b.s0.x, f.min.0, f.extent.0) {
   b(b.s0.x, f.s0.y) = inp(b.s0.x, f.s0.y) + 3
  }
  halide_semaphore_release(b.semaphore_0, 1)
 }
} {
 acquire (b.semaphore_0, 1) {
  acquire (a.semaphore_0, 1) {
   consume b {
    consume a {
     for (f.s0.x, f.min.0, f.extent.0) {
      f(f.s0.x, f.s0.y) = a(f.s0.x, f.s0.y) + b(f.s0.x, f.s0.y)
     }
    }
   }
  }
 }
} \n""",
}


@pytest.mark.parametrize("name", sorted(HALIDE_TEXTS))
def test_halide_text_roundtrips(name: str) -> None:
    text = HALIDE_TEXTS[name]
    parsed = parse_text(text, name)
    assert print_ir(parsed) == text
    assert parse_text(print_ir(parsed)) == parsed


_P4 = ir.Variable("p", ir.Bool(4))
_RAMP4 = ir.Ramp(ir.IntImm(0), ir.IntImm(1), 4)
PINNED_IR = {
    # Halide prints "(float32x4)A[ramp(0, 1, 4)] if (uint1x4)p" for a
    # predicated load of a buffer that is not in scope.
    "typed_predicated_load": ir.Evaluate(ir.Load("A", _RAMP4, ir.Float(32, 4), _P4)),
    "typed_predicated_load_operand": ir.Evaluate(
        ir.Binary(ir.BinOp.ADD, ir.Load("A", _RAMP4, ir.Int(32, 4), _P4), ir.Broadcast(ir.IntImm(1), 4))
    ),
    # A stored let-expression prints one "let NAME = VALUE in" per line, the
    # value without parentheses: "let x = let y = 1 in y in".
    "stored_let_of_let": ir.Store(
        "A", ir.Let("x", ir.Let("y", ir.IntImm(1), ir.Variable("y")), ir.Variable("x")), ir.IntImm(0)
    ),
    "int32_load": ir.Evaluate(ir.Load("inp", ir.Variable("x"), ir.INT32)),
    "float64_inf": ir.Evaluate(ir.FloatImm(math.inf, ir.Float(64))),
    "negative_nan": ir.Evaluate(ir.FloatImm(-math.nan, ir.Float(32))),
}


@pytest.mark.parametrize("name", sorted(PINNED_IR))
def test_pinned_ir_roundtrips(name: str) -> None:
    _roundtrip(PINNED_IR[name])
