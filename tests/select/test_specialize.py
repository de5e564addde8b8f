"""Tiles that a GuardWithIf tail sizes by the tile loops' variables,
specialized into a steady version and edge versions (select/specialize.py),
on small hand-written loops; the real Halide dumps are in test_sweep.py."""

from __future__ import annotations

import re

import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.ir.printer import print_ir
from hardboiled.select.specialize import specialize_edge_tiles

from ..conftest import FIXTURES

GUARDED = """for (xo, 0, 3) {
 allocate mm[int32 * 24 * (max(xo*16, 24) + -8)] in AMXTile
 produce mm {
  mm[ramp(ramp(0, 1, 16), x16(24), 16)] = x256(0)
  mm[(max(xo*16, 24) + -24)*24] = 1
 }
 consume mm {
  if ((uint1)likely(xo <= 1)) {
   out[ramp(ramp(xo*16, 1, 16), x16(40), 16)] = mm[ramp(ramp(0, 1, 16), x16(24), 16)]
  } else {
   out[ramp(32, 1, 8)] = mm[ramp(8, 1, 8)]
  }
 }
}
"""


def _stmt(text: str) -> ir.Stmt:
    return parse_input(text, "tiles.stmt", buffer_types={"out": ir.Int(32)}).ir


def test_a_guarded_tile_loop_gets_a_steady_version_and_a_renamed_edge_version() -> None:
    out, renamed, lines = specialize_edge_tiles(_stmt(GUARDED), {"mm"}, tuple(range(1, 5)))
    text = print_ir(out)
    steady, edge = text.split("} else {\n", 1)
    assert steady.startswith("for (xo, 0, 3) {\n if (xo <= 1) {")  # one loop: the body chooses
    assert "likely" not in steady and "mm[0] = 1" in steady  # the test is decided in each version
    # 24 columns allocated, a 16 x 16 block used: the block is the buffer
    assert "allocate mm[int32 * 16 * 16] in AMXTile" in steady
    # and its 16 rows of 16 follow one another: one dense ramp, as Halide
    # prints a constant stride (a fill and an update then agree on it)
    assert steady.count("mm[ramp(0, 1, 256)]") == 2 and "x16(16)" not in steady
    # the edge tile's row 8 (max(2*16, 24) - 24) is 16 elements in, not 24
    assert "allocate mm.edge.1[int32 * 16 * 16] in AMXTile" in edge and "mm.edge.1[128] = 1" in edge
    assert "out[ramp(32, 1, 8)] = mm.edge.1[ramp(8, 1, 8)]" in edge and "produce mm.edge.1" in edge
    assert renamed == {"mm.edge.1": "mm"}
    assert lines == (1, 2, 3, 1, 2, 4)  # each copy of a store keeps its source line


def test_nothing_changes_where_no_likely_test_cuts_a_loop_or_the_ranges_are_too_big() -> None:
    untested = GUARDED.replace("(uint1)likely(xo <= 1)", "xo <= 1")
    assert specialize_edge_tiles(_stmt(untested), {"mm"}, (7,))[1:] == ({}, (7,))
    assert specialize_edge_tiles(_stmt(GUARDED), {"other"})[1] == {}
    huge = GUARDED.replace("for (xo, 0, 3)", "for (xo, 0, 100000)").replace("xo <= 1", "xo <= 99998")
    out, renamed, _ = specialize_edge_tiles(_stmt(huge), {"mm"})
    assert renamed == {"mm.edge.1": "mm"}  # the edge (one point) is exact, the steady range is not checked
    steady = print_ir(out).split("} else {")[0]
    assert "max(xo*16, 24)" in steady


def test_an_expression_is_replaced_only_where_it_is_affine_on_every_point() -> None:
    # xo in [0, 2] as one part: max(xo*16, 24) is 24, 24, 32 there, not affine
    whole = GUARDED.replace("(uint1)likely(xo <= 1)", "(uint1)likely(xo <= 2)")
    out, renamed, _ = specialize_edge_tiles(_stmt(whole), {"mm"})
    assert renamed == {} and "max(xo*16, 24)" in print_ir(out)


def test_block_loops_of_one_launch_stay_nested_and_the_versions_go_inside() -> None:
    text = GUARDED.replace("for (xo, 0, 3) {", "gpu_block<CUDA> (yo, 0, 2) {\ngpu_block<CUDA> (xo, 0, 3) {")
    text = text.replace("(uint1)likely(xo <= 1)", "(uint1)likely(xo <= 1) && (uint1)likely(yo <= 0)") + "}\n"
    out = print_ir(specialize_edge_tiles(_stmt(text), {"mm"})[0])
    assert out.startswith("gpu_block<CUDA> (yo, 0, 2) {\n gpu_block<CUDA> (xo, 0, 3) {\n  if (yo <= 0) {\n"
                          "   if (xo <= 1) {")


REAL_BIAS = "amx_order-ba_init-bias_col_tail-guard_rem-4"


@pytest.mark.slow
def test_a_bias_filled_at_a_row_stride_the_tail_sized_lowers_in_the_steady_version() -> None:
    """Real Halide (tools/gen_sweep.py): the bias fill's row stride is
    ``max(yo*16, 20) + -4``, 16 in the steady version; as a 2-D ramp it
    matched no statement's tile shape (a miss), as one dense ramp it is
    the matmul's tile, loaded from the bias repeating one row."""
    from hardboiled.pipeline.driver import compile_text
    from hardboiled.pipeline.options import CompileOptions
    from hardboiled.select.options import SelectionOptions

    source = (FIXTURES.parent / "sweep" / f"{REAL_BIAS}.stmt").read_bytes()
    result = compile_text(f"{REAL_BIAS}.stmt", source, CompileOptions.from_flags(
        selection=SelectionOptions(cache_dir=None), verify=True, emit=("ir",)))
    assert result.exit_code == 0, [d.render_text() for d in result.diagnostics]
    assert result.report["verification"]["ok"]
    assert re.search(r"mm\[ramp\(0, 1, 256\)\] = \(float32x256\)tile_load\(16, 64, bias, .*, 0\)",
                     result.outputs["ir"])
