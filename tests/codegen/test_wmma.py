"""NVIDIA Tensor Core (WMMA) selection, post-processing and CUDA generation,
on the WMMA fixtures that real Halide printed (tools/gen_fixtures.py).

Stock Halide has no WMMA memory type, so the dumps keep the accumulator in
Register and the tests mark it with --store-in, as a user would. Every
rewrite is verified in the reference interpreter; the generated CUDA is
compiled with nvcc, and run only where a GPU exists.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from hardboiled import ir
from hardboiled.codegen.cuda import GENERATED_CUDA_FLAGS, generate_cuda
from hardboiled.codegen.toolchain import compile_cuda
from hardboiled.frontend.parse import parse_input
from hardboiled.ir.printer import print_ir
from hardboiled.legalize.passes import map_to_gpu, tensorize
from hardboiled.legalize.wmma_fragments import push_fragment_allocations
from hardboiled.legalize.wmma_lanes import WMMA_LANE
from hardboiled.legalize.wmma_staging import known_multiple
from hardboiled.select.selector import SelectionOptions
from hardboiled.targets.wmma import WMMA_TENSOR_CORE
from hardboiled.verify.compare import verify
from hardboiled.verify.inputs import make_buffers

from ..conftest import FIXTURES, run_cli

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this machine")

# fixture -> (accumulator, expected mma instruction in the rewritten IR)
TENSORIZED = {
    "wmma_f16_matmul": ("prod", "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32"),
    "wmma_bf16_matmul": ("prod", "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32"),
    "wmma_f16acc_matmul": ("prod", "wmma.mma.sync.aligned.row.row.m16n16k16.f16.f16"),
    "wmma_matmul_m32n8k16": ("prod", "wmma.mma.sync.aligned.row.row.m32n8k16.f32.f32"),
    "wmma_matmul_m8n32k16": ("prod", "wmma.mma.sync.aligned.row.row.m8n32k16.f32.f32"),
    "wmma_matmul_colmajor_b": ("prod", "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32"),
    "wmma_f16_matmul_symbolic": ("prod", "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32"),
    # int8 operands into int32 (added as the worked example of docs/architecture.md)
    "wmma_int8_matmul": ("prod", "wmma.mma.sync.aligned.row.row.m16n16k16.s32.s32"),
    "wmma_uint8_matmul_m32n8k16": ("prod", "wmma.mma.sync.aligned.row.col.m32n8k16.s32.s32"),
    "wmma_dct16": ("dct", "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32"),
    "wmma_dct16_colmajor": ("dct", "wmma.mma.sync.aligned.col.row.m16n16k16.f32.f32"),
    # a convolution layer with a bias and a ReLU (the paper's CUDA conv layer)
    "wmma_conv_layer": ("conv", "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32"),
    # sliding windows, as Toeplitz products, in the shape the cost model
    # chooses (m32n8k16: a fragment row of 8 outputs spans 15 or 30 inputs)
    "wmma_conv1d": ("conv", "wmma.mma.sync.aligned.row.row.m32n8k16.f32.f32"),
    "wmma_conv2d": ("conv", "wmma.mma.sync.aligned.row.row.m32n8k16.f32.f32"),
    "wmma_downsample2": ("conv", "wmma.mma.sync.aligned.row.row.m32n8k16.f32.f32"),
}


def _load(case: str) -> ir.Stmt:
    path = FIXTURES / case / "vectorizing.stmt"
    return parse_input(path.read_text(), str(path)).ir


def _tensorize(case: str) -> tuple[ir.Stmt, ir.Stmt]:
    original = _load(case)
    accumulator = TENSORIZED[case][0]
    result = tensorize(original, SelectionOptions(store_in={accumulator: "WMMAAccumulator"}))
    assert result.reports and all(r.lowered for r in result.reports)
    return original, result.stmt


def _calls(stmt: ir.Stmt) -> list[ir.Call]:
    return [n for n in ir.walk(stmt) if isinstance(n, ir.Call) and n.name.startswith("wmma.")]


@pytest.fixture(scope="module")
def tensorized() -> dict[str, tuple[ir.Stmt, ir.Stmt]]:
    return {case: _tensorize(case) for case in TENSORIZED}


@pytest.mark.slow
@pytest.mark.parametrize("case", TENSORIZED)
def test_fixture_is_tensorized_and_verifies(case: str, tensorized: dict[str, tuple[ir.Stmt, ir.Stmt]]) -> None:
    original, rewritten = tensorized[case]
    names = {c.name for c in _calls(rewritten)}
    assert TENSORIZED[case][1] in names
    initialization = "wmma.load.c." if case == "wmma_conv_layer" else "wmma.fill."
    assert any(n.startswith(initialization) for n in names) and any(n.startswith("wmma.store.d.") for n in names)
    # no ordinary arithmetic is left on the accumulator
    assert not any(isinstance(n, ir.VectorReduce) for n in ir.walk(rewritten))
    for seed in (0, 1):
        check = verify(original, rewritten, seed=seed)
        assert check.ok, check.summary()


def test_column_major_dct_coefficients_are_loaded_in_place(tensorized: dict[str, tuple[ir.Stmt, ir.Stmt]]) -> None:
    """The coefficient matrix is read D(yi, r): unit stride along the output
    row, i.e. column-major A. The schedule has no transpose, and neither
    has the result: the fragment is loaded column-major, straight from D."""
    original, rewritten = tensorized["wmma_dct16_colmajor"]
    source = print_ir(original)
    assert "D[ramp(x256(0), x256(1), 16) + x256(ramp(0, 16, 16))]" in source
    loads = [c for c in _calls(rewritten) if c.name.startswith("wmma.load.a.")]
    assert [c.name for c in loads] == ["wmma.load.a.sync.aligned.col.m16n16k16.f16"]
    pointer, offset, ldm = loads[0].args
    assert isinstance(pointer, ir.Variable) and pointer.name == "D"
    assert (offset, ldm) == (ir.IntImm(0), ir.IntImm(16))
    # no copy, shuffle or staging buffer stands in for a transpose
    assert not any(isinstance(n, ir.Shuffle) for n in ir.walk(rewritten))
    allocations = [n for n in ir.walk(rewritten) if isinstance(n, ir.Allocate)]
    assert [(a.name, a.memory_type) for a in allocations] == [("dct", "WMMAAccumulator")]
    assert ir.WMMA_STAGE not in print_ir(rewritten)


def test_every_wmma_operation_runs_in_a_warp_lane_loop(tensorized: dict[str, tuple[ir.Stmt, ir.Stmt]]) -> None:
    _, rewritten = tensorized["wmma_f16_matmul"]
    lanes = [n for n in ir.walk(rewritten) if isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_LANE]
    assert len(lanes) == 3
    assert all(loop.name == WMMA_LANE and loop.extent == ir.IntImm(WMMA_TENSOR_CORE.warp_size)
               and loop.device_api == "CUDA" for loop in lanes)
    inside = {id(c) for loop in lanes for c in _calls(loop.body)}
    assert inside == {id(c) for c in _calls(rewritten)}
    # the lanes sit inside the gpu_block loops the dump already had
    blocks = [n for n in ir.walk(rewritten) if isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_BLOCK]
    assert len(blocks) == 2 and all(any(n is loop for n in ir.walk(blocks[-1])) for loop in lanes)


def test_unprovable_alignment_is_staged_through_shared_memory(tensorized: dict[str, tuple[ir.Stmt, ir.Stmt]]) -> None:
    """With symbolic row strides, neither the address nor the leading
    dimension of A and B is provably aligned: both are copied to 32-byte
    aligned shared memory. The result verifies for strides that misalign
    every row, where a direct load_matrix_sync would fault."""
    original, rewritten = tensorized["wmma_f16_matmul_symbolic"]
    stages = [n for n in ir.walk(rewritten) if isinstance(n, ir.Allocate) and ir.WMMA_STAGE in n.name]
    assert sorted(s.name.split(".")[0] for s in stages) == ["A", "B"]
    assert all(s.memory_type == "GPUShared" for s in stages)
    for stride in (65, 72, 100):
        params = {"A.stride.1": stride, "B.stride.1": stride}
        check = verify(original, rewritten, seed=0, params=params)
        assert check.ok, check.summary()
    # the constant-stride matmul needs no staging: its offsets are multiples of 16
    _, aligned = tensorized["wmma_f16_matmul"]
    assert ir.WMMA_STAGE not in print_ir(aligned)


def test_a_misaligned_fragment_load_fails_verification() -> None:
    """The interpreter enforces load_matrix_sync's alignment, so skipping
    the staging would be caught: with a row stride of 65 the unstaged
    rewrite is a mismatch."""
    original = _load("wmma_f16_matmul_symbolic")
    text = print_ir(tensorize(original, SelectionOptions(store_in={"prod": "WMMAAccumulator"})).stmt)
    unstaged = re.sub(r"\(float16x256\)wmma\.load\.a\.sync\.aligned\.row\.m16n16k16\.f16\(A\.wmma_stage\.0, 0, 16\)",
                      "(float16x256)wmma.load.a.sync.aligned.row.m16n16k16.f16(A, "
                      "((A.stride.1*prod_global_wrapper$0.s0.y.yo.block_id_y)*16) + (prod.s1.k$x.ko*16), A.stride.1)",
                      text)
    assert unstaged != text
    check = verify(original, parse_input(unstaged, "unstaged").ir, seed=0, params={"A.stride.1": 65, "B.stride.1": 64})
    assert not check.ok and "alignment" in check.summary()


def test_conv_layer_bias_and_relu_stay_on_the_fragment(tensorized: dict[str, tuple[ir.Stmt, ir.Stmt]]) -> None:
    """The accumulator starts from the bias (one row repeated down the tile:
    staged, since load_matrix_sync takes no zero leading dimension), and the
    ReLU max(conv, 0) is applied to the fragment before store_matrix_sync."""
    _, rewritten = tensorized["wmma_conv_layer"]
    text = print_ir(rewritten)
    assert "wmma.load.c.sync.aligned.row.m16n16k16.f32(bias.wmma_stage.0, 0, 16)" in text
    assert "bias.wmma_stage.0[ramp(0, 1, 256)] = bias[ramp(ramp(output.s0.c.co.block_id_x*16, 1, 16), x16(0), 16)]" in text
    store = next(c for c in _calls(rewritten) if c.name.startswith("wmma.store.d."))
    relu = store.args[1]
    assert isinstance(relu, ir.Binary) and relu.op is ir.BinOp.MAX
    assert isinstance(relu.a, ir.Load) and relu.a.name == "conv"
    source = generate_cuda(rewritten)
    assert "t3.x[hb_e] = (t3.x[hb_e] > 0.0f ? t3.x[hb_e] : 0.0f)" in source


def test_known_multiple_proves_what_alignment_needs() -> None:
    v = ir.Variable("v")
    assert known_multiple(ir.Binary(ir.BinOp.MUL, ir.Binary(ir.BinOp.ADD, ir.Binary(ir.BinOp.MUL, v, ir.IntImm(64)), v),
                                    ir.IntImm(16))) == 16
    assert known_multiple(ir.Binary(ir.BinOp.ADD, v, ir.IntImm(8))) == 1
    assert known_multiple(ir.IntImm(0)) == 0


def test_fragments_move_into_the_gpu_thread_loop() -> None:
    """Outside the thread loops an allocation would be shared by the block:
    a fragment is per-thread, so it moves inside."""
    text = (
        "gpu_block<CUDA> (f.s0.b.block_id_x, 0, 4) {\n"
        " allocate acc[float32 * 256] in WMMAAccumulator\n"
        " gpu_thread<CUDA> (f.s0.t.thread_id_x, 0, 2) {\n"
        "  gpu_lane<CUDA> (wmma.lane, 0, 32) {\n"
        "   acc[ramp(0, 1, 256)] = (float32x256)wmma.fill.m16n16k16.f32(0.000000f)\n"
        "  }\n"
        " }\n"
        "}\n"
    )
    stmt = parse_input(text, "threads.stmt").ir
    pushed = push_fragment_allocations(stmt)
    thread = next(n for n in ir.walk(pushed) if isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_THREAD)
    assert isinstance(thread.body, ir.Allocate) and thread.body.name == "acc"
    assert sum(isinstance(n, ir.Allocate) for n in ir.walk(pushed)) == 1


@pytest.mark.parametrize(("case", "chunks"), [("wmma_conv1d", 1), ("wmma_downsample2", 2)])
def test_a_sliding_window_becomes_a_toeplitz_product(case: str, chunks: int,
                                                      tensorized: dict[str, tuple[ir.Stmt, ir.Stmt]]) -> None:
    """out[x] += sum_r in[base + S*x + r] * k[r] over 256 outputs laid out
    32 x 8 (the cost model's shape): the input is read as overlapping rows
    (ldm 8*S) and the kernel becomes Toeplitz blocks in temporaries, one mma
    per 16 values of t = S*j + r (1 chunk for 8 taps, whose rows span 15;
    2 with stride 2, whose rows span 2*7 + r)."""
    _, rewritten = tensorized[case]
    updates = [n for n in ir.walk(rewritten) if isinstance(n, ir.Store) and n.name == "conv"
               and isinstance(n.value, ir.Call) and n.value.name.startswith("wmma.mma.")]
    assert updates
    for update in updates:
        assert sum(c.name.startswith("wmma.mma.") for c in _calls(update)) == chunks
        b_loads = [c for c in _calls(update) if c.name.startswith("wmma.load.b.")]
        assert len(b_loads) == chunks
        assert all(isinstance(c.args[0], ir.Variable) and ".toeplitz." in c.args[0].name for c in b_loads)
    toeplitz = {n.name for n in ir.walk(rewritten) if isinstance(n, ir.Allocate) and ".toeplitz." in n.name}
    assert len(toeplitz) == chunks * len(updates)
    # each window is read in bounds: verification runs it (the interpreter
    # rejects any access outside a buffer) with two seeds


def test_a_polyphase_upsampling_lowers_on_the_widest_fragment() -> None:
    """Upsampling by 2 interleaves four kernel phases into the output (the
    paper's multiphase filter): 64 positions x 4 phases x 8 taps is one
    m8n32k16 product of the input rows (zero-padded from 15 to 16 values)
    with a block-Toeplitz matrix of the four phases; the output reads the
    accumulator through a spilled copy, since no fragment store writes the
    interleaved order."""
    stmt = _load("wmma_upsample2")
    rewritten = tensorize(stmt, SelectionOptions(store_in={"conv": "WMMAAccumulator"})).stmt
    calls = [n.name for n in ir.walk(rewritten) if isinstance(n, ir.Call) and n.name.startswith("wmma.")]
    assert calls.count("wmma.mma.sync.aligned.row.row.m8n32k16.f32.f32") == 1, calls
    names = {n.name for n in ir.walk(rewritten) if isinstance(n, ir.Allocate)}
    assert any(".toeplitz." in n for n in names) and any(".padded." in n for n in names)
    assert any(".spill." in n for n in names), names
    assert verify(stmt, rewritten, seed=3).ok


# --------------------------------------------------------------------------
# CUDA generation and nvcc
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cuda_sources(tensorized: dict[str, tuple[ir.Stmt, ir.Stmt]]) -> dict[str, str]:
    return {case: generate_cuda(rewritten) for case, (_, rewritten) in tensorized.items()}


def test_generated_cuda_is_deterministic(tensorized: dict[str, tuple[ir.Stmt, ir.Stmt]],
                                         cuda_sources: dict[str, str]) -> None:
    _, rewritten = tensorized["wmma_dct16_colmajor"]
    assert generate_cuda(rewritten) == cuda_sources["wmma_dct16_colmajor"]
    source = cuda_sources["wmma_dct16_colmajor"]
    assert source.count("__global__ void") == 1 and 'extern "C" int hb_kernel(' in source
    assert "hb_kernel_k0<<<hb_grid, hb_block, 0, hb_stream>>>" in source
    assert "wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::col_major>" in source


def test_fills_run_again_count_their_trips_and_one_time_copies_do_not(cuda_sources: dict[str, str]) -> None:
    """A fill inside the kernel's loops (conv1d's Toeplitz and padded
    operands, every reduction step) counts its trips, so that nvcc unrolls
    it and each thread's loads are in flight together (downsample 61 -> 42
    us on an H200). conv_layer's bias tiles are staged once, before its
    loops, and stay plain loops: unrolled, equal addresses let nvcc keep the
    bias live through the hot loop (conv_layer_c32 50 -> 81 us)."""
    fills = cuda_sources["wmma_conv1d"]
    headers = re.findall(r"#pragma unroll\n\s*for \(int hb_k = 0; hb_k < (\d+); hb_k\+\+\)", fills)
    assert headers == ["4", "16"] and "for (int hb_i" not in fills  # 128 and 512 lanes over 32 threads
    once = cuda_sources["wmma_conv_layer"]
    assert "#pragma unroll" not in once and "for (int hb_i = (int)threadIdx.x; hb_i < 256; hb_i += 32)" in once


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("case", TENSORIZED)
def test_nvcc_compiles_generated_cuda_to_tensor_core_ptx(case: str, cuda_sources: dict[str, str],
                                                         tmp_path: Path) -> None:
    ptx = compile_cuda(cuda_sources[case], tmp_path / "kernel.ptx", kind="ptx", extra=GENERATED_CUDA_FLAGS).read_text()
    # PTX spells it wmma.mma.sync.aligned.<a>.<b>.<shape>.<d>[.<a type>.<b type>].<c>: bf16
    # operands are named, f16 ones are implied
    mma = ".".join(TENSORIZED[case][1].split(".")[:8]) + "."
    assert mma in ptx, f"no {mma} in the PTX"
    assert "wmma.load.a.sync.aligned" in ptx and "wmma.store.d.sync.aligned" in ptx
    if case == "wmma_f16_matmul_symbolic":
        assert re.search(r"wmma\.load\.a\.sync\.aligned\.row\.m16n16k16\.shared\.f16", ptx)


@pytest.mark.slow
@needs_nvcc
def test_compile_emits_cuda_and_builds_a_cubin(tmp_path: Path) -> None:
    path = FIXTURES / "wmma_f16_matmul" / "vectorizing.stmt"
    cubin = tmp_path / "k.cubin"
    result = run_cli("compile", str(path), "--store-in", "prod=WMMAAccumulator", "--emit", "cuda",
                     "--build", str(cubin), "--cuda-arch", "sm_75", "-o", str(tmp_path / "k.cu"))
    assert result.returncode == 0, result.stderr.decode()
    assert cubin.read_bytes()[:4] == b"\x7fELF"
    assert "built" in result.stderr.decode() and "sm_75" in result.stderr.decode()
    assert (tmp_path / "k.cu").read_text().startswith("/* Generated by hardboiled")


def test_cuda_arch_older_than_turing_is_refused(tmp_path: Path) -> None:
    path = FIXTURES / "wmma_f16_matmul" / "vectorizing.stmt"
    result = run_cli("compile", str(path), "--store-in", "prod=WMMAAccumulator", "--emit", "cuda",
                     "--cuda-arch", "sm_70", "-o", str(tmp_path / "k.cu"))
    assert result.returncode == 2
    assert "sm_70 is not supported" in result.stderr.decode()
    assert not (tmp_path / "k.cu").exists()


# --------------------------------------------------------------------------
# Execution on a GPU
# --------------------------------------------------------------------------


def _cuda_runtime() -> ctypes.CDLL | None:
    """libcudart: from the loader's path, or next to nvcc."""
    candidates = [ctypes.util.find_library("cudart"), "libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parent.parent / "lib64" / "libcudart.so"))
    for candidate in filter(None, candidates):
        try:
            return ctypes.CDLL(candidate)
        except OSError:
            continue
    return None


def _no_gpu_reason() -> str | None:
    runtime = _cuda_runtime()
    if runtime is None:
        return "the CUDA runtime library (libcudart) is not installed: the kernel was built but cannot run"
    count = ctypes.c_int(0)
    if runtime.cudaGetDeviceCount(ctypes.byref(count)) != 0 or count.value == 0:
        return "no CUDA device on this machine: the kernel was built but cannot run"
    return None


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("case", ["wmma_f16_matmul", "wmma_dct16_colmajor", "wmma_f16_matmul_symbolic",
                                  "wmma_conv_layer", "wmma_conv1d", "wmma_downsample2"])
def test_generated_cuda_runs_on_the_gpu(case: str, tensorized: dict[str, tuple[ir.Stmt, ir.Stmt]],
                                        cuda_sources: dict[str, str], tmp_path: Path) -> None:
    """Build the kernel as a shared library (this part runs everywhere),
    then, where a GPU exists, run it on the interpreter's inputs."""
    library = tmp_path / "kernel.so"
    source = tmp_path / "kernel.cu"
    source.write_text(cuda_sources[case])
    proc = subprocess.run(["nvcc", f"-arch=sm_{WMMA_TENSOR_CORE.default_sm}", "-shared", "-Xcompiler", "-fPIC",
                           *GENERATED_CUDA_FLAGS, str(source), "-o", str(library)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    reason = _no_gpu_reason()
    if reason is not None:
        pytest.skip(reason)
    runtime = _cuda_runtime()
    assert runtime is not None
    original, rewritten = tensorized[case]
    from hardboiled.codegen.abi import kernel_signature
    from hardboiled.verify.compare import compare, run_program

    buffers, outputs = make_buffers(original, {}, 0)
    expected = run_program(original, buffers)
    library_handle = ctypes.CDLL(str(library))
    arguments = kernel_signature(rewritten)
    device: dict[str, ctypes.c_void_p] = {}
    for arg in arguments:
        host = np.ascontiguousarray(buffers[arg.buffer].data)
        pointer = ctypes.c_void_p()
        assert runtime.cudaMalloc(ctypes.byref(pointer), ctypes.c_size_t(host.nbytes)) == 0
        device[arg.buffer] = pointer

    def upload() -> None:
        for arg in arguments:
            host = np.ascontiguousarray(buffers[arg.buffer].data)
            assert runtime.cudaMemcpy(device[arg.buffer], host.ctypes.data_as(ctypes.c_void_p),
                                      ctypes.c_size_t(host.nbytes), 1) == 0

    def check_outputs(entry: str) -> None:
        assert runtime.cudaDeviceSynchronize() == 0  # the wrapper queues the kernels and returns
        for name in sorted(outputs):
            host = np.empty_like(buffers[name].data)
            assert runtime.cudaMemcpy(host.ctypes.data_as(ctypes.c_void_p), device[name],
                                      ctypes.c_size_t(host.nbytes), 2) == 0
            comparison = compare(name, buffers[name].type, expected[name].data, host)
            assert comparison.first_mismatch is None, (entry, comparison)

    # The raw entry point: device pointers, each dimension's fields, the stream.
    raw = library_handle.hb_kernel_raw
    raw.restype = ctypes.c_int
    args: list[object] = []
    for arg in arguments:
        buf = buffers[arg.buffer]
        args.append(device[arg.buffer])
        for d in range(arg.dimensions):
            args.extend(ctypes.c_int32(v) for v in (buf.mins[d], buf.extents[d], buf.strides[d]))
    args.append(ctypes.c_void_p(None))  # the stream: the default one
    upload()
    assert raw(*args) == 0
    check_outputs("hb_kernel_raw")
    # Halide's calling convention: halide_buffer_t with the device pointer in buffer->device.
    from hardboiled.verify.run import halide_buffer

    structs = []
    for arg in arguments:
        struct = halide_buffer(buffers[arg.buffer], arg)
        struct.host, struct.device = None, device[arg.buffer].value
        structs.append(struct)
    entry = library_handle.hb_kernel
    entry.restype = ctypes.c_int
    upload()
    assert entry(*(ctypes.byref(s) for s in structs)) == 0
    check_outputs("hb_kernel")
    assert all(s.flags == 2 for s, a in zip(structs, arguments) if a.output)  # device_dirty
    for pointer in device.values():
        runtime.cudaFree(pointer)


# --------------------------------------------------------------------------
# Review findings: corner cases of legalization and CUDA generation
# --------------------------------------------------------------------------


def test_rows_read_backwards_are_staged_not_loaded_with_a_negative_leading_dimension() -> None:
    """load_matrix_sync's leading dimension is unsigned: A read with its rows
    in reverse order (ldm -64) must go through shared memory."""
    path = FIXTURES / "wmma_f16_matmul" / "vectorizing.stmt"
    text = path.read_text()
    forward = "A[ramp(x256(prod_global_wrapper$0.s0.y.yo.block_id_y*1024), x256(64), 16)"
    assert forward in text
    flipped = text.replace(forward, "A[ramp(x256((prod_global_wrapper$0.s0.y.yo.block_id_y*1024) + 960), x256(-64), 16)")
    original = parse_input(flipped, "flipped.stmt").ir
    rewritten = tensorize(original, SelectionOptions(store_in={"prod": "WMMAAccumulator"})).stmt
    loads = [c for c in _calls(rewritten) if c.name.startswith("wmma.load.a.")]
    assert loads and all(isinstance(c.args[0], ir.Variable) and ir.WMMA_STAGE in c.args[0].name for c in loads)
    assert all(c.args[2] == ir.IntImm(16) for c in loads)
    assert verify(original, rewritten, seed=0).ok
    assert "-64)" not in generate_cuda(rewritten).split("load_matrix_sync", 1)[1].split(";", 1)[0]


def test_the_interpreter_runs_other_lane_loops_lane_by_lane() -> None:
    """Only a loop of WMMA operations and staging copies is one warp-wide
    step; a lane loop that accumulates (atomically: its lanes read what
    the others wrote) runs 32 times."""
    from hardboiled.verify.interp import BufferT, Interpreter

    text = (
        "gpu_lane<CUDA> (wmma.lane, 0, 32) {\n"
        " atomic (f) {\n"
        "   f[0] = f[0] + 1\n"
        " }\n"
        " acc[ramp(0, 1, 256)] = (float32x256)wmma.fill.m16n16k16.f32(0.000000f)\n"
        "}\n"
    )
    stmt = parse_input(text, "lanes.stmt", buffer_types={"f": ir.Int(32), "acc": ir.Float(32)}).ir
    f = BufferT("f", ir.Int(32), np.zeros(1, dtype=np.int32), (0,), (1,), (1,))
    acc = BufferT("acc", ir.Float(32), np.ones(256, dtype=np.float32), (0,), (256,), (1,))
    interpreter = Interpreter(buffers={"f": f, "acc": acc})
    interpreter.run(ir.LetStmt("f", ir.Call("_halide_buffer_get_host", (ir.Variable("f.buffer", ir.handle_type()),),
                                            ir.handle_type()),
                               ir.LetStmt("acc", ir.Call("_halide_buffer_get_host",
                                                         (ir.Variable("acc.buffer", ir.handle_type()),),
                                                         ir.handle_type()), stmt)))
    assert f.data[0] == 32


_THREADS_KERNEL = """\
gpu_block<CUDA> (out.s0.b.block_id_x, 0, 4) {
 allocate tmp[float32 * 64] in Auto
 tmp[ramp(0, 1, 64)] = x64(1.000000f)
 gpu_thread<CUDA> (out.s0.t.thread_id_x, 0, 2) {
  allocate acc[float32 * 256] in WMMAAccumulator
  gpu_lane<CUDA> (wmma.lane, 0, 32) {
   acc[ramp(0, 1, 256)] = (float32x256)wmma.fill.m16n16k16.f32(0.000000f)
  }
  out[out.s0.b.block_id_x*2 + out.s0.t.thread_id_x] = tmp[out.s0.t.thread_id_x]
  gpu_lane<CUDA> (wmma.lane, 0, 32) {
   wmma.store.d.sync.aligned.row.m16n16k16.f32(res, acc[ramp(0, 1, 256)], (out.s0.b.block_id_x*2 + out.s0.t.thread_id_x)*256, 16)
  }
 }
}
"""


def _kernel(text: str, types: dict[str, ir.Type]) -> tuple[list[int], str, list[str]]:
    """Block dims, body and definition of the kernel for one gpu_block loop
    of hand-written IR (no pipeline around it)."""
    from hardboiled.codegen.cuda import CudaGenerator
    from hardboiled.codegen.cuda_kernel import KernelGenerator

    stmt = map_to_gpu(parse_input(text, "kernel.stmt", buffer_types=types).ir)
    assert isinstance(stmt, ir.For)
    # A bare host context: the kernel only takes the host's names and types.
    host = CudaGenerator.__new__(CudaGenerator)
    host.names, host.used, host.buffer_args, host.tiles = {}, set(), {}, None
    host.element_types = dict(types)
    kernel = KernelGenerator(host, stmt.body, "k")
    kernel.bind_block(stmt.name, "lo", 0)
    kernel.generate_body()
    return kernel.block_dims, "\n".join(kernel.lines), kernel.definition()


def _compiles(definition: list[str]) -> None:
    from hardboiled.codegen.cuda import _CUDA_PRELUDE

    if shutil.which("nvcc"):
        with tempfile.TemporaryDirectory() as tmp:
            compile_cuda("\n".join([_CUDA_PRELUDE, *definition]), Path(tmp) / "k.ptx", extra=GENERATED_CUDA_FLAGS)


@pytest.mark.slow
def test_kernels_keep_halides_gpu_thread_and_memory_rules() -> None:
    """The dump's thread loop moves to threadIdx.y (the lanes take x); a
    block-level buffer is __shared__ and its vector store is spread over all
    64 threads of the block, followed by a block barrier; a scalar store inside
    the thread loop is done once per warp; the thread loop ends with a block
    barrier."""
    types = {"out": ir.Float(32), "tmp": ir.Float(32), "res": ir.Float(32)}
    dims, body, definition = _kernel(_THREADS_KERNEL, types)
    assert dims == [32, 2, 1]
    assert "if ((int32_t)threadIdx.y < ((int32_t)2)) {" in body
    assert "__shared__ __align__(32) float tmp[64];" in body
    # no barrier before the fill (nothing ran before it), one after it, one after the thread loop
    assert body.count("__syncthreads();") == 2 and "for (int hb_i = hb_thread; hb_i < 64; hb_i += 64) {" in body
    assert body.rindex("__syncthreads();") > body.rindex("wmma::store_matrix_sync")  # after the thread loop
    assert body.count("__syncwarp();") == 2 and "if (threadIdx.x == 0) {" in body
    _compiles(definition)


@pytest.mark.slow
def test_a_loop_runs_only_on_index_zero_of_the_axes_it_does_not_bind() -> None:
    """Two thread loops on different axes: each runs on index 0 of the
    other's axis, as in Halide, instead of once per thread of that axis."""
    text = (
        "gpu_block<CUDA> (f.s0.b.block_id_x, 0, 4) {\n"
        " gpu_thread<CUDA> (f.s0.x.thread_id_x, 0, 8) {\n"
        "  f[f.s0.x.thread_id_x] = f[f.s0.x.thread_id_x] + 1.000000f\n"
        " }\n"
        " gpu_thread<CUDA> (g.s0.y.thread_id_y, 0, 4) {\n"
        "  g[g.s0.y.thread_id_y] = 2.000000f\n"
        " }\n"
        "}\n"
    )
    dims, body, definition = _kernel(text, {"f": ir.Float(32), "g": ir.Float(32)})
    assert dims == [8, 4, 1]
    assert "if ((int32_t)threadIdx.x < ((int32_t)8) && threadIdx.y == 0) {" in body
    assert "if ((int32_t)threadIdx.y < ((int32_t)4) && threadIdx.x == 0) {" in body
    assert body.count("__syncthreads();") == 2
    _compiles(definition)


def test_host_stages_run_as_one_thread_kernels_and_host_reads_are_refused() -> None:
    """A host stage beside the GPU stages (a store outside every gpu_block
    loop, here into a buffer the pipeline allocates) runs as a kernel of one
    thread, on the device memory the wrapper allocated; host code that reads
    a buffer to decide what to run cannot (the wrapper has device pointers)."""
    from hardboiled.codegen.c_text import CodegenError

    types = {"out": ir.Float(32), "tmp": ir.Float(32), "res": ir.Float(32), "host": ir.Float(32)}
    buffers = "allocate out[float32 * 8] in Heap\nallocate res[float32 * 2048] in Heap\nallocate host[float32 * 4] in Heap\n"
    stage = buffers + "host[0] = 1.000000f\n" + _THREADS_KERNEL
    source = generate_cuda(map_to_gpu(parse_input(stage, "host.stmt", buffer_types=types).ir))
    assert "cudaMallocAsync((void **)&host, " in source and "cudaFreeAsync(host, hb_stream);" in source
    # freed on every error, ordered on the caller's stream
    assert ("cudaFreeAsync(host, hb_stream); cudaFreeAsync(res, hb_stream); cudaFreeAsync(out, hb_stream); "
            "return -300000;") in source
    assert source.count("dim3 hb_grid(1, 1, 1), hb_block(1, 1, 1);") == 1
    assert source.count("__global__ void") == 2

    reads = buffers + "if (0.000000f < host[0]) {\n" + _THREADS_KERNEL + "}\n"
    with pytest.raises(CodegenError) as info:
        generate_cuda(map_to_gpu(parse_input(reads, "host.stmt", buffer_types=types).ir))
    assert "host code reads buffer 'host' to decide what to run" in info.value.diagnostic.message


def test_bf16_fragments_need_sm_80(tmp_path: Path) -> None:
    path = FIXTURES / "wmma_bf16_matmul" / "vectorizing.stmt"
    result = run_cli("compile", str(path), "--store-in", "prod=WMMAAccumulator", "--emit", "cuda",
                     "--build", str(tmp_path / "k.ptx"), "--cuda-arch", "sm_75", "-o", str(tmp_path / "k.cu"))
    assert result.returncode == 2
    assert "need sm_80 or newer" in result.stderr.decode()
    assert "bfloat16 fragments need sm_80" in result.stderr.decode()
    assert not (tmp_path / "k.ptx").exists() and not (tmp_path / "k.cu").exists()


def test_a_temporary_used_by_a_kernel_stays_inside_its_gpu_block_loop() -> None:
    """A Toeplitz block whose taps do not depend on any loop could be
    hoisted out of every loop; for the GPU it stays in the kernel (host
    code has no business with buffer contents), where it is __shared__."""
    path = FIXTURES / "wmma_conv1d" / "vectorizing.stmt"
    text = path.read_text().replace("K[ramp((conv.s1.rx$x.rxo*8) - K.min.0, 1, 8)]", "K[ramp(0 - K.min.0, 1, 8)]")
    assert text != path.read_text()
    original = parse_input(text, "fixed_taps.stmt").ir
    rewritten = tensorize(original, SelectionOptions(store_in={"conv": "WMMAAccumulator"})).stmt
    block = next(n for n in ir.walk(rewritten) if isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_BLOCK)
    loop = next(n for n in ir.walk(block) if isinstance(n, ir.For) and n.kind is ir.ForKind.SERIAL)
    temporaries = [n for n in ir.walk(rewritten) if isinstance(n, ir.Allocate) and ".toeplitz." in n.name]
    assert temporaries and all(any(t is n for n in ir.walk(block)) for t in temporaries)
    assert not any(t is n for t in temporaries for n in ir.walk(loop))  # hoisted out of the serial loop
    assert verify(original, rewritten, seed=0).ok
    assert "__shared__ __align__(32) uint16_t K_toeplitz_" in generate_cuda(rewritten)


def test_the_json_report_names_fragment_patterns(tmp_path: Path) -> None:
    path = FIXTURES / "wmma_conv_layer" / "vectorizing.stmt"
    result = run_cli("compile", str(path), "--store-in", "conv=WMMAAccumulator", "--emit", "report", "--no-cache")
    assert result.returncode == 0, result.stderr.decode()
    import json

    statements = json.loads(result.stdout)["statements"]
    assert [s["pattern"] for s in statements] == ["accumulator fragment loaded from memory",
                                                  "fragment product C + A*B",
                                                  "accumulator fragment stored to memory"]
    assert {s["target"] for s in statements} == {"wmma"}


@pytest.mark.parametrize(("case", "args", "message"), [
    ("wmma_dct16/vectorizing.stmt", ("--store-in", "dct=WMMAAccumulator", "--run"), "this program has GPU loops"),
    ("wmma_dct16/vectorizing.stmt", ("--store-in", "dct=WMMAAccumulator", "--emit", "c"), "runs on the CPU"),
    ("amx_bf16_matmul_std_single/vectorizing.stmt", ("--emit", "cuda"), "no gpu_block loop"),
])
def test_each_program_goes_to_its_own_language(case: str, args: tuple[str, ...], message: str,
                                               tmp_path: Path) -> None:
    result = run_cli("compile", str(FIXTURES / case), *args, "--no-cache", "-o", str(tmp_path / "out"))
    assert result.returncode == 2
    assert message in result.stderr.decode()
    assert not (tmp_path / "out").exists()


def test_a_temporary_two_kernels_share_is_copied_into_each() -> None:
    """The same Toeplitz block used by two gpu_block nests (two passes with
    the same taps) gets a copy in each kernel, never one in host code."""
    from hardboiled.legalize.temporaries import place_temporaries
    from hardboiled.select.reinsert import Temporary

    handle = ir.handle_type()
    use = ir.Evaluate(ir.Call("wmma.load.b.sync.aligned.row.m16n16k16.f16",
                              (ir.Variable("T", handle), ir.IntImm(0), ir.IntImm(16)), ir.Float(16, 256)))
    kernels = [ir.For(f"{name}.block_id_x", ir.IntImm(0), ir.IntImm(4), ir.ForKind.GPU_BLOCK, "CUDA", use)
               for name in ("a", "b")]
    taps = ir.Load("K", ir.Ramp(ir.IntImm(0), ir.IntImm(1), 8), ir.Float(16, 8))
    placed = place_temporaries(ir.make_block(kernels), [Temporary("T", taps)])
    assert isinstance(placed, ir.Block) and all(isinstance(s, ir.For) for s in placed.stmts)
    for kernel in placed.stmts:
        assert isinstance(kernel.body, ir.Allocate) and kernel.body.name.startswith("T.")


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("case,operands", [("wmma_int8_matmul", "s8.s8"), ("wmma_uint8_matmul_m32n8k16", "u8.u8")])
def test_int8_operands_run_on_integer_tensor_cores(case: str, operands: str, cuda_sources: dict[str, str],
                                                   tensorized: dict[str, tuple[ir.Stmt, ir.Stmt]],
                                                   tmp_path: Path) -> None:
    """The worked example of docs/architecture.md ("Adding an intrinsic"):
    int8 rows in the Tensor Core table, integer zero fills in the rules, an
    exact integer mma in the interpreter. The rewrite verifies exactly on
    the full int8 range, and nvcc emits the integer MMA."""
    original, rewritten = tensorized[case]
    for seed in (0, 1):
        result = verify(original, rewritten, seed=seed)
        assert result.ok and all(c.max_abs_error == 0 for c in result.outputs), result.summary()
    source = cuda_sources[case]
    assert "wmma::fragment<wmma::accumulator" in source and "int32_t> prod[1]" in source
    ptx = compile_cuda(source, tmp_path / "kernel.ptx", kind="ptx", sm=75, extra=GENERATED_CUDA_FLAGS).read_text()
    assert f".s32.{operands}.s32" in ptx


@pytest.mark.slow
def test_nested_thread_loops_let_in_the_inner_threads_but_write_once_per_halide_thread() -> None:
    """A y thread loop around an x thread loop (Halide's gpu_tile): every x
    thread must enter the y loop to reach its own iteration, and a store of
    the y loop outside the x loop is one Halide thread's, written by the
    first x thread only."""
    text = (
        "gpu_block<CUDA> (f.s0.b.block_id_x, 0, 2) {\n"
        " gpu_thread<CUDA> (f.s0.y.thread_id_y, 0, 4) {\n"
        "  g[f.s0.y.thread_id_y] = 1.000000f\n"
        "  gpu_thread<CUDA> (f.s0.x.thread_id_x, 0, 8) {\n"
        "   f[(f.s0.y.thread_id_y*8) + f.s0.x.thread_id_x] = 2.000000f\n"
        "  }\n"
        " }\n"
        "}\n"
    )
    dims, body, definition = _kernel(text, {"f": ir.Float(32), "g": ir.Float(32)})
    assert dims == [8, 4, 1]
    assert "if ((int32_t)threadIdx.y < ((int32_t)4)) {" in body
    assert "if (threadIdx.x == 0) {" in body  # the y loop's own store
    assert "if ((int32_t)threadIdx.x < ((int32_t)8)) {" in body
    _compiles(definition)


def test_a_device_buffer_is_held_to_int32_elements_not_to_host_bytes() -> None:
    """Halide's 2^31 - 1 bytes are its host heap's limit. A buffer between
    GPU stages lives in device memory (the attention at the paper's size
    keeps 2^30 float32 scores there, 4 GiB): the CUDA wrapper allocates it,
    and refuses only what int32 element indexing cannot address. The C
    backend, whose allocations are host memory, keeps Halide's limit."""
    from hardboiled.codegen.c import generate_c
    from hardboiled.codegen.c_text import CodegenError

    def program(elements: str) -> ir.Stmt:
        stmt = parse_input(
            f"allocate big[float32 * {elements}] in Heap\n"
            "gpu_block<CUDA> (f.s0.b.block_id_x, 0, 4) {\n"
            " gpu_thread<CUDA> (f.s0.t.thread_id_x, 0, 32) {\n"
            "  big[f.s0.b.block_id_x*32 + f.s0.t.thread_id_x] = 1.000000f\n"
            " }\n"
            "}\n", "big.stmt").ir
        assert isinstance(stmt, ir.Stmt)
        return stmt

    assert "cudaMallocAsync((void **)&big, (size_t)(1073741824) * sizeof(float)" in generate_cuda(program("1073741824"))
    with pytest.raises(CodegenError, match="passes 2\\^31 - 1 elements"):
        generate_cuda(program("65536 * 32768"))
    with pytest.raises(CodegenError, match="passes 2\\^31 - 1 bytes, Halide's limit"):
        generate_c(program("1073741824"))


_FILLS_KERNEL = """\
gpu_block<CUDA> (out.s0.b.block_id_x, 0, 4) {
 allocate padded[float16 * 64] in Auto
 padded[ramp(0, 1, 64)] = shuffle(concat_vectors(image[ramp(out.s0.b.block_id_x*60, 1, 60)], 0.000000h), %s)
 allocate band[bfloat16 * 8] in Auto
 band[ramp(0, 1, 8)] = concat_vectors(x4(1.000000h), x4(0.000000h))
 allocate splat[float16 * 8] in Auto
 splat[ramp(0, 1, 8)] = x8(image[out.s0.b.block_id_x])
 allocate scaled[float16 * 64] in Auto
 scaled[ramp(0, 1, 64)] = padded[ramp(0, 1, 64)]*x64(2.000000h)
 gpu_thread<CUDA> (out.s0.t.thread_id_x, 0, 2) {
  out[out.s0.b.block_id_x*2 + out.s0.t.thread_id_x] = scaled[out.s0.t.thread_id_x] + float16(band[out.s0.t.thread_id_x])
  out[out.s0.b.block_id_x*2 + out.s0.t.thread_id_x + 8] = select(out.s0.t.thread_id_x == 0, padded[out.s0.t.thread_id_x], 0.500000h)
  out[out.s0.b.block_id_x*2 + out.s0.t.thread_id_x + 16] = splat[out.s0.t.thread_id_x]
 }
}
"""


def test_fills_move_bits_compute_their_lanes_and_convert_only_what_computes() -> None:
    """A padded row (15 lanes of the image, then the zero, in rows of 16):
    its lanes' sources are arithmetic on the lane index, not a table in
    memory, and the float16 elements and the zero move as bits, as does a
    broadcast element. A float16 literal stored into a bfloat16 buffer is
    converted to bfloat16 (its bits as float16 would read as another
    number), and a product converts. A scalar copy that selects an element
    or a constant (a zero-stuffed kernel) moves bits too."""
    indices = ", ".join(str(15 * (i // 16) + i % 16 if i % 16 < 15 else 60) for i in range(64))
    types = {"out": ir.Float(16), "image": ir.Float(16)}
    _, body, definition = _kernel(_FILLS_KERNEL % indices, types)
    fills = {name: next(line for line in body.splitlines() if line.strip().startswith(f"{name}[")) for name in
             ("padded", "band", "splat", "scaled")}
    assert "static const int32_t" not in body
    assert "% 16)) <= 14) ? (15 * " in fills["padded"]
    assert "hb_f16_to_f32" not in fills["padded"] and "hb_f32_to_f16" not in fills["padded"]
    assert "((uint16_t)0x0000u)" in fills["padded"]
    assert "image[" in fills["splat"] and "hb_f" not in fills["splat"]  # a broadcast scalar moves bits too
    assert fills["band"].count("hb_f32_to_bf16(") == 1 and "0x3c00" not in fills["band"]
    assert "hb_f32_to_f16(" in fills["scaled"] and "hb_f16_to_f32(" in fills["scaled"]
    stuffed = [line for line in body.splitlines() if line.strip().startswith("out[") and "0x3800u" in line]
    assert len(stuffed) == 1 and "padded[out_s0_t_thread_id_x]" in stuffed[0] and "hb_f" not in stuffed[0]
    _compiles(definition)
