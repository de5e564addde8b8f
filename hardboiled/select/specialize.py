"""Tiles that Halide guards at an output's edge, specialized into steady and edge versions.

A GuardWithIf tail on a consumer makes Halide size a producer computed
inside the tile by expressions of the tile loops' variables::

    allocate mm[int32 * (max(yo*16, 24) + -8) * mm.x.extent_realized] in AMXTile
    for (mm.s1.x.cx, 0, (87 - max(xo*32, 40))/16) { ... }
    if (likely(xo <= 1)) { whole tiles } else { the partial tile }

Selection needs an accumulator of one shape at fixed offsets. Halide's own
loop partitioning (a stage after the one hardboiled reads) separates such
a loop's steady state from its edges; this pass does the same, inside the
loops that enclose accelerator memory:

* a loop of constant bounds whose body tests ``likely(v <= c)`` (or ``<``,
  ``>``, ``>=``) of its own variable gets its body once per part of its
  range, ``if (v <= c) {steady} else {edge}``, so that no loop is cut (a
  GPU block loop stays one launch);
* in each version, an integer expression of the enclosing loops' variables
  and constants is replaced by the affine expression equal to it at every
  point of their ranges (checked point by point, so the rewrite is exact),
  and a condition that is constant on them is decided;
* an accelerator allocation inside a version other than the first is
  renamed (``mm.edge.1``), so that each buffer has one shape;
* an access of accelerator memory whose rows a version made follow one
  another (its row stride, ``max(yo*16, 20) + -4``, became 16, the row's
  width) is the one dense ramp Halide prints for such a stride.

A version where nothing became simpler is not made: the loop stays as it
was. So is a loop whose ranges are too large to check point by point.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from hardboiled import ir
from hardboiled.ir import operations
from hardboiled.ir.visitor import rewrite
from hardboiled.select.compact import compacted
from hardboiled.select.exhaustive import Ranges, decided, depends_only_on, simplified
from hardboiled.select.extract import iter_stores

EDGE = ".edge."
"""Infix of the name of an accumulator's edge copy (``mm.edge.1``)."""

_COMPARISONS = {ir.BinOp.LT, ir.BinOp.LE, ir.BinOp.GT, ir.BinOp.GE}


def specialize_edge_tiles(stmt: ir.Stmt, buffers: set[str], store_lines: tuple[int, ...] = ()
                          ) -> tuple[ir.Stmt, dict[str, str], tuple[int, ...]]:
    """``stmt`` with the loops around ``buffers``' allocations specialized,
    the renamed copies of those allocations (new name -> original), and
    the source line of each store (in pre-order) from ``store_lines``."""
    specializer = _Specializer(buffers, {id(s): p for p, s in enumerate(iter_stores(stmt))})

    def replace(node: ir.Node) -> ir.Node | None:
        if isinstance(node, ir.For) and _encloses(node, buffers) and any(
                _cut_points(n) for n in ir.walk(node) if isinstance(n, ir.For) and _encloses(n, buffers)):
            return specializer.loop(node, {}, {})
        return None

    result = rewrite(stmt, replace, (ir.Stmt,))
    if result is stmt:
        return stmt, {}, store_lines
    result = _dense_rows_flat(result, buffers | set(specializer.renamed), specializer)
    origins = [specializer.origin(s) for s in iter_stores(result)]
    lines = tuple(store_lines[o] for o in origins if o is not None and o < len(store_lines))
    return result, specializer.renamed, lines if len(lines) == len(origins) else ()


def _dense_rows_flat(stmt: ir.Stmt, buffers: set[str], specializer: _Specializer) -> ir.Stmt:
    """``stmt`` with every access of ``buffers`` at rows that follow one
    another, ``ramp(ramp(b, s, n), xn(s*n), m)`` (a row stride that became
    the row's width once a version fixed it), as the one ramp it is,
    ``ramp(b, s, n*m)``: the form Halide prints for a constant stride, and
    the one every other statement of the accumulator has."""
    def flat(index: ir.Expr) -> ir.Expr:
        if isinstance(index, ir.Ramp) and isinstance(index.base, ir.Ramp) \
                and isinstance(index.base.stride, ir.IntImm) and isinstance(index.stride, ir.Broadcast) \
                and index.stride.value == ir.IntImm(index.base.stride.value * index.base.lanes):
            return ir.Ramp(index.base.base, index.base.stride, index.base.lanes * index.lanes)
        return index

    def load(node: ir.Node) -> ir.Node | None:
        if isinstance(node, ir.Load) and node.name in buffers and flat(node.index) is not node.index:
            return dataclasses.replace(node, index=flat(node.index))
        return None

    def store(node: ir.Node) -> ir.Node | None:
        if not isinstance(node, ir.Store):
            return None
        value = rewrite(node.value, load, (ir.Expr,))
        index = flat(node.index) if node.name in buffers else node.index
        if value is node.value and index is node.index:
            return node
        return specializer.made_from(dataclasses.replace(node, value=value, index=index), node)

    return rewrite(stmt, store, (ir.Stmt,))


def _encloses(loop: ir.For, buffers: set[str]) -> bool:
    return any(isinstance(n, ir.Allocate) and n.name in buffers for n in ir.walk(loop.body))


def _constant(e: ir.Expr) -> int | None:
    return e.value if isinstance(e, ir.IntImm) else None


def _cut_points(loop: ir.For) -> list[int]:
    """The last value of each part of the loop's range that a ``likely`` test
    of its variable separates, in order."""
    low, extent = _constant(loop.min), _constant(loop.extent)
    if low is None or extent is None or extent < 2:
        return []
    high = low + extent - 1
    cuts = set()
    for node in ir.walk(loop.body):
        if isinstance(node, ir.Call) and node.name in _BRANCH_HINTS and node.args:
            cut = _threshold(node.args[0], loop.name)
            if cut is not None and low <= cut < high:
                cuts.add(cut)
    return sorted(cuts)


_BRANCH_HINTS = (operations.LIKELY.name, operations.LIKELY_IF_INNERMOST.name)
"""Halide's marks on the branch of a partitionable loop that is taken most."""


def _threshold(condition: ir.Expr, name: str) -> int | None:
    """c where ``condition`` is v <= c (or an equivalent comparison of v
    with a constant) turns from true to false, or the reverse."""
    if not (isinstance(condition, ir.Binary) and condition.op in _COMPARISONS):
        return None
    a, b, op = condition.a, condition.b, condition.op
    if isinstance(b, ir.Variable) and b.name == name:  # c op v: mirrored
        a, b = b, a
        op = {ir.BinOp.LT: ir.BinOp.GT, ir.BinOp.LE: ir.BinOp.GE,
              ir.BinOp.GT: ir.BinOp.LT, ir.BinOp.GE: ir.BinOp.LE}[op]
    c = _constant(b)
    if not (isinstance(a, ir.Variable) and a.name == name) or c is None:
        return None
    return {ir.BinOp.LE: c, ir.BinOp.LT: c - 1, ir.BinOp.GT: c, ir.BinOp.GE: c - 1}[op]


class _Specializer:
    def __init__(self, buffers: set[str], positions: dict[int, int]):
        self.buffers = buffers
        self.renamed: dict[str, str] = {}
        self.positions = positions
        """id of each store -> the position of the input's store it comes from"""
        self.made: list[ir.Stmt] = []  # the stores in ``positions``, kept alive so their ids stay theirs
        self.pending: list[tuple[str, list[tuple[int, int]]]] = []
        """Outer GPU block loops' parts, specialized in the innermost block loop."""

    def loop(self, loop: ir.For, ranges: Ranges, known: dict[str, ir.Expr]) -> ir.Stmt:
        low = _constant(loop.min)
        extent = _constant(loop.extent)
        if low is None or extent is None or extent < 1:
            return dataclasses.replace(loop, body=self.stmt(loop.body, ranges, known))
        whole = (low, low + extent - 1)
        parts = _parts(*whole, _cut_points(loop) if _encloses(loop, self.buffers) else [])
        inner = {**ranges, loop.name: whole}
        if loop.kind is ir.ForKind.GPU_BLOCK and any(
                isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_BLOCK for n in ir.walk(loop.body)):
            # the block loops of one launch stay directly nested: the versions
            # go inside the innermost one, which tests this variable too
            self.pending.append((loop.name, parts))
            try:
                return dataclasses.replace(loop, body=self.stmt(loop.body, inner, known))
            finally:
                self.pending.remove((loop.name, parts))
        splits = [(name, p) for name, p in [*self.pending, (loop.name, parts)] if len(p) > 1]
        saved, self.pending = self.pending, []
        try:
            body = self._versions(loop.body, splits, inner, known)
        finally:
            self.pending = saved
        return dataclasses.replace(loop, body=self._renamed_copies(body) if splits else body)

    def _versions(self, body: ir.Stmt, splits: list[tuple[str, list[tuple[int, int]]]], ranges: Ranges,
                  known: dict[str, ir.Expr]) -> ir.Stmt:
        """``body`` once per combination of the splits' parts, chosen by
        ``if (v <= last)`` tests; one version where the parts do not differ."""
        if not splits:
            return self.stmt(body, ranges, known)
        (name, parts), rest = splits[0], splits[1:]
        versions = [self._versions(body, rest, {**ranges, name: part}, known) for part in parts]
        if all(v == versions[0] for v in versions):
            return self._versions(body, rest, ranges, known)
        chosen = versions[-1]
        for (_, last), version in zip(reversed(parts[:-1]), reversed(versions[:-1])):
            chosen = ir.IfThenElse(ir.Binary(ir.BinOp.LE, ir.Variable(name), ir.IntImm(last)), version, chosen)
        return chosen

    def origin(self, store: ir.Stmt) -> int | None:
        return self.positions.get(id(store))

    def made_from(self, new: ir.Stmt, old: ir.Stmt) -> ir.Stmt:
        if new is not old and id(old) in self.positions:
            self.positions[id(new)] = self.positions[id(old)]
            self.made.append(new)
        return new

    def _renamed_copies(self, body: ir.Stmt) -> ir.Stmt:
        """Every accelerator allocation after the first of its name renamed
        (nested ones too: the copy of a tile holding a second accumulator)."""
        seen: set[str] = set()
        copies: set[int] = set()
        for node in ir.walk(body):
            if isinstance(node, ir.Allocate) and node.name in self.buffers:
                if node.name in seen:
                    copies.add(id(node))
                seen.add(node.name)

        def rename(node: ir.Node) -> ir.Node | None:
            if not (isinstance(node, ir.Allocate) and id(node) in copies):
                return None
            new = f"{node.name}{EDGE}{sum(o == node.name for o in self.renamed.values()) + 1}"
            self.renamed[new] = node.name
            inner = dataclasses.replace(node, body=rewrite(node.body, rename, (ir.Stmt,)))
            return self._with_buffer_renamed(inner, node.name, new)

        return rewrite(body, rename, (ir.Stmt,))

    def _with_buffer_renamed(self, node: ir.Node, old: str, new: str) -> ir.Node:
        def rename(n: ir.Node) -> ir.Node | None:
            if isinstance(n, (ir.Allocate, ir.Store, ir.Load, ir.Free, ir.ProducerConsumer)):
                changes: dict[str, Any] = {f.name: self._with_buffer_renamed(getattr(n, f.name), old, new)
                                           for f in dataclasses.fields(n)
                                           if isinstance(getattr(n, f.name), (ir.Stmt, ir.Expr))}
                if n.name == old:
                    changes["name"] = new
                renamed: Any = dataclasses.replace(n, **changes)
                return self.made_from(renamed, n) if isinstance(n, ir.Stmt) else renamed
            return None

        return rewrite(node, rename)

    def stmt(self, s: Any, ranges: Ranges, known: dict[str, ir.Expr]) -> ir.Stmt:
        if isinstance(s, ir.For):
            loop: Any = self._exprs(s, ranges, known)
            return self.loop(loop, ranges, known)
        if isinstance(s, ir.LetStmt):
            value = simplified(s.value, ranges, known)
            inner = {**known, s.name: value} if depends_only_on(value, ranges) else known
            return ir.LetStmt(s.name, value, self.stmt(s.body, ranges, inner))
        if isinstance(s, ir.IfThenElse):
            condition = simplified(s.condition, ranges, known)
            outcome = decided(condition, ranges, known)
            if outcome is True:
                return self.stmt(s.then_case, ranges, known)
            if outcome is False:
                return self.stmt(s.else_case, ranges, known) if s.else_case is not None else ir.NoOp()
            return ir.IfThenElse(condition, self.stmt(s.then_case, ranges, known),
                                 None if s.else_case is None else self.stmt(s.else_case, ranges, known))
        original = s
        s = self._exprs(s, ranges, known)
        changes: dict[str, Any] = {f.name: self.stmt(getattr(s, f.name), ranges, known)
                                   for f in dataclasses.fields(s) if isinstance(getattr(s, f.name), ir.Stmt)}
        if isinstance(s, ir.Block):
            changes["stmts"] = tuple(self.stmt(x, ranges, known) for x in s.stmts)
        result = self.made_from(dataclasses.replace(s, **changes) if changes else s, original)
        if isinstance(result, ir.Allocate) and result.name in self.buffers:
            return compacted(result, ranges, known, self.made_from)
        return result

    @staticmethod
    def _exprs(s: Any, ranges: Ranges, known: dict[str, ir.Expr]) -> Any:
        changes: dict[str, object] = {}
        for f in dataclasses.fields(s):
            value = getattr(s, f.name)
            if isinstance(value, ir.Expr):
                changes[f.name] = simplified(value, ranges, known)
            elif isinstance(value, tuple) and value and all(isinstance(x, ir.Expr) for x in value):
                changes[f.name] = tuple(simplified(x, ranges, known) for x in value)
        return dataclasses.replace(s, **changes) if changes else s


def _parts(low: int, high: int, cuts: list[int]) -> list[tuple[int, int]]:
    bounds = [low - 1, *cuts, high]
    return [(a + 1, b) for a, b in itertools.pairwise(bounds)]
