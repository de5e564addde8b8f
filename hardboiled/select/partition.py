"""Partitioning a statement that is bigger than one instruction.

The paper's central point is that one Halide statement need not match one
instruction. A schedule may vectorize a 32 x 32 accumulator, or a K chunk
of 64 bf16 values, in one statement; AMX tiles hold at most 16 rows of 64
bytes and a WMMA fragment is 16 x 16 x 16 (or 32 x 8, 8 x 32). Such a
statement is cut into hardware-sized pieces before selection:

* output rows and columns: one statement per M x N piece of the
  accumulator, each with the lanes of that piece;
* the reduction: an update ``acc = sum_K(A * B) + acc`` with K larger than
  one instruction's becomes K / k updates of k products each.

Slicing works on the vector index forms Halide prints (nested ramps and
broadcasts over the lanes' row-major M x N [x K] shape), so every piece is
again the kind of statement the rules match. The accumulator itself is
private to the pipeline, so its pieces are laid out as whole tiles: piece
(i, j) of rows r0.. of a W-column accumulator lives at
``ramp(slot * m * n, 1, m * n)`` with ``slot = (r0 / m + i) * (W / n) + j``,
which is how the backends address tile registers and fragments.

The sizes come from the target tables (AMX_TILE, WMMA_TENSOR_CORE); a
statement whose index forms do not fit that shape is left as it is, and
selection explains the miss.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from hardboiled import ir
from hardboiled.select.extract import SCRATCH_MEMORY, iter_stores
from hardboiled.select.lane_slicing import PLAIN_SLICER, LaneSlicer
from hardboiled.targets.amx import AMX_TILE
from hardboiled.targets.wmma import WMMA_TENSOR_CORE

# ---------------------------------------------------------------- planning

@dataclass(frozen=True, slots=True)
class _Piece:
    rows: int
    cols: int
    k: int
    """Products per instruction; an update with more is cut along K."""
    pads: bool = False
    """An update with fewer products than ``k`` is padded with zero ones
    (Tensor Cores: a fragment's K is fixed; AMX: K must fill whole VNNI
    groups)."""
    pack: int = 0
    """Pad to a multiple of this many products rather than to ``k`` (AMX:
    its VNNI group, 4 int8 or 2 bf16 values)."""
    accelerator: str = "WMMA"

    def stages(self, side: ir.Expr) -> bool:
        """Whether this side of a product is copied into scratch memory:
        on Tensor Cores an operand computed or gathered in a fragment type;
        on AMX one gathered in a tile type (a clamped index of a boundary
        condition: AMX computes an operand of affine loads into a temporary
        through the rules, but a gather has no layout they read)."""
        if self.accelerator == "WMMA":
            return _computed_side(side)
        value = _operand_value(side)
        return any(e.type == value.type.element() for e in AMX_TILE.elements) and any(
            isinstance(n, ir.Load) and _clamped(n) for n in ir.walk(value))

    def stages_any(self, reduce: ir.VectorReduce) -> bool:
        """Whether a side of this product is staged."""
        product = reduce.value
        if not (isinstance(product, ir.Binary) and product.op is ir.BinOp.MUL):
            return False
        return any(self.stages(side) for side in (product.a, product.b))

    def padded(self, products: int) -> int:
        """The products per instruction once ``products`` are padded."""
        return -(-products // self.pack) * self.pack if self.pack else self.k


def _dense_base(index: ir.Expr, lanes: int) -> int | None:
    if (isinstance(index, ir.Ramp) and isinstance(index.base, ir.IntImm) and isinstance(index.stride, ir.IntImm)
            and index.stride.value == 1 and index.lanes == lanes):
        return index.base.value
    return None


def _largest_divisor(n: int, limit: int) -> int:
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


def _reduction(value: ir.Expr) -> ir.VectorReduce | None:
    return next((n for n in ir.walk(value) if isinstance(n, ir.VectorReduce)), None)


def _operand_type(reduce: ir.VectorReduce, accumulator: str) -> ir.Type | None:
    loads = [n for n in ir.walk(reduce.value) if isinstance(n, ir.Load) and n.name != accumulator]
    return loads[0].type.element() if loads else None


def _piece(accelerator: str, rows: int, width: int, reduces: list[ir.VectorReduce],
           accumulator: ir.Allocate) -> _Piece | None:
    """The instruction-sized piece of an accumulator whose statements cover
    ``rows`` (their gcd) of ``width`` columns."""
    factors = [r.value.type.lanes // r.type.lanes for r in reduces]
    k_total = math.gcd(*factors) if factors else 0
    operand = _operand_type(reduces[0], accumulator.name) if reduces else None
    if accelerator == "AMX":
        m = _largest_divisor(rows, AMX_TILE.max_rows)
        n = _largest_divisor(width, AMX_TILE.max_colbytes // accumulator.type.bytes)
        tile_element = next((e for e in AMX_TILE.elements if e.type == operand), None)
        if tile_element is None or not k_total:
            return _Piece(m, n, k_total, accelerator="AMX")
        most = AMX_TILE.max_colbytes // tile_element.type.bytes
        whole = [d for d in range(tile_element.k_pack, most + 1, tile_element.k_pack) if k_total % d == 0]
        if whole and 2 * max(whole) >= min(k_total, most):
            return _Piece(m, n, max(whole), accelerator="AMX")
        # K in no whole VNNI groups (K = 10 int8, a 3 x 3 colour matrix), or
        # in none but small equal chunks (K = 68 int8: 17 of 4): chunks of a
        # tile's width and a last one padded to whole groups
        return _Piece(m, n, most, pads=True, pack=tile_element.k_pack, accelerator="AMX")
    fragment_element = WMMA_TENSOR_CORE.element(operand) if operand is not None else None
    if fragment_element is None:
        return None
    # A fragment's K is fixed: a longer reduction is cut, and a shorter one
    # (or what is left of a longer one) is padded with zero products.
    fits = [s for s in WMMA_TENSOR_CORE.shapes_of(fragment_element) if rows % s.m == 0 and width % s.n == 0 and k_total]
    if not fits:
        return None
    shape = max(fits, key=lambda s: (s.m * s.n, s.m == s.n, k_total % s.k == 0))
    return _Piece(shape.m, shape.n, shape.k, pads=True)


def partition_accumulators(stmt: ir.Stmt, buffers: dict[str, str]) -> dict[int, ir.Stmt]:
    """Cut every statement on these accumulators (name -> "AMX" or "WMMA")
    into instruction-sized pieces where one is too big: the pieces of each
    cut store, by its pre-order position."""
    allocations = {n.name: n for n in ir.walk(stmt) if isinstance(n, ir.Allocate) and n.name in buffers}
    by_id: dict[int, ir.Stmt] = {}
    for name, alloc in allocations.items():
        planned = _plan(stmt, name, alloc, buffers[name])
        if planned is not None:
            by_id.update(planned)
    return {position: by_id[id(store)] for position, store in enumerate(iter_stores(stmt)) if id(store) in by_id}


def uneven_tiles(stmt: ir.Stmt, names: set[str]) -> set[str]:
    """The accumulators among ``names`` whose own statements (the stores to one) disagree on its tiles:
    two dense ranges overlap and differ (4-row fills, an 8-row update), giving a register two shapes."""
    ranges: dict[str, set[tuple[int, int]]] = {name: set() for name in names}
    for store in (s for s in iter_stores(stmt) if s.name in ranges):
        own = [n.index for n in ir.walk(store.value) if isinstance(n, ir.Load) and n.name == store.name]
        for index in [store.index, *own]:
            if (base := _dense_base(index, index.type.lanes)) is not None and index.type.lanes > 1:
                ranges[store.name].add((base, base + index.type.lanes))
    return {name for name, found in ranges.items()
            if any(a != b and a[0] < b[1] and b[0] < a[1] for a in found for b in found)}


def _touches(store: ir.Store, name: str) -> bool:
    return store.name == name or any(isinstance(n, ir.Load) and n.name == name for n in ir.walk(store.value))


def _plan(stmt: ir.Stmt, name: str, alloc: ir.Allocate, accelerator: str) -> dict[int, ir.Stmt] | None:
    """The pieces of every statement on accumulator ``name``, by the id of
    the statement; None when nothing needs cutting or a form does not fit."""
    width = _row_width(alloc)
    if width is None:
        return None
    stores = [s for s in iter_stores(stmt) if _touches(s, name)]
    if not _read_only_in_stores(stmt, name, stores):
        return None  # read outside a store (a let, a condition): its layout must stay Halide's
    counted = _counted_blocks(stores, name, width)
    if counted is None:
        return None
    cut, blocks, uncut = counted
    reduces = [r for s in cut if s.name == name and (r := _reduction(s.value)) is not None]
    # pieces as wide as every block of columns allows (a bias filled 8
    # columns at a time cuts a 16-wide tile in two)
    tiling = math.gcd(width, *(column for _, column, _ in blocks), *(columns for _, _, columns in blocks))
    # and as tall as every block and every row a block starts at allow (a
    # GuardWithIf edge copy fills rows 0..15 and updates rows 8..23)
    tall = math.gcd(*(rows for rows, _, _ in blocks), *_first_rows(cut, name, width))
    piece = _piece(accelerator, tall, tiling, reduces, alloc)
    if piece is None or (uncut and (piece.cols != width or piece.rows * width != alloc.constant_elements)):
        return None
    if _block_update_cut_in_rows(cut, blocks, name, width, piece) or \
            _one_instruction_each(piece, width, blocks, reduces):
        return None
    return _cut_stores(cut, blocks, name, width, piece)


_Block = tuple[int, int, int]
"""What one store covers of a ``width``-column accumulator: (rows, first
column, columns); whole rows are (rows, 0, width)."""


def _block_update_cut_in_rows(stores: list[ir.Store], blocks: list[_Block], name: str, width: int,
                              piece: _Piece) -> bool:
    """Whether a block updated in place would be cut in rows: such a block
    is cut only along its columns. Cut in rows too (24 rows of an edge copy
    in three 8-row tiles), its tiles would outnumber the registers, where
    left as it is it stays in memory."""
    return any(_loads_of(store.value, name) and columns != width and rows != piece.rows
               for store, (rows, _, columns) in zip(stores, blocks))


def _counted_blocks(stores: list[ir.Store], name: str,
                    width: int) -> tuple[list[ir.Store], list[_Block], list[ir.Store]] | None:
    """(the stores to cut, the block of the accumulator each covers, the
    stores left as they are); None as soon as one that writes the
    accumulator does not access it in whole dense rows or a block of them
    (a bias that fills one tile's columns at a time). A store that only
    reads it in another order (a transposed copy-out) is left as it is,
    which is right while the accumulator stays one piece (only its
    reductions are cut): its layout is then unchanged."""
    cut: list[ir.Store] = []
    blocks: list[_Block] = []
    uncut: list[ir.Store] = []
    for store in stores:
        block = _block_of(store, name, width)
        if block is not None:
            cut.append(store)
            blocks.append(block)
        elif store.name != name:
            uncut.append(store)
        else:
            return None
    return (cut, blocks, uncut) if cut else None


def _row_width(alloc: ir.Allocate) -> int | None:
    """Columns of a scalar accumulator of constant width; None for any other."""
    if not alloc.extents or not isinstance(alloc.extents[0], ir.IntImm) or alloc.type.lanes != 1 \
            or alloc.extents[0].value <= 0:
        return None
    return alloc.extents[0].value


def _loads_of(node: ir.Node, name: str) -> int:
    return sum(isinstance(n, ir.Load) and n.name == name for n in ir.walk(node))


def _read_only_in_stores(stmt: ir.Stmt, name: str, stores: list[ir.Store]) -> bool:
    """Whether every load of ``name`` in ``stmt`` lies in one of ``stores``
    (the statements that would be cut, and so see the new layout)."""
    return sum(_loads_of(s, name) for s in stores) == _loads_of(stmt, name)


def _block_of(store: ir.Store, name: str, width: int) -> _Block | None:
    """The block of a ``width``-column accumulator that ``store`` reads or
    writes, when every access of it is that same block of rows (wherever
    each starts)."""
    lanes = store.value.type.lanes
    accesses = _accesses(store, name)
    found = {_access_block(index, lanes, width) for index in accesses}
    shapes = {block[1:] for block in found if block is not None}
    if not accesses or None in found or len(shapes) != 1:
        return None
    column, columns = shapes.pop()
    return lanes // columns, column, columns


def _accesses(store: ir.Store, name: str) -> list[ir.Expr]:
    """The indices at which ``store`` reads or writes accumulator ``name``."""
    reads = [n.index for n in ir.walk(store.value) if isinstance(n, ir.Load) and n.name == name]
    return [*reads, store.index] if store.name == name else reads


def _first_rows(stores: list[ir.Store], name: str, width: int) -> list[int]:
    """The row each access of the accumulator in ``stores`` starts at."""
    found = (_access_block(index, store.value.type.lanes, width)
             for store in stores for index in _accesses(store, name))
    return [block[0] for block in found if block is not None]


def _access_block(index: ir.Expr, lanes: int, width: int) -> tuple[int, int, int] | None:
    """(first row, first column, columns) of whole rows or of a block, ``ramp(ramp(r*width + c, 1, cols), ..)``."""
    base = _dense_base(index, lanes)
    if base is not None:
        return (base // width, 0, width) if base % width == 0 and lanes % width == 0 else None
    if not (isinstance(index, ir.Ramp) and isinstance(index.stride, ir.Broadcast)
            and index.stride.value == ir.IntImm(width) and isinstance(index.base, ir.Ramp)):
        return None
    columns = index.base.lanes
    start = _dense_base(index.base, columns)
    if start is None or columns * index.lanes != lanes or start % width + columns > width:
        return None
    return start // width, start % width, columns


def _one_instruction_each(piece: _Piece, width: int, blocks: list[_Block], reduces: list[ir.VectorReduce]) -> bool:
    """Whether every statement is one instruction already (nothing to cut),
    and reads its operands as they are (nothing to stage)."""
    factors = [r.value.type.lanes // r.type.lanes for r in reduces]
    if any(piece.stages_any(r) for r in reduces):
        return False
    return (all(rows == piece.rows and columns == width for rows, _, columns in blocks) and width == piece.cols
            and all(f == piece.k for f in factors))


_INDEX_ARITHMETIC = (ir.Ramp, ir.Broadcast, ir.IntImm, ir.Variable, ir.Binary)


def _computed_side(side: ir.Expr) -> bool:
    """Whether ``side`` is computed or gathered in a type Tensor Cores
    multiply (a negated int8 operand computed in int32 is not: its values
    need not fit 8 bits)."""
    value = _operand_value(side)
    if WMMA_TENSOR_CORE.element(value.type.element()) is None:
        return False
    return not isinstance(value, ir.Load) or _gathered(value)


def _gathered(load: ir.Load) -> bool:
    """Whether ``load`` reads at an index that is no affine vector form (a
    clamp, a select, a division)."""
    return any(not isinstance(n, _INDEX_ARITHMETIC) or (isinstance(n, ir.Binary) and n.op not in _AFFINE)
               for n in ir.walk(load.index))


_AFFINE = (ir.BinOp.ADD, ir.BinOp.SUB, ir.BinOp.MUL)


def _clamped(load: ir.Load) -> bool:
    """Whether ``load`` reads at a clamped or selected index (a boundary
    condition), or one read from memory. (A division or a remainder in it
    is how Halide indexes a VNNI layout, which the AMX rules read.)"""
    return any((isinstance(n, ir.Binary) and n.op in (ir.BinOp.MIN, ir.BinOp.MAX))
               or isinstance(n, (ir.Select, ir.Load, ir.Call)) for n in ir.walk(load.index))


def _cut_stores(stores: list[ir.Store], blocks: list[_Block], name: str, width: int,
                piece: _Piece) -> dict[int, ir.Stmt] | None:
    """Each store as the block of its pieces, by its id; None if one of
    them does not cut (then none is: the accumulator keeps one layout)."""
    result: dict[int, ir.Stmt] = {}
    for store, block in zip(stores, blocks):
        pieces = _cut(store, name, width, block, piece)
        if pieces is None:
            return None
        result[id(store)] = ir.make_block(pieces)
    return result


def _cut(store: ir.Store, name: str, width: int, block: _Block, piece: _Piece) -> list[ir.Stmt] | None:
    """Store ``store`` (``block`` of the accumulator) as its pieces."""
    lanes = piece.rows * piece.cols
    rows, _, columns = block
    if store.predicate is not None or rows * columns > ir.MAX_LANES:
        return None  # wider than any vector Halide prints: its pieces would be countless

    def tile_of(load: ir.Load, axis: int, start: int, count: int) -> ir.Expr | None:
        # Rows of an accumulator access slice like any ramp; a column range
        # of them is a whole tile, at its slot.
        if load.name != name or axis != 1:
            return None
        found = _access_block(load.index, load.type.lanes, width)
        if found is None:  # not whole rows: no tile slot holds it, so the accumulator cannot be cut
            raise _Uncuttable(load)
        first_row, column, _ = found
        if first_row % piece.rows or (column + start) % piece.cols:
            raise _Uncuttable(load)  # it would straddle two tiles
        slot = first_row // piece.rows * (width // piece.cols) + (column + start) // piece.cols
        return ir.Load(name, ir.Ramp(ir.IntImm(slot * lanes), ir.IntImm(1), lanes), load.type.with_lanes(lanes))

    slicer = LaneSlicer(tile_of)

    def cut(e: ir.Expr, i: int, j: int) -> ir.Expr | None:
        by_rows = slicer.slice(e, (rows, columns), 0, i * piece.rows, piece.rows)
        return None if by_rows is None else slicer.slice(by_rows, (piece.rows, columns), 1, j * piece.cols, piece.cols)

    try:
        return _cut_pieces(store, name, (rows, columns), piece, cut)
    except _Uncuttable:
        return None


class _Uncuttable(Exception):
    """A read of the accumulator that no piece's tile holds."""


def _cut_pieces(store: ir.Store, name: str, extents: tuple[int, int], piece: _Piece,
                cut: Callable[[ir.Expr, int, int], ir.Expr | None]) -> list[ir.Stmt] | None:
    pieces: list[ir.Stmt] = []
    rows, columns = extents
    for i in range(rows // piece.rows):
        for j in range(columns // piece.cols):
            value = cut(store.value, i, j)
            if store.name == name:
                index = cut(ir.Load(name, store.index, store.value.type), i, j)
                index = index.index if isinstance(index, ir.Load) else None
            else:
                index = cut(store.index, i, j)
            if value is None or index is None:
                return None
            cut_store = ir.Store(store.name, value, index, None, None if store.name == name else store.alignment)
            pieces.extend(_cut_reduction(cut_store, name, piece) if store.name == name else [cut_store])
    return pieces


def _cut_reduction(store: ir.Store, name: str, piece: _Piece) -> list[ir.Stmt]:
    """An update ``acc = sum(A * B) + acc`` with more than ``piece.k``
    products per output, as several updates of ``piece.k`` each."""
    split = _reduction_update(store)
    if split is None or not piece.k:
        return [store]
    reduce, rest = split
    factor = reduce.value.type.lanes // reduce.type.lanes
    if factor < piece.k and piece.pads:
        padded = _padded_reduction(store, reduce, rest, piece, factor)
        return [store] if padded is None else [padded]
    if factor < piece.k or (factor % piece.k and not piece.pads):
        return [store]
    if factor == piece.k and not piece.stages_any(reduce):
        return [store]
    updates = _chunks(store, name, reduce, rest, piece)
    return [store] if updates is None else updates


def _reduction_update(store: ir.Store) -> tuple[ir.VectorReduce, ir.Expr | None] | None:
    """(the reduction, the rest) of a store of ``sum(...) + rest``; the
    rest is None for a bare ``P = sum(...)`` (an isolated product)."""
    value = store.value
    if isinstance(value, ir.VectorReduce):
        return value, None
    if not (isinstance(value, ir.Binary) and value.op is ir.BinOp.ADD):
        return None
    reduce, rest = (value.a, value.b) if isinstance(value.a, ir.VectorReduce) else (value.b, value.a)
    return (reduce, rest) if isinstance(reduce, ir.VectorReduce) else None


def _chunks(store: ir.Store, name: str, reduce: ir.VectorReduce, rest: ir.Expr | None,
            piece: _Piece) -> list[ir.Stmt] | None:
    """The update as one update per chunk of ``piece.k`` products; a last,
    shorter chunk is padded, and on Tensor Cores a computed operand staged."""
    factor = reduce.value.type.lanes // reduce.type.lanes
    extents = (piece.rows, piece.cols, factor)
    updates: list[ir.Stmt] = []
    for start in range(0, factor, piece.k):
        count = min(piece.k, factor - start)
        products = PLAIN_SLICER.slice(reduce.value, extents, 2, start, count)
        if products is None:
            return None
        part = ir.VectorReduce(reduce.op, products, reduce.type)
        # a bare product's first chunk starts it; the others add to it
        so_far = rest if rest is not None or start == 0 else ir.Load(name, store.index, store.value.type)
        update = ir.Store(name, _plus_rest(part, so_far), store.index)
        if count < piece.k or piece.stages_any(part):
            padded = _padded_reduction(update, part, so_far, piece, count)
            if padded is None:
                return None
            updates.append(padded)
        else:
            updates.append(update)
    return updates


@dataclass(frozen=True, slots=True)
class _Staging:
    """Where one side of a product is copied, and how the product reads it."""

    axis: int
    """The lane axis the side does not vary along (N for A, M for B)."""
    size: int
    copy_index: ir.Expr
    read_index: ir.Expr


def _stagings(m: int, n: int, k: int, factor: int) -> tuple[_Staging, _Staging]:
    return (
        # A: element (m, k) at m * k_pad + k; read as ramp(xN(ramp(0, 1, k)), x(N*k)(k), M)
        _Staging(1, m * k, ir.Ramp(_ramp_i(0, 1, factor), ir.Broadcast(ir.IntImm(k), factor), m),
                 ir.Ramp(ir.Broadcast(_ramp_i(0, 1, k), n), ir.Broadcast(ir.IntImm(k), n * k), m)),
        # B: element (k, n) at k * N + n, the slice's lanes are (n, k); read as xM(ramp(ramp(0, N, k), xk(1), N))
        _Staging(0, k * n, ir.Ramp(_ramp_i(0, n, factor), ir.Broadcast(ir.IntImm(1), factor), n),
                 ir.Broadcast(ir.Ramp(_ramp_i(0, n, k), ir.Broadcast(ir.IntImm(1), k), n), m)),
    )


def _plus_rest(e: ir.Expr, rest: ir.Expr | None) -> ir.Expr:
    return e if rest is None else ir.Binary(ir.BinOp.ADD, e, rest)


def _padded_reduction(store: ir.Store, reduce: ir.VectorReduce, rest: ir.Expr | None, piece: _Piece,
                      factor: int) -> ir.Stmt | None:
    """``acc = sum_k(A * B) + acc`` with fewer products than a fragment's
    K, as a product of operands copied into zero-padded buffers: A as an
    M x k row-major block, B as a k x N row-major block. The extra products
    are 0 * 0, so the sums are the same. An operand computed from loads (a
    negation, a boundary condition) is copied as it computes, in its own
    type, under the conversions that widen it; with ``factor`` = K only such
    an operand is copied (staged), unpadded."""
    product = reduce.value
    if not (isinstance(product, ir.Binary) and product.op is ir.BinOp.MUL) or reduce.op is not ir.ReduceOp.ADD:
        return None
    m, n, k = piece.rows, piece.cols, piece.padded(factor)
    extents = (m, n, factor)

    def invariant(side: ir.Expr, axis: int) -> bool:
        first = PLAIN_SLICER.slice(side, extents, axis, 0, 1)
        return first is not None and first == PLAIN_SLICER.slice(side, extents, axis, 1, 1)

    sides = (product.a, product.b)
    a_side = next((x for x in sides if invariant(x, 1) and not invariant(x, 0)), None)
    b_side = next((x for x in sides if x is not a_side and invariant(x, 0)), None)
    if a_side is None or b_side is None:
        return None
    fills: list[ir.Stmt] = []
    allocations: list[tuple[str, ir.Type, int]] = []
    operands = []
    for side, staging in zip((a_side, b_side), _stagings(m, n, k, factor)):
        if factor == k and not piece.stages(side):
            operands.append(side)  # nothing to pad, read as it is
            continue
        staged = _stage(side, staging, extents, k, len(allocations), piece.accelerator)
        if staged is None:
            return None
        name, element, copies = staged
        allocations.append((name, element, staging.size))
        fills.extend(copies)
        operands.append(_recast(side, ir.Load(name, staging.read_index, element.with_lanes(m * n * k))))
    a, b = operands
    wide = ir.VectorReduce(reduce.op, ir.Binary(ir.BinOp.MUL, a, b), reduce.type)
    result = ir.make_block([*fills, ir.Store(store.name, _plus_rest(wide, rest), store.index)])
    for name, element, size in reversed(allocations):
        result = ir.Allocate(name, element, SCRATCH_MEMORY[piece.accelerator], (ir.IntImm(size),), result)
    return result


def _stage(side: ir.Expr, staging: _Staging, extents: tuple[int, int, int], k: int,
           number: int, accelerator: str) -> tuple[str, ir.Type, list[ir.Stmt]] | None:
    """(name, element type, the stores that fill it) of the copy of one side."""
    values = PLAIN_SLICER.slice(side, extents, staging.axis, 0, 1)
    # the operand under its widening: a load, or computed from loads (a
    # negation, a boundary condition), copied in its own type
    inner = _operand_value(side)
    load = next((x for x in ir.walk(inner) if isinstance(x, ir.Load)), None)
    element = inner.type.element()
    multiplied = (WMMA_TENSOR_CORE.element(element) is not None if accelerator == "WMMA"
                  else any(e.type == element for e in AMX_TILE.elements))
    if values is None or load is None or not multiplied:
        return None  # (a negated int8 operand computed in int16 is no fragment's type)
    name = f"{load.name}.kpad.{number}"
    copies: list[ir.Stmt] = []
    if extents[2] < k:
        copies.append(ir.Store(name, ir.Broadcast(ir.zero_of(element), staging.size), _ramp_i(0, 1, staging.size)))
    copies.append(ir.Store(name, _uncast(values), staging.copy_index))
    return name, element, copies


def _ramp_i(base: int, stride: int, lanes: int) -> ir.Expr:
    return ir.Ramp(ir.IntImm(base), ir.IntImm(stride), lanes)



def _operand_value(e: ir.Expr) -> ir.Expr:
    """What an operand computes under its casts and broadcasts."""
    while isinstance(e, (ir.Cast, ir.Broadcast)):
        e = e.value
    return e


def _uncast(e: ir.Expr) -> ir.Expr:
    """``e`` under its casts (and the one-copy broadcasts, x1(v) = v, that
    slicing a repeated operand leaves around them)."""
    while isinstance(e, ir.Cast) or (isinstance(e, ir.Broadcast) and e.lanes == 1):
        e = e.value
    return e


def _recast(side: ir.Expr, load: ir.Load) -> ir.Expr:
    """``load`` under the casts that ``side`` applies to its load (a
    widening, possibly in steps such as int8 -> int16 -> int32)."""
    casts = []
    while isinstance(side, (ir.Cast, ir.Broadcast)):
        if isinstance(side, ir.Cast):
            casts.append(side.type)
        side = side.value
    result: ir.Expr = load
    for t in reversed(casts):
        result = ir.Cast(t.with_lanes(load.type.lanes), result)
    return result
