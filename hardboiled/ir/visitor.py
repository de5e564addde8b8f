"""Rebuilding IR: functions that map a statement or expression tree,
replacing the nodes a callback chooses."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from hardboiled.ir import nodes as ir

def _changed_fields(node: ir.Node, kind: type, fn: Callable[[Any], Any]) -> dict[str, Any]:
    """``fn`` applied to every field of ``node`` that is a ``kind`` or a tuple
    of them: the fields whose value changed (by identity), with new values."""
    changes: dict[str, Any] = {}
    for name in node.__dataclass_fields__:  # type: ignore[union-attr]
        value = getattr(node, name)
        if isinstance(value, kind):
            new = fn(value)
            if new is not value:
                changes[name] = new
        elif isinstance(value, tuple) and value and isinstance(value[0], kind):
            new_items = tuple(fn(item) for item in value)
            if any(a is not b for a, b in zip(new_items, value)):
                changes[name] = new_items
    return changes


def map_stmt(stmt: ir.Stmt, fn: Callable[[ir.Stmt], ir.Stmt | None]) -> ir.Stmt:
    """Rebuild ``stmt`` bottom-up; ``fn`` may replace any statement.

    Children are visited in field order, so stores are met in the same
    pre-order as ``extract.iter_stores``.
    """
    replaced = fn(stmt)
    if replaced is not None:
        return replaced
    changes = _changed_fields(stmt, ir.Stmt, lambda child: map_stmt(child, fn))
    if not changes:
        return stmt
    if isinstance(stmt, ir.Block):
        return ir.make_block(list(changes["stmts"]))

    return dataclasses.replace(stmt, **changes)  # type: ignore[type-var]


def map_expr(e: ir.Expr, fn: Callable[[ir.Expr], ir.Expr | None]) -> ir.Expr:
    """Rebuild ``e``; ``fn`` may replace any subexpression (a replaced one
    is not looked into)."""
    replaced = fn(e)
    if replaced is not None:
        return replaced
    changes = _changed_fields(e, ir.Expr, lambda child: map_expr(child, fn))
    return dataclasses.replace(e, **changes) if changes else e  # type: ignore[type-var]


def with_exprs(stmt: ir.Stmt, fn: Callable[[ir.Expr], ir.Expr | None]) -> ir.Stmt:
    """``stmt`` with ``map_expr`` applied to its own expressions (not to
    those of the statements inside it); ``stmt`` itself if none changed."""
    changes = _changed_fields(stmt, ir.Expr, lambda e: map_expr(e, fn))
    return dataclasses.replace(stmt, **changes) if changes else stmt  # type: ignore[type-var]
