"""Placing temporaries (operands copied into VNNI order, Toeplitz blocks of
a convolution kernel) as allocations.

Invariant established: every temporary that the rewritten IR names is
allocated and filled exactly once before each of its uses, at the
outermost statement where everything it reads is defined and not written
again. Control flow (if, fork, atomic, acquire) is never crossed, nor a
gpu_block loop; uses that no single such statement covers get a copy each.
"""

from __future__ import annotations

from collections.abc import Callable

from hardboiled import ir
from hardboiled.ir.visitor import map_all_exprs, map_stmt
from hardboiled.legalize.common import LegalizationError, path_to_uses
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
    return {name for n in ir.walk(node) for name in _own_writes(n)}


class _Subtrees:
    """What each statement of one tree holds, computed once bottom-up, so
    that placing many temporaries stays linear in the tree's size: which of
    the temporaries it uses, what it writes, which names it binds (a let,
    a loop), whether a kernel loop is in it."""

    def __init__(self, stmt: ir.Stmt, names: set[str]):
        self.uses: dict[int, frozenset[str]] = {}
        self.writes: dict[int, frozenset[str]] = {}
        self.binds: dict[int, frozenset[str]] = {}
        self.kernels: dict[int, bool] = {}
        self.guarded: dict[int, frozenset[str]] = {}
        """The temporaries used under an `if` in the node (the node included)."""
        self._trees: list[ir.Stmt] = []
        """Every tree analysed: kept, so that no node's id is another's."""
        self.extend(stmt, names)

    def extend(self, stmt: ir.Stmt, names: set[str]) -> None:
        """Analyse the nodes of ``stmt`` not analysed yet: a tree rebuilt
        from an analysed one (a temporary placed, another split into
        copies) keeps its unchanged subtrees, and only the rebuilt nodes
        are new. ``names`` may add only new names (the copies'), which no
        analysed node uses."""
        self._trees.append(stmt)
        # Statements only: an expression writes, binds and guards nothing,
        # so what a statement's own expressions use is all they add (walked
        # with it, not analysed node by node: three in four nodes are
        # expressions).
        pending: list[tuple[ir.Stmt, bool]] = [(stmt, False)]
        while pending:  # children before parents
            node, kids_done = pending.pop()
            if id(node) in self.uses:
                continue
            found = ir.children(node)
            kids = [kid for kid in found if isinstance(kid, ir.Stmt)]
            if not kids_done:
                pending.append((node, True))
                pending.extend((kid, False) for kid in kids if id(kid) not in self.uses)
                continue
            used = {n.name for kid in found if isinstance(kid, ir.Expr)
                    for n in ir.walk(kid) if isinstance(n, ir.Variable) and n.name in names}
            written = set(_own_writes(node))
            bound = _binds(node)
            for kid in kids:
                used |= self.uses[id(kid)]
                written |= self.writes[id(kid)]
                bound |= self.binds[id(kid)]
            self.uses[id(node)] = frozenset(used)
            self.writes[id(node)] = frozenset(written)
            self.binds[id(node)] = frozenset(bound)
            self.kernels[id(node)] = _is_kernel_loop(node) or any(self.kernels[id(kid)] for kid in kids)
            self.guarded[id(node)] = self.uses[id(node)] if isinstance(node, ir.IfThenElse) else frozenset(
                name for kid in kids for name in self.guarded[id(kid)])

    def holds(self, node: ir.Stmt, name: str) -> bool:
        """Whether ``node`` uses temporary ``name`` (``common.path_to_uses``'s
        question, answered from the analysis instead of a walk)."""
        return name in self.uses[id(node)]


def _own_writes(node: ir.Node) -> tuple[str, ...]:
    if isinstance(node, (ir.Store, ir.Allocate, ir.Free)):
        return (node.name,)
    if isinstance(node, ir.ProducerConsumer) and node.is_producer:
        return (node.name,)
    return ()


def place_temporaries(stmt: ir.Stmt, temporaries: list[Temporary]) -> ir.Stmt:
    """Allocate and fill each temporary right before the outermost statement
    that contains all its uses, inside which nothing it reads is written
    and no variable it reads is bound again, and above which every variable
    it reads is bound. Uses that no single
    such statement covers (branches of an `if`, two loops), or that lie
    under an `if` below it (whose condition may keep the fill's reads in
    bounds), get a copy each.

    Placements are found on one analysis of the tree and made in one
    rebuild; only a temporary that must be split into copies rebuilds the
    tree (and the analysis) on its own."""
    bound_anywhere = {name for node in ir.walk(stmt) if isinstance(node, ir.Stmt) for name in _binds(node)}
    pending = list(temporaries)
    placed: dict[int, list[Temporary]] = {}
    subtrees = _Subtrees(stmt, {t.name for t in pending})
    while pending:
        temp = pending.pop(0)
        path = path_to_uses(stmt, temp.name, subtrees.holds)
        if path is None:
            continue
        free = {n.name for n in ir.walk(temp.value) if isinstance(n, ir.Variable)}
        reads = {n.name for n in ir.walk(temp.value) if isinstance(n, ir.Load)}
        # Uses under an `if` below every place the fill could go: its condition
        # may be what keeps the fill's reads in bounds (a reduction's last,
        # shorter chunk), so each use gets a copy, filled under its own `if`.
        guarded = any(temp.name in subtrees.guarded[id(kid)] for kid in ir.children(path[-1])
                      if isinstance(kid, ir.Stmt))
        position = None if guarded else _choose_position(path, free & bound_anywhere, reads, subtrees)
        if position is not None:
            placed.setdefault(id(path[position]), []).append(temp)
            continue
        stmt = _allocate_all(stmt, placed)
        placed = {}
        subtrees.extend(stmt, {temp.name} | {t.name for t in pending})
        stmt, copies = _split_uses(stmt, temp, subtrees.holds)
        pending[:0] = copies
        subtrees.extend(stmt, {t.name for t in pending})
    return _allocate_all(stmt, placed)


def _allocate_all(stmt: ir.Stmt, placed: dict[int, list[Temporary]]) -> ir.Stmt:
    """``stmt`` with each temporary of ``placed`` allocated and filled right
    before the statement it is keyed by; several before one statement nest
    in order, the first innermost."""
    if not placed:
        return stmt

    def wrap(node: ir.Stmt) -> ir.Stmt | None:
        temps = placed.get(id(node))
        if temps is None:
            return None
        # A replaced statement is not looked into: place what goes inside it first.
        node = _allocate_all(node, {key: value for key, value in placed.items() if key != id(node)})
        for temp in temps:
            node = _allocate(temp, node)
        return node

    return map_stmt(stmt, wrap)


def _choose_position(path: list[ir.Stmt], needed: set[str], reads: set[str], subtrees: _Subtrees) -> int | None:
    """Index in ``path`` of the statement to put the temporary before, or
    None if none qualifies (then each branch of the last one gets a copy)."""
    first = 0
    for i, node in enumerate(path):
        if isinstance(node, _BARRIERS) or _is_kernel_loop(node):
            first = i + 1
    kernels_below = subtrees.kernels[id(path[-1])]
    if not any(_is_kernel_loop(n) for n in path) and kernels_below:
        return None  # used by kernels, but no single kernel holds every use: one copy per kernel
    bound_above: set[str] = set()
    for i, node in enumerate(path):
        # A name the temporary reads bound again inside (Halide rebinds
        # `let mm.s0.x.xi.base` before each tile's statement) would give the
        # uses under it other values than the fill saw: go deeper.
        if i >= first and needed <= bound_above and not (reads & subtrees.writes[id(node)]) \
                and not (needed & subtrees.binds[id(node)]):
            return i
        bound_above |= _binds(node)
    return None


def _split_uses(stmt: ir.Stmt, temp: Temporary, uses: Callable[[ir.Stmt, str], bool],
                ) -> tuple[ir.Stmt, list[Temporary]]:
    """Give each child of the smallest statement holding every use of
    ``temp`` (``uses`` answers which hold one) its own copy."""
    path = path_to_uses(stmt, temp.name, uses)
    assert path is not None
    holder = path[-1]
    copies: list[Temporary] = []
    renamed: dict[int, ir.Stmt] = {}
    for child in ir.children(holder):
        if isinstance(child, ir.Stmt) and uses(child, temp.name):
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
