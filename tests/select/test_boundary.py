"""A convolution over a zero-padded image (constant_exterior), two
schedules dumped by real Halide 21 (tools/gen_boundary_fixtures.py): with
the boundary condition inlined into the product, the miss says that the
condition hides the window and what to change in the schedule; with it
computed at root, as that message advises, the convolution lowers,
verifies and builds, and the bounded copy moves float16 bits."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from hardboiled.pipeline.driver import compile_text
from hardboiled.pipeline.options import CompileOptions
from hardboiled.select.options import SelectionOptions

from ..conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import gen_boundary_fixtures as generator  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "boundary"


def _compile(name: str, build: Path | None = None):
    options = CompileOptions.from_flags(
        selection=SelectionOptions(store_in={"conv": "WMMAAccumulator"}, cache_dir=None), emit=("cuda",),
        verify=True, build_path=str(build) if build else None)
    path = FIXTURES / f"{name}.stmt"
    return compile_text(str(path), path.read_bytes(), options)


def test_the_fixtures_are_the_generator_s() -> None:
    assert sorted(p.stem for p in FIXTURES.glob("*.stmt")) == sorted(generator.CASES)


def test_an_inlined_boundary_condition_is_named_with_what_to_change() -> None:
    result = _compile("conv1d_bounded_inline")
    assert result.exit_code == 1
    notes = [note for d in result.diagnostics for note in d.notes]
    assert any("operand A reads 'image' through a boundary condition" in note and "compute_root()" in note
               for note in notes), notes
    assert not any("no WMMA fragment shape" in note for note in notes)


@pytest.mark.slow
def test_the_boundary_condition_at_root_lowers_verifies_and_moves_bits(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc") is not None
    result = _compile("conv1d_bounded_at_root", tmp_path / "kernel.ptx" if nvcc else None)
    messages = "\n".join([*result.messages, *(d.message for d in result.diagnostics)])
    assert result.exit_code == 0, messages
    assert all(s["lowered"] for s in result.report["statements"]), messages
    assert any(m.startswith("verify (seed 0):") and "MISMATCH" not in m for m in result.messages), messages
    source = next(iter(result.outputs.values()))
    kernels = re.findall(r"__global__ void .*?\n}\n", source, flags=re.S)
    assert len(kernels) == 2  # the bounded copy, and the convolution
    for kernel in kernels:
        assert "static const int32_t" not in kernel
        assert not [line for line in kernel.splitlines() if "hb_f32_to_f16(" in line and "hb_f16_to_f32(" in line]
    if nvcc:
        assert re.search(r"\bwmma\.mma\.sync", (tmp_path / "kernel.ptx").read_text())
