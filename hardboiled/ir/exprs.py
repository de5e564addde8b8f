"""The expression nodes of the IR: ``Expr`` and its frozen dataclasses,
from literals to shuffles, and the small constructors of expressions that
passes share (``zero_of``).

Leaves (literals, variables, loads, calls, casts, reductions) store their
type; compound nodes derive it from their operands.
"""

from __future__ import annotations

from dataclasses import dataclass

from hardboiled.ir.enums import BinOp, ReduceOp
from hardboiled.ir.types import INT32, STRING_TYPE, Bool, Type

_INT32_HALF = 1 << 31


class Expr:
    """Base class of expressions. Every subclass provides ``type``."""

    __slots__ = ()
    type: Type


@dataclass(frozen=True, slots=True)
class IntImm(Expr):
    """A signed integer constant. A value past its type's range (a pass
    folding constants of a fuzzed input: an extent near 2^31 times 16)
    wraps, as the same arithmetic does when the program runs; the parser
    refuses such a literal in the input itself."""

    value: int
    type: Type = INT32

    def __post_init__(self) -> None:
        if self.type is INT32 and -_INT32_HALF <= self.value < _INT32_HALF:
            return  # most constants: decided without the type's bits
        half = 1 << (self.type.bits - 1)
        if not -half <= self.value < half:
            object.__setattr__(self, "value", (self.value + half) % (2 * half) - half)


@dataclass(frozen=True, slots=True)
class UIntImm(Expr):
    """An unsigned integer constant, wrapped into its type's range (as
    ``IntImm``)."""

    value: int
    type: Type

    def __post_init__(self) -> None:
        if not 0 <= self.value < 1 << self.type.bits:
            object.__setattr__(self, "value", self.value % (1 << self.type.bits))


@dataclass(frozen=True, slots=True)
class FloatImm(Expr):
    """A float literal. ``value`` is the exact double that was printed or built.

    Halide prints float16 and bfloat16 literals identically (``0.5h``); the
    parser resolves which one from the surrounding types.
    """

    value: float
    type: Type

    def __eq__(self, other: object) -> bool:
        # Compare bit patterns so that NaN == NaN and -0.0 != 0.0: the IR is
        # compared structurally, not numerically.
        if not isinstance(other, FloatImm):
            return NotImplemented
        return self.type == other.type and _float_key(self.value) == _float_key(other.value)

    def __hash__(self) -> int:
        return hash((self.type, _float_key(self.value)))


def _float_key(value: float) -> bytes:
    import struct

    return struct.pack("<d", value)


@dataclass(frozen=True, slots=True)
class StringImm(Expr):
    value: str

    @property
    def type(self) -> Type:  # type: ignore[override]
        return STRING_TYPE


@dataclass(frozen=True, slots=True)
class Variable(Expr):
    name: str
    type: Type = INT32


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    type: Type
    value: Expr


@dataclass(frozen=True, slots=True)
class Reinterpret(Expr):
    type: Type
    value: Expr


@dataclass(frozen=True, slots=True)
class Binary(Expr):
    op: BinOp
    a: Expr
    b: Expr

    @property
    def type(self) -> Type:  # type: ignore[override]
        # A loop down the left operands, not a recursion: Halide nests a
        # long sum to the left, and this is asked at every level.
        node: Expr = self
        while isinstance(node, Binary) and id(node.op) not in _BOOL_VALUED:
            node = node.a
        if isinstance(node, Binary):
            return Bool(node.a.type.lanes)
        return node.type


_BOOL_VALUED = frozenset(id(op) for op in BinOp if op.is_comparison or op.is_logical)
"""The operators whose result is boolean, by identity (hashing an enum
member runs Python code)."""


@dataclass(frozen=True, slots=True)
class Not(Expr):
    value: Expr

    @property
    def type(self) -> Type:  # type: ignore[override]
        return self.value.type


@dataclass(frozen=True, slots=True)
class Select(Expr):
    condition: Expr
    true_value: Expr
    false_value: Expr

    @property
    def type(self) -> Type:  # type: ignore[override]
        return self.true_value.type


@dataclass(frozen=True, slots=True)
class Load(Expr):
    """``name[index]``; the type is the element type with the index's lanes."""

    name: str
    index: Expr
    type: Type
    predicate: Expr | None = None
    alignment: tuple[int, int] | None = None
    """(modulus, remainder) when Halide printed ``aligned(m, r)``."""


@dataclass(frozen=True, slots=True)
class Ramp(Expr):
    """``ramp(base, stride, lanes)``; base may itself be a vector (nested ramp)."""

    base: Expr
    stride: Expr
    lanes: int

    @property
    def type(self) -> Type:  # type: ignore[override]
        t = self.base.type
        return t.with_lanes(t.lanes * self.lanes)


@dataclass(frozen=True, slots=True)
class Broadcast(Expr):
    """``xN(value)``: N copies of value, which may itself be a vector."""

    value: Expr
    lanes: int

    @property
    def type(self) -> Type:  # type: ignore[override]
        t = self.value.type
        return t.with_lanes(t.lanes * self.lanes)


@dataclass(frozen=True, slots=True)
class Call(Expr):
    name: str
    args: tuple[Expr, ...]
    type: Type = INT32


@dataclass(frozen=True, slots=True)
class Let(Expr):
    name: str
    value: Expr
    body: Expr

    @property
    def type(self) -> Type:  # type: ignore[override]
        return self.body.type


@dataclass(frozen=True, slots=True)
class Shuffle(Expr):
    """Lanes ``indices`` picked from the concatenation of ``vectors``."""

    vectors: tuple[Expr, ...]
    indices: tuple[int, ...]

    @property
    def type(self) -> Type:  # type: ignore[override]
        return self.vectors[0].type.with_lanes(len(self.indices))

    @property
    def input_lanes(self) -> int:
        return sum(v.type.lanes for v in self.vectors)

    def is_concat(self) -> bool:
        return self.indices == tuple(range(self.input_lanes))

    def is_interleave(self) -> bool:
        n = len(self.vectors)
        if n < 2:
            return False
        lanes = self.vectors[0].type.lanes
        if any(v.type.lanes != lanes for v in self.vectors):
            return False
        if len(self.indices) != n * lanes:
            return False
        return all(idx == (i % n) * lanes + i // n for i, idx in enumerate(self.indices))

    def is_extract_element(self) -> bool:
        return len(self.vectors) == 1 and len(self.indices) == 1

    def slice_params(self) -> tuple[int, int] | None:
        """(begin, stride) if this is a strided slice of a single vector."""
        if len(self.vectors) != 1 or len(self.indices) < 2:
            return None
        begin = self.indices[0]
        stride = self.indices[1] - begin
        if stride < 1:
            return None
        if any(idx != begin + i * stride for i, idx in enumerate(self.indices)):
            return None
        return begin, stride


@dataclass(frozen=True, slots=True)
class VectorReduce(Expr):
    """``(T)vector_reduce_op(value)``: reduces groups of adjacent lanes."""

    op: ReduceOp
    value: Expr
    type: Type


def zero_of(t: Type) -> Expr:
    """The scalar zero of ``t``'s element type."""
    element = t.element()
    return FloatImm(0.0, element) if element.is_float else IntImm(0, element)

