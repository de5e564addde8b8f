"""The body of one CUDA kernel (``KernelGenerator``), printed from IR whose
GPU decisions are already made.

The passes of hardboiled/legalize/passes.py ``GPU_MAPPING`` decide how a
kernel's work falls on its threads: which operand fragments are loaded
once (``let wmma.a.N``), which vector stores the threads of a Halide
thread write together (``spread_over_threads``), and where barriers go
(``gpu_thread_barrier``, ``gpu_warp_barrier``). This module prints those
decisions; the mapping of Halide's loops onto the CUDA block is
legalize/gpu_mapping.py's ``KernelShape``:

* a warp-lane loop (``gpu_lane``) is ``threadIdx.x``; the GPU thread loops
  of the dump move to ``threadIdx.y`` and ``.z``, so each warp is one
  Halide thread; a thread or lane loop runs only on index 0 of the thread
  axes it does not bind;
* a ``WMMAAccumulator`` allocation is an array of ``nvcuda::wmma::fragment``
  accumulators, a per-thread local of the kernel;
* ``wmma.load``/``mma``/``store.d``/``fill`` calls become
  ``load_matrix_sync``/``mma_sync``/``store_matrix_sync``/``fill_fragment``;
  an operand fragment is declared where it is loaded;
* a ``GPUShared`` staging buffer is a 32-byte aligned ``__shared__`` array
  per warp, filled or drained by the warp's 32 lanes together;
* outside the warp lanes, a statement keeps Halide's GPU meaning: outside
  the thread loops it runs once per block and its buffers are
  ``__shared__``; inside, once per Halide thread. A spread store is
  written by every thread of its Halide thread, each computing its own
  lanes; any other memory effect by its first thread.
"""

from __future__ import annotations

from collections.abc import Callable

from hardboiled import ir
from hardboiled.codegen.c_family import CFamilyEmitter
from hardboiled.codegen.c_text import (
    binary_expr,
    c_type,
    cast_expr,
    codegen_error,
    from_storage,
    storage_type,
    to_storage,
)
from hardboiled.codegen.lane_tables import affine_form, c_expression
from hardboiled.ir import operations
from hardboiled.legalize.gpu_mapping import (
    AXES,
    FRAGMENT_MEMORY,
    KernelShapeError,
    Placement,
    barrier_level,
    is_stage_copy,
    kernel_shape,
    performs_wmma,
    spread_value,
)
from hardboiled.targets.wmma import (
    WMMA_TENSOR_CORE,
    MatrixUse,
    WMMAIntrinsic,
    WMMAOp,
    mma_split_significand,
    wmma_intrinsic,
)


def cuda_element(t: ir.Type, matrix: MatrixUse = MatrixUse.C) -> str:
    """The CUDA type of the elements of a fragment of ``matrix``: an operand
    type of the Tensor Core table for A and B, an accumulator type of it
    (float, int) for C and D."""
    element = WMMA_TENSOR_CORE.element(t.element())
    if matrix in (MatrixUse.A, MatrixUse.B):
        if element is not None:
            return element.cuda_type
    elif t.element() in WMMA_TENSOR_CORE.accumulator_types:
        # an accumulator holds its values as they are (float, not tf32)
        return element.cuda_type if element is not None and element.split_significand is None else c_type(t.element())
    raise codegen_error(f"no WMMA {matrix.cuda} fragment holds {t.element()} elements")


MAX_UNROLLED_TRIPS = 32
"""A spread loop of at most this many trips per thread is unrolled whole;
a longer one by 4 (a 50,000-lane vector would otherwise be 1,600 copies of
its body)."""

SPLIT_MMA = "hb_mma_split"
"""The prelude's function that multiplies operands split into high and
low tf32 parts (``WMMAElement.split_significand``)."""


def memory_element(t: ir.Type, matrix: MatrixUse) -> str:
    """The C type of the memory a fragment of ``matrix`` is loaded from or
    stored to: the fragment's own, except for operands split into a
    narrower format (tf32 fragments load from float)."""
    element = WMMA_TENSOR_CORE.element(t.element()) if matrix in (MatrixUse.A, MatrixUse.B) else None
    if element is not None and element.split_significand is not None:
        return c_type(t.element())
    return cuda_element(t, matrix)


def wmma_operation(call: ir.Call) -> WMMAIntrinsic:
    """The Tensor Core operation a call the printer meets must be."""
    intrinsic = wmma_intrinsic(call)
    if intrinsic is None:
        raise codegen_error(f"{call.name} is not a WMMA fragment operation")
    return intrinsic


def _wmma_op(e: ir.Expr) -> WMMAOp | None:
    """What a wmma.* call does; None for anything else."""
    intrinsic = wmma_intrinsic(e)
    return intrinsic.op if intrinsic is not None else None


def _shape(call: ir.Call) -> tuple[int, int, int]:
    shape = wmma_operation(call).shape
    return shape.m, shape.n, shape.k


def _memory_layout(call: ir.Call) -> str:
    """``mem_row_major`` or ``mem_col_major``: the layout a load of C or a
    store of D gives load/store_matrix_sync."""
    layout = wmma_operation(call).layout
    assert layout is not None
    return layout.cuda_memory


class KernelGenerator(CFamilyEmitter):
    """The body of one ``__global__`` kernel."""

    vectors_on_heap = False

    def __init__(self, host: CFamilyEmitter, body: ir.Stmt, name: str):
        """``host``: the wrapper that launches the kernel (codegen/cuda.py),
        whose names and buffer types the kernel starts from."""
        # No buffer parameters of its own: a kernel's parameters are the free
        # names of its body. It starts from the host's names and types.
        super().__init__(body, name, arguments=[])
        self.host = host
        self.names = dict(host.names)
        self.used = set(host.used)
        self.buffer_args = host.buffer_args
        self.element_types = dict(host.element_types)
        self.block_vars: dict[str, tuple[str, int]] = {}
        self.fragments: dict[str, tuple[ir.Type, tuple[int, int, int]]] = {}
        self.fragment_pointers: set[str] = set()
        self.operand_lets: dict[str, tuple[str, ir.Call]] = {}
        """Operand fragments held in lets: IR name -> (C name, the load)."""
        self.lane_depth = 0
        """Depth in warp-wide WMMA lane loops (legalization's)."""
        self.user_lane_depth = 0
        """Depth in the schedule's own gpu_lanes loops (one iteration per lane)."""
        self.thread_depth = 0
        self.serial_depth = 0
        """Depth in the kernel's own (serial) loops: code that runs again."""
        self.bound_axes: set[int] = set()
        self.parameters: list[tuple[str, str]] = []
        """(host expression, kernel parameter declaration)."""
        try:
            self.shape = kernel_shape(body)
        except KernelShapeError as error:
            raise codegen_error(str(error)) from None
        self.lanes = self.shape.lanes
        self.block_dims = list(self.shape.block)

    def placement(self) -> Placement:
        return Placement(self.shape, self.thread_depth, self.lane_depth, self.user_lane_depth,
                         frozenset(self.bound_axes))

    def bind_block(self, loop_name: str, host_lo: str, axis: int) -> None:
        self.block_vars[loop_name] = (host_lo, axis)

    # ------------------------------------------------------------ the kernel
    def generate_body(self) -> None:
        for loop_name, (host_lo, axis) in self.block_vars.items():
            var = self.cname(loop_name)
            self.emit(f"const int32_t {var} = {host_lo} + (int32_t)blockIdx.{AXES[axis]};")
        if not self.shape.single_thread:
            self.emit("/* the thread's place in the block, for work spread over all its threads */")
            self.emit("const int hb_thread = "
                      "(int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));")
            self.emit("(void)hb_thread;")
        if self.lanes:
            self.emit("/* a Halide thread is a warp: its index, for per-warp shared buffers */")
            self.emit("const int hb_warp = (int)(threadIdx.y + blockDim.y * threadIdx.z);")
            self.emit("(void)hb_warp;")
        self.stmt_(self.stmt)
        self._collect_parameters()

    def _collect_parameters(self) -> None:
        bound = set(self.block_vars) | {n.name for n in ir.walk(self.stmt)
                                        if isinstance(n, (ir.For, ir.LetStmt, ir.Let, ir.Allocate))}
        buffers = sorted({n.name for n in ir.walk(self.stmt) if isinstance(n, (ir.Load, ir.Store))} - bound)
        scalars: dict[str, ir.Type] = {}
        for n in ir.walk(self.stmt):
            if isinstance(n, ir.Variable) and n.name not in bound and n.name not in buffers:
                if n.type.is_handle:
                    if n.name in self.element_types:
                        buffers = sorted({*buffers, n.name})
                        continue
                    raise codegen_error(f"the kernel uses the handle '{n.name}', which is not a buffer")
                scalars[n.name] = n.type
        # The body uses the kernel's C names, the launch passes the host's.
        for name in buffers:
            if name not in self.element_types:
                raise codegen_error(f"the kernel reads '{name}', which is neither a pipeline buffer nor allocated")
            storage = storage_type(self.element_types[name])
            self.parameters.append((self.host.cname(name), f"{storage} *__restrict__ {self.cname(name)}"))
        for name, t in sorted(scalars.items()):
            self.parameters.append((self.host.cname(name), f"{c_type(t)} {self.cname(name)}"))
        for host_lo, _ in sorted(self.block_vars.values()):
            self.parameters.append((host_lo, f"int32_t {host_lo}"))

    def definition(self) -> list[str]:
        params = ", ".join(p for _, p in self.parameters)
        block = ", ".join(str(d) for d in self.block_dims)
        return [f"/* launched as <<<grid, dim3({block})>>> */",
                f"static __global__ void {self.function}({params}) {{", *self.lines, "}"]

    # ------------------------------------------------------------ statements
    def visit_assert_stmt(self, s: ir.AssertStmt) -> None:
        self.comment(s)
        self.emit(f"if (!({self.expr(s.condition)})) __trap();")

    def visit_for(self, s: ir.For) -> None:
        var = self.cname(s.name)
        if s.kind is ir.ForKind.GPU_LANE and not performs_wmma(s):
            # The schedule's own gpu_lanes loop: each lane of the warp runs
            # its iteration (threadIdx.x), as a thread loop would.
            guard = " && ".join(filter(None, [f"(int32_t)threadIdx.x < {self.expr(s.extent)}",
                                              self._idle_threads_skip(bound=self._axes_inside(s))]))
            self._gpu_loop(s, f"if ({guard}) {{",
                           f"const int32_t {var} = {self.expr(s.min)} + (int32_t)threadIdx.x;",
                           "user_lane_depth", axis=None)
        elif s.kind is ir.ForKind.GPU_LANE:
            guard = self._idle_threads_skip(bound=self._axes_inside(s))
            self._gpu_loop(s, f"if ({guard}) {{" if guard else "{",
                           f"const int32_t {var} = (int32_t)threadIdx.x; (void){var};", "lane_depth", axis=None)
        elif s.kind is ir.ForKind.GPU_THREAD:
            axis = self.shape.thread_axis[s.name]
            guard = " && ".join(filter(None, [f"(int32_t)threadIdx.{AXES[axis]} < {self.expr(s.extent)}",
                                              self._idle_threads_skip(bound={axis} | self._axes_inside(s))]))
            self._gpu_loop(s, f"if ({guard}) {{",
                           f"const int32_t {var} = {self.expr(s.min)} + (int32_t)threadIdx.{AXES[axis]};",
                           "thread_depth", axis=axis)
        elif s.kind is ir.ForKind.GPU_BLOCK:
            raise codegen_error(f"gpu_block loop '{s.name}' inside another kernel's loops")
        else:
            self.serial_depth += 1
            super().visit_for(s)
            self.serial_depth -= 1

    def _gpu_loop(self, s: ir.For, opening: str, binding: str, depth: str, axis: int | None) -> None:
        """A lane or thread loop is not a loop on the GPU: every thread runs
        the body once, with the loop variable bound to its thread index."""
        self.comment(s)
        self.emit(opening)
        self.indent += 1
        self.emit(binding)
        setattr(self, depth, getattr(self, depth) + 1)
        if axis is not None:
            self.bound_axes.add(axis)
        self.stmt_(s.body)
        if axis is not None:
            self.bound_axes.discard(axis)
        setattr(self, depth, getattr(self, depth) - 1)
        self.indent -= 1
        self.emit("}")

    def _axes_inside(self, loop: ir.For) -> set[int]:
        """Thread axes that loops nested in ``loop`` bind: the threads along
        them must enter ``loop`` too, to reach their own iterations."""
        return {self.shape.thread_axis[n.name] for n in ir.walk(loop.body)
                if isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_THREAD and n.name in self.shape.thread_axis}

    def _idle_threads_skip(self, bound: set[int]) -> str:
        """The condition that keeps threads off a loop that does not use their
        index on some axis: as in Halide, only index 0 of every axis no
        enclosing thread loop binds runs it (the lanes' x axis aside)."""
        first = 1 if self.lanes else 0
        idle = [a for a in range(first, 3)
                if self.block_dims[a] > 1 and a not in bound and a not in self.bound_axes]
        return " && ".join(f"threadIdx.{AXES[a]} == 0" for a in idle)

    def visit_allocate(self, s: ir.Allocate) -> None:
        self.comment(s)
        size = s.constant_elements
        if size is None:
            raise codegen_error(f"allocation '{s.name}' inside a kernel has a symbolic size")
        name = self.cname(s.name)
        elem = s.type.element()
        self.emit("{")
        self.indent += 1
        if s.memory_type == FRAGMENT_MEMORY:
            shape = self._fragment_shape(s)
            m, n, k = shape
            self.fragments[s.name] = (elem, shape)
            count = size // (m * n)
            self.emit(f"wmma::fragment<wmma::accumulator, {m}, {n}, {k}, {cuda_element(elem)}> {name}[{count}];")
        else:
            self.element_types[s.name] = elem
            self._declare_memory(s.name, storage_type(elem), size,
                                 per_warp=ir.WMMA_STAGE in s.name or (self.lanes and self.thread_depth > 0))
        self.declared.append(set())
        self.stmt_(s.body)
        self.declared.pop()
        self.indent -= 1
        self.emit("}")

    def _declare_memory(self, buffer: str, storage: str, size: int, per_warp: bool) -> None:
        """Kernel memory follows Halide's GPU rules: outside the thread loops
        a buffer is shared by the block; inside them it belongs to one Halide
        thread, which is a whole warp when there are warp lanes (so that all
        32 lanes see it: shared memory, one slice per warp). Either way it is
        32-byte aligned, as load_matrix_sync needs."""
        name = self.cname(buffer)
        align = f"__align__({WMMA_TENSOR_CORE.pointer_alignment})"
        if per_warp:
            self.emit(f"__shared__ {align} {storage} {name}_warps[{self.shape.warps}][{size}];")
            self.emit(f"{storage} *{name} = {name}_warps[{'hb_warp' if self.lanes else '0'}];")
        elif self.thread_depth == 0 and not self.shape.single_thread:
            self.emit(f"__shared__ {align} {storage} {name}[{size}];")
        else:
            self.emit(f"{align} {storage} {name}[{size}];")

    def _fragment_shape(self, s: ir.Allocate) -> tuple[int, int, int]:
        shapes = {_shape(n.value) for n in ir.walk(s.body)
                  if isinstance(n, ir.Store) and n.name == s.name and isinstance(n.value, ir.Call)}
        if len(shapes) != 1:
            raise codegen_error(f"WMMA buffer '{s.name}' is written with {len(shapes)} fragment shapes; expected one")
        return shapes.pop()

    def _fragment_slot(self, name: str, index: ir.Expr) -> str:
        elem, (m, n, _) = self.fragments[name]
        lanes = m * n
        if not (isinstance(index, ir.Ramp) and isinstance(index.base, ir.IntImm)
                and index.base.value % lanes == 0 and index.lanes == lanes):
            raise codegen_error(f"WMMA buffer '{name}' is accessed at an index that is not a whole fragment")
        return f"{self.cname(name)}[{index.base.value // lanes}]"

    def visit_let_stmt(self, s: ir.LetStmt) -> None:
        load = s.value
        if not (isinstance(load, ir.Call) and _wmma_op(load) is WMMAOp.LOAD
                and wmma_operation(load).matrix in (MatrixUse.A, MatrixUse.B)):
            super().visit_let_stmt(s)
            return
        # An operand fragment loaded once for the statements after it
        # (legalize/fragment_reuse.py).
        self.comment(s)
        name = self.cname(s.name)
        address = self._address(load)
        self.emit(f"{self._fragment_declaration(load)} {name};")
        self._load_matrix(name, load, address)
        self.operand_lets[s.name] = (name, load)
        self.stmt_(s.body)

    def visit_store(self, s: ir.Store) -> None:
        if s.name in self.fragments:
            self.comment(s)
            self._store_fragment(self._fragment_slot(s.name, s.index), s.value)
            return
        if self.lane_depth and is_stage_copy(s):
            self.comment(s)
            self._cooperative_copy(s)
            return
        if self.lane_depth:
            raise codegen_error("a warp-lane loop may only hold WMMA operations and their staging copies")
        spread = spread_value(s)
        if spread is not None and self.placement().shared_by_threads:
            self.comment(s)
            self._spread_store(s, spread)
            return
        plain = s if spread is None else ir.Store(s.name, spread, s.index, s.predicate, s.alignment)
        self._by_one_thread(lambda: super(KernelGenerator, self).visit_store(plain))

    def visit_evaluate(self, s: ir.Evaluate) -> None:
        value = s.value
        if barrier_level(s) is not None:
            assert isinstance(value, ir.Call)
            barrier = operations.find(value.name)
            assert barrier is not None and barrier.cuda is not None
            self.emit(f"{barrier.cuda};")
            return
        if isinstance(value, ir.Call) and _wmma_op(value) is WMMAOp.STORE:
            self.comment(s)
            pointer, fragment, offset, ldm = value.args
            assert isinstance(pointer, ir.Variable)
            self._note_pointer(pointer.name)
            elem = cuda_element(fragment.type)
            self.emit(f"wmma::store_matrix_sync(({elem} *){self.cname(pointer.name)} + ({self.expr(offset)}), "
                      f"{self._fragment(fragment)}, {self.expr(ldm)}, wmma::{_memory_layout(value)});")
            return
        self._by_one_thread(lambda: super(KernelGenerator, self).visit_evaluate(s))

    def _by_one_thread(self, emit: Callable[[], None]) -> None:
        """Memory side effects outside the warp lanes happen once per Halide
        thread, as in Halide: outside the thread loops once per block
        (thread 0), inside them once per warp (lane 0); the barriers around
        them are legalize/barriers.py's."""
        where = self.placement()
        if not where.first_thread_fenced:
            # Inside thread loops, the threads along an axis no enclosing loop
            # binds (an outer y loop lets in the x threads of its inner x
            # loop) are the same Halide thread: only the first one writes.
            idle = self._idle_threads_skip(bound=set()) if self.thread_depth or self.user_lane_depth else ""
            if idle:
                self.emit(f"if ({idle}) {{")
                self.indent += 1
            emit()
            if idle:
                self.indent -= 1
                self.emit("}")
            return
        block_level = self.thread_depth == 0
        first = "threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0" if block_level else "threadIdx.x == 0"
        self.emit(f"if ({first}) {{")
        self.indent += 1
        emit()
        self.indent -= 1
        self.emit("}")

    # ------------------------------------------------------------ spread stores
    def _spread_store(self, s: ir.Store, value: ir.Expr) -> None:
        """The threads that make up the Halide thread (the block, or the warp)
        compute and write the vector's lanes together, each its own."""
        if self.thread_depth == 0:
            first, step = "hb_thread", self.shape.threads
        else:
            first, step = "(int)threadIdx.x", WMMA_TENSOR_CORE.warp_size
        i = self._spread_lane(first, value.type.lanes, step)
        elem = self.element_types[s.name]
        # Written first: shuffle tables are emitted before the loop.
        if value.type.element() == elem:
            lane_value = self._lane_bits(value, i)
        else:  # a literal typed float16 stored into bfloat16, say: converted to the buffer's type
            lane_value = to_storage(elem)(self._lane_value(value, i))
        index = self._lane_value(s.index, i)
        self._spread_loop(first, value.type.lanes, step)
        self.emit(f"{self.cname(s.name)}[{index}] = {lane_value};")
        self._end_loop()

    def _unrolls(self, lanes: int, step: int) -> bool:
        """Whether the loop in which each thread takes lanes ``first``,
        ``first + step``, ... of ``lanes`` counts its trips instead (a
        constant trip count, so that the compiler unrolls it).

        Inside the kernel's loops (a fill per reduction step) it does: the
        compiler then issues every thread's loads before its first store,
        one memory latency per fill, not one per trip (downsample 61 -> 42
        us on an H200). A fill that runs once stays a plain loop: unrolled,
        the bias tiles of conv_layer_c32 gave the compiler equal addresses
        to keep in registers across the whole kernel, and its hot loop
        waited on its loads twice as long (49 -> 81 us, Nsight Compute's
        long-scoreboard stalls 4.4 -> 14.6 cycles per instruction). A fill
        whose lanes the threads do not divide evenly stays a plain loop too
        (its last trip would need a guard)."""
        return bool(self.serial_depth) and lanes % step == 0

    def _spread_lane(self, first: str, lanes: int, step: int) -> str:
        """The C expression of the lane a thread writes in ``_spread_loop``."""
        return f"({first} + hb_k * {step})" if self._unrolls(lanes, step) else "hb_i"

    def _spread_loop(self, first: str, lanes: int, step: int) -> None:
        """Opens the loop over a thread's lanes (``_unrolls``);
        ``_end_loop`` closes it."""
        if self._unrolls(lanes, step):
            trips = lanes // step
            self.emit(f"#pragma unroll{'' if trips <= MAX_UNROLLED_TRIPS else ' 4'}")
            self.emit(f"for (int hb_k = 0; hb_k < {trips}; hb_k++) {{")
        else:
            self.emit(f"for (int hb_i = {first}; hb_i < {lanes}; hb_i += {step}) {{")
        self.indent += 1

    def _end_loop(self) -> None:
        self.indent -= 1
        self.emit("}")

    def _lane_value(self, e: ir.Expr, i: str) -> str:
        """Scalar C for lane ``i`` (a C expression) of the vector ``e``;
        only for what legalize/lane_spreading.py ``lanewise`` accepts."""
        if e.type.lanes == 1:
            return self.expr(e)
        if isinstance(e, ir.Ramp):
            inner = e.base.type.lanes
            lane, step = (f"({i} % {inner})", f"({i} / {inner})") if inner > 1 else ("0", i)
            total = f"({self._lane_value(e.base, lane)} + {step} * {self._lane_value(e.stride, lane)})"
            return f"(({c_type(e.type.element())}){total})"
        if isinstance(e, ir.Broadcast):
            inner = e.value.type.lanes
            return self._lane_value(e.value, f"({i} % {inner})" if inner > 1 else "0")
        if isinstance(e, ir.Load) and e.predicate is None:
            if e.name not in self.element_types:
                raise codegen_error(f"load from '{e.name}', which is neither a pipeline buffer nor allocated")
            return from_storage(self.element_types[e.name])(f"{self.cname(e.name)}[{self._lane_value(e.index, i)}]")
        if isinstance(e, ir.Cast):
            return cast_expr(e.value.type.element(), e.type.element(), self._lane_value(e.value, i))
        if isinstance(e, ir.Binary):
            return binary_expr(e.op, e.a.type.element(), self._lane_value(e.a, i), self._lane_value(e.b, i))
        if isinstance(e, ir.Select):
            return (f"({self._lane_value(e.condition, i)} ? {self._lane_value(e.true_value, i)} : "
                    f"{self._lane_value(e.false_value, i)})")
        if isinstance(e, ir.Shuffle):
            return self._shuffled_lane(e, i, self._lane_value)
        raise codegen_error(f"no per-lane form for {type(e).__name__}")

    def _lane_bits(self, e: ir.Expr, i: str) -> str:
        """Lane i of ``e`` as stored in memory (a 16-bit float's bits): what
        only moves data (loads of its own type, shuffles, selects,
        broadcasts) moves the bits, and only what computes converts. A fill
        of a Tensor Core operand is all moves: converting each element to
        float and back cost conv2d two thirds of its time on an H200."""
        elem = e.type.element()
        if e.type.lanes == 1:  # one lane, or a broadcast's scalar: as a scalar copy moves it
            return self._bits(e) if self._moves_bits(e, elem) else to_storage(elem)(self._lane_value(e, i))
        if isinstance(e, ir.Load) and e.predicate is None and self.element_types.get(e.name) == elem:
            return f"{self.cname(e.name)}[{self._lane_value(e.index, i)}]"
        if isinstance(e, ir.Broadcast):
            inner = e.value.type.lanes
            return self._lane_bits(e.value, f"({i} % {inner})" if inner > 1 else "0")
        if isinstance(e, ir.Select):
            return (f"({self._lane_value(e.condition, i)} ? {self._lane_bits(e.true_value, i)} : "
                    f"{self._lane_bits(e.false_value, i)})")
        if isinstance(e, ir.Shuffle):
            return self._shuffled_lane(e, i, self._lane_bits)
        return to_storage(elem)(self._lane_value(e, i))

    def _shuffled_lane(self, e: ir.Shuffle, i: str, lane: Callable[[ir.Expr, str], str]) -> str:
        """Lane i is lane t(i) of the vectors laid end to end: one
        comparison per vector picks the one that holds it. t is arithmetic
        where lane_tables finds a form for it, else a table in memory."""
        form = affine_form(e.indices)
        if form is not None:
            picked = c_expression(form, i)
        else:
            table = self.temp()
            self.emit(f"static const int32_t {table}[{len(e.indices)}] = {{{', '.join(map(str, e.indices))}}};")
            picked = f"{table}[{i}]"
        offsets, offset = [], 0
        for vector in e.vectors:
            offsets.append(offset)
            offset += vector.type.lanes
        text = lane(e.vectors[-1], f"({picked} - {offsets[-1]})")
        for vector, start, end in reversed(list(zip(e.vectors[:-1], offsets[:-1], offsets[1:]))):
            text = f"({picked} < {end} ? {lane(vector, f'({picked} - {start})')} : {text})"
        return text

    # ------------------------------------------------------------ WMMA
    def _note_pointer(self, name: str) -> None:
        if ir.WMMA_STAGE not in name:
            self.fragment_pointers.add(name)

    def _store_fragment(self, slot: str, value: ir.Expr) -> None:
        if isinstance(value, ir.Call):
            op = _wmma_op(value)
            if op is WMMAOp.FILL:
                self.emit(f"wmma::fill_fragment({slot}, {self._fill_value(value)});")
                return
            if op is WMMAOp.MMA:
                a, b, c = (self._fragment(arg) for arg in value.args)
                # split operands: three MMAs of their high and low parts (the prelude's SPLIT_MMA)
                split = mma_split_significand(value) is not None
                self.emit(f"{SPLIT_MMA if split else 'wmma::mma_sync'}({slot}, {a}, {b}, {c});")
                return
            if op is WMMAOp.LOAD and wmma_operation(value).matrix is MatrixUse.C:
                self._load_matrix(slot, value)
                return
        self.emit(f"{slot} = {self._fragment(value)};")

    def _fill_value(self, call: ir.Call) -> str:
        value = self.expr(call.args[0])
        return f"__float2half({value})" if call.type.bits == 16 else value

    def _fragment_declaration(self, call: ir.Call) -> str:
        """The ``wmma::fragment`` type a load of ``call``'s matrix fills."""
        m, n, k = _shape(call)
        intrinsic = wmma_operation(call)
        assert intrinsic.matrix is not None and intrinsic.layout is not None
        layout = f", wmma::{intrinsic.layout.cuda}" if intrinsic.matrix is not MatrixUse.C else ""
        element = cuda_element(call.type, intrinsic.matrix)
        return f"wmma::fragment<wmma::{intrinsic.matrix.cuda}, {m}, {n}, {k}, {element}{layout}>"

    def _fragment(self, e: ir.Expr) -> str:
        """The C name of a fragment holding ``e``."""
        if isinstance(e, ir.Load) and e.name in self.fragments:
            return self._fragment_slot(e.name, e.index)
        if isinstance(e, ir.Variable) and e.name in self.operand_lets:
            return self.operand_lets[e.name][0]
        if isinstance(e, ir.Binary) and isinstance(e.b, ir.Broadcast) and e.b.value.type.lanes == 1:
            return self._elementwise(e)
        if not ir.is_wmma_call(e):
            raise codegen_error(f"a WMMA operand is neither a fragment nor a WMMA operation: {type(e).__name__}")
        assert isinstance(e, ir.Call)
        name = self.temp()
        if wmma_operation(e).op is WMMAOp.LOAD:
            address = self._address(e)  # what computing it needs comes before the fragment
            self.emit(f"{self._fragment_declaration(e)} {name};")
            self._load_matrix(name, e, address)
            return name
        m, n, k = _shape(e)
        self.emit(f"wmma::fragment<wmma::accumulator, {m}, {n}, {k}, {cuda_element(e.type)}> {name};")
        self._store_fragment(name, e)
        return name

    def _fragment_shape_of(self, e: ir.Expr) -> tuple[int, int, int]:
        if isinstance(e, ir.Load) and e.name in self.fragments:
            return self.fragments[e.name][1]
        if isinstance(e, ir.Variable) and e.name in self.operand_lets:
            return _shape(self.operand_lets[e.name][1])
        if isinstance(e, ir.Binary):
            return self._fragment_shape_of(e.a)
        assert isinstance(e, ir.Call)
        return _shape(e)

    def _elementwise(self, e: ir.Binary) -> str:
        """An operator with a scalar applied to every element of an
        accumulator fragment (an epilogue): each thread updates the elements
        it holds, whatever the fragment's layout."""
        assert isinstance(e.b, ir.Broadcast), "_fragment only passes a fragment op a broadcast scalar"
        m, n, k = self._fragment_shape_of(e.a)
        source = self._fragment(e.a)
        elem_type = e.type.element()
        scalar = self.expr(e.b.value)
        name = self.temp()
        self.emit(f"wmma::fragment<wmma::accumulator, {m}, {n}, {k}, {cuda_element(elem_type)}> {name} = {source};")
        element = f"{name}.x[hb_e]"
        if elem_type.bits == 16:
            value = binary_expr(e.op, ir.Float(32), f"__half2float({element})", scalar)
            value = f"__float2half({value})"
        else:
            value = binary_expr(e.op, elem_type, element, scalar)
        self.emit(f"for (int hb_e = 0; hb_e < {name}.num_elements; hb_e++) {element} = {value};")
        return name

    def _address(self, call: ir.Call) -> tuple[str, str]:
        """The C address and leading dimension a fragment load reads."""
        pointer, offset, ldm = call.args
        assert isinstance(pointer, ir.Variable)
        elem = memory_element(call.type, wmma_operation(call).moved_matrix)
        return f"(const {elem} *){self.cname(pointer.name)} + ({self.expr(offset)})", self.expr(ldm)

    def _load_matrix(self, target: str, call: ir.Call, address_and_ldm: tuple[str, str] | None = None) -> None:
        pointer = call.args[0]
        assert isinstance(pointer, ir.Variable)
        self._note_pointer(pointer.name)
        address, ldm = address_and_ldm or self._address(call)
        layout = f", wmma::{_memory_layout(call)}" if wmma_operation(call).matrix is MatrixUse.C else ""
        self.emit(f"wmma::load_matrix_sync({target}, {address}, {ldm}{layout});")

    # ------------------------------------------------------------ staging
    def _cooperative_copy(self, s: ir.Store) -> None:
        """The warp's lanes copy a matrix between memory and a staging buffer."""
        assert isinstance(s.value, ir.Load)
        lanes, first, step = s.value.type.lanes, "(int)threadIdx.x", WMMA_TENSOR_CORE.warp_size
        i = self._spread_lane(first, lanes, step)
        dst, src = self.cname(s.name), self.cname(s.value.name)
        self._spread_loop(first, lanes, step)
        self.emit(f"{dst}[{self._element(s.index, i)}] = {src}[{self._element(s.value.index, i)}];")
        self._end_loop()

    def _element(self, e: ir.Expr, i: str) -> str:
        """Scalar C for lane ``i`` of the integer vector ``e``."""
        lanes = e.type.lanes
        if lanes == 1:
            return f"({self.expr(e)})"
        if isinstance(e, ir.Ramp):
            inner = e.base.type.lanes
            lane = f"({i} % {inner})" if inner > 1 else "0"
            step = f"({i} / {inner})" if inner > 1 else i
            return f"({self._element(e.base, lane)} + {step} * {self._element(e.stride, lane)})"
        if isinstance(e, ir.Broadcast):
            inner = e.value.type.lanes
            return self._element(e.value, f"({i} % {inner})" if inner > 1 else "0")
        if isinstance(e, ir.Binary) and e.op in (ir.BinOp.ADD, ir.BinOp.SUB, ir.BinOp.MUL):
            symbol = {ir.BinOp.ADD: "+", ir.BinOp.SUB: "-", ir.BinOp.MUL: "*"}[e.op]
            return f"({self._element(e.a, i)} {symbol} {self._element(e.b, i)})"
        raise codegen_error(f"cannot index a staging copy with {type(e).__name__}")
