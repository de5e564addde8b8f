"""Cutting an accumulator into tiles (select/partition.py) where its
statements start at rows that are not multiples of their height: a
GuardWithIf edge copy fills rows 0..15 and updates rows 8..23 (sweep
variant amx-s8675-0297, whose update once landed in the fill's tile)."""

from __future__ import annotations

import numpy as np
import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.ir.printer import print_ir
from hardboiled.select.partition import partition_accumulators
from hardboiled.select.reinsert import reinsert
from hardboiled.verify.interp import Interpreter, Pointer

from ..conftest import FIXTURES

OVERLAPPING = """allocate mm[float32 * 16 * 24] in AMXTile
mm[ramp(0, 1, 256)] = x256(0.000000f)
mm[ramp(128, 1, 256)] = x256(1.000000f)
out[ramp(0, 1, 256)] = mm[ramp(0, 1, 256)]
"""


def _run(program: ir.Stmt) -> np.ndarray:
    pointers = {"out": Pointer(np.zeros(256, np.float32), 0, "out")}
    Interpreter(params=pointers).run(program)
    return pointers["out"].array


def test_blocks_starting_between_tiles_are_cut_into_tiles_as_tall_as_their_starts_allow() -> None:
    stmt = parse_input(OVERLAPPING, "edge.stmt", buffer_types={"out": ir.Float(32)}).ir
    assert isinstance(stmt, ir.Stmt)
    pieces = partition_accumulators(stmt, {"mm": "AMX"})
    cut = reinsert(stmt, pieces)
    # 8-row tiles: the second fill covers tiles 1 and 2, not the first one's
    text = print_ir(cut)
    assert "mm[ramp(128, 1, 128)] = x128(1.000000f)" in text and "mm[ramp(256, 1, 128)] = x128(1.000000f)" in text
    expected = np.repeat([0.0, 1.0], 128).astype(np.float32)
    assert np.array_equal(_run(stmt), expected) and np.array_equal(_run(cut), expected)


EDGE_VARIANT = "amx_b-vnni_order-ba_K-80_tiles-1x4_init-cbuf_form-two_acc_acc_layout-xy_tail-guard_rem-8"


@pytest.mark.slow
def test_guard_with_if_edge_copies_that_fill_and_update_different_rows_verify() -> None:
    """The real Halide dump of such edge copies (tools/gen_sweep.py): the
    rewrite verifies (it once computed a wrong corner: exit 5)."""
    from hardboiled.pipeline.driver import compile_text
    from hardboiled.pipeline.options import CompileOptions
    from hardboiled.select.options import SelectionOptions

    source = (FIXTURES.parent / "sweep" / f"{EDGE_VARIANT}.stmt").read_bytes()
    result = compile_text(f"{EDGE_VARIANT}.stmt", source,
                          CompileOptions.from_flags(selection=SelectionOptions(cache_dir=None), verify=True))
    assert result.exit_code == 0, [d.render_text() for d in result.diagnostics]
    assert result.report["verification"]["ok"]
    assert any(s["lowered"] for s in result.report["statements"])
