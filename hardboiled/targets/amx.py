"""Intel AMX as data: tile shapes, element packing, register limits, the
tile operations selection emits (``AMXIntrinsic``) and the dot-product
instruction for each pair of operand types (``AMXDotProduct``).

Every number about AMX lives here; the rules receive them as egglog facts
(``select.facts``), and legalization, the interpreter and the C generator
check against the same table.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from hardboiled import ir


@dataclass(frozen=True, slots=True)
class AMXElement:
    """An AMX operand element type and how AMX computes with it."""

    type: ir.Type
    k_pack: int
    """Consecutive K values packed in one 4-byte VNNI group (4 / bytes)."""
    accumulator: ir.Type

    def __post_init__(self) -> None:
        assert self.k_pack * self.type.bytes == 4, "a VNNI group is 4 bytes"


@dataclass(frozen=True, slots=True)
class AMXDotProduct:
    """One tile dot-product instruction: C (accumulator) += A . B."""

    a: ir.Type
    b: ir.Type
    accumulator: ir.Type
    c_name: str
    """The <immintrin.h> intrinsic (hb_amx.h emulates it too)."""


@dataclass(frozen=True, slots=True)
class AMXTile:
    """Intel AMX, palette 1 (Sapphire Rapids)."""

    max_rows: int = 16
    max_colbytes: int = 64
    registers: int = 8
    tile_bytes: int = 1024
    elements: tuple[AMXElement, ...] = (
        AMXElement(ir.BFloat(16), 2, ir.Float(32)),
        AMXElement(ir.Int(8), 4, ir.Int(32)),
        AMXElement(ir.UInt(8), 4, ir.Int(32)),
    )
    dot_products: tuple[AMXDotProduct, ...] = (
        AMXDotProduct(ir.BFloat(16), ir.BFloat(16), ir.Float(32), "_tile_dpbf16ps"),
        # 8-bit integers in every combination of signedness (A's letter first)
        AMXDotProduct(ir.Int(8), ir.Int(8), ir.Int(32), "_tile_dpbssd"),
        AMXDotProduct(ir.Int(8), ir.UInt(8), ir.Int(32), "_tile_dpbsud"),
        AMXDotProduct(ir.UInt(8), ir.Int(8), ir.Int(32), "_tile_dpbusd"),
        AMXDotProduct(ir.UInt(8), ir.UInt(8), ir.Int(32), "_tile_dpbuud"),
    )

    def __post_init__(self) -> None:
        assert self.max_rows * self.max_colbytes == self.tile_bytes
        accumulators = {e.type: e.accumulator for e in self.elements}
        for d in self.dot_products:
            assert accumulators.get(d.a) == accumulators.get(d.b) == d.accumulator, d

    def dot_product(self, a: ir.Type, b: ir.Type) -> AMXDotProduct | None:
        """The instruction that multiplies A elements of type ``a`` by B
        elements of type ``b``; None if AMX has none."""
        a, b = a.element(), b.element()
        return next((d for d in self.dot_products if d.a == a and d.b == b), None)


class AMXOp(enum.Enum):
    """The tile operations selection emits, by their call name (those of
    Halide's own AMX backend)."""

    ZERO = "tile_zero"
    LOAD = "tile_load"
    MATMUL = "tile_matmul"
    STORE = "tile_store"


@dataclass(frozen=True, slots=True)
class AMXIntrinsic:
    """A tile operation: its call's arguments, in order, and the C
    intrinsic it becomes (the matmul's depends on the operand types: see
    ``AMXTile.dot_product``). Offsets and strides are in bytes."""

    op: AMXOp
    arguments: tuple[str, ...]
    c_name: str | None
    writes_tile: bool
    """Its value is stored into an AMX buffer (a tile register); the store
    is a statement of its own."""

    @property
    def name(self) -> str:
        return self.op.value

    @staticmethod
    def parse(name: str) -> AMXIntrinsic | None:
        return _BY_NAME.get(name)

    def argument(self, call: ir.Call, name: str) -> ir.Expr:
        """The argument of ``call`` (a call of this operation) called ``name``."""
        return call.args[self.arguments.index(name)]


AMX_INTRINSICS = (
    AMXIntrinsic(AMXOp.ZERO, ("rows", "colbytes"), "_tile_zero", True),
    AMXIntrinsic(AMXOp.LOAD, ("rows", "colbytes", "buffer", "offset", "stride"), "_tile_loadd", True),
    AMXIntrinsic(AMXOp.MATMUL, ("rows", "colbytes", "k", "acc", "a", "b"), None, True),
    AMXIntrinsic(AMXOp.STORE, ("rows", "colbytes", "buffer", "offset", "stride", "tile"), "_tile_stored", False),
)
_BY_NAME = {i.name: i for i in AMX_INTRINSICS}


def amx_intrinsic(node: ir.Node) -> AMXIntrinsic | None:
    """The tile operation ``node`` calls; None if it is not a call of one.
    Every pass and printer asks this, not the call's name."""
    return AMXIntrinsic.parse(node.name) if isinstance(node, ir.Call) else None
AMX_INTRINSIC = {i.op: i for i in AMX_INTRINSICS}


AMX_TILE = AMXTile()


def vnni_order(k_pack: int, rows: int, cols: int) -> tuple[int, ...]:
    """Where each element of a rows x cols (K x N) row-major block comes
    from in the block's VNNI order: element j of the VNNI block is element
    ``vnni_order(...)[j]`` of the standard one, out[(kq, n, kr)] =
    matrix[(kq * k_pack + kr) * cols + n]. The decoder writes this shuffle,
    and the rewrite check reads an AMX buffer that holds such blocks."""
    return tuple((kq * k_pack + kr) * cols + n
                 for kq in range(rows // k_pack) for n in range(cols) for kr in range(k_pack))


@dataclass(frozen=True, slots=True)
class VNNILayout:
    """An AMX buffer that holds rows x cols (K x N) blocks of a standard-
    layout operand in VNNI order, one block after another."""

    k_pack: int
    rows: int
    cols: int

    @property
    def block(self) -> int:
        """Elements in one block."""
        return self.rows * self.cols

    def order(self) -> tuple[int, ...]:
        """``vnni_order`` of one block."""
        return vnni_order(self.k_pack, self.rows, self.cols)
