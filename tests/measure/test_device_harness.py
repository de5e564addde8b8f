"""bench/device.py: what it prepares here and what its run does there must
work before a GPU is lent, so the first real run does not fail on a path
nobody executed. Here that is ``prepare`` and ``run --dry-run`` on real
kernels, and the comparison the run makes on every output."""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ..conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import device  # noqa: E402

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this machine")


def test_an_output_matches_within_its_tolerance_element_by_element() -> None:
    expected = np.array([1.0, 2.0, np.nan, np.inf, 4.0], np.float32)
    tolerance = np.array([0.1, 0.1, 0.1, 0.1, 1.0])
    close = device.compare_output(expected, np.array([1.05, 2.0, np.nan, np.inf, 4.9], np.float32), tolerance,
                                  "float32")
    assert close["matches"] and close["mismatches"] == 0
    assert 0.85 < close["max_error_vs_bound"] < 0.95  # 0.9 of element 4's tolerance
    far = device.compare_output(expected, np.array([1.0, 2.2, 0.0, -np.inf, 4.0], np.float32), tolerance, "float32")
    assert not far["matches"] and far["mismatches"] == 3
    assert far["first_mismatch"] == {"element": 1, "expected": 2.0, "actual": pytest.approx(2.2)}


def test_bfloat16_is_compared_as_its_value_not_its_bits() -> None:
    def bits(values: list[float]) -> np.ndarray:
        return (np.array(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)

    tolerance = np.full(2, 0.01)
    assert device.compare_output(bits([1.0, -2.0]), bits([1.0, -2.0]), tolerance, "bfloat16")["matches"]
    # 1.0 and 1.0078125 are neighbours in bfloat16: one bit apart, 0.0078 apart in value
    assert device.compare_output(bits([1.0]), bits([1.0078125]), tolerance[:1], "bfloat16")["matches"]
    assert not device.compare_output(bits([1.0]), bits([1.5]), tolerance[:1], "bfloat16")["matches"]


def test_paper_size_inputs_are_drawn_from_the_seed_and_outputs_start_zeroed() -> None:
    kernel = {"seed": 7, "arguments": [
        {"name": "a", "type": "bfloat16", "output": False, "dims": [[0, 8, 1]], "elements": 8},
        {"name": "b", "type": "int8", "output": False, "dims": [[0, 8, 1]], "elements": 8},
        {"name": "out", "type": "float32", "output": True, "dims": [[0, 8, 1]], "elements": 8}]}
    first, again = device.load_arrays(Path("."), kernel), device.load_arrays(Path("."), kernel)
    assert all(np.array_equal(first[n], again[n]) for n in first)
    assert first["a"].dtype == np.uint16 and first["b"].dtype == np.int8 and not first["out"].any()
    values = device.as_float64(first["a"], "bfloat16")
    assert np.all(np.abs(values) <= 1.0) and len(set(values.tolist())) > 1


@pytest.mark.slow
@needs_nvcc
def test_prepare_and_a_dry_run_work_on_real_kernels(tmp_path: Path) -> None:
    """An application and a sweep variant, at the test size: compiled,
    linked into one library with the runner and the application's CUDA-only
    Halide baseline, references written; the dry run resolves every entry
    point and compares every reference."""
    folder, out = tmp_path / "prepared", tmp_path / "out"
    manifest = device.prepare(folder, ["conv1d"], ["test"], 1, 2)
    assert [k["name"] for k in manifest["kernels"]][:1] == ["conv1d-test"] and len(manifest["kernels"]) == 2
    assert not manifest["skipped"]
    assert sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) < device.MAX_CARRY_BYTES
    library = ctypes.CDLL(str(folder / device.LIBRARY))
    for kernel in manifest["kernels"]:
        assert hasattr(library, kernel["entry"]) and kernel["reference"] and kernel["tolerance"]
        assert (folder / kernel["source"]).exists()
    assert all(hasattr(library, f) for f in ("hbr_malloc", "hbr_event_record", "hbr_elapsed_ms", "hbr_describe",
                                             "hbr_wrap", "halide_cuda_wrap_device_ptr"))
    baseline = manifest["kernels"][0]["baseline"]
    assert "baseline_missing" not in manifest["kernels"][0]  # the test size is smaller than the baseline's tile
    assert baseline["order"] == ["kernel", "image", "output"] and hasattr(library, baseline["entry"])
    assert "baseline" not in manifest["kernels"][1]  # a sweep variant has none
    # The AMX half (bench/amx_device.py) at a small size, checked in the dry
    # run under the emulation (this CPU has no AMX; the device's host may).
    import amx_device

    amx = amx_device.prepare_amx(folder / device.AMX_FOLDER, (128,))
    assert [e["key"] for e in amx["pipelines"]] == [f"{name}_128" for name in amx_device.DEVICE_PIPELINES]
    # Halide refuses a tile operand kept in AMX tiles (preload_b): hardboiled's is timed alone
    assert [e["halide"] is None for e in amx["pipelines"]] == [False, False, True, False]
    # The device side needs numpy only: run it as the device would, and
    # check that it imported nothing of hardboiled, lark or egglog.
    script = (
        "import runpy, sys\n"
        f"sys.argv = ['device.py', 'run', '--in', {str(folder)!r}, '--out', {str(out)!r}, '--dry-run']\n"
        "try:\n"
        f"    runpy.run_path({str(ROOT / 'bench' / 'device.py')!r}, run_name='__main__')\n"
        "except SystemExit as stop:\n"
        "    code = stop.code\n"
        "imported = sorted({m.split('.')[0] for m in sys.modules} & {'hardboiled', 'lark', 'egglog'})\n"
        "sys.exit(f'imported {imported}' if imported else code)\n"
    )
    proc = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = json.loads((out / "device-results.json").read_text())
    assert results["dry_run"] and results["complete"] and len(results["kernels"]) == 2
    assert [row.get("hardboiled") for row in results["amx"]["pipelines"]] == [{"correct": True}] * 4
    # --only and --sizes pick kernels; each kernel's row is written as soon
    # as it is measured (a run stopped at its time limit keeps them).
    picked = device.run(folder, tmp_path / "picked", dry_run=True, quick=False, sanitizer=False, warmup=1, repeat=1,
                        only=("conv1d-test",))
    assert [row["name"] for row in picked["kernels"]] == ["conv1d-test"]
    assert device.run(folder, tmp_path / "none", dry_run=True, quick=False, sanitizer=False, warmup=1, repeat=1,
                      sizes=["paper"])["kernels"] == []
    for row in results["kernels"]:
        assert row["matches_reference"] is True and "error" not in row
        assert row["time_us"] is None and row["baseline_time_us"] is None
    assert [row["baseline"] for row in results["kernels"]] == ["CUDA-only Halide", "no CUDA-only Halide baseline for it yet"]
    table = (out / "device-results.md").read_text()
    assert "| conv1d-test | test | True |" in table and "| int8_vnni_ref_128 | checked | - | - |" in table


def test_a_baseline_halide_knows_will_fail_its_checks_is_refused_when_prepared(tmp_path: Path) -> None:
    """Halide's default tail shifts a GPU tile inwards; on an output smaller
    than a tile that reads before the input's start, which a dense input
    forbids: the first launch on the device would fail (it did, 2026-11-28,
    and the abort ended the whole run). prepare reads Halide's warning and
    keeps no baseline, with the reason; with the edge guarded it builds."""
    import halide as h

    from apps.common import dense, vars_

    def pipeline(rows: int, tail: object, schedule: str = "cuda") -> tuple[list[object], list[object]]:
        image = h.ImageParam(h.Float(32), 2, "image")
        x, y, bx, by, tx, ty = vars_("x y bx by tx ty")
        output = h.Func("output")
        output[x, y] = image[x, y] * 2.0
        dense(image, 64, rows)
        dense(output.output_buffer(), 64, rows)
        output.gpu_tile(x, y, bx, by, tx, ty, 32, 8, tail)
        return [output], [image]

    class Fake:
        def __init__(self, tail: object) -> None:
            self.sizes = {"test": {"rows": 4}}
            self.pipeline = lambda **size: pipeline(tail=tail, **size)

    entry = {"name": "fake-test", "arguments": [{"name": "image", "output": False}, {"name": "output", "output": True}]}
    (tmp_path / "src").mkdir()
    with pytest.raises(ValueError, match="fails at its first launch: .*image.min.1"):
        device.prepare_baseline(tmp_path, Fake(h.TailStrategy.ShiftInwards), "test", dict(entry))
    assert not list((tmp_path / "src").iterdir())
    guarded = dict(entry)
    device.prepare_baseline(tmp_path, Fake(h.TailStrategy.GuardWithIf), "test", guarded)
    assert guarded["baseline"]["order"] == ["image", "output"] and (tmp_path / guarded["baseline"]["object"]).exists()


def test_the_vendor_comparison_says_why_it_has_no_time_without_a_gpu() -> None:
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        pytest.skip("a GPU is here: the comparison would time cuBLAS")
    for app, sizes in (("gemm", {"n": 16}), ("conv_layer", {"channels": 16, "width": 8, "height": 8, "batch": 1})):
        time_us, why = device.vendor_time_us(app, sizes, 1, 1)
        assert time_us is None and why in ("no PyTorch", "PyTorch sees no GPU")


def test_a_folder_that_was_never_prepared_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "device.py"), "run", "--in", str(tmp_path),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "holds no manifest.json" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()
