"""The final stmt (issue 20): what ``compile_to_lowered_stmt`` writes, after
Halide's passes flattened the 2-D vector accesses into concat_vectors and
shuffles, hoisted vector lets, and turned products and divisions into
widening_mul and shifts. tests/fixtures/final comes from real Halide 21
(tools/gen_final_fixtures.py): every AMX pipeline of the fixture set lowered
for AVX-512 without AMX (so upstream's own AMX pass leaves the accumulator
in AMXTile memory), and GPU pipelines, whose final stmt holds PTX and whose
debug log's last GPU stage is kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hardboiled import ir
from hardboiled.pipeline.driver import compile_text
from hardboiled.pipeline.options import CompileOptions
from hardboiled.select.options import SelectionOptions
from hardboiled.select.unflatten import _nested_ramps, unflatten_stores

from ..conftest import ROOT, run_cli

FINAL = ROOT / "tests" / "fixtures" / "final"
MANIFEST = json.loads((FINAL / "MANIFEST.json").read_text())
AMX_CASES = sorted(name for name, case in MANIFEST.items() if case["accelerator"] == "amx")
CUDA_CASES = sorted(name for name, case in MANIFEST.items() if case["accelerator"] == "wmma")


def test_the_fixture_set_is_what_the_generator_makes() -> None:
    assert len(AMX_CASES) == 22 and len(CUDA_CASES) == 5
    for name in AMX_CASES:
        assert MANIFEST[name]["target"] == "x86-64-linux-avx512"
        assert "in AMXTile" in (FINAL / name / "lowered.stmt").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("name", AMX_CASES)
def test_every_amx_final_stmt_is_tensorized_and_verified(name: str) -> None:
    path = FINAL / name / "lowered.stmt"
    result = compile_text(str(path), path.read_bytes(), CompileOptions.from_flags(verify=True, emit=("ir",)))
    assert result.exit_code == 0, [d.message for d in result.diagnostics]
    report = result.report
    assert report["lowered"] == report["selected"] >= 3
    assert report["verification"]["ok"] is True
    assert "tile_matmul(" in result.outputs["ir"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["amx_bf16_matmul_std_single", "amx_int8_matmul_vnni_tiled",
                                  "amx_bf16_std_preload_a"])
def test_the_c_of_a_final_stmt_runs_and_matches(name: str, tmp_path: Path) -> None:
    result = run_cli("compile", str(FINAL / name / "lowered.stmt"), "--run", "--no-cache", "--emit", "c",
                     "-o", str(tmp_path / "k.c"))
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr
    assert "ran the generated C" in stderr and ": equal (" in stderr


@pytest.mark.parametrize("name", ["wmma_f16_matmul", "wmma_int8_matmul", "wmma_dct16_colmajor", "wmma_conv1d"])
def test_the_last_gpu_stage_of_a_cuda_log_is_tensorized_and_verified(name: str) -> None:
    path = FINAL / name / "final_simplification.stmt"
    store_in = {MANIFEST[name]["accumulator"]: "WMMAAccumulator"}
    options = CompileOptions.from_flags(verify=True, selection=SelectionOptions(store_in=store_in))
    result = compile_text(str(path), path.read_bytes(), options)
    assert result.exit_code == 0, [d.message for d in result.diagnostics]
    assert result.report["lowered"] == result.report["selected"] == 3
    assert "wmma.mma.sync" in result.outputs["ir"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("name", ["wmma_f16_matmul", "wmma_conv1d"])
def test_the_last_gpu_stage_builds_tensor_core_ptx(name: str, tmp_path: Path) -> None:
    """The kernel reads buffer fields by name (I.min.0), never the buffer
    handle behind them, which a kernel cannot take."""
    ptx = tmp_path / "k.ptx"
    result = run_cli("compile", str(FINAL / name / "final_simplification.stmt"), "--store-in",
                     f"{MANIFEST[name]['accumulator']}=WMMAAccumulator", "--no-cache", "--emit", "cuda",
                     "-o", str(tmp_path / "k.cu"), "--build", str(ptx))
    assert result.returncode == 0, result.stderr.decode()
    assert "wmma.mma.sync.aligned" in ptx.read_text()


def test_a_gpu_final_stmt_is_explained_not_silently_unchanged() -> None:
    """Halide's final stmt of a GPU pipeline holds PTX: there is nothing
    to select, and hardboiled says where to look instead."""
    path = FINAL / "wmma_f16_matmul" / "lowered.stmt"
    asked = run_cli("compile", str(path), "--store-in", "prod=WMMAAccumulator", "--no-cache")
    stderr = asked.stderr.decode()
    assert asked.returncode == 1, stderr
    assert f"{path}:4:1: error: this is the final stmt of a GPU pipeline" in stderr
    assert "buffer cuda_gpu_source_kernels" in stderr and "--stage 'final simplification'" in stderr
    plain = run_cli("compile", str(path), "--no-cache", "-o", "/dev/null")
    assert plain.returncode == 0 and "warning: this is the final stmt of a GPU pipeline" in plain.stderr.decode()


def test_a_final_stmt_store_that_still_misses_is_explained_at_its_line() -> None:
    """The upsample's Toeplitz product, flattened, is not matched (the
    vectorizing stage of the same pipeline is): a located miss, exit 1."""
    path = FINAL / "wmma_upsample2" / "final_simplification.stmt"
    result = run_cli("compile", str(path), "--store-in", "conv=WMMAAccumulator", "--no-cache")
    stderr = result.stderr.decode()
    assert result.returncode == 1
    assert f"{path}:120:9: error: store to 'conv' cannot be lowered to WMMA fragment operations" in stderr


def test_nested_ramps_of_constant_lane_offsets() -> None:
    lane = ir.IntImm
    # B read with a row stride of 64 from a dense load: ramp(ramp(0, 64, 32), x32(1), 16).
    b = tuple(k + 64 * r for k in range(16) for r in range(32))
    assert _nested_ramps(b, lane) == ir.Ramp(ir.Ramp(lane(0), ir.IntImm(64), 32), ir.Broadcast(ir.IntImm(1), 32), 16)
    # A, one row per 16 columns: ramp(x16(ramp(0, 1, 32)), x512(128), 16).
    a = tuple(m * 128 + k for m in range(16) for _ in range(16) for k in range(32))
    assert _nested_ramps(a, lane) == ir.Ramp(ir.Broadcast(ir.Ramp(lane(0), ir.IntImm(1), 32), 16),
                                             ir.Broadcast(ir.IntImm(128), 512), 16)
    assert _nested_ramps((0, 2, 1, 5), lane) is None


def test_unflattening_leaves_stores_off_accelerator_memory_alone() -> None:
    text = (FINAL / "amx_bf16_matmul_std_single" / "lowered.stmt").read_text()
    from hardboiled.frontend.parse import parse_input

    module = parse_input(text, "k.stmt").ir
    assert isinstance(module, ir.Module)
    body = module.functions[0].body
    assert unflatten_stores(body, []) is body
    changed = unflatten_stores(body, ["mm"])
    assert changed != body
    stores = [n for n in ir.walk(changed) if isinstance(n, ir.Store)]
    assert not any(isinstance(n, ir.Shuffle) for s in stores for n in ir.walk(s))
