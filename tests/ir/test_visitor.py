"""``rewrite`` (ir/visitor.py), against a plain recursive rebuild on
generated IR: the same result, the same calls in the same order, unchanged
subtrees kept as they were, and a shared subtree replaced once."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings

from hardboiled import ir
from hardboiled.ir.visitor import map_all_exprs, map_stmt, rewrite, with_exprs

from .. import ir_strategies as irs

SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _reference(node: Any, replace: Any, kinds: tuple[type, ...], seen: list[Any]) -> Any:
    """Pre-order calls, then each field rebuilt from its children (tuples looked into)."""
    seen.append(node)
    replacement = replace(node)
    if replacement is not None:
        return replacement

    def rebuilt(value: Any) -> Any:
        if isinstance(value, kinds):
            return _reference(value, replace, kinds, seen)
        if isinstance(value, tuple):
            items = tuple(rebuilt(item) for item in value)
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        return value

    changes = {f.name: new for f in dataclasses.fields(node)
               if (new := rebuilt(getattr(node, f.name))) is not getattr(node, f.name)}
    if not changes:
        return node
    if isinstance(node, ir.Block):
        return ir.make_block(list(changes["stmts"]))
    return dataclasses.replace(node, **changes)


def _bump(node: Any) -> Any:
    """A new node for every odd integer literal, and nothing else."""
    if isinstance(node, ir.IntImm) and node.value % 2:
        return ir.IntImm(node.value + 1, node.type)
    return None


@SETTINGS
@given(irs.statements(depth=4, expr_depth=3))
def test_rewrite_is_the_recursive_rebuild(stmt: ir.Stmt) -> None:
    for kinds in ((ir.Stmt, ir.Expr), (ir.Stmt,)):
        calls: list[Any] = []
        expected_calls: list[Any] = []

        def bump(node: Any, calls: list[Any] = calls) -> Any:
            calls.append(node)
            return _bump(node)

        result = rewrite(stmt, bump, kinds)
        assert result == _reference(stmt, _bump, kinds, expected_calls)
        assert len(calls) == len(expected_calls) and all(a is b for a, b in zip(calls, expected_calls, strict=True))
        if not any(isinstance(n, ir.IntImm) and n.value % 2 for n in calls):
            assert result is stmt  # nothing replaced: the very same tree
    assert rewrite(stmt, lambda node: None) is stmt
    assert map_all_exprs(stmt, lambda e: None) is stmt and map_stmt(stmt, lambda s: None) is stmt
    assert map_all_exprs(stmt, _bump) == _reference(stmt, lambda n: _bump(n) if isinstance(n, ir.Expr) else None,
                                                    (ir.Stmt, ir.Expr), [])
    assert with_exprs(stmt, _bump) == _reference(
        stmt, lambda n: (None if n is stmt else n) if isinstance(n, ir.Stmt) else _bump(n), (ir.Stmt, ir.Expr), [])


def test_a_shared_subtree_is_replaced_once_and_both_parents_get_it() -> None:
    shared = ir.Binary(ir.BinOp.ADD, ir.Variable("x", ir.INT32), ir.IntImm(1))
    tree = ir.Binary(ir.BinOp.MUL, shared, shared)
    made: list[ir.Expr] = []

    def number(node: Any) -> Any:
        if isinstance(node, ir.Variable):
            made.append(ir.Variable(f"v{len(made)}", node.type))
            return made[-1]
        return None

    result = rewrite(tree, number)
    assert len(made) == 1 and result.a is result.b and result.a.a is made[0]
