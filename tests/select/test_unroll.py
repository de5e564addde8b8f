"""Loops whose variable picks a tile of an accelerator buffer, unrolled
(select/unroll.py): the copies compute what the loop computed."""

from __future__ import annotations

import numpy as np

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.ir.printer import print_ir
from hardboiled.select.unroll import MAX_TRIPS, unroll_tile_loops
from hardboiled.verify.interp import Interpreter, Pointer

LOOP = """allocate mm[float32 * 4 * 3] in AMXTile
mm[ramp(0, 1, 12)] = x12(1.000000f)
for (cx, 0, 3) {
 for (r, 0, 2) {
  mm[ramp(cx*4, 1, 4)] = mm[ramp(cx*4, 1, 4)] + A[ramp((cx*8) + (r*4), 1, 4)]
 }
}
out[ramp(0, 1, 12)] = mm[ramp(0, 1, 12)]
"""


def _parse(text: str) -> ir.Stmt:
    stmt = parse_input(text, "t.stmt", buffer_types={"A": ir.Float(32), "out": ir.Float(32)}).ir
    assert isinstance(stmt, ir.Stmt)
    return stmt


def test_a_loop_over_tiles_is_unrolled_with_constant_indices() -> None:
    stmt = _parse(LOOP)
    text = print_ir(unroll_tile_loops(stmt, {"mm"}))
    assert "for (cx" not in text and "for (r" in text  # the reduction loop indexes no tile: it stays
    assert text.count("mm[ramp(8, 1, 4)] = mm[ramp(8, 1, 4)] + (float32x4)A[ramp(16 + (r*4), 1, 4)]") == 1

    def run(program: ir.Stmt) -> np.ndarray:
        pointers = {"A": Pointer(np.arange(24, dtype=np.float32), 0, "A"),
                    "out": Pointer(np.zeros(12, np.float32), 0, "out")}
        Interpreter(params=pointers).run(program)
        return pointers["out"].array

    assert np.array_equal(run(unroll_tile_loops(stmt, {"mm"})), run(stmt))


def test_a_long_loop_or_one_over_other_buffers_stays() -> None:
    stmt = _parse(LOOP)
    assert unroll_tile_loops(stmt, {"other"}) == stmt
    long = _parse(LOOP.replace("mm[float32 * 4 * 3]", f"mm[float32 * 4 * {MAX_TRIPS + 1}]")
                  .replace("for (cx, 0, 3)", f"for (cx, 0, {MAX_TRIPS + 1})"))
    assert "for (cx" in print_ir(unroll_tile_loops(long, {"mm"}))


def test_the_loops_of_a_scalar_update_are_left_for_revectorizing() -> None:
    scalar = _parse("""allocate mm[float32 * 4 * 3] in AMXTile
for (y, 0, 3) {
 for (x, 0, 4) {
  mm[(y*4) + x] = mm[(y*4) + x] + A[(y*4) + x]
 }
}
""")
    assert unroll_tile_loops(scalar, {"mm"}) == scalar
