"""The copy an accumulator's copy-out reads (select/spill.py): the region it
copies, widened to whole accumulation stores, ends at the allocation's end
and is never wider than a vector. (A fuzzed dump, an allocation of 2^31
rows, once made a copy of 2^35 lanes that partition cut tile by tile.)"""

from __future__ import annotations

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.select.extract import iter_stores
from hardboiled.select.spill import spill_accelerator_reads


def _spilled(rows: str, copy_out: str) -> ir.Stmt:
    text = (f"allocate mm[float32 * 16 * {rows}] in AMXTile\n"
            "mm[ramp(0, 1, 512)] = x512(0.000000f)\n"
            f"{copy_out}\n")
    stmt = parse_input(text, "t.stmt", buffer_types={"out": ir.Float(32)}).ir
    assert isinstance(stmt, ir.Stmt)
    allocations = {n.name: n for n in ir.walk(stmt) if isinstance(n, ir.Allocate)}
    replacements = spill_accelerator_reads(stmt, {1}, {"mm": "AMX"}, allocations)
    return replacements[1]


def _copy(stmt: ir.Stmt) -> ir.Allocate:
    copy = next(n for n in ir.walk(stmt) if isinstance(n, ir.Allocate))
    assert copy.name == "mm.spill.0"
    return copy


def test_a_gather_copies_whole_accumulation_stores_up_to_the_allocation_s_end() -> None:
    # 40 rows of 16 (640 elements) stored 512 at a time: the copy-out of the
    # first 32 rows copies them, not all 40 rows.
    stmt = _spilled("40", "out[ramp(0, 1, 512)] = mm[ramp(0, 1, 512)]")
    assert _copy(stmt).constant_elements == 512
    fill, read = list(iter_stores(stmt))
    assert isinstance(fill.value, ir.Load) and fill.value.index == ir.Ramp(ir.IntImm(0), ir.IntImm(1), 512)
    # The tail rows 32..39, read from a store of 512 that would run past
    # the allocation, copy up to its end.
    tail = _spilled("40", "out[ramp(0, 1, 128)] = mm[ramp(512, 1, 128)]")
    assert _copy(tail).constant_elements == 128


def test_no_copy_is_wider_than_a_vector_halide_prints() -> None:
    stmt = _spilled("2147483647", "out[ramp(0, 1, 512)] = mm[ramp(0, 1, 512)]")
    assert _copy(stmt).constant_elements == 512
    # An index that is not constant copies the lanes it reads, in its order,
    # where the whole allocation is more than a vector.
    symbolic = _spilled("2147483647", "out[ramp(0, 1, 16)] = mm[ramp(t*16, 1, 16)]")
    assert _copy(symbolic).constant_elements == 16
    assert all(n.type.lanes <= ir.MAX_LANES for n in ir.walk(symbolic) if isinstance(n, ir.Expr))
