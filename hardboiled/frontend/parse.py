"""Reading Halide IR text into the IR of hardboiled/ir (the input kinds and
stages are in ``stages``, syntax errors in ``syntax_errors``).

Three kinds of input are accepted, and told apart by their content:

1. a bare statement, as Halide prints it after one lowering pass;
2. a whole ``HL_DEBUG_CODEGEN=2`` log, from which one "Lowering after NAME:"
   block is taken (``stage``, default ``vectorizing``);
3. ``compile_to_lowered_stmt`` text output (a module with functions and
   buffers).

The grammar (grammars/halide_ir.lark) is parsed with Lark's LALR parser. The
tree is then turned into typed IR by ``_TreeBuilder``, which tracks which
names are bound where, because Halide omits types that the reader is
expected to know: a load's element type comes from the buffer's
``allocate`` line or its ``X.type == (uint32)N`` assert, and a float16
literal may really be a bfloat16 one.

All errors are ``InputError`` diagnostics pointing into the original file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from lark import Token, Tree
from lark.exceptions import UnexpectedInput

from hardboiled import ir
from hardboiled.frontend.grammar import halide_parser
from hardboiled.frontend.literals import FLOAT_RE, FLOAT_SUFFIX_TYPES, as_bfloat, int32_value, unescape, unify_half
from hardboiled.frontend.stages import DEFAULT_STAGE, is_debug_log, select_stage
from hardboiled.frontend.syntax_errors import syntax_error
from hardboiled.ir.invariants import node_problem
from hardboiled.support.diagnostics import InputError, error_at

N = TypeVar("N", bound=ir.Node)

_TYPE_ASSERT_RE = re.compile(r"assert\(([^\s()]+)\.type == \(uint32\)(\d{1,10}),")
_ALLOCATE_RE = re.compile(r"^\s*allocate (\S+)\[((?:u?int|b?float)\d+)(?:x\d+)? ", re.MULTILINE)
_BROADCAST_NAME_RE = re.compile(r"x(\d+)")
_LOOKS_LIKE_SCALAR_TYPE = re.compile(r"(u?int|b?float)\d+(x\d+)?")


# --------------------------------------------------------------------------
# Inputs and stages
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParsedInput:
    """What ``parse_input`` found: the IR and where it came from."""

    kind: str
    """"stmt", "log" or "module"."""
    ir: ir.Stmt | ir.Module
    stage: str | None = None
    """The log stage the IR was taken from, for kind "log"."""
    filename: str = "<string>"
    text: str = ""
    """The whole input, for quoting source lines in diagnostics."""
    store_lines: tuple[int, ...] = ()
    """Line (in ``text``) of every Store, in the pre-order of ``ir.walk``."""


def parse_input(
    text: str,
    filename: str = "<string>",
    stage: str | None = None,
    buffer_types: dict[str, ir.Type] | None = None,
) -> ParsedInput:
    """Parse any of the three input kinds; see the module docstring."""
    if is_debug_log(text):
        body, offset, stage_name = select_stage(text, filename, stage or DEFAULT_STAGE)
        stmt, lines = _parse(body, filename, offset, buffer_types)
        return ParsedInput("log", stmt, stage_name, filename, text, lines)
    if stage is not None:
        raise error_at(
            f"--stage '{stage}' needs an HL_DEBUG_CODEGEN log, but this input has no "
            "'Lowering after' headers",
            filename,
            text,
            1,
            1,
        )
    result, lines = _parse(text, filename, 0, buffer_types)
    kind = "module" if isinstance(result, ir.Module) else "stmt"
    return ParsedInput(kind, result, None, filename, text, lines)


# --------------------------------------------------------------------------
# Lark
# --------------------------------------------------------------------------


def parse_text(
    text: str,
    filename: str = "<string>",
    line_offset: int = 0,
    buffer_types: dict[str, ir.Type] | None = None,
) -> ir.Stmt | ir.Module:
    """Parse a bare statement or a lowered module (not a log)."""
    return _parse(text, filename, line_offset, buffer_types)[0]


def _parse(
    text: str, filename: str, line_offset: int, buffer_types: dict[str, ir.Type] | None
) -> tuple[ir.Stmt | ir.Module, tuple[int, ...]]:
    if not text.strip():
        raise error_at("empty input: expected Halide IR", filename, text, 1, 1, line_offset=line_offset)
    ends_mid_line = not text.endswith("\n")
    if ends_mid_line:
        text += "\n"
    try:
        tree = halide_parser().parse(text)
    except UnexpectedInput as exc:
        error = syntax_error(exc, text, filename, line_offset)
        raise _mark_truncation(error, text, ends_mid_line, line_offset) from None
    known = _buffer_types_from_asserts(text)
    known.update(buffer_types or {})
    builder = _TreeBuilder(filename, text, line_offset, known)
    return builder.build(tree), tuple(builder.store_lines)


def _mark_truncation(error: InputError, text: str, ends_mid_line: bool, line_offset: int) -> InputError:
    """A syntax error on an unfinished last line means the file was cut short."""
    location = error.diagnostic.location
    last_line = text.count("\n") + line_offset
    if not ends_mid_line or location is None or location.line != last_line:
        return error
    if "truncated" in error.diagnostic.message:
        return error
    diagnostic = replace(
        error.diagnostic,
        message=error.diagnostic.message + "; the input ends in the middle of a line (truncated?)",
    )
    return InputError(diagnostic)


def _buffer_types_from_asserts(text: str) -> dict[str, ir.Type]:
    """Element types the whole text states: pipeline buffers' type asserts
    and allocations (a parallel closure reads a buffer that the enclosing
    function allocates, outside the closure's scope)."""
    found: dict[str, ir.Type] = {}
    for m in _TYPE_ASSERT_RE.finditer(text):
        t = ir.type_from_packed_halide_type(int(m.group(2)))
        if t is not None:
            found.setdefault(m.group(1), t)
    for m in _ALLOCATE_RE.finditer(text):
        t = ir.parse_type_name(m.group(2))
        if t is not None:
            found.setdefault(m.group(1), t)
    return found


# Readable names for the terminals that appear in "expected ..." lists.
# --------------------------------------------------------------------------
# Tree -> IR
# --------------------------------------------------------------------------

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
_REDUCE_OPS = {op.value: op for op in ir.ReduceOp}
_UNBOUND = object()


def _token(node: Tree | Token) -> Token:
    """A child that the grammar guarantees is a token (a literal or a name)."""
    assert isinstance(node, Token), node
    return node


def _first_token(node: Tree | Token | None) -> Token | None:
    """The leftmost token under a tree: the position to blame in errors."""
    stack: list[Tree | Token | None] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Token):
            return current
        if isinstance(current, Tree):
            stack.extend(reversed(current.children))
    return None




class _TreeBuilder:
    """Turns a Lark tree into typed IR, tracking names in scope."""

    def __init__(self, filename: str, text: str, line_offset: int, buffer_types: dict[str, ir.Type]):
        self.filename = filename
        self.text = text
        self.line_offset = line_offset
        self.buffer_types = buffer_types
        self.scope: dict[str, ir.Type] = {}
        self.func_types: dict[str, ir.Type] = {}
        self.store_lines: list[int] = []
        self._expr_rules: dict[str, Callable[[Tree], ir.Expr]] = {
            "binop_chain": self._binop_chain,
            "not_": self._not,
            "let_expr": self._let_expr,
            "predicated_load": self._predicated_load,
            "int_lit": lambda t: self._int_literal(t.children[0], ir.INT32),
            "float_lit": self._float_lit,
            "string_lit": self._string_lit,
            "var": lambda t: self._variable(str(t.children[0]), None),
            "typed": self._typed,
            "reinterpret": self._reinterpret,
            "call": lambda t: self._call(t, None),
            "let_lines": self._let_lines,
            "load": lambda t: self._load(t, None),
        }
        self._stmt_rules: dict[str, Callable[[Tree], ir.Stmt]] = {
            "assert_stmt": lambda t: ir.AssertStmt(self.expr(t.children[0]), self.expr(t.children[1])),
            "for_stmt": self._for,
            "free_stmt": lambda t: ir.Free(str(t.children[0])),
            "produce_stmt": lambda t: ir.ProducerConsumer(str(t.children[0]), True, self.body(t.children[1])),
            "consume_stmt": lambda t: ir.ProducerConsumer(str(t.children[0]), False, self.body(t.children[1])),
            "if_stmt": self._if,
            "store_stmt": lambda t: self._store(t.children, None),
            "predicated_store": self._predicated,
            "provide_stmt": lambda t: self._provide(t, None),
            "realize_stmt": self._realize,
            "prefetch_stmt": self._prefetch,
            "evaluate_stmt": lambda t: ir.Evaluate(self.expr(t.children[0])),
            "atomic_stmt": self._atomic,
            "fork_stmt": self._fork,
            "acquire_stmt": lambda t: ir.Acquire(
                self.expr(t.children[0]), self.expr(t.children[1]), self.body(t.children[2])
            ),
            "hoisted_stmt": self._hoisted,
        }

    # ------------------------------------------------------------ helpers
    def error(self, message: str, node: Tree | Token | None, notes: tuple[str, ...] = ()) -> InputError:
        token = _first_token(node)
        line = token.line if token is not None and token.line else 1
        column = token.column if token is not None and token.column else 1
        return error_at(message, self.filename, self.text, line, column, notes, self.line_offset)

    def bind(self, name: str, t: ir.Type) -> tuple[str, object]:
        previous = self.scope.get(name, _UNBOUND)
        self.scope[name] = t
        return name, previous

    def unbind(self, saved: tuple[str, object]) -> None:
        name, previous = saved
        if previous is _UNBOUND:
            del self.scope[name]
        else:
            self.scope[name] = previous  # type: ignore[assignment]

    def type_name(self, text: str, node: Tree | Token) -> ir.Type:
        if text.startswith("(") and text.endswith(")"):
            inner = text[1:-1]
            scalar = ir.parse_type_name(inner)
            if scalar is not None:
                return scalar
            if not _LOOKS_LIKE_SCALAR_TYPE.fullmatch(inner):
                return ir.handle_type(inner)
            text = inner
        t = ir.parse_type_name(text)
        if t is None:
            raise self.error(f"unknown type '{text if len(text) <= 60 else text[:40] + '...'}'", node)
        return t

    # ------------------------------------------------------------ modules
    def build(self, tree: Tree) -> ir.Stmt | ir.Module:
        (top,) = tree.children
        if top.data == "module":
            return self._module(top)
        return self.stmt_list(top)

    def _module(self, tree: Tree) -> ir.Module:
        header = str(tree.children[0])
        m = re.fullmatch(r"module name=(.*), target=(.*)", header)
        if m is None:
            raise self.error("malformed module header; expected 'module name=NAME, target=TARGET'", tree)
        buffers: list[ir.Buffer] = []
        functions: list[ir.LoweredFunc] = []
        for child in tree.children[1:]:
            if child.data == "buffer_decl":
                name, body = str(child.children[0]), str(child.children[1])
                buffers.append(ir.Buffer(name, None if body == "{...}" else body[2:-3]))
            else:
                linkage, name_token, *rest = child.children
                name = str(name_token)
                args = tuple(str(a) for a in rest[:-1] if a is not None)
                functions.append(ir.LoweredFunc(str(linkage), str(name), args, self.body(rest[-1])))
        return ir.Module(m.group(1), m.group(2), tuple(buffers), tuple(functions))

    # ------------------------------------------------------------ statements
    def body(self, tree: Tree) -> ir.Stmt:
        if not tree.children or tree.children[0] is None:
            return ir.NoOp()
        return self.stmt_list(tree.children[0])

    def stmt_list(self, tree: Tree) -> ir.Stmt:
        """Sequence statements; ``let`` and ``allocate`` scope over the rest."""
        open_scopes: list[tuple[list[ir.Stmt], Callable[[ir.Stmt], ir.Stmt]]] = []
        undo: list[tuple[str, object]] = []
        type_undo: list[tuple[str, ir.Type | None]] = []
        current: list[ir.Stmt] = []
        for item in tree.children:
            kind = item.data
            if kind == "let_stmt":
                name = str(item.children[0])
                value = self.expr(item.children[1])
                open_scopes.append((current, _let_closer(name, value)))
                undo.append(self.bind(name, value.type))
                current = []
            elif kind == "allocate_stmt":
                name, elem, closer = self._allocate_header(item)
                open_scopes.append((current, closer))
                undo.append(self.bind(name, _ALLOCATION_MARKER))
                type_undo.append((name, self.buffer_types.get(name)))
                self.buffer_types[name] = elem
                current = []
            else:
                rule = self._stmt_rules.get(kind)
                if rule is None:
                    raise self.error(f"unsupported statement '{kind}'", item)
                current.append(rule(item))
        result = ir.make_block(current)
        while open_scopes:
            outer, closer = open_scopes.pop()
            result = ir.make_block(outer + [closer(result)])
        for saved in reversed(undo):
            self.unbind(saved)
        for name, previous_type in reversed(type_undo):
            if previous_type is None:
                del self.buffer_types[name]
            else:
                self.buffer_types[name] = previous_type
        return result

    def _allocate_header(self, tree: Tree) -> tuple[str, ir.Type, Callable[[ir.Stmt], ir.Stmt]]:
        name_tok, type_tree, *rest = tree.children
        name = str(name_tok)
        elem = self.type_name(str(type_tree.children[0]), type_tree)
        extents: list[ir.Expr] = []
        memory = "Auto"
        condition = new_expr = free_function = padding = None
        for child in rest:
            if child is None:
                continue
            if child.data == "memory_type":
                memory = self._memory_type(child)
            elif child.data == "alloc_condition":
                condition = self.expr(child.children[0])
            elif child.data == "custom_new":
                new_expr = self.expr(child.children[0])
            elif child.data == "custom_delete":
                free_function = str(child.children[0])
            elif child.data == "padded_extents":
                *padded, last = (self.expr(c) for c in child.children)
                if not (isinstance(last, ir.Binary) and last.op is ir.BinOp.ADD):
                    raise self.error("a padded allocation ends with '+ padding'", child)
                extents.extend(padded)
                extents.append(last.a)
                padding = last.b
            else:
                extents.append(self.expr(child))
        shape = tuple(extents)

        def allocate(body: ir.Stmt) -> ir.Stmt:
            return ir.Allocate(name, elem, memory, shape, body, condition, new_expr, free_function, padding)

        return name, elem, allocate

    def _memory_type(self, tree: Tree) -> str:
        memory = str(tree.children[0])
        if memory not in ir.MEMORY_TYPES:
            raise self.error(
                f"unknown memory type '{memory}'", tree,
                notes=("known memory types: " + ", ".join(ir.MEMORY_TYPES),),
            )
        return memory

    def _for(self, tree: Tree) -> ir.Stmt:
        kind_tok, *rest = tree.children
        device = None
        if isinstance(rest[0], Token) and rest[0].type == "DEVICE_API":
            device = str(rest[0])[1:-1]
            if device not in ir.DEVICE_APIS:
                raise self.error(f"unknown device API '{device}'", rest[0])
            rest = rest[1:]
        name_tok, min_tree, extent_tree, body_tree = rest
        lo, extent = self.expr(min_tree), self.expr(extent_tree)
        saved = self.bind(str(name_tok), ir.INT32)
        body = self.body(body_tree)
        self.unbind(saved)
        return ir.For(str(name_tok), lo, extent, ir.ForKind(str(kind_tok)), device, body)

    def _if(self, tree: Tree) -> ir.Stmt:
        cond, then_tree, *else_part = tree.children
        else_case = self._else(else_part[0]) if else_part and else_part[0] is not None else None
        return ir.IfThenElse(self.expr(cond), self.body(then_tree), else_case)

    def _else(self, tree: Tree) -> ir.Stmt:
        if tree.data == "else_part":
            return self.body(tree.children[0])
        cond, then_tree, *rest = tree.children
        else_case = self._else(rest[0]) if rest and rest[0] is not None else None
        return ir.IfThenElse(self.expr(cond), self.body(then_tree), else_case)

    def _predicated(self, tree: Tree) -> ir.Stmt:
        predicate_tree, inner = tree.children
        if inner.data == "provide_stmt":
            return self._provide(inner, predicate_tree)
        return self._store(inner.children, predicate_tree)

    def _provide(self, tree: Tree, predicate_tree: Tree | None) -> ir.Stmt:
        name_tok, args_tree, values_tree = tree.children
        args = tuple(self.expr(e) for e in args_tree.children if e is not None)
        values = tuple(self.expr(e) for e in values_tree.children)
        # Halide prints calls to a realized Func without their type; the
        # Func's first definition tells it.
        self.func_types.setdefault(str(name_tok), values[0].type.element())
        predicate = self.expr(predicate_tree) if predicate_tree is not None else None
        return ir.Provide(str(name_tok), values, args, predicate)

    def _realize(self, tree: Tree) -> ir.Stmt:
        name_tok, *rest = tree.children
        bounds: list[tuple[ir.Expr, ir.Expr]] = []
        memory = "Auto"
        condition = None
        for child in rest[:-1]:
            if child is None:
                continue
            if child.data == "realize_bound":
                bounds.append((self.expr(child.children[0]), self.expr(child.children[1])))
            elif child.data == "memory_type":
                memory = self._memory_type(child)
            else:
                condition = self.expr(child.children[0])
        saved = self.bind(str(name_tok), _ALLOCATION_MARKER)
        body = self.body(rest[-1])
        self.unbind(saved)
        return ir.Realize(str(name_tok), memory, tuple(bounds), body, condition)

    def _prefetch(self, tree: Tree) -> ir.Stmt:
        name_tok, at_tree, from_tree, *bounds = tree.children
        pairs = tuple(
            (self.expr(b.children[0]), self.expr(b.children[1])) for b in bounds if b is not None
        )
        return ir.Prefetch(str(name_tok), self.expr(at_tree), self.expr(from_tree), pairs)

    def _store(self, children: list, predicate_tree: Tree | None) -> ir.Stmt:
        name_tok, index_tree, alignment_tree, value_tree = children
        alignment = self._alignment(alignment_tree)
        value = self.expr(value_tree)
        elem = self.buffer_types.get(str(name_tok))
        if elem is not None and elem.code is ir.TypeCode.BFLOAT and (as_bf := as_bfloat(value)) is not None:
            value = as_bf
        predicate = self.expr(predicate_tree) if predicate_tree is not None else None
        self.store_lines.append(name_tok.line + self.line_offset)
        return self.checked(ir.Store(str(name_tok), value, self.expr(index_tree), predicate, alignment), name_tok)

    def _fork(self, tree: Tree) -> ir.Stmt:
        bodies = [self.body(b) for b in tree.children]
        result = bodies[-1]
        for first in reversed(bodies[:-1]):
            result = ir.Fork(first, result)
        return result

    def _atomic(self, tree: Tree) -> ir.Stmt:
        names = [str(c) for c in tree.children[:-1]]
        mutex = names[1] if len(names) > 1 else None
        return ir.Atomic(names[0], mutex, self.body(tree.children[-1]))

    def _hoisted(self, tree: Tree) -> ir.Stmt:
        name = str(tree.children[0]) if len(tree.children) > 1 else None
        return ir.HoistedStorage(name, self.body(tree.children[-1]))

    # ------------------------------------------------------------ expressions
    def expr(self, tree: Tree) -> ir.Expr:
        rule = self._expr_rules.get(tree.data)
        if rule is None:
            raise self.error(f"unsupported expression '{tree.data}'", tree)
        return self.checked(rule(tree), tree)

    def checked(self, node: N, tree: Tree | Token) -> N:
        """``node``, if its types and lanes agree (ir/invariants.py); a
        mismatch is the input's error, located here, not a crash later."""
        problem = node_problem(node)
        if problem is not None:
            raise self.error(problem, tree)
        return node

    def _binop_chain(self, tree: Tree) -> ir.Expr:
        """Apply C precedence (left-associative) to ``a op b op c ...``."""
        children = tree.children
        operands = [self.expr(c) for c in children[0::2]]
        operators = [_token(c) for c in children[1::2]]
        # Shunting-yard over the flat chain.
        out: list[ir.Expr] = [operands[0]]
        pending: list[Token] = []
        for op_tok, operand in zip(operators, operands[1:]):
            level = _PRECEDENCE[str(op_tok)]
            while pending and _PRECEDENCE[str(pending[-1])] >= level:
                self._reduce(out, pending.pop())
            pending.append(op_tok)
            out.append(operand)
        while pending:
            self._reduce(out, pending.pop())
        return out[0]

    def _reduce(self, out: list[ir.Expr], op_tok: Token) -> None:
        b = out.pop()
        a = out.pop()
        a, b = unify_half(a, b)
        a, b = self._type_func_call(a, b.type), self._type_func_call(b, a.type)
        if a.type != b.type:
            raise self.error(
                f"operands of '{op_tok}' have different types: {a.type} and {b.type}", op_tok
            )
        out.append(ir.Binary(_BINOPS[str(op_tok)], a, b))

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
        assert isinstance(token, Token)  # a Token is a str: passed on without a copy
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
        tokens = [_token(child) for child in tree.children[:2]]
        for token in tokens:
            if len(token.lstrip("-")) > 18:
                raise self.error("alignment out of range: Halide prints one that fits in int64", token)
        return int(tokens[0]), int(tokens[1])

    def _lane_count(self, lanes: int, token: Token | Tree) -> int:
        if not 1 <= lanes <= ir.MAX_LANES:
            shown = lanes if lanes >= 0 else "that many"
            raise self.error(f"a vector has 1 to {ir.MAX_LANES} lanes in Halide, not {shown}", token)
        return lanes

    def _int_literal(self, token: Token | Tree, t: ir.Type) -> ir.Expr:
        """An integer literal of type ``t`` (int32 when Halide prints it
        bare), which must fit in it: Halide never prints one that does not."""
        text = _token(token)
        digits = text.lstrip("-")
        low, high = (0, 2 ** t.bits - 1) if t.is_uint else (-(2 ** (t.bits - 1)), 2 ** (t.bits - 1) - 1)
        if len(digits) > len(str(2 ** t.bits)) or not low <= int(text) <= high:
            shown = text if len(text) <= 40 else f"{text[:20]}...({len(digits)} digits)"
            raise self.error(f"integer literal {shown} does not fit in {t} ({low} to {high})", token,
                             notes=("Halide prints a wider literal with its type, e.g. (int64)5000000000",)
                             if not t.is_uint and t.bits == 32 else ())
        return ir.UIntImm(int(text), t) if t.is_uint else ir.IntImm(int(text), t)

    def _variable(self, name: str, declared: ir.Type | None) -> ir.Expr:
        if declared is not None:
            return ir.Variable(name, declared)
        bound = self.scope.get(name)
        if bound is None or bound is _ALLOCATION_MARKER:
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
            if elem is None and bound is not None and bound.is_handle and bound is not _ALLOCATION_MARKER:
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

    def _call(self, tree: Tree, declared: ir.Type | None) -> ir.Expr:
        name_node, *arg_trees = tree.children
        name_tok = _token(name_node)
        name = str(name_tok)
        args = [self.expr(a) for a in arg_trees if a is not None]
        if declared is not None:
            if name.startswith("vector_reduce_"):
                op = _REDUCE_OPS.get(name[len("vector_reduce_") :])
                if op is None or len(args) != 1:
                    raise self.error(
                        f"unknown vector reduction '{name}'", name_tok,
                        notes=("known: " + ", ".join(f"vector_reduce_{o}" for o in _REDUCE_OPS),),
                    )
                if declared.lanes == 0 or args[0].type.lanes % declared.lanes:
                    raise self.error(
                        f"{name} to {declared} from {args[0].type.lanes} lanes: the lanes must divide",
                        name_tok,
                    )
                return ir.VectorReduce(op, args[0], declared)
            return ir.Call(name, tuple(args), declared)
        node = None if name in self.scope else self._intrinsic_form(name, args, name_tok)
        if node is not None:
            return node
        func_type = self.func_types.get(name) if name in self.scope else None
        return ir.Call(name, tuple(args), func_type or ir.INT32)

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


_SHUFFLE_FORMS: dict[str, tuple[int, Callable[[_TreeBuilder, list[ir.Expr], Token], ir.Expr | None]]] = {
    "concat_vectors": (1, _TreeBuilder._concat_vectors),
    "interleave_vectors": (2, _TreeBuilder._interleave_vectors),
    "slice_vectors": (4, _TreeBuilder._slice_vectors),
    "extract_element": (2, _TreeBuilder._extract_element),
    "shuffle": (2, _TreeBuilder._shuffle),
}
"""Each shuffle spelling: the fewest arguments it takes, and its builder."""


# The scope entry for an allocation: a name whose loads get the allocation's
# element type and whose bare references are handles.
_ALLOCATION_MARKER = ir.handle_type("hardboiled allocation")


def _let_closer(name: str, value: ir.Expr) -> Callable[[ir.Stmt], ir.Stmt]:
    return lambda body: ir.LetStmt(name, value, body)


def parse_type_option(text: str) -> ir.Type:
    """Parse a ``--buffer-type`` value such as ``bfloat16``."""
    t = ir.parse_type_name(text)
    if t is None or t.lanes != 1:
        raise ValueError(f"'{text}' is not a scalar Halide type such as float32 or bfloat16")
    return t

