"""The IR's invariants, checked after every pass in the tests and under
``--verify-ir``.

Node constructors already make some errors impossible (a compound
expression derives its type from its operands). What they cannot see is
checked here:

* types and lane counts agree: the operands of a binary operator have one
  type, a select's branches one type and its condition one lane or as many
  as they have, a load's index as many lanes as the load, a store's index
  as many as its value, a ramp's base and stride one type, a cast keeps
  its lanes, a shuffle picks lanes that exist, a reduction divides lanes;
* every load and store names a buffer in scope: allocated (or realized)
  around it, a pipeline buffer (``X.buffer``), a name bound by a ``let``,
  or an argument of the lowered function;
* a name that a loop or let defines is read only inside it (a name no
  loop or let defines is a scalar Param).

A violation is a bug in the pass that ran last, so it is an internal
error that names the pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hardboiled.ir import nodes as ir
from hardboiled.ir.printer import print_ir
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError, InputError


class InvariantViolation(HardboiledError):
    """A pass produced IR that breaks an invariant: a bug in hardboiled."""

    exit_code = ExitCode.INTERNAL_ERROR


@dataclass(frozen=True, slots=True)
class Violation:
    message: str
    node: ir.Node


def _shown(node: ir.Node) -> str:
    text = print_ir(node).strip().split("\n", 1)[0]
    return text if len(text) <= 160 else text[:157] + "..."


def _binary_problem(e: ir.Binary) -> str | None:
    if e.a.type != e.b.type:
        return f"operands of {e.op.value} have types {e.a.type} and {e.b.type}"
    return None


def _select_problem(e: ir.Select) -> str | None:
    if e.true_value.type != e.false_value.type:
        return f"select branches have types {e.true_value.type} and {e.false_value.type}"
    if e.condition.type.lanes not in (1, e.true_value.type.lanes):
        return f"select condition has {e.condition.type.lanes} lanes for {e.true_value.type.lanes}-lane values"
    return None


def _load_problem(e: ir.Load) -> str | None:
    if e.index.type.lanes != e.type.lanes:
        return f"load of {e.type.lanes} lanes at an index of {e.index.type.lanes} lanes"
    if e.predicate is not None and e.predicate.type.lanes != e.type.lanes:
        return f"load of {e.type.lanes} lanes with a predicate of {e.predicate.type.lanes} lanes"
    return None


def _ramp_problem(e: ir.Ramp) -> str | None:
    if e.base.type != e.stride.type:
        return f"ramp base and stride have types {e.base.type} and {e.stride.type}"
    return None if e.lanes >= 1 else f"ramp of {e.lanes} lanes"


def _broadcast_problem(e: ir.Broadcast) -> str | None:
    return None if e.lanes >= 1 else f"broadcast of {e.lanes} lanes"


def _cast_problem(e: ir.Cast) -> str | None:
    if e.type.lanes != e.value.type.lanes:
        return f"cast from {e.value.type} to {e.type} changes the lanes"
    return None


def _shuffle_problem(e: ir.Shuffle) -> str | None:
    # input_lanes sums over the vectors: asked once, not once per index (a
    # final-stage concat picks tens of thousands of lanes).
    lanes = e.input_lanes
    if e.indices and not (0 <= min(e.indices) and max(e.indices) < lanes):
        return f"shuffle picks a lane outside its {lanes} input lanes"
    return None


def _reduce_problem(e: ir.VectorReduce) -> str | None:
    if e.value.type.lanes % e.type.lanes:
        return f"reduction of {e.value.type.lanes} lanes to {e.type.lanes}"
    return None


def _store_problem(s: ir.Store) -> str | None:
    if s.index.type.lanes != s.value.type.lanes:
        return f"store of {s.value.type.lanes} lanes at an index of {s.index.type.lanes} lanes"
    if s.predicate is not None and s.predicate.type.lanes != s.value.type.lanes:
        return f"store of {s.value.type.lanes} lanes with a predicate of {s.predicate.type.lanes} lanes"
    return None


NODE_CHECKS: dict[type, Callable[[Any], str | None]] = {
    ir.Binary: _binary_problem,
    ir.Select: _select_problem,
    ir.Load: _load_problem,
    ir.Ramp: _ramp_problem,
    ir.Broadcast: _broadcast_problem,
    ir.Cast: _cast_problem,
    ir.Shuffle: _shuffle_problem,
    ir.VectorReduce: _reduce_problem,
    ir.Store: _store_problem,
}
"""The type and lane checks, by node class (the parser looks a class up
here itself as it builds each node, without ``node_problem``'s two calls
for every one of a dump's hundreds of thousands of nodes)."""


def node_problem(node: ir.Node) -> str | None:
    """What is wrong with this one node's types and lanes, or None (the
    parser asks as it builds each node, to locate the problem)."""
    check = NODE_CHECKS.get(type(node))
    return check(node) if check is not None else None


_SCOPES = (ir.Allocate, ir.Realize, ir.LetStmt, ir.Let, ir.For)
"""Nodes that bring a name into scope for what they enclose."""


def violations(stmt: ir.Stmt, arguments: tuple[str, ...] = ()) -> list[Violation]:
    """Every invariant ``stmt`` breaks, in pre-order. ``arguments`` are
    names in scope throughout (a lowered function's arguments)."""
    found: list[Violation] = []
    pipeline_buffers = {n.name[: -len(".buffer")] for n in ir.walk(stmt)
                        if isinstance(n, ir.Variable) and n.name.endswith(".buffer")}
    global_names = pipeline_buffers | set(arguments)
    # A name no loop or let defines is a scalar Param; one that some loop
    # or let defines must be read inside it.
    defined = {n.name for n in ir.walk(stmt) if isinstance(n, (ir.LetStmt, ir.Let, ir.For))}
    # An explicit stack of (node, names in scope) keeps deep inputs safe.
    stack: list[tuple[ir.Node, frozenset[str]]] = [(stmt, frozenset())]
    while stack:
        node, scope = stack.pop()
        check = NODE_CHECKS.get(type(node))
        problem = check(node) if check is not None else None
        if problem is not None:
            found.append(Violation(problem, node))
        if isinstance(node, (ir.Load, ir.Store)) and node.name not in scope and node.name not in global_names:
            found.append(Violation(f"'{node.name}' is not a buffer in scope", node))
        if isinstance(node, ir.Variable) and node.name in defined and node.name not in scope:
            found.append(Violation(f"'{node.name}' is read outside the loop or let that defines it", node))
        inner = scope | {node.name} if isinstance(node, _SCOPES) else scope
        stack.extend((child, inner) for child in reversed(list(ir.children(node))))
    return found


def check_program(program: ir.Stmt | ir.Module, *, after: str, blame_input: bool = False) -> None:
    """Raise ``InvariantViolation`` for the first broken invariant of
    ``program``, naming the pass ``after`` which it was found; with
    ``blame_input`` (checking what was parsed), an ``InputError`` instead:
    the input itself is not IR that Halide could have printed."""
    bodies = ([(f.body, f.args) for f in program.functions] if isinstance(program, ir.Module)
              else [(program, ())])
    for body, arguments in bodies:
        found = violations(body, tuple(arguments))
        if found and blame_input:
            first = found[0]
            raise InputError(Diagnostic(
                "error", f"the input breaks an IR invariant: {first.message}",
                notes=(f"at {_shown(first.node)}",
                       f"{len(found)} violation{'s' if len(found) != 1 else ''} in all"),
            ))
        if found:
            first = found[0]
            raise InvariantViolation(Diagnostic(
                "error", f"IR invariant broken after pass '{after}': {first.message}",
                notes=(f"at {_shown(first.node)}",
                       f"{len(found)} violation{'s' if len(found) != 1 else ''} in all; "
                       "this is a bug in hardboiled"),
            ))
