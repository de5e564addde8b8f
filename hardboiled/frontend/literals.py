"""Literals and the typing of 16-bit floats, for the tree builder.

Owns what the builder needs to know about literal text and values, apart
from any tree: the value of a printed string literal (``unescape``), the
float literal suffixes (``FLOAT_RE``, ``FLOAT_SUFFIX_TYPES``), an int32
literal's value (``int32_value``, ``SHORT_INT32``), and the bfloat16 reading of a literal
that Halide printed as ``0.5h`` (``as_bfloat``, ``unify_half``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from hardboiled import ir

# Halide's float literals: float64 has no suffix, float32 `f`, 16-bit `h`
# (float16 until a bfloat16 operand says otherwise).
FLOAT_RE = re.compile(r"(-?(?:inf|nan|\d+\.\d+(?:e[+-]\d+)?))([fh]?)")
FLOAT_SUFFIX_TYPES = {"": ir.Float(64), "f": ir.Float(32), "h": ir.Float(16)}


SHORT_INT32 = 9
"""Characters of an integer literal that fit in int32 whatever they are
(nine digits, or a minus and eight): read without its bounds checked."""


def int32_value(e: ir.Expr) -> int | None:
    """The value of an int32 literal; None for anything else."""
    return e.value if isinstance(e, ir.IntImm) and (e.type is ir.INT32 or e.type == ir.INT32) else None


# --------------------------------------------------------------------------
# float16 or bfloat16
# --------------------------------------------------------------------------


def as_bfloat(e: ir.Expr) -> ir.Expr | None:
    """Retype a float16 literal (possibly broadcast) as bfloat16.

    Halide prints both kinds of 16-bit float literal with an ``h`` suffix,
    so a literal first reads as float16 and is corrected when it meets a
    bfloat16 operand. Ramps, selects and arithmetic whose operands are all
    such literals are retyped with them; anything else gives None.
    """
    retype = _BFLOAT_RETYPES.get(type(e))
    return retype(e) if retype is not None else None


def unify_half(a: ir.Expr, b: ir.Expr) -> tuple[ir.Expr, ir.Expr]:
    """Two operands, a float16 literal side retyped as bfloat16 to match a
    bfloat16 partner; unchanged otherwise."""
    if a.type == b.type:
        return a, b
    if a.type.code is ir.TypeCode.BFLOAT and (nb := as_bfloat(b)) is not None:
        return a, nb
    if b.type.code is ir.TypeCode.BFLOAT and (na := as_bfloat(a)) is not None:
        return na, b
    return a, b


def unify_halves(vectors: list[ir.Expr]) -> list[ir.Expr]:
    """Vectors joined into one (a shuffle's, a concatenation's): where one
    is bfloat16, the float16 literals among them are bfloat16 too (a
    Toeplitz block's padding zero beside the bfloat16 taps)."""
    if not any(v.type.code is ir.TypeCode.BFLOAT for v in vectors):
        return vectors
    return [v if v.type.code is ir.TypeCode.BFLOAT else (as_bfloat(v) or v) for v in vectors]


def _bfloat_imm(e: ir.FloatImm) -> ir.Expr | None:
    if e.type.code is ir.TypeCode.FLOAT and e.type.bits == 16:
        return ir.FloatImm(e.value, ir.BFloat(16, e.type.lanes))
    return None


def _bfloat_broadcast(e: ir.Broadcast) -> ir.Expr | None:
    inner = as_bfloat(e.value)
    return ir.Broadcast(inner, e.lanes) if inner is not None else None


def _bfloat_ramp(e: ir.Ramp) -> ir.Expr | None:
    base, stride = as_bfloat(e.base), as_bfloat(e.stride)
    if base is not None and stride is not None:
        return ir.Ramp(base, stride, e.lanes)
    return None


def _bfloat_select(e: ir.Select) -> ir.Expr | None:
    t, f = as_bfloat(e.true_value), as_bfloat(e.false_value)
    if t is not None and f is not None:
        return ir.Select(e.condition, t, f)
    return None


def _bfloat_binary(e: ir.Binary) -> ir.Expr | None:
    if e.op.is_comparison or e.op.is_logical:
        return None
    a, b = as_bfloat(e.a), as_bfloat(e.b)
    if a is not None and b is not None:
        return ir.Binary(e.op, a, b)
    return None


_BFLOAT_RETYPES: dict[type, Callable[[Any], ir.Expr | None]] = {
    ir.FloatImm: _bfloat_imm,
    ir.Broadcast: _bfloat_broadcast,
    ir.Ramp: _bfloat_ramp,
    ir.Select: _bfloat_select,
    ir.Binary: _bfloat_binary,
}
"""``as_bfloat`` of each node class that can hold a float16 literal (the IR's
classes are final: none is subclassed)."""


# --------------------------------------------------------------------------
# String literals
# --------------------------------------------------------------------------

_ESCAPES = {'"': 0x22, "\\": 0x5C, "t": 0x09, "r": 0x0D, "n": 0x0A}


_BACKSLASH = re.compile(r"\\(x[0-9A-Fa-f]{2}|.|$)", re.DOTALL)


def unescape(literal: str) -> str | None:
    """The value of a printed string literal; None if an escape is malformed.

    Halide escapes every byte outside printable ASCII as ``\\xHH``, so the
    escapes are bytes of the UTF-8 text (undecodable bytes survive as
    surrogates and print back unchanged). A literal without escapes is its
    own value: no copy beyond the slice, however long it is.
    """
    body = literal[1:-1]
    if "\\" not in body:
        return body
    out = bytearray()
    position = 0
    for match in _BACKSLASH.finditer(body):
        out += body[position:match.start()].encode("utf-8", errors="surrogateescape")
        escape = match.group(1)
        if len(escape) == 3:
            out.append(int(escape[1:], 16))
        elif escape in _ESCAPES:
            out.append(_ESCAPES[escape])
        else:
            return None
        position = match.end()
    out += body[position:].encode("utf-8", errors="surrogateescape")
    return out.decode("utf-8", errors="surrogateescape")
