"""CUDA code generation for tensorized Halide IR (``--emit cuda``).

The output is one CUDA C++ translation unit:

* a ``__global__`` kernel per ``gpu_block`` loop nest, whose block loops
  become ``blockIdx`` and whose thread loops become ``threadIdx``;
* a host wrapper with the C generator's signatures,

      extern "C" int NAME_raw(T0 *X, int32_t X_min0, ..., cudaStream_t hb_stream);
      extern "C" int NAME(struct halide_buffer_t *X, ...);

  taking *device* pointers (``buffer->device`` for the second, which uses
  the default stream) (the buffers are already on the GPU, so
  ``halide_copy_to_device`` is a no-op). It runs the pipeline's host code
  (its checks return a negative number, as in the C output) and queues
  each kernel on the caller's stream, without waiting for it.

WMMA, after legalize.py's post-processing:

* a warp-lane loop (``gpu_lane``, extent 32) is ``threadIdx.x``; the GPU
  thread loops of the dump move to ``threadIdx.y`` and ``.z``, so each warp
  is one Halide thread;
* a ``WMMAAccumulator`` allocation is an array of ``nvcuda::wmma::fragment``
  accumulators, a per-thread local of the kernel (each thread holds its
  share of the tile);
* ``wmma.load``/``mma``/``store.d``/``fill`` calls become
  ``load_matrix_sync``/``mma_sync``/``store_matrix_sync``/``fill_fragment``;
  operand fragments are declared where they are loaded;
* a ``GPUShared`` staging buffer (an operand whose alignment could not be
  proven) is a 32-byte aligned ``__shared__`` array per warp, filled or
  drained by the warp's 32 lanes together between ``__syncwarp()``\\ s.

The wrapper checks at run time that every buffer a fragment is loaded from
or stored to directly starts on a 32-byte boundary (cudaMalloc's are).
Statements outside the warp lanes keep Halide's GPU meaning: outside the
thread loops they run once per block and their buffers are ``__shared__``;
inside, once per Halide thread, which is a warp when there are lanes. A
vector store whose lanes are independent is spread over the threads that
make up the Halide thread (the block, or the warp's lanes); any other runs
on its first thread, between barriers. A thread or lane loop runs only on index 0
of the thread axes it does not bind, and one at block level ends with a
block barrier (Halide's barrier between GPU stages). Host code may not touch buffer contents
(the wrapper has only device pointers): such a pipeline is refused.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from hardboiled import ir
from hardboiled.codegen.abi import DEFAULT_ENTRY_POINT, KernelArgument
from hardboiled.codegen.c_family import (
    C_HEADERS,
    CFamilyEmitter,
    CodegenError,
    GeneratedCode,
    binary_expr,
    c_type,
    cast_expr,
    codegen_error,
    describes_halide_buffer,
    from_storage,
    helper_functions,
    include_lines,
    storage_type,
    to_storage,
)
from hardboiled.ir import operations
from hardboiled.support.diagnostics import Diagnostic
from hardboiled.targets.wmma import WMMA_TENSOR_CORE, MatrixUse, WMMAIntrinsic, WMMAOp

_DIMS = "xyz"
_MAX_BLOCK_THREADS = 1024
_MAX_BLOCK_Z = 64
_FRAGMENT_MEMORY = "WMMAAccumulator"

GENERATED_CUDA_FLAGS = ("-diag-suppress=177",)
"""nvcc flags for the generated CUDA: the shared prelude defines helpers
that a kernel may not use."""

CUDA_HEADERS = ("cuda_runtime.h", "cuda_fp16.h", "cuda_bf16.h", "mma.h", "stdint.h")

_CUDA_PRELUDE = (
    include_lines(CUDA_HEADERS) + include_lines(C_HEADERS) + "\n"
    + helper_functions("static inline __host__ __device__")
    + "using namespace nvcuda;\n"
)


def _cuda_element(t: ir.Type) -> str:
    """The CUDA type of a fragment's elements: an operand type of the Tensor
    Core table, or an accumulator type of it (float, int)."""
    element = WMMA_TENSOR_CORE.element(t.element())
    if element is not None:
        return element.cuda_type
    if t.element() in WMMA_TENSOR_CORE.accumulator_types:
        return c_type(t.element())
    raise codegen_error(f"no WMMA fragment holds {t.element()} elements")


def _intrinsic(call: ir.Call) -> WMMAIntrinsic:
    intrinsic = WMMAIntrinsic.parse(call.name)
    if intrinsic is None:
        raise codegen_error(f"{call.name} is not a WMMA fragment operation")
    return intrinsic


def _wmma_op(e: ir.Expr) -> WMMAOp | None:
    """What a wmma.* call does; None for anything else."""
    return _intrinsic(e).op if ir.is_wmma_call(e) else None


def _shape(call: ir.Call) -> tuple[int, int, int]:
    shape = _intrinsic(call).shape
    return shape.m, shape.n, shape.k


def _memory_layout(call: ir.Call) -> str:
    """``mem_row_major`` or ``mem_col_major``: the layout a load of C or a
    store of D gives load/store_matrix_sync."""
    layout = _intrinsic(call).layout
    assert layout is not None
    return layout.cuda_memory


def _host_memory(what: str) -> CodegenError:
    return CodegenError(Diagnostic(
        "error", f"--emit cuda: {what} outside every gpu_block loop",
        notes=("the generated wrapper takes device pointers and runs only kernels on buffer contents; "
               "schedule that stage on the GPU too",),
    ))


def _host_stage(s: ir.For) -> bool:
    """A loop nest outside the kernels that computes a stage: it touches
    buffer contents and launches no kernel itself."""
    touches = False
    for node in ir.walk(s):
        if isinstance(node, ir.For) and node.kind is ir.ForKind.GPU_BLOCK:
            return False
        touches = touches or isinstance(node, (ir.Load, ir.Store))
    return touches


def _performs_wmma(loop: ir.For) -> bool:
    """A lane loop that legalization built around WMMA operations (the warp
    acts together), as opposed to the schedule's own gpu_lanes loop."""
    return any(ir.is_wmma_call(n) for n in ir.walk(loop.body))


def _holds_block_loop(s: ir.Stmt) -> bool:
    """Whether ``s`` is a gpu_block loop, possibly under more lets."""
    while isinstance(s, ir.LetStmt):
        s = s.body
    return isinstance(s, ir.For) and s.kind is ir.ForKind.GPU_BLOCK


def required_sm(stmt: ir.Stmt) -> int:
    """The oldest architecture whose Tensor Cores run every WMMA operation
    in ``stmt`` (bf16 needs sm_80)."""
    sm = WMMA_TENSOR_CORE.min_sm
    for node in ir.walk(stmt):
        if ir.is_wmma_call(node) and (intrinsic := WMMAIntrinsic.parse(node.name)) is not None:
            sm = max(sm, WMMA_TENSOR_CORE.min_sm_of(intrinsic))
    return sm


def _named_axis(loop: ir.For, kind: str) -> int | None:
    """The axis Halide named a GPU loop for: ``...block_id_y`` is block axis
    1, ``...thread_id_x`` thread axis 0 (``kind`` is block or thread)."""
    return next((i for i, axis in enumerate(_DIMS) if loop.name.endswith(f"{kind}_id_{axis}")), None)


class CudaGenerator(CFamilyEmitter):
    """The host wrapper; each gpu_block loop nest becomes a kernel launch."""

    def __init__(self, stmt: ir.Stmt, function: str = DEFAULT_ENTRY_POINT,
                 arguments: list[KernelArgument] | None = None):
        super().__init__(stmt, function, arguments)
        self.kernels: list[list[str]] = []
        self.device_allocations: list[str] = []
        """C names of the enclosing cudaMalloc'd buffers, freed on every return."""

    linkage = 'extern "C" '
    stream = "hb_stream"

    def extra_parameters(self) -> list[str]:
        # The caller's stream: every launch, allocation and free is ordered
        # on it, and nothing waits for the whole device.
        return [f"cudaStream_t {self.stream}"]

    def extra_parameter_notes(self) -> list[str]:
        return [f"{self.stream}: the stream every kernel is queued on (NULL: the default stream); the "
                "function returns without waiting for them, and buffer pointers are device memory"]

    buffers_on_device = True

    def default_extra_arguments(self) -> list[str]:
        # Halide's calling convention has no stream: the default one.
        return ["(cudaStream_t)0"]

    def header_includes(self) -> list[str]:
        return ["#include <cuda_runtime.h>"]

    def preamble(self) -> str:
        # Kernels are emitted while the body is, so they are known here.
        return _CUDA_PRELUDE + "".join("\n".join(k) + "\n\n" for k in self.kernels)

    def visit_for(self, s: ir.For) -> None:
        if s.kind is ir.ForKind.GPU_BLOCK:
            self._launch(s)
        elif s.kind in (ir.ForKind.GPU_THREAD, ir.ForKind.GPU_LANE):
            raise codegen_error(f"GPU thread loop '{s.name}' outside any gpu_block loop")
        elif _host_stage(s):
            self._launch_host_stage(s)
        else:
            super().visit_for(s)

    def visit_call(self, e: ir.Call) -> str:
        operation = operations.find(e.name)
        if operation is not None and operation.cuda is not None:
            # The device runtime: the wrapper is given device pointers and allocates device memory itself.
            return self.spell(operation.cuda, e.args)
        return super().visit_call(e)

    def visit_let_stmt(self, s: ir.LetStmt) -> None:
        if s.name.endswith(".buffer") and describes_halide_buffer(s):
            # A stage computed at root on the GPU: Halide describes its
            # device allocation for its runtime, which the wrapper does not
            # use (the Allocate around it is the device memory).
            self.stmt_(s.body)
            return
        super().visit_let_stmt(s)

    def visit_evaluate(self, s: ir.Evaluate) -> None:
        if isinstance(s.value, ir.Call) and s.value.name == operations.REGISTER_DESTRUCTOR.name:
            return  # the wrapper frees its device allocations itself
        super().visit_evaluate(s)

    # The wrapper's pointers are device memory. A host stage (a loop nest
    # or statement outside every gpu_block loop that touches buffers) runs
    # as a kernel of one thread; host code that read buffer contents for its
    # own control flow would read the GPU's memory on the CPU: refused.
    def visit_store(self, s: ir.Store) -> None:
        self._launch_host_stage(s)

    def visit_load(self, e: ir.Load) -> str:
        raise _host_memory(f"host code reads buffer '{e.name}' to decide what to run")

    # A buffer between stages is device memory from the stream's pool, freed
    # on every return; the launch checks the 32-byte alignment of each one a
    # fragment is loaded from or stored to.
    def acquire_memory(self, name: str, storage: str, size: str) -> None:
        self.emit(f"{storage} *{name} = NULL;")
        self.emit(f"if (cudaMallocAsync((void **)&{name}, (size_t)({size}) * sizeof({storage}), {self.stream}) "
                  f"!= cudaSuccess) {{ {self.release_on_return()}return -300003; }}")
        self.device_allocations.append(name)

    def release_memory(self, name: str) -> None:
        self.device_allocations.pop()
        self.emit(f"cudaFreeAsync({name}, {self.stream});")

    def release_on_return(self) -> str:
        # Stream-ordered: the memory is released once the kernels queued
        # before on the stream are done with it.
        return "".join(f"cudaFreeAsync({name}, {self.stream}); " for name in reversed(self.device_allocations))

    def _launch_host_stage(self, stage: ir.Stmt) -> None:
        """Host code that computes a stage: one GPU thread runs it, so that
        it reads and writes device memory like the kernels around it."""
        self.comment(stage)
        self._emit_launch(KernelGenerator(self, stage, f"{self.function}_k{len(self.kernels)}"), ["1", "1", "1"])

    def _launch(self, nest: ir.For) -> None:
        self.comment(nest)
        blocks: list[ir.For] = []
        lets: list[ir.LetStmt] = []
        body: ir.Stmt = nest
        while True:
            if isinstance(body, ir.For) and body.kind is ir.ForKind.GPU_BLOCK:
                bounds = {n.name for e in (body.min, body.extent) for n in ir.walk(e) if isinstance(n, ir.Variable)}
                if any(let.name in bounds for let in lets):
                    raise codegen_error(f"the bounds of gpu_block loop '{body.name}' depend on a value the "
                                        "enclosing block computes")
                blocks.append(body)
                body = body.body
            elif blocks and isinstance(body, ir.LetStmt) and _holds_block_loop(body.body):
                # A value of the outer block index between two block loops
                # (Halide's tail handling, with symbolic sizes): every block
                # computes it at the start of the kernel.
                lets.append(body)
                body = body.body
            else:
                break
        for let in reversed(lets):
            body = ir.LetStmt(let.name, let.value, body)
        if len(blocks) > 3:
            raise codegen_error(f"{len(blocks)} nested gpu_block loops; CUDA grids have 3 dimensions")
        kernel = KernelGenerator(self, body, f"{self.function}_k{len(self.kernels)}")
        grid = ["1", "1", "1"]
        named = [_named_axis(loop, "block") for loop in reversed(blocks)]
        axes = [order if axis is None else axis for order, axis in enumerate(named)]
        if len(set(axes)) != len(axes):
            raise codegen_error("two gpu_block loops of one nest map to the same block axis")
        for axis, loop in zip(axes, reversed(blocks)):
            lo = self.cname(f"{loop.name}.lo")
            self.emit(f"int32_t {lo} = {self.expr(loop.min)};")
            grid[axis] = self.expr(loop.extent)
            kernel.bind_block(loop.name, lo, axis)
        self._emit_launch(kernel, grid)

    def _emit_launch(self, kernel: KernelGenerator, grid: list[str]) -> None:
        kernel.generate_body()
        self.kernels.append(kernel.definition())
        args = ", ".join(host for host, _ in kernel.parameters)
        self.emit("{")
        self.indent += 1
        parameters = {host for host, _ in kernel.parameters}
        for pointer in sorted(p for p in kernel.fragment_pointers if self.cname(p) in parameters):
            self.emit(f"if ((uintptr_t)({self.cname(pointer)}) % {WMMA_TENSOR_CORE.pointer_alignment} != 0) "
                      f"{{ {self.release_on_return()}return -300002; }}  "
                      "/* load/store_matrix_sync need 32-byte aligned buffers */")
        self.emit(f"dim3 hb_grid({', '.join(grid)}), hb_block({', '.join(str(d) for d in kernel.block_dims)});")
        self.emit(f"{kernel.function}<<<hb_grid, hb_block, 0, {self.stream}>>>({args});")
        release = self.release_on_return()
        self.emit(f"if (cudaGetLastError() != cudaSuccess) {{ {release}return -300000; }}")
        self.indent -= 1
        self.emit("}")


_RUNS_NO_CODE = (ir.Allocate, ir.Block, ir.ProducerConsumer)
"""Statements that are only declarations and structure in a kernel: fills
on either side of them may share a barrier."""

_DOES_NOTHING = re.compile(r"^(/\*.*\*/|\{|__shared__ .*;|static const .*;|\w+ \*\w+ = \w+_warps\[\w+\];"
                           r"|\(void\)\w+;|const int(32_t)? \w+ = [^;]*;( \(void\)\w+;)?)$")
"""Kernel lines that touch no memory: comments, scope openings, declarations
of shared buffers and constant tables, the bindings of thread and block
indices."""


def _joins(first: ir.For, second: ir.For) -> bool:
    """Whether two neighbouring loops are the same WMMA lane loop."""
    return (first.kind is second.kind is ir.ForKind.GPU_LANE and _performs_wmma(first) and _performs_wmma(second)
            and (first.name, first.min, first.extent) == (second.name, second.min, second.extent))


def _statements(s: ir.Stmt) -> tuple[ir.Stmt, ...]:
    return s.stmts if isinstance(s, ir.Block) else (s,)


def _distinct_lanes(index: ir.Expr) -> bool:
    """Whether every lane of a store index is a different address: a ramp
    with a nonzero constant stride, or a ramp of such ramps whose rows do not
    overlap."""
    if index.type.lanes == 1:
        return True
    if not (isinstance(index, ir.Ramp) and isinstance(index.stride, (ir.IntImm, ir.Broadcast))):
        return False
    stride = index.stride.value if isinstance(index.stride, ir.Broadcast) else index.stride
    if not isinstance(stride, ir.IntImm) or stride.value == 0:
        return False
    inner = index.base
    if inner.type.lanes == 1:
        return True
    if not (isinstance(inner, ir.Ramp) and isinstance(inner.stride, ir.IntImm) and inner.base.type.lanes == 1):
        return False
    span = abs(inner.stride.value) * (inner.lanes - 1)
    return inner.stride.value != 0 and abs(stride.value) > span


class KernelGenerator(CFamilyEmitter):
    """The body of one ``__global__`` kernel."""

    vectors_on_heap = False

    def __init__(self, host: CudaGenerator, body: ir.Stmt, name: str):
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
        self.stored_by_fragments: set[str] = set()
        """Buffers store_matrix_sync wrote since the warp's last barrier."""
        self.pending_barrier: str | None = None
        """The barrier owed by the spread stores just written (none yet run)."""
        self.pending_fills: set[str] = set()
        """The buffers those stores wrote."""
        self.pending_reads: set[str] = set()
        """The buffers they read: another fill may not overwrite them before
        every thread has read (write after read)."""
        self.operand_fragments: dict[tuple[str, str, str, str], str] = {}
        """A and B fragments loaded in the current C scope, by buffer,
        declaration, address and leading dimension: loaded once, used by
        every MMA."""
        self.lane_depth = 0
        """Depth in warp-wide WMMA lane loops (legalization's)."""
        self.user_lane_depth = 0
        """Depth in the schedule's own gpu_lanes loops (one iteration per lane)."""
        self.parameters: list[tuple[str, str]] = []
        """(host expression, kernel parameter declaration)."""
        self.lanes = any(isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_LANE for n in ir.walk(body))
        self.thread_depth = 0
        # A lane loop is threadIdx.x; the dump's thread loops keep their own
        # axis (thread_id_x/y/z), shifted up by one when lanes take x, so that
        # each Halide thread is one warp.
        shift = 1 if self.lanes else 0
        self.block_dims = [WMMA_TENSOR_CORE.warp_size if self.lanes else 1, 1, 1]
        self.thread_axis: dict[str, int] = {}
        for loop_name, (axis, extent) in self._thread_extents(body).items():
            if axis + shift > 2:
                raise codegen_error(f"GPU thread loop '{loop_name}' needs a fourth thread dimension once the "
                            "warp lanes take threadIdx.x")
            self.thread_axis[loop_name] = axis + shift
            self.block_dims[axis + shift] = max(self.block_dims[axis + shift], extent)
        self.warps = self.block_dims[1] * self.block_dims[2] if self.lanes else 1
        self.bound_axes: set[int] = set()
        threads = self.block_dims[0] * self.block_dims[1] * self.block_dims[2]
        if threads > _MAX_BLOCK_THREADS or self.block_dims[2] > _MAX_BLOCK_Z:
            raise codegen_error(f"a block of {' x '.join(map(str, self.block_dims))} threads: CUDA allows "
                        f"{_MAX_BLOCK_THREADS} per block and {_MAX_BLOCK_Z} along z")

    @staticmethod
    def _thread_extents(body: ir.Stmt) -> dict[str, tuple[int, int]]:
        """Each GPU thread loop: its axis (from Halide's ``thread_id_x/y/z``
        suffix) and its constant extent."""
        found: dict[str, tuple[int, int]] = {}
        for node in ir.walk(body):
            if isinstance(node, ir.For) and node.kind is ir.ForKind.GPU_THREAD:
                if not isinstance(node.extent, ir.IntImm):
                    raise codegen_error(f"GPU thread loop '{node.name}' has a symbolic extent")
                axis = _named_axis(node, "thread")
                if axis is None:
                    raise codegen_error(f"GPU thread loop '{node.name}' does not say its axis (thread_id_x/y/z)")
                previous = found.get(node.name, (axis, 0))[1]
                found[node.name] = (axis, max(previous, node.extent.value))
        return found

    def bind_block(self, loop_name: str, host_lo: str, axis: int) -> None:
        self.block_vars[loop_name] = (host_lo, axis)

    # ------------------------------------------------------------ the kernel
    def generate_body(self) -> None:
        for loop_name, (host_lo, axis) in self.block_vars.items():
            var = self.cname(loop_name)
            self.emit(f"const int32_t {var} = {host_lo} + (int32_t)blockIdx.{_DIMS[axis]};")
        if self.block_dims != [1, 1, 1]:
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
        if s.kind is ir.ForKind.GPU_LANE and not _performs_wmma(s):
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
            axis = self.thread_axis[s.name]
            guard = " && ".join(filter(None, [f"(int32_t)threadIdx.{_DIMS[axis]} < {self.expr(s.extent)}",
                                              self._idle_threads_skip(bound={axis} | self._axes_inside(s))]))
            self._gpu_loop(s, f"if ({guard}) {{",
                           f"const int32_t {var} = {self.expr(s.min)} + (int32_t)threadIdx.{_DIMS[axis]};",
                           "thread_depth", axis=axis)
        elif s.kind is ir.ForKind.GPU_BLOCK:
            raise codegen_error(f"gpu_block loop '{s.name}' inside another kernel's loops")
        else:
            super().visit_for(s)

    def stmt_(self, s: ir.Stmt) -> None:
        if self.pending_barrier and not isinstance(s, _RUNS_NO_CODE) and not self._joins_pending_fills(s):
            self._settle_fills()
        # A fragment declared in a C scope is gone when the scope closes: what
        # is held is forgotten around any statement that opens one.
        opens_scope = isinstance(s, (ir.For, ir.Allocate, ir.IfThenElse, ir.LetStmt))
        if opens_scope:
            self.operand_fragments.clear()
        super().stmt_(s)
        if opens_scope:
            self.operand_fragments.clear()

    def visit_block(self, s: ir.Block) -> None:
        """Neighbouring WMMA lane loops become one, so that the operand
        fragments one statement loads serve the next ones (a 4 x 4 block of
        tiles loads 4 A and 4 B fragments per step, not 16 of each). Every
        lane runs every statement of such a loop, so joining them changes
        nothing else."""
        runs: list[ir.Stmt] = []
        for child in s.stmts:
            previous = runs[-1] if runs else None
            if (isinstance(child, ir.For) and isinstance(previous, ir.For) and _joins(previous, child)):
                runs[-1] = dataclasses.replace(
                    previous, body=ir.Block((*_statements(previous.body), *_statements(child.body))))
            else:
                runs.append(child)
        for child in runs:
            self.stmt_(child)

    def _gpu_loop(self, s: ir.For, opening: str, binding: str, depth: str, axis: int | None) -> None:
        """A lane or thread loop is not a loop on the GPU: every thread runs
        the body once, with the loop variable bound to its thread index. One
        at block level ends with a block barrier, so that what it wrote is
        seen by the statements after it (as between Halide's GPU stages)."""
        at_block_level = self.thread_depth == 0 and self.lane_depth == 0
        self.comment(s)
        self.emit(opening)
        self.indent += 1
        self.emit(binding)
        setattr(self, depth, getattr(self, depth) + 1)
        if axis is not None:
            self.bound_axes.add(axis)
        self.stmt_(s.body)
        self._settle_fills()
        if axis is not None:
            self.bound_axes.discard(axis)
        setattr(self, depth, getattr(self, depth) - 1)
        self.indent -= 1
        self.emit("}")
        # Halide threads are warps (lanes) along y and z, or threads along
        # every axis (no lanes): with more than one, the next stage waits.
        halide_threads = self.block_dims[1] * self.block_dims[2] * (1 if self.lanes else self.block_dims[0])
        if at_block_level and halide_threads > 1:
            self._barrier("__syncthreads();")

    def _axes_inside(self, loop: ir.For) -> set[int]:
        """Thread axes that loops nested in ``loop`` bind: the threads along
        them must enter ``loop`` too, to reach their own iterations."""
        return {self.thread_axis[n.name] for n in ir.walk(loop.body)
                if isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_THREAD and n.name in self.thread_axis}

    def _idle_threads_skip(self, bound: set[int]) -> str:
        """The condition that keeps threads off a loop that does not use their
        index on some axis: as in Halide, only index 0 of every axis no
        enclosing thread loop binds runs it (the lanes' x axis aside)."""
        first = 1 if self.lanes else 0
        idle = [a for a in range(first, 3)
                if self.block_dims[a] > 1 and a not in bound and a not in self.bound_axes]
        return " && ".join(f"threadIdx.{_DIMS[a]} == 0" for a in idle)

    def visit_allocate(self, s: ir.Allocate) -> None:
        self.comment(s)
        size = s.constant_elements
        if size is None:
            raise codegen_error(f"allocation '{s.name}' inside a kernel has a symbolic size")
        name = self.cname(s.name)
        elem = s.type.element()
        self.emit("{")
        self.indent += 1
        if s.memory_type == _FRAGMENT_MEMORY:
            shape = self._fragment_shape(s)
            m, n, k = shape
            self.fragments[s.name] = (elem, shape)
            count = size // (m * n)
            self.emit(f"wmma::fragment<wmma::accumulator, {m}, {n}, {k}, {_cuda_element(elem)}> {name}[{count}];")
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
            self.emit(f"__shared__ {align} {storage} {name}_warps[{self.warps}][{size}];")
            self.emit(f"{storage} *{name} = {name}_warps[{'hb_warp' if self.lanes else '0'}];")
        elif self.thread_depth == 0 and self.block_dims != [1, 1, 1]:
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

    def visit_store(self, s: ir.Store) -> None:
        if s.name in self.fragments:
            self.comment(s)
            self._store_fragment(self._fragment_slot(s.name, s.index), s.value)
            return
        if self.lane_depth and self._is_stage_copy(s):
            self.comment(s)
            self._forget_fragments_from(s.name)
            self._cooperative_copy(s)
            return
        if self.lane_depth:
            raise codegen_error("a warp-lane loop may only hold WMMA operations and their staging copies")
        if self._shared_by_threads() and self._spreads_over_threads(s):
            self.comment(s)
            self._spread_store(s)
            return
        self._by_one_thread(lambda: super(KernelGenerator, self).visit_store(s))

    def _shared_by_threads(self) -> bool:
        """Whether a statement here belongs to a Halide thread that several
        CUDA threads run together: the whole block at block level, a warp
        inside the thread loops (when warps are Halide threads)."""
        if self.block_dims == [1, 1, 1] or self.user_lane_depth:
            return False
        return self.thread_depth == 0 or self.lanes

    def _spreads_over_threads(self, s: ir.Store) -> bool:
        """A vector store whose lanes are independent: each lane's value can
        be computed on its own, every lane writes its own element, and the
        value does not read what the store writes (Halide reads every lane
        before writing any)."""
        if s.predicate is not None or s.value.type.lanes == 1 or not _distinct_lanes(s.index):
            return False
        if any(isinstance(n, ir.Load) and n.name == s.name for n in ir.walk(s)):
            return False
        return self._lanewise(s.value) and self._lanewise(s.index)

    def _barrier(self, barrier: str) -> None:
        """A barrier, unless the last thing the threads did was one at least
        as wide (declarations and comments in between do nothing): two
        cooperative fills in a row need one barrier between them, not two."""
        for line in reversed(self.lines):
            text = line.strip()
            if text == barrier or text == "__syncthreads();":
                return
            if not _DOES_NOTHING.match(text):
                self.emit(barrier)
                return
        # The kernel's start: no thread has touched memory yet.

    def _lanewise(self, e: ir.Expr) -> bool:
        """Whether ``_lane_value`` can write lane i of ``e`` as one C expression."""
        if e.type.lanes == 1:
            return not any(isinstance(n, (ir.Let, ir.Call, ir.VectorReduce)) for n in ir.walk(e))
        if isinstance(e, ir.Load):
            return e.predicate is None and e.name in self.element_types and self._lanewise(e.index)
        parts = {ir.Ramp: ("base", "stride"), ir.Broadcast: ("value",), ir.Cast: ("value",), ir.Binary: ("a", "b"),
                 ir.Select: ("condition", "true_value", "false_value")}.get(type(e))
        if parts is not None:
            return all(self._lanewise(getattr(e, part)) for part in parts)
        return isinstance(e, ir.Shuffle) and all(self._lanewise(v) for v in e.vectors)

    def _spread_store(self, s: ir.Store) -> None:
        """The threads that make up the Halide thread (the block, or the warp)
        compute and write the vector's lanes together, between barriers, as
        one thread would have alone (the Toeplitz matrices and other
        operands built beside the fragments)."""
        block_level = self.thread_depth == 0
        barrier = "__syncthreads();" if block_level else "__syncwarp();"
        if block_level:
            first, step = "hb_thread", self.block_dims[0] * self.block_dims[1] * self.block_dims[2]
        else:
            first, step = "(int)threadIdx.x", WMMA_TENSOR_CORE.warp_size
        i = "hb_i"
        elem = self.element_types[s.name]
        # Written first: shuffle tables are emitted before the loop.
        value = to_storage(elem)(self._lane_value(s.value, i))
        index = self._lane_value(s.index, i)
        if not self.pending_barrier:
            self._barrier(barrier)  # the threads may still be reading what this overwrites
        self.emit(f"for (int {i} = {first}; {i} < {s.value.type.lanes}; {i} += {step}) {{")
        self.indent += 1
        self.emit(f"{self.cname(s.name)}[{index}] = {value};")
        self.indent -= 1
        self.emit("}")
        # The barrier that makes the lanes visible to every thread waits
        # until something else runs: fills in a row that do not read each
        # other share one.
        self.pending_barrier = barrier
        self.pending_fills.add(s.name)
        self.pending_reads.update(n.name for n in ir.walk(s) if isinstance(n, ir.Load))

    def _joins_pending_fills(self, s: ir.Stmt) -> bool:
        """Whether ``s`` is another spread store at the same level that
        neither writes nor reads what the pending fills wrote, nor writes
        what they read."""
        if not (isinstance(s, ir.Store) and self._shared_by_threads() and self._spreads_over_threads(s)):
            return False
        level = "__syncthreads();" if self.thread_depth == 0 else "__syncwarp();"
        reads = {n.name for n in ir.walk(s) if isinstance(n, ir.Load)}
        return (level == self.pending_barrier and not ({s.name} | reads) & self.pending_fills
                and s.name not in self.pending_reads)

    def _settle_fills(self) -> None:
        """The barrier the pending fills owe, before anything reads them."""
        if self.pending_barrier:
            self._barrier(self.pending_barrier)
        self.pending_barrier = None
        self.pending_fills.clear()
        self.pending_reads.clear()

    def end_of_body(self) -> None:
        # The next iteration may read what this one filled last, and the
        # other branch of an if must not inherit this one's pending barrier.
        self._settle_fills()

    def _lane_value(self, e: ir.Expr, i: str) -> str:
        """Scalar C for lane ``i`` (a C expression) of the vector ``e``;
        only for what ``_lanewise`` accepts."""
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
        if isinstance(e, ir.Load) and e.predicate is None and e.name in self.element_types:
            return from_storage(self.element_types[e.name])(f"{self.cname(e.name)}[{self._lane_value(e.index, i)}]")
        if isinstance(e, ir.Cast):
            return cast_expr(e.value.type.element(), e.type.element(), self._lane_value(e.value, i))
        if isinstance(e, ir.Binary):
            return binary_expr(e.op, e.a.type.element(), self._lane_value(e.a, i), self._lane_value(e.b, i))
        if isinstance(e, ir.Select):
            return (f"({self._lane_value(e.condition, i)} ? {self._lane_value(e.true_value, i)} : "
                    f"{self._lane_value(e.false_value, i)})")
        if isinstance(e, ir.Shuffle):
            # Lane i is lane table[i] of the vectors laid end to end: one
            # comparison per vector picks the one that holds it.
            table = self.temp()
            self.emit(f"static const int32_t {table}[{len(e.indices)}] = {{{', '.join(map(str, e.indices))}}};")
            picked = f"{table}[{i}]"
            offsets, offset = [], 0
            for vector in e.vectors:
                offsets.append(offset)
                offset += vector.type.lanes
            text = self._lane_value(e.vectors[-1], f"({picked} - {offsets[-1]})")
            for vector, start, end in reversed(list(zip(e.vectors[:-1], offsets[:-1], offsets[1:]))):
                text = f"({picked} < {end} ? {self._lane_value(vector, f'({picked} - {start})')} : {text})"
            return text
        raise codegen_error(f"no per-lane form for {type(e).__name__}")

    def _by_one_thread(self, emit: Callable[[], None]) -> None:
        """Memory side effects outside the warp lanes happen once per Halide
        thread, as in Halide: outside the thread loops once per block
        (thread 0, between block barriers, which every thread reaches since
        the enclosing control flow is the same for the whole block), inside
        them once per warp (lane 0, between warp barriers)."""
        if self.block_dims == [1, 1, 1] or (self.thread_depth > 0 and not self.lanes) or self.user_lane_depth:
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
        barrier = "__syncthreads();" if block_level else "__syncwarp();"
        first = "threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0" if block_level else "threadIdx.x == 0"
        self._barrier(barrier)
        self.emit(f"if ({first}) {{")
        self.indent += 1
        emit()
        self.indent -= 1
        self.emit("}")
        self._barrier(barrier)

    def visit_evaluate(self, s: ir.Evaluate) -> None:
        value = s.value
        if isinstance(value, ir.Call) and _wmma_op(value) is WMMAOp.STORE:
            self.comment(s)
            pointer, fragment, offset, ldm = value.args
            assert isinstance(pointer, ir.Variable)
            self._forget_fragments_from(pointer.name)
            self.stored_by_fragments.add(pointer.name)
            self._note_pointer(pointer.name)
            elem = _cuda_element(fragment.type)
            self.emit(f"wmma::store_matrix_sync(({elem} *){self.cname(pointer.name)} + ({self.expr(offset)}), "
                      f"{self._fragment(fragment)}, {self.expr(ldm)}, wmma::{_memory_layout(value)});")
            return
        self._by_one_thread(lambda: super(KernelGenerator, self).visit_evaluate(s))

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
                self.emit(f"wmma::mma_sync({slot}, {a}, {b}, {c});")
                return
            if op is WMMAOp.LOAD and _intrinsic(value).matrix is MatrixUse.C:
                self._load_matrix(slot, value)
                return
        self.emit(f"{slot} = {self._fragment(value)};")

    def _fill_value(self, call: ir.Call) -> str:
        value = self.expr(call.args[0])
        return f"__float2half({value})" if call.type.bits == 16 else value

    def _fragment(self, e: ir.Expr) -> str:
        """The C name of a fragment holding ``e``."""
        if isinstance(e, ir.Load) and e.name in self.fragments:
            return self._fragment_slot(e.name, e.index)
        if isinstance(e, ir.Binary) and isinstance(e.b, ir.Broadcast) and e.b.value.type.lanes == 1:
            return self._elementwise(e)
        if not ir.is_wmma_call(e):
            raise codegen_error(f"a WMMA operand is neither a fragment nor a WMMA operation: {type(e).__name__}")
        assert isinstance(e, ir.Call)
        m, n, k = _shape(e)
        name = self.temp()
        elem = _cuda_element(e.type)
        intrinsic = _intrinsic(e)
        if intrinsic.op is WMMAOp.LOAD:
            assert intrinsic.matrix is not None and intrinsic.layout is not None
            use = intrinsic.matrix.cuda
            layout = f", wmma::{intrinsic.layout.cuda}" if intrinsic.matrix is not MatrixUse.C else ""
            declaration = f"wmma::fragment<wmma::{use}, {m}, {n}, {k}, {elem}{layout}>"
            pointer = e.args[0]
            assert isinstance(pointer, ir.Variable)
            address = self._address(e)
            key = (pointer.name, declaration, *address)
            if intrinsic.matrix is not MatrixUse.C and key in self.operand_fragments:
                return self.operand_fragments[key]
            self.emit(f"{declaration} {name};")
            self._load_matrix(name, e, address)
            if intrinsic.matrix is not MatrixUse.C:
                self.operand_fragments[key] = name
            return name
        self.emit(f"wmma::fragment<wmma::accumulator, {m}, {n}, {k}, {elem}> {name};")
        self._store_fragment(name, e)
        return name

    def _forget_fragments_from(self, buffer: str) -> None:
        """A write to ``buffer`` (a fragment store, a staging copy) makes the
        fragments loaded from it stale; other buffers are other memory (the
        kernel's pointers are __restrict__, as Halide's buffers)."""
        for key in [key for key in self.operand_fragments if key[0] == buffer]:
            del self.operand_fragments[key]

    def _fragment_shape_of(self, e: ir.Expr) -> tuple[int, int, int]:
        if isinstance(e, ir.Load) and e.name in self.fragments:
            return self.fragments[e.name][1]
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
        self.emit(f"wmma::fragment<wmma::accumulator, {m}, {n}, {k}, {_cuda_element(elem_type)}> {name} = {source};")
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
        elem = _cuda_element(call.type)
        return f"(const {elem} *){self.cname(pointer.name)} + ({self.expr(offset)})", self.expr(ldm)

    def _load_matrix(self, target: str, call: ir.Call, address_and_ldm: tuple[str, str] | None = None) -> None:
        pointer = call.args[0]
        assert isinstance(pointer, ir.Variable)
        self._note_pointer(pointer.name)
        if pointer.name in self.stored_by_fragments:
            # What other lanes of the warp stored with store_matrix_sync
            # must be visible before the warp reads it back.
            self._barrier("__syncwarp();")
            self.stored_by_fragments.discard(pointer.name)
        address, ldm = address_and_ldm or self._address(call)
        layout = f", wmma::{_memory_layout(call)}" if _intrinsic(call).matrix is MatrixUse.C else ""
        self.emit(f"wmma::load_matrix_sync({target}, {address}, {ldm}{layout});")

    # ------------------------------------------------------------ staging
    def _is_stage_copy(self, s: ir.Store) -> bool:
        return (s.predicate is None and isinstance(s.value, ir.Load) and s.value.predicate is None
                and (ir.WMMA_STAGE in s.name or ir.WMMA_STAGE in s.value.name))

    def _cooperative_copy(self, s: ir.Store) -> None:
        """The warp's lanes copy a matrix between memory and a staging buffer."""
        assert isinstance(s.value, ir.Load)
        lanes = s.value.type.lanes
        i = "hb_i"
        dst, src = self.cname(s.name), self.cname(s.value.name)
        self._barrier("__syncwarp();")
        self.emit(f"for (int {i} = (int)threadIdx.x; {i} < {lanes}; {i} += {WMMA_TENSOR_CORE.warp_size}) {{")
        self.indent += 1
        self.emit(f"{dst}[{self._element(s.index, i)}] = {src}[{self._element(s.value.index, i)}];")
        self.indent -= 1
        self.emit("}")
        self._barrier("__syncwarp();")

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


def generate_cuda(stmt: ir.Stmt, function: str = DEFAULT_ENTRY_POINT,
                  arguments: list[KernelArgument] | None = None) -> str:
    return CudaGenerator(stmt, function, arguments).generate()


def generate_cuda_code(stmt: ir.Stmt, function: str = DEFAULT_ENTRY_POINT,
                       arguments: list[KernelArgument] | None = None) -> GeneratedCode:
    """The source and the header that declares its functions, from one
    walk of ``stmt``."""
    generator = CudaGenerator(stmt, function, arguments)
    return GeneratedCode(generator.generate(), generator.header())


__all__ = ["GENERATED_CUDA_FLAGS", "CudaGenerator", "generate_cuda", "generate_cuda_code", "required_sm"]
