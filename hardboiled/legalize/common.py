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


def uses_variable(node: ir.Stmt, name: str) -> bool:
    """Whether ``node`` names variable ``name`` anywhere inside it."""
    return any(isinstance(n, ir.Variable) and n.name == name for n in ir.walk(node))


def accesses(node: ir.Node, name: str) -> bool:
    """Whether ``node`` reads or writes buffer ``name`` (or names it)."""
    return any(isinstance(n, (ir.Load, ir.Store, ir.Variable)) and n.name == name for n in ir.walk(node))


def path_to_uses(stmt: ir.Stmt, name: str,
                 uses: Callable[[ir.Stmt, str], bool] = uses_variable) -> list[ir.Stmt] | None:
    """Statements from the root down to the smallest one holding every use."""
    if not uses(stmt, name):
        return None
    path = [stmt]
    while True:
        holders = [c for c in ir.children(path[-1]) if isinstance(c, ir.Stmt) and uses(c, name)]
        if len(holders) != 1:
            return path
        path.append(holders[0])
