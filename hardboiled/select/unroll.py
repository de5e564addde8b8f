"""Loops over the tiles of an accelerator buffer, unrolled.

Tile registers and fragments are named in the instruction, not addressed:
``tdpbf16ps tmm0, tmm1, tmm2`` cannot take its destination from a loop
variable. A schedule that does not unroll its loop over the tiles of one
accumulator (``f.update().tile(...)`` without ``unroll(cx)``) leaves

    for (mm.s1.x.cx, 0, 4) {
      mm[ramp(mm.s1.x.cx*256, 1, 256)] = vector_reduce_add(...) + mm[ramp(mm.s1.x.cx*256, 1, 256)]
    }

whose store picks its tile by ``cx``. Such a loop (serial, with a constant
trip count of at most MAX_TRIPS) is unrolled: one copy of its body per
iteration, with the loop variable a constant, folded into the indices
(``ramp(512, 1, 256)``), as Halide's own ``unroll`` would have written it.
The program computes the same thing in the same order.
"""

from __future__ import annotations

from hardboiled import ir
from hardboiled.ir.visitor import rewrite
from hardboiled.select.spill import constant_lanes

MAX_TRIPS = 16
"""At most this many copies of a loop body: a tile loop is short (AMX has
8 registers); a longer one is left, and selection explains the miss."""


def unroll_tile_loops(stmt: ir.Stmt, buffers: set[str]) -> ir.Stmt:
    """``stmt`` with every short serial loop whose variable indexes one of
    ``buffers`` (accelerator memory) unrolled."""
    if not buffers:
        return stmt

    def replace(node: ir.Node) -> ir.Node | None:
        if not isinstance(node, ir.For):
            return None
        # The loops inside first (statements only: no loop is in an
        # expression); the loop returned is not looked into again.
        body = rewrite(node.body, replace, (ir.Stmt,))
        loop = node if body is node.body else ir.For(node.name, node.min, node.extent, node.kind,
                                                      node.device_api, body)
        trips = _trips(loop)
        if trips is None or not _indexes(loop.body, loop.name, buffers):
            return loop
        first, count = trips
        return ir.make_block([_with_constant(loop.body, loop.name, first + i) for i in range(count)])

    return rewrite(stmt, replace, (ir.Stmt,))


def _trips(loop: ir.For) -> tuple[int, int] | None:
    if loop.kind not in (ir.ForKind.SERIAL, ir.ForKind.UNROLLED):
        return None
    if not (isinstance(loop.min, ir.IntImm) and isinstance(loop.extent, ir.IntImm)):
        return None
    if not 0 < loop.extent.value <= MAX_TRIPS:
        return None
    return loop.min.value, loop.extent.value


def _indexes(body: ir.Stmt, name: str, buffers: set[str]) -> bool:
    """Whether ``name`` is in the index of a vector access of ``buffers``
    (a whole tile; the loops around a scalar update are its lanes, which
    revectorize.py makes a vector again)."""
    for node in ir.walk(body):
        if isinstance(node, (ir.Load, ir.Store)) and node.name in buffers and node.index.type.lanes > 1:
            if any(isinstance(n, ir.Variable) and n.name == name for n in ir.walk(node.index)):
                return True
    return False


def _with_constant(body: ir.Stmt, name: str, value: int) -> ir.Stmt:
    """``body`` with the variable ``name`` replaced by ``value`` and the
    integer arithmetic that leaves on constants folded."""

    def replace(node: ir.Node) -> ir.Node | None:
        if isinstance(node, ir.Variable) and node.name == name:
            return ir.IntImm(value, node.type)
        if isinstance(node, ir.Binary):
            a, b = rewrite(node.a, replace), rewrite(node.b, replace)
            return _folded(node.op, a, b)
        return None

    result: ir.Stmt = rewrite(body, replace)
    return result


def _folded(op: ir.BinOp, a: ir.Expr, b: ir.Expr) -> ir.Expr:
    """``a op b``, as one constant where both are (spill.constant_lanes
    evaluates it), and without an added 0."""
    e = ir.Binary(op, a, b)
    value = constant_lanes(e) if e.type == ir.INT32 else None
    if value is not None and -(1 << 31) <= value[0] < (1 << 31):
        return ir.IntImm(value[0], e.type)
    if op is ir.BinOp.ADD and isinstance(b, ir.IntImm) and b.value == 0:
        return a
    if op is ir.BinOp.ADD and isinstance(a, ir.IntImm) and a.value == 0:
        return b
    return e
