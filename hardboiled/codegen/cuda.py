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

from hardboiled import ir
from hardboiled.codegen.abi import DEFAULT_ENTRY_POINT, KernelArgument
from hardboiled.codegen.c_family import CFamilyEmitter, describes_halide_buffer
from hardboiled.codegen.c_text import (
    C_HEADERS,
    CodegenError,
    GeneratedCode,
    codegen_error,
    helper_functions,
    include_lines,
)
from hardboiled.codegen.cuda_kernel import SPLIT_MMA, KernelGenerator
from hardboiled.ir import operations
from hardboiled.legalize.gpu_mapping import named_axis
from hardboiled.support.diagnostics import Diagnostic
from hardboiled.targets.wmma import WMMA_TENSOR_CORE, mma_split_significand, split_rounding_bits, wmma_intrinsic

GENERATED_CUDA_FLAGS = ("-diag-suppress=177",)
"""nvcc flags for the generated CUDA: the shared prelude defines helpers
that a kernel may not use."""

CUDA_HEADERS = ("cuda_runtime.h", "cuda_fp16.h", "cuda_bf16.h", "mma.h", "stdint.h")

def _split_mma_function(bits: int) -> str:
    """The prelude's SPLIT_MMA for operands split at ``bits`` significant
    bits (``WMMAElement.split_significand``), as verify/fragments.py's
    ``split_operand`` computes it: the high part rounded to nearest, ties
    away from zero, by adding half of the dropped bits' weight and clearing
    them (toward zero where that would overflow), so that its dropped bits
    are zero whatever the Tensor Core reads of them."""
    half, keep = (f"0x{pattern:x}u" for pattern in split_rounding_bits(bits))
    return f"""
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
/* A float's high part of {bits} significant bits; infinities and NaNs as they are. */
static inline __device__ float hb_split_high(float x) {{
    unsigned int bits = __float_as_uint(x);
    if ((bits & 0x7f800000u) == 0x7f800000u) return x;
    unsigned int rounded = (bits + {half}) & {keep};
    if ((rounded & 0x7f800000u) == 0x7f800000u) rounded = bits & {keep};
    return __uint_as_float(rounded);
}}

/* D = A * B + C for float operands in tf32 fragments, to float32's accuracy:
   each operand is a high part plus a low one (its remainder, rounded
   again; 0 for an infinity or NaN), and the product is low x high +
   high x low + high x high, the small terms first. Only low x low and the
   low parts' own rounding (3 * 2^-{2 * bits} of a product) are dropped. */
template <typename D, typename A, typename B, typename C>
static inline __device__ void {SPLIT_MMA}(D &d, const A &a, const B &b, const C &c) {{
    A a_high = a, a_low = a;
    B b_high = b, b_low = b;
    for (int e = 0; e < a.num_elements; e++) {{
        a_high.x[e] = hb_split_high(a.x[e]);
        a_low.x[e] = isfinite(a.x[e]) ? hb_split_high(a.x[e] - a_high.x[e]) : 0.0f;
    }}
    for (int e = 0; e < b.num_elements; e++) {{
        b_high.x[e] = hb_split_high(b.x[e]);
        b_low.x[e] = isfinite(b.x[e]) ? hb_split_high(b.x[e] - b_high.x[e]) : 0.0f;
    }}
    wmma::mma_sync(d, a_low, b_high, c);
    wmma::mma_sync(d, a_high, b_low, d);
    wmma::mma_sync(d, a_high, b_high, d);
}}
#endif
"""


_CUDA_PRELUDE = (
    include_lines(CUDA_HEADERS) + include_lines(C_HEADERS) + "\n"
    + helper_functions("static inline __host__ __device__")
    + "using namespace nvcuda;\n"
)


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


def _holds_block_loop(s: ir.Stmt) -> bool:
    """Whether ``s`` is a gpu_block loop, possibly under more lets."""
    while isinstance(s, ir.LetStmt):
        s = s.body
    return isinstance(s, ir.For) and s.kind is ir.ForKind.GPU_BLOCK


def required_sm(stmt: ir.Stmt) -> tuple[int, tuple[ir.Type, ...]]:
    """The oldest architecture whose Tensor Cores run every WMMA operation
    in ``stmt`` (bf16, float64 and float32 as tf32 need sm_80), and the
    fragment types that need it."""
    needs: dict[ir.Type, int] = {}
    for node in ir.walk(stmt):
        if (intrinsic := wmma_intrinsic(node)) is not None:
            needs[intrinsic.type] = max(needs.get(intrinsic.type, 0), WMMA_TENSOR_CORE.min_sm_of(intrinsic))
    sm = max(needs.values(), default=WMMA_TENSOR_CORE.min_sm)
    return sm, tuple(t for t, needed in needs.items() if needed == sm)


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
        split = next((bits for node in ir.walk(self.stmt) if (bits := mma_split_significand(node)) is not None),
                     None)
        split_function = _split_mma_function(split) if split is not None else ""
        return _CUDA_PRELUDE + split_function + "".join("\n".join(k) + "\n\n" for k in self.kernels)

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
    def allocation_unit_bytes(self, element_bytes: int) -> int:
        # Device memory: Halide's device_malloc takes a size_t, so the only
        # limit is the kernels' int32 element indexing (an attention's 4 GiB
        # of scores is a legal device buffer; the host never allocates it).
        return 1

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
        named = [named_axis(loop, "block") for loop in reversed(blocks)]
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
