"""Halide's integer intrinsics as the plain IR they stand for.

Halide's pattern matching (``find_intrinsics``) turns arithmetic into calls
such as ``halving_add(a, b)`` or ``saturating_cast(uint8, e)`` before the
vectorizing stage, and its backends lower each one again to whatever the
target has. Each is defined by exact arithmetic: ``halving_add`` is
(a + b) / 2 rounded down, computed as if no precision were lost. Written
out in a type wide enough to hold every intermediate, each is ordinary IR
(casts, operators, selects, shifts), which the interpreter, both emitters
and the error model already know: the operations table (operations.py)
names the builder of each as the IR it is ``Equivalent.LOWERED`` to.

Operands of 64 bits have no wider type: Halide never widens them, and a
builder refuses one (``Unlowerable``).
"""

from __future__ import annotations

from collections.abc import Callable

from .nodes import (
    Binary,
    BinOp,
    Broadcast,
    Call,
    Cast,
    Expr,
    FloatImm,
    IntImm,
    Select,
    Type,
    TypeCode,
    UIntImm,
)


class Unlowerable(Exception):
    """An intrinsic whose operands have no wider type to compute in."""


def _lanes(t: Type, e: Expr) -> Expr:
    return e if t.lanes == 1 else Broadcast(e, t.lanes)


def _constant(t: Type, value: int | float) -> Expr:
    """``value`` in every lane of ``t``."""
    element = t.element()
    if element.is_float:
        return _lanes(t, FloatImm(float(value), element))
    if element.is_uint:
        return _lanes(t, UIntImm(int(value), element))
    return _lanes(t, IntImm(int(value), element))


def _bounds(t: Type) -> tuple[int, int]:
    if t.is_uint:
        return 0, (1 << t.bits) - 1
    return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1


def _signed_wide(t: Type, factor: int = 2) -> Type:
    """A signed integer type wide enough for every sum, difference (and,
    with factor 2 of the widened width, product) of two values of ``t``."""
    bits = min(64, max(16, t.bits * factor)) if t.bits < 64 else 128
    if bits > 64:
        raise Unlowerable(f"no integer type is wider than {t}")
    return Type(TypeCode.INT, bits, t.lanes)


def _cast(t: Type, e: Expr) -> Expr:
    return e if e.type == t else Cast(t, e)


def _clamped(value: Expr, to: Type) -> Expr:
    """``value`` clamped to the range of ``to``'s element type and cast to it."""
    low, high = _bounds(to.element())
    source = value.type
    if source.is_float:
        clamped = Binary(BinOp.MAX, Binary(BinOp.MIN, value, _constant(source, float(high))),
                         _constant(source, float(low)))
        return _cast(to, clamped)
    source_low, source_high = _bounds(source.element())
    if high < source_high:
        value = Binary(BinOp.MIN, value, _constant(source, high))
    if low > source_low:
        value = Binary(BinOp.MAX, value, _constant(source, low))
    return _cast(to, value)


def _shift_right(e: Expr, amount: Expr) -> Expr:
    return Call("shift_right", (e, _cast(e.type, amount)), e.type)


def _shift_left(e: Expr, amount: Expr) -> Expr:
    return Call("shift_left", (e, _cast(e.type, amount)), e.type)


def absd(call: Call) -> Expr:
    """|a - b|, in the unsigned type of the operands' width (floats: a float)."""
    a, b = call.args
    if a.type.is_float:
        difference = Binary(BinOp.SUB, Binary(BinOp.MAX, a, b), Binary(BinOp.MIN, a, b))
        return _cast(call.type, difference)
    unsigned = call.type
    larger = _cast(unsigned, Binary(BinOp.MAX, a, b))
    smaller = _cast(unsigned, Binary(BinOp.MIN, a, b))
    return Binary(BinOp.SUB, larger, smaller)  # exact modulo 2^bits, and it fits


def _halving(call: Call, op: BinOp, rounding: bool) -> Expr:
    a, b = call.args
    wide = _signed_wide(a.type)
    total = Binary(op, _cast(wide, a), _cast(wide, b))
    if rounding:
        total = Binary(BinOp.ADD, total, _constant(wide, 1))
    return _cast(call.type, Binary(BinOp.DIV, total, _constant(wide, 2)))  # Euclidean: rounds down


def halving_add(call: Call) -> Expr:
    return _halving(call, BinOp.ADD, False)


def rounding_halving_add(call: Call) -> Expr:
    return _halving(call, BinOp.ADD, True)


def halving_sub(call: Call) -> Expr:
    return _halving(call, BinOp.SUB, False)


def _saturating(call: Call, op: BinOp) -> Expr:
    a, b = call.args
    wide = _signed_wide(a.type)
    return _clamped(Binary(op, _cast(wide, a), _cast(wide, b)), call.type)


def saturating_add(call: Call) -> Expr:
    return _saturating(call, BinOp.ADD)


def saturating_sub(call: Call) -> Expr:
    return _saturating(call, BinOp.SUB)


def saturating_cast(call: Call) -> Expr:
    """The value clamped to the call's type's range, then cast (Halide
    prints the target type as the call's)."""
    (value,) = call.args[-1:]
    if call.type.is_float:
        return _cast(call.type, value)
    if value.type.is_float:
        return _clamped(value, call.type)
    # Compare in a type that holds both ranges.
    both = Type(TypeCode.INT, 64, value.type.lanes) if value.type.bits < 64 or value.type.is_int else value.type
    return _clamped(_cast(both, value), call.type)


def _widening(call: Call, op: BinOp) -> Expr:
    a, b = call.args
    return Binary(op, _cast(call.type, a), _cast(call.type, b))


def widening_add(call: Call) -> Expr:
    return _widening(call, BinOp.ADD)


def widening_sub(call: Call) -> Expr:
    return _widening(call, BinOp.SUB)


def widening_shift_left(call: Call) -> Expr:
    a, b = call.args
    return _shift_left(_cast(call.type, a), b)


def widening_shift_right(call: Call) -> Expr:
    a, b = call.args
    return _shift_right(_cast(call.type, a), b)


def rounding_shift_right(call: Call) -> Expr:
    """(a + 2^(b-1)) >> b for b > 0 and a << -b otherwise, computed without
    overflow."""
    a, b = call.args
    wide = _signed_wide(a.type)
    wa, wb = _cast(wide, a), _cast(wide, b)
    zero, one = _constant(wide, 0), _constant(wide, 1)
    positive = Binary(BinOp.GT, wb, zero)
    half = Select(positive, _shift_left(one, Binary(BinOp.SUB, wb, one)), zero)
    right = _shift_right(Binary(BinOp.ADD, wa, half), Binary(BinOp.MAX, wb, zero))
    left = _shift_left(wa, Binary(BinOp.MAX, Binary(BinOp.SUB, zero, wb), zero))
    return _cast(call.type, Select(positive, right, left))


def rounding_shift_left(call: Call) -> Expr:
    a, b = call.args
    negated = Binary(BinOp.SUB, _constant(b.type, 0), b) if not b.type.is_uint else \
        Binary(BinOp.SUB, _constant(_signed_wide(b.type), 0), _cast(_signed_wide(b.type), b))
    return rounding_shift_right(Call("rounding_shift_right", (a, negated), call.type))


def _mul_shift_right(call: Call, rounding: bool) -> Expr:
    a, b, q = call.args
    wide = _signed_wide(a.type)
    product = Binary(BinOp.MUL, _cast(wide, a), _cast(wide, b))
    if rounding:
        shifted = rounding_shift_right(Call("rounding_shift_right", (product, q), wide))
    else:
        shifted = _shift_right(product, q)
    return _clamped(shifted, call.type)


def mul_shift_right(call: Call) -> Expr:
    return _mul_shift_right(call, False)


def rounding_mul_shift_right(call: Call) -> Expr:
    return _mul_shift_right(call, True)


def _toward_zero(call: Call, op: BinOp) -> Expr:
    """C's division and remainder, which round toward zero (x / 0 == 0)."""
    a, b = call.args
    zero = _constant(a.type, 0)
    floor = Binary(op, a, b)
    if a.type.is_uint:
        return floor
    # Euclidean and truncating results differ only where a is negative and
    # the division is inexact: truncation moves the quotient one towards zero.
    inexact = Binary(BinOp.NE, Binary(BinOp.MOD, a, b), zero)
    adjust = Binary(BinOp.AND, Binary(BinOp.LT, a, zero), inexact)
    if op is BinOp.DIV:
        step = Select(Binary(BinOp.LT, b, zero), _constant(a.type, -1), _constant(a.type, 1))
        return Select(adjust, Binary(BinOp.ADD, floor, step), floor)
    magnitude = Select(Binary(BinOp.LT, b, zero), Binary(BinOp.SUB, zero, b), b)
    return Select(adjust, Binary(BinOp.SUB, floor, magnitude), floor)


def div_round_to_zero(call: Call) -> Expr:
    return _toward_zero(call, BinOp.DIV)


def mod_round_to_zero(call: Call) -> Expr:
    return _toward_zero(call, BinOp.MOD)


def _unsigned(t: Type) -> Type:
    return Type(TypeCode.UINT, t.bits, t.lanes)


def _mask(t: Type, byte: int) -> Expr:
    """``byte`` repeated through every byte of ``t``'s element."""
    value = 0
    for _ in range(max(1, t.bits // 8)):
        value = (value << 8) | byte
    return _constant(t, value & ((1 << t.bits) - 1))


def _and(a: Expr, b: Expr) -> Expr:
    return Call("bitwise_and", (a, b), a.type)


def _bit_count(v: Expr) -> Expr:
    """The set bits of each lane of the unsigned ``v``, in ``v``'s type (the
    SWAR sum: pairs, nibbles, bytes, then the bytes added by a multiply)."""
    t = v.type
    v = Binary(BinOp.SUB, v, _and(_shift_right(v, _constant(t, 1)), _mask(t, 0x55)))
    v = Binary(BinOp.ADD, _and(v, _mask(t, 0x33)), _and(_shift_right(v, _constant(t, 2)), _mask(t, 0x33)))
    v = _and(Binary(BinOp.ADD, v, _shift_right(v, _constant(t, 4))), _mask(t, 0x0F))
    if t.bits > 8:
        v = _shift_right(Binary(BinOp.MUL, v, _mask(t, 0x01)), _constant(t, t.bits - 8))
    return v


def popcount(call: Call) -> Expr:
    (x,) = call.args
    return _cast(call.type, _bit_count(_cast(_unsigned(x.type), x)))


def count_leading_zeros(call: Call) -> Expr:
    """The width less the bits of x smeared down from its highest set bit
    (the width for 0)."""
    (x,) = call.args
    v = _cast(_unsigned(x.type), x)
    shift = 1
    while shift < x.type.bits:
        v = Call("bitwise_or", (v, _shift_right(v, _constant(v.type, shift))), v.type)
        shift *= 2
    zeros = Binary(BinOp.SUB, _constant(v.type, x.type.bits), _bit_count(v))
    return _cast(call.type, zeros)


def count_trailing_zeros(call: Call) -> Expr:
    """The set bits of the trailing zeros turned to ones: ~x & (x - 1)."""
    (x,) = call.args
    v = _cast(_unsigned(x.type), x)
    below = _and(Call("bitwise_not", (v,), v.type), Binary(BinOp.SUB, v, _constant(v.type, 1)))
    return _cast(call.type, _bit_count(below))


def lerp(call: Call) -> Expr:
    """zero + (one - zero) * weight, the weight a fraction of its type's
    maximum where it is an unsigned integer, rounded to the nearest value."""
    zero, one, weight = call.args
    if zero.type.is_float:
        w = _cast(zero.type, weight) if weight.type.is_float else Binary(
            BinOp.DIV, _cast(zero.type, weight), _constant(zero.type, float(_bounds(weight.type.element())[1])))
        return Binary(BinOp.ADD, zero, Binary(BinOp.MUL, Binary(BinOp.SUB, one, zero), w))
    wide = Type(TypeCode.INT, 64, zero.type.lanes)
    top = _bounds(weight.type.element())[1]
    w = _cast(wide, weight)
    total = Binary(BinOp.ADD, Binary(BinOp.MUL, _cast(wide, zero), Binary(BinOp.SUB, _constant(wide, top), w)),
                   Binary(BinOp.MUL, _cast(wide, one), w))
    rounded = Binary(BinOp.DIV, Binary(BinOp.ADD, total, _constant(wide, top // 2)), _constant(wide, top))
    return _cast(call.type, rounded)


LOWERINGS: dict[str, Callable[[Call], Expr]] = {
    "popcount": popcount,
    "count_leading_zeros": count_leading_zeros,
    "count_trailing_zeros": count_trailing_zeros,
    "lerp": lerp,
    "absd": absd,
    "halving_add": halving_add,
    "rounding_halving_add": rounding_halving_add,
    "halving_sub": halving_sub,
    "saturating_add": saturating_add,
    "saturating_sub": saturating_sub,
    "saturating_cast": saturating_cast,
    "widening_add": widening_add,
    "widening_sub": widening_sub,
    "widening_shift_left": widening_shift_left,
    "widening_shift_right": widening_shift_right,
    "rounding_shift_right": rounding_shift_right,
    "rounding_shift_left": rounding_shift_left,
    "mul_shift_right": mul_shift_right,
    "rounding_mul_shift_right": rounding_mul_shift_right,
    "div_round_to_zero": div_round_to_zero,
    "mod_round_to_zero": mod_round_to_zero,
}
"""Each intrinsic's builder, by the name Halide prints."""
