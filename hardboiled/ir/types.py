"""Halide types: the element kind codes, ``Type`` itself, the constructors
named as Halide's are (``Int(32)``, ``BFloat(16)``), and the decoding of
printed type names and of the packed ``halide_type_t`` of buffer asserts.

Everything else in the IR is built on these; this module imports nothing
of the IR.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from functools import lru_cache


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
        return self if lanes == self.lanes else shared_type(self.code, self.bits, lanes, self.handle_name)

    def __eq__(self, other: object) -> bool:
        # Written out, identity first: types are compared at every node the
        # parser builds, and most comparisons are of one shared INT32.
        if self is other:
            return True
        if other.__class__ is not Type:
            return NotImplemented
        assert isinstance(other, Type)
        return (self.code is other.code and self.bits == other.bits and self.lanes == other.lanes
                and self.handle_name == other.handle_name)

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


@lru_cache(maxsize=1 << 10)
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
    return shared_type(code, bits, lanes)


def handle_type(c_spelling: str = "void *") -> Type:
    return shared_type(TypeCode.HANDLE, 64, 1, c_spelling)


_SHARED: dict[tuple[TypeCode, int, int, str | None], Type] = {}
_SHARED_LIMIT = 1 << 12
"""Distinct types kept at most; past that the table starts again (a
compile server reads file after file, each with its handle types)."""


def shared_type(code: TypeCode, bits: int, lanes: int = 1, handle_name: str | None = None) -> Type:
    """The ``Type`` of these fields, one object per distinct type: a type is
    a value (compared field by field, never by identity), and the parser
    and every ``.type`` of a vector node ask for the same few hundreds of
    thousands of times, which a look-up answers in a fifth of the time a
    new frozen dataclass takes."""
    key = (code, bits, lanes, handle_name)
    found = _SHARED.get(key)
    if found is None:
        if len(_SHARED) >= _SHARED_LIMIT:
            _SHARED.clear()
        found = _SHARED[key] = Type(code, bits, lanes, handle_name)
    return found


def Int(bits: int, lanes: int = 1) -> Type:
    # Named as Halide's constructors are (see pep8-naming in pyproject.toml).
    return shared_type(TypeCode.INT, bits, lanes)


def UInt(bits: int, lanes: int = 1) -> Type:
    return shared_type(TypeCode.UINT, bits, lanes)


def Float(bits: int, lanes: int = 1) -> Type:
    return shared_type(TypeCode.FLOAT, bits, lanes)


def BFloat(bits: int = 16, lanes: int = 1) -> Type:
    return shared_type(TypeCode.BFLOAT, bits, lanes)


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
    return shared_type(kind, bits)


def type_from_packed_halide_type(packed: int) -> Type | None:
    """Decode the ``X.type == (uint32)N`` constant of a buffer type assert."""
    return type_from_halide_code(packed & 0xFF, (packed >> 8) & 0xFF)
