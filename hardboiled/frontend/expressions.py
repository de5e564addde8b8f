"""The tree builder of expressions: Halide's expression text to typed IR.

Owns what Halide leaves the reader to infer in an expression: C precedence
over a flat operator chain (``_binop_chain``), the types of variables (from
the ``let``, loop or allocation that binds them), the element type of a
load (from the buffer's ``allocate``, its type assert, a typed load or
``--buffer-type``), the type of a call to a realized Func (its first
definition, or the operand it meets), and literals that must fit their
type. Calls that are IR nodes are ``call_forms``'; literal values and
float16/bfloat16 are ``literals``'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hardboiled import ir
from hardboiled.frontend.builder_base import ALLOCATION_MARKER, token_of
from hardboiled.frontend.call_forms import CallForms
from hardboiled.frontend.literals import FLOAT_RE, FLOAT_SUFFIX_TYPES, SHORT_INT32, unescape, unify_half
from hardboiled.frontend.syntax_tree import IntRun, Token, Tree
from hardboiled.ir import operations
from hardboiled.ir.invariants import NODE_CHECKS

_BINOPS = {
    "+": ir.BinOp.ADD,
    "-": ir.BinOp.SUB,
    "*": ir.BinOp.MUL,
    "/": ir.BinOp.DIV,
    "%": ir.BinOp.MOD,
    "==": ir.BinOp.EQ,
    "!=": ir.BinOp.NE,
    "<": ir.BinOp.LT,
    "<=": ir.BinOp.LE,
    ">": ir.BinOp.GT,
    ">=": ir.BinOp.GE,
    "&&": ir.BinOp.AND,
    "||": ir.BinOp.OR,
}
_PRECEDENCE = {
    "||": 1, "&&": 2,
    "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
    "+": 4, "-": 4,
    "*": 5, "/": 5, "%": 5,
}


class ExpressionBuilder(CallForms):
    """Turns the expression subtrees of a Lark tree into typed IR."""

    def __init__(self, filename: str, text: str, line_offset: int, buffer_types: dict[str, ir.Type]):
        super().__init__(filename, text, line_offset, buffer_types)
        self._expr_rules: dict[str, Callable[[Tree], ir.Expr]] = {
            "binop_chain": self._binop_chain,
            "not_": self._not,
            "let_expr": self._let_expr,
            "predicated_load": self._predicated_load,
            "int_lit": lambda t: self._int_literal(t.children[0], ir.INT32),
            "float_lit": self._float_lit,
            "string_lit": self._string_lit,
            "var": lambda t: self._variable(str(t.children[0]), None, t),
            "typed": self._typed,
            "reinterpret": self._reinterpret,
            "call": lambda t: self._call(t, None),
            "let_lines": self._let_lines,
            "load": lambda t: self._load(t, None),
        }

    def expr(self, tree: Tree) -> ir.Expr:
        if tree.data == "int_lit":
            # The most common expression (one in six outside the reader's
            # runs of literals): what ``_int_literal`` makes of nine digits
            # or fewer, which need no bounds and no check of types and lanes.
            text = tree.children[0]
            if len(text) <= SHORT_INT32:
                return ir.IntImm(int(text))
        rule = self._expr_rules.get(tree.data)
        if rule is None:
            raise self.error(f"unsupported expression '{tree.data}'", tree)
        node = rule(tree)
        check = NODE_CHECKS.get(type(node))  # ``checked``, written out: once per node built
        if check is not None:
            problem = check(node)
            if problem is not None:
                raise self.error(problem, tree)
        return node

    def _binop_chain(self, tree: Tree) -> ir.Expr:
        """Apply C precedence (left-associative) to ``a op b op c ...``."""
        children = tree.children
        if len(children) == 3:  # one operator: most chains
            out = [self.expr(children[0]), self.expr(children[2])]
            self._reduce(out, children[1])
            return out[0]
        operands = [self.expr(c) for c in children[0::2]]
        operators: list[Token] = children[1::2]  # tokens, by the grammar (a token is a str: a key as it is)
        # Shunting-yard over the flat chain.
        out = [operands[0]]
        pending: list[Token] = []
        for op_tok, operand in zip(operators, operands[1:]):
            level = _PRECEDENCE[op_tok]
            while pending and _PRECEDENCE[pending[-1]] >= level:
                self._reduce(out, pending.pop())
            pending.append(op_tok)
            out.append(operand)
        while pending:
            self._reduce(out, pending.pop())
        return out[0]

    def _reduce(self, out: list[ir.Expr], op_tok: Token) -> None:
        b = out.pop()
        a = out.pop()
        if a.type == b.type:  # the usual case: nothing to retype (asked once: a sum's type walks its left operands)
            out.append(ir.Binary(_BINOPS[op_tok], a, b))
            return
        a, b = unify_half(a, b)
        a, b = self._type_func_call(a, b.type), self._type_func_call(b, a.type)
        if a.type != b.type:
            raise self.error(
                f"operands of '{op_tok}' have different types: {a.type} and {b.type}", op_tok
            )
        out.append(ir.Binary(_BINOPS[op_tok], a, b))

    def _type_func_call(self, e: ir.Expr, partner: ir.Type) -> ir.Expr:
        """A call to a realized Func whose type nothing stated yet (an extern
        stage) takes the type of the operand it meets."""
        if (
            isinstance(e, ir.Call) and e.type == ir.INT32 and partner != ir.INT32
            and e.name in self.scope and e.name not in self.func_types and not partner.is_vector
        ):
            self.func_types[e.name] = partner
            return ir.Call(e.name, e.args, partner)
        return e

    def _let_expr(self, tree: Tree) -> ir.Expr:
        name_tok, value_tree, body_tree = tree.children
        value = self.expr(value_tree)
        saved = self.bind(str(name_tok), value.type)
        body = self.expr(body_tree)
        self.unbind(saved)
        return ir.Let(str(name_tok), value, body)

    def _string_lit(self, tree: Tree) -> ir.Expr:
        token = tree.children[0]
        assert isinstance(token, str)  # a token is a str: passed on without a copy
        value = unescape(token)
        if value is None:
            raise self.error(
                "malformed escape in string literal", tree,
                notes=("Halide escapes are \\\", \\\\, \\t, \\r, \\n and \\xHH",),
            )
        return ir.StringImm(value)

    def _not(self, tree: Tree) -> ir.Expr:
        value = self.expr(tree.children[0])
        if not value.type.is_bool:
            raise self.error(f"'!' needs a boolean operand, not {value.type}", tree)
        return ir.Not(value)

    def _let_lines(self, tree: Tree) -> ir.Expr:
        *let_lines, body_tree = tree.children
        names = [str(line.children[0]) for line in let_lines]
        values: list[ir.Expr] = []
        saved = []
        for name, value_tree in zip(names, (line.children[1] for line in let_lines)):
            value = self.expr(value_tree)
            values.append(value)
            saved.append(self.bind(name, value.type))
        result = self.expr(body_tree)
        for entry in reversed(saved):
            self.unbind(entry)
        for name, value in zip(reversed(names), reversed(values)):
            result = ir.Let(name, value, result)
        return result

    def _predicated_load(self, tree: Tree) -> ir.Expr:
        target = tree.children[0]
        if target.data == "typed_load":
            prefix_tok, load_tree = target.children
            load = self._load(load_tree, self.type_name(str(prefix_tok), prefix_tok))
        else:
            load = self._load(target, None)
        return ir.Load(load.name, load.index, load.type, self.expr(tree.children[1]), load.alignment)

    def _float_lit(self, tree: Tree) -> ir.Expr:
        m = FLOAT_RE.fullmatch(str(tree.children[0]))
        assert m is not None, "the FLOAT terminal and FLOAT_RE disagree"
        return ir.FloatImm(float(m.group(1)), FLOAT_SUFFIX_TYPES[m.group(2)])

    def _alignment(self, tree: Tree | None) -> tuple[int, int] | None:
        """``aligned(MODULUS, REMAINDER)``: Halide prints numbers that fit in int64."""
        if tree is None:
            return None
        tokens = [token_of(child) for child in tree.children[:2]]
        for token in tokens:
            if len(token.lstrip("-")) > 18:
                raise self.error("alignment out of range: Halide prints one that fits in int64", token)
        return int(tokens[0]), int(tokens[1])

    def _int_literal(self, token: Token | Tree, t: ir.Type) -> ir.Expr:
        """An integer literal of type ``t`` (int32 when Halide prints it
        bare), which must fit in it: Halide never prints one that does not."""
        text = token_of(token)
        if t is ir.INT32 and len(text) <= SHORT_INT32:
            # The common case, decided without the bounds.
            return ir.IntImm(int(text))
        digits = text.lstrip("-")
        low, high = (0, 2 ** t.bits - 1) if t.is_uint else (-(2 ** (t.bits - 1)), 2 ** (t.bits - 1) - 1)
        if len(digits) > len(str(2 ** t.bits)) or not low <= int(text) <= high:
            shown = text if len(text) <= 40 else f"{text[:20]}...({len(digits)} digits)"
            raise self.error(f"integer literal {shown} does not fit in {t} ({low} to {high})", token,
                             notes=("Halide prints a wider literal with its type, e.g. (int64)5000000000",)
                             if not t.is_uint and t.bits == 32 else ())
        return ir.UIntImm(int(text), t) if t.is_uint else ir.IntImm(int(text), t)

    def _variable(self, name: str, declared: ir.Type | None, site: Tree | None = None) -> ir.Expr:
        if declared is not None:
            return ir.Variable(name, declared)
        bound = self.scope.get(name)
        if bound is None and site is not None:
            self.free_reads.setdefault(name, site)
        if bound is None or bound is ALLOCATION_MARKER:
            return ir.Variable(name, ir.INT32 if bound is None else ir.handle_type())
        return ir.Variable(name, bound)

    def _typed(self, tree: Tree) -> ir.Expr:
        prefix_tok, operand = tree.children
        t = self.type_name(str(prefix_tok), prefix_tok)
        kind = operand.data
        if kind == "int_lit":
            if not (t.is_int or t.is_uint):
                raise self.error(f"integer literal cannot have type {t}", prefix_tok)
            return self._int_literal(operand.children[0], t)
        if kind == "float_lit":
            lit = self._float_lit(operand)
            assert isinstance(lit, ir.FloatImm)
            return ir.FloatImm(lit.value, t)
        if kind == "var":
            return self._variable(str(operand.children[0]), t)
        if kind == "call":
            return self._call(operand, t)
        if kind == "cast_operand":
            # A cast to a handle type prints as `(uint8_t *)(value)`.
            return ir.Cast(t, self.expr(operand.children[0]))
        return self._load(operand, t)

    def _reinterpret(self, tree: Tree) -> ir.Expr:
        token = tree.children[0]
        type_text = str(token)[len("reinterpret<") : -1]
        return ir.Reinterpret(self.type_name(type_text, token), self.expr(tree.children[1]))

    def _load(self, tree: Tree, declared: ir.Type | None) -> ir.Load:
        name_tok, index_tree, alignment_tree = tree.children
        name = str(name_tok)
        index = self.expr(index_tree)
        lanes = index.type.lanes
        if declared is not None:
            t = declared if declared.lanes == lanes else declared.with_lanes(lanes)
        else:
            elem = self.buffer_types.get(name)
            bound = self.scope.get(name)
            if elem is None and bound is not None and bound.is_handle and bound is not ALLOCATION_MARKER:
                # A pointer bound by `let` with no pipeline type assert is
                # runtime state (e.g. `cuda[0]` in GPU host code): its
                # elements are opaque pointers.
                elem = ir.handle_type()
            if elem is None:
                raise self.error(
                    f"cannot determine the element type of buffer '{name}'",
                    name_tok,
                    notes=(
                        f"no 'allocate {name}[...]', no 'assert({name}.type == (uint32)N, ...)' "
                        f"and no typed load '(T){name}[...]' precedes this load",
                        "pass its type with --buffer-type NAME=TYPE",
                    ),
                )
            t = elem.with_lanes(lanes)
        return ir.Load(name, index, t, None, self._alignment(alignment_tree))

    def _arguments(self, arg_trees: list[Any]) -> list[ir.Expr]:
        """A call's arguments; a run of integer literals (``IntRun``) is
        what ``_int_literal`` makes of each (``SHORT_INT32`` characters or
        fewer)."""
        args: list[ir.Expr] = []
        for tree in arg_trees:
            if isinstance(tree, IntRun):
                args += map(ir.IntImm, map(int, tree.texts))
            elif tree is not None:
                args.append(self.expr(tree))
        return args

    def _call(self, tree: Tree, declared: ir.Type | None) -> ir.Expr:
        name_tok: Token
        name_tok, *arg_trees = tree.children  # a NAME token, by the grammar
        name = str(name_tok)
        if arg_trees and isinstance(arg_trees[-1], IntRun) and name == "shuffle" and declared is None \
                and name not in self.scope:
            # lane indices read at once, with no literal made of each
            return self._shuffle(self._arguments(arg_trees[:-1]), name_tok, list(map(int, arg_trees[-1].texts)))
        args = self._arguments(arg_trees)
        if declared is not None:
            if name.startswith("vector_reduce_"):
                return self._vector_reduce(name, args, declared, name_tok)
            return ir.Call(name, tuple(args), declared)
        if name in self.scope:
            # A realized Func (or an extern stage): its type, once known.
            return ir.Call(name, tuple(args), self.func_types.get(name) or ir.INT32)
        node = self._intrinsic_form(name, args, name_tok)
        if node is not None:
            return node
        operation = operations.find(name)
        if operation is not None and operation.typed_as_first and args:
            return ir.Call(name, tuple(args), args[0].type)  # Halide prints popcount(x) untyped
        return ir.Call(name, tuple(args), ir.INT32)
