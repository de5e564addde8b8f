"""Hardware facts as data: tile shapes, element packing and register limits.

Every number about an accelerator lives here; rules receive them as egglog
facts (``amx_facts``, ``wmma_facts``) and the legalizer and code generators
check against the same tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ir


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
class AMXTile:
    """Intel AMX, palette 1 (Sapphire Rapids)."""

    max_rows: int = 16
    max_colbytes: int = 64
    registers: int = 8
    tile_bytes: int = 1024
    elements: tuple[AMXElement, ...] = (
        AMXElement(ir.BFloat(16), 2, ir.Float(32)),  # tdpbf16ps
        AMXElement(ir.Int(8), 4, ir.Int(32)),        # tdpbssd, tdpbsud
        AMXElement(ir.UInt(8), 4, ir.Int(32)),       # tdpbusd, tdpbuud
    )

    def __post_init__(self) -> None:
        assert self.max_rows * self.max_colbytes == self.tile_bytes


AMX_TILE = AMXTile()

_TYPE_CODES = {
    ir.TypeCode.INT: "IntT",
    ir.TypeCode.UINT: "UIntT",
    ir.TypeCode.FLOAT: "FloatT",
    ir.TypeCode.BFLOAT: "BFloatT",
    ir.TypeCode.HANDLE: "HandleT",
}


def egglog_type_code(code: ir.TypeCode) -> str:
    return _TYPE_CODES[code]


def egglog_binop(op: ir.BinOp) -> str:
    """The BinOp constructor of rules/definition.egg for ``op``."""
    return {ir.BinOp.ADD: "Add", ir.BinOp.SUB: "Sub", ir.BinOp.MUL: "Mul", ir.BinOp.DIV: "Div",
            ir.BinOp.MOD: "Mod", ir.BinOp.MIN: "Min", ir.BinOp.MAX: "Max", ir.BinOp.EQ: "EQ",
            ir.BinOp.NE: "NE", ir.BinOp.LT: "LT", ir.BinOp.LE: "LE", ir.BinOp.GT: "GT",
            ir.BinOp.GE: "GE", ir.BinOp.AND: "And", ir.BinOp.OR: "Or"}[op]


def amx_facts(tile: AMXTile = AMX_TILE) -> str:
    """The facts the AMX rules query (declared in rules/supporting.egg)."""
    lines = [";; generated from hardboiled/hardware.py"]
    for element in tile.elements:
        t, acc = element.type, element.accumulator
        lines.append(
            f"(amx-element ({egglog_type_code(t.code)}) {t.bits} {t.bytes} {element.k_pack} "
            f"({egglog_type_code(acc.code)}))"
        )
    lines.append(f"(amx-limits {tile.max_rows} {tile.max_colbytes})")
    return "\n".join(lines) + "\n"


# --- NVIDIA Tensor Cores (WMMA) ---------------------------------------------


@dataclass(frozen=True, slots=True)
class WMMAShape:
    """One ``nvcuda::wmma`` fragment shape: C[m, n] += A[m, k] * B[k, n]."""

    m: int
    n: int
    k: int

    @property
    def name(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"


@dataclass(frozen=True, slots=True)
class WMMAElement:
    """An operand element type, the accumulators it may feed, and the first
    architecture whose Tensor Cores take it."""

    type: ir.Type
    cuda_type: str
    accumulators: tuple[ir.Type, ...]
    min_sm: int


@dataclass(frozen=True, slots=True)
class WMMATensorCore:
    """The WMMA API as nvcc 13 accepts it (CUDA 13 dropped sm_70/sm_72)."""

    shapes: tuple[WMMAShape, ...] = (WMMAShape(16, 16, 16), WMMAShape(32, 8, 16), WMMAShape(8, 32, 16))
    elements: tuple[WMMAElement, ...] = (
        WMMAElement(ir.Float(16), "__half", (ir.Float(32), ir.Float(16)), 75),
        WMMAElement(ir.BFloat(16), "__nv_bfloat16", (ir.Float(32),), 80),
    )
    layouts: tuple[str, ...] = ("row_major", "col_major")
    warp_size: int = 32
    """Every WMMA operation is executed by a whole warp."""
    pointer_alignment: int = 32
    """load_matrix_sync/store_matrix_sync need 256-bit aligned addresses."""
    min_sm: int = 75
    default_sm: int = 80
    elementwise: tuple[ir.BinOp, ...] = (ir.BinOp.ADD, ir.BinOp.SUB, ir.BinOp.MUL, ir.BinOp.MIN, ir.BinOp.MAX)
    """Operators applied to each element of an accumulator fragment (an
    epilogue such as a ReLU): the same for every element, whatever lane holds
    it, so the unspecified fragment layout does not matter."""

    @property
    def window_shape(self) -> WMMAShape:
        """The shape a convolution's sliding window is laid out on: its
        outputs x = N * i + j fill an M x N fragment row by row."""
        return self.shapes[0]

    def element(self, t: ir.Type) -> WMMAElement | None:
        return next((e for e in self.elements if e.type == t), None)


WMMA_TENSOR_CORE = WMMATensorCore()


def wmma_facts(core: WMMATensorCore = WMMA_TENSOR_CORE) -> str:
    """The facts the WMMA rules query (declared in rules/supporting.egg)."""
    lines = [";; generated from hardboiled/hardware.py"]
    for shape in core.shapes:
        lines.append(f"(wmma-shape {shape.m} {shape.n} {shape.k})")
    for element in core.elements:
        t = element.type
        for acc in element.accumulators:
            lines.append(
                f"(wmma-element ({egglog_type_code(t.code)}) {t.bits} ({egglog_type_code(acc.code)}) {acc.bits})"
            )
    window = core.window_shape
    lines.append(f"(wmma-window-shape {window.m} {window.n} {window.k})")
    for op in core.elementwise:
        lines.append(f"(wmma-elementwise ({egglog_binop(op)}))")
    return "\n".join(lines) + "\n"


WMMA_TYPE_NAMES = {"f16": ir.Float(16), "bf16": ir.BFloat(16), "f32": ir.Float(32)}
"""Fragment element types by their PTX-style name, as the wmma.* calls spell them."""


def wmma_type_suffix(t: ir.Type) -> str:
    """The PTX-style name of a fragment element type: f16, bf16 or f32."""
    return next(name for name, named in WMMA_TYPE_NAMES.items() if named == t.element())
