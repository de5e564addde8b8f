"""Decoding and reinsertion: extracted egglog terms back into the IR.

``Decoder`` turns an extracted term (parsed into a schema ``Term`` by
``hardboiled.select.terms.parse_term``) into IR. AMX tile operations become the
calls Halide's own AMX backend uses (``tile_zero``, ``tile_load``,
``tile_matmul``, ``tile_store``), with offsets and strides converted from
elements to bytes; WMMA fragment operations become whole-fragment
``wmma.*`` calls named after the PTX instructions. Shuffle constructors
(VNNI interleaves, Toeplitz blocks) are desugared to plain ``Shuffle``
nodes, and operands that must be materialized become ``Temporary`` values
for legalization to place. ``reinsert`` puts the decoded statements where
the selected stores were.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hardboiled import ir
from hardboiled.ir.visitor import map_stmt, method_suffix_of
from hardboiled.select.extract import MARKERS, Encoding, bits_float, iter_stores
from hardboiled.select.terms import Term, TermError, binop_of, type_code_of
from hardboiled.targets.amx import AMX_INTRINSIC, AMXOp, VNNILayout, vnni_order
from hardboiled.targets.wmma import WMMAIntrinsic, WMMAShape


class MarkerLeft(Exception):
    """The extracted term still moves data between memory and the accelerator."""


@dataclass
class Temporary:
    """A value materialized in a buffer so that a tile can be loaded from it."""

    name: str
    value: ir.Expr


def strip_markers(term: Term) -> Term:
    """``term`` without its data-movement markers (each replaced by the value
    it moves): for reading a term that missed (explain.py)."""
    if term.constructor.name in MARKERS:
        return strip_markers(term.value)
    if not any(isinstance(a, Term) for a in term.args):
        return term
    return Term(term.constructor, tuple(strip_markers(a) if isinstance(a, Term) else a for a in term.args))


def decoder_method(constructor: str) -> str:
    """The ``Decoder`` method for an expression constructor: ``IntImm`` is
    decoded by ``decode_int_imm``."""
    return "decode_" + method_suffix_of(constructor)


@dataclass
class Decoder:
    """Extracted terms (parsed by ``parse_term``) back into IR. Each
    constructor of the schema that can appear in an extracted term has a
    method named after it that reads the term's fields by name."""

    encoding: Encoding
    temporaries: dict[ir.Expr, Temporary] = field(default_factory=dict)
    """By value, so that equal temporaries are one buffer."""
    layouts: dict[str, VNNILayout] = field(default_factory=dict)
    """The AMX buffers the rewrite fills with blocks in VNNI order (a
    standard-layout B preloaded in an AMX buffer): the program keeps the
    same values there in another order, which checking a statement on its
    own must know."""

    def _note_layout(self, store: Term) -> None:
        value = store.value
        if value.constructor.name == "TileLoad" and value.buffer.constructor.name == "Temp" \
                and value.buffer.value.constructor.name == "VNNIInterleave":
            interleave = value.buffer.value
            self.layouts[store.buffer] = VNNILayout(interleave.k_pack, interleave.rows, interleave.cols)

    def type(self, t: Term) -> ir.Type:
        code = type_code_of(t.code.constructor.name)
        if code is ir.TypeCode.HANDLE:
            return ir.handle_type()
        return ir.Type(code, t.bits, t.lanes)

    def stmt(self, t: Term) -> ir.Stmt:
        if t.constructor.name == "Store":
            self._note_layout(t)
            return ir.Store(t.buffer, self.expr(t.value), self.expr(t.index))
        if t.constructor.name == "Evaluate":
            return ir.Evaluate(self.expr(t.value))
        raise TermError(f"expected a Stmt, not {t.constructor.name}")

    def expr(self, t: Term) -> ir.Expr:
        name = t.constructor.name
        if name in MARKERS:
            raise MarkerLeft(name)
        method: Callable[[Term], ir.Expr] | None = getattr(self, decoder_method(name), None)
        if method is None:
            raise TermError(f"{name} (a {t.sort}) cannot be decoded as an expression")
        return method(t)

    # ----------------------------------------------------------- IR nodes
    def decode_int_imm(self, t: Term) -> ir.Expr:
        type_ = self.type(t.type)
        if type_.is_uint:
            return ir.UIntImm(t.value & ((1 << type_.bits) - 1), type_)
        return ir.IntImm(t.value, type_)

    def decode_float_imm(self, t: Term) -> ir.Expr:
        return ir.FloatImm(bits_float(t.bits), self.type(t.type))

    def decode_var(self, t: Term) -> ir.Expr:
        return ir.Variable(t.name, self.type(t.type))

    def decode_opaque(self, t: Term) -> ir.Expr:
        return self.encoding.opaque[t.id]

    def decode_bop(self, t: Term) -> ir.Expr:
        return ir.Binary(binop_of(t.op.constructor.name), self.expr(t.a), self.expr(t.b))

    def decode_cast(self, t: Term) -> ir.Expr:
        return ir.Cast(self.type(t.type), self.expr(t.value))

    def decode_load(self, t: Term) -> ir.Expr:
        return ir.Load(t.buffer, self.expr(t.index), self.type(t.type))

    def decode_ramp(self, t: Term) -> ir.Expr:
        return ir.Ramp(self.expr(t.base), self.expr(t.stride), t.lanes)

    def decode_broadcast(self, t: Term) -> ir.Expr:
        return ir.Broadcast(self.expr(t.value), t.lanes)

    def decode_vector_reduce_add(self, t: Term) -> ir.Expr:
        return ir.VectorReduce(ir.ReduceOp.ADD, self.expr(t.value), self.type(t.type))

    # ----------------------------------------------------------- AMX tiles
    def decode_tile_zero(self, t: Term) -> ir.Expr:
        return ir.Call(AMX_INTRINSIC[AMXOp.ZERO].name, (_i32(t.rows), _i32(t.colbytes)), self.type(t.type))

    def decode_tile_load(self, t: Term) -> ir.Expr:
        tile_type = self.type(t.type)
        element_bytes = tile_type.bytes
        return ir.Call(
            AMX_INTRINSIC[AMXOp.LOAD].name,
            (_i32(t.rows), _i32(t.colbytes), self.buffer(t.buffer),
             in_bytes(self.expr(t.offset), element_bytes), in_bytes(self.expr(t.stride), element_bytes)),
            tile_type,
        )

    def decode_tile_matmul(self, t: Term) -> ir.Expr:
        return ir.Call(
            AMX_INTRINSIC[AMXOp.MATMUL].name,
            (_i32(t.rows), _i32(t.colbytes), _i32(t.k), self.expr(t.acc), self.expr(t.a), self.expr(t.b)),
            self.type(t.type),
        )

    def decode_tile_store(self, t: Term) -> ir.Expr:
        tile = self.expr(t.tile)
        element_bytes = tile.type.bytes
        return ir.Call(
            AMX_INTRINSIC[AMXOp.STORE].name,
            (_i32(t.rows), _i32(t.colbytes), ir.Variable(t.buffer, ir.handle_type()),
             in_bytes(self.expr(t.offset), element_bytes), in_bytes(self.expr(t.stride), element_bytes), tile),
            ir.INT32,
        )

    def decode_vnniinterleave(self, t: Term) -> ir.Expr:
        # Desugared right away: a K x N row-major matrix to VNNI order.
        return ir.Shuffle((self.expr(t.matrix),), vnni_order(t.k_pack, t.rows, t.cols))

    def decode_window_matrix(self, t: Term) -> ir.Expr:
        # Desugared right away: the kernel's taps (of every phase) followed
        # by a zero, picked into the rows x cols Toeplitz block (with
        # u = shift + t and j = phases * x + p, element (t, j) is tap
        # u - stride * x of phase p when u is in [lo, hi), else the zero).
        block_type = self.type(t.type)
        kbase = self.expr(t.kbase)
        one = ir.IntImm(1, kbase.type)
        taps_index: ir.Expr = ir.Ramp(kbase, one, t.taps)
        if t.phases > 1:
            taps_index = ir.Ramp(taps_index, ir.Broadcast(ir.IntImm(t.phase_stride, kbase.type), t.taps), t.phases)
        taps_value = ir.Load(t.kernel, taps_index, block_type.with_lanes(t.taps * t.phases))
        zero = ir.zero_of(block_type)
        indices = []
        for row in range(t.rows):
            for col in range(t.cols):
                u = t.shift + row
                position, phase = divmod(col, t.phases)
                tap = u - t.stride * position
                inside = t.lo <= u < t.hi and 0 <= tap < t.taps
                indices.append(phase * t.taps + tap if inside else t.taps * t.phases)
        return ir.Shuffle((taps_value, zero), tuple(indices))

    def decode_padded_rows(self, t: Term) -> ir.Expr:
        # Desugared right away: the rows' first `width` elements, each row
        # padded with zeros to `cols`.
        matrix_type = self.type(t.type)
        base, ldm = self.expr(t.base), self.expr(t.ldm)
        one = ir.IntImm(1, base.type)
        window = ir.Load(t.input, ir.Ramp(ir.Ramp(base, one, t.width), ir.Broadcast(ldm, t.width), t.rows),
                         matrix_type.with_lanes(t.rows * t.width))
        zero = ir.zero_of(matrix_type)
        padding = t.rows * t.width
        indices = tuple(i * t.width + c if c < t.width else padding for i in range(t.rows) for c in range(t.cols))
        return ir.Shuffle((window, zero), indices)

    # ----------------------------------------------------------- WMMA fragments
    # Whole-fragment calls named after the PTX instructions (interp.py gives
    # them their meaning); enforce_wmma_lanes later makes them warp-wide.
    def decode_frag_fill(self, t: Term) -> ir.Expr:
        fragment_type = self.type(t.type)
        intrinsic = WMMAIntrinsic.fill(_shape(t), fragment_type)
        return ir.Call(intrinsic.name, (self.expr(t.value),), fragment_type)

    def decode_frag_load(self, t: Term) -> ir.Expr:
        fragment_type = self.type(t.type)
        intrinsic = WMMAIntrinsic.load(t.use.meaning, t.layout.meaning, _shape(t), fragment_type)
        return ir.Call(intrinsic.name, (self.buffer(t.buffer), self.expr(t.offset), self.expr(t.ldm)),
                       fragment_type)

    def decode_frag_mma(self, t: Term) -> ir.Expr:
        d_type = self.type(t.type)
        c_value = self.expr(t.c)
        intrinsic = WMMAIntrinsic.mma(t.a_layout.meaning, t.b_layout.meaning, _shape(t), d_type, c_value.type)
        return ir.Call(intrinsic.name, (self.expr(t.a), self.expr(t.b), c_value), d_type)

    def decode_frag_store(self, t: Term) -> ir.Expr:
        value = self.expr(t.fragment)
        intrinsic = WMMAIntrinsic.store(t.layout.meaning, _shape(t), value.type)
        return ir.Call(intrinsic.name,
                       (ir.Variable(t.buffer, ir.handle_type()), value, self.expr(t.offset), self.expr(t.ldm)),
                       ir.INT32)

    def buffer(self, t: Term) -> ir.Expr:
        if t.constructor.name == "Named":
            return ir.Variable(t.name, ir.handle_type())
        value = self.expr(t.value)
        temp = self.temporaries.get(value)
        if temp is None:
            source = next((n.name for n in ir.walk(value) if isinstance(n, ir.Load)), "value")
            kind = _TEMPORARY_KINDS.get(t.value.constructor.name, "amx_vnni")
            temp = Temporary(f"{source}.{kind}.{len(self.temporaries)}", value)
            self.temporaries[value] = temp
        return ir.Variable(temp.name, ir.handle_type())


_TEMPORARY_KINDS = {"WindowMatrix": "toeplitz", "PaddedRows": "padded"}
"""How a temporary is named after the constructor of its value; the AMX
operand copies (VNNI interleaves and gathers) are "amx_vnni"."""


def _shape(t: Term) -> WMMAShape:
    """The fragment shape of a Frag* term."""
    return WMMAShape(t.m, t.n, t.k)


def _i32(value: int) -> ir.Expr:
    return ir.IntImm(value)


def in_bytes(elements: ir.Expr, element_bytes: int) -> ir.Expr:
    """An element offset or stride in bytes (AMX addresses bytes).

    Halide's bounds checks keep an element offset within int32, not its
    byte count: a float offset of 2^29 is 2^31 bytes. The multiplication
    by the element size is therefore done in int64, on the int32 element
    offset (whose wrapping arithmetic is exact once the result fits), so
    an address never wraps below the buffer."""
    if element_bytes == 1:
        return elements
    if isinstance(elements, ir.IntImm):
        value = elements.value * element_bytes
        return ir.IntImm(value, ir.Int(32) if -2**31 <= value < 2**31 else ir.Int(64))
    wide = elements if elements.type == ir.Int(64) else ir.Cast(ir.Int(64), elements)
    return ir.Binary(ir.BinOp.MUL, wide, ir.IntImm(element_bytes, ir.Int(64)))


def reinsert(stmt: ir.Stmt, replacements: dict[int, ir.Stmt]) -> ir.Stmt:
    """Replace the stores at these pre-order positions."""
    positions = {id(store): position for position, store in enumerate(iter_stores(stmt))}

    def replace(node: ir.Stmt) -> ir.Stmt | None:
        if isinstance(node, ir.Store):
            return replacements.get(positions[id(node)], node)
        return None

    return map_stmt(stmt, replace)
