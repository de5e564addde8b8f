"""What each Tensor-Core kernel of a program executes per thread block,
read from the IR the CUDA generator prints (after the GPU mapping passes
of hardboiled/legalize/passes.py).

A kernel is a ``gpu_block`` loop nest (its grid: the block loops'
constant extents), or a host stage that the CUDA wrapper runs as a kernel
of one thread. Its block and the placement of every statement on its
threads are legalize/gpu_mapping.py's; each thread of the block carries how
many times it runs the statement at hand:

* a serial loop multiplies that by its constant extent (a symbolic one
  counts once and sets ``symbolic_trips``);
* a thread or lane loop keeps the threads it binds (index below its
  extent) and index 0 of the axes it does not bind;
* a spread store gives each thread its share of the vector's lanes; any
  other memory effect of a Halide thread that several GPU threads share is
  the first one's;
* an ``if`` whose condition reads only thread indices and constants keeps
  the threads it admits, any other admits everyone (both branches count).

From the per-thread counts: a WMMA operation or a warp barrier runs once
per warp per iteration of its busiest lane, a block barrier once per
iteration of the block's busiest thread, and shared-memory element writes
count every thread's. ``distinct_operand_loads`` counts an operand load
once per stretch of code in which the same fragment is loaded from the
same address again, as the generated code's statements run: a loop, an
``if``, a barrier or a statement the threads guard or spread ends the
stretch, and a write to the loaded buffer or to a variable of the address
forgets it.

The figures are measure/figures.py's (shared with the reader of the CUDA
text, measure/cuda_source.py, which tests hold to the same numbers); the
lane utilization of the code around the Tensor-Core calls depends on the C
the generator writes for each statement, and only the text reader has it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from hardboiled import ir
from hardboiled.ir import operations
from hardboiled.ir.buffers import bounds_query_value
from hardboiled.ir.operations import Kind
from hardboiled.ir.visitor import method_suffix
from hardboiled.legalize.gpu_mapping import (
    FRAGMENT_MEMORY,
    KernelShape,
    KernelShapeError,
    Placement,
    barrier_level,
    is_stage_copy,
    kernel_shape,
    named_axis,
    performs_wmma,
    spread_value,
)
from hardboiled.measure.figures import WARP_SIZE, ApplicationFigures, KernelFigures, application_figures
from hardboiled.targets.wmma import MatrixUse, WMMAIntrinsic, WMMAOp, wmma_intrinsic


def program_work(name: str, program: ir.Stmt) -> ApplicationFigures:
    """Every kernel of ``program`` (mapped IR) and their sums over the
    blocks they launch."""
    return application_figures(name, kernel_work(program))


def kernel_work(program: ir.Stmt) -> list[KernelFigures]:
    """The figures of every kernel of ``program``, in the order the CUDA
    wrapper launches them."""
    kernels: list[KernelFigures] = []
    _find_kernels(program, kernels)
    return kernels


# ------------------------------------------------------------ kernels


def _find_kernels(s: ir.Stmt, kernels: list[KernelFigures]) -> None:
    """The host program's kernels, as the CUDA wrapper finds them: every
    gpu_block nest, and every host stage (a store, or a loop nest that
    touches buffers and launches nothing)."""
    if isinstance(s, ir.For) and s.kind is ir.ForKind.GPU_BLOCK:
        kernels.append(_block_kernel(s, len(kernels)))
        return
    if isinstance(s, ir.Store) or (isinstance(s, ir.For) and _host_stage(s)):
        kernels.append(_count(s, f"k{len(kernels)}", kernel_shape(s), [(1, 1, 1)]))
        return
    for child in ir.children(s):
        if isinstance(child, ir.Stmt):
            _find_kernels(child, kernels)


def _host_stage(s: ir.For) -> bool:
    touches = False
    for node in ir.walk(s):
        if isinstance(node, ir.For) and node.kind is ir.ForKind.GPU_BLOCK:
            return False
        touches = touches or isinstance(node, (ir.Load, ir.Store))
    return touches


def _block_kernel(nest: ir.For, number: int) -> KernelFigures:
    grid: list[int | None] = [1, 1, 1]
    body: ir.Stmt = nest
    order = 0
    while isinstance(body, (ir.For, ir.LetStmt)):
        if isinstance(body, ir.For):
            if body.kind is not ir.ForKind.GPU_BLOCK:
                break
            axis = named_axis(body, "block")
            grid[order if axis is None else axis] = _constant(body.extent, {})
            order += 1
        elif not _holds_block_loop(body.body):
            break
        body = body.body
    try:
        shape = kernel_shape(body)
    except KernelShapeError:
        shape = KernelShape(False, (WARP_SIZE, 1, 1), {})
    return _count(body, f"k{number}", shape, [(grid[0], grid[1], grid[2])])


def _holds_block_loop(s: ir.Stmt) -> bool:
    while isinstance(s, ir.LetStmt):
        s = s.body
    return isinstance(s, ir.For) and s.kind is ir.ForKind.GPU_BLOCK


def _count(body: ir.Stmt, name: str, shape: KernelShape,
           grids: list[tuple[int | None, int | None, int | None]]) -> KernelFigures:
    figures = KernelFigures(name=name, block=shape.block, grids=grids)
    counter = _Counter(figures, shape)
    counter.stmt(body, Placement(shape), (1,) * shape.threads)
    counter.finish()
    return figures


# ------------------------------------------------------------ evaluation


def _constant(e: ir.Expr, names: dict[str, int]) -> int | None:
    """An integer expression's value from constants and ``names`` (the
    thread's loop variables); None when it reads anything else."""
    if isinstance(e, (ir.IntImm, ir.UIntImm)):
        return e.value
    if isinstance(e, ir.Variable):
        return names.get(e.name)
    if isinstance(e, ir.Cast) and not e.type.is_float and not e.value.type.is_float:
        return _constant(e.value, names)
    if isinstance(e, ir.Call):
        hint = operations.find(e.name)  # a hint (likely) stands for its argument
        return _constant(e.args[0], names) if hint is not None and hint.kind is Kind.PASS_THROUGH else None
    if isinstance(e, ir.Not):
        value = _constant(e.value, names)
        return None if value is None else int(not value)
    if isinstance(e, ir.Binary):
        a, b = _constant(e.a, names), _constant(e.b, names)
        apply = _BINARY.get(e.op)
        return None if a is None or b is None or apply is None else apply(a, b)
    return None


def _c_div(a: int, b: int) -> int | None:
    return None if b == 0 else a // b if (a % b == 0 or (a < 0) == (b < 0)) else -(abs(a) // abs(b))


_BINARY: dict[ir.BinOp, Callable[[int, int], int | None]] = {
    ir.BinOp.ADD: lambda a, b: a + b, ir.BinOp.SUB: lambda a, b: a - b, ir.BinOp.MUL: lambda a, b: a * b,
    ir.BinOp.DIV: _c_div, ir.BinOp.MIN: min, ir.BinOp.MAX: max,
    ir.BinOp.LT: lambda a, b: int(a < b), ir.BinOp.LE: lambda a, b: int(a <= b),
    ir.BinOp.GT: lambda a, b: int(a > b), ir.BinOp.GE: lambda a, b: int(a >= b),
    ir.BinOp.EQ: lambda a, b: int(a == b), ir.BinOp.NE: lambda a, b: int(a != b),
    ir.BinOp.AND: lambda a, b: int(bool(a) and bool(b)), ir.BinOp.OR: lambda a, b: int(bool(a) or bool(b)),
}


def _intrinsic(call: ir.Expr) -> WMMAIntrinsic | None:
    return wmma_intrinsic(call)


def _pointer(call: ir.Call) -> str:
    pointer = call.args[0] if call.args else None
    return pointer.name if isinstance(pointer, ir.Variable) else ""


# ------------------------------------------------------------ counting

Bound = dict[str, tuple[int, int]]
"""The loop variables that are a thread's index: name -> (axis, minimum)."""


@dataclass
class _Counter:
    """Walks one kernel body as it runs, adding each statement's executions
    to the figures."""

    figures: KernelFigures
    shape: KernelShape
    shared: dict[str, int] = field(default_factory=dict)
    """Buffers in shared memory, with their element bytes."""
    fragments: set[str] = field(default_factory=set)
    region: dict[ir.Call, frozenset[str]] = field(default_factory=dict)
    """The operand loads of the current stretch, with the names their
    addresses read."""
    shared_stored_elements: int = 0

    # per-thread execution counts
    def threads(self) -> range:
        return range(self.shape.threads)

    def thread_index(self, t: int) -> tuple[int, int, int]:
        bx, by, _ = self.shape.block
        return t % bx, t // bx % by, t // (bx * by)

    @staticmethod
    def block_executions(trips: tuple[int, ...]) -> int:
        return max(trips, default=0)

    @staticmethod
    def warp_executions(trips: tuple[int, ...]) -> int:
        return sum(max(trips[w:w + WARP_SIZE]) for w in range(0, len(trips), WARP_SIZE))

    def admitted(self, trips: tuple[int, ...], admit: list[bool]) -> tuple[int, ...]:
        return tuple(trip if ok else 0 for trip, ok in zip(trips, admit))

    # statements
    def stmt(self, s: ir.Stmt, where: Placement, trips: tuple[int, ...], bound: Bound | None = None) -> None:
        bound = bound or {}
        method = getattr(self, "_" + method_suffix(type(s)), None)
        if method is not None:
            method(s, where, trips, bound)
        elif isinstance(s, (ir.ProducerConsumer, ir.Atomic, ir.Acquire, ir.HoistedStorage)):
            self.stmt(s.body, where, trips, bound)

    def _block(self, s: ir.Block, where: Placement, trips: tuple[int, ...], bound: Bound) -> None:
        for child in s.stmts:
            self.stmt(child, where, trips, bound)

    def _allocate(self, s: ir.Allocate, where: Placement, trips: tuple[int, ...], bound: Bound) -> None:
        if s.memory_type == FRAGMENT_MEMORY:
            self.fragments.add(s.name)
        else:
            per_warp = ir.WMMA_STAGE in s.name or (self.shape.lanes and where.thread_depth > 0)
            if per_warp or (where.thread_depth == 0 and not self.shape.single_thread):
                self.shared[s.name] = max(1, s.type.bits // 8)
        self.stmt(s.body, where, trips, bound)

    def _let_stmt(self, s: ir.LetStmt, where: Placement, trips: tuple[int, ...], bound: Bound) -> None:
        intrinsic = _intrinsic(s.value)
        if intrinsic is not None and intrinsic.op is WMMAOp.LOAD:
            assert isinstance(s.value, ir.Call)
            self.load(s.value, intrinsic, trips)
        elif s.value.type.lanes > 1:
            self.region.clear()  # a vector value: computed by a loop
        self.forget({s.name})
        self.stmt(s.body, where, trips, bound)

    def _for(self, s: ir.For, where: Placement, trips: tuple[int, ...], bound: Bound) -> None:
        inside = where.entering(s)
        if s.kind in (ir.ForKind.GPU_THREAD, ir.ForKind.GPU_LANE):
            axis = self.shape.thread_axis[s.name] if s.kind is ir.ForKind.GPU_THREAD else 0
            wmma = s.kind is ir.ForKind.GPU_LANE and performs_wmma(s)
            extent = WARP_SIZE if wmma else (_constant(s.extent, {}) or 0)
            admit = [self.thread_index(t)[axis] < extent and self.idle_ok(t, inside, s) for t in self.threads()]
            lo: int | None = 0 if wmma else _constant(s.min, {})
            inner = bound if lo is None else {**bound, s.name: (axis, lo)}
            # The guard that keeps threads out is code of its own (an ``if``),
            # but a WMMA lane loop that every thread enters has none.
            guarded = not wmma or not all(admit)
            self.scope(s.body, inside, self.admitted(trips, admit), inner, guarded)
            return
        count = _constant(s.extent, {})
        if count is None:
            self.figures.symbolic_trips = True
        iterations = 1 if count is None else max(0, count)
        self.scope(s.body, inside, tuple(trip * iterations for trip in trips), bound, True)

    def idle_ok(self, t: int, inside: Placement, loop: ir.For) -> bool:
        """Whether thread ``t`` passes the guard that keeps threads along
        unbound axes out of ``loop`` (only their index 0 runs it)."""
        nested = {self.shape.thread_axis[n.name] for n in ir.walk(loop.body)
                  if isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_THREAD and n.name in self.shape.thread_axis}
        index = self.thread_index(t)
        first = 1 if self.shape.lanes else 0
        return all(index[a] == 0 for a in range(first, 3)
                   if self.shape.block[a] > 1 and a not in nested and a not in inside.bound)

    def scope(self, body: ir.Stmt, where: Placement, trips: tuple[int, ...], bound: Bound,
              ends_stretch: bool) -> None:
        if ends_stretch:
            self.region.clear()
        self.stmt(body, where, trips, bound)
        if ends_stretch:
            self.region.clear()

    def condition_mask(self, condition: ir.Expr, bound: Bound) -> list[bool] | None:
        """Which threads a condition admits, when it reads only the
        threads' own loop variables and constants."""
        mask = []
        for t in self.threads():
            index = self.thread_index(t)
            value = _constant(condition, {name: lo + index[axis] for name, (axis, lo) in bound.items()})
            if value is None:
                return None
            mask.append(bool(value))
        return mask

    def _if_then_else(self, s: ir.IfThenElse, where: Placement, trips: tuple[int, ...],
                    bound: Bound) -> None:
        known = bounds_query_value(s.condition)
        if known is not None:
            branch = s.then_case if known else s.else_case
            if branch is not None:
                self.stmt(branch, where, trips, bound)
            return
        mask = self.condition_mask(s.condition, bound)
        then_trips = trips if mask is None else self.admitted(trips, mask)
        self.scope(s.then_case, where, then_trips, bound, True)
        if s.else_case is not None:
            else_trips = trips if mask is None else self.admitted(trips, [not ok for ok in mask])
            self.scope(s.else_case, where, else_trips, bound, True)

    def _evaluate(self, s: ir.Evaluate, where: Placement, trips: tuple[int, ...], bound: Bound) -> None:
        level = barrier_level(s)
        if level == "block":
            self.figures.syncthreads += self.block_executions(trips)
            self.region.clear()
            return
        if level == "warp":
            self.figures.syncwarps += self.warp_executions(trips)
            self.region.clear()
            return
        intrinsic = _intrinsic(s.value)
        if intrinsic is not None and intrinsic.op is WMMAOp.STORE:
            assert isinstance(s.value, ir.Call)
            self.fragment_store(s.value, intrinsic, trips)
            return
        self.region.clear()  # evaluated by one thread, inside its guard

    def _store(self, s: ir.Store, where: Placement, trips: tuple[int, ...], bound: Bound) -> None:
        if s.name in self.fragments:
            self.fragment_value(s.value, trips)
            return
        lanes = s.value.type.lanes
        if where.wmma_depth and is_stage_copy(s):
            self.region.clear()
            self.shared_writes(s.name, self.warp_executions(trips) * lanes)
            self.forget({s.name})
            self.region.clear()
            return
        self.region.clear()
        if spread_value(s) is not None and where.shared_by_threads:
            self.shared_writes(s.name, self.spread_executions(trips, where, lanes))
        elif where.first_thread_fenced:
            self.shared_writes(s.name, self.first_thread_executions(trips, where) * lanes)
        else:
            self.shared_writes(s.name, sum(trips) * lanes)
        self.forget({s.name})
        self.region.clear()

    def spread_executions(self, trips: tuple[int, ...], where: Placement, lanes: int) -> int:
        """The element writes of a spread store: each thread of the Halide
        thread writes every lane whose number is its own modulo their count."""
        total = 0
        group = self.shape.threads if where.thread_depth == 0 else WARP_SIZE
        for t, trip in enumerate(trips):
            first = t if where.thread_depth == 0 else self.thread_index(t)[0]
            total += trip * max(0, math.ceil((lanes - first) / group))
        return total

    def first_thread_executions(self, trips: tuple[int, ...], where: Placement) -> int:
        """How often the first thread of each Halide thread runs a statement:
        thread 0 of the block at block level, lane 0 of each warp inside."""
        if where.thread_depth == 0:
            return trips[0]
        return sum(trip for t, trip in enumerate(trips) if self.thread_index(t)[0] == 0)

    def shared_writes(self, buffer: str, elements: int) -> None:
        size = self.shared.get(buffer)
        if size is not None:
            self.figures.shared_write_elements += elements
            self.figures.shared_write_bytes += elements * size

    # WMMA
    def fragment_value(self, value: ir.Expr, trips: tuple[int, ...]) -> None:
        """A value stored to a fragment: products, fills, loads of C and the
        operand loads inside them."""
        for node in ir.walk(value):
            intrinsic = _intrinsic(node) if isinstance(node, ir.Call) else None
            if intrinsic is None:
                if isinstance(node, ir.Binary) and isinstance(node.b, ir.Broadcast):
                    self.region.clear()  # an epilogue: a loop over the fragment's elements
                continue
            assert isinstance(node, ir.Call)
            if intrinsic.op is WMMAOp.MMA:
                warps = self.warp_executions(trips)
                shape = intrinsic.shape
                self.figures.mma += warps
                self.figures.mma_macs += warps * shape.m * shape.n * shape.k
                key = f"m{shape.m}n{shape.n}k{shape.k}"
                self.figures.mma_by_shape[key] = self.figures.mma_by_shape.get(key, 0) + warps
            elif intrinsic.op is WMMAOp.FILL:
                self.figures.fragment_fills += self.warp_executions(trips)
            elif intrinsic.op is WMMAOp.LOAD:
                self.load(node, intrinsic, trips)

    def load(self, call: ir.Call, intrinsic: WMMAIntrinsic, trips: tuple[int, ...]) -> None:
        warps = self.warp_executions(trips)
        pointer = _pointer(call)
        if pointer in self.shared:
            self.figures.shared_fragment_loads += warps
            self.figures.shared_fragment_load_bytes += warps * call.type.lanes * call.type.bytes
        if intrinsic.matrix is MatrixUse.C:
            self.figures.accumulator_loads += warps
            return
        self.figures.operand_loads += warps
        if call not in self.region:
            self.figures.distinct_operand_loads += warps
            self.region[call] = frozenset(n.name for n in ir.walk(call) if isinstance(n, ir.Variable))

    def fragment_store(self, call: ir.Call, intrinsic: WMMAIntrinsic, trips: tuple[int, ...]) -> None:
        warps = self.warp_executions(trips)
        shape = intrinsic.shape
        elements = warps * shape.m * shape.n
        self.figures.fragment_stores += warps
        self.figures.output_elements += elements
        pointer = _pointer(call)
        if pointer in self.shared:
            fragment = call.args[1]
            self.figures.shared_fragment_stores += warps
            self.figures.shared_fragment_store_bytes += warps * fragment.type.lanes * fragment.type.bytes
            self.shared_stored_elements += elements
        self.forget({pointer})

    def forget(self, names: set[str]) -> None:
        """Loads whose address reads a name just written are loaded anew."""
        for key in [key for key, read in self.region.items() if read & names]:
            del self.region[key]

    def finish(self) -> None:
        figures = self.figures
        global_stores = figures.fragment_stores - figures.shared_fragment_stores
        if global_stores:
            figures.output_fragments = global_stores
            figures.output_elements -= self.shared_stored_elements
        else:
            figures.output_fragments = figures.fragment_stores
