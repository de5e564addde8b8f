"""The Tensor Core code wastes nothing it can avoid (issue 16).

* the window shape comes from a cost model over the program's windows;
* Toeplitz matrices and padded operands are filled by every thread of the
  block, each computing its own elements: the per-lane C the generator
  writes is compiled with the host C compiler and run here, lane by lane,
  against the interpreter's vector;
* neighbouring WMMA statements share their operand fragments;
* launches go on the caller's stream and nothing synchronizes the device.

The figures these give on every application are in tests/measure/test_wmma_figures.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hardboiled import ir
from hardboiled.codegen.c_text import C_HEADERS, helper_functions, include_lines, storage_type, to_storage
from hardboiled.codegen.cuda import CudaGenerator
from hardboiled.codegen.cuda_kernel import KernelGenerator
from hardboiled.codegen.toolchain import find_compiler
from hardboiled.frontend.parse import parse_input
from hardboiled.legalize.gpu_mapping import spread_value
from hardboiled.legalize.lane_spreading import spreads
from hardboiled.select.facts import sliding_windows
from hardboiled.targets.wmma import WMMA_TENSOR_CORE, WMMAShape
from hardboiled.verify.interp import Interpreter, Pointer, dtype_of

from ..conftest import ROOT, app_cuda, tensorized_app

sys.path.insert(0, str(ROOT))
from apps.run import applications  # noqa: E402

APPS = applications()


# ------------------------------------------------------------ the cost model
def test_the_window_shape_is_the_one_with_the_least_tensor_core_work() -> None:
    core = WMMA_TENSOR_CORE
    m16n16, m32n8, m8n32 = WMMAShape(16, 16, 16), WMMAShape(32, 8, 16), WMMAShape(8, 32, 16)
    # 8 taps per chunk, stride 1: a fragment row spans S (N - 1) + R inputs
    assert [core.window_mmas(s, 1, 8) for s in (m16n16, m32n8, m8n32)] == [2, 1, 3]
    assert [core.window_macs_per_output(s, 1, 8) for s in (m16n16, m32n8, m8n32)] == [32, 16, 48]
    assert core.best_window_shape([(1, 8, 256)]) == m32n8
    # a stride-2 downsample with 16 taps: 2 * 7 + 16 = 30 fits one chunk of m32n8k16
    assert core.best_window_shape([(2, 16, 256)]) == m32n8
    # no window: the table's first shape, as before
    assert core.best_window_shape([]) == m16n16


@pytest.mark.parametrize("name, windows, shape", [
    ("conv1d", {(1, 8)}, "m32n8k16"), ("downsample", {(2, 16)}, "m32n8k16"), ("gemm", set(), "m16n16k16"),
])
def test_windows_are_found_in_real_dumps_and_get_the_cheapest_shape(name: str, windows: set, shape: str) -> None:
    stmt = parse_input((ROOT / "tests" / "fixtures" / "apps" / f"{name}.stmt").read_text()).ir
    assert isinstance(stmt, ir.Stmt)
    found = sliding_windows([stmt])
    assert {(s, r) for s, r, _ in found} == windows
    source = app_cuda(name)
    assert {f"m{m}n{n}k{k}" for m, n, k in re.findall(r"wmma::accumulator, (\d+), (\d+), (\d+)", source)} == {shape}


# ------------------------------------------------------------ cooperative fills
def _fills(stmt: ir.Stmt) -> list[ir.Store]:
    return [n for n in ir.walk(stmt) if isinstance(n, ir.Store)
            and any(part in n.name for part in (".toeplitz.", ".padded."))]


def _lane_program(kernel: KernelGenerator, store: ir.Store, scalars: dict[str, int],
                  buffers: dict[str, np.ndarray]) -> str:
    """A C program that prints, for every lane, the index and the stored
    bits the kernel's per-lane formula gives."""
    index = kernel._lane_value(store.index, "hb_i")
    spread = spread_value(store)
    assert spread is not None, f"{store.name} is not spread over the threads"
    value = kernel._lane_value(spread, "hb_i")
    elem = store.value.type.element()
    lines = [include_lines(C_HEADERS), "#include <stdio.h>", helper_functions("static inline"), "int main(void) {"]
    for name, data in buffers.items():
        words = ", ".join(str(int(v)) for v in data.view(np.uint16 if data.itemsize == 2 else np.uint32))
        lines.append(f"static const {storage_type(kernel.element_types[name])} {kernel.cname(name)}[] = {{{words}}};")
    for name, v in scalars.items():
        lines.append(f"const int32_t {kernel.cname(name)} = {v};")
    lines += kernel.lines  # the shuffle tables
    lines.append(f"for (int hb_i = 0; hb_i < {store.value.type.lanes}; hb_i++) "
                 f"printf(\"%d %u\\n\", (int)({index}), (unsigned)({to_storage(elem)(value)}));")
    lines += ["return 0;", "}"]
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["conv1d", "conv2d", "downsample", "conv1d_8x32"])
def test_per_lane_fills_compute_what_the_interpreter_does(name: str, tmp_path: Path) -> None:
    rewritten = tensorized_app(name)
    fills = _fills(rewritten)
    assert fills, "the application builds a Toeplitz matrix"
    compiler = find_compiler()
    rng = np.random.default_rng(0)
    host = CudaGenerator(rewritten)
    for number, store in enumerate(fills):
        kernel = KernelGenerator(host, store, "lane_check")
        kernel.lines.clear()
        read = sorted({n.name for n in ir.walk(store.value) if isinstance(n, ir.Load)})
        buffers = {}
        interp = Interpreter()
        for buffer in read:
            t = next(n.type.element() for n in ir.walk(store.value) if isinstance(n, ir.Load) and n.name == buffer)
            data = rng.uniform(-2, 2, 16384).astype(dtype_of(t))
            buffers[buffer] = data
            kernel.element_types[buffer] = t
            interp.env.values[buffer] = Pointer(data, 0, buffer)
        scalars = {n.name: 1 for n in ir.walk(store) if isinstance(n, ir.Variable) and not n.type.is_handle}
        for variable, v in scalars.items():
            interp.env.values[variable] = np.array([v], dtype=np.int32)
        expected_index = interp.eval(store.index)
        expected_value = interp.eval(store.value).astype(dtype_of(store.value.type.element()))
        source = tmp_path / f"fill{number}.c"
        source.write_text(_lane_program(kernel, store, scalars, buffers))
        binary = tmp_path / f"fill{number}"
        built = subprocess.run([compiler.path, "-O1", str(source), "-lm", "-o", str(binary)],
                               capture_output=True, text=True)
        assert built.returncode == 0, built.stderr
        lanes = np.array([line.split() for line in subprocess.run(
            [str(binary)], capture_output=True, text=True, check=True).stdout.splitlines()], dtype=np.int64)
        bits = expected_value.view(np.uint16 if expected_value.itemsize == 2 else np.uint32)
        assert np.array_equal(lanes[:, 0], expected_index), f"{store.name}: lane indices ({compiler.name})"
        assert np.array_equal(lanes[:, 1], bits), f"{store.name}: lane values ({compiler.name})"


def test_fills_are_spread_over_the_block_and_barriers_are_not_doubled() -> None:
    source = app_cuda("conv1d")
    assert "if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)" not in source
    # each of the block's 32 threads takes every 32nd lane: a plain loop from
    # its index, or (inside the kernel's loops) trips counted from zero
    loops = re.findall(r"for \(int (?:hb_i = hb_thread; hb_i < \d+; hb_i \+= 32|hb_k = 0; hb_k < \d+; hb_k\+\+)\) \{\n"
                       r"[^\n]*", source)
    assert len(loops) == 3 and all("hb_thread" in loop for loop in loops)
    lines = [line.strip() for line in source.splitlines() if line.strip() and not line.strip().startswith("/*")]
    doubled = [a for a, b in zip(lines, lines[1:]) if a == b and a.startswith("__sync")]
    assert not doubled


def test_only_stores_with_independent_lanes_are_spread() -> None:
    """Halide reads every lane before it writes any: a store that reads what
    it writes (a shift in place) cannot be cut into lanes, nor can one whose
    lanes write the same element twice."""
    text = (
        "allocate t[float32 * 16]\n"
        "t[ramp(0, 1, 8)] = x8(1.000000f)\n"
        "t[ramp(1, 1, 7)] = t[ramp(0, 1, 7)]\n"
        "t[ramp(0, 0, 8)] = x8(2.000000f)\n"
        "t[ramp(ramp(0, 1, 4), x4(4), 2)] = x8(3.000000f)\n"
        "t[ramp(ramp(0, 1, 4), x4(2), 2)] = x8(4.000000f)\n"
    )
    stmt = parse_input(text).ir
    assert isinstance(stmt, ir.Stmt)
    stores = [n for n in ir.walk(stmt) if isinstance(n, ir.Store)]
    assert [spreads(s) for s in stores] == [True, False, False, True, False]


# ------------------------------------------------------------ fragment reuse
def test_a_64x64_gemm_block_loads_each_operand_fragment_once_per_step() -> None:
    """4 x 4 accumulator tiles, K in chunks of 16, four chunks per loop
    iteration: 4 A and 4 B fragments per chunk, the minimum (16 of each
    before)."""
    source = app_cuda("gemm")
    assert source.count("wmma::mma_sync(") == 64
    loads = re.findall(r"wmma::load_matrix_sync\(\w+, (\(const __half \*\)\w+) \+ (\(.*\)), (.*)\);", source)
    assert len(loads) == 32
    assert len(set(loads)) == 32


def test_a_fragment_is_not_reused_past_a_store_or_a_staging_copy() -> None:
    """conv1d stages nothing per MMA any more, but the rows of the two
    accumulator tiles are different padded copies: 2 A loads, 1 B load."""
    source = app_cuda("conv1d")
    assert source.count("wmma::load_matrix_sync(") == 3
    assert source.count("wmma::mma_sync(") == 2


# ------------------------------------------------------------ streams
def test_launches_take_the_callers_stream_and_never_synchronize_the_device() -> None:
    for name in ("conv1d", "resize"):
        source = app_cuda(name)
        assert "cudaDeviceSynchronize" not in source
        assert re.search(r'extern "C" int hb_kernel_raw\([^)]*, cudaStream_t hb_stream\) \{', source)
        launches = re.findall(r"\w+<<<([^>]*)>>>\(", source)
        assert launches and all(launch.endswith(", 0, hb_stream") for launch in launches)
        assert "cudaMalloc(" not in source and "cudaFree(" not in source
    resize = app_cuda("resize")
    assert "cudaMallocAsync(" in resize and "cudaFreeAsync(" in resize


def _fills_with_their_loops(s: ir.Stmt, loops: tuple[str, ...] = ()) -> list[tuple[ir.Store, tuple[str, ...]]]:
    if isinstance(s, ir.For):
        serial = s.kind in (ir.ForKind.SERIAL, ir.ForKind.UNROLLED)
        return _fills_with_their_loops(s.body, (*loops, s.name) if serial else loops)
    if isinstance(s, ir.Store):
        return [(s, loops)] if _fills(s) or ir.WMMA_STAGE in s.name else []
    return [found for child in ir.children(s) if isinstance(child, ir.Stmt)
            for found in _fills_with_their_loops(child, loops)]


@pytest.mark.parametrize("name", sorted(n for n, a in APPS.items() if a.accelerator == "wmma"))
def test_no_operand_fill_sits_in_a_loop_it_does_not_depend_on(name: str) -> None:
    """Toeplitz matrices, padded and staged operands are filled once per
    change of their inputs: every serial loop around a fill is one whose
    variable the fill reads (a fill invariant in a loop would be rebuilt at
    every iteration for nothing)."""
    for store, loops in _fills_with_their_loops(tensorized_app(name)):
        used = {n.name for n in ir.walk(store) if isinstance(n, ir.Variable)}
        assert set(loops) <= used, f"{store.name} is rebuilt in loops {sorted(set(loops) - used)}"


# ------------------------------------------------------------ barriers (review findings)
def _body(text: str, types: dict[str, ir.Type]) -> str:
    from ..codegen.test_wmma import _compiles, _kernel

    _, body, definition = _kernel(text, types)
    _compiles(definition)
    return body


def _between(body: str, first: str, second: str) -> str:
    start = body.index(first)
    return body[start:body.index(second, start)]


@pytest.mark.slow
def test_a_fill_waits_for_the_threads_still_reading_what_it_overwrites() -> None:
    """B reads A reversed (thread i reads what thread 63 - i writes): the
    refill of A may not join B's barrier-free group (write after read)."""
    body = _body(
        "gpu_block<CUDA> (o.s0.b.block_id_x, 0, 4) {\n"
        " allocate A[float32 * 64] in GPUShared\n"
        " allocate B[float32 * 64] in GPUShared\n"
        " A[ramp(0, 1, 64)] = x64(1.000000f)\n"
        " B[ramp(0, 1, 64)] = A[ramp(63, -1, 64)]\n"
        " A[ramp(0, 1, 64)] = x64(2.000000f)\n"
        " gpu_thread<CUDA> (o.s0.t.thread_id_x, 0, 64) {\n"
        "  o[(o.s0.b.block_id_x*64) + o.s0.t.thread_id_x] = B[o.s0.t.thread_id_x] + A[o.s0.t.thread_id_x]\n"
        " }\n"
        "}\n", {"o": ir.Float(32), "A": ir.Float(32), "B": ir.Float(32)})
    assert "__syncthreads();" in _between(body, "B[", "= 2.0f;")
    assert "__syncthreads();" in _between(body, "= 2.0f;", "o[")


@pytest.mark.slow
def test_each_branch_of_an_if_settles_its_own_fills() -> None:
    body = _body(
        "gpu_block<CUDA> (o.s0.b.block_id_x, 0, 4) {\n"
        " allocate T[float32 * 64] in GPUShared\n"
        " if (o.s0.b.block_id_x < 2) {\n"
        "  T[ramp(0, 1, 64)] = x64(1.000000f)\n"
        " } else {\n"
        "  T[ramp(0, 1, 64)] = x64(2.000000f)\n"
        " }\n"
        " gpu_thread<CUDA> (o.s0.t.thread_id_x, 0, 64) {\n"
        "  o[(o.s0.b.block_id_x*64) + o.s0.t.thread_id_x] = T[63 - o.s0.t.thread_id_x]\n"
        " }\n"
        "}\n", {"o": ir.Float(32), "T": ir.Float(32)})
    then_case, else_case = body.split("else", 1)
    assert "__syncthreads();" in then_case.split("= 1.0f;", 1)[1]  # before the branch closes
    assert "__syncthreads();" in _between(else_case, "= 2.0f;", "o[")


@pytest.mark.slow
def test_stages_of_a_block_of_threads_without_lanes_are_separated_by_a_barrier() -> None:
    """No warp lanes, 64 threads along x (two warps): the second stage reads
    what another warp wrote in the first."""
    body = _body(
        "gpu_block<CUDA> (o.s0.b.block_id_x, 0, 4) {\n"
        " allocate A[float32 * 64] in GPUShared\n"
        " gpu_thread<CUDA> (a.s0.t.thread_id_x, 0, 64) {\n"
        "  A[a.s0.t.thread_id_x] = 1.000000f\n"
        " }\n"
        " gpu_thread<CUDA> (o.s0.t.thread_id_x, 0, 64) {\n"
        "  o[(o.s0.b.block_id_x*64) + o.s0.t.thread_id_x] = A[63 - o.s0.t.thread_id_x]\n"
        " }\n"
        "}\n", {"o": ir.Float(32), "A": ir.Float(32)})
    assert "__syncthreads();" in _between(body, "A[a_s0_t_thread_id_x]", "o[")
