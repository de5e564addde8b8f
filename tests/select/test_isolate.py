"""An update that does more with its product than accumulate it
(select/isolate.py): the product in a tile of its own, the accumulator in
scratch memory; run before and after in the interpreter. The real Halide
dumps (a scaled operand, which Halide's simplifier moves out of the
reduction) are regressions in test_sweep.py."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.ir.printer import print_ir
from hardboiled.select.extract import iter_stores
from hardboiled.select.isolate import demote, isolate_products
from hardboiled.select.reinsert import reinsert
from hardboiled.verify.interp import Interpreter, Pointer

SCALED = """allocate mm[float32 * 4 * 4] in AMXTile
mm[ramp(0, 1, 16)] = x16(0.000000f)
mm[ramp(0, 1, 16)] = mm[ramp(0, 1, 16)] + ((float32x16)vector_reduce_add(float32x128(A[ramp(x4(ramp(0, 1, 8)), x32(8), 4)])*float32x128(B[x4(ramp(ramp(0, 4, 8), x8(1), 4))]))*x16(3.000000f))
out[ramp(0, 1, 16)] = mm[ramp(0, 1, 16)]
"""
TYPES = {"A": ir.BFloat(16), "B": ir.BFloat(16), "out": ir.Float(32)}


def _isolated(text: str) -> tuple[ir.Stmt, ir.Stmt]:
    stmt = parse_input(text, "t.stmt", buffer_types=TYPES).ir
    assert isinstance(stmt, ir.Stmt)
    allocations = {n.name: n for n in ir.walk(stmt) if isinstance(n, ir.Allocate)}
    positions = set(range(len(list(iter_stores(stmt)))))
    result = isolate_products(stmt, positions, {"mm": "AMXTile"}, {"mm": "AMX"}, allocations)
    return stmt, demote(reinsert(stmt, result.replacements), result.demoted)


def _isolated_update(text: str, types: dict[str, ir.Type]) -> tuple[ir.Stmt, ir.Stmt]:
    """The program and its update (the second store) isolated."""
    stmt = parse_input(text, "t.stmt", buffer_types=types).ir
    assert isinstance(stmt, ir.Stmt)
    allocations = {n.name: n for n in ir.walk(stmt) if isinstance(n, ir.Allocate)}
    result = isolate_products(stmt, {1}, {"mm": "AMXTile"}, {"mm": "AMX"}, allocations)
    return stmt, demote(reinsert(stmt, result.replacements), result.demoted)


def _run(program: ir.Stmt, a: np.ndarray, b: np.ndarray, out: type, **scalars: int) -> np.ndarray:
    """``out`` (16 elements) after running ``program`` on A and B."""
    pointers = {"A": Pointer(a.copy(), 0, "A"), "B": Pointer(b.copy(), 0, "B"),
                "out": Pointer(np.zeros(16, out), 0, "out")}
    values = {name: np.array([value], np.int32) for name, value in scalars.items()}
    Interpreter(params={**pointers, **values}).run(program)
    return pointers["out"].array


def test_a_scaled_product_is_computed_in_a_tile_of_its_own() -> None:
    _, isolated = _isolated(SCALED)
    text = print_ir(isolated)
    assert "allocate mm[float32 * 4 * 4] in Stack" in text
    assert "allocate mm.product.0[float32 * 4 * 4] in AMXTile" in text
    assert "mm.product.0[ramp(0, 1, 16)] = (float32x16)vector_reduce_add(" in text
    assert "mm.product.0.spill[ramp(0, 1, 16)] = mm.product.0[ramp(0, 1, 16)]" in text
    assert "mm[ramp(0, 1, 16)] + (mm.product.0.spill[ramp(0, 1, 16)]*x16(3.000000f))" in text


def test_isolating_computes_the_same_values() -> None:
    stmt, isolated = _isolated(SCALED)
    rng = np.random.default_rng(2)
    a, b = (rng.integers(-3, 4, 32).astype(ml_dtypes.bfloat16) for _ in range(2))
    wide_a, wide_b = a.astype(np.float32).reshape(4, 8), b.astype(np.float32).reshape(8, 4)
    assert np.array_equal(_run(stmt, a, b, np.float32), 3 * (wide_a @ wide_b).reshape(-1))
    assert np.array_equal(_run(isolated, a, b, np.float32), _run(stmt, a, b, np.float32))


def test_a_plain_accumulation_is_left_to_the_tile_rules() -> None:
    plain = SCALED.replace(")*x16(3.000000f))", "))")
    stmt, isolated = _isolated(plain)
    assert isolated == stmt


NEGATED = """allocate mm[int32 * 4 * 4] in AMXTile
mm[ramp(0, 1, 16)] = x16(0)
mm[ramp(0, 1, 16)] = (int32x16)vector_reduce_add(int32x256(x256((int16)0) - int16x256(A[ramp(x4(ramp(0, 1, 16)), x64(16), 4)]))*int32x256(B[x4(ramp(ramp(0, 4, 16), x16(1), 4))])) + mm[ramp(0, 1, 16)]
out[ramp(0, 1, 16)] = mm[ramp(0, 1, 16)]
"""


def test_a_negated_int8_operand_negates_the_product_instead() -> None:
    """-A of an int8 A does not fit 8 bits (-(-128) = 128): the product of
    A itself runs on the tile, and its negation is added in memory. Run on
    values that include -128: the same sums exactly."""
    stmt, isolated = _isolated_update(NEGATED, {"A": ir.Int(8), "B": ir.Int(8), "out": ir.Int(32)})
    text = print_ir(isolated)
    assert "int32x256((int8x256)A[" in text and "int16x256" not in text  # A itself, widened once
    assert "(x16(0) - mm.product.0.spill[ramp(0, 1, 16)])" in text
    rng = np.random.default_rng(9)
    a = rng.integers(-128, 128, 64).astype(np.int8)
    a[:4] = -128
    b = rng.integers(-128, 128, 64).astype(np.int8)
    expected = -(a.reshape(4, 16).astype(np.int32) @ b.reshape(16, 4).astype(np.int32))
    before, after = _run(stmt, a, b, np.int32), _run(isolated, a, b, np.int32)
    assert np.array_equal(before, expected.reshape(-1)) and np.array_equal(after, before)


def test_a_negated_operand_every_row_shares_negates_the_product_too() -> None:
    # B negated once and broadcast to the four rows, x4(i32(0 - i16(B))), as
    # a transposed accumulator makes of a negated operand: the same sums
    shared = NEGATED.replace("int32x256(x256((int16)0) - int16x256(A[ramp(x4(ramp(0, 1, 16)), x64(16), 4)]))",
                             "int32x256(A[ramp(x4(ramp(0, 1, 16)), x64(16), 4)])").replace(
        "int32x256(B[x4(ramp(ramp(0, 4, 16), x16(1), 4))])",
        "x4(int32x64(x64((int16)0) - int16x64(B[ramp(ramp(0, 4, 16), x16(1), 4)])))")
    stmt, isolated = _isolated_update(shared, {"A": ir.Int(8), "B": ir.Int(8), "out": ir.Int(32)})
    text = print_ir(isolated)
    assert "x4(int32x64((int8x64)B[" in text and "int16x" not in text
    rng = np.random.default_rng(10)
    a, b = (rng.integers(-128, 128, 64).astype(np.int8) for _ in range(2))
    b[:4] = -128
    assert np.array_equal(_run(isolated, a, b, np.int32), _run(stmt, a, b, np.int32))


ZERO_POINTS = """allocate mm[int32 * 4 * 4] in AMXTile
mm[ramp(0, 1, 16)] = x16(0)
mm[ramp(0, 1, 16)] = (int32x16)vector_reduce_add((int32x256(A[ramp(x4(ramp(0, 1, 16)), x64(16), 4)]) - x256(za))*x4(int32x64(B[ramp(ramp(0, 4, 16), x16(1), 4)]) + x64(-5))) + mm[ramp(0, 1, 16)]
out[ramp(0, 1, 16)] = mm[ramp(0, 1, 16)]
"""


def test_zero_points_leave_the_product_of_the_operands_themselves() -> None:
    """(A - za) * (B - 5) of uint8 A and int8 B fits no 8-bit operand: the
    tile multiplies A and B, and the zero points' terms (row sums of A,
    column sums of B, K * za * 5) are added in memory. A run-time zero
    point (a scalar param) and a constant one, B's offset inside a vector
    repeated whole (x4(int32x64(B) + x64(-5))): the same sums exactly, on
    operands that include both ends of their ranges."""
    stmt, isolated = _isolated_update(ZERO_POINTS, {"A": ir.UInt(8), "B": ir.Int(8), "out": ir.Int(32)})
    (product,) = [s for s in iter_stores(isolated) if s.name == "mm.product.0"]
    assert print_ir(product.value) == ("(int32x16)vector_reduce_add(int32x256((uint8x256)A[ramp(x4(ramp(0, 1, 16)), "
                                       "x64(16), 4)])*x4(int32x64((int8x64)B[ramp(ramp(0, 4, 16), x16(1), 4)])))")
    rng = np.random.default_rng(11)
    a = rng.integers(0, 256, 64).astype(np.uint8)
    b = rng.integers(-128, 128, 64).astype(np.int8)
    a[:3], b[:3] = 255, -128
    for za in (0, 128, -7):
        expected = (a.reshape(4, 16).astype(np.int32) - za) @ (b.reshape(16, 4).astype(np.int32) - 5)
        before, after = _run(stmt, a, b, np.int32, za=za), _run(isolated, a, b, np.int32, za=za)
        assert np.array_equal(before, expected.reshape(-1)) and np.array_equal(after, before), za


SCALED_INSIDE = """allocate mm[int32 * 4 * 4] in AMXTile
mm[ramp(0, 1, 16)] = x16(0)
mm[ramp(0, 1, 16)] = mm[ramp(0, 1, 16)] + (int32x16)vector_reduce_add((int32x256(A[ramp(x4(ramp(0, 1, 16)), x64(16), 4)])*x256(3))*x4(int32x64(B[ramp(ramp(0, 4, 16), x16(1), 4)])))
out[ramp(0, 1, 16)] = mm[ramp(0, 1, 16)]
"""


def test_a_factor_inside_the_sum_moves_out_of_the_product() -> None:
    """sum(A * 3 * B), as a scalar update re-vectorized reads: the tile
    multiplies A by B, and the 3 scales the product in memory. Exact in
    integers, including sums that wrap."""
    stmt, isolated = _isolated_update(SCALED_INSIDE, {"A": ir.Int(8), "B": ir.Int(8), "out": ir.Int(32)})
    (product,) = [s for s in iter_stores(isolated) if s.name == "mm.product.0"]
    assert "x256(3)" not in print_ir(product.value) and "mm.product.0.spill[ramp(0, 1, 16)]*x16(3)" in print_ir(isolated)
    rng = np.random.default_rng(13)
    a, b = (rng.integers(-128, 128, 64).astype(np.int8) for _ in range(2))
    expected = 3 * (a.reshape(4, 16).astype(np.int32) @ b.reshape(16, 4).astype(np.int32))
    before, after = _run(stmt, a, b, np.int32), _run(isolated, a, b, np.int32)
    assert np.array_equal(before, expected.reshape(-1)) and np.array_equal(after, before)


# A partial tile: the update writes 4 x 4 of a 6-wide accumulator (a guard
# left it scalar, and re-vectorizing wrote rows 6 apart).
PARTIAL = """allocate mm[float32 * 6 * 4] in AMXTile
mm[ramp(0, 1, 24)] = x24(0.000000f)
mm[ramp(ramp(2, 1, 4), x4(6), 4)] = mm[ramp(ramp(2, 1, 4), x4(6), 4)] + ((float32x16)vector_reduce_add(float32x128(A[ramp(x4(ramp(0, 1, 8)), x32(8), 4)])*float32x128(B[x4(ramp(ramp(0, 4, 8), x8(1), 4))]))*x16(3.000000f))
out[ramp(0, 1, 16)] = mm[ramp(ramp(2, 1, 4), x4(6), 4)]
"""


def test_the_product_of_a_partial_tile_has_the_rows_the_update_writes() -> None:
    """The product buffer is as wide as the rows the update writes (4), not
    as the accumulator (6, which 16 lanes do not fill): seed 8128's guarded
    Tensor Core updates with a scaled operand missed so."""
    stmt, isolated = _isolated(PARTIAL)
    assert "allocate mm.product.0[float32 * 4 * 4] in AMXTile" in print_ir(isolated)
    rng = np.random.default_rng(3)
    a, b = (rng.integers(-3, 4, 32).astype(ml_dtypes.bfloat16) for _ in range(2))
    assert np.array_equal(_run(isolated, a, b, np.float32), _run(stmt, a, b, np.float32))
