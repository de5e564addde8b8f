"""The one way passes walk and rebuild the IR.

* ``Visitor`` dispatches on the node's class: ``visit(node)`` calls
  ``visit_<snake_case class name>`` (``visit_let_stmt`` for ``LetStmt``),
  or ``visit_default`` when the subclass has no such method. The printer,
  the interpreter and the code generators are visitors.
* ``rewrite`` (and the ``Rewriter`` class around it) rebuilds a tree
  bottom-up with an explicit stack, so no input is too deep for it, and
  memoizes by node identity, so a subtree shared by two parents is
  rebuilt once. A callback sees each node before its children (pre-order,
  fields in declaration order) and may replace it; a replaced node is not
  looked into.
* ``map_stmt``, ``map_expr`` and ``with_exprs`` are the three rewrites the
  passes need most: over statements only, over expressions only, and over
  one statement's own expressions.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from hardboiled.ir import nodes as ir
from hardboiled.ir.traversal import children_functions, node_fields

R = TypeVar("R")
N = TypeVar("N", ir.Stmt, ir.Expr)

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def method_suffix(cls: type) -> str:
    """``LetStmt`` -> ``let_stmt``: the suffix of a visitor method."""
    return method_suffix_of(cls.__name__)


def method_suffix_of(name: str) -> str:
    """A CamelCase name in snake_case, as method names spell it."""
    return _CAMEL_BOUNDARY.sub("_", name).lower()


class Visitor(Generic[R]):
    """Type-dispatched visitor; subclasses define ``visit_<node>`` methods."""

    _functions: ClassVar[dict[type, Callable[[Any, Any], Any] | None]]
    """Each node type's ``visit_<node>`` function (None: ``visit_default``),
    looked up once per class: the interpreter visits millions of nodes."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._functions = {}

    def visit(self, node: Any) -> R:
        try:
            function = self._functions[type(node)]
        except KeyError:
            function = self._functions[type(node)] = getattr(type(self), "visit_" + method_suffix(type(node)), None)
        if function is None:
            return self.visit_default(node)
        result: R = function(self, node)
        return result

    def visit_default(self, node: Any) -> R:
        raise NotImplementedError(f"{type(self).__name__} has no visit_{method_suffix(type(node))}")


Replace = Callable[[Any], Any]
"""A rewrite callback: a node's replacement, or None to keep it (and look
into its children)."""


def _rebuild(node: Any, changes: dict[str, Any]) -> Any:
    if not changes:
        return node
    if isinstance(node, ir.Block):
        return ir.make_block(list(changes["stmts"]))
    return dataclasses.replace(node, **changes)


def _rebuilt_fields(node: Any, kinds: tuple[type, ...], memo: dict[int, Any]) -> dict[str, Any]:
    """The fields of ``node`` whose nodes were rebuilt, with their new values."""
    changes: dict[str, Any] = {}
    for name in node_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, kinds):
            new = memo[id(value)]
        elif type(value) is tuple:
            new = _rebuilt_tuple(value, kinds, memo)
        else:
            continue
        if new is not value:
            changes[name] = new
    return changes


def _rebuilt_tuple(value: tuple[Any, ...], kinds: tuple[type, ...], memo: dict[int, Any]) -> tuple[Any, ...]:
    items = tuple(memo[id(item)] if isinstance(item, kinds) else
                  _rebuilt_tuple(item, kinds, memo) if type(item) is tuple else item for item in value)
    return value if all(a is b for a, b in zip(items, value)) else items


_EVERY_KIND = frozenset({(ir.Stmt, ir.Expr), (ir.Expr, ir.Stmt)})


def rewrite(root: Any, replace: Replace, kinds: tuple[type, ...] = (ir.Stmt, ir.Expr)) -> Any:
    """Rebuild ``root``, descending into children of ``kinds`` only.

    ``replace`` is called once per distinct node object, in pre-order; the
    tree is rebuilt bottom-up, and unchanged subtrees are kept as they are
    (so ``rewrite(t, lambda n: None) is t``). A subtree that two parents
    share (the same object twice) is replaced once and both parents get
    that result: a callback that numbers what it creates (staging buffers)
    numbers a shared subtree once. The parser never shares nodes."""
    memo: dict[int, Any] = {}
    every_kind = kinds in _EVERY_KIND
    children_of = children_functions()
    stack: list[tuple[Any, bool]] = [(root, False)]
    pop, push = stack.pop, stack.append
    while stack:
        node, children_done = pop()
        if children_done:
            memo[id(node)] = _rebuild(node, _rebuilt_fields(node, kinds, memo))
            continue
        if id(node) in memo:
            continue
        replacement = replace(node)
        if replacement is not None:
            memo[id(node)] = replacement
            continue
        found = children_of[type(node)](node)
        if not every_kind:
            found = [child for child in found if isinstance(child, kinds)]
        if not found:  # a leaf: nothing to rebuild it from
            memo[id(node)] = node
            continue
        push((node, True))
        for child in reversed(found):
            push((child, False))
    return memo[id(root)]


class Rewriter:
    """A rewrite as a class: ``rewrite_<node>`` methods return a node's
    replacement or None. Call the instance on a tree."""

    kinds: tuple[type, ...] = (ir.Stmt, ir.Expr)
    """The children it descends into."""

    def replace(self, node: Any) -> Any:
        method = getattr(self, "rewrite_" + method_suffix(type(node)), None)
        return method(node) if method is not None else None

    def __call__(self, root: N) -> N:
        result: N = rewrite(root, self.replace, self.kinds)
        return result


def map_stmt(stmt: ir.Stmt, fn: Callable[[ir.Stmt], ir.Stmt | None]) -> ir.Stmt:
    """Rebuild ``stmt``; ``fn`` may replace any statement (expressions are
    not looked into). Stores are met in the pre-order of
    ``extract.iter_stores``."""
    result: ir.Stmt = rewrite(stmt, fn, (ir.Stmt,))
    return result


def map_expr(e: ir.Expr, fn: Callable[[ir.Expr], ir.Expr | None]) -> ir.Expr:
    """Rebuild ``e``; ``fn`` may replace any subexpression (a replaced one
    is not looked into)."""
    result: ir.Expr = rewrite(e, fn, (ir.Expr,))
    return result


def with_exprs(stmt: ir.Stmt, fn: Callable[[ir.Expr], ir.Expr | None]) -> ir.Stmt:
    """``stmt`` with ``map_expr`` applied to its own expressions (not to
    those of the statements inside it); ``stmt`` itself if none changed."""

    def own_expressions(node: Any) -> Any:
        if isinstance(node, ir.Stmt):
            return None if node is stmt else node
        return fn(node)

    result: ir.Stmt = rewrite(stmt, own_expressions)
    return result


def map_all_exprs(stmt: ir.Stmt, fn: Callable[[ir.Expr], ir.Expr | None]) -> ir.Stmt:
    """``stmt`` with ``map_expr`` applied to the expressions of every
    statement inside it (substituting a variable, shifting an index)."""

    def expressions_only(node: Any) -> Any:
        return fn(node) if isinstance(node, ir.Expr) else None

    result: ir.Stmt = rewrite(stmt, expressions_only)
    return result
