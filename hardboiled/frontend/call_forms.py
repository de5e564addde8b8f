"""The IR nodes that Halide prints as calls, for the tree builder.

The grammar reads ``ramp(b, s, 8)``, ``x8(v)``, ``float32x8(v)``,
``min(a, b)``, ``select(c, t, f)``, the shuffle spellings
(``concat_vectors``, ``interleave_vectors``, ``slice_vectors``,
``extract_element``, ``shuffle``) and ``(T)vector_reduce_OP(v)`` all as
calls; ``CallForms`` decides which node each one is, from its name and its
already-built arguments, and checks what Halide would have checked.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import cast

from hardboiled import ir
from hardboiled.frontend.builder_base import BuilderBase
from hardboiled.frontend.literals import int32_value, unify_half, unify_halves
from hardboiled.frontend.syntax_tree import Token, Tree

_BROADCAST_NAME_RE = re.compile(r"x(\d+)")
_REDUCE_OPS = {op.value: op for op in ir.ReduceOp}


class CallForms(BuilderBase):
    """Builds the node a call spelling stands for (None: a plain call)."""

    def _intrinsic_form(self, name: str, args: list[ir.Expr], token: Token) -> ir.Expr | None:
        """IR nodes that Halide prints in function-call form."""
        if len(args) == 1:
            vector = self._vector_form(name, args[0], token)
            if vector is not None:
                return vector
        form = _CALL_FORMS.get(name)
        if form is None or not form[0] <= len(args) <= form[1]:
            return None
        return form[2](self, args, token)

    def _vector_form(self, name: str, value: ir.Expr, token: Token) -> ir.Expr | None:
        """``xN(v)``, a broadcast, or ``T(v)`` for a type name T, a cast."""
        if (m := _BROADCAST_NAME_RE.fullmatch(name)) is not None:
            digits = m.group(1)
            return ir.Broadcast(value, self._lane_count(int(digits) if len(digits) <= 6 else -1, token))
        cast_type = ir.parse_type_name(name)
        if cast_type is None:
            return None
        if cast_type.lanes != value.type.lanes:
            raise self.error(f"cast to {cast_type} of a value with {value.type.lanes} lanes", token)
        return ir.Cast(cast_type, value)

    def _lane_count(self, lanes: int, token: Token | Tree) -> int:
        if not 1 <= lanes <= ir.MAX_LANES:
            shown = lanes if lanes >= 0 else "that many"
            raise self.error(f"a vector has 1 to {ir.MAX_LANES} lanes in Halide, not {shown}", token)
        return lanes

    def _vector_reduce(self, name: str, args: list[ir.Expr], declared: ir.Type, token: Token) -> ir.Expr:
        """``(T)vector_reduce_OP(v)``: groups of v's lanes reduced to T's lanes."""
        op = _REDUCE_OPS.get(name[len("vector_reduce_") :])
        if op is None or len(args) != 1:
            raise self.error(
                f"unknown vector reduction '{name}'", token,
                notes=("known: " + ", ".join(f"vector_reduce_{o}" for o in _REDUCE_OPS),),
            )
        if declared.lanes == 0 or args[0].type.lanes % declared.lanes:
            raise self.error(
                f"{name} to {declared} from {args[0].type.lanes} lanes: the lanes must divide",
                token,
            )
        return ir.VectorReduce(op, args[0], declared)

    # ------------------------------------------------------------ nodes
    def _ramp(self, args: list[ir.Expr], token: Token) -> ir.Expr:
        lanes = args[2]
        if not isinstance(lanes, ir.IntImm):
            raise self.error("the lane count of a ramp must be an integer literal", token)
        base, stride = args[0], args[1]
        if base.type != stride.type:
            raise self.error(
                f"ramp base and stride have different types: {base.type} and {stride.type}", token
            )
        return ir.Ramp(base, stride, self._lane_count(lanes.value, token))

    def _min(self, args: list[ir.Expr], token: Token) -> ir.Expr:
        a, b = unify_half(args[0], args[1])
        return ir.Binary(ir.BinOp.MIN, a, b)

    def _max(self, args: list[ir.Expr], token: Token) -> ir.Expr:
        a, b = unify_half(args[0], args[1])
        return ir.Binary(ir.BinOp.MAX, a, b)

    def _select(self, args: list[ir.Expr], token: Token) -> ir.Expr:
        t, f = unify_half(args[1], args[2])
        if not args[0].type.is_bool or t.type != f.type or args[0].type.lanes not in (1, t.type.lanes):
            raise self.error(
                f"select needs a boolean condition and equal branch types, not "
                f"{args[0].type}, {t.type} and {f.type}", token,
            )
        return ir.Select(args[0], t, f)

    # ------------------------------------------------------------ shuffles
    def _concat_vectors(self, args: list[ir.Expr], token: Token) -> ir.Expr:
        args = unify_halves(args)
        total = sum(a.type.lanes for a in args)
        return ir.Shuffle(tuple(args), tuple(range(total)))

    def _interleave_vectors(self, args: list[ir.Expr], token: Token) -> ir.Expr:
        args = unify_halves(args)
        lanes = args[0].type.lanes
        if any(a.type != args[0].type for a in args):
            raise self.error("interleave_vectors needs vectors of one type", token)
        n = len(args)
        return ir.Shuffle(tuple(args), tuple((i % n) * lanes + i // n for i in range(n * lanes)))

    def _slice_vectors(self, args: list[ir.Expr], token: Token) -> ir.Expr:
        begin, stride, count = (int32_value(a) for a in args[1:])
        if begin is None or stride is None or count is None:
            raise self.error("slice_vectors takes a vector and three integer literals", token)
        return ir.Shuffle((args[0],), tuple(begin + i * stride for i in range(count)))

    def _extract_element(self, args: list[ir.Expr], token: Token) -> ir.Expr:
        idx = int32_value(args[1])
        if idx is None:
            raise self.error("extract_element takes a vector and an integer literal", token)
        return ir.Shuffle((args[0],), (idx,))

    def _shuffle(self, args: list[ir.Expr], token: Token, run: list[int] | None = None) -> ir.Expr:
        """``shuffle(VECTORS..., INDICES...)``: the trailing int32 literals
        are the indices; ``run``, the reader's last literals (an
        ``IntRun``), follows ``args`` as plain numbers."""
        values = [int32_value(a) for a in args] + (run or [])
        # The run's numbers are all indices: the search for where the
        # indices start begins before them.
        split = max(len(args), 1) if run else len(values)
        while split > 1 and values[split - 1] is not None:
            split -= 1
        if split == len(values):
            raise self.error("shuffle needs at least one integer lane index", token)
        indices = cast(tuple[int, ...], tuple(values[split:]))
        total = sum(a.type.lanes for a in args[:split])
        if min(indices) < 0 or max(indices) >= total:  # (thousands of indices: at C's speed)
            raise self.error(f"shuffle index out of range: the inputs have {total} lanes", token)
        return ir.Shuffle(tuple(unify_halves(args[:split])), indices)


_ANY = sys.maxsize

_CALL_FORMS: dict[str, tuple[int, int, Callable[[CallForms, list[ir.Expr], Token], ir.Expr]]] = {
    "ramp": (3, 3, CallForms._ramp),
    "min": (2, 2, CallForms._min),
    "max": (2, 2, CallForms._max),
    "select": (3, 3, CallForms._select),
    "concat_vectors": (1, _ANY, CallForms._concat_vectors),
    "interleave_vectors": (2, _ANY, CallForms._interleave_vectors),
    "slice_vectors": (4, 4, CallForms._slice_vectors),
    "extract_element": (2, 2, CallForms._extract_element),
    "shuffle": (2, _ANY, CallForms._shuffle),
}
"""Each call spelling of a node with a fixed name: the fewest and the most
arguments it takes (any other count is a plain call), and its builder."""
