"""Loading each operand fragment once (a GPU speed decision).

Invariant established: within the warp-wide WMMA lane loops of a kernel,
no A or B operand fragment is loaded twice from the same address while
that memory is unchanged; a fragment used more than once is loaded into a
``let`` (``wmma.a.N``, ``wmma.b.N``) that its uses read.

Two steps:

* neighbouring WMMA lane loops (same loop, one after the other) become
  one: every lane runs every statement of both, so nothing else changes,
  and the statements of a block of tiles then share one straight stretch
  of code (a 4 x 4 block of output tiles loads 4 A and 4 B fragments per
  reduction step, not 16 of each);
* in each stretch of statements, a load of A or B whose equal (the same
  intrinsic, buffer, offset and leading dimension) comes later, with no
  fragment store or staging copy writing that buffer in between, is bound
  to a let before the statement that first uses it. A loop, an ``if``, an
  allocation or a let ends the stretch.

The fragments a let holds are the values the loads would return, so the
program computes the same (the interpreter binds the whole fragment).
"""

from __future__ import annotations

import dataclasses

from hardboiled import ir
from hardboiled.ir.visitor import map_expr, map_stmt, rewrite
from hardboiled.legalize.gpu_mapping import is_stage_copy, is_wmma_lane_loop
from hardboiled.targets.wmma import MatrixUse, WMMAOp, wmma_intrinsic


def reuse_operand_fragments(stmt: ir.Stmt) -> ir.Stmt:
    """Join neighbouring WMMA lane loops, then load every repeated operand
    fragment once per stretch (module docstring)."""
    names = _NameSource(stmt)
    joined = map_stmt(stmt, _join_lane_loops)

    def visit(node: ir.Stmt) -> ir.Stmt | None:
        if is_wmma_lane_loop(node):
            assert isinstance(node, ir.For)
            return dataclasses.replace(node, body=_reuse_in(node.body, names))
        return None

    return map_stmt(joined, visit)


def _statements(s: ir.Stmt) -> tuple[ir.Stmt, ...]:
    return s.stmts if isinstance(s, ir.Block) else (s,)


def _joins(first: ir.Stmt, second: ir.Stmt) -> bool:
    """Whether two neighbouring statements are the same WMMA lane loop."""
    return (is_wmma_lane_loop(first) and is_wmma_lane_loop(second)
            and isinstance(first, ir.For) and isinstance(second, ir.For)
            and (first.name, first.min, first.extent) == (second.name, second.min, second.extent))


def _join_lane_loops(node: ir.Stmt) -> ir.Stmt | None:
    if not isinstance(node, ir.Block):
        return None
    runs: list[ir.Stmt] = []
    for child in node.stmts:
        child = map_stmt(child, _join_lane_loops)
        previous = runs[-1] if runs else None
        if previous is not None and _joins(previous, child):
            assert isinstance(previous, ir.For) and isinstance(child, ir.For)
            runs[-1] = dataclasses.replace(
                previous, body=ir.make_block([*_statements(previous.body), *_statements(child.body)]))
        else:
            runs.append(child)
    return ir.make_block(runs)


class _NameSource:
    """Hands out ``wmma.a.N`` / ``wmma.b.N`` names the program does not use."""

    def __init__(self, stmt: ir.Stmt):
        self.taken = {n.name for n in ir.walk(stmt) if isinstance(n, (ir.LetStmt, ir.Let, ir.Variable))}
        self.next = 0

    def __call__(self, matrix: MatrixUse) -> str:
        while True:
            name = f"wmma.{matrix.value}.{self.next}"
            self.next += 1
            if name not in self.taken:
                self.taken.add(name)
                return name


def _operand_load(e: ir.Expr) -> ir.Call | None:
    """``e`` if it is a wmma.load of an A or B fragment."""
    intrinsic = wmma_intrinsic(e)
    if intrinsic is None or intrinsic.op is not WMMAOp.LOAD or intrinsic.matrix is MatrixUse.C:
        return None
    assert isinstance(e, ir.Call)
    return e


def _loads_in(s: ir.Stmt) -> list[ir.Call]:
    """The A and B loads of a statement, in the order they are evaluated
    (operands left to right, outer before inner)."""
    found = []
    for node in ir.walk(s):
        if isinstance(node, ir.Expr) and (load := _operand_load(node)) is not None:
            found.append(load)
    return found


def _written_buffer(s: ir.Stmt) -> str | None:
    """The memory a statement of a lane loop writes that operands may be
    loaded from: a fragment stored to memory, or a staging copy's target."""
    if isinstance(s, ir.Evaluate) and isinstance(s.value, ir.Call) and (intrinsic := wmma_intrinsic(s.value)):
        pointer = s.value.args[0]
        if intrinsic.op is WMMAOp.STORE and isinstance(pointer, ir.Variable):
            return pointer.name
    if isinstance(s, ir.Store) and is_stage_copy(s):
        return s.name
    return None


def _pointer(load: ir.Call) -> str:
    pointer = load.args[0]
    return pointer.name if isinstance(pointer, ir.Variable) else ""


_ENDS_STRETCH = (ir.For, ir.Allocate, ir.IfThenElse, ir.LetStmt)
"""Statements that open a scope: a stretch of shared loads ends at them,
and their insides are stretches of their own."""


def _reuse_in(body: ir.Stmt, name_for: _NameSource) -> ir.Stmt:
    """The lane loop body with repeated operand loads bound to lets."""
    stretch: list[ir.Stmt] = []
    out: list[ir.Stmt] = []
    for s in _flattened(body):
        if isinstance(s, _ENDS_STRETCH):
            out.extend(_bind_repeated(stretch, name_for))
            stretch = []
            out.append(_with_stretches_inside(s, name_for))
        else:
            stretch.append(s)
    out.extend(_bind_repeated(stretch, name_for))
    return ir.make_block(out)


def _with_stretches_inside(scope: ir.Stmt, name_for: _NameSource) -> ir.Stmt:
    """A scope statement whose bodies are each a stretch of their own."""

    def inner(node: ir.Stmt) -> ir.Stmt | None:
        if node is scope or isinstance(node, _ENDS_STRETCH):
            return None
        return _reuse_in(node, name_for)

    return map_stmt(scope, inner)


def _flattened(s: ir.Stmt) -> list[ir.Stmt]:
    """The statements of a stretch: a block opens no scope in the generated
    code, so it is looked through."""
    if isinstance(s, ir.Block):
        return [t for child in s.stmts for t in _flattened(child)]
    return [s]


def _bind_repeated(stretch: list[ir.Stmt], name_for: _NameSource) -> list[ir.Stmt]:
    """``stretch`` with each operand load that repeats before its memory is
    written bound to a let placed before its first use."""
    if not stretch:
        return []
    first_use: dict[ir.Call, int] = {}
    uses: dict[ir.Call, int] = {}
    shared: list[tuple[int, ir.Call]] = []
    for position, s in enumerate(stretch):
        for load in _loads_in(s):
            if load in first_use:
                uses[load] += 1
                if uses[load] == 2:
                    shared.append((first_use[load], load))
            else:
                first_use[load] = position
                uses[load] = 1
        written = _written_buffer(s)
        if written is not None:
            for load in [load for load in first_use if _pointer(load) == written]:
                del first_use[load]
    if not shared:
        return stretch
    return _with_lets(stretch, shared, name_for)


def _with_lets(stretch: list[ir.Stmt], shared: list[tuple[int, ir.Call]], name_for: _NameSource) -> list[ir.Stmt]:
    """The stretch with a let before the first use of each shared load, and
    every use of it (until its memory is written) reading the let."""
    lets: dict[int, list[tuple[str, ir.Call]]] = {}
    for position, load in sorted(shared, key=lambda item: item[0]):
        intrinsic = wmma_intrinsic(load)
        assert intrinsic is not None and intrinsic.matrix is not None
        lets.setdefault(position, []).append((name_for(intrinsic.matrix), load))
    live: dict[ir.Call, ir.Variable] = {}
    rewritten: list[tuple[list[tuple[str, ir.Call]], ir.Stmt]] = []
    for position, s in enumerate(stretch):
        for name, load in lets.get(position, []):
            live[load] = ir.Variable(name, load.type)
        current = dict(live)
        rewritten.append((lets.get(position, []), _reading(s, current)))
        written = _written_buffer(s)
        if written is not None:
            for load in [load for load in live if _pointer(load) == written]:
                del live[load]
    out: ir.Stmt | None = None
    for own_lets, s in reversed(rewritten):
        rest = s if out is None else ir.make_block([s, out])
        for name, load in reversed(own_lets):
            rest = ir.LetStmt(name, load, rest)
        out = rest
    assert out is not None
    return [out]


def _reading(s: ir.Stmt, live: dict[ir.Call, ir.Variable]) -> ir.Stmt:
    """``s`` with every load that a let holds read from the let."""
    if not live:
        return s

    def expressions(node: object) -> object:
        if isinstance(node, ir.Stmt):
            return None
        assert isinstance(node, ir.Expr)
        return map_expr(node, lambda e: live.get(e) if isinstance(e, ir.Call) else None)

    result: ir.Stmt = rewrite(s, expressions)
    return result
