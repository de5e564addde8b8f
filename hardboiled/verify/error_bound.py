"""How far a float result may be from exact: a bound per element.

Two programs that compute the same sums of products in another order, or
with another accumulation type (a Tensor Core adds 16 products at once; a
16-bit accumulation rounds at every step), give different floats. How
different depends on the element: on how many roundings produced it, in
which types, and on the size of what was added (a small value that is the
difference of large terms carries their error). A tolerance global to the
buffer is too loose where values are small and too tight where they cancel.

``bound_program`` extends the original program so that, next to every float
value X[i] it stores, it stores ``X.err[i]`` (float64): a bound on how far
X[i] is from the exact result, by running error analysis over the values the
program really computes. With u the unit roundoff of an operation's type
(2^-11 for float16, 2^-8 for bfloat16, 2^-24 for float32), every rounding
of a value x costs u * |x| plus half the type's subnormal spacing (2^-25 for
float16: near zero, rounding is absolute, not relative); a zero error times
anything, an infinite mask value included, is zero:

* a + b: err(a) + err(b) + u * |a + b|;
* a * b: err(a) * |b| + |a| * err(b) + err(a) * err(b) + u * |a * b|;
  no rounding term where the product is exact: both operands float16
  values or small integers (m + n significant bits fit the result's type,
  11 + 11 in float32's 24, exponents in range), as in every float16
  matrix product accumulated in float32; where the rewrite multiplies
  float32 operands as high and low tf32 parts (3xTF32), a float32 product
  of a store it changes may be off by 2^-19 |a * b| more (what the split
  drops, ``split_product_error``);
* a / b: (err(a) + |a / b| * err(b)) / (|b| - err(b)) + u * |a / b|;
  where b is known to stay above a floor F > 0 in both programs (``_floor``:
  1 + exp(-x) >= 1 + exp(-x - err(x)) in a sigmoid or SiLU), 1 / b' lies
  between 1 / (b + err(b)) and 1 / max(b - err(b), F), which bounds the
  quotient even where b's own bound is infinite (an exp that overflows in
  one program only);
* a sum of f lanes (vector_reduce_add): the lanes' errors plus
  (f - 1) * u * sum |lane|, whatever order the lanes are added in;
* a cast to a narrower float: err + u * |value|;
* min and max: the larger of their operands' errors (they move no further
  than their farthest-moved operand, whichever one each program picks);
* select: the error of the operand the original chose, unless a float
  comparison in its condition is closer than its operands' errors (rounding
  could turn it): then the larger error plus the distance between the two;
* exp: exp(x + err(x)) - exp(x) (exp rises and is convex: exact, and 0 for a
  masked lane at -1e30 however large its error);
* a smooth math call f(x) (sin, cos, tanh): err(x) * (|f(x)| + 1);
* every other call as ir/operations.py says (``ErrorRule``): a hint has its
  argument's error, strict_add the add's, mux the selects';
* overflow: where a rounded value moved by its bound may reach its type's
  largest finite value (a partial sum: the sum of its lanes' sizes), the
  bound is infinite, since one program may round to infinity and the other
  not (a float16 exp near 65,504 in a SiLU).

An exact operand (an input, a weight) adds nothing to a bound, and the
bound program is built without what it would add (0 + x, max(0, x),
0 * |y|), so that it computes no vectors of zeros.

Accumulating N products into one element, chunk by chunk, thus allows about
N * u * sum |product|: the bound grows with the accumulation length and
depends on the types. Both programs are within ``X.err`` of the exact result,
so they may differ by twice that. Only what the rewrite computes another
way counts: stages both programs compute alike (a kernel's weights, a
producer upstream of the tensor stage) round alike, so their values are
taken as exact, and an output the rewrite does not reach must be equal.
Everything integer is taken from the original's values, and so are the
conditions of if-statements (a select's are covered above). What the model cannot bound (an unknown call,
a float that becomes an integer index) raises ``NoErrorBound``; verification
then falls back to its global tolerance. A recurrence whose coefficients
sum to more than one in magnitude (a recursive filter) gets a bound that
grows geometrically: verification reports how many elements' bounds are
wider than the output's own range.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterator
from typing import Any, cast

from hardboiled import ir
from hardboiled.ir import operations
from hardboiled.ir.operations import ErrorRule
from hardboiled.ir.visitor import map_stmt
from hardboiled.verify.divergence import Divergence

ERROR = ".err"
F64 = ir.Float(64)

_UNIT_ROUNDOFF = {(ir.TypeCode.FLOAT, 16): 2.0 ** -11, (ir.TypeCode.BFLOAT, 16): 2.0 ** -8,
                  (ir.TypeCode.FLOAT, 32): 2.0 ** -24, (ir.TypeCode.FLOAT, 64): 2.0 ** -53}
_SUBNORMAL_SPACING = {(ir.TypeCode.FLOAT, 16): 2.0 ** -24, (ir.TypeCode.BFLOAT, 16): 2.0 ** -133,
                      (ir.TypeCode.FLOAT, 32): 2.0 ** -149, (ir.TypeCode.FLOAT, 64): 2.0 ** -1074}
"""The distance between neighbouring values near zero: rounding there
is off by up to half of it, however small the value (u * |x| is not)."""
_LARGEST = {(ir.TypeCode.FLOAT, 16): 65504.0, (ir.TypeCode.BFLOAT, 16): 3.3895313892515355e38,
            (ir.TypeCode.FLOAT, 32): 3.4028234663852886e38}
"""The largest finite value of each type narrower than float64: a result
that may reach it may round to infinity in one program and not the other."""


_FLOAT16_SIGNIFICAND = 11
_SIGNIFICAND = {(ir.TypeCode.FLOAT, 32): 24, (ir.TypeCode.FLOAT, 64): 53}
"""Significand bits of the types a product of narrow values may be exact in."""


def _constant_bits(value: float) -> int | None:
    """The significant bits of a constant of moderate magnitude (0 or within
    [2^-60, 2^60]), else None."""
    if value == 0.0:
        return 1
    if not math.isfinite(value) or not 2.0 ** -60 <= abs(value) <= 2.0 ** 60:
        return None
    numerator = abs(value).as_integer_ratio()[0]
    return (numerator >> ((numerator & -numerator).bit_length() - 1)).bit_length()


class NoErrorBound(Exception):
    """The program computes something the error model does not cover."""


def unit_roundoff(t: ir.Type) -> float:
    return _UNIT_ROUNDOFF[(t.code, t.bits)]


def _f64(t: ir.Type) -> ir.Type:
    return F64.with_lanes(t.lanes)


def _const(value: float, lanes: int) -> ir.Expr:
    imm = ir.FloatImm(value, F64)
    return imm if lanes == 1 else ir.Broadcast(imm, lanes)


def _is_zero(e: ir.Expr) -> bool:
    """Whether ``e`` is the error bound 0 (an exact value), as written."""
    if isinstance(e, ir.Broadcast):
        e = e.value
    return isinstance(e, ir.FloatImm) and e.value == 0.0


def _lanes_of(e: ir.Expr, lanes: int) -> ir.Expr:
    return ir.Broadcast(e, lanes) if e.type.lanes == 1 and lanes > 1 else e


# Error bounds are never negative, and most operands are exact (inputs,
# weights, values both programs compute alike): the constructors below drop
# what an exact operand adds (0 + x, max(0, x), 0 * |y|), so that the bound
# program computes no whole-vector zeros.


def _add(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    lanes = max(a.type.lanes, b.type.lanes)
    if _is_zero(a):
        return _lanes_of(b, lanes)
    if _is_zero(b):
        return _lanes_of(a, lanes)
    return ir.Binary(ir.BinOp.ADD, a, b)


def _mul(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.Binary(ir.BinOp.MUL, a, b)


def _abs(e: ir.Expr) -> ir.Expr:
    return ir.Call(operations.ABS.name, (e,), e.type)


def _scaled(e: ir.Expr, factor: float) -> ir.Expr:
    if _is_zero(e):
        return e
    return _mul(e, _const(factor, e.type.lanes))


def _rounding(magnitude: ir.Expr, t: ir.Type) -> ir.Expr:
    """How far rounding a value of size ``magnitude`` to ``t`` may move it:
    u * |x|, and half the subnormal spacing, which is all there is near 0."""
    half_step = _SUBNORMAL_SPACING[(t.code, t.bits)] / 2
    return _add(_scaled(magnitude, unit_roundoff(t)), _const(half_step, magnitude.type.lanes))


def _times(err: ir.Expr, magnitude: ir.Expr) -> ir.Expr:
    """err * |y|, where no error times anything (an infinite mask value) is
    no error, not NaN."""
    lanes = max(err.type.lanes, magnitude.type.lanes)
    if _is_zero(err):
        return _const(0.0, lanes)
    zero = _const(0.0, err.type.lanes)
    return ir.Select(ir.Binary(ir.BinOp.EQ, err, zero), zero, _mul(err, magnitude))


def _larger(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    lanes = max(a.type.lanes, b.type.lanes)
    if _is_zero(a):
        return _lanes_of(b, lanes)
    if _is_zero(b):
        return _lanes_of(a, lanes)
    return ir.Binary(ir.BinOp.MAX, a, b)


def _overflowing(bound: ir.Expr, magnitude: ir.Expr, t: ir.Type) -> ir.Expr:
    """``bound``, or infinity where a value of size ``magnitude`` moved by
    it may reach the type's largest finite value: the two programs may then
    differ by infinity (exp(11.1) in float16 is 66,000, exp(11.0) 59,874),
    which no finite tolerance covers."""
    largest = _LARGEST.get((t.code, t.bits))
    if largest is None or _is_zero(bound):
        return bound
    lanes = t.lanes
    reaches = ir.Binary(ir.BinOp.GE, _add(magnitude, bound), _const(largest, lanes))
    return ir.Select(reaches, _const(math.inf, lanes), bound)


def _value(e: ir.Expr) -> ir.Expr:
    """|e| in float64: the size of what the original computes."""
    return _abs(ir.Cast(_f64(e.type), e))


class _Bounds:
    """Rewrites a float expression into a float64 expression bounding its
    rounding error, over the program's X.err buffers and its own values."""

    def __init__(self, tracked: set[str]):
        self.tracked = tracked
        """Float buffers with X.err beside them."""
        self.bound: set[str] = set()
        """Float names bound with a NAME.err beside them (lets, parts of
        stored values); any other float variable is exact (a parameter, or
        a value whose bound is 0)."""
        self.alike = False
        """Whether the statement being bounded is one the rewritten program
        computes alike (``Divergence.alike``)."""
        self._zero: dict[int, tuple[ir.Expr, bool]] = {}
        """In such a statement, whether each expression bounded so far has
        the bound 0 (by id, with the expression): an operation asks it of
        its operands, which its rule has just bounded."""
        self.floors: dict[str, ir.Expr] = {}
        """Float names whose value has a known lower bound (``_floor``), with it."""
        self.narrow: dict[str, int] = {}
        """Float names whose every value has a significand of at most this
        many bits and an exponent in float16's range (``significand_bits``)."""
        self.split_significand: int | None = None
        """``Divergence.split_significand``: float32 products of stores the
        rewrite changes may be computed from split operands."""

    def significand_bits(self, e: ir.Expr) -> int | None:
        """At most how many significant bits every value of ``e`` has, when
        its magnitude is also 0 or within [2^-60, 2^60]: a float16 (11 bits,
        2^-24 .. 2^16), a small integer converted to float, a moderate
        constant; None when that is not known."""
        if isinstance(e, (ir.Cast, ir.Load)):
            source = e.value.type if isinstance(e, ir.Cast) else e.type
            if isinstance(e, ir.Cast) and source.is_float:
                inner = self.significand_bits(e.value)
                if inner is not None:
                    return inner
            if source.is_float and source.bits == 16 and source.code is ir.TypeCode.FLOAT:
                return _FLOAT16_SIGNIFICAND
            if (source.is_int or source.is_uint or source.is_bool) and source.bits <= 16:
                return source.bits
            return None
        if isinstance(e, ir.Broadcast):
            return self.significand_bits(e.value)
        if isinstance(e, ir.Variable):
            return self.narrow.get(e.name)
        if isinstance(e, ir.FloatImm):
            return _constant_bits(e.value)
        return None

    def _exact_product(self, e: ir.Binary) -> bool:
        """Whether a * b is exact in its type: significands of m and n bits
        multiply into at most m + n, and the exponents stay in range. From
        split operands (p bits a part), the product is exact where one
        operand has no low part (at most p bits) and the other's low part
        loses nothing (at most 2p bits)."""
        a, b = self.significand_bits(e.a), self.significand_bits(e.b)
        if a is None or b is None or a + b > _SIGNIFICAND.get((e.type.code, e.type.bits), 0):
            return False
        split = self._split(e)
        return split is None or (min(a, b) <= split and max(a, b) <= 2 * split)

    def _split(self, e: ir.Binary) -> int | None:
        """The significand bits of the parts a float32 product may be
        computed from (``split_significand``); None where it is not."""
        if self.split_significand is None or self.alike or e.type.element() != ir.Float(32):
            return None
        return self.split_significand

    def bind(self, name: str, value: ir.Expr) -> ir.Expr | None:
        """The bound of ``value``, which ``name`` holds; None when it is 0
        (no NAME.err is bound: ``name`` reads as exact)."""
        bits = self.significand_bits(value)
        if bits is not None:
            self.narrow[name] = bits
        floor = self._floor(value)
        if floor is None:
            self.floors.pop(name, None)  # a name bound again, to a value without one
        else:
            self.floors[name] = floor
        err = self.error(value)
        if _is_zero(err):
            return None
        self.bound.add(name)
        return err

    def error(self, e: ir.Expr) -> ir.Expr:
        t = e.type
        if not t.is_float:
            if t.is_int or t.is_uint or t.is_bool:
                return _const(0.0, t.lanes)  # converted to float below
            raise NoErrorBound(f"a {t} value")
        rule: Callable[[_Bounds, Any], ir.Expr] | None = _RULES.get(type(e))
        if rule is None:
            raise NoErrorBound(f"a float {type(e).__name__}")
        bound = rule(self, e)
        if isinstance(e, _ROUNDING_OPERATIONS):
            bound = _overflowing(bound, _value(e), t)
        if not self.alike:
            return bound
        if isinstance(e, _ROUNDING_OPERATIONS) and not _is_zero(bound) and all(
                self._has_zero_bound(c) for c in ir.children(e) if isinstance(c, ir.Expr) and c.type.is_float):
            # Both programs run this operation on the same operands (exact
            # floats, integers): it rounds alike in both.
            bound = _const(0.0, t.lanes)
        self._zero[id(e)] = (e, _is_zero(bound))
        return bound

    def computing_alike(self, alike: bool) -> None:
        """What is bounded from now on belongs to a stored value that the
        rewritten program computes alike (or not)."""
        self.alike = alike
        self._zero.clear()

    def _has_zero_bound(self, e: ir.Expr) -> bool:
        known = self._zero.get(id(e))
        if known is not None and known[0] is e:
            return known[1]
        return _is_zero(self.error(e))

    def _imm(self, e: ir.FloatImm) -> ir.Expr:
        return _const(0.0, 1)

    def _load(self, e: ir.Load) -> ir.Expr:
        if e.name in self.tracked:
            return ir.Load(e.name + ERROR, e.index, _f64(e.type), e.predicate)
        return _const(0.0, e.type.lanes)  # an input: exact

    def _variable(self, e: ir.Variable) -> ir.Expr:
        if e.name in self.bound:
            return ir.Variable(e.name + ERROR, _f64(e.type))
        return _const(0.0, e.type.lanes)

    def _cast(self, e: ir.Cast) -> ir.Expr:
        err = self.error(e.value)
        source = e.value.type
        if not source.is_float or unit_roundoff(e.type) > unit_roundoff(source):
            return _add(err, _rounding(_value(e), e.type))
        return err

    def _binary(self, e: ir.Binary) -> ir.Expr:
        ea, eb = self.error(e.a), self.error(e.b)
        if e.op in (ir.BinOp.ADD, ir.BinOp.SUB):
            return _add(_add(ea, eb), _rounding(_value(e), e.type))
        if e.op is ir.BinOp.MUL:
            propagated = _add(_add(_times(ea, _value(e.b)), _times(eb, _value(e.a))), _times(ea, eb))
            if _is_zero(propagated) and self._exact_product(e):
                return propagated
            rounding = _rounding(_value(e), e.type)
            split = self._split(e)
            if split is not None:
                rounding = _add(rounding, split_product_error(e, split))
            return _add(propagated, rounding)
        if e.op is ir.BinOp.DIV:
            quotient = _value(e)
            divisor = ir.Binary(ir.BinOp.MAX, ir.Binary(ir.BinOp.SUB, _value(e.b), eb), _const(0.0, e.type.lanes))
            err: ir.Expr = ir.Binary(ir.BinOp.DIV, _add(ea, _times(eb, quotient)), divisor)
            floor = self._floor(e.b)
            if floor is not None:
                positive = ir.Binary(ir.BinOp.GT, floor, _const(0.0, e.type.lanes))
                err = ir.Select(positive, _positive_divisor_error(e, ea, eb, floor), err)
            return _add(err, _rounding(quotient, e.type))
        if e.op in (ir.BinOp.MIN, ir.BinOp.MAX):
            # min and max move no further than their farthest-moved operand,
            # whichever of the two each program picks.
            return _larger(ea, eb)
        raise NoErrorBound(f"float operator {e.op.value}")

    def _floor(self, e: ir.Expr) -> ir.Expr | None:
        """A float64 lower bound on the value of ``e`` in either program,
        where its form gives one: a constant, an exponential (never below
        exp(x - err(x))), a sum or a cast of such; None elsewhere. A divisor
        whose floor is positive never reaches zero, however far an overflow
        moved its bound (``1 + exp(-x)`` in a sigmoid)."""
        lanes = e.type.lanes
        if isinstance(e, ir.FloatImm):
            return _const(e.value, lanes)
        if isinstance(e, ir.Variable):
            return self.floors.get(e.name)
        if isinstance(e, ir.Broadcast):
            inner = self._floor(e.value)
            return None if inner is None else _lanes_of(inner, lanes)
        floor: ir.Expr | None = None
        if isinstance(e, ir.Cast) and e.value.type.is_float:
            floor = self._floor(e.value)
        elif isinstance(e, ir.Binary) and e.op is ir.BinOp.ADD:
            a, b = self._floor(e.a), self._floor(e.b)
            floor = None if a is None or b is None else ir.Binary(ir.BinOp.ADD, a, b)
        elif isinstance(e, ir.Call) and getattr(operations.find(e.name), "error", None) is ErrorRule.EXPONENTIAL:
            x = ir.Cast(_f64(e.type), e.args[0])
            floor = ir.Call(operations.EXP_F64.name, (ir.Binary(ir.BinOp.SUB, x, self.error(e.args[0])),), _f64(e.type))
        if floor is None:
            return None
        return ir.Binary(ir.BinOp.SUB, floor, _rounding(_abs(floor), e.type))  # rounded down in e's type

    def _select(self, e: ir.Select) -> ir.Expr:
        """The chosen value's error, where rounding cannot change the
        choice; where it may (a float comparison closer than its operands'
        errors), the farther error plus the distance between the values."""
        true_error, false_error = self.error(e.true_value), self.error(e.false_value)
        lanes = e.type.lanes
        chosen = _const(0.0, lanes) if _is_zero(true_error) and _is_zero(false_error) else ir.Select(
            e.condition, _lanes_of(true_error, lanes), _lanes_of(false_error, lanes))
        may_flip = self._may_flip(e.condition)
        if may_flip is None:
            return chosen
        apart = _abs(ir.Binary(ir.BinOp.SUB, ir.Cast(_f64(e.type), e.true_value), ir.Cast(_f64(e.type), e.false_value)))
        either = _add(_larger(true_error, false_error), apart)
        if may_flip.type.lanes != lanes:
            may_flip = ir.Broadcast(may_flip, lanes)
        return ir.Select(may_flip, either, chosen)

    def _may_flip(self, condition: ir.Expr) -> ir.Expr | None:
        """Where a comparison of floats inside ``condition`` is closer than
        its operands' errors (so rounding could turn it); None when the
        condition compares no floats."""
        found: ir.Expr | None = None
        for node in ir.walk(condition):
            if isinstance(node, ir.Binary) and node.op.is_comparison and node.a.type.is_float:
                distance = _abs(ir.Binary(ir.BinOp.SUB, ir.Cast(_f64(node.a.type), node.a),
                                          ir.Cast(_f64(node.b.type), node.b)))
                close = ir.Binary(ir.BinOp.LE, distance, _add(self.error(node.a), self.error(node.b)))
                found = close if found is None else ir.Binary(ir.BinOp.OR, found, close)
        return found

    def _broadcast(self, e: ir.Broadcast) -> ir.Expr:
        err = self.error(e.value)
        return _const(0.0, e.type.lanes) if _is_zero(err) else ir.Broadcast(err, e.lanes)

    def _shuffle(self, e: ir.Shuffle) -> ir.Expr:
        errors = tuple(self.error(v) for v in e.vectors)
        if all(_is_zero(err) for err in errors):
            return _const(0.0, e.type.lanes)
        return ir.Shuffle(tuple(_lanes_of(err, v.type.lanes) for err, v in zip(errors, e.vectors, strict=True)),
                          e.indices)

    def _reduce(self, e: ir.VectorReduce) -> ir.Expr:
        err = self.error(e.value)
        out = _f64(e.type)
        if e.op is ir.ReduceOp.ADD:
            factor = e.value.type.lanes // e.type.lanes
            lanes = ir.VectorReduce(ir.ReduceOp.ADD, _value(e.value), out)
            summed = _const(0.0, e.type.lanes) if _is_zero(err) else ir.VectorReduce(ir.ReduceOp.ADD, err, out)
            steps = _const((factor - 1) * _SUBNORMAL_SPACING[(e.type.code, e.type.bits)] / 2, e.type.lanes)
            bound = _add(_add(summed, _scaled(lanes, (factor - 1) * unit_roundoff(e.type))), steps)
            return _overflowing(bound, lanes, e.type)  # a partial sum is at most the sum of |lanes|
        if e.op in (ir.ReduceOp.MIN, ir.ReduceOp.MAX):
            if _is_zero(err):
                return _const(0.0, e.type.lanes)
            return ir.VectorReduce(ir.ReduceOp.MAX, err, out)  # the largest error of any lane
        raise NoErrorBound(f"vector_reduce_{e.op.value}")

    def _let(self, e: ir.Let) -> ir.Expr:
        err = self.bind(e.name, e.value) if e.value.type.is_float else None
        body = self.error(e.body)
        if err is not None:
            body = ir.Let(e.name + ERROR, err, body)
        return ir.Let(e.name, e.value, body)

    def _call(self, e: ir.Call) -> ir.Expr:
        """The rule ir/operations.py gives the call (``ErrorRule``)."""
        operation = operations.find(e.name)
        rule = operation.error if operation is not None else None
        if rule is ErrorRule.PASSES_ERROR:
            return self.error(e.args[0])
        if rule is ErrorRule.EQUIVALENT:
            equivalent = operations.equivalent_ir(e)
            assert equivalent is not None
            return self.error(equivalent)
        if rule is ErrorRule.SMOOTH:
            propagated = _times(self.error(e.args[0]), _add(_value(e), _const(1.0, e.type.lanes)))
            return _add(propagated, _rounding(_value(e), e.type))
        if rule is ErrorRule.EXPONENTIAL:
            x = ir.Cast(_f64(e.type), e.args[0])
            risen = ir.Call(operations.EXP_F64.name, (_add(x, self.error(e.args[0])),), _f64(e.type))
            propagated = ir.Binary(ir.BinOp.SUB, risen, ir.Call(operations.EXP_F64.name, (x,), _f64(e.type)))
            return _add(propagated, _rounding(_value(e), e.type))
        if rule is ErrorRule.STEP:
            # exact, unless the argument's error crosses an integer: then up to one
            return ir.Select(ir.Binary(ir.BinOp.GT, self.error(e.args[0]), _const(0.0, e.type.lanes)),
                             _add(self.error(e.args[0]), _const(1.0, e.type.lanes)), _const(0.0, e.type.lanes))
        raise NoErrorBound(f"the call '{e.name}'")


_ROUNDING_OPERATIONS = (ir.Binary, ir.Cast, ir.Call, ir.VectorReduce)
"""What rounds its result (a select's condition may compare floats: not here)."""

_RULES: dict[type, Callable[[_Bounds, Any], ir.Expr]] = {
    ir.FloatImm: _Bounds._imm, ir.Load: _Bounds._load, ir.Variable: _Bounds._variable, ir.Cast: _Bounds._cast,
    ir.Binary: _Bounds._binary, ir.Select: _Bounds._select, ir.Broadcast: _Bounds._broadcast,
    ir.Shuffle: _Bounds._shuffle, ir.VectorReduce: _Bounds._reduce, ir.Let: _Bounds._let, ir.Call: _Bounds._call}
"""The error rule of each float expression kind."""


def split_product_error(e: ir.Binary, bits: int) -> ir.Expr:
    """How far a * b computed from split operands (a = a_hi + a_lo + r_a,
    each part ``bits`` = p significant bits, as 3xTF32 does,
    ``verify.fragments.split_operand``) may be from a * b: the sum
    a_lo b_hi + a_hi b_lo + a_hi b_hi drops a_lo b_lo and the remainders'
    products. The high part is off by at most 2^-(p-1) |a| (2^-p rounded to
    nearest; twice that where rounding up would overflow and it is
    truncated), the low part's rounding by 2^-p of that, so |r_a| <=
    2^-(2p-1) |a| and |a_lo| <= 2^-(p-1) (1 + 2^-p) |a|: at most
    2^-(2p-2) + 2^-(2p-2) (1 + 2^-p)^2 + 2^-(4p-2), below
    2^-(2p-3) (1 + 2^(2-p)) of |a b| (the last factor also covers the
    rounded |a b| the bound reads). Near zero the parts round to the
    format's subnormal spacing, 2^-(126 + p - 1) for tf32's float32
    exponent range: that much of |a| + |b|."""
    relative = 2.0 ** (3 - 2 * bits) * (1 + 2.0 ** (2 - bits))
    spacing = 2.0 ** (-126 - (bits - 1))
    return _add(_scaled(_value(e), relative), _scaled(_add(_value(e.a), _value(e.b)), spacing))


def _positive_divisor_error(e: ir.Binary, ea: ir.Expr, eb: ir.Expr, floor: ir.Expr) -> ir.Expr:
    """|a'/b' - a/b| where both divisors are at least ``floor`` > 0:
    |a' - a| / b' + |a| * |1/b' - 1/b|, with 1/b' anywhere between
    1/(b + err(b)) and 1/max(b - err(b), floor). Finite where err(b) is not
    (a divisor that overflowed to infinity in one program only)."""
    lanes = e.type.lanes
    one = _const(1.0, lanes)
    size = _value(e.b)
    nearest = ir.Select(ir.Binary(ir.BinOp.LT, eb, size),
                        ir.Binary(ir.BinOp.MAX, ir.Binary(ir.BinOp.SUB, size, eb), floor), floor)
    inverse = ir.Binary(ir.BinOp.DIV, one, size)
    spread = ir.Binary(ir.BinOp.MAX, ir.Binary(ir.BinOp.SUB, ir.Binary(ir.BinOp.DIV, one, nearest), inverse),
                       ir.Binary(ir.BinOp.SUB, inverse, ir.Binary(ir.BinOp.DIV, one, _add(size, eb))))
    moved = _times(spread, _value(e.a))
    if _is_zero(ea):
        return _lanes_of(moved, lanes)
    return _add(ir.Binary(ir.BinOp.DIV, _lanes_of(ea, lanes), nearest), moved)


def _float_buffers(stmt: ir.Stmt) -> set[str]:
    return {n.name for n in ir.walk(stmt) if isinstance(n, ir.Allocate) and n.type.is_float}


_LEAVES = (ir.FloatImm, ir.Variable, ir.Let)
"""Float expressions kept whole when a stored value is taken apart."""


def _take_apart(e: ir.Expr, bindings: list[tuple[str, ir.Expr]], names: Iterator[str]) -> ir.Expr:
    """``e`` with every float subexpression bound to a name (appended to
    ``bindings`` innermost first), so that the error expressions, which read
    the values of the subexpressions, compute each of them once."""
    if not e.type.is_float or isinstance(e, _LEAVES):
        return e
    parts = {f.name: getattr(e, f.name) for f in dataclasses.fields(cast(Any, e))}
    rebuilt: dict[str, Any] = {}
    for name, part in parts.items():
        if isinstance(part, ir.Expr) and not isinstance(e, ir.Load):
            rebuilt[name] = _take_apart(part, bindings, names)
        elif isinstance(part, tuple) and part and all(isinstance(p, ir.Expr) for p in part):
            rebuilt[name] = tuple(_take_apart(p, bindings, names) for p in part)
    node: ir.Expr = dataclasses.replace(cast(Any, e), **rebuilt) if rebuilt else e
    name = next(names)
    bindings.append((name, node))
    return ir.Variable(name, e.type)


def _downstream(stmt: ir.Stmt, sources: set[str]) -> set[str]:
    """``sources`` and every buffer a store computes from them, transitively."""
    stores = [n for n in ir.walk(stmt) if isinstance(n, ir.Store)]
    reached = set(sources)
    while True:
        more = {s.name for s in stores if s.name not in reached
                and any(isinstance(n, ir.Load) and n.name in reached for n in ir.walk(s.value))}
        if not more:
            return reached
        reached |= more


def bound_program(stmt: ir.Stmt, float_outputs: set[str], differing: set[str] | Divergence) -> ir.Stmt:
    """``stmt`` extended to store X.err (float64, X's shape) beside every
    float buffer X, allocated or output, that the buffers in ``differing``
    (computed another way by the rewritten program) reach. What the two
    programs compute alike from the same inputs has the same rounding in
    both: it is exact for the comparison. The caller binds the outputs'
    X.err (zero where no difference reaches them: they must be equal).
    With a ``Divergence``, an operation of a store both programs compute
    alike, on operands that are the same in both, adds no rounding. (Where
    that sameness were wrong, the rewrite would be too, and the tighter
    tolerance would only report it.)"""
    alike: frozenset[ir.Store] = frozenset()
    buffers: set[str] = set(differing.buffers) if isinstance(differing, Divergence) else differing
    bounds = _Bounds((_float_buffers(stmt) | float_outputs) & _downstream(stmt, buffers))
    if isinstance(differing, Divergence):
        alike = differing.alike
        bounds.split_significand = differing.split_significand
    tracked = bounds.tracked
    names = (f"hb.bound.{i}" for i in itertools.count())

    def visit(node: ir.Stmt) -> ir.Stmt | None:
        if isinstance(node, ir.Store) and node.name in tracked:
            bindings: list[tuple[str, ir.Expr]] = []
            value = _take_apart(node.value, bindings, names)
            bounds.computing_alike(node in alike)
            try:
                errors = [bounds.bind(name, bound) for name, bound in bindings]  # innermost first
                # The bound reads the operands before the store overwrites them.
                stored_error = _lanes_of(bounds.error(value), node.value.type.lanes)
            finally:
                bounds.computing_alike(False)  # a let between stores belongs to none of them
            result: ir.Stmt = ir.make_block([
                ir.Store(node.name + ERROR, stored_error, node.index, node.predicate),
                dataclasses.replace(node, value=value)])
            for (name, bound), err in zip(reversed(bindings), reversed(errors), strict=True):
                if err is not None:
                    result = ir.LetStmt(name + ERROR, err, result)
                result = ir.LetStmt(name, bound, result)
            return result
        if isinstance(node, ir.Allocate) and node.name in tracked:
            body = dataclasses.replace(node, body=map_stmt(node.body, visit))
            return ir.Allocate(node.name + ERROR, F64.with_lanes(node.type.lanes), "Heap", node.extents, body)
        if isinstance(node, ir.LetStmt) and node.value.type.is_float:
            err = bounds.bind(node.name, node.value)
            inner = map_stmt(node.body, visit)
            if err is not None:
                inner = ir.LetStmt(node.name + ERROR, err, inner)
            return ir.LetStmt(node.name, node.value, inner)
        return None

    return map_stmt(stmt, visit)


__all__ = ["ERROR", "NoErrorBound", "bound_program", "unit_roundoff"]
