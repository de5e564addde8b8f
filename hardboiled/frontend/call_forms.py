"""The IR nodes that Halide prints as calls, for the tree builder.

The grammar reads ``ramp(b, s, 8)``, ``x8(v)``, ``float32x8(v)``,
``min(a, b)``, ``select(c, t, f)``, the shuffle spellings
(``concat_vectors``, ``interleave_vectors``, ``slice_vectors``,
``extract_element``, ``shuffle``) all as calls; ``CallForms`` decides
which node each one is, from its name and its already-built arguments,
and checks what Halide would have checked.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lark import Token, Tree

from hardboiled import ir
from hardboiled.frontend.builder_base import BuilderBase
from hardboiled.frontend.literals import int32_value, unify_half

_BROADCAST_NAME_RE = re.compile(r"x(\d+)")


class CallForms(BuilderBase):
    """Builds the node a call spelling stands for (None: a plain call)."""

    def _intrinsic_form(self, name: str, args: list[ir.Expr], token: Token) -> ir.Expr | None:
        """IR nodes that Halide prints in function-call form."""
        n = len(args)
        if name == "ramp" and n == 3:
            lanes = args[2]
            if not isinstance(lanes, ir.IntImm):
                raise self.error("the lane count of a ramp must be an integer literal", token)
            base, stride = args[0], args[1]
            if base.type != stride.type:
                raise self.error(
                    f"ramp base and stride have different types: {base.type} and {stride.type}", token
                )
            return ir.Ramp(base, stride, self._lane_count(lanes.value, token))
        if n == 1 and (m := _BROADCAST_NAME_RE.fullmatch(name)) is not None:
            digits = m.group(1)
            return ir.Broadcast(args[0], self._lane_count(int(digits) if len(digits) <= 6 else -1, token))
        if n == 1 and (cast_type := ir.parse_type_name(name)) is not None:
            if cast_type.lanes != args[0].type.lanes:
                raise self.error(
                    f"cast to {cast_type} of a value with {args[0].type.lanes} lanes", token
                )
            return ir.Cast(cast_type, args[0])
        if name in ("min", "max") and n == 2:
            a, b = unify_half(args[0], args[1])
            return ir.Binary(ir.BinOp.MIN if name == "min" else ir.BinOp.MAX, a, b)
        if name == "select" and n == 3:
            t, f = unify_half(args[1], args[2])
            if not args[0].type.is_bool or t.type != f.type or args[0].type.lanes not in (1, t.type.lanes):
                raise self.error(
                    f"select needs a boolean condition and equal branch types, not "
                    f"{args[0].type}, {t.type} and {f.type}", token,
                )
            return ir.Select(args[0], t, f)
        return self._shuffle_form(name, args, token)

    def _shuffle_form(self, name: str, args: list[ir.Expr], token: Token) -> ir.Expr | None:
        """Halide's shuffle spellings, each a ``Shuffle`` (None: not one)."""
        form = _SHUFFLE_FORMS.get(name)
        if form is None or len(args) < form[0]:
            return None
        return form[1](self, args, token)

    def _concat_vectors(self, args: list[ir.Expr], token: Token) -> ir.Expr:
        total = sum(a.type.lanes for a in args)
        return ir.Shuffle(tuple(args), tuple(range(total)))

    def _interleave_vectors(self, args: list[ir.Expr], token: Token) -> ir.Expr:
        lanes = args[0].type.lanes
        if any(a.type != args[0].type for a in args):
            raise self.error("interleave_vectors needs vectors of one type", token)
        n = len(args)
        return ir.Shuffle(tuple(args), tuple((i % n) * lanes + i // n for i in range(n * lanes)))

    def _slice_vectors(self, args: list[ir.Expr], token: Token) -> ir.Expr | None:
        if len(args) != 4:
            return None
        begin, stride, count = (int32_value(a) for a in args[1:])
        if begin is None or stride is None or count is None:
            raise self.error("slice_vectors takes a vector and three integer literals", token)
        return ir.Shuffle((args[0],), tuple(begin + i * stride for i in range(count)))

    def _extract_element(self, args: list[ir.Expr], token: Token) -> ir.Expr | None:
        if len(args) != 2:
            return None
        idx = int32_value(args[1])
        if idx is None:
            raise self.error("extract_element takes a vector and an integer literal", token)
        return ir.Shuffle((args[0],), (idx,))

    def _shuffle(self, args: list[ir.Expr], token: Token) -> ir.Expr:
        split = len(args)
        while split > 1 and int32_value(args[split - 1]) is not None:
            split -= 1
        if split == len(args):
            raise self.error("shuffle needs at least one integer lane index", token)
        indices = tuple(i for i in (int32_value(a) for a in args[split:]) if i is not None)
        total = sum(a.type.lanes for a in args[:split])
        if any(not 0 <= i < total for i in indices):
            raise self.error(f"shuffle index out of range: the inputs have {total} lanes", token)
        return ir.Shuffle(tuple(args[:split]), indices)

    def _lane_count(self, lanes: int, token: Token | Tree) -> int:
        if not 1 <= lanes <= ir.MAX_LANES:
            shown = lanes if lanes >= 0 else "that many"
            raise self.error(f"a vector has 1 to {ir.MAX_LANES} lanes in Halide, not {shown}", token)
        return lanes


_SHUFFLE_FORMS: dict[str, tuple[int, Callable[[CallForms, list[ir.Expr], Token], ir.Expr | None]]] = {
    "concat_vectors": (1, CallForms._concat_vectors),
    "interleave_vectors": (2, CallForms._interleave_vectors),
    "slice_vectors": (4, CallForms._slice_vectors),
    "extract_element": (2, CallForms._extract_element),
    "shuffle": (2, CallForms._shuffle),
}
"""Each shuffle spelling: the fewest arguments it takes, and its builder."""
