"""How a kernel's Halide threads map onto GPU threads, for the passes that
place work and barriers and for the CUDA generator that prints them.

A kernel is the body of a ``gpu_block`` loop nest. Its ``gpu_thread``
loops keep the axis Halide named them for (``...thread_id_x/y/z``); when
the kernel has warp lanes (a ``gpu_lane`` loop: legalization's warp-wide
loops around WMMA operations, or the schedule's own), the lanes take
``threadIdx.x`` and the thread loops move up one axis, so that each Halide
thread is a whole warp. ``KernelShape`` is that mapping: the block's
dimensions, the axis of every thread loop, how many Halide threads a block
runs. ``Placement`` is where a statement sits in it: which threads run a
statement at that point, and which barrier makes their writes visible to
one another.

Halide's meaning is kept: a statement outside the thread loops runs once
per block, one inside them once per Halide thread. When several GPU
threads make up the Halide thread that runs a statement (the whole block
at block level, a warp inside the thread loops), the statement's memory
effects are performed by one of them, or spread over all of them
(legalize/lane_spreading.py), between barriers (legalize/barriers.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hardboiled import ir
from hardboiled.ir import operations
from hardboiled.targets.wmma import WMMA_TENSOR_CORE

AXES = "xyz"
MAX_BLOCK_THREADS = 1024
MAX_BLOCK_Z = 64
FRAGMENT_MEMORY = "WMMAAccumulator"
"""The memory of WMMA accumulator fragments: per-thread registers, never
addressed element by element."""

THREAD_BARRIER = operations.THREAD_BARRIER.name
"""Halide's block-wide barrier intrinsic (``__syncthreads``)."""
WARP_BARRIER = operations.WARP_BARRIER.name
"""The warp-wide barrier (``__syncwarp``): the lanes of one warp wait for
each other, and their shared-memory writes become visible to each other."""
SHARED_FENCE = 2
"""The barriers' argument: a fence of shared memory, as Halide writes it."""
SPREAD = operations.SPREAD_OVER_THREADS.name
"""Marks a stored vector whose lanes the GPU threads of one Halide thread
compute and write together (legalize/lane_spreading.py). Its value is its
argument's."""


class KernelShapeError(Exception):
    """A kernel whose thread loops cannot map onto a CUDA block."""


def barrier_statement(level: str) -> ir.Evaluate:
    """The barrier of ``level`` ("block" or "warp") as an IR statement."""
    name = THREAD_BARRIER if level == "block" else WARP_BARRIER
    return ir.Evaluate(ir.Call(name, (ir.IntImm(SHARED_FENCE),), ir.Int(32)))


def barrier_level(s: ir.Stmt) -> str | None:
    """"block" or "warp" for a barrier statement; None for anything else."""
    if isinstance(s, ir.Evaluate) and isinstance(s.value, ir.Call):
        return {THREAD_BARRIER: "block", WARP_BARRIER: "warp"}.get(s.value.name)
    return None


def spread_value(s: ir.Store) -> ir.Expr | None:
    """The vector a spread store writes (its value without the marker), or
    None for a store that is not spread."""
    value = s.value
    return value.args[0] if isinstance(value, ir.Call) and value.name == SPREAD else None


def named_axis(loop: ir.For, kind: str) -> int | None:
    """The axis Halide named a GPU loop for: ``...block_id_y`` is block axis
    1, ``...thread_id_x`` thread axis 0 (``kind`` is block or thread)."""
    return next((i for i, axis in enumerate(AXES) if loop.name.endswith(f"{kind}_id_{axis}")), None)


def performs_wmma(loop: ir.For) -> bool:
    """A lane loop that legalization built around WMMA operations (the warp
    acts together), as opposed to the schedule's own gpu_lanes loop."""
    return any(ir.is_wmma_call(n) for n in ir.walk(loop.body))


def is_wmma_lane_loop(s: ir.Stmt) -> bool:
    return isinstance(s, ir.For) and s.kind is ir.ForKind.GPU_LANE and performs_wmma(s)


@dataclass(frozen=True, slots=True)
class KernelShape:
    lanes: bool
    """Whether warp lanes take threadIdx.x (each Halide thread is a warp)."""
    block: tuple[int, int, int]
    """CUDA threads of a block along x, y and z."""
    thread_axis: dict[str, int]
    """The CUDA axis of each gpu_thread loop, by loop name."""

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def warps(self) -> int:
        """Per-warp buffers per block (one when there are no lanes)."""
        return self.block[1] * self.block[2] if self.lanes else 1

    @property
    def halide_threads(self) -> int:
        """Halide threads per block: warps along y and z with lanes, else
        every thread."""
        return self.block[1] * self.block[2] * (1 if self.lanes else self.block[0])

    @property
    def single_thread(self) -> bool:
        return self.block == (1, 1, 1)


def kernel_shape(body: ir.Stmt) -> KernelShape:
    """The CUDA block of a kernel body, from its thread loops (their axes
    and constant extents) and whether it has warp lanes."""
    lanes = any(isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_LANE for n in ir.walk(body))
    shift = 1 if lanes else 0
    block = [WMMA_TENSOR_CORE.warp_size if lanes else 1, 1, 1]
    thread_axis: dict[str, int] = {}
    for loop_name, (axis, extent) in _thread_extents(body).items():
        if axis + shift > 2:
            raise KernelShapeError(f"GPU thread loop '{loop_name}' needs a fourth thread dimension once the "
                                   "warp lanes take threadIdx.x")
        thread_axis[loop_name] = axis + shift
        block[axis + shift] = max(block[axis + shift], extent)
    shape = KernelShape(lanes, (block[0], block[1], block[2]), thread_axis)
    if shape.threads > MAX_BLOCK_THREADS or block[2] > MAX_BLOCK_Z:
        raise KernelShapeError(f"a block of {' x '.join(map(str, block))} threads: CUDA allows "
                               f"{MAX_BLOCK_THREADS} per block and {MAX_BLOCK_Z} along z")
    return shape


def _thread_extents(body: ir.Stmt) -> dict[str, tuple[int, int]]:
    """Each GPU thread loop: its axis (from Halide's ``thread_id_x/y/z``
    suffix) and its constant extent."""
    found: dict[str, tuple[int, int]] = {}
    for node in ir.walk(body):
        if isinstance(node, ir.For) and node.kind is ir.ForKind.GPU_THREAD:
            if not isinstance(node.extent, ir.IntImm):
                raise KernelShapeError(f"GPU thread loop '{node.name}' has a symbolic extent")
            axis = named_axis(node, "thread")
            if axis is None:
                raise KernelShapeError(f"GPU thread loop '{node.name}' does not say its axis (thread_id_x/y/z)")
            previous = found.get(node.name, (axis, 0))[1]
            found[node.name] = (axis, max(previous, node.extent.value))
    return found


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a statement of a kernel runs: how deep it is in thread loops,
    in legalization's warp-wide WMMA lane loops and in the schedule's own
    lane loops (one iteration per lane)."""

    shape: KernelShape
    thread_depth: int = 0
    wmma_depth: int = 0
    user_lane_depth: int = 0
    bound: frozenset[int] = frozenset()
    """The thread axes that enclosing thread loops bind."""

    def entering(self, loop: ir.For) -> Placement:
        """The placement inside a GPU loop of this kernel (unchanged for
        any other statement)."""
        if loop.kind is ir.ForKind.GPU_THREAD:
            return dataclasses.replace(self, thread_depth=self.thread_depth + 1,
                                       bound=self.bound | {self.shape.thread_axis[loop.name]})
        if loop.kind is ir.ForKind.GPU_LANE and performs_wmma(loop):
            return dataclasses.replace(self, wmma_depth=self.wmma_depth + 1)
        if loop.kind is ir.ForKind.GPU_LANE:
            return dataclasses.replace(self, user_lane_depth=self.user_lane_depth + 1)
        return self

    @property
    def at_block_level(self) -> bool:
        return self.thread_depth == 0 and self.wmma_depth == 0

    @property
    def shared_by_threads(self) -> bool:
        """Whether a statement here belongs to a Halide thread that several
        GPU threads run together: the whole block at block level, a warp
        inside the thread loops (when warps are Halide threads)."""
        if self.shape.single_thread or self.user_lane_depth:
            return False
        return self.thread_depth == 0 or self.shape.lanes

    @property
    def level(self) -> str:
        """The barrier that the threads sharing a statement here wait at:
        the block's outside the thread loops, the warp's inside them."""
        return "block" if self.thread_depth == 0 else "warp"

    @property
    def first_thread_fenced(self) -> bool:
        """Whether a memory effect here is performed by the first of several
        GPU threads, between barriers of ``level`` (else the threads that
        reach it are the Halide thread's only ones)."""
        return not (self.shape.single_thread or (self.thread_depth > 0 and not self.shape.lanes)
                    or self.user_lane_depth)


def map_kernels(stmt: ir.Stmt, rewrite: Callable[[ir.Stmt, KernelShape], ir.Stmt]) -> ir.Stmt:
    """``stmt`` with ``rewrite(body, shape)`` applied to the body of every
    ``gpu_block`` loop nest (inside its block loops, and the lets between
    them). A kernel whose shape cannot be a CUDA block is left as it is:
    the CUDA generator reports it."""
    from hardboiled.ir.visitor import map_stmt

    def visit(node: ir.Stmt) -> ir.Stmt | None:
        if not (isinstance(node, ir.For) and node.kind is ir.ForKind.GPU_BLOCK):
            return None
        body = _kernel_body(node)
        try:
            shape = kernel_shape(body)
        except KernelShapeError:
            return node
        return _with_kernel_body(node, rewrite(body, shape))

    return map_stmt(stmt, visit)


def _is_kernel_wrapper(s: ir.Stmt) -> bool:
    """A gpu_block loop, or a let between two of them (Halide's tail
    handling computes values of an outer block index there)."""
    if isinstance(s, ir.For):
        return s.kind is ir.ForKind.GPU_BLOCK
    if isinstance(s, ir.LetStmt):
        inner = s.body
        while isinstance(inner, ir.LetStmt):
            inner = inner.body
        return isinstance(inner, ir.For) and inner.kind is ir.ForKind.GPU_BLOCK
    return False


def _kernel_body(nest: ir.For) -> ir.Stmt:
    body: ir.Stmt = nest
    while _is_kernel_wrapper(body):
        assert isinstance(body, (ir.For, ir.LetStmt))
        body = body.body
    return body


def _with_kernel_body(nest: ir.Stmt, body: ir.Stmt) -> ir.Stmt:
    if not _is_kernel_wrapper(nest):
        return body
    assert isinstance(nest, (ir.For, ir.LetStmt))
    return dataclasses.replace(nest, body=_with_kernel_body(nest.body, body))


def is_stage_copy(s: ir.Store) -> bool:
    """A copy into or out of a WMMA staging buffer (legalize/wmma_staging.py),
    which the lanes of a warp perform together."""
    return (s.predicate is None and isinstance(s.value, ir.Load) and s.value.predicate is None
            and (ir.WMMA_STAGE in s.name or ir.WMMA_STAGE in s.value.name))


def with_statements(s: ir.Stmt, fn: Callable[[ir.Stmt], ir.Stmt]) -> ir.Stmt:
    """``s`` with ``fn`` applied to each statement directly inside it (a
    block's statements, a loop's body, both branches of an if)."""
    if isinstance(s, ir.Block):
        return ir.make_block([fn(child) for child in s.stmts])
    node: Any = s
    changes = {f.name: fn(value) for f in dataclasses.fields(node)
               if isinstance(value := getattr(node, f.name), ir.Stmt)}
    return dataclasses.replace(node, **changes) if changes else s
