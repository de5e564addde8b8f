"""hardboiled/measure/: the per-block counts the CUDA reader (cuda_source.py)
takes from hand-written CUDA in the generator's style, PTX instruction
counts, today's figures of the compiled applications from the IR reader
(kernel_work.py; EXPECTED and PER_FRAGMENT, to update when the code
generator changes what they should be), and the two readers held to the
same numbers on every application."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from hardboiled.codegen.cuda import GENERATED_CUDA_FLAGS
from hardboiled.measure.c_syntax import evaluate_c_integer
from hardboiled.measure.cuda_source import analyze_application, analyze_cuda
from hardboiled.measure.figures import BlockCounts, KernelFigures, application_figures
from hardboiled.measure.kernel_work import program_work
from hardboiled.measure.ptx import generate_ptx, nvcc_available, ptx_counts

from ..conftest import ROOT, app_cuda, tensorized_app

sys.path.insert(0, str(ROOT))
from apps.run import applications  # noqa: E402

WMMA_APPS = sorted(name for name, app in applications().items() if app.accelerator == "wmma")


def kernel_source(body: str, block: tuple[int, int, int] = (32, 1, 1), grid: str = "((int32_t)2), ((int32_t)3), 1",
                  launch: str = "<<<hb_grid, hb_block>>>", name: str = "hb_kernel_k0") -> str:
    """One kernel with its launch, as the generator writes them."""
    dims = ", ".join(map(str, block))
    return f"""using namespace nvcuda;
/* launched as <<<grid, dim3({dims})>>> */
static __global__ void {name}(const uint16_t *__restrict__ A, const uint16_t *__restrict__ B, float *out, int32_t n) {{
  const int hb_warp = (int)(threadIdx.y + blockDim.y * threadIdx.z);
  (void)hb_warp;
{body}
}}

extern "C" int hb_kernel(const uint16_t *A, const uint16_t *B, float *out, int32_t n) {{
  {{
    dim3 hb_grid({grid}), hb_block({dims});
    {name}{launch}(A, B, out, n);
  }}
  return 0;
}}
"""


def only_kernel(body: str, **launch: Any) -> KernelFigures:
    kernels = analyze_cuda(kernel_source(body, **launch))
    assert len(kernels) == 1
    assert kernels[0].unparsed == []
    return kernels[0]


LOADS_AND_MMA = """
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
        wmma::load_matrix_sync(a, (const __half *)A + r * 256, 16);
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
        wmma::load_matrix_sync(b, (const __half *)B + s * 256, 16);
        wmma::mma_sync(acc[0], a, b, acc[0]);
"""


def test_counted_loops_multiply_what_they_hold():
    figures = only_kernel(f"""
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
  wmma::fill_fragment(acc[0], 0.0f);
  {{
    int32_t r_lo = ((int32_t)0), r_end = r_lo + ((int32_t)3);
    for (int32_t r = r_lo; r < r_end; r++) {{
      int32_t s_lo = ((int32_t)1), s_end = s_lo + ((int32_t)2);
      for (int32_t s = s_lo; s < s_end; s++) {{
{LOADS_AND_MMA}
      }}
    }}
  }}
  wmma::store_matrix_sync(out, acc[0], 16, wmma::mem_row_major);
""")
    assert (figures.mma, figures.mma_macs, figures.mma_by_shape) == (6, 6 * 16 * 16 * 16, {"m16n16k16": 6})
    assert (figures.operand_loads, figures.distinct_operand_loads, figures.accumulator_loads) == (12, 12, 0)
    assert (figures.fragment_fills, figures.fragment_stores, figures.output_fragments) == (1, 1, 1)
    assert figures.output_elements == 256
    assert figures.nontensor_executions == 0  # loop bounds are part of their loops
    assert not figures.symbolic_trips
    assert (figures.block, figures.grid, figures.blocks_launched) == ((32, 1, 1), (2, 3, 1), 6)
    assert figures.per_output_fragment("operand_loads") == 12
    assert figures.macs_per_output_element == 96


def test_loop_bounds_that_are_not_constants():
    figures = only_kernel(f"""
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[1];
  int32_t r_lo = n + (int32_t)blockIdx.x, r_end = r_lo + ((int32_t)4);
  for (int32_t r = r_lo; r < r_end; r++) {{
    for (int32_t s = 0; s < n; s++) {{
{LOADS_AND_MMA}
    }}
  }}
""")
    # 4 trips from V_end = V_lo + 4 whatever V_lo is; the loop to n counted once
    assert figures.mma == 4
    assert figures.symbolic_trips


def test_one_line_loops_and_fragment_element_loops():
    figures = only_kernel("""
  float t1[8];
  for (int i = 0; i < 8; i++) t1[i] = 0.0f;
  for (int j = 0; j < 4; j++) for (int k = 0; k < 2; k++) t1[j * 2 + k] = 1.0f;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> f;
  wmma::fill_fragment(f, 0.0f);
  for (int hb_e = 0; hb_e < f.num_elements; hb_e++) f.x[hb_e] = (f.x[hb_e] > 0.0f ? f.x[hb_e] : 0.0f);
""")
    assert figures.nontensor_executions == 8 + 8 + 8
    assert figures.nontensor_thread_executions == 32 * 24
    assert figures.lane_utilization == 1.0
    assert any("num_elements taken as 8" in note for note in figures.notes)


def test_warp_cooperative_loop_spreads_over_the_lanes():
    figures = only_kernel("""
  __shared__ __align__(32) uint16_t stage_warps[1][256];
  uint16_t *stage = stage_warps[hb_warp];
  __syncwarp();
  for (int hb_i = (int)threadIdx.x; hb_i < 256; hb_i += 32) {
    stage[((((int32_t)0)) + hb_i * (((int32_t)1)))] = A[hb_i];
  }
  __syncwarp();
""")
    assert (figures.shared_write_elements, figures.shared_write_bytes) == (256, 512)
    assert (figures.nontensor_executions, figures.nontensor_thread_executions) == (8, 256)
    assert figures.lane_utilization == 1.0
    assert (figures.syncwarps, figures.syncthreads) == (2, 0)


@pytest.mark.parametrize("binding", [
    "const int hb_thread = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));",
    "",  # hb_thread undeclared: taken as the thread's place in the block
])
def test_block_cooperative_loop_with_a_ragged_end(binding):
    figures = only_kernel(f"""
  {binding}
  __shared__ __align__(32) float table[300];
  __syncthreads();
  for (int hb_i = hb_thread; hb_i < 300; hb_i += 128) {{
    table[hb_i] = 1.0f;
  }}
  __syncthreads();
""", block=(32, 4, 1))
    # threads 0-43 run 3 iterations, 44-127 run 2: warps 0 and 1 issue 3 times, warps 2 and 3 twice
    assert (figures.nontensor_thread_executions, figures.nontensor_executions) == (300, 10)
    assert figures.lane_utilization == 300 / 320
    assert (figures.shared_write_elements, figures.shared_write_bytes) == (300, 1200)
    assert figures.syncthreads == 2


def test_one_thread_guards_leave_one_lane():
    figures = only_kernel("""
  __shared__ __align__(32) uint16_t toeplitz[256];
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    float t5[256];
    for (int i = 0; i < 256; i++) t5[i] = 1.0f;
    for (int i = 0; i < 256; i++) toeplitz[i] = hb_f32_to_f16(t5[i]);
  }
  __syncthreads();
  if ((int32_t)threadIdx.x < ((int32_t)32)) {
    out[threadIdx.x] = 0.0f;
  }
""")
    assert (figures.nontensor_executions, figures.nontensor_thread_executions) == (513, 544)
    assert figures.lane_utilization == 544 / (32 * 513)
    assert (figures.shared_write_elements, figures.shared_write_bytes) == (256, 512)
    assert figures.syncthreads == 2


def test_lane_zero_guard_in_each_warp_and_else():
    figures = only_kernel("""
  if (threadIdx.x == 0) {
    out[hb_warp] = 1.0f;
  } else {
    out[32 + threadIdx.x] = 2.0f;
  }
""", block=(32, 2, 1))
    # the if: one lane in each of 2 warps; the else: the other 31 lanes of both
    assert (figures.nontensor_executions, figures.nontensor_thread_executions) == (4, 64)


def test_guards_that_read_data_admit_every_thread():
    figures = only_kernel("""
  if (n > 3) {
    out[threadIdx.x] = 1.0f;
  }
""")
    assert (figures.nontensor_executions, figures.nontensor_thread_executions) == (1, 32)


TWO_TILES = """
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
  {
    const int32_t wmma_lane = (int32_t)threadIdx.x; (void)wmma_lane;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a0;
    wmma::load_matrix_sync(a0, (const __half *)A + (((int32_t)0)), ((int32_t)16));
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b0;
    wmma::load_matrix_sync(b0, (const __half *)B + (((int32_t)0)), ((int32_t)16));
    wmma::mma_sync(acc[0], a0, b0, acc[0]);
  }
  BETWEEN
  {
    const int32_t wmma_lane = (int32_t)threadIdx.x; (void)wmma_lane;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a1;
    wmma::load_matrix_sync(a1, (const __half *)A + (((int32_t)0)), ((int32_t)16));
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b1;
    wmma::load_matrix_sync(b1, (const __half *)B + (((int32_t)256)), ((int32_t)16));
    wmma::mma_sync(acc[1], a1, b1, acc[1]);
  }
"""


@pytest.mark.parametrize(("between", "distinct"), [
    ("", 3),  # A's tile loaded twice in one stretch: once would do
    ("__syncthreads();", 4),  # a barrier ends the stretch
    ("A[0] = 0;", 4),  # A was written between the loads
    ("int32_t k = 1;", 3),  # a write of something else
])
def test_distinct_operand_loads(between, distinct):
    figures = only_kernel(TWO_TILES.replace("BETWEEN", between))
    assert (figures.operand_loads, figures.distinct_operand_loads) == (4, distinct)


def test_distinct_operand_loads_inside_a_loop():
    body = "for (int32_t r = 0; r < 2; r++) {\n" + TWO_TILES.replace("BETWEEN", "") + "\n}"
    figures = only_kernel(body)
    assert (figures.mma, figures.operand_loads, figures.distinct_operand_loads) == (4, 8, 6)


def test_shared_reads_writes_and_their_sizes():
    figures = only_kernel("""
  __shared__ float acc_s[64];
  __shared__ __align__(32) signed char codes[64];
  if (threadIdx.x == 0) {
    acc_s[0] = 1.0f;
    acc_s[1] += acc_s[0];
    codes[2] = (signed char)acc_s[1];
    float x = acc_s[codes[3]];
    out[0] = x;
  }
""")
    assert (figures.shared_write_elements, figures.shared_write_bytes) == (3, 4 + 4 + 1)
    assert (figures.shared_read_elements, figures.shared_read_bytes) == (5, 8 + 4 + 4 + 1)
    assert figures.nontensor_executions == 5


def test_fragments_through_shared_memory():
    figures = only_kernel("""
  __shared__ __align__(32) uint16_t stage[256];
  __shared__ __align__(32) float spill[256];
  wmma::fragment<wmma::matrix_a, 32, 8, 16, __half, wmma::row_major> a;
  wmma::load_matrix_sync(a, (const __half *)stage + 0, 16);
  wmma::fragment<wmma::matrix_b, 32, 8, 16, __half, wmma::row_major> b;
  wmma::load_matrix_sync(b, (const __half *)B, 8);
  wmma::fragment<wmma::accumulator, 32, 8, 16, float> c;
  wmma::load_matrix_sync(c, (const float *)spill, 8, wmma::mem_row_major);
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(spill, c, 8, wmma::mem_row_major);
  wmma::store_matrix_sync(out + 256, c, 8, wmma::mem_row_major);
""")
    assert (figures.shared_fragment_loads, figures.shared_fragment_load_bytes) == (2, 32 * 16 * 2 + 32 * 8 * 4)
    assert (figures.operand_loads, figures.accumulator_loads) == (2, 1)
    assert (figures.fragment_stores, figures.shared_fragment_stores, figures.shared_fragment_store_bytes) == \
        (2, 1, 32 * 8 * 4)
    assert (figures.output_fragments, figures.output_elements) == (1, 256)
    assert figures.mma_by_shape == {"m32n8k16": 1}


def test_launches_with_a_stream_and_grids_that_are_not_constants():
    streamed = only_kernel("", launch="<<<hb_grid, hb_block, 0, hb_stream>>>")
    assert (streamed.grid, streamed.blocks_launched) == ((2, 3, 1), 6)
    symbolic = only_kernel("", grid="n, ((int32_t)2), 1")
    assert (symbolic.grid, symbolic.blocks_launched) == ((None, 2, 1), None)


def test_an_application_sums_its_kernels_over_their_blocks():
    tile = TWO_TILES.replace("BETWEEN", "") + "  wmma::store_matrix_sync(out, acc[0], 16, wmma::mem_row_major);\n"
    source = kernel_source(tile, name="k_a") + kernel_source(tile, name="k_b", grid="n, 1, 1")
    figures = analyze_application("two", source)
    assert [kernel.name for kernel in figures.kernels] == ["k_a", "k_b"]
    assert not figures.grid_known  # k_b counted once
    assert (figures.totals.mma, figures.totals.output_fragments) == (2 * 6 + 2, 6 + 1)
    assert figures.totals.per_output_fragment("mma") == 2
    assert application_figures("k_a only", figures.kernels[:1]).totals.operand_loads == 4 * 6


def test_what_is_not_understood_is_reported():
    kernels = analyze_cuda(kernel_source("""
  while (n > 0) {
    out[0] = 1.0f;
  }
  wmma::bmma_sync(x, y, z, w);
"""))
    assert kernels[0].symbolic_trips
    assert [entry.split(": ")[1] for entry in kernels[0].unparsed] == [
        "block header not understood (its body counted once per entry)", "wmma statement not understood"]


def test_c_integer_expressions():
    assert evaluate_c_integer("((int32_t)2)") == 2
    assert evaluate_c_integer("((int32_t)-7) / 2") == -3  # C truncates toward zero
    assert evaluate_c_integer("-7 % 2") == -1
    assert evaluate_c_integer("threadIdx.x == 0 && !(threadIdx.y)", {"threadIdx_x": 0, "threadIdx_y": 0}) == 1
    assert evaluate_c_integer("16u << 2") == 64
    for unknown in ("n + 1", "1.5f", "hb_div(4, 2)", "a ? 1 : 2", "__import__('os')"):
        assert evaluate_c_integer(unknown) is None


PTX = """
.visible .entry _ZL12hb_kernel_k0PKtS0_Pfi(
\t.param .u64 _ZL12hb_kernel_k0PKtS0_Pfi_param_0
)
{
\t.reg .pred \t%p<2>;
\tbar.sync \t0;
\twmma.load.a.sync.aligned.row.m16n16k16.shared.f16 \t{%r1, %r2}, [%rd1], %r3;
\twmma.load.b.sync.aligned.col.m16n16k16.global.f16 \t{%r4, %r5}, [%rd2], %r3;
\twmma.load.c.sync.aligned.row.m16n16k16.global.f32 \t{%f1, %f2}, [%rd3], %r3;
\twmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 \t{%f3, %f4}, {%r1, %r2}, {%r4, %r5}, {%f1, %f2};
\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 \t{%f5}, {%r1}, {%r4}, {%f5};
\twmma.store.d.sync.aligned.row.m16n16k16.global.f32 \t[%rd3], {%f3, %f4}, %r3;
\t@%p1 bar.warp.sync \t-1;
\tbarrier.sync.aligned \t0;
\tst.shared.u16 \t[%rd4], %rs1;
\tld.shared.u16 \t%rs2, [%rd4];
\tst.volatile.shared.f32 \t[%rd5], %f1;
\tld.global.f32 \t%f6, [%rd6];
\t// bar.sync in a comment
$L__BB0_1:
\tret;
}
"""


def test_ptx_counts():
    assert ptx_counts(PTX) == {
        "mma": 2, "wmma_load_a": 1, "wmma_load_b": 1, "wmma_load_c": 1, "wmma_store_d": 1,
        "bar_sync": 2, "bar_warp_sync": 1, "st_shared": 2, "ld_shared": 1,
    }


# Today's figures of two applications, summed over the blocks they launch.
# Update these when the code generator changes what it emits.
EXPECTED = {
    "gemm": {
        "accumulators": ("prod",),
        "kernels": 1,
        "totals": {
            "output_fragments": 64, "mma": 512, "mma_macs": 512 * 4096, "operand_loads": 256,
            "distinct_operand_loads": 256, "shared_write_bytes": 0, "syncthreads": 0, "syncwarps": 0,
        },
        "lane_utilization": None,
        "ptx": {"mma": 128, "wmma_load_a": 32, "wmma_load_b": 32, "bar_sync": 0},
    },
    "conv1d": {
        "accumulators": ("conv",),
        "kernels": 1,
        "totals": {
            "output_fragments": 8, "mma": 16, "mma_macs": 16 * 4096, "operand_loads": 24,
            "distinct_operand_loads": 24, "shared_write_bytes": 18432, "syncthreads": 16, "syncwarps": 0,
        },
        "lane_utilization": 1.0,
        "ptx": {"mma": 2, "wmma_load_a": 2, "wmma_load_b": 1, "bar_sync": 2},
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_application_figures(name):
    """From the IR the CUDA is printed from; the lane utilization and the
    PTX counts from the CUDA itself."""
    expected = EXPECTED[name]
    figures = program_work(name, tensorized_app(name))
    assert figures.grid_known and not figures.symbolic_trips
    assert len(figures.kernels) == expected["kernels"]
    assert {key: getattr(figures.totals, key) for key in expected["totals"]} == expected["totals"]
    cuda = app_cuda(name)
    ptx = generate_ptx(cuda, GENERATED_CUDA_FLAGS) if nvcc_available() else None
    text = analyze_application(name, cuda, ptx)
    assert text.unparsed == []
    assert text.totals.lane_utilization == expected["lane_utilization"]
    if text.ptx is not None:
        assert {key: text.ptx[key] for key in expected["ptx"]} == expected["ptx"]


SHARED_FIGURES = tuple(name for name in BlockCounts.__dataclass_fields__
                       if name not in ("shared_read_elements", "shared_read_bytes", "nontensor_executions",
                                       "nontensor_thread_executions"))
"""What both readers count: all but the lane-level figures of the C the
generator writes for the code around the Tensor-Core calls."""


@pytest.mark.parametrize("name", WMMA_APPS)
def test_the_ir_and_the_cuda_give_the_same_figures(name: str) -> None:
    """Two readers of one kernel: the IR the generator prints and the CUDA
    it printed, counted independently, agree on every application."""
    from_ir = program_work(name, tensorized_app(name))
    from_text = analyze_application(name, app_cuda(name))
    assert [k.block for k in from_ir.kernels] == [k.block for k in from_text.kernels]
    assert [k.grids for k in from_ir.kernels] == [k.grids for k in from_text.kernels]
    for figure in SHARED_FIGURES:
        assert getattr(from_ir.totals, figure) == getattr(from_text.totals, figure), figure


PER_FRAGMENT = {
    # mma, A+B loads, fewest loads, __syncthreads, __syncwarp per output
    # fragment; lane utilization of non-tensor code (bench/wmma_static.py).
    # Before issue 16 (commit e3a096c): conv1d 4 MMAs, 8 loads, 4 block and
    # 8 warp barriers, 5% of the lanes; gemm 16 loads; see docs/performance.md.
    "conv1d": (2, 3, 3, 2, 0, 1.0),
    "conv1d_8x32": (2, 4, 4, 4, 0, 1.0),
    "conv2d": (32, 64, 64, 32, 0, 1.0),
    "conv2d_k32": (128, 256, 256, 64, 0, 1.0),
    "conv2d_8x32": (32, 64, 64, 32, 0, 1.0),
    "downsample": (32, 64, 64, 8, 28, 1.0),
    "downsample_k32": (96, 192, 192, 16, 56, 1.0),
    "upsample": (8, 16, 16, 17.25, 0, 1.0),
    # resize's warp barriers: 5.2 and 0 before the first GPU run (2026-11-28)
    # found lanes reading a stored tile with none between (racecheck).
    "resize": (2, 4, 4, 2.2, 5.6, 0.267),
    "resize_up": (2, 4, 4, 2.133, 0.6, 0.168),
    "rec_filter": (2, 4, 4, 106.5, 0, 0.597),
    "dct_denoise": (1, 2, 1.625, 0.08333, 0.5, 1.0),
    "dct": (1, 2, 2, 0.5, 0, 1.0),
    "conv_layer": (9, 9.562, 9.562, 0, 2, 1.0),
    "conv_layer_c32": (18, 19.12, 19.12, 0, 2, 1.0),
    "attention": (2, 4, 4, 1.5, 0, 0.663),
    "gemm": (8, 4, 4, 0, 0, None),
    "gemm_wide": (8, 4, 4, 0.4375, 0, 1.0),
}
"""Static figures of every Tensor-Core application, rounded as printed."""


def test_every_wmma_application_has_its_figures() -> None:
    assert sorted(PER_FRAGMENT) == WMMA_APPS


@pytest.mark.parametrize("name", sorted(PER_FRAGMENT))
def test_per_fragment_figures_of_every_application(name: str) -> None:
    """Per output fragment, from the IR the CUDA is printed from: the MMAs (the cost
    model's window shape), the operand loads (each fragment loaded once per
    group of statements that share it: only dct_denoise reloads its
    constant DCT matrix, once per tile, because each tile's accumulator has
    a C scope of its own), the barriers; and, from the CUDA, how many lanes
    the code around the Tensor Core calls keeps busy."""
    derived = program_work(name, tensorized_app(name)).totals.derived()
    derived["lane_utilization"] = analyze_application(name, app_cuda(name), None).totals.lane_utilization
    mma, loads, fewest, block_barriers, warp_barriers, lanes = PER_FRAGMENT[name]
    assert derived["mma_per_fragment"] == pytest.approx(mma, rel=1e-3)
    assert derived["operand_loads_per_fragment"] == pytest.approx(loads, rel=1e-3)
    assert derived["distinct_operand_loads_per_fragment"] == pytest.approx(fewest, rel=1e-3)
    assert derived["syncthreads_per_fragment"] == pytest.approx(block_barriers, rel=1e-3)
    assert derived["syncwarps_per_fragment"] == pytest.approx(warp_barriers, rel=1e-3)
    if lanes is None:
        assert derived["lane_utilization"] is None
    else:
        assert derived["lane_utilization"] == pytest.approx(lanes, abs=1e-3)


def test_the_ir_reader_counts_per_thread_of_a_block() -> None:
    """Two warps (a thread loop of 2 on y): a 64-lane fill spread over the
    block's 64 threads, then per warp a fragment fill, a scalar store by
    lane 0 between warp barriers and a fragment store; a block barrier
    after the fill and one after the thread loop. The grid launches 4
    blocks."""
    from hardboiled import ir
    from hardboiled.frontend.parse import parse_input
    from hardboiled.legalize.passes import map_to_gpu

    from ..codegen.test_wmma import _THREADS_KERNEL

    types = {"out": ir.Float(32), "tmp": ir.Float(32), "res": ir.Float(32)}
    stmt = map_to_gpu(parse_input(_THREADS_KERNEL, "kernel.stmt", buffer_types=types).ir)
    assert isinstance(stmt, ir.Stmt)
    figures = program_work("threads", stmt)
    (kernel,) = figures.kernels
    assert kernel.block == (32, 2, 1) and kernel.grids == [(4, 1, 1)] and figures.grid_known
    assert (kernel.fragment_fills, kernel.fragment_stores, kernel.output_fragments) == (2, 2, 2)
    assert (kernel.syncthreads, kernel.syncwarps) == (2, 4)
    assert (kernel.shared_write_elements, kernel.shared_write_bytes) == (64, 256)
    assert figures.totals.fragment_stores == 8  # 4 blocks
