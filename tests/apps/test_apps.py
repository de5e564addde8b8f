"""The paper's applications end to end (apps/, issue 14).

Each fixture in tests/fixtures/apps is what Halide 21 prints after
"Lowering after vectorizing:" for a whole application pipeline with the
paper's schedule, at a size the reference interpreter runs quickly
(`make app-fixtures` regenerates them with apps/run.py). For each one:
every accelerator store lowers, the rewritten pipeline (all of its stages)
verifies against the original in the interpreter, the CUDA builds with nvcc
and its PTX holds MMA instructions (the AMX C is built and run through the
emulation header where the CPU has no AMX).
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from hardboiled.pipeline.driver import FileResult, compile_text
from hardboiled.pipeline.options import CompileOptions
from hardboiled.select.selector import SelectionOptions

from ..conftest import ROOT

sys.path.insert(0, str(ROOT))
from apps.common import App  # noqa: E402
from apps.run import applications, count_mma  # noqa: E402

APPS = applications()
FIXTURES = ROOT / "tests" / "fixtures" / "apps"

TENSOR_INSTRUCTIONS = {
    "conv1d": 2, "conv1d_8x32": 1, "conv2d": 2, "conv2d_k32": 4, "conv2d_8x32": 2, "downsample": 8,
    "downsample_k32": 12, "upsample": 1, "resize": 2, "resize_up": 2, "rec_filter": 1, "dct_denoise": 8, "dct": 2,
    "conv_layer": 16, "conv_layer_c32": 32, "attention": 2, "gemm": 64, "gemm_wide": 16, "amx_conv1d": 1,
}
"""Tensor instructions (mma_sync, or _tile_dp* for AMX) in the generated source: a
static figure that changes only when selection does. The windows (conv*,
downsample*, rec_filter) take m32n8k16, the cost model's shape: half the
MMAs of m16n16k16 for 8 taps per chunk."""

KERNELS = {"upsample": 2, "resize": 12, "resize_up": 12, "rec_filter": 6, "dct_denoise": 6, "dct": 2, "attention": 7}
"""Whole pipelines: __global__ kernels, one per stage computed at root on the
GPU (and per host stage). Every other application is one kernel."""


_RESULTS: dict[str, tuple[FileResult, Path]] = {}


def _compiled(name: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[FileResult, Path]:
    """Each application compiled once per session (with its build directory)."""
    if name not in _RESULTS:
        directory = tmp_path_factory.mktemp(name)
        _RESULTS[name] = (_compile(APPS[name], directory), directory)
    return _RESULTS[name]


def _compile(app: App, tmp_path: Path) -> FileResult:
    cuda = app.accelerator == "wmma"
    build = tmp_path / ("kernel.ptx" if cuda else "kernel.so")
    nvcc = shutil.which("nvcc") is not None
    inputs = app.verification_inputs(**app.sizes["test"]) if app.verification_inputs else {}
    options = CompileOptions.from_flags(
        selection=SelectionOptions(store_in={name: app.memory for name in app.accumulators}, cache_dir=None),
        emit=("cuda",) if cuda else ("c",), verify=True, run=not cuda, inputs=inputs,
        accept_unproven=bool(app.unproven), build_path=str(build) if (nvcc or not cuda) else None)
    return compile_text(f"{app.name}.stmt", (FIXTURES / f"{app.name}.stmt").read_bytes(), options)


def test_every_application_has_a_fixture_and_a_figure() -> None:
    assert sorted(APPS) == sorted(p.stem for p in FIXTURES.glob("*.stmt"))
    assert sorted(APPS) == sorted(TENSOR_INSTRUCTIONS)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(APPS))
def test_application_lowers_verifies_and_builds(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    app = APPS[name]
    result, tmp_path = _compiled(name, tmp_path_factory)
    messages = "\n".join([*result.messages, *(d.message + " " + " ".join(d.notes) for d in result.diagnostics)])
    assert result.exit_code == 0, messages
    stores = result.report["statements"]
    assert stores and all(s["lowered"] for s in stores), messages
    assert any(m.startswith("verify (seed 0):") and "MISMATCH" not in m for m in result.messages), messages
    source = next(iter(result.outputs.values()))
    cuda = app.accelerator == "wmma"
    assert count_mma(source, cuda) == TENSOR_INSTRUCTIONS[name]
    if cuda:
        assert source.count("__global__ void") == KERNELS.get(name, 1)
        ptx = tmp_path / "kernel.ptx"
        if shutil.which("nvcc") is None:
            pytest.skip("nvcc is not installed: the CUDA was generated and verified, not built")
        assert re.search(r"\bwmma\.mma\.sync|\bmma\.sync", ptx.read_text()), "no MMA instruction in the PTX"
    else:
        assert any(m.startswith("ran the generated C") for m in result.messages), messages


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n, a in APPS.items() if a.accelerator == "wmma"))
def test_kernel_fills_move_bits_and_compute_their_lanes(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Static figures of the kernels (docs/performance.md, third H200 run):
    no lane is looked up in a table in memory (each shuffle of the
    applications has an arithmetic form, codegen/lane_tables.py), and no
    line converts a 16-bit float to float and back (the applications' only
    such lines were copies: operand fills and staging)."""
    result, _ = _compiled(name, tmp_path_factory)
    source = next(iter(result.outputs.values()))
    kernels = re.findall(r"__global__ void .*?\n}\n", source, flags=re.S)
    assert len(kernels) == KERNELS.get(name, 1)
    for kernel in kernels:
        assert "static const int32_t" not in kernel
        round_trips = [line for line in kernel.splitlines() if "hb_f32_to_f16(" in line and "hb_f16_to_f32(" in line]
        assert not round_trips, round_trips[0][-300:]


def test_host_stages_beside_gpu_stages_run_as_one_thread_kernels(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The recursive filter computes its taps on the host (compute_root with no
    GPU schedule): the wrapper, which holds device pointers, launches that
    stage as a kernel of one thread between the GPU stages."""
    result, _ = _compiled("rec_filter", tmp_path_factory)
    source = next(iter(result.outputs.values()))
    assert source.count("dim3 hb_grid(1, 1, 1), hb_block(1, 1, 1);") == 1
    # the stages computed at root on the GPU are device allocations of the wrapper
    assert re.search(r"cudaMallocAsync\(\(void \*\*\)&convolved_global_wrapper_0,", source)
    # two outputs: the filtered signal and the FIR part
    assert "float *fir_part_host_pointer" in source and "uint16_t *output_host_pointer" in source


def test_a_thread_loop_lets_in_the_threads_its_inner_loops_need(tmp_path_factory: pytest.TempPathFactory) -> None:
    """DCT denoise's overlap-add is an 8 x 8 gpu_tile: a y thread loop around
    an x thread loop. Threads with threadIdx.x != 0 must enter the y loop to
    reach their x iteration (a guard "threadIdx.x == 0" on the outer loop
    computed one column in eight); its thresholding is the schedule's own
    gpu_lanes loop, one iteration per lane."""
    result, _ = _compiled("dct_denoise", tmp_path_factory)
    source = next(iter(result.outputs.values()))
    assert "if ((int32_t)threadIdx.y < ((int32_t)8)) {" in source
    assert "threadIdx.y < ((int32_t)8) && threadIdx.x == 0" not in source
    lanes = re.search(r"gpu_lane<CUDA> \(thresholded\.\S+, 0, 32\) \{ \*/\n\s*if \(\(int32_t\)threadIdx\.x < \(\(int32_t\)32\)\)",
                      source)
    assert lanes, "the schedule's gpu_lanes loop is one iteration per lane"


def test_edge_tiles_shifted_inwards_lower_too() -> None:
    """DCT denoise transforms two tiles per block; with five tiles per row
    the last block shifts inwards, so every operand index carries Halide's
    min(likely_if_innermost(...)) offset: a scalar base like any other."""
    text = (FIXTURES / "dct_denoise.stmt").read_text()
    assert "min(likely_if_innermost(" in text
