"""The tree builder of statements and modules: ``TreeBuilder``, which turns
the whole Lark tree into typed IR.

Owns the scoping of statements: ``let`` and ``allocate`` cover the rest of
their block (``stmt_list``), loops, realizations and lets bind names for
their bodies, an allocation states the element type of its buffer, and a
``Provide`` states the type of its Func. Every Store's line is recorded
(``store_lines``) for diagnostics. Expressions are ``ExpressionBuilder``'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hardboiled import ir
from hardboiled.frontend.builder_base import ALLOCATION_MARKER, token_of
from hardboiled.frontend.expressions import ExpressionBuilder
from hardboiled.frontend.literals import as_bfloat
from hardboiled.frontend.syntax_tree import Tree


class TreeBuilder(ExpressionBuilder):
    """Turns a Lark tree into typed IR, tracking names in scope."""

    def __init__(self, filename: str, text: str, line_offset: int, buffer_types: dict[str, ir.Type]):
        super().__init__(filename, text, line_offset, buffer_types)
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
                undo.append(self.bind(name, ALLOCATION_MARKER))
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
        first = rest[0]
        if isinstance(first, str) and token_of(first).type == "DEVICE_API":
            device = first[1:-1]
            if device not in ir.DEVICE_APIS:
                raise self.error(f"unknown device API '{device}'", token_of(first))
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
        saved = self.bind(str(name_tok), ALLOCATION_MARKER)
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


def _let_closer(name: str, value: ir.Expr) -> Callable[[ir.Stmt], ir.Stmt]:
    return lambda body: ir.LetStmt(name, value, body)
