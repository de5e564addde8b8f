"""What the legalization passes share: their error, and where a buffer is used."""

from __future__ import annotations

from collections.abc import Callable

from hardboiled import ir
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError


class LegalizationError(HardboiledError):
    """Tensorized IR that the hardware cannot execute: a selection miss."""

    exit_code = ExitCode.SELECTION_MISS


def legal_error(message: str) -> LegalizationError:
    return LegalizationError(Diagnostic("error", message))


def names_variable(node: ir.Node, name: str) -> bool:
    """Whether ``node`` itself is variable ``name``."""
    return isinstance(node, ir.Variable) and node.name == name


def names_buffer(node: ir.Node, name: str) -> bool:
    """Whether ``node`` itself reads, writes or names buffer ``name``."""
    return isinstance(node, (ir.Load, ir.Store, ir.Variable)) and node.name == name


def holding(stmt: ir.Stmt, name: str,
            names: Callable[[ir.Node, str], bool] = names_variable) -> Callable[[ir.Stmt, str], bool]:
    """Whether a statement of ``stmt`` holds a node that ``names``, found for
    all of them in one walk: asked statement by statement down a path, a
    walk each, it was quadratic in the depth of the tree (Halide nests
    every let and allocation around the rest of its block)."""
    held: set[int] = set()
    for node in reversed(list(ir.walk(stmt))):  # children before parents
        if names(node, name) or any(id(kid) in held for kid in ir.children(node)):
            held.add(id(node))
    return lambda node, _name: id(node) in held


def path_to_uses(stmt: ir.Stmt, name: str, uses: Callable[[ir.Stmt, str], bool] | None = None
                 ) -> list[ir.Stmt] | None:
    """Statements from the root down to the smallest one holding every use
    (of variable ``name``, unless ``uses`` answers for each statement)."""
    if uses is None:
        uses = holding(stmt, name)
    if not uses(stmt, name):
        return None
    path = [stmt]
    while True:
        holders = [c for c in ir.children(path[-1]) if isinstance(c, ir.Stmt) and uses(c, name)]
        if len(holders) != 1:
            return path
        path.append(holders[0])
