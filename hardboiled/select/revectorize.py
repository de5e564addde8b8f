"""Scalar loop nests that update accelerator memory, put back as one vector statement.

A tile or fragment instruction is selected from one vector statement that
covers the whole tile (``mm[ramp(0, 1, 256)] = vector_reduce_add(A * B) +
mm[ramp(0, 1, 256)]``). Halide does not always vectorize an atomic update:
the remainder of a reduction split (K = 48 in chunks of 32), an accumulator
stored transposed (``mm(x, y)`` with y vectorized), a guarded partial tile,
several tiles side by side. It then leaves a nest of serial loops around a
scalar update::

    for (xi, 0, 16) { for (yi, 0, 16) { for (r, 0, 32) { if (r <= 15) {
      mm[xi*16 + yi] = mm[xi*16 + yi] + float32(A[...])*float32(B[...]) }}}}

That nest computes what one vector statement computes, provided its
iterations are independent, which ``atomic()`` asserted to Halide: the loops
whose variables index the store become lanes of the stored vector, the
others (reduction variables) lanes that ``vector_reduce_add`` sums, a guard
``v <= c`` on a loop variable shortens its loop, and lets are inlined. The
lanes are ordered as the rules read a tile: the store's variables from the
largest stride to the smallest (so the store is dense where the buffer is),
then the reduction variables; every access becomes nested ramps and
broadcasts of its linear index. Accumulating a reduction's lanes in another
order reassociates a sum, as Halide's own vectorization of the same update
does; verification bounds the difference.

Anything the rewrite cannot state exactly (an index that is not linear in
the loop variables, a store whose lanes would collide, another read of the
accumulator, a guard that is not a constant bound) leaves the nest as it
is, and selection explains the miss.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from hardboiled import ir
from hardboiled.ir import operations
from hardboiled.ir.traversal import children
from hardboiled.ir.visitor import rewrite
from hardboiled.select.unflatten import Linear, linear_expression, linear_form


def _passes_through(e: ir.Expr) -> bool:
    """A hint or promise (``likely``, ``promise_clamped``): its value is its
    first argument (the operations table's pass-through calls)."""
    if not isinstance(e, ir.Call):
        return False
    operation = operations.find(e.name)
    return operation is not None and operation.kind is operations.Kind.PASS_THROUGH


def revectorize_scalar_updates(stmt: ir.Stmt, buffers: set[str]) -> ir.Stmt:
    """``stmt`` with each scalar loop nest that updates one of ``buffers``
    replaced by the equivalent vector statement, where one exists."""
    if not buffers:
        return stmt

    def replace(node: ir.Node) -> ir.Node | None:
        if isinstance(node, ir.For):
            return _vectorized_nest(node, buffers)
        if isinstance(node, ir.Store) and node.name in buffers:
            node = _without_hints(node)
            if isinstance(node.value, ir.Broadcast) and not node.value.value.type.is_vector:  # one value in every lane
                return _dense_fill(node) or node
            return node
        return None

    return rewrite(stmt, replace, (ir.Stmt,))


@dataclass(frozen=True)
class _Loop:
    name: str
    min: ir.Expr
    extent: int


@dataclass(frozen=True)
class _Plan:
    """A nest that has a vector form: its store (lets inlined), the loops
    whose variables index the store (largest stride first) and the others."""

    store: ir.Store
    index: ir.Expr
    value: ir.Expr
    stored: list[_Loop]
    reduced: list[_Loop]


def _vectorized_nest(loop: ir.For, buffers: set[str]) -> ir.Stmt | None:
    plan = _plan(loop, buffers)
    if plan is None:
        return None
    plan = _coalesced(plan)
    store, stored, reduced = plan.store, plan.stored, plan.reduced
    # the element read back is the one stored, once lets are inlined in both
    update = _split_update(plan.value, dataclasses.replace(store, index=plan.index))
    if update is None:
        return None
    self_load, rest = update
    if any(isinstance(n, ir.Load) and n.name == store.name for n in ir.walk(rest)):
        return None
    if self_load is None and reduced:
        return None  # a store without the accumulator in a reduction: the last write wins
    vector = _Vectorizer(stored + reduced, {lp.name for lp in stored + reduced})
    new_index = merged_ramps(vector.index(plan.index, stored))
    summed, factors = _factored(rest, {lp.name for lp in reduced}) if reduced else (rest, [])
    computed = vector.value(summed)
    if new_index is None or computed is None:
        return None
    out_type = store.value.type.with_lanes(_product(lp.extent for lp in stored))
    if reduced:
        computed = ir.VectorReduce(ir.ReduceOp.ADD, computed, out_type)
        per_output = _Vectorizer(stored, {lp.name for lp in stored})
        for factor in factors:
            scale = per_output.value(factor)
            if scale is None:
                return None
            computed = ir.Binary(ir.BinOp.MUL, computed, scale)
    if self_load is not None:
        computed = ir.Binary(ir.BinOp.ADD, computed, ir.Load(store.name, new_index, out_type))
    return ir.Store(store.name, computed, new_index)


def _plan(loop: ir.For, buffers: set[str]) -> _Plan | None:
    nest = _nest(loop)
    if nest is None:
        return None
    loops, lets, bounds, store = nest
    if not _scalar_store_into(store, buffers):
        return None
    loops = [_Loop(lp.name, lp.min, min(lp.extent, bounds.get(lp.name, lp.extent))) for lp in loops]
    index, value = (_inline(e, lets) for e in (store.index, store.value))
    linear = _linear_in(index, {lp.name for lp in loops})
    if linear is None or any(lp.extent < 1 for lp in loops):
        return None
    coefficient, _base = linear
    stored = sorted((lp for lp in loops if coefficient.get(lp.name)), key=lambda lp: -abs(coefficient[lp.name]))
    reduced = [lp for lp in loops if not coefficient.get(lp.name)]
    if not stored or loops[0] not in stored:
        return None  # a reduction loop outside every stored variable stays a loop
    lanes = _product(lp.extent for lp in loops)
    if not _distinct(stored, coefficient) or lanes > ir.MAX_LANES or lanes < 2:
        return None
    return _Plan(store, index, value, stored, reduced)


def _coalesced(plan: _Plan) -> _Plan:
    """``plan`` with each two neighbouring loops of its lane order that every
    access walks as one loop (a tile's columns split in two, ``cx * 4 + xi``,
    or a reduction split into chunks) fused into one. The rules read one
    lane level per matrix dimension; a dimension in two levels would match
    no layout. Fusing outer (extent e_o) into inner (e_i) is exact when the
    outer's coefficient in every index is e_i times the inner's: the index
    is then the inner's coefficient times one variable running over
    e_o * e_i values from the inner's min, with the outer at its min."""
    index, value = plan.index, plan.value
    groups = []
    for group in (list(plan.stored), list(plan.reduced)):
        i = 0
        while i + 1 < len(group):
            outer, inner = group[i], group[i + 1]
            if not _walked_as_one(outer, inner, index, value):
                i += 1
                continue
            at_min = _substituting(outer.name, outer.min)
            index, value = rewrite(index, at_min, (ir.Expr,)), rewrite(value, at_min, (ir.Expr,))
            group[i:i + 2] = [_Loop(inner.name, inner.min, outer.extent * inner.extent)]
        groups.append(group)
    stored, reduced = groups
    return _Plan(plan.store, index, value, stored, reduced)


def _walked_as_one(outer: _Loop, inner: _Loop, index: ir.Expr, value: ir.Expr) -> bool:
    """Whether the two loops' variables appear only in linear indices (the
    store's, loads') where the outer's coefficient is ``inner.extent``
    times the inner's."""
    names = {outer.name, inner.name}

    def alike(e: ir.Expr) -> bool:
        linear = _linear_in(e, names)
        return linear is not None and linear[0].get(outer.name, 0) == linear[0].get(inner.name, 0) * inner.extent

    def only_in_indices(node: ir.Node) -> bool:
        if isinstance(node, ir.Variable):
            return node.name not in names
        if isinstance(node, ir.Load):
            return alike(node.index) and (node.predicate is None or only_in_indices(node.predicate))
        return all(only_in_indices(child) for child in children(node))

    return alike(index) and only_in_indices(value)


def _scalar_store_into(store: ir.Store, buffers: set[str]) -> bool:
    return store.name in buffers and not store.value.type.is_vector and store.predicate is None


def _nest(loop: ir.For) -> tuple[list[_Loop], list[tuple[str, ir.Expr]], dict[str, int], ir.Store] | None:
    """The loops, lets and constant guards down to a single scalar store."""
    loops: list[_Loop] = []
    lets: list[tuple[str, ir.Expr]] = []
    bounds: dict[str, int] = {}
    node: ir.Stmt = loop
    while True:
        if isinstance(node, ir.For):
            if node.kind not in (ir.ForKind.SERIAL, ir.ForKind.UNROLLED) or not isinstance(node.extent, ir.IntImm):
                return None
            if any(n.name == lp.name for lp in loops for n in ir.walk(node.min) if isinstance(n, ir.Variable)):
                return None
            loops.append(_Loop(node.name, node.min, node.extent.value))
            node = node.body
        elif isinstance(node, ir.LetStmt) and not node.value.type.is_vector:
            lets.append((node.name, node.value))
            node = node.body
        elif isinstance(node, ir.IfThenElse) and node.else_case is None:
            bound = _constant_bound(_inline(node.condition, lets), loops)
            if bound is None:
                return None
            name, extent = bound
            bounds[name] = min(bounds.get(name, extent), extent)
            node = node.then_case
        elif isinstance(node, ir.Store):
            return (loops, lets, bounds, node) if loops else None
        else:
            return None


def _constant_bound(condition: ir.Expr, loops: list[_Loop]) -> tuple[str, int] | None:
    """``v <= c`` or ``v < c`` on a loop variable with a constant min: the
    number of its iterations that run."""
    if _passes_through(condition):
        condition = condition.args[0]  # type: ignore[attr-defined]
    if not (isinstance(condition, ir.Binary) and condition.op in (ir.BinOp.LE, ir.BinOp.LT)):
        return None
    var, limit = condition.a, condition.b
    loop = next((lp for lp in loops if isinstance(var, ir.Variable) and var.name == lp.name), None)
    if loop is None or not isinstance(limit, ir.IntImm) or not isinstance(loop.min, ir.IntImm):
        return None
    last = limit.value if condition.op is ir.BinOp.LE else limit.value - 1
    return loop.name, last - loop.min.value + 1


def _inline(e: ir.Expr, lets: list[tuple[str, ir.Expr]]) -> ir.Expr:
    for name, value in reversed(lets):
        e = rewrite(e, _substituting(name, value), (ir.Expr,))
    return e


def _substituting(name: str, value: ir.Expr) -> Callable[[ir.Node], ir.Node | None]:
    return lambda n: value if isinstance(n, ir.Variable) and n.name == name else None


def _linear_in(e: ir.Expr, names: set[str]) -> tuple[dict[str, int], Linear] | None:
    """``e`` as integer coefficients of the loop variables plus a linear form
    free of them; None when a loop variable appears in any other way."""
    linear = linear_form(e)
    if linear is None:
        return None
    coefficient: dict[str, int] = {}
    base: Linear = {}
    for term, c in linear.items():
        if isinstance(term, ir.Variable) and term.name in names:
            coefficient[term.name] = c
        elif term is not None and _reads_any(term, names):
            return None
        else:
            base[term] = c
    return coefficient, base


def _distinct(stored: list[_Loop], coefficient: dict[str, int]) -> bool:
    """Whether distinct iterations of the stored loops store distinct
    elements: each stride exceeds the span of the strides inside it."""
    span = 0
    for lp in reversed(stored):
        stride = abs(coefficient[lp.name])
        if stride <= span:
            return False
        span += stride * (lp.extent - 1)
    return True


def _without_hints(store: ir.Store) -> ir.Store:
    """``store`` without ``likely`` in what it computes: a hint to Halide's
    loop partitioning, which is over, around a value (a boundary condition's
    clamped read of an operand) that the rules must see."""
    if not any(_passes_through(n) for n in ir.walk(store.value) if isinstance(n, ir.Expr)):
        return store
    value = rewrite(store.value, lambda n: n.args[0] if _passes_through(n) else None, (ir.Expr,))
    return ir.Store(store.name, value, store.index, store.predicate, store.alignment)


def _dense_fill(store: ir.Store) -> ir.Store | None:
    """A constant stored in another order than the buffer's (an accumulator
    transposed, ``mm[ramp(ramp(0, 16, 16), x16(1), 16)] = x256(0)``) as the
    same constant stored to the same elements in order, when the index
    visits each element of one dense range once."""
    index, steps = store.index, []
    while isinstance(index, ir.Ramp):
        step = index.stride.value if isinstance(index.stride, ir.Broadcast) else index.stride
        if not isinstance(step, ir.IntImm) or step.value <= 0:
            return None
        steps.append((step.value, index.lanes))
        index = index.base
    if len(steps) < 2 or index.type.is_vector or store.predicate is not None:
        return None
    covered = 1
    for stride, lanes in sorted(steps):
        if stride != covered:
            return None
        covered *= lanes
    return ir.Store(store.name, store.value, ir.Ramp(index, ir.IntImm(1), covered))


def merged_ramps(index: ir.Expr | None) -> ir.Expr | None:
    """A nest of ramps that walks consecutive elements as one ramp, as Halide
    writes a whole tile: ramp(ramp(0, 1, 16), x16(16), 16) is ramp(0, 1, 256)."""
    if not isinstance(index, ir.Ramp):
        return index
    inner = merged_ramps(index.base)
    assert inner is not None
    if isinstance(inner, ir.Ramp) and not inner.base.type.is_vector and isinstance(inner.stride, ir.IntImm) \
            and isinstance(index.stride, ir.Broadcast) and isinstance(index.stride.value, ir.IntImm) \
            and index.stride.value.value == inner.stride.value * inner.lanes:
        return ir.Ramp(inner.base, inner.stride, inner.lanes * index.lanes)
    return ir.Ramp(inner, index.stride, index.lanes) if inner is not index.base else index


def _product(values: object) -> int:
    total = 1
    for v in values:  # type: ignore[attr-defined]
        total *= v
    return total


def _split_update(value: ir.Expr, store: ir.Store) -> tuple[ir.Load | None, ir.Expr] | None:
    """(the load of the stored element, the rest) of ``acc[i] + rest`` or
    ``rest + acc[i]``; (None, value) for a store that does not read it."""
    if isinstance(value, ir.Binary) and value.op is ir.BinOp.ADD:
        for mine, rest in ((value.a, value.b), (value.b, value.a)):
            if isinstance(mine, ir.Load) and mine.name == store.name and mine.index == store.index:
                return mine, rest
    return None, value


def _reads_any(e: ir.Expr, names: set[str]) -> bool:
    """Whether ``e`` reads one of these variables."""
    return any(isinstance(n, ir.Variable) and n.name in names for n in ir.walk(e))


def _factored(value: ir.Expr, reduced: set[str]) -> tuple[ir.Expr, list[ir.Expr]]:
    """``value`` as (the part that varies with the reduction, [factors that
    do not]): sum_k(x_k * c) is c * sum_k(x_k), the form Halide's own
    vectorizer gives a scaled update (``vector_reduce_add(A * B) * x256(3)``),
    so that the product under the sum is a plain A * B again."""
    factors: list[ir.Expr] = []
    while isinstance(value, ir.Binary) and value.op is ir.BinOp.MUL:
        for kept, factor in ((value.a, value.b), (value.b, value.a)):
            if not _reads_any(factor, reduced):
                factors.append(factor)
                value = kept
                break
        else:
            break
    return value, factors


class _Vectorizer:
    """Scalar expressions of the nest's variables as vectors whose lanes run
    over ``order`` (outermost first)."""

    def __init__(self, order: list[_Loop], names: set[str]):
        self.order = order
        self.names = names

    def index(self, e: ir.Expr, loops: list[_Loop]) -> ir.Expr | None:
        """A linear index as nested ramps (a stride) and broadcasts (no
        stride) over ``loops``, innermost first."""
        linear = _linear_in(e, self.names)
        if linear is None:
            return None
        coefficient, base = linear
        for lp in loops:  # v = min + lane
            if coefficient.get(lp.name):
                shifted = linear_form(lp.min)
                if shifted is None:
                    return None
                base = {t: base.get(t, 0) + coefficient[lp.name] * shifted.get(t, 0) for t in {*base, *shifted}}
                base = {t: c for t, c in base.items() if c}
        result: ir.Expr = linear_expression(base)
        lanes = 1
        for lp in reversed(loops):
            step = coefficient.get(lp.name, 0)
            if step == 0:
                result = ir.Broadcast(result, lp.extent)
            else:
                stride: ir.Expr = ir.IntImm(step) if lanes == 1 else ir.Broadcast(ir.IntImm(step), lanes)
                result = ir.Ramp(result, stride, lp.extent)
            lanes *= lp.extent
        return result

    def value(self, e: ir.Expr) -> ir.Expr | None:
        """``e`` with a lane per iteration of the whole nest."""
        try:
            return self._vector(e, self.order, _product(lp.extent for lp in self.order))
        except _NotVectorizable:
            return None

    def _vector(self, e: ir.Expr, loops: list[_Loop], lanes: int) -> ir.Expr:
        if not _reads_any(e, self.names):
            return ir.Broadcast(e, lanes)
        if isinstance(e, ir.Variable) or (isinstance(e, ir.Binary) and e.type == ir.INT32 and e.op in (
                ir.BinOp.ADD, ir.BinOp.SUB, ir.BinOp.MUL)):
            linear = self.index(e, loops)
            if linear is not None:
                return linear
        if isinstance(e, ir.Load) and e.predicate is None:
            # A linear index as nested ramps, as the rules read operands;
            # any other as the gather it is.
            index = self.index(e.index, loops) or self._vector(e.index, loops, lanes)
            return ir.Load(e.name, index, e.type.with_lanes(lanes))
        if isinstance(e, ir.Let):
            return self._vector(_inline(e.body, [(e.name, e.value)]), loops, lanes)
        if isinstance(e, ir.Not):
            return ir.Not(self._vector(e.value, loops, lanes))
        if isinstance(e, ir.Cast):
            return ir.Cast(e.type.with_lanes(lanes), self._vector(e.value, loops, lanes))
        if isinstance(e, ir.Binary):
            return ir.Binary(e.op, self._vector(e.a, loops, lanes), self._vector(e.b, loops, lanes))
        if isinstance(e, ir.Select):
            return ir.Select(*(self._vector(x, loops, lanes) for x in (e.condition, e.true_value, e.false_value)))
        if isinstance(e, ir.Call) and _passes_through(e):
            return self._vector(e.args[0], loops, lanes)
        raise _NotVectorizable


class _NotVectorizable(Exception):
    """A part of the nest's value that has no exact vector form here."""


def relayout_blocked_tiles(stmt: ir.Stmt, buffers: set[str]) -> ir.Stmt:
    """``stmt`` with each AMX accumulator that a schedule holds as several
    tiles side by side (a 32 x 32 buffer read and written only in 16 x 16
    blocks, ``mm[ramp(ramp(16, 1, 16), x16(32), 16)]``) stored tile after
    tile instead: block (i, j) at ``(i * blocks_per_row + j) * tile``, each
    contiguous, as a tile register is loaded and stored. The buffer lives in
    accelerator memory, so no one else sees its order; every access of it
    is renumbered, and any access that is not such a block leaves it alone."""
    if not buffers:
        return stmt
    layouts: dict[str, dict[ir.Expr, ir.Expr]] = {}
    block_widths: dict[str, int] = {}
    for node in ir.walk(stmt):
        if isinstance(node, ir.Allocate) and node.name in buffers:
            remapped = _block_remap(node)
            if remapped:
                layouts[node.name], block_widths[node.name] = remapped
    if not layouts:
        return stmt

    def replace(node: ir.Node) -> ir.Node | None:
        if isinstance(node, ir.Allocate) and node.name in layouts:
            # Blocks one after the other are a buffer one block wide: the
            # extents say so, so that cutting a block into tiles
            # (partition.py) sees its rows.
            width = block_widths[node.name]
            size = node.constant_elements
            assert size is not None
            body = rewrite(node.body, replace)
            return dataclasses.replace(node, extents=(ir.IntImm(width), ir.IntImm(size // width)), body=body)
        if isinstance(node, ir.Store) and node.name in layouts:
            return ir.Store(node.name, rewrite(node.value, replace, (ir.Expr,)), layouts[node.name][node.index],
                            node.predicate, None)
        if isinstance(node, ir.Load) and node.name in layouts:
            return ir.Load(node.name, layouts[node.name][node.index], node.type, node.predicate, None)
        return None

    return rewrite(stmt, replace)


def _block_remap(allocation: ir.Allocate) -> tuple[dict[ir.Expr, ir.Expr], int] | None:
    """Each block index of the allocation's accesses and its contiguous
    replacement, and the blocks' width; None unless every access is an
    aligned block of one shape."""
    if not all(isinstance(e, ir.IntImm) for e in allocation.extents):
        return None
    size = _product(e.value for e in allocation.extents)  # type: ignore[attr-defined]
    nodes = list(ir.walk(allocation.body))
    if any(isinstance(n, ir.Variable) and n.name == allocation.name for n in nodes):
        return None  # its address is taken (a handle passed to a call): the order is visible
    indices = {n.index for n in nodes if isinstance(n, (ir.Load, ir.Store)) and n.name == allocation.name}
    shapes = {_block(i) for i in indices}
    if len(shapes) != 1 or None in shapes:
        return None
    (shape,) = shapes
    assert shape is not None
    remap = _renumbered(indices, shape, size)
    return None if remap is None else (remap, shape[1])


def _renumbered(indices: set[ir.Expr], shape: tuple[int, int, int], size: int) -> dict[ir.Expr, ir.Expr] | None:
    rows, cols, width = shape
    if width <= cols or width % cols or size % width or (size // width) % rows:
        return None
    remap: dict[ir.Expr, ir.Expr] = {}
    for index in indices:
        base = index.base.base.value  # type: ignore[attr-defined]
        row, col = divmod(base, width)
        if row % rows or col % cols:
            return None
        block = (row // rows) * (width // cols) + col // cols
        remap[index] = ir.Ramp(ir.IntImm(block * rows * cols), ir.IntImm(1), rows * cols)
    return remap


def _block(index: ir.Expr) -> tuple[int, int, int] | None:
    """(rows, columns, row width) of ``ramp(ramp(b, 1, C), xC(W), R)`` with a
    constant b; None for any other index."""
    if not (isinstance(index, ir.Ramp) and isinstance(index.base, ir.Ramp)
            and isinstance(index.stride, ir.Broadcast) and isinstance(index.stride.value, ir.IntImm)):
        return None
    inner = index.base
    if not (isinstance(inner.base, ir.IntImm) and isinstance(inner.stride, ir.IntImm) and inner.stride.value == 1):
        return None
    return index.lanes, inner.lanes, index.stride.value.value
