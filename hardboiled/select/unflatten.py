"""Two-dimensional vector accesses put back together, for the final stmt.

Halide's passes after vectorization flatten the 2-D vector accesses of the
vectorizing stage into concatenations and shuffles: the final stmt that
``compile_to_lowered_stmt`` writes has

    concat_vectors(B[ramp(b, s, 32)], B[ramp(b + 1, s, 32)], ...)   for   B[ramp(ramp(b, s, 32), x32(1), 16)]
    concat_vectors(x512(0), x512(t), x512(t*2), ...)                for   ramp(x512(0), x512(t), 16)
    shuffle(v, 0, 1, ..., n - 1, 0, 1, ..., n - 1, ...)              for   x16(v)

and, for a constant stride, one dense load whose lanes a shuffle picks;
vectors named in lets; ``widening_mul(a, b)`` for ``T(a) * T(b)``; and
shifts for divisions and products by powers of two.

The rules select tiles from the nested ramps and broadcasts, so before
extraction the stores that touch accelerator memory are rewritten back to
that form. Each rewrite is an identity on lane values: a concatenation of
vectors whose lanes differ by a constant step from one vector to the next
is a ramp over them; a concatenation of loads of one buffer is a load at
the concatenated indices; a shuffle that repeats a whole vector is its
broadcast; the lanes a shuffle picks from a dense load are a load at
nested ramps of those offsets. The step is found by comparing linear
forms (sums of integer multiples of the scalar terms), so symbolic strides
are covered. Anything else is left as it is, and selection explains the
miss.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from hardboiled import ir
from hardboiled.ir import operations
from hardboiled.ir.printer import print_ir
from hardboiled.ir.visitor import rewrite

Linear = dict[ir.Expr | None, int]
"""An integer scalar as a sum of ``coefficient * term``; the key None holds the constant."""


def unflatten_stores(stmt: ir.Stmt, buffers: Iterable[str]) -> ir.Stmt:
    """``stmt`` with the stores that write or read ``buffers`` (accelerator
    memory) in the vectorizing stage's form where they were flattened.

    The final stmt also names values in lets. A vector let (``let t20 =
    shuffle(...)``) is put back in those stores, which read it in place in
    the vectorizing stage (the let stays for the other statements); a
    scalar let of arithmetic is looked through when lanes are compared
    (``t79 = A.stride.1 + t94`` is one row below ``t94``)."""
    names = set(buffers)
    if not names:
        return stmt

    def visit(s: ir.Stmt, vectors: dict[str, ir.Expr], scalars: dict[str, ir.Expr]) -> ir.Stmt:
        def replace(node: ir.Node) -> ir.Node | None:
            if isinstance(node, ir.LetStmt) and (node.value.type.is_vector or node.value.type == ir.INT32):
                value = node.value
                if value.type.is_vector:
                    body = visit(node.body, {**vectors, node.name: _Unflattener(scalars)(_substitute(value, vectors))},
                                 scalars)
                elif any(isinstance(n, ir.Call) for n in ir.walk(value)):
                    # A buffer field (_halide_buffer_get_min(I.buffer, 0)) stays a name: looking
                    # through it cancels nothing, and a GPU kernel cannot read the handle.
                    body = visit(node.body, vectors, scalars)
                else:
                    body = visit(node.body, vectors, {**scalars, node.name: value})
                return node if body is node.body else ir.LetStmt(node.name, value, body)
            if isinstance(node, ir.Store) and (node.name in names or _reads(node, names)):
                unflatten = _Unflattener(scalars)
                value, index = (unflatten(_substitute(e, vectors)) for e in (node.value, node.index))
                return ir.Store(node.name, value, index, node.predicate, node.alignment)
            return None

        return rewrite(s, replace, (ir.Stmt,))

    return visit(stmt, {}, {})


def _reads(store: ir.Store, names: set[str]) -> bool:
    return any(isinstance(n, ir.Load) and n.name in names for n in ir.walk(store.value))


def _substitute(e: ir.Expr, values: dict[str, ir.Expr]) -> ir.Expr:
    if not values:
        return e
    return rewrite(e, lambda n: values.get(n.name) if isinstance(n, ir.Variable) else None, (ir.Expr,))


_SHIFTS = {operations.SHIFT_RIGHT.name: ir.BinOp.DIV, operations.SHIFT_LEFT.name: ir.BinOp.MUL}
"""The product or division each shift by a constant stands for."""

_WIDENING_MUL = operations.WIDENING_MUL.name


class _Unflattener:
    """The rewrites of one expression, with the scalar lets in scope."""

    def __init__(self, scalars: dict[str, ir.Expr]):
        self.scalars = scalars

    def __call__(self, e: ir.Expr) -> ir.Expr:
        def replace(node: ir.Node) -> ir.Node | None:
            if isinstance(node, ir.Shuffle):
                return self._shuffle(ir.Shuffle(tuple(self(v) for v in node.vectors), node.indices))
            if isinstance(node, ir.Call) and node.name in _SHIFTS:
                return self._shift(node)
            if isinstance(node, ir.Cast) and isinstance(node.value, ir.Call) and node.value.name == _WIDENING_MUL:
                return self._widening_product(node.type, node.value)
            if isinstance(node, ir.Call) and node.name == _WIDENING_MUL:
                return self._widening_product(node.type, node)
            return None

        return rewrite(e, replace, (ir.Expr,))

    def _widening_product(self, wide: ir.Type, call: ir.Call) -> ir.Expr | None:
        """``widening_mul(a, b)``, Halide's late form of a product of
        narrow values, as the vectorizing stage's ``T(a) * T(b)``: the
        product in the wide type is exact (16-bit floats into float32,
        8-bit integers into 16 bits), so ``int32(widening_mul(a, b))`` is
        ``int32(a) * int32(b)`` too."""
        if len(call.args) != 2 or not _holds_every_value(call.type, wide):
            return None
        a, b = (ir.Cast(wide.with_lanes(arg.type.lanes), self(arg)) for arg in call.args)
        return ir.Binary(ir.BinOp.MUL, a, b)

    def _shuffle(self, s: ir.Shuffle) -> ir.Expr:
        if len(s.vectors) == 1:
            return _repeat(s.vectors[0], s.indices) or self._gather(s.vectors[0], s.indices) or s
        if s.is_concat() and len({v.type for v in s.vectors}) == 1:
            return self._concat(list(s.vectors)) or s
        return s

    def _gather(self, vector: ir.Expr, indices: tuple[int, ...]) -> ir.Expr | None:
        """Lanes ``indices`` of a dense load (``B[ramp(b, 1, N)]``, which
        Halide loads whole and then shuffles, for a constant stride) as a
        load at nested ramps: ``B[ramp(ramp(b, 64, 32), x32(1), 16)]``."""
        if isinstance(vector, ir.Cast):
            inner = self._gather(vector.value, indices)
            return None if inner is None else ir.Cast(vector.type.with_lanes(len(indices)), inner)
        if not (isinstance(vector, ir.Load) and vector.predicate is None and isinstance(vector.index, ir.Ramp)
                and vector.index.base.type == ir.INT32 and vector.index.stride == ir.IntImm(1)):
            return None
        base = vector.index.base
        linear = self._linear(base)

        def lane(offset: int) -> ir.Expr:
            if linear is not None:
                return linear_expression(_plus(linear, {None: offset} if offset else {}, 1))
            return ir.Binary(ir.BinOp.ADD, base, ir.IntImm(offset)) if offset else base

        index = _nested_ramps(indices, lane)
        return None if index is None else ir.Load(vector.name, index, vector.type.with_lanes(len(indices)))

    def _shift(self, call: ir.Call) -> ir.Expr | None:
        """A shift by a constant as the division or product by a power of
        two that the vectorizing stage wrote (Halide's division rounds
        down, as an arithmetic shift right does, and products wrap as
        shifts left do)."""
        if len(call.args) != 2 or not (call.type.is_int or call.type.is_uint):
            return None
        value, amount = call.args
        scalar = amount.value if isinstance(amount, ir.Broadcast) else amount
        if value.type != call.type or not isinstance(scalar, (ir.IntImm, ir.UIntImm)):
            return None
        if not 0 <= scalar.value < call.type.bits - 1:
            return None
        element = call.type.with_lanes(1)
        power: ir.Expr = (ir.UIntImm if element.is_uint else ir.IntImm)(2 ** scalar.value, element)
        if call.type.lanes > 1:
            power = ir.Broadcast(power, call.type.lanes)
        return ir.Binary(_SHIFTS[call.name], self(value), power)

    def _concat(self, vectors: list[ir.Expr]) -> ir.Expr | None:
        first = vectors[0]
        loads = [v for v in vectors if isinstance(v, ir.Load) and v.predicate is None]
        if len(loads) == len(vectors) and len({load.name for load in loads}) == 1:
            index = self._concat([load.index for load in loads])
            return None if index is None else ir.Load(loads[0].name, index, first.type.with_lanes(index.type.lanes))
        if all(isinstance(v, ir.Cast) for v in vectors):
            inner = self._concat([v.value for v in vectors if isinstance(v, ir.Cast)])
            return None if inner is None else ir.Cast(first.type.with_lanes(inner.type.lanes), inner)
        return self._progression(vectors)

    def _progression(self, vectors: list[ir.Expr]) -> ir.Expr | None:
        """``ramp(v0, xN(step), K)`` when vector k is vector 0 plus k * step in every lane."""
        shapes = [self._shape(v) for v in vectors]
        if any(shape is None for shape in shapes) or len({shape[1] for shape in shapes if shape}) != 1:
            return None
        bases = [shape[0] for shape in shapes if shape]
        step = _minus(bases[1], bases[0])
        for k, base in enumerate(bases):
            if _minus(base, bases[0]) != {term: k * c for term, c in step.items() if k * c}:
                return None
        first = vectors[0]
        if not step:
            return ir.Broadcast(first, len(vectors))
        return ir.Ramp(first, ir.Broadcast(linear_expression(step), first.type.lanes), len(vectors))

    def _shape(self, v: ir.Expr) -> tuple[Linear, tuple[object, ...]] | None:
        """A vector as its first lane's linear form and the pattern of its
        other lanes relative to the first (equal patterns: the vectors
        differ by a broadcast of the difference of their first lanes)."""
        if isinstance(v, ir.Broadcast) and not v.value.type.is_vector:
            base = self._linear(v.value)
            return None if base is None else (base, ("x", v.lanes))
        if isinstance(v, ir.Ramp):
            stride = self._linear(v.stride) if not v.stride.type.is_vector else None
            inner = self._shape(v.base) if v.base.type.is_vector else self._scalar_shape(v.base)
            if stride is None or inner is None:
                return None
            return inner[0], ("ramp", inner[1], _key(stride), v.lanes)
        return None

    def _scalar_shape(self, e: ir.Expr) -> tuple[Linear, tuple[object, ...]] | None:
        linear = self._linear(e)
        return None if linear is None else (linear, ("scalar",))

    def _linear(self, e: ir.Expr) -> Linear | None:
        if e.type != ir.INT32:
            return None
        if isinstance(e, ir.IntImm):
            return {None: e.value} if e.value else {}
        if isinstance(e, ir.Variable) and e.name in self.scalars:
            return self._linear(self.scalars[e.name])
        if isinstance(e, ir.Binary) and e.op in (ir.BinOp.ADD, ir.BinOp.SUB):
            a, b = self._linear(e.a), self._linear(e.b)
            if a is None or b is None:
                return None
            return _plus(a, b, 1 if e.op is ir.BinOp.ADD else -1)
        if isinstance(e, ir.Binary) and e.op is ir.BinOp.MUL:
            for factor, other in ((e.a, e.b), (e.b, e.a)):
                if isinstance(factor, ir.IntImm):
                    linear = self._linear(other)
                    if linear is None:
                        return None
                    return {t: c * factor.value for t, c in linear.items() if c * factor.value}
        return {e: 1}


def linear_form(e: ir.Expr) -> Linear | None:
    """An int32 expression as a linear form (no lets in scope); None for
    any other type."""
    return _Unflattener({})._linear(e)


def _holds_every_value(narrow: ir.Type, wide: ir.Type) -> bool:
    """Whether converting ``narrow`` to ``wide`` keeps every value."""
    if narrow.is_float or wide.is_float:
        return narrow.code == wide.code and wide.bits >= narrow.bits
    if narrow.is_uint and wide.is_int:
        return wide.bits > narrow.bits
    return narrow.code == wide.code and wide.bits >= narrow.bits


def _nested_ramps(values: tuple[int, ...], lane: Callable[[int], ir.Expr]) -> ir.Expr | None:
    """Constant lane offsets as nested ramps and broadcasts, innermost
    first: ``[0, 64, ..., 1984, 1, 65, ...]`` is ``ramp(ramp(lane(0), 64,
    32), x32(1), 16)``. None when no such nesting gives them."""
    count = len(values)
    if count == 1:
        return lane(values[0])
    steps = {b - a for a, b in zip(values, values[1:])}
    if len(steps) == 1:
        step = steps.pop()
        return ir.Broadcast(lane(values[0]), count) if step == 0 else ir.Ramp(lane(values[0]), ir.IntImm(step), count)
    for size in (n for n in range(2, count // 2 + 1) if count % n == 0):
        blocks = [values[i:i + size] for i in range(0, count, size)]
        step = blocks[1][0] - blocks[0][0]
        if any(b != tuple(v + k * step for v in blocks[0]) for k, b in enumerate(blocks)):
            continue
        inner = _nested_ramps(blocks[0], lane)
        if inner is None:
            continue
        if step == 0:
            return ir.Broadcast(inner, len(blocks))
        return ir.Ramp(inner, ir.Broadcast(ir.IntImm(step), size), len(blocks))
    return None


def _repeat(vector: ir.Expr, indices: tuple[int, ...]) -> ir.Expr | None:
    """``vector`` or its broadcast when ``indices`` repeat it whole."""
    lanes = vector.type.lanes
    if len(indices) % lanes or indices != tuple(range(lanes)) * (len(indices) // lanes):
        return None
    copies = len(indices) // lanes
    return vector if copies == 1 else ir.Broadcast(vector, copies)


def _plus(a: Linear, b: Linear, sign: int) -> Linear:
    total = dict(a)
    for term, c in b.items():
        total[term] = total.get(term, 0) + sign * c
    return {t: c for t, c in total.items() if c}


def _minus(a: Linear, b: Linear) -> Linear:
    return _plus(a, b, -1)


def _key(linear: Linear) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(("" if t is None else print_ir(t), c) for t, c in linear.items()))


def linear_expression(linear: Linear) -> ir.Expr:
    """The linear form as Halide would print it simplified: terms in a
    fixed order, ``t*c`` for a coefficient, the constant last."""
    terms = sorted(((t, c) for t, c in linear.items() if t is not None), key=lambda tc: print_ir(tc[0]))
    result: ir.Expr | None = None
    for term, c in terms:
        scaled = term if abs(c) == 1 else ir.Binary(ir.BinOp.MUL, term, ir.IntImm(abs(c)))
        if result is None:
            result = scaled if c > 0 else ir.Binary(ir.BinOp.SUB, ir.IntImm(0), scaled)
        else:
            result = ir.Binary(ir.BinOp.ADD if c > 0 else ir.BinOp.SUB, result, scaled)
    constant = linear.get(None, 0)
    if result is None:
        return ir.IntImm(constant)
    if constant:
        result = ir.Binary(ir.BinOp.ADD, result, ir.IntImm(constant))
    return result
