"""The Halide IR, as frozen dataclasses.

This is the centre of hardboiled: the parser builds it, every pass reads and
rewrites it, and the printer writes it back in Halide's own text format.

Design rules:

* Nodes are immutable and compared structurally, so ``parse(print(ir)) == ir``
  is a meaningful test and nodes can be hashed, cached and deduplicated.
* Every expression has a Halide type, lanes included. Leaves (literals,
  variables, loads, calls, casts, reductions) store it; compound nodes derive
  it from their operands, so an inconsistent type cannot be constructed.
* Statement sequences are ``Block`` nodes holding two or more statements that
  are not themselves blocks. ``LetStmt`` and ``Allocate`` scope over "the rest
  of the block", exactly as Halide prints them.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeGuard

# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------


class TypeCode(enum.Enum):
    INT = "int"
    UINT = "uint"
    FLOAT = "float"
    BFLOAT = "bfloat"
    HANDLE = "handle"


@dataclass(frozen=True, slots=True)
class Type:
    """A Halide type: element kind, bit width and vector lanes.

    Handle types carry the C spelling that Halide prints between parentheses
    (``void *``, ``struct halide_buffer_t *``); their ``bits`` is 64.
    """

    code: TypeCode
    bits: int
    lanes: int = 1
    handle_name: str | None = None

    def with_lanes(self, lanes: int) -> Type:
        return Type(self.code, self.bits, lanes, self.handle_name)

    def element(self) -> Type:
        return self.with_lanes(1)

    @property
    def is_vector(self) -> bool:
        return self.lanes > 1

    @property
    def is_float(self) -> bool:
        return self.code in (TypeCode.FLOAT, TypeCode.BFLOAT)

    @property
    def is_int(self) -> bool:
        return self.code is TypeCode.INT

    @property
    def is_uint(self) -> bool:
        return self.code is TypeCode.UINT

    @property
    def is_handle(self) -> bool:
        return self.code is TypeCode.HANDLE

    @property
    def is_bool(self) -> bool:
        return self.code is TypeCode.UINT and self.bits == 1

    @property
    def bytes(self) -> int:
        return (self.bits + 7) // 8

    def __str__(self) -> str:
        if self.code is TypeCode.HANDLE:
            return f"({self.handle_name})"
        text = f"{self.code.value}{self.bits}"
        return f"{text}x{self.lanes}" if self.lanes > 1 else text


_SCALAR_TYPE_RE = re.compile(r"(u?int|b?float)(\d+)(?:x(\d+))?")
_VALID_BITS = {
    TypeCode.INT: (8, 16, 32, 64),
    TypeCode.UINT: (1, 8, 16, 32, 64),
    TypeCode.FLOAT: (16, 32, 64),
    TypeCode.BFLOAT: (16,),
}


MAX_LANES = 65535
"""Halide's limit: ``halide_type_t`` keeps the lane count in 16 bits."""


def parse_type_name(text: str) -> Type | None:
    """Decode a printed type name such as ``float32x256``; None if it is not one."""
    m = _SCALAR_TYPE_RE.fullmatch(text)
    if m is None:
        return None
    code = TypeCode(m.group(1))
    if len(m.group(2)) > 2:
        return None
    bits = int(m.group(2))
    if bits not in _VALID_BITS[code]:
        return None
    if m.group(3) is not None and len(m.group(3)) > len(str(MAX_LANES)):
        return None
    lanes = int(m.group(3)) if m.group(3) else 1
    if lanes < 1 or lanes > MAX_LANES or (m.group(3) is not None and lanes == 1):
        return None
    return Type(code, bits, lanes)


def handle_type(c_spelling: str = "void *") -> Type:
    return Type(TypeCode.HANDLE, 64, 1, c_spelling)


def Int(bits: int, lanes: int = 1) -> Type:
    # Named as Halide's constructors are (see pep8-naming in pyproject.toml).
    return Type(TypeCode.INT, bits, lanes)


def UInt(bits: int, lanes: int = 1) -> Type:
    return Type(TypeCode.UINT, bits, lanes)


def Float(bits: int, lanes: int = 1) -> Type:
    return Type(TypeCode.FLOAT, bits, lanes)


def BFloat(bits: int = 16, lanes: int = 1) -> Type:
    return Type(TypeCode.BFLOAT, bits, lanes)


def Bool(lanes: int = 1) -> Type:
    return UInt(1, lanes)


INT32 = Int(32)
STRING_TYPE = handle_type("const char *")

# Halide encodes buffer element types as code | bits << 8 | lanes << 16, with
# codes 0 int, 1 uint, 2 float, 3 handle, 4 bfloat (halide_type_code_t).
_HALIDE_TYPE_CODES = {0: TypeCode.INT, 1: TypeCode.UINT, 2: TypeCode.FLOAT, 4: TypeCode.BFLOAT}


def type_from_halide_code(code: int, bits: int) -> Type | None:
    kind = _HALIDE_TYPE_CODES.get(code)
    if kind is None or bits not in _VALID_BITS[kind]:
        return None
    return Type(kind, bits)


def type_from_packed_halide_type(packed: int) -> Type | None:
    """Decode the ``X.type == (uint32)N`` constant of a buffer type assert."""
    return type_from_halide_code(packed & 0xFF, (packed >> 8) & 0xFF)


# --------------------------------------------------------------------------
# Enumerations printed by Halide
# --------------------------------------------------------------------------


class BinOp(enum.Enum):
    """Binary operators; the value is how Halide prints the infix form."""

    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    MOD = "%"
    MIN = "min"
    MAX = "max"
    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    AND = "&&"
    OR = "||"

    @property
    def is_comparison(self) -> bool:
        return self in _COMPARISONS

    @property
    def is_logical(self) -> bool:
        return self in (BinOp.AND, BinOp.OR)

    @property
    def is_function_style(self) -> bool:
        return self in (BinOp.MIN, BinOp.MAX)


_COMPARISONS = frozenset({BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE})


class ReduceOp(enum.Enum):
    ADD = "add"
    SATURATING_ADD = "saturating_add"
    MUL = "mul"
    MIN = "min"
    MAX = "max"
    AND = "and"
    OR = "or"


class ForKind(enum.Enum):
    SERIAL = "for"
    PARALLEL = "parallel"
    UNROLLED = "unrolled"
    VECTORIZED = "vectorized"
    EXTERN = "extern"
    GPU_BLOCK = "gpu_block"
    GPU_THREAD = "gpu_thread"
    GPU_LANE = "gpu_lane"


DEVICE_APIS = (
    "Default_GPU",
    "CUDA",
    "OpenCL",
    "Metal",
    "Hexagon",
    "HexagonDma",
    "D3D12Compute",
    "Vulkan",
    "WebGPU",
)

# Halide 21's MemoryType names, plus the accelerator memories of the
# HardBoiled fork (WMMA*) that stock Halide does not have.
MEMORY_TYPES = (
    "Auto",
    "Heap",
    "Stack",
    "Register",
    "GPUShared",
    "GPUTexture",
    "LockedCache",
    "VTCM",
    "AMXTile",
    "WMMAAccumulator",
    "WMMAA",
    "WMMAB",
)

WMMA_STAGE = ".wmma_stage."
"""Infix of the buffers that legalization adds to stage a WMMA operand
through shared memory (``A.wmma_stage.0``); the interpreter and the CUDA
generator recognize the copies into and out of them."""


# --------------------------------------------------------------------------
# Expressions
# --------------------------------------------------------------------------


class Expr:
    """Base class of expressions. Every subclass provides ``type``."""

    __slots__ = ()
    type: Type


@dataclass(frozen=True, slots=True)
class IntImm(Expr):
    value: int
    type: Type = INT32


@dataclass(frozen=True, slots=True)
class UIntImm(Expr):
    value: int
    type: Type


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


# --------------------------------------------------------------------------
# Statements
# --------------------------------------------------------------------------


class Stmt:
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class LetStmt(Stmt):
    name: str
    value: Expr
    body: Stmt


@dataclass(frozen=True, slots=True)
class AssertStmt(Stmt):
    condition: Expr
    message: Expr


@dataclass(frozen=True, slots=True)
class ProducerConsumer(Stmt):
    name: str
    is_producer: bool
    body: Stmt


@dataclass(frozen=True, slots=True)
class For(Stmt):
    name: str
    min: Expr
    extent: Expr
    kind: ForKind
    device_api: str | None
    body: Stmt


@dataclass(frozen=True, slots=True)
class Store(Stmt):
    name: str
    value: Expr
    index: Expr
    predicate: Expr | None = None
    alignment: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Allocate(Stmt):
    name: str
    type: Type
    """Element type; Halide allows a vector element type (``float32x256``)."""
    memory_type: str
    extents: tuple[Expr, ...]
    body: Stmt
    condition: Expr | None = None
    new_expr: Expr | None = None
    free_function: str | None = None
    padding: Expr | None = None
    """Extra elements after the extents' product (Halide prints it only with
    two or more extents; with one, ``(e + pad)`` is just an extent)."""

    @property
    def constant_elements(self) -> int | None:
        """How many elements (lanes counted) the allocation holds when every
        extent is a constant; None for a symbolic size."""
        size = self.type.lanes
        for extent in self.extents:
            if not isinstance(extent, IntImm):
                return None
            size *= extent.value
        return size


@dataclass(frozen=True, slots=True)
class Free(Stmt):
    name: str


@dataclass(frozen=True, slots=True)
class IfThenElse(Stmt):
    condition: Expr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(frozen=True, slots=True)
class Evaluate(Stmt):
    value: Expr


@dataclass(frozen=True, slots=True)
class Block(Stmt):
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class Atomic(Stmt):
    producer: str
    mutex: str | None
    body: Stmt


@dataclass(frozen=True, slots=True)
class Fork(Stmt):
    first: Stmt
    rest: Stmt


@dataclass(frozen=True, slots=True)
class Acquire(Stmt):
    semaphore: Expr
    count: Expr
    body: Stmt


@dataclass(frozen=True, slots=True)
class HoistedStorage(Stmt):
    name: str | None
    body: Stmt


@dataclass(frozen=True, slots=True)
class Realize(Stmt):
    """A multi-dimensional Func realization (before storage flattening)."""

    name: str
    memory_type: str
    bounds: tuple[tuple[Expr, Expr], ...]
    """(min, extent) per dimension."""
    body: Stmt
    condition: Expr | None = None


@dataclass(frozen=True, slots=True)
class Provide(Stmt):
    """``f(args) = value`` (before storage flattening); tuples give several values."""

    name: str
    values: tuple[Expr, ...]
    args: tuple[Expr, ...]
    predicate: Expr | None = None


@dataclass(frozen=True, slots=True)
class Prefetch(Stmt):
    """``prefetch buf, at, from, ([min, extent], ...)`` (early stages only)."""

    name: str
    at: Expr
    from_: Expr
    bounds: tuple[tuple[Expr, Expr], ...]


@dataclass(frozen=True, slots=True)
class NoOp(Stmt):
    """An empty body (``{}`` with nothing inside)."""


def make_block(stmts: list[Stmt] | tuple[Stmt, ...]) -> Stmt:
    """Sequence statements, flattening nested blocks and dropping no-ops."""
    flat: list[Stmt] = []
    for s in stmts:
        if isinstance(s, Block):
            flat.extend(s.stmts)
        elif not isinstance(s, NoOp):
            flat.append(s)
    if not flat:
        return NoOp()
    if len(flat) == 1:
        return flat[0]
    return Block(tuple(flat))


# --------------------------------------------------------------------------
# Modules: the output of compile_to_lowered_stmt
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Buffer:
    """``buffer NAME = {...}``; ``contents`` holds embedded text (GPU source)."""

    name: str
    contents: str | None = None


@dataclass(frozen=True, slots=True)
class LoweredFunc:
    linkage: str
    name: str
    args: tuple[str, ...]
    body: Stmt


@dataclass(frozen=True, slots=True)
class Module:
    name: str
    target: str
    buffers: tuple[Buffer, ...]
    functions: tuple[LoweredFunc, ...]


Node = Expr | Stmt


def children(node: Node) -> list[Node]:
    """The direct Expr/Stmt children of a node, in field order (looking
    into tuples of them, and tuples of tuples such as ``Realize.bounds``).

    Every traversal goes through here, so it is a plain loop filling a list
    (no generators), over field names looked up once per class."""
    found: list[Node] = []
    for name in _field_names(type(node)):
        _collect_nodes(getattr(node, name), found)
    return found


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(cls.__dataclass_fields__)  # type: ignore[attr-defined]
    return names


def _collect_nodes(value: object, found: list[Node]) -> None:
    if isinstance(value, (Expr, Stmt)):
        found.append(value)
    elif type(value) is tuple:
        for item in value:
            _collect_nodes(item, found)


def walk(node: Node) -> Iterator[Node]:
    """Pre-order traversal of a node and everything below it."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


GPU_LOOP_KINDS = (ForKind.GPU_BLOCK, ForKind.GPU_THREAD, ForKind.GPU_LANE)


def has_gpu_loops(node: Node) -> bool:
    """Whether a GPU loop (block, thread or lane) is under ``node``: the
    program runs on the GPU, its accumulators in Tensor Core fragments."""
    return any(isinstance(n, For) and n.kind in GPU_LOOP_KINDS for n in walk(node))


def calls(node: Node) -> Iterator[Call]:
    """Every call under ``node`` (``node`` included), in pre-order."""
    for n in walk(node):
        if isinstance(n, Call):
            yield n


def is_wmma_call(node: Node) -> TypeGuard[Call]:
    """A Tensor Core fragment operation (``wmma.load...``, ``wmma.mma...``,
    ``wmma.store.d...``, ``wmma.fill...``), as selection emits them."""
    return isinstance(node, Call) and node.name.startswith("wmma.")


def zero_of(t: Type) -> Expr:
    """The scalar zero of ``t``'s element type."""
    element = t.element()
    return FloatImm(0.0, element) if element.is_float else IntImm(0, element)
