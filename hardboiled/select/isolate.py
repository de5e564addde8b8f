"""A product in a tile of its own, where the accumulator cannot be one.

A tile or fragment accumulates ``C + sum(A * B)`` and nothing else. A
schedule may do more with the accumulator in the same update: scale the
product (``mm + sum(A * B) * 3``, which Halide's simplifier writes for
``mm += 3 * A * B``), mask it, or mix it with other values. Such an
update cannot live in accelerator memory, but its product can::

    allocate mm.product.0[float32 * 256] in AMXTile
     mm.product.0[ramp(0, 1, 256)] = sum(A * B)                  <- tile_zero, tile_matmul
     allocate mm.product.0.spill[float32 * 256] in Stack
      mm.product.0.spill[ramp(0, 1, 256)] = mm.product.0[...]    <- tile_store
      mm[...] = mm[...] + mm.product.0.spill[...] * x256(3)      <- plain vector code

and the accumulator moves to the accelerator's scratch memory (the CPU's
stack, GPU shared memory), where everything else that reads or writes it
is ordinary code. Every value is computed as before, in the same order
within each update; only where the product lives changes.

A negated operand whose negation does not fit the instruction's type (an
int8 A negated in int16) first moves out of the product, which the same
mechanism then computes: sum((0 - A) * B) = 0 - sum(A * B), exactly. So do
zero points, which quantized kernels subtract from their operands
(``(i32(A) - za) * (i32(B) - zb)``, no longer 8 bits): integers are a ring,
so the sum distributes exactly into the product of the operands themselves
and sums of one operand each::

    sum((a + p) * (b + q)) = sum(a * b) + sum(a) * q + sum(b) * p + K * p * q

where p and q are the same in every lane of a sum (a constant or a scalar
zero point) and K is the number of lanes each sum adds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from hardboiled import ir
from hardboiled.ir.visitor import map_expr, rewrite
from hardboiled.select.extract import SCRATCH_MEMORY, iter_stores

PRODUCT = ".product."
"""Infix of the name of a tile that holds one update's product."""


@dataclass(frozen=True, slots=True)
class Isolated:
    replacements: dict[int, ir.Stmt]
    """The rewritten update, by the position of the store it replaces."""
    demoted: dict[str, str]
    """Accumulators now in scratch memory: name -> memory type."""
    products: dict[str, str]
    """The new product buffers: name -> "AMX" or "WMMA"."""


def isolate_products(stmt: ir.Stmt, positions: set[int], memory: dict[str, str],
                     accelerators: dict[str, str], allocations: dict[str, ir.Allocate]) -> Isolated:
    """For the stores at these positions that update an accelerator buffer
    with more than a product and the buffer itself, the update with its
    product in a buffer of its own (``memory``: accelerator buffer -> its
    memory type; ``accelerators``: -> "AMX" or "WMMA")."""
    replacements: dict[int, ir.Stmt] = {}
    demoted: dict[str, str] = {}
    products: dict[str, str] = {}
    for position, store in enumerate(iter_stores(stmt)):
        if position not in positions or store.name not in accelerators:
            continue
        store = zero_points_outside(negation_outside(factors_outside(store)))
        product = _isolable_product(store)
        alloc = allocations[store.name]
        extents = _product_extents(store.index, alloc, product.type.lanes) if product is not None else None
        if product is None or extents is None:
            continue
        accelerator = accelerators[store.name]
        name = f"{store.name}{PRODUCT}{len(products)}"
        replacements[position] = _isolated(store, product, name, SCRATCH_MEMORY[accelerator],
                                           ir.Allocate(name, product.type.element(), memory[store.name], extents,
                                                       ir.Evaluate(ir.IntImm(0))))
        demoted[store.name] = SCRATCH_MEMORY[accelerator]
        products[name] = accelerator
    return Isolated(replacements, demoted, products)


def _isolated(store: ir.Store, product: ir.VectorReduce, name: str, scratch: str,
              allocation: ir.Allocate) -> ir.Stmt:
    """``store`` with ``product`` computed into ``name`` (allocated as
    ``allocation`` says), copied to ``scratch`` memory and read there."""
    spill = f"{name}.spill"
    lanes = product.type.lanes
    whole = ir.Ramp(ir.IntImm(0), ir.IntImm(1), lanes)
    copy = ir.Load(spill, whole, product.type)
    update = ir.Store(store.name, map_expr(store.value, lambda e: copy if e == product else None),
                      store.index, store.predicate, store.alignment)
    body = ir.Allocate(spill, product.type.element(), scratch, (ir.IntImm(lanes),),
                       ir.make_block([ir.Store(spill, ir.Load(name, whole, product.type), whole), update]))
    return dataclasses.replace(allocation, body=ir.make_block([ir.Store(name, product, whole), body]))


def _the_sum(store: ir.Store) -> ir.VectorReduce | None:
    """The one vector sum in ``store``'s value, if there is exactly one."""
    reduces = [n for n in ir.walk(store.value) if isinstance(n, ir.VectorReduce)]
    return reduces[0] if len(reduces) == 1 and reduces[0].op is ir.ReduceOp.ADD else None


def _with_sum(store: ir.Store, reduce: ir.VectorReduce, replacement: ir.Expr) -> ir.Store:
    """``store`` with its sum ``reduce`` replaced."""
    value = map_expr(store.value, lambda e: replacement if e == reduce else None)
    return ir.Store(store.name, value, store.index, store.predicate, store.alignment)


def negation_outside(store: ir.Store) -> ir.Store:
    """``store`` with a negated integer operand of its product negating
    the product instead: sum((0 - a) * b) = 0 - sum(a * b), exactly
    (integers wrap as a ring). A negated int8 operand (Halide writes
    i32(0 - i16(A))) does not fit the instruction's 8 bits; the product of
    A itself does."""
    reduce = _the_sum(store)
    product = reduce.value if reduce is not None else None
    if reduce is None or not (isinstance(product, ir.Binary) and product.op is ir.BinOp.MUL):
        return store
    a, b = _negated(product.a), _negated(product.b)
    if (a is None) == (b is None):
        return store  # neither negated (or both, which cancel: left alone)
    plain = ir.VectorReduce(reduce.op, ir.Binary(ir.BinOp.MUL, a or product.a, b or product.b), reduce.type)
    return _with_sum(store, reduce, ir.Binary(ir.BinOp.SUB, _splat(ir.zero_of(reduce.type.element()), reduce.type),
                                              plain))


def factors_outside(store: ir.Store) -> ir.Store:
    """``store`` with factors the same in every lane moved out of its sum:
    sum(A * B * c) = sum(A * B) * c. Halide leaves a scaled operand inside
    the product when it cannot lift it out (a scalar update the selector
    re-vectorized); a tile multiplies two operands and nothing else. Exact
    for integers (a ring); for floats the sum is rounded once more, which
    verification bounds like any other reassociation."""
    reduce = _the_sum(store)
    if reduce is None:
        return store
    factors = _factors(reduce.value)
    scalars = [f.value for f in factors if isinstance(f, ir.Broadcast) and f.value.type.lanes == 1]
    operands = [f for f in factors if not (isinstance(f, ir.Broadcast) and f.value.type.lanes == 1)]
    if not scalars or len(operands) != 2:
        return store
    t = reduce.type
    scale = scalars[0]
    for scalar in scalars[1:]:
        scale = ir.Binary(ir.BinOp.MUL, scale, scalar)
    product = ir.VectorReduce(reduce.op, ir.Binary(ir.BinOp.MUL, *operands), t)
    return _with_sum(store, reduce, ir.Binary(ir.BinOp.MUL, product, _splat(scale, t)))


def _factors(e: ir.Expr) -> list[ir.Expr]:
    """The factors of a product tree ``a * (b * c)``."""
    if isinstance(e, ir.Binary) and e.op is ir.BinOp.MUL:
        return _factors(e.a) + _factors(e.b)
    return [e]


def zero_points_outside(store: ir.Store) -> ir.Store:
    """``store`` with integer operands offset by a value the same in every
    lane (a zero point) multiplied without their offsets, and the offsets'
    terms added outside the product (the module's docstring)."""
    reduce = _the_sum(store)
    product = reduce.value if reduce is not None else None
    if reduce is None or not (isinstance(product, ir.Binary) and product.op is ir.BinOp.MUL) \
            or product.type.is_float:
        return store  # (float sums do not distribute exactly)
    (a, p), (b, q) = _offset(product.a), _offset(product.b)
    if p is None and q is None:
        return store
    t = reduce.type
    lanes_per_sum = product.type.lanes // t.lanes

    def summed(e: ir.Expr) -> ir.Expr:
        return ir.VectorReduce(ir.ReduceOp.ADD, e, t)

    def times(e: ir.Expr, scalar: ir.Expr) -> ir.Expr:
        return ir.Binary(ir.BinOp.MUL, e, _splat(scalar, t))

    terms = [summed(ir.Binary(ir.BinOp.MUL, a, b))]
    if q is not None:
        terms.append(times(summed(a), q))
    if p is not None:
        terms.append(times(summed(b), p))
    if p is not None and q is not None:
        terms.append(times(times(_splat(ir.IntImm(lanes_per_sum, t.element()), t), p), q))
    expanded = terms[0]
    for term in terms[1:]:
        expanded = ir.Binary(ir.BinOp.ADD, expanded, term)
    return _with_sum(store, reduce, expanded)


def _offset(e: ir.Expr) -> tuple[ir.Expr, ir.Expr | None]:
    """(x, p) where the integer ``e`` is x + p with p a scalar the same in
    every lane (x - p gives -p), else (e, None). A vector repeated whole
    repeats its offset alike: x16(v + x256(p)) is x16(v) + p."""
    if isinstance(e, ir.Broadcast) and e.value.type.lanes > 1:
        inner, offset = _offset(e.value)
        return (ir.Broadcast(inner, e.lanes), offset) if offset is not None else (e, None)
    if isinstance(e, ir.Binary) and e.op in (ir.BinOp.ADD, ir.BinOp.SUB):
        for x, offset in ((e.a, e.b), (e.b, e.a)) if e.op is ir.BinOp.ADD else ((e.a, e.b),):
            if isinstance(offset, ir.Broadcast) and offset.value.type.lanes == 1 and not isinstance(x, ir.Broadcast):
                scalar = offset.value
                if e.op is ir.BinOp.SUB:
                    scalar = ir.Binary(ir.BinOp.SUB, ir.zero_of(scalar.type), scalar)
                return x, scalar
    return e, None


def _splat(scalar: ir.Expr, t: ir.Type) -> ir.Expr:
    return scalar if t.lanes == 1 else ir.Broadcast(scalar, t.lanes)


def _is_zero(e: ir.Expr) -> bool:
    if isinstance(e, ir.Broadcast):
        e = e.value
    return isinstance(e, (ir.IntImm, ir.FloatImm)) and e.value == 0


def _negated(e: ir.Expr) -> ir.Expr | None:
    """x where the integer ``e`` is exactly -x: 0 - x, and T(0 - x) where
    x is widened from fewer bits, so that -x fits the narrower type. (A
    negated float operand is computed into a temporary by the rules'
    operand materialization: its negation fits its type.)"""
    if e.type.is_float:
        return None
    if isinstance(e, ir.Binary) and e.op is ir.BinOp.SUB and _is_zero(e.a):
        return e.b
    if isinstance(e, ir.Broadcast):  # the same operand for every row: -x repeated is x repeated, negated
        inner = _negated(e.value)
        return None if inner is None else ir.Broadcast(inner, e.lanes)
    if isinstance(e, ir.Cast) and e.type.bits >= e.value.type.bits and e.type.code == e.value.type.code:
        inner = _negated(e.value)
        if isinstance(inner, ir.Cast) and inner.value.type.bits < inner.type.bits:
            return ir.Cast(e.type, inner.value)  # widening twice is widening once: i32(i16(A)) = i32(A)
    return None


def _isolable_product(store: ir.Store) -> ir.VectorReduce | None:
    """The one sum of products in ``store``'s value, when the value does
    more with it than add the accumulator (which a tile does itself) and
    the product does not read the accumulator."""
    reduces = [n for n in ir.walk(store.value) if isinstance(n, ir.VectorReduce)
               and isinstance(n.value, ir.Binary) and n.value.op is ir.BinOp.MUL]
    if len(reduces) != 1:
        return None  # sums of one operand (a zero point's terms) stay plain code beside it
    (product,) = reduces
    if product.op is not ir.ReduceOp.ADD:
        return None
    if any(isinstance(n, ir.Load) and n.name == store.name for n in ir.walk(product)):
        return None
    value = store.value
    if value == product:
        return None
    if isinstance(value, ir.Binary) and value.op is ir.BinOp.ADD and product in (value.a, value.b):
        other = value.b if value.a == product else value.a
        if isinstance(other, ir.Load) and other.name == store.name:
            return None  # C + AB: a tile product already, missed for another reason
    return product


def _product_extents(index: ir.Expr, alloc: ir.Allocate, lanes: int) -> tuple[ir.Expr, ...] | None:
    """The product buffer's extents: rows as wide as the rows the update
    writes, ``ramp(ramp(base, 1, W), xW(stride), R)`` (a partial tile of a
    wider accumulator, where a guard left the update scalar: 32 of 48
    columns), else as wide as the accumulator. The product's lanes are in
    the update's order, so either way its element i is the update's."""
    width = _row_run(index)
    if width is None:
        if not alloc.extents or not isinstance(alloc.extents[0], ir.IntImm):
            return None
        width = alloc.extents[0].value
    if width <= 0 or lanes % width:
        return None
    return (ir.IntImm(width), ir.IntImm(lanes // width))


def _row_run(index: ir.Expr) -> int | None:
    """W for an index of rows of W adjacent elements, ramp(ramp(b, 1, W), s, R)."""
    if isinstance(index, ir.Ramp) and isinstance(index.base, ir.Ramp) \
            and isinstance(index.base.stride, ir.IntImm) and index.base.stride.value == 1:
        return index.base.lanes
    return None


def demote(stmt: ir.Stmt, demoted: dict[str, str]) -> ir.Stmt:
    """``stmt`` with these buffers allocated in the given memory types."""
    if not demoted:
        return stmt

    def replace(node: ir.Node) -> ir.Node | None:
        if isinstance(node, ir.Allocate) and node.name in demoted:
            return dataclasses.replace(node, memory_type=demoted[node.name], body=rewrite(node.body, replace))
        return None

    return rewrite(stmt, replace)
