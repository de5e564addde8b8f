"""Accelerator accesses put in the storage order of the accelerator buffer.

A tile or fragment holds its rows one after the other, and the rules read
a tile as a statement whose lanes run over it row by row. Halide orders a
vector statement's lanes by the loops it vectorizes, not by the buffer's
storage: an accumulator stored transposed (``mm(x, y)`` with y innermost
in the schedule) is filled and copied out column by column::

    mm[ramp(ramp(0, 32, 16), x16(1), 16)] = x256(0.000000f)
    out[ramp(ramp(o, 1, 16), x16(40), 16)] = mm[ramp(ramp(0, 32, 16), x16(1), 16)]

while the update that Halide left scalar, vectorized again (revectorize.py),
walks the same block row by row. A statement computes the same values
whatever the order of its lanes, when every lane is computed from its own
operands (no reduction or shuffle across lanes) and no two lanes store to
one element. Such a statement is rewritten with its two lane levels
swapped, every vector in it alike, so that the accelerator access walks
the buffer in order::

    mm[ramp(ramp(0, 1, 16), x16(32), 16)] = x256(0.000000f)
    out[ramp(ramp(o, 40, 16), x16(1), 16)] = mm[ramp(ramp(0, 1, 16), x16(32), 16)]

Then every access of the accumulator is the same block, which
relayout_blocked_tiles stores tile after tile; a copy-out to a transposed
destination is a column-major fragment store on Tensor Cores, and on AMX a
spilled copy (spill.py). A vector form the swap does not know leaves the
statement as it is.
"""

from __future__ import annotations

from collections.abc import Callable

from hardboiled import ir
from hardboiled.ir import operations
from hardboiled.ir.visitor import rewrite
from hardboiled.select.revectorize import merged_ramps

LANEWISE_CALLS = frozenset({operations.Kind.PASS_THROUGH, operations.Kind.FLOAT_MATH,
                            operations.Kind.ARITHMETIC, operations.Kind.PREDICATE, operations.Kind.STRICT_FLOAT})
"""Kinds of call (ir/operations.py) whose lane i depends on the lanes i of
their arguments only."""


def order_accelerator_lanes(stmt: ir.Stmt, buffers: set[str]) -> ir.Stmt:
    """``stmt`` with every store that accesses ``buffers`` (accelerator
    memory) in the buffer's storage order where it can be."""
    if not buffers:
        return stmt

    def replace(node: ir.Node) -> ir.Node | None:
        if isinstance(node, ir.Store):
            ordered = in_storage_order(node, buffers)
            return None if ordered is node else ordered
        return None

    return rewrite(stmt, replace, (ir.Stmt,))


def in_storage_order(store: ir.Store, buffers: set[str]) -> ir.Store:
    """``store`` with its lanes reordered so that its access of an
    accelerator buffer in ``buffers`` walks it in storage order; ``store``
    itself when the access does already, or when the reorder is not known
    to keep every value."""
    access = _accelerator_index(store, buffers)
    shape = _column_order(access) if access is not None else None
    if shape is None or store.predicate is not None:
        return store
    rows, cols = shape
    value, index = transposed(store.value, rows, cols), transposed(store.index, rows, cols)
    if value is None or index is None:
        return store
    # the accelerator access, now a block walked row by row, as one ramp where it is dense
    assert access is not None
    walked = transposed(access, rows, cols)
    merged = merged_ramps(walked)
    if walked is not None and merged is not None and merged != walked:
        value = rewrite(value, lambda n: ir.Load(n.name, merged, n.type) if isinstance(n, ir.Load)
                        and n.name in buffers and n.index == walked else None, (ir.Expr,))
        if store.name in buffers:
            index = merged
    return ir.Store(store.name, value, index, None, None)


def _accelerator_index(store: ir.Store, buffers: set[str]) -> ir.Expr | None:
    """The one index at which ``store`` accesses accelerator memory: its
    own, or the one of its loads from it (all alike)."""
    if store.name in buffers:
        return store.index
    indices = {n.index for n in ir.walk(store.value) if isinstance(n, ir.Load) and n.name in buffers}
    return indices.pop() if len(indices) == 1 else None


def _column_order(index: ir.Expr) -> tuple[int, int] | None:
    """(rows, columns) of the lanes of ``ramp(ramp(b, S, C), xC(s), R)``
    with constant strides S >= s * R > 0 and a scalar b: R rows of C lanes,
    in which consecutive lanes lie further apart than all the rows span (the
    block read column by column, each element once); None for any other
    index."""
    if not (isinstance(index, ir.Ramp) and isinstance(index.base, ir.Ramp)
            and isinstance(index.stride, ir.Broadcast)):
        return None
    inner = index.base
    outer_stride, inner_stride = index.stride.value, inner.stride
    if inner.base.type.is_vector or not (isinstance(outer_stride, ir.IntImm) and isinstance(inner_stride, ir.IntImm)):
        return None
    if not 0 < outer_stride.value * index.lanes <= inner_stride.value:
        return None  # rows overlap: the lanes may not be distinct elements
    return index.lanes, inner.lanes


def transposed(e: ir.Expr, rows: int, cols: int) -> ir.Expr | None:
    """``e``, a vector of ``rows`` x ``cols`` lanes (rows outer), with lane
    (c, r) of the result equal to lane (r, c) of ``e``; None for a form
    this does not know (a reduction or shuffle across lanes, a let)."""
    if e.type.lanes == 1:
        return e
    if e.type.lanes != rows * cols:
        return None
    if isinstance(e, ir.Broadcast):
        if e.value.type.lanes == 1:
            return e
        if e.lanes == rows and e.value.type.lanes == cols:  # lane (r, c) is value[c]
            return _repeated(e.value, rows)
        return None
    if isinstance(e, ir.Ramp):
        return _transposed_ramp(e, rows, cols)
    return map_lanewise(e, lambda x: transposed(x, rows, cols))


def _transposed_ramp(e: ir.Ramp, rows: int, cols: int) -> ir.Expr | None:
    if e.base.type.lanes == 1:
        # lane (r, c) is b + (r * cols + c) * s: the rows are cols * s apart
        if e.stride.type.lanes != 1:
            return None
        row_step = ir.Binary(ir.BinOp.MUL, e.stride, ir.IntImm(cols, e.stride.type)) \
            if not isinstance(e.stride, ir.IntImm) else ir.IntImm(e.stride.value * cols, e.stride.type)
        return ir.Ramp(ir.Ramp(e.base, row_step, rows), ir.Broadcast(e.stride, rows), cols)
    if e.lanes != rows or e.base.type.lanes != cols:
        return None
    # lane (r, c) is base[c] + r * stride[c]
    base, stride = e.base, e.stride
    if isinstance(stride, ir.Broadcast) and stride.value.type.lanes == 1:
        if isinstance(base, ir.Ramp) and base.base.type.lanes == 1 and base.stride.type.lanes == 1:
            return ir.Ramp(ir.Ramp(base.base, stride.value, rows), ir.Broadcast(base.stride, rows), cols)
        if isinstance(base, ir.Broadcast) and base.value.type.lanes == 1:
            return ir.Broadcast(ir.Ramp(base.value, stride.value, rows), cols)
    return None


def _repeated(e: ir.Expr, times: int) -> ir.Expr | None:
    """``e`` with each lane repeated ``times`` times in a row."""
    if e.type.lanes == 1:
        return ir.Broadcast(e, times)
    if isinstance(e, ir.Broadcast) and e.value.type.lanes == 1:
        return ir.Broadcast(e.value, e.lanes * times)
    if isinstance(e, ir.Ramp) and e.base.type.lanes == 1 and e.stride.type.lanes == 1:
        return ir.Ramp(ir.Broadcast(e.base, times), ir.Broadcast(e.stride, times), e.lanes)
    return map_lanewise(e, lambda x: _repeated(x, times))


def map_lanewise(e: ir.Expr, each: Callable[[ir.Expr], ir.Expr | None]) -> ir.Expr | None:
    """``e`` with ``each`` applied to its operands, where lane i of ``e``
    depends on lane i of its operands only; None for any other form, or
    where ``each`` gives None."""
    if isinstance(e, ir.Load):
        index = each(e.index) if e.predicate is None else None
        return None if index is None else ir.Load(e.name, index, e.type.with_lanes(index.type.lanes))
    if isinstance(e, ir.Cast):
        value = each(e.value)
        return None if value is None else ir.Cast(e.type.with_lanes(value.type.lanes), value)
    if isinstance(e, ir.Binary):
        a, b = each(e.a), each(e.b)
        return None if a is None or b is None else ir.Binary(e.op, a, b)
    if isinstance(e, ir.Select):
        return _select_of(e, each)
    if isinstance(e, ir.Call):
        return _call_of(e, each)
    return None


def _select_of(e: ir.Select, each: Callable[[ir.Expr], ir.Expr | None]) -> ir.Expr | None:
    condition, true_value, false_value = each(e.condition), each(e.true_value), each(e.false_value)
    if condition is None or true_value is None or false_value is None:
        return None
    return ir.Select(condition, true_value, false_value)


def _call_of(e: ir.Call, each: Callable[[ir.Expr], ir.Expr | None]) -> ir.Expr | None:
    operation = operations.find(e.name)
    if operation is None or operation.kind not in LANEWISE_CALLS:
        return None
    args = [each(x) for x in e.args]
    known = [a for a in args if a is not None]
    if len(known) != len(args):
        return None
    return ir.Call(e.name, tuple(known), e.type.with_lanes(max(a.type.lanes for a in known)))
