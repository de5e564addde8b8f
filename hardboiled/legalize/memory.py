"""Retagging allocations with the memory types selection decided.

Invariant established: every allocation named by ``--store-in`` is in the
memory type the user gave, and every buffer whose stores fell back to
ordinary code (``--allow-fallback``) is in ``Auto`` memory, so that later
passes and code generators see where each buffer really lives.
"""

from __future__ import annotations

import dataclasses

from hardboiled import ir
from hardboiled.ir.visitor import Rewriter


class _Retag(Rewriter):
    kinds = (ir.Stmt,)

    def __init__(self, memory_types: dict[str, str]):
        self.memory_types = memory_types

    def rewrite_allocate(self, node: ir.Allocate) -> ir.Stmt | None:
        if node.name not in self.memory_types:
            return None
        return dataclasses.replace(node, memory_type=self.memory_types[node.name], body=self(node.body))


def apply_memory_overrides(stmt: ir.Stmt, store_in: dict[str, str]) -> ir.Stmt:
    """``stmt`` with each allocation named in ``store_in`` moved to that memory type."""
    return _Retag(store_in)(stmt) if store_in else stmt
