"""Retagging allocations with the memory types selection decided.

Invariant established: every allocation named by ``--store-in`` is in the
memory type the user gave, and every buffer whose stores fell back to
ordinary code (``--allow-fallback``) is in ``Auto`` memory, so that later
passes and code generators see where each buffer really lives.
"""

from __future__ import annotations

import dataclasses

from hardboiled import ir
from hardboiled.ir.visitor import map_stmt


def apply_memory_overrides(stmt: ir.Stmt, store_in: dict[str, str]) -> ir.Stmt:
    """``stmt`` with each allocation named in ``store_in`` moved to that memory type."""
    if not store_in:
        return stmt

    def retag(node: ir.Stmt) -> ir.Stmt | None:
        if isinstance(node, ir.Allocate) and node.name in store_in:
            inner = map_stmt(node.body, retag)
            return dataclasses.replace(node, memory_type=store_in[node.name], body=inner)
        return None

    return map_stmt(stmt, retag)
