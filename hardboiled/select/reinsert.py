"""Decoding and reinsertion: extracted egglog terms back into the IR.

``Decoder`` turns an extracted term into IR. AMX tile operations become the
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

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from hardboiled import ir
from hardboiled.ir.visitor import map_stmt
from hardboiled.select.extract import BINOP_BY_NAME, MARKERS, Encoding, bits_float, iter_stores
from hardboiled.targets.wmma import WMMAShape, wmma_type_suffix

# --------------------------------------------------------------------------
# S-expressions
# --------------------------------------------------------------------------

_TOKEN_RE = re.compile(r'\s*(?:(\()|(\))|"((?:\\.|[^"\\])*)"|([^\s()"]+))')


class Str(str):
    """A string literal in an s-expression (as opposed to a symbol)."""


def parse_sexpr(text: str) -> Any:
    stack: list[list[Any]] = [[]]
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip():
                raise ValueError(f"bad s-expression at {pos}: {text[pos:pos + 40]!r}")
            break
        pos = m.end()
        if m.group(1):
            stack.append([])
        elif m.group(2):
            done = stack.pop()
            stack[-1].append(done)
        elif m.group(3) is not None:
            stack[-1].append(Str(re.sub(r"\\(.)", r"\1", m.group(3))))
        else:
            atom = m.group(4)
            stack[-1].append(int(atom) if re.fullmatch(r"-?\d+", atom) else atom)
    (result,) = stack[0]
    return result


# --------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------

_TYPE_CODES = {"IntT": ir.TypeCode.INT, "UIntT": ir.TypeCode.UINT, "FloatT": ir.TypeCode.FLOAT,
               "BFloatT": ir.TypeCode.BFLOAT, "HandleT": ir.TypeCode.HANDLE}


class MarkerLeft(Exception):
    """The extracted term still moves data between memory and the accelerator."""


@dataclass
class Temporary:
    """A value materialized in a buffer so that a tile can be loaded from it."""

    name: str
    value: ir.Expr


@dataclass
class Decoder:
    encoding: Encoding
    temporaries: dict[ir.Expr, Temporary] = field(default_factory=dict)
    """By value, so that equal temporaries are one buffer."""

    def type(self, node: list[Any]) -> ir.Type:
        _, (code,), bits, lanes = node
        tc = _TYPE_CODES[code]
        if tc is ir.TypeCode.HANDLE:
            return ir.handle_type()
        return ir.Type(tc, bits, lanes)

    def stmt(self, node: list[Any]) -> ir.Stmt:
        head = node[0]
        if head == "Store":
            return ir.Store(str(node[1]), self.expr(node[2]), self.expr(node[3]))
        if head == "Evaluate":
            return ir.Evaluate(self.expr(node[1]))
        raise ValueError(f"unexpected statement {head}")

    def expr(self, node: list[Any]) -> ir.Expr:
        head = node[0]
        method: Callable[[list[Any]], ir.Expr] | None = getattr(self, "_" + head, None)
        if method is None:
            raise MarkerLeft(head) if head in MARKERS else ValueError(head)
        return method(node)

    # ----------------------------------------------------------- IR nodes
    def _IntImm(self, node: list[Any]) -> ir.Expr:  # noqa: N802 - named after the constructor
        t, value = self.type(node[1]), node[2]
        if t.is_uint:
            return ir.UIntImm(value & ((1 << t.bits) - 1), t)
        return ir.IntImm(value, t)

    def _FloatImm(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        return ir.FloatImm(bits_float(node[2]), self.type(node[1]))

    def _Var(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        return ir.Variable(str(node[2]), self.type(node[1]))

    def _Opaque(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        return self.encoding.opaque[node[2]]

    def _Bop(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        return ir.Binary(BINOP_BY_NAME[node[1][0]], self.expr(node[2]), self.expr(node[3]))

    def _Cast(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        return ir.Cast(self.type(node[1]), self.expr(node[2]))

    def _Load(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        return ir.Load(str(node[2]), self.expr(node[3]), self.type(node[1]))

    def _Ramp(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        return ir.Ramp(self.expr(node[1]), self.expr(node[2]), node[3])

    def _Broadcast(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        return ir.Broadcast(self.expr(node[1]), node[2])

    def _VectorReduceAdd(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        return ir.VectorReduce(ir.ReduceOp.ADD, self.expr(node[2]), self.type(node[1]))

    # ----------------------------------------------------------- AMX tiles
    def _TileZero(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        _, t, rows, colbytes = node
        return ir.Call("tile_zero", (_i32(rows), _i32(colbytes)), self.type(t))

    def _TileLoad(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        _, t, rows, colbytes, buf, offset, stride = node
        tile_type = self.type(t)
        element_bytes = tile_type.bytes
        return ir.Call(
            "tile_load",
            (_i32(rows), _i32(colbytes), self.buffer(buf),
             _bytes(self.expr(offset), element_bytes), _bytes(self.expr(stride), element_bytes)),
            tile_type,
        )

    def _TileMatmul(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        _, t, rows, colbytes, k, acc, a, b = node
        return ir.Call(
            "tile_matmul",
            (_i32(rows), _i32(colbytes), _i32(k), self.expr(acc), self.expr(a), self.expr(b)),
            self.type(t),
        )

    def _TileStore(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        _, rows, colbytes, name, offset, stride, tile = node
        tile_expr = self.expr(tile)
        element_bytes = tile_expr.type.bytes
        return ir.Call(
            "tile_store",
            (_i32(rows), _i32(colbytes), ir.Variable(str(name), ir.handle_type()),
             _bytes(self.expr(offset), element_bytes), _bytes(self.expr(stride), element_bytes), tile_expr),
            ir.INT32,
        )

    def _VNNIInterleave(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        # Desugared right away: a K x N row-major matrix to VNNI order,
        # out[(kq, n, kr)] = matrix[(kq * k + kr) * N + n].
        _, k, rows, cols, matrix = node
        value = self.expr(matrix)
        indices = tuple(
            (kq * k + kr) * cols + n for kq in range(rows // k) for n in range(cols) for kr in range(k)
        )
        return ir.Shuffle((value,), indices)

    def _WindowMatrix(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        # Desugared right away: the kernel's taps followed by a zero, picked
        # into the rows x cols Toeplitz block (with u = shift + t, element
        # (t, j) is tap u - stride * j when u is in [lo, hi), else the zero).
        _, t, kernel, kbase, taps, stride, rows, cols, shift, lo, hi = node
        block_type = self.type(t)
        index_type = self.expr(kbase).type
        taps_value = ir.Load(str(kernel), ir.Ramp(self.expr(kbase), ir.IntImm(1, index_type), taps),
                             block_type.with_lanes(taps))
        zero = ir.FloatImm(0.0, block_type.element()) if block_type.is_float else ir.IntImm(0, block_type.element())
        indices = []
        for row in range(rows):
            for col in range(cols):
                u = shift + row
                tap = u - stride * col
                indices.append(tap if lo <= u < hi and 0 <= tap < taps else taps)
        return ir.Shuffle((taps_value, zero), tuple(indices))

    # ----------------------------------------------------------- WMMA fragments
    # Whole-fragment calls named after the PTX instructions (interp.py gives
    # them their meaning); enforce_wmma_lanes later makes them warp-wide.
    def _FragFill(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        _, t, m, n, k, value = node
        fragment_type = self.type(t)
        return ir.Call(f"wmma.fill.{WMMAShape(m, n, k).name}.{wmma_type_suffix(fragment_type)}",
                       (self.expr(value),), fragment_type)

    def _FragLoad(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        _, (use,), (layout,), t, m, n, k, buf, offset, ldm = node
        fragment_type = self.type(t)
        matrix = {"MatrixA": "a", "MatrixB": "b", "Accumulator": "c"}[use]
        name = (f"wmma.load.{matrix}.sync.aligned.{_MAJOR[layout]}.{WMMAShape(m, n, k).name}."
                f"{wmma_type_suffix(fragment_type)}")
        return ir.Call(name, (self.buffer(buf), self.expr(offset), self.expr(ldm)), fragment_type)

    def _FragMma(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        _, (a_layout,), (b_layout,), t, m, n, k, a, b, c = node
        d_type = self.type(t)
        c_value = self.expr(c)
        name = (f"wmma.mma.sync.aligned.{_MAJOR[a_layout]}.{_MAJOR[b_layout]}.{WMMAShape(m, n, k).name}."
                f"{wmma_type_suffix(d_type)}.{wmma_type_suffix(c_value.type)}")
        return ir.Call(name, (self.expr(a), self.expr(b), c_value), d_type)

    def _FragStore(self, node: list[Any]) -> ir.Expr:  # noqa: N802
        _, (layout,), m, n, k, out, offset, ldm, fragment = node
        value = self.expr(fragment)
        name = f"wmma.store.d.sync.aligned.{_MAJOR[layout]}.{WMMAShape(m, n, k).name}.{wmma_type_suffix(value.type)}"
        return ir.Call(name, (ir.Variable(str(out), ir.handle_type()), value, self.expr(offset), self.expr(ldm)),
                       ir.INT32)

    def buffer(self, node: list[Any]) -> ir.Expr:
        if node[0] == "Named":
            return ir.Variable(str(node[1]), ir.handle_type())
        value = self.expr(node[1])
        temp = self.temporaries.get(value)
        if temp is None:
            source = next((n.name for n in ir.walk(value) if isinstance(n, ir.Load)), "value")
            kind = _TEMPORARY_KINDS.get(node[1][0], "amx_vnni")
            temp = Temporary(f"{source}.{kind}.{len(self.temporaries)}", value)
            self.temporaries[value] = temp
        return ir.Variable(temp.name, ir.handle_type())


_MAJOR = {"Row": "row", "Col": "col"}
_TEMPORARY_KINDS = {"WindowMatrix": "toeplitz"}
"""How a temporary is named after the constructor of its value; the AMX
operand copies (VNNI interleaves and gathers) are "amx_vnni"."""


def _i32(value: int) -> ir.Expr:
    return ir.IntImm(value)


def _bytes(elements: ir.Expr, element_bytes: int) -> ir.Expr:
    """An element offset or stride in bytes (AMX addresses bytes)."""
    if isinstance(elements, ir.IntImm):
        return ir.IntImm(elements.value * element_bytes, elements.type)
    if element_bytes == 1:
        return elements
    return ir.Binary(ir.BinOp.MUL, elements, ir.IntImm(element_bytes, elements.type))


def reinsert(stmt: ir.Stmt, replacements: dict[int, ir.Stmt]) -> ir.Stmt:
    """Replace the stores at these pre-order positions."""
    positions = {id(store): position for position, store in enumerate(iter_stores(stmt))}

    def replace(node: ir.Stmt) -> ir.Stmt | None:
        if isinstance(node, ir.Store):
            return replacements.get(positions[id(node)], node)
        return None

    return map_stmt(stmt, replace)
