"""Placing temporaries (operands copied into VNNI order, Toeplitz blocks of
a convolution kernel) as allocations.

Invariant established: every temporary that the rewritten IR names is
allocated and filled exactly once before each of its uses, at the
outermost statement where everything it reads is defined and not written
again. Control flow (if, fork, atomic, acquire) is never crossed, nor a
gpu_block loop; uses that no single such statement covers get a copy each.
"""

from __future__ import annotations

from hardboiled import ir
from hardboiled.ir.visitor import map_all_exprs, map_stmt
from hardboiled.legalize.common import LegalizationError, path_to_uses, uses_variable
from hardboiled.select.reinsert import Temporary
from hardboiled.support.diagnostics import Diagnostic

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


def written_inside(node: ir.Stmt) -> set[str]:
    """Buffers written or (re)allocated anywhere inside ``node``."""
    names: set[str] = set()
    for n in ir.walk(node):
        if isinstance(n, (ir.Store, ir.Allocate, ir.Free)):
            names.add(n.name)
        elif isinstance(n, ir.ProducerConsumer) and n.is_producer:
            names.add(n.name)
    return names


def place_temporaries(stmt: ir.Stmt, temporaries: list[Temporary]) -> ir.Stmt:
    """Allocate and fill each temporary right before the outermost statement
    that contains all its uses, inside which nothing it reads is written,
    and above which every variable it reads is bound. Uses that no single
    such statement covers (branches of an `if`, two loops) get a copy each."""
    bound_anywhere = {name for node in ir.walk(stmt) if isinstance(node, ir.Stmt) for name in _binds(node)}
    pending = list(temporaries)
    while pending:
        temp = pending.pop(0)
        path = path_to_uses(stmt, temp.name)
        if path is None:
            continue
        free = {n.name for n in ir.walk(temp.value) if isinstance(n, ir.Variable)}
        reads = {n.name for n in ir.walk(temp.value) if isinstance(n, ir.Load)}
        position = _choose_position(path, free & bound_anywhere, reads)
        if position is None:
            stmt, copies = _split_uses(stmt, path[-1], temp)
            pending[:0] = copies
            continue
        stmt = _allocate_before(stmt, path[position], temp)
    return stmt


def _allocate_before(stmt: ir.Stmt, target: ir.Stmt, temp: Temporary) -> ir.Stmt:
    """``stmt`` with ``temp`` allocated and filled right before ``target``."""
    return map_stmt(stmt, lambda node: _allocate(temp, node) if node is target else None)


def _choose_position(path: list[ir.Stmt], needed: set[str], reads: set[str]) -> int | None:
    """Index in ``path`` of the statement to put the temporary before, or
    None if none qualifies (then each branch of the last one gets a copy)."""
    first = 0
    for i, node in enumerate(path):
        if isinstance(node, _BARRIERS) or _is_kernel_loop(node):
            first = i + 1
    kernels_below = any(isinstance(n, ir.Stmt) and _is_kernel_loop(n) for n in ir.walk(path[-1]))
    if not any(_is_kernel_loop(n) for n in path) and kernels_below:
        return None  # used by kernels, but no single kernel holds every use: one copy per kernel
    bound_above: set[str] = set()
    for i, node in enumerate(path):
        if i >= first and needed <= bound_above and not (reads & written_inside(node)):
            return i
        bound_above |= _binds(node)
    return None


def _split_uses(stmt: ir.Stmt, holder: ir.Stmt, temp: Temporary) -> tuple[ir.Stmt, list[Temporary]]:
    """Give each child of ``holder`` that uses ``temp`` its own copy."""
    copies: list[Temporary] = []
    renamed: dict[int, ir.Stmt] = {}
    for child in ir.children(holder):
        if isinstance(child, ir.Stmt) and uses_variable(child, temp.name):
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

    return map_all_exprs(stmt, rename)


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
