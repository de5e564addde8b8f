"""NVIDIA Tensor Cores (the ``nvcuda::wmma`` API) as data: fragment shapes,
element and accumulator types, warp size and alignment, and the fragment
operations (``WMMAIntrinsic``) that selection emits as ``wmma.*`` calls.

The WMMA rules receive these facts from ``select.facts``; legalization, the
interpreter, the CUDA generator and the nvcc driver read the same table.
A ``wmma.*`` call name is written only by ``WMMAIntrinsic.name`` and read
only by ``WMMAIntrinsic.parse``, which the rest of the project reaches
through ``wmma_intrinsic(call)``; ``WMMATensorCore.intrinsics`` lists every
operation the table defines.
"""

from __future__ import annotations

import enum
import functools
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from hardboiled import ir
from hardboiled.targets.cuda_arch import DEFAULT_SM, MIN_SM


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
    shapes: tuple[WMMAShape, ...] = ()
    """Its fragment shapes; empty: the table's common ones."""
    split_significand: int | None = None
    """Operands the Tensor Cores take only in a narrower format (float32 as
    tf32, whose significand has 11 bits): each operand is split into a high
    part, its value rounded to nearest (ties away) at this many bits, and a
    low part, the remainder rounded alike, and the product is the sum of
    three MMAs, low x high + high x low + high x high (the 3xTF32 method).
    What it drops, the low x low product and the low parts' own rounding,
    is about 3 * 2^-22 of each product (2^-19 at most, ``split_product_error``),
    so the result keeps close to float32's accuracy instead of tf32's 2^-11.
    None: operands are multiplied as they are."""


@dataclass(frozen=True, slots=True)
class WMMATensorCore:
    """The WMMA API as nvcc 13 accepts it (CUDA 13 dropped sm_70/sm_72)."""

    shapes: tuple[WMMAShape, ...] = (WMMAShape(16, 16, 16), WMMAShape(32, 8, 16), WMMAShape(8, 32, 16))
    elements: tuple[WMMAElement, ...] = (
        WMMAElement(ir.Float(16), "__half", (ir.Float(32), ir.Float(16)), 75),
        WMMAElement(ir.BFloat(16), "__nv_bfloat16", (ir.Float(32),), 80),
        WMMAElement(ir.Int(8), "signed char", (ir.Int(32),), 75),
        WMMAElement(ir.UInt(8), "unsigned char", (ir.Int(32),), 75),
        # double precision (DMMA) has one shape of its own
        WMMAElement(ir.Float(64), "double", (ir.Float(64),), 80, (WMMAShape(8, 8, 4),)),
        # float32 as pairs of tf32 values, in tf32's one shape
        WMMAElement(ir.Float(32), "wmma::precision::tf32", (ir.Float(32),), 80, (WMMAShape(16, 16, 8),),
                    split_significand=11),
    )
    warp_size: int = 32
    """Every WMMA operation is executed by a whole warp."""
    pointer_alignment: int = 32
    """load_matrix_sync/store_matrix_sync need 256-bit aligned addresses."""
    leading_dimension_alignment: int = 16
    """Bytes: their leading dimension is a multiple of 16 bytes (16 8-bit,
    8 16-bit or 4 32-bit elements)."""
    min_sm: int = MIN_SM
    default_sm: int = DEFAULT_SM
    elementwise: tuple[ir.BinOp, ...] = (ir.BinOp.ADD, ir.BinOp.SUB, ir.BinOp.MUL, ir.BinOp.MIN, ir.BinOp.MAX)
    """Operators applied to each element of an accumulator fragment (an
    epilogue such as a ReLU): the same for every element, whatever lane holds
    it, so the unspecified fragment layout does not matter."""

    @property
    def window_shape(self) -> WMMAShape:
        """The shape a convolution's sliding window is laid out on when the
        program has no window to weigh (``best_window_shape``)."""
        return self.shapes[0]

    @staticmethod
    def window_mmas(shape: WMMAShape, stride: int, taps: int) -> int:
        """MMAs one fragment of a sliding window takes: its outputs
        x = N * i + j fill the M x N fragment row by row, so a fragment row
        reads S * (N - 1) + R inputs, cut into chunks of K."""
        return -(-(stride * (shape.n - 1) + taps) // shape.k)

    def window_macs_per_output(self, shape: WMMAShape, stride: int, taps: int) -> int:
        """The cost model: multiply-adds the Tensor Core does per output of
        a window (every MMA of a fragment does M * N * K of them, for M * N
        outputs). Every common shape does 4096 per instruction, so this is
        the number of MMAs, in a unit that compares different shapes."""
        return self.window_mmas(shape, stride, taps) * shape.k

    def best_window_shape(self, windows: Iterable[tuple[int, int, int]]) -> WMMAShape:
        """The common shape with the least Tensor Core work over
        ``windows``, each (stride, taps per chunk, outputs): one shape for
        the whole program, so that every accumulator has one shape too.
        Row windows (S = 1, R = 8) cost 16 MACs per output in m32n8k16
        and 32 in m16n16k16, whose fragment rows span 23 inputs. Ties go to
        the first shape of the table."""
        windows = list(windows)
        if not windows:
            return self.window_shape
        return min(self.shapes, key=lambda shape: sum(outputs * self.window_macs_per_output(shape, s, r)
                                                      for s, r, outputs in windows))

    @property
    def phased_window_shape(self) -> WMMAShape:
        """The shape a multiphase window (P kernel phases interleaved in the
        output, as in a 2x upsample) is laid out on: the widest one, so that
        a fragment row covers the most input positions of every phase and
        the padded reduction wastes the least."""
        return max(self.shapes, key=lambda s: (s.n, -s.m))

    def element(self, t: ir.Type) -> WMMAElement | None:
        return next((e for e in self.elements if e.type == t), None)

    def shapes_of(self, element: WMMAElement) -> tuple[WMMAShape, ...]:
        """The fragment shapes operands of ``element`` come in."""
        return element.shapes or self.shapes

    @property
    def all_shapes(self) -> tuple[WMMAShape, ...]:
        return tuple(dict.fromkeys(s for e in self.elements for s in self.shapes_of(e)))

    def _shape_allowed(self, intrinsic: WMMAIntrinsic) -> bool:
        """Whether some element type whose fragments this operation moves or
        multiplies comes in the intrinsic's shape."""
        if intrinsic.op is WMMAOp.LOAD and intrinsic.matrix in (MatrixUse.A, MatrixUse.B):
            owners = [e for e in self.elements if e.type == intrinsic.type]
        else:  # an accumulator (fill, C load, store, mma): the operand types that feed it
            owners = [e for e in self.elements if intrinsic.type in e.accumulators]
        return any(intrinsic.shape in self.shapes_of(e) for e in owners)


    @property
    def accumulator_types(self) -> tuple[ir.Type, ...]:
        """Every type an accumulator fragment (C or D) may hold."""
        return tuple(dict.fromkeys(t for e in self.elements for t in e.accumulators))

    @property
    def accumulator_pairs(self) -> tuple[tuple[ir.Type, ir.Type], ...]:
        """(D, C) types an mma may have: both accumulators of one operand
        type (f16 products may read f16 and write f32; int8 ones are int32)."""
        return tuple(dict.fromkeys(pair for e in self.elements
                                   for pair in itertools.product(e.accumulators, e.accumulators)))

    def fragment_types(self, use: MatrixUse) -> tuple[ir.Type, ...]:
        """The element types a fragment of ``use`` may hold."""
        if use in (MatrixUse.A, MatrixUse.B):
            return tuple(e.type for e in self.elements)
        return self.accumulator_types

    def defines(self, intrinsic: WMMAIntrinsic) -> bool:
        """Whether the table has this operation: its shape, and types that
        fragments of its kind may hold."""
        if not self._shape_allowed(intrinsic):
            return False
        if intrinsic.op is WMMAOp.MMA:
            return (intrinsic.type, intrinsic.c_type) in self.accumulator_pairs
        return intrinsic.type in self.fragment_types(intrinsic.moved_matrix)

    def intrinsics(self) -> tuple[WMMAIntrinsic, ...]:
        """Every fragment operation the table defines."""
        found: list[WMMAIntrinsic] = []
        for shape in self.all_shapes:
            elements = [e for e in self.elements if shape in self.shapes_of(e)]
            accumulators = tuple(dict.fromkeys(t for e in elements for t in e.accumulators))
            pairs = tuple(dict.fromkeys(p for e in elements for p in itertools.product(e.accumulators, repeat=2)))
            found += [WMMAIntrinsic.fill(shape, t) for t in accumulators]
            for layout in Layout:
                for use in (MatrixUse.A, MatrixUse.B):
                    found += [WMMAIntrinsic.load(use, layout, shape, e.type) for e in elements]
                found += [WMMAIntrinsic.load(MatrixUse.C, layout, shape, t) for t in accumulators]
                found += [WMMAIntrinsic.store(layout, shape, t) for t in accumulators]
            for a_layout, b_layout in itertools.product(Layout, Layout):
                found += [WMMAIntrinsic.mma(a_layout, b_layout, shape, d, c) for d, c in pairs]
        return tuple(found)

    def min_sm_of(self, intrinsic: WMMAIntrinsic) -> int:
        """The oldest architecture that runs ``intrinsic``: the one of its
        operand type for loads of A and B (bf16 needs sm_80)."""
        if intrinsic.op is WMMAOp.LOAD and intrinsic.matrix in (MatrixUse.A, MatrixUse.B):
            element = self.element(intrinsic.type)
            if element is not None:
                return max(self.min_sm, element.min_sm)
        return self.min_sm


# --------------------------------------------------------------------------
# Fragment operations
# --------------------------------------------------------------------------


class WMMAOp(enum.Enum):
    """What a ``wmma.*`` call does (the second part of its name)."""

    LOAD = "load"    # load_matrix_sync
    MMA = "mma"      # mma_sync
    STORE = "store"  # store_matrix_sync
    FILL = "fill"    # fill_fragment


class MatrixUse(enum.Enum):
    """Which matrix of D = A.B + C a fragment holds (D is only stored)."""

    A = "a"
    B = "b"
    C = "c"
    D = "d"

    @property
    def cuda(self) -> str:
        """The ``nvcuda::wmma`` fragment use (D is an accumulator too)."""
        return {"a": "matrix_a", "b": "matrix_b"}.get(self.value, "accumulator")

    def extent(self, shape: WMMAShape) -> tuple[int, int]:
        """Rows and columns of this matrix for ``shape``: A is m x k, B is
        k x n, C and D are m x n."""
        return {"a": (shape.m, shape.k), "b": (shape.k, shape.n)}.get(self.value, (shape.m, shape.n))


class Layout(enum.Enum):
    """How a matrix lies in memory: the leading dimension runs along rows
    (row-major) or along columns (column-major)."""

    ROW = "row"
    COL = "col"

    @property
    def cuda(self) -> str:
        """``nvcuda::wmma::row_major`` or ``col_major`` (a fragment's layout)."""
        return f"{self.value}_major"

    @property
    def cuda_memory(self) -> str:
        """``nvcuda::wmma::mem_row_major`` or ``mem_col_major`` (an accumulator's
        layout in memory, given to load/store_matrix_sync)."""
        return f"mem_{self.value}_major"


@dataclass(frozen=True, slots=True)
class WMMAIntrinsic:
    """One whole-fragment operation, named after the PTX instruction:

    * ``wmma.load.<a|b|c>.sync.aligned.<layout>.<shape>.<type>`` (ptr, offset, ldm)
    * ``wmma.mma.sync.aligned.<a layout>.<b layout>.<shape>.<d type>.<c type>`` (A, B, C)
    * ``wmma.store.d.sync.aligned.<layout>.<shape>.<type>`` (ptr, D, offset, ldm)
    * ``wmma.fill.<shape>.<type>`` (value)

    Use the ``load``/``mma``/``store``/``fill`` constructors; ``type`` is the
    element type of the fragment moved, filled or produced (D's for mma).
    """

    op: WMMAOp
    shape: WMMAShape
    type: ir.Type
    matrix: MatrixUse | None = None
    """The matrix loaded (A, B or C) or stored (D)."""
    layout: Layout | None = None
    """The moved matrix's layout; A's for mma."""
    b_layout: Layout | None = None
    c_type: ir.Type | None = None

    @staticmethod
    def load(matrix: MatrixUse, layout: Layout, shape: WMMAShape, t: ir.Type) -> WMMAIntrinsic:
        return WMMAIntrinsic(WMMAOp.LOAD, shape, t.element(), matrix, layout)

    @staticmethod
    def mma(a_layout: Layout, b_layout: Layout, shape: WMMAShape, d_type: ir.Type, c_type: ir.Type) -> WMMAIntrinsic:
        return WMMAIntrinsic(WMMAOp.MMA, shape, d_type.element(), None, a_layout, b_layout, c_type.element())

    @staticmethod
    def store(layout: Layout, shape: WMMAShape, t: ir.Type) -> WMMAIntrinsic:
        return WMMAIntrinsic(WMMAOp.STORE, shape, t.element(), MatrixUse.D, layout)

    @staticmethod
    def fill(shape: WMMAShape, t: ir.Type) -> WMMAIntrinsic:
        return WMMAIntrinsic(WMMAOp.FILL, shape, t.element())

    @property
    def name(self) -> str:
        """The call name (the only place it is written)."""
        parts: list[str] = ["wmma", self.op.value]
        if self.op is not WMMAOp.FILL:
            if self.matrix is not None:
                parts.append(self.matrix.value)
            parts += ["sync", "aligned"]
            parts += [layout.value for layout in (self.layout, self.b_layout) if layout is not None]
        parts += [self.shape.name, wmma_type_suffix(self.type)]
        if self.c_type is not None:
            parts.append(wmma_type_suffix(self.c_type))
        return ".".join(parts)

    @staticmethod
    @functools.cache
    def parse(name: str) -> WMMAIntrinsic | None:
        """The operation a call name spells, or None if it spells none. The
        shape need not be in the table (``WMMATensorCore.defines`` says).
        Only the spelling ``name`` writes is accepted: a parsed name is
        formatted again and must come back unchanged. Each name is read
        once per process (a program holds few distinct names and calls
        them many times); the descriptor is immutable, so it is shared."""
        parts = name.split(".")
        if len(parts) < 4 or parts[0] != "wmma":
            return None
        try:
            intrinsic = _parse_parts(parts)
        except (KeyError, ValueError, IndexError):
            return None
        return intrinsic if intrinsic is not None and intrinsic.name == name else None

    @property
    def moved_matrix(self) -> MatrixUse:
        """The matrix a load or store moves (C for fill, D for mma)."""
        if self.matrix is not None:
            return self.matrix
        return MatrixUse.C if self.op is WMMAOp.FILL else MatrixUse.D

    @property
    def extent(self) -> tuple[int, int]:
        """Rows and columns of the matrix moved (see ``moved_matrix``)."""
        return self.moved_matrix.extent(self.shape)


WMMA_TENSOR_CORE = WMMATensorCore()


WMMA_TYPE_NAMES = {"f16": ir.Float(16), "bf16": ir.BFloat(16), "f32": ir.Float(32),
                   "s8": ir.Int(8), "u8": ir.UInt(8), "s32": ir.Int(32), "f64": ir.Float(64)}
"""Fragment element types by their PTX-style name, as the wmma.* calls spell them."""


def wmma_type_suffix(t: ir.Type) -> str:
    """The PTX-style name of a fragment element type (f16, bf16, f32, s8, u8, s32, f64)."""
    return next(name for name, named in WMMA_TYPE_NAMES.items() if named == t.element())


_SHAPE_RE = re.compile(r"m(\d+)n(\d+)k(\d+)")


def wmma_intrinsic(node: ir.Node) -> WMMAIntrinsic | None:
    """The Tensor Core operation ``node`` calls; None if it is not a call
    of one. Every pass, printer and counter asks this, not the call's name:
    the name is the IR's spelling of the descriptor, resolved here once."""
    return WMMAIntrinsic.parse(node.name) if ir.is_wmma_call(node) else None


def split_rounding_bits(bits: int) -> tuple[int, int]:
    """The float32 bit patterns that round a value to ``bits`` significant
    bits (to nearest, ties away): half the weight of the dropped bits, to
    add, and the mask that keeps the rest. The interpreter and the CUDA
    split operands with the same two."""
    dropped = 24 - bits
    return 1 << (dropped - 1), ~((1 << dropped) - 1) & 0xFFFFFFFF


def mma_split_significand(node: ir.Node) -> int | None:
    """The significand bits an mma call splits its operands at
    (``WMMAElement.split_significand``); None for any other node, and for
    an mma of operands multiplied as they are."""
    intrinsic = wmma_intrinsic(node)
    if intrinsic is None or intrinsic.op is not WMMAOp.MMA:
        return None
    assert isinstance(node, ir.Call)
    element = WMMA_TENSOR_CORE.element(node.args[0].type.element())
    return element.split_significand if element is not None else None


def _parse_parts(parts: list[str]) -> WMMAIntrinsic | None:
    """The operation of a split call name; any part out of place raises
    KeyError or ValueError (caught by ``WMMAIntrinsic.parse``)."""
    op = WMMAOp(parts[1])
    shape_match = _SHAPE_RE.fullmatch(parts[-2] if op is not WMMAOp.MMA else parts[-3])
    if shape_match is None:
        return None
    shape = WMMAShape(*(int(v) for v in shape_match.groups()))
    if op is WMMAOp.FILL:
        return WMMAIntrinsic.fill(shape, WMMA_TYPE_NAMES[parts[-1]])
    if op is WMMAOp.MMA:
        return WMMAIntrinsic.mma(Layout(parts[4]), Layout(parts[5]), shape,
                                 WMMA_TYPE_NAMES[parts[-2]], WMMA_TYPE_NAMES[parts[-1]])
    layout, t = Layout(parts[5]), WMMA_TYPE_NAMES[parts[-1]]
    if op is WMMAOp.STORE:
        return WMMAIntrinsic.store(layout, shape, t)
    matrix = MatrixUse(parts[2])
    return WMMAIntrinsic.load(matrix, layout, shape, t) if matrix is not MatrixUse.D else None
