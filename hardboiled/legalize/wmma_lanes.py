"""Warp lanes for WMMA operations (paper, Sec. 5).

Invariant established: every statement that performs a WMMA operation
(with the copies that stage its operands) runs inside a 32-lane
``gpu_lane`` loop, because a WMMA operation is executed by all the lanes
of a warp together.
"""

from __future__ import annotations

import dataclasses

from hardboiled import ir
from hardboiled.ir.visitor import map_stmt
from hardboiled.targets.wmma import WMMA_TENSOR_CORE, WMMATensorCore

WMMA_LANE = "wmma.lane"
"""The warp-lane loop that every WMMA operation runs in."""


def enforce_wmma_lanes(stmt: ir.Stmt, core: WMMATensorCore = WMMA_TENSOR_CORE) -> ir.Stmt:
    """Wrap every statement that performs a WMMA operation (with the copies
    that stage its operands) in a warp-lane loop: a WMMA operation is
    executed by all the lanes of a warp together."""

    def holds_wmma(node: ir.Stmt) -> bool:
        return any(ir.is_wmma_call(n) for n in ir.walk(node))

    def wrap(node: ir.Stmt) -> ir.Stmt:
        return ir.For(WMMA_LANE, ir.IntImm(0), ir.IntImm(core.warp_size), ir.ForKind.GPU_LANE, "CUDA", node)

    def visit(node: ir.Stmt) -> ir.Stmt | None:
        if isinstance(node, ir.For) and node.kind is ir.ForKind.GPU_LANE:
            return node  # already warp-wide
        if isinstance(node, ir.Allocate) and ir.WMMA_STAGE in node.name:
            # A staging buffer is shared by the warp: it stays outside the lanes.
            inner = node.body
            staged = isinstance(inner, ir.Allocate) and ir.WMMA_STAGE in inner.name
            staged_body = visit(inner) if staged else None
            return dataclasses.replace(node, body=staged_body if staged_body is not None else wrap(inner))
        if isinstance(node, (ir.Store, ir.Evaluate)) and holds_wmma(node):
            return wrap(node)
        return None

    return map_stmt(stmt, visit)
