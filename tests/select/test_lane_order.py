"""Accelerator accesses put in storage order (select/lane_order.py): the
swap of a statement's two lane levels keeps every lane's value, checked
lane by lane on constant forms and by running statements before and after
in the interpreter; the real Halide dumps that need it (transposed
accumulators) are regressions in test_sweep.py."""

from __future__ import annotations

import numpy as np
import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.ir.printer import print_ir
from hardboiled.select.lane_order import in_storage_order, order_accelerator_lanes, transposed
from hardboiled.select.spill import constant_lanes
from hardboiled.verify.interp import Interpreter, Pointer


def _expr(text: str, lanes: int) -> ir.Expr:
    stmt = parse_input(f"out[ramp(0, 1, {lanes})] = {text}\n", "e.stmt").ir
    assert isinstance(stmt, ir.Store)
    return stmt.value


@pytest.mark.parametrize("text, rows, cols", [
    ("ramp(0, 1, 12)", 3, 4),                            # one flat ramp
    ("ramp(ramp(5, 7, 4), x4(2), 3)", 3, 4),            # a block read column by column
    ("ramp(x4(9), x4(3), 3)", 3, 4),                     # rows, each one value
    ("x3(ramp(1, 2, 4))", 3, 4),                         # one row repeated
    ("ramp(ramp(0, 7, 4), x4(1), 3) + x3(ramp(100, 10, 4))", 3, 4),
    ("x3(ramp(0, 1, 4))*ramp(x4(2), x4(5), 3) - x12(4)", 3, 4),
])
def test_transposing_swaps_the_two_lane_levels(text: str, rows: int, cols: int) -> None:
    e = _expr(text, rows * cols)
    before = constant_lanes(e)
    after = transposed(e, rows, cols)
    assert before is not None and after is not None
    got = constant_lanes(after)
    assert got is not None
    expected = [before[r * cols + c] for c in range(cols) for r in range(rows)]
    assert list(got) == expected


def test_a_reduction_across_lanes_is_not_transposed() -> None:
    e = _expr("(int32x4)vector_reduce_add(ramp(0, 1, 8))", 4)
    assert transposed(e, 2, 2) is None


STATEMENTS = """allocate mm[float32 * 8 * 4] in AMXTile
mm[ramp(ramp(0, 8, 4), x4(1), 8)] = x32(0.000000f)
mm[ramp(ramp(0, 8, 4), x4(1), 8)] = mm[ramp(ramp(0, 8, 4), x4(1), 8)] + (float32x32)A[ramp(ramp(0, 1, 4), x4(4), 8)]
out[ramp(ramp(0, 1, 4), x4(4), 8)] = max(mm[ramp(ramp(0, 8, 4), x4(1), 8)], x32(0.500000f))
"""


def _run(stmt: ir.Stmt, a: np.ndarray) -> np.ndarray:
    out = np.zeros(32, np.float32)
    mm = np.zeros(32, np.float32)
    pointers = {"A": Pointer(a.copy(), 0, "A"), "out": Pointer(out, 0, "out"), "mm": Pointer(mm, 0, "mm")}
    Interpreter(params=pointers).run(stmt)
    return pointers["out"].array


def test_fills_updates_and_copies_walk_the_accumulator_in_order_and_compute_the_same() -> None:
    stmt = parse_input(STATEMENTS, "t.stmt", buffer_types={"A": ir.Float(32), "mm": ir.Float(32),
                                                            "out": ir.Float(32)}).ir
    ordered = order_accelerator_lanes(stmt, {"mm"})
    text = print_ir(ordered)
    # the accumulator is walked densely everywhere; the output column by column
    assert "mm[ramp(ramp(" not in text and text.count("mm[ramp(0, 1, 32)]") == 4
    assert "out[ramp(ramp(0, 4, 8), x8(1), 4)]" in text
    a = np.random.default_rng(3).standard_normal(32).astype(np.float32)
    assert np.array_equal(_run(stmt, a), _run(ordered, a))


def test_a_block_whose_rows_overlap_keeps_its_order() -> None:
    # lanes r + 2c with 4 rows: lane (2, 0) and lane (0, 1) are one element
    stmt = parse_input("mm[ramp(ramp(0, 2, 2), x2(1), 4)] = x8(0.000000f)\n", "t.stmt").ir
    assert isinstance(stmt, ir.Store)
    assert in_storage_order(stmt, {"mm"}) is stmt
