"""Per-thread WMMA fragments.

Invariant established: a fragment allocation sits inside the innermost GPU
thread loop that holds all its uses, so each thread owns its fragments
(outside the thread loops Halide would share the buffer across the block).
"""

from __future__ import annotations

import dataclasses

from hardboiled import ir
from hardboiled.ir.visitor import map_stmt
from hardboiled.legalize.common import holding, names_buffer, path_to_uses


def push_fragment_allocations(stmt: ir.Stmt, memory_types: frozenset[str] = frozenset({"WMMAAccumulator"})) -> ir.Stmt:
    """Make fragment allocations per-thread: move each one into the innermost
    GPU thread loop that holds all its uses (outside the thread loops, Halide
    would place it in shared memory). Without thread loops the kernel runs
    one warp per block and the fragment is already a per-thread variable."""

    def visit(node: ir.Stmt) -> ir.Stmt | None:
        if not (isinstance(node, ir.Allocate) and node.memory_type in memory_types):
            return None
        path = path_to_uses(node.body, node.name, holding(node.body, node.name, names_buffer))
        threads = [n for n in (path or []) if isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_THREAD]
        if not threads:
            return dataclasses.replace(node, body=map_stmt(node.body, visit))
        target = threads[-1]
        moved = dataclasses.replace(node, body=target.body)
        return map_stmt(node.body, lambda n: dataclasses.replace(n, body=moved) if n is target else None)

    return map_stmt(stmt, visit)
