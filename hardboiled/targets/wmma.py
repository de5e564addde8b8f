"""NVIDIA Tensor Cores (the ``nvcuda::wmma`` API) as data: fragment shapes,
element and accumulator types, warp size and alignment.

The WMMA rules receive these facts from ``select.facts``; legalization, the
interpreter, the CUDA generator and the nvcc driver read the same table.
"""

from __future__ import annotations

from dataclasses import dataclass

from hardboiled import ir


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


WMMA_TYPE_NAMES = {"f16": ir.Float(16), "bf16": ir.BFloat(16), "f32": ir.Float(32)}
"""Fragment element types by their PTX-style name, as the wmma.* calls spell them."""


def wmma_type_suffix(t: ir.Type) -> str:
    """The PTX-style name of a fragment element type: f16, bf16 or f32."""
    return next(name for name, named in WMMA_TYPE_NAMES.items() if named == t.element())
