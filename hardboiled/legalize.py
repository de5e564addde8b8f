"""Reinsertion and legalization: extracted egglog terms back into the IR.

1. ``Decoder`` turns an extracted term into IR. AMX tile operations
   become the calls that Halide's own AMX backend uses (``tile_zero``,
   ``tile_load``, ``tile_matmul``, ``tile_store``) with offsets and strides
   converted from elements to bytes; WMMA fragment operations become
   whole-fragment ``wmma.*`` calls named after the PTX instructions.
2. ``reinsert`` puts the decoded statements where the selected stores were.
3. Temporaries (operands copied into VNNI order, Toeplitz blocks of a
   convolution kernel) become allocations, placed at the outermost scope
   where everything they read is defined and not written again, with
   duplicates merged (``place_temporaries``). Control flow (if, fork,
   atomic) is never crossed, nor a gpu_block loop.
4. Shuffle intrinsics are desugared to plain ``Shuffle`` nodes on decoding.
5. ``check_amx`` checks tile shapes, tile-register pressure and how AMX
   buffers are indexed against hardboiled/hardware.py.
6. WMMA post-processing (``stage_unaligned_operands``,
   ``enforce_wmma_lanes``, ``push_fragment_allocations``): operands not
   provably aligned go through shared memory, every WMMA operation runs in
   a 32-lane warp loop, fragments become per-thread.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from . import ir
from .diagnostics import Diagnostic, ExitCode, HardboiledError, InputError
from .extract import BINOP_BY_NAME, MARKERS, Encoding, bits_float, iter_stores
from .hardware import AMX_TILE, WMMA_TENSOR_CORE, AMXTile, WMMAShape, WMMATensorCore, wmma_type_suffix
from .printer import print_ir

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


# --------------------------------------------------------------------------
# Reinsertion
# --------------------------------------------------------------------------


def _changed_fields(node: ir.Node, kind: type, fn: Callable[[Any], Any]) -> dict[str, Any]:
    """``fn`` applied to every field of ``node`` that is a ``kind`` or a tuple
    of them: the fields whose value changed (by identity), with new values."""
    changes: dict[str, Any] = {}
    for name in node.__dataclass_fields__:  # type: ignore[union-attr]
        value = getattr(node, name)
        if isinstance(value, kind):
            new = fn(value)
            if new is not value:
                changes[name] = new
        elif isinstance(value, tuple) and value and isinstance(value[0], kind):
            new_items = tuple(fn(item) for item in value)
            if any(a is not b for a, b in zip(new_items, value)):
                changes[name] = new_items
    return changes


def map_stmt(stmt: ir.Stmt, fn: Callable[[ir.Stmt], ir.Stmt | None]) -> ir.Stmt:
    """Rebuild ``stmt`` bottom-up; ``fn`` may replace any statement.

    Children are visited in field order, so stores are met in the same
    pre-order as ``extract.iter_stores``.
    """
    replaced = fn(stmt)
    if replaced is not None:
        return replaced
    changes = _changed_fields(stmt, ir.Stmt, lambda child: map_stmt(child, fn))
    if not changes:
        return stmt
    if isinstance(stmt, ir.Block):
        return ir.make_block(list(changes["stmts"]))

    return dataclasses.replace(stmt, **changes)  # type: ignore[type-var]


def map_expr(e: ir.Expr, fn: Callable[[ir.Expr], ir.Expr | None]) -> ir.Expr:
    """Rebuild ``e``; ``fn`` may replace any subexpression (a replaced one
    is not looked into)."""
    replaced = fn(e)
    if replaced is not None:
        return replaced
    changes = _changed_fields(e, ir.Expr, lambda child: map_expr(child, fn))
    return dataclasses.replace(e, **changes) if changes else e  # type: ignore[type-var]


def _with_exprs(stmt: ir.Stmt, fn: Callable[[ir.Expr], ir.Expr | None]) -> ir.Stmt:
    """``stmt`` with ``map_expr`` applied to its own expressions (not to
    those of the statements inside it); ``stmt`` itself if none changed."""
    changes = _changed_fields(stmt, ir.Expr, lambda e: map_expr(e, fn))
    return dataclasses.replace(stmt, **changes) if changes else stmt  # type: ignore[type-var]


def reinsert(stmt: ir.Stmt, replacements: dict[int, ir.Stmt]) -> ir.Stmt:
    """Replace the stores at these pre-order positions."""
    positions = {id(store): position for position, store in enumerate(iter_stores(stmt))}

    def replace(node: ir.Stmt) -> ir.Stmt | None:
        if isinstance(node, ir.Store):
            return replacements.get(positions[id(node)], node)
        return None

    return map_stmt(stmt, replace)


# --------------------------------------------------------------------------
# Temporaries
# --------------------------------------------------------------------------

# Control flow that a temporary never leaves: its condition, or the order
# of its parts, may be what makes the temporary's loads valid (the bounds
# query of a pipeline, for one).
_BARRIERS = (ir.IfThenElse, ir.Fork, ir.Atomic, ir.Acquire)


def _is_kernel_loop(node: ir.Stmt) -> bool:
    """A gpu_block loop: a temporary used on the GPU stays inside it, in
    the kernel's memory, rather than being hoisted into host code."""
    return isinstance(node, ir.For) and node.kind is ir.ForKind.GPU_BLOCK


def _binds(node: ir.Stmt) -> set[str]:
    if isinstance(node, (ir.For, ir.LetStmt, ir.Allocate)):
        return {node.name}
    return set()


def _writes(node: ir.Stmt) -> set[str]:
    """Buffers written or (re)allocated anywhere inside ``node``."""
    names: set[str] = set()
    for n in ir.walk(node):
        if isinstance(n, (ir.Store, ir.Allocate, ir.Free)):
            names.add(n.name)
        elif isinstance(n, ir.ProducerConsumer) and n.is_producer:
            names.add(n.name)
    return names


def _uses(node: ir.Stmt, name: str) -> bool:
    return any(isinstance(n, ir.Variable) and n.name == name for n in ir.walk(node))


def place_temporaries(stmt: ir.Stmt, temporaries: list[Temporary]) -> ir.Stmt:
    """Allocate and fill each temporary right before the outermost statement
    that contains all its uses, inside which nothing it reads is written,
    and above which every variable it reads is bound. Uses that no single
    such statement covers (branches of an `if`, two loops) get a copy each."""
    bound_anywhere = {name for node in ir.walk(stmt) if isinstance(node, ir.Stmt) for name in _binds(node)}
    pending = list(temporaries)
    while pending:
        temp = pending.pop(0)
        path = _path_to_uses(stmt, temp.name)
        if path is None:
            continue
        free = {n.name for n in ir.walk(temp.value) if isinstance(n, ir.Variable)}
        reads = {n.name for n in ir.walk(temp.value) if isinstance(n, ir.Load)}
        position = _choose_position(path, free & bound_anywhere, reads)
        if position is None:
            stmt, copies = _split_uses(stmt, path[-1], temp)
            pending[:0] = copies
            continue
        target = path[position]
        stmt = map_stmt(stmt, lambda n, t=target, tmp=temp: _allocate(tmp, n) if n is t else None)
    return stmt


def _accesses(node: ir.Node, name: str) -> bool:
    """Whether ``node`` reads or writes buffer ``name`` (or names it)."""
    return any(isinstance(n, (ir.Load, ir.Store, ir.Variable)) and n.name == name for n in ir.walk(node))


def _path_to_uses(stmt: ir.Stmt, name: str,
                  uses: Callable[[ir.Stmt, str], bool] = _uses) -> list[ir.Stmt] | None:
    """Statements from the root down to the smallest one holding every use."""
    if not uses(stmt, name):
        return None
    path = [stmt]
    while True:
        holders = [c for c in ir.children(path[-1]) if isinstance(c, ir.Stmt) and uses(c, name)]
        if len(holders) != 1:
            return path
        path.append(holders[0])


def _choose_position(path: list[ir.Stmt], needed: set[str], reads: set[str]) -> int | None:
    """Index in ``path`` of the statement to put the temporary before, or
    None if none qualifies (then each branch of the last one gets a copy)."""
    first = 0
    for i, node in enumerate(path):
        if isinstance(node, _BARRIERS) or _is_kernel_loop(node):
            first = i + 1
    if not any(_is_kernel_loop(n) for n in path) and any(_is_kernel_loop(n) for n in ir.walk(path[-1])):
        return None  # used by kernels, but no single kernel holds every use: one copy per kernel
    bound_above: set[str] = set()
    for i, node in enumerate(path):
        if i >= first and needed <= bound_above and not (reads & _writes(node)):
            return i
        bound_above |= _binds(node)
    return None


def _split_uses(stmt: ir.Stmt, holder: ir.Stmt, temp: Temporary) -> tuple[ir.Stmt, list[Temporary]]:
    """Give each child of ``holder`` that uses ``temp`` its own copy."""
    copies: list[Temporary] = []
    renamed: dict[int, ir.Stmt] = {}
    for child in ir.children(holder):
        if isinstance(child, ir.Stmt) and _uses(child, temp.name):
            copy = Temporary(f"{temp.name}.{len(copies)}", temp.value)
            copies.append(copy)
            renamed[id(child)] = _rename_variable(child, temp.name, copy.name)
    if not copies:
        raise LegalizationError(Diagnostic("error", f"cannot place temporary '{temp.name}'"))

    def replace(node: ir.Stmt) -> ir.Stmt | None:
        return renamed.get(id(node))

    return map_stmt(stmt, replace), copies


def _rename_variable(stmt: ir.Stmt, old: str, new: str) -> ir.Stmt:
    def rename(e: ir.Expr) -> ir.Expr | None:
        return ir.Variable(new, e.type) if isinstance(e, ir.Variable) and e.name == old else None

    def statement(s: ir.Stmt) -> ir.Stmt | None:
        rebuilt = _with_exprs(s, rename)
        if rebuilt is s:
            return None
        return map_stmt(rebuilt, lambda n: statement(n) if n is not rebuilt else None)

    return map_stmt(stmt, statement)


def _allocate(temp: Temporary, before: ir.Stmt) -> ir.Stmt:
    if isinstance(before, ir.Block) and isinstance(before.stmts[0], ir.AssertStmt):
        # Let the pipeline's own checks (null hosts, bounds) run first.
        count = next((i for i, s in enumerate(before.stmts) if not isinstance(s, ir.AssertStmt)),
                     len(before.stmts))
        if count < len(before.stmts):
            return ir.make_block([*before.stmts[:count], _allocate(temp, ir.make_block(before.stmts[count:]))])
    lanes = temp.value.type.lanes
    fill = ir.Store(temp.name, temp.value, ir.Ramp(ir.IntImm(0), ir.IntImm(1), lanes))
    return ir.Allocate(temp.name, temp.value.type.element(), "Auto", (ir.IntImm(lanes),),
                       ir.make_block([fill, before]))


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------


class LegalizationError(HardboiledError):
    """Tensorized IR that the hardware cannot execute: a selection miss."""

    exit_code = ExitCode.SELECTION_MISS


def check_amx(stmt: ir.Stmt, amx_buffers: dict[str, ir.Allocate], tile: AMXTile = AMX_TILE) -> None:
    for node in ir.walk(stmt):
        if isinstance(node, ir.Call) and node.name.startswith("tile_") and node.name != "tile_store":
            rows, colbytes = node.args[0], node.args[1]
            assert isinstance(rows, ir.IntImm) and isinstance(colbytes, ir.IntImm)
            if rows.value > tile.max_rows or colbytes.value > tile.max_colbytes:
                raise _legal_error(
                    f"{node.name} of {rows.value} rows x {colbytes.value} bytes exceeds an AMX tile "
                    f"({tile.max_rows} rows x {tile.max_colbytes} bytes)"
                )
    accumulator_tiles = 0
    for name, alloc in amx_buffers.items():
        elements = 1
        for extent in alloc.extents:
            if not isinstance(extent, ir.IntImm):
                raise _legal_error(f"AMX buffer '{name}' has a symbolic size; tile registers are fixed")
            elements *= extent.value
        total_bytes = elements * alloc.type.bytes * alloc.type.lanes
        accumulator_tiles += max(1, -(-total_bytes // tile.tile_bytes))
        _check_tile_indexing(stmt, name, alloc, tile)
    # Each tile_matmul also needs its A and B operands in registers.
    if accumulator_tiles + 2 > tile.registers:
        raise _legal_error(
            f"the AMX buffers need {accumulator_tiles} tile registers, plus 2 for matmul operands; "
            f"AMX has {tile.registers}"
        )


def _check_tile_indexing(stmt: ir.Stmt, name: str, alloc: ir.Allocate, tile: AMXTile) -> None:
    capacity = tile.tile_bytes // alloc.type.bytes
    for node in ir.walk(stmt):
        if isinstance(node, (ir.Load, ir.Store)) and node.name == name:
            index = node.index
            lanes = index.type.lanes
            ok = (
                isinstance(index, ir.Ramp) and lanes <= capacity
                and isinstance(index.base, ir.IntImm) and index.base.value % lanes == 0
                and isinstance(index.stride, ir.IntImm) and index.stride.value == 1
            )
            if not ok:
                raise _legal_error(
                    f"AMX buffer '{name}' is accessed at {print_ir(index)}, which is not a whole tile "
                    f"(expected ramp(L*i, 1, L) with L <= {capacity})"
                )


# --------------------------------------------------------------------------
# WMMA post-processing (paper, Sec. 5): alignment, warp lanes, fragments
# --------------------------------------------------------------------------

WMMA_LANE = "wmma.lane"
"""The warp-lane loop that every WMMA operation runs in."""
WMMA_STAGE = ir.WMMA_STAGE


def known_multiple(e: ir.Expr) -> int:
    """A number that ``e`` is provably a multiple of (0: ``e`` is zero).

    Enough to see that ``(ko*64 + bx)*16`` is a multiple of 16 and that a
    symbolic row stride proves nothing."""
    if isinstance(e, (ir.IntImm, ir.UIntImm)):
        return abs(e.value)
    if isinstance(e, ir.Cast) and not e.type.is_float and not e.value.type.is_float and e.type.bits > 1:
        return known_multiple(e.value)
    if isinstance(e, ir.Binary) and e.op in (ir.BinOp.ADD, ir.BinOp.SUB):
        return math.gcd(known_multiple(e.a), known_multiple(e.b))
    if isinstance(e, ir.Binary) and e.op is ir.BinOp.MUL:
        return known_multiple(e.a) * known_multiple(e.b)
    return 1


_LDM_ALIGNMENT = 16
"""Bytes: load/store_matrix_sync's leading dimension must be a multiple of
8 16-bit or 4 32-bit elements."""


def _aligned(elements: ir.Expr, element_bytes: int, alignment: int) -> bool:
    multiple = known_multiple(elements)
    return multiple == 0 or (multiple * element_bytes) % alignment == 0


def _leading_dimension_ok(ldm: ir.Expr, element_bytes: int) -> bool:
    """A positive constant multiple of 16 bytes. load_matrix_sync takes an
    unsigned leading dimension, so a symbolic one (whose sign nothing
    proves), a negative one (rows read backwards) and zero (a bias row
    repeated down the tile) are staged as a dense matrix instead."""
    return isinstance(ldm, ir.IntImm) and ldm.value > 0 and (ldm.value * element_bytes) % _LDM_ALIGNMENT == 0


def _fragment_extent(call: ir.Call) -> tuple[int, int, str]:
    """Rows, columns and layout of the matrix a wmma.load/store.d moves."""
    parts = call.name.split(".")
    matrix, layout, shape = parts[2] if parts[1] == "load" else "d", parts[5], parts[6]
    m, n, k = (int(v) for v in re.fullmatch(r"m(\d+)n(\d+)k(\d+)", shape).groups())  # type: ignore[union-attr]
    rows, cols = {"a": (m, k), "b": (k, n), "c": (m, n), "d": (m, n)}[matrix]
    return rows, cols, layout


def _matrix_index(offset: ir.Expr, ldm: ir.Expr, rows: int, cols: int, layout: str) -> ir.Expr:
    """The vector index of a rows x cols matrix at offset/ldm, in the order
    its layout keeps it (so that a dense copy has leading dimension
    ``cols`` for row-major and ``rows`` for column-major)."""
    inner, outer = (cols, rows) if layout == "row" else (rows, cols)
    return ir.Ramp(ir.Ramp(offset, ir.IntImm(1), inner), ir.Broadcast(ldm, inner), outer)


def stage_unaligned_operands(stmt: ir.Stmt, element_types: dict[str, ir.Type],
                             core: WMMATensorCore = WMMA_TENSOR_CORE) -> ir.Stmt:
    """Route every WMMA load or store whose address or leading dimension is
    not provably aligned through a dense buffer in shared memory.

    load_matrix_sync and store_matrix_sync fault on a misaligned address.
    An offset such as ``x + r`` (a convolution window) or a symbolic row
    stride proves nothing, so the matrix is copied to (or from) a
    ``GPUShared`` buffer that is aligned by construction."""
    counter = [0]

    def visit(node: ir.Stmt) -> ir.Stmt | None:
        if not isinstance(node, (ir.Store, ir.Evaluate)):
            return None
        calls = [c for c in ir.walk(node) if ir.is_wmma_call(c) and (".load." in c.name or ".store." in c.name)]
        staged: list[tuple[str, ir.Type, int]] = []
        before: list[ir.Stmt] = []
        after: list[ir.Stmt] = []
        replacements: dict[int, ir.Expr] = {}
        for call in calls:
            store = ".store." in call.name
            pointer, offset, ldm = (call.args[0], call.args[2], call.args[3]) if store else call.args
            assert isinstance(pointer, ir.Variable)
            element = (call.args[1].type if store else call.type).element()
            if _aligned(offset, element.bytes, core.pointer_alignment) and _leading_dimension_ok(ldm, element.bytes):
                continue
            rows, cols, layout = _fragment_extent(call)
            stage = f"{pointer.name}{WMMA_STAGE}{counter[0]}"
            counter[0] += 1
            lanes = rows * cols
            staged.append((stage, element, lanes))
            dense = ir.Ramp(ir.IntImm(0), ir.IntImm(1), lanes)
            source = _matrix_index(offset, ldm, rows, cols, layout)
            dense_ldm = ir.IntImm(cols if layout == "row" else rows)
            stage_pointer = ir.Variable(stage, ir.handle_type())
            memory_type = element_types.get(pointer.name, element).with_lanes(lanes)
            if store:
                after.append(ir.Store(pointer.name, ir.Load(stage, dense, memory_type), source))
                replacements[id(call)] = ir.Call(call.name, (stage_pointer, call.args[1], ir.IntImm(0), dense_ldm),
                                                 call.type)
            else:
                before.append(ir.Store(stage, ir.Load(pointer.name, source, memory_type), dense))
                replacements[id(call)] = ir.Call(call.name, (stage_pointer, ir.IntImm(0), dense_ldm), call.type)
        if not staged:
            return None
        rewritten = _with_exprs(node, lambda e: replacements.get(id(e)))
        result = ir.make_block([*before, rewritten, *after])
        for stage, element, lanes in reversed(staged):
            result = ir.Allocate(stage, element, "GPUShared", (ir.IntImm(lanes),), result)
        return result

    return map_stmt(stmt, visit)


def enforce_wmma_lanes(stmt: ir.Stmt, core: WMMATensorCore = WMMA_TENSOR_CORE) -> ir.Stmt:
    """Wrap every statement that performs a WMMA operation (with the copies
    that stage its operands) in a warp-lane loop: a WMMA operation is
    executed by all the lanes of a warp together."""

    def holds_wmma(node: ir.Stmt) -> bool:
        return any(ir.is_wmma_call(n) for n in ir.walk(node))

    def wrap(node: ir.Stmt) -> ir.Stmt:
        return ir.For(WMMA_LANE, ir.IntImm(0), ir.IntImm(core.warp_size), ir.ForKind.GPU_LANE, "CUDA", node)

    def visit(node: ir.Stmt) -> ir.Stmt | None:
        if isinstance(node, ir.For) and node.kind is ir.ForKind.GPU_LANE:
            return node  # already warp-wide
        if isinstance(node, ir.Allocate) and WMMA_STAGE in node.name:
            # A staging buffer is shared by the warp: it stays outside the lanes.
            inner = node.body
            staged = isinstance(inner, ir.Allocate) and WMMA_STAGE in inner.name
            return dataclasses.replace(node, body=visit(inner) if staged else wrap(inner))
        if isinstance(node, (ir.Store, ir.Evaluate)) and holds_wmma(node):
            return wrap(node)
        return None

    return map_stmt(stmt, visit)


def push_fragment_allocations(stmt: ir.Stmt, memory_types: frozenset[str] = frozenset({"WMMAAccumulator"})) -> ir.Stmt:
    """Make fragment allocations per-thread: move each one into the innermost
    GPU thread loop that holds all its uses (outside the thread loops, Halide
    would place it in shared memory). Without thread loops the kernel runs
    one warp per block and the fragment is already a per-thread variable."""

    def visit(node: ir.Stmt) -> ir.Stmt | None:
        if not (isinstance(node, ir.Allocate) and node.memory_type in memory_types):
            return None
        path = _path_to_uses(node.body, node.name, _accesses)
        threads = [n for n in (path or []) if isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_THREAD]
        if not threads:
            return dataclasses.replace(node, body=map_stmt(node.body, visit))
        target = threads[-1]
        moved = dataclasses.replace(node, body=target.body)
        return map_stmt(node.body, lambda n: dataclasses.replace(n, body=moved) if n is target else None)

    return map_stmt(stmt, visit)


def _legal_error(message: str) -> LegalizationError:
    return LegalizationError(Diagnostic("error", message))


__all__ = ["Decoder", "InputError", "LegalizationError", "MarkerLeft", "check_amx", "parse_sexpr",
           "place_temporaries", "reinsert"]
