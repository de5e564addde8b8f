"""1-D convolutions whose window a schedule hides from the sliding-window
rules, dumped by real Halide 21 (tools/gen_window_fixtures.py): a boundary
condition inlined into the product, and taps two elements apart. Each miss
says what hides the window and what to change in the schedule; the
schedule it advises (the bounded image computed at root, the kernel spread
out with zeros) lowers, verifies and builds, and its copies move float16
bits."""

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
import gen_window_fixtures as generator  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "windows"
MISSES = {
    "conv1d_bounded_inline": ("operand A reads 'image' through a boundary condition", "compute_root()"),
    "conv1d_dilated_inline": ("operand A reads 'image' as a window whose taps are 2 elements apart",
                              "select(k % 2 == 0, kernel(k / 2), 0)"),
}
ADVISED = {"conv1d_bounded_at_root": 2, "conv1d_dilated_stuffed": 2}
"""The schedule each miss advises, and its kernels (the copy or spread
kernel at root, and the convolution)."""


def _compile(name: str, build: Path | None = None):
    options = CompileOptions.from_flags(
        selection=SelectionOptions(store_in={"conv": "WMMAAccumulator"}, cache_dir=None), emit=("cuda",),
        verify=True, build_path=str(build) if build else None)
    path = FIXTURES / f"{name}.stmt"
    return compile_text(str(path), path.read_bytes(), options)


def test_the_fixtures_are_the_generator_s() -> None:
    assert sorted(p.stem for p in FIXTURES.glob("*.stmt")) == sorted(generator.CASES) == sorted([*MISSES, *ADVISED])


@pytest.mark.parametrize("name", sorted(MISSES))
def test_a_hidden_window_is_named_with_what_to_change(name: str) -> None:
    result = _compile(name)
    assert result.exit_code == 1
    notes = [note for d in result.diagnostics for note in d.notes]
    cause, change = MISSES[name]
    assert any(cause in note and change in note for note in notes), notes
    assert not any("no WMMA fragment shape" in note for note in notes)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ADVISED))
def test_the_advised_schedule_lowers_verifies_and_moves_bits(name: str, tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc") is not None
    result = _compile(name, tmp_path / "kernel.ptx" if nvcc else None)
    messages = "\n".join([*result.messages, *(d.message for d in result.diagnostics)])
    assert result.exit_code == 0, messages
    assert all(s["lowered"] for s in result.report["statements"]), messages
    assert any(m.startswith("verify (seed 0):") and "MISMATCH" not in m for m in result.messages), messages
    source = next(iter(result.outputs.values()))
    kernels = re.findall(r"__global__ void .*?\n}\n", source, flags=re.S)
    assert len(kernels) == ADVISED[name]
    for kernel in kernels:
        assert "static const int32_t" not in kernel
        assert not [line for line in kernel.splitlines() if "hb_f32_to_f16(" in line and "hb_f16_to_f32(" in line]
    if nvcc:
        assert re.search(r"\bwmma\.mma\.sync", (tmp_path / "kernel.ptx").read_text())


@pytest.mark.parametrize(("old", "new", "expected"), [
    # a scalar clamp of the window's base address (a tail's) is no boundary condition: the dilation is named
    ("ramp(ramp(output.s0.y.by.block_id_y*288, 2, 8)", "ramp(ramp(min(output.s0.y.by.block_id_y*288, 1000), 2, 8)",
     "taps are 2 elements apart"),
    # outputs as far apart as the taps: a plain window over interleaved data, no dilation claimed
    (", 2, 8), x8(1), 256)", ", 2, 8), x8(2), 256)", "no WMMA fragment shape"),
])
def test_only_what_hides_a_window_is_named(old: str, new: str, expected: str) -> None:
    text = (FIXTURES / "conv1d_dilated_inline.stmt").read_text()
    assert old in text
    options = CompileOptions.from_flags(
        selection=SelectionOptions(store_in={"conv": "WMMAAccumulator"}, cache_dir=None), emit=("cuda",))
    result = compile_text("edited.stmt", text.replace(old, new).encode(), options)
    notes = [note for d in result.diagnostics for note in d.notes]
    assert result.exit_code == 1 and any(expected in note for note in notes), notes
    assert not any("boundary condition" in note for note in notes)
