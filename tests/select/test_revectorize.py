"""Scalar loop nests over accelerator memory put back as vector statements
(select/revectorize.py), on small hand-written nests; the real Halide dumps
that need it (K remainders, transposed accumulators, tiles side by side)
are regressions in test_sweep.py."""

from __future__ import annotations

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.ir.printer import print_ir
from hardboiled.select.revectorize import relayout_blocked_tiles, revectorize_scalar_updates

UPDATE = """for (x, 0, 16) {
 for (y, 0, 16) {
  for (r, 0, 32) {
   if (r <= 15) {
    let t = float32(A[((x*48) + r) + 32])*float32(B[(r*16) + y])
    mm[(x*16) + y] = mm[(x*16) + y] + t
   }
  }
 }
}
"""


def _stmt(text: str) -> ir.Stmt:
    return parse_input(text, "nest.stmt", buffer_types={"A": ir.BFloat(16), "B": ir.BFloat(16),
                                                        "mm": ir.Float(32), "bias": ir.Float(32)}).ir


def test_a_guarded_reduction_nest_becomes_one_vector_statement() -> None:
    out = print_ir(revectorize_scalar_updates(_stmt(UPDATE), {"mm"}))
    assert "for (" not in out and "if (" not in out
    # 16 x 16 outputs stored densely, 16 products each (the guard keeps r <= 15)
    assert out.startswith("mm[ramp(0, 1, 256)] = (float32x256)vector_reduce_add(")
    assert "A[ramp(x16(ramp(32, 1, 16)), x256(48), 16)]" in out  # A: 16 rows of 16 products, rows 48 apart
    assert "B[x16(ramp(ramp(0, 16, 16), x16(1), 16))]" in out  # B: the same 16 x 16 block for every row
    assert out.rstrip().endswith("mm[ramp(0, 1, 256)]")


def test_a_factor_the_reduction_does_not_vary_is_taken_out_of_the_sum() -> None:
    # Halide's simplifier writes a scaled operand's update as (A * B) * 3;
    # the sum of it is sum(A * B) * 3, so the product under the sum is plain
    scaled = UPDATE.replace("+ t\n", "+ (t*3.000000f)\n")
    out = print_ir(revectorize_scalar_updates(_stmt(scaled), {"mm"}))
    assert out.startswith("mm[ramp(0, 1, 256)] = ((float32x256)vector_reduce_add(float32x4096((bfloat16x4096)A[")
    assert "*x256(3.000000f)) + (float32x256)mm[ramp(0, 1, 256)]" in out
    # a factor that varies with the stored element is one lane per output
    by_row = print_ir(revectorize_scalar_updates(_stmt(UPDATE.replace("+ t\n", "+ (t*bias[x])\n")), {"mm"}))
    assert "))*(float32x256)bias[ramp(x16(0), x16(1), 16)]) + " in by_row  # bias[x] for lane x*16 + y
    # one that varies with the reduction stays under the sum
    by_k = print_ir(revectorize_scalar_updates(_stmt(UPDATE.replace("+ t\n", "+ (t*bias[r])\n")), {"mm"}))
    assert "*(float32x4096)bias[x16(x16(ramp(0, 1, 16)))]) + " in by_k  # 4096 lanes: under the sum


def test_nests_that_have_no_exact_vector_form_are_left_alone() -> None:
    for text in (
        UPDATE.replace("r <= 15", "r <= n"),  # a guard that is no constant bound
        UPDATE.replace("mm[(x*16) + y] = mm[(x*16) + y] + t", "mm[(x*16) + (y*y)] = mm[(x*16) + (y*y)] + t"),  # not linear
        UPDATE.replace("mm[(x*16) + y] = mm[(x*16) + y] + t", "mm[(x*16) + y] = t"),  # last write wins
        UPDATE.replace("+ t\n", "+ mm[y]\n"),  # another element of the accumulator
    ):
        stmt = _stmt(text)
        assert revectorize_scalar_updates(stmt, {"mm"}) == stmt, text
    assert revectorize_scalar_updates(_stmt(UPDATE), {"other"}) == _stmt(UPDATE)


def test_rows_whose_lanes_would_collide_stay_a_loop_around_the_vector_statement() -> None:
    # rows 8 apart, 16 wide: rows overlap, so only y and r become lanes and x stays serial
    out = print_ir(revectorize_scalar_updates(
        _stmt(UPDATE.replace("mm[(x*16) + y] = mm[(x*16) + y] + t", "mm[(x*8) + y] = mm[(x*8) + y] + t")), {"mm"}))
    assert out.startswith("for (x, 0, 16) {") and "for (y" not in out and "for (r" not in out
    assert "mm[ramp(x*8, 1, 16)] = (float32x16)vector_reduce_add(" in out


def test_a_constant_stored_transposed_is_stored_in_order_but_a_vector_is_not() -> None:
    fill = _stmt("mm[ramp(ramp(0, 16, 16), x16(1), 16)] = x256(0.000000f)\n")
    assert print_ir(revectorize_scalar_updates(fill, {"mm"})).strip() == "mm[ramp(0, 1, 256)] = x256(0.000000f)"
    # x16(bias[...]) differs from lane to lane: its order matters
    bias = _stmt("mm[ramp(ramp(0, 16, 16), x16(1), 16)] = x16(bias[ramp(0, 1, 16)])\n")
    assert revectorize_scalar_updates(bias, {"mm"}) == bias


def test_tiles_side_by_side_are_renumbered_only_when_every_access_is_a_block() -> None:
    text = ("allocate mm[float32 * 32 * 16] in AMXTile\n"
            "mm[ramp(ramp(0, 1, 16), x16(32), 16)] = x256(0.000000f)\n"
            "mm[ramp(ramp(16, 1, 16), x16(32), 16)] = x256(1.000000f)\n"
            "out[ramp(0, 1, 256)] = mm[ramp(ramp(16, 1, 16), x16(32), 16)]\n")
    out = print_ir(relayout_blocked_tiles(_stmt(text), {"mm"}))
    assert "mm[ramp(0, 1, 256)] = x256(0.000000f)" in out and "mm[ramp(256, 1, 256)] = x256(1.000000f)" in out
    assert "out[ramp(0, 1, 256)] = mm[ramp(256, 1, 256)]" in out
    # blocks one after the other: the buffer is one block (16 columns) wide
    # now, which is what cutting a wider block into tiles reads
    assert "allocate mm[float32 * 16 * 32] in AMXTile" in out
    mixed = _stmt(text.replace("out[ramp(0, 1, 256)] = mm[ramp(ramp(16, 1, 16), x16(32), 16)]",
                               "out[ramp(0, 1, 512)] = mm[ramp(0, 1, 512)]"))
    assert relayout_blocked_tiles(mixed, {"mm"}) == mixed


SPLIT = """for (cx, 0, 4) {
 for (ro, 0, 2) {
  for (xi, 0, 4) {
   for (y, 0, 16) {
    for (ri, 0, 32) {
     let t8 = (y*16) + ((cx*4) + xi)
     let t9 = float32(A[(((cx*4) + xi)*64) + ((ro*32) + ri)])*float32(B[(((ro*32) + ri)*32) + y])
     mm[t8] = mm[t8] + t9
    }
   }
  }
 }
}
"""


def test_a_dimension_split_in_two_loops_is_one_lane_level() -> None:
    # Columns as cx * 4 + xi and the reduction as ro * 32 + ri (Halide's
    # names for a tile split and a K chunk): every access walks each pair
    # as one loop, so each matrix dimension becomes one level of lanes,
    # which is what the rules read; the store's index is a let.
    out = print_ir(revectorize_scalar_updates(_stmt(SPLIT), {"mm"}))
    assert "for (" not in out
    assert out.startswith("mm[ramp(0, 1, 256)] = (float32x256)vector_reduce_add(")
    assert "A[x16(ramp(ramp(0, 1, 64), x64(64), 16))]" in out  # 16 columns x 64 products, 64 apart
    assert "B[ramp(x16(ramp(0, 32, 64)), x1024(1), 16)]" in out


def test_loops_that_some_access_walks_apart_stay_two_levels() -> None:
    # B reads the reduction as ro * 16 + ri (ri 32 long): ro and ri overlap
    # there, so they are not one loop of 64
    text = SPLIT.replace("B[(((ro*32) + ri)*32) + y]", "B[(((ro*16) + ri)*32) + y]")
    out = print_ir(revectorize_scalar_updates(_stmt(text), {"mm"}))
    assert out.startswith("mm[ramp(0, 1, 256)] = (float32x256)vector_reduce_add(")
    assert "x32(32), 2)" in out  # the reduction keeps its two levels (32 products, 2 chunks)
