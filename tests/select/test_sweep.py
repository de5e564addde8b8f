"""Selection generality on the schedule sweep (tests/fixtures/sweep, real
Halide 21 dumps made by tools/gen_sweep.py; bench/sweep.py runs all of them).

Each class of schedule that used to miss has a regression dump here, and
each is lowered, verified in the reference interpreter, and built: AMX C is
run (natively or through the emulation header), WMMA CUDA is compiled to
PTX where nvcc is installed. The variants that still miss must say why.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.ir.printer import print_ir
from hardboiled.pipeline.driver import compile_text
from hardboiled.pipeline.options import CompileOptions
from hardboiled.select import partition
from hardboiled.select.lane_slicing import LaneSlicer
from hardboiled.select.partition import partition_accumulators
from hardboiled.select.selector import SelectionOptions

from .lanes import index_lanes

SWEEP = Path(__file__).resolve().parent.parent / "fixtures" / "sweep"
HAS_NVCC = shutil.which("nvcc") is not None

REGRESSIONS = {
    # class 1: a single dense tile, stored through one flat ramp(base, 1, 256)
    "dense single tile": "amx_form-single",
    # class 2: a non-zero initial value
    "init from C": "amx_init-cbuf",
    "init bias down the rows": "amx_init-bias_row",
    "init constant": "amx_init-const",
    # class 3: several instructions for one statement
    "K = 64 bf16 in one statement": "amx_chunk-2x",
    "32 x 32 AMX accumulator": "amx_M-32_N-32",
    "32 x 32 with C += A B": "amx_M-32_N-32_init-cbuf",
    "WMMA K chunk of 32": "wmma_chunk-32",
    "WMMA K chunk of 8, padded to 16": "wmma_chunk-8",
    "32 x 32 WMMA accumulator": "wmma_tiles-2x2",
    # class 4: WMMA integer types, and the int8 leading dimension
    "WMMA int8 m32n8k16": "wmma_types-i8toi32_M-32_N-8",
    "WMMA uint8 m8n32k16": "wmma_types-u8toi32_M-8_N-32",
    "WMMA float64 m8n8k4": "wmma_types-f64tof64",
    # class 5: AMX epilogues that compute with the accumulator
    "AMX cast epilogue": "amx_epilogue-cast",
    "AMX ReLU on 32 x 32": "amx_M-32_N-32_epilogue-relu",
    # class 6: B * A
    "operand order B A": "amx_order-ba",
    # class 7: transposed operands
    "N x K weights": "amx_b-nk",
    "int8 N x K weights": "amx_types-i8i8_b-nk",
    "column-major A": "amx_a-col",
    # class 8: WMMA epilogue, bias down the rows, widening through int16
    "WMMA bias epilogue": "wmma_epilogue-bias",
    "WMMA cast epilogue": "wmma_epilogue-cast",
    "WMMA bias down the rows": "wmma_init-bias_row",
    "WMMA i8 -> i16 -> i32": "wmma_types-i8toi32_widen-i16",
    # class 11 of the generality issue: an epilogue whose call (exp) hides
    # the accumulator from the rules verified but did not emit; it spills
    "AMX sigmoid epilogue": "amx_epilogue-sigmoid",
    "AMX SiLU epilogue (upstream Halide refuses it)": "amx_epilogue-silu",
    "WMMA sigmoid epilogue": "wmma_epilogue-sigmoid",
    "WMMA SiLU epilogue": "wmma_epilogue-silu",
    # symbolic sizes: lets between the block loops, sizes the asserts accept
    "WMMA symbolic output size": "wmma_sizes-output",
    "WMMA symbolic strides": "wmma_sizes-symbolic",
    # generality by mechanism: updates Halide left scalar, vectorized again
    # (revectorize.py), computed operands (operand materialization), tiles
    # side by side in one accumulator (relayout_blocked_tiles)
    "AMX K remainder (K = 48 in chunks of 32)": "amx_K-48",
    "AMX K remainder, int8 (K = 40)": "amx_types-u8i8_K-40",
    "WMMA K remainder of 8, padded": "wmma_K-40",
    "WMMA int8 K remainder of 8": "wmma_types-i8toi32_K-24",
    "AMX transposed accumulator": "amx_acc_layout-xy",
    "AMX transposed int8 accumulator": "amx_types-i8i8_acc_layout-xy",
    "WMMA transposed accumulator": "wmma_acc_layout-yx",
    "AMX negated operand": "amx_operand-neg",
    "WMMA negated operand": "wmma_operand-neg",
    "AMX boundary condition on an operand": "amx_operand-boundary",
    "WMMA boundary condition on an operand": "wmma_operand-boundary",
    # a GuardWithIf tail leaves the update scalar, and Halide's simplifier
    # moves the operand's scale out of the product: (A * B) * 3 per element,
    # summed as sum(A * B) * 3 as Halide's own vectorizer writes it
    "WMMA GuardWithIf with a scaled operand": "wmma_operand-scale_n-40_tail-guard",
    # a bias filled one 16-column block at a time into a transposed
    # accumulator two tiles wide, updated whole (K = 64): the column blocks
    # are cut to the same tile slots as the update (partition.py)
    "AMX bias by column blocks, transposed, two tiles wide": "amx_order-ba_tiles-1x2_init-bias_row_unroll-none_acc_layout-xy",
    # K = 80 in chunks of 32 under likely(rro <= 1), the last 16 in the else
    # branch: the B copy one `if` uses was filled above it, for every rro,
    # and read B past its end (verification caught it: exit 5)
    "AMX K remainder under likely() across four tiles": "amx_K-80_tiles-1x4_loops-k_outer_unroll-none_batch",
    # the bias fills 8-column blocks of 16-column tiles: the tiles are cut
    # as wide as the blocks (they stopped partitioning: "no layout matched")
    "AMX bias by column blocks narrower than a tile": "amx_order-ba_M-8_tiles-1x4_init-bias_col_unroll-none_acc_layout-xy",
    # zero points isolate the products of an accumulator the selector has
    # laid out again (8-row blocked tiles): the product buffers took the
    # layout from before, 4 rows of 32, and no K chunk padding fitted them
    "AMX zero points on relaid-out tiles":
        "amx_types-u8u8_M-8_K-10_tiles-1x4_epilogue-bias_operand-zero_point_param_acc_layout-xy",
    # a rolled loop over two tiles around an update Halide left scalar: a
    # vector only once revectorized, and then unrolled (unroll.py runs again)
    "AMX rolled tile loop around a scalar update":
        "amx_types-i8u8_order-ba_K-256_tiles-1x2_init-bias_row_loops-swap_tiles_unroll-none_acc_layout-xy",
    # a scaled column-major A whose K chunk of 64 is cut in two: each half of
    # K is two groups of 16 (lane_slicing.refined), and B is copied at both
    # levels into its VNNI temporary (amx_layouts.egg)
    "AMX K chunk of a split column-major operand":
        "amx_a-col_b-vnni_N-32_chunk-half_tiles-1x2_unroll-none_operand-scale_acc_layout-xy_tail-shift",
    # a negated operand isolates the product of each of four tiles in a
    # buffer of its own, allocated one after the other: they share tile
    # registers (legalize/amx_plan.py), where they counted 8 + 4
    "AMX isolated products share registers": "amx_types-u8i8_K-48_chunk-half_tiles-1x4_unroll-k_operand-neg",
    # C filled one tile of columns at a time into a transposed accumulator,
    # and the update of each block in place: the update's own read of its
    # block moves to the tile's slot with the write (lane_slicing.py)
    "AMX block updated in place, transposed":
        "amx_a-col_order-ba_tiles-1x4_init-cbuf_epilogue-silu_loops-k_outer_acc_layout-xy",
    "AMX 2 x 2 tiles in one accumulator": "amx_tiles-2x2",
    # float32 operands as high and low tf32 parts, three MMAs each (3xTF32)
    "WMMA float32 m16n16k8": "wmma_types-tf32tof32",
    "WMMA float32 2 x 2 fragments with a ReLU": "wmma_types-tf32tof32_tiles-2x2_epilogue-relu",
    "WMMA float32 column-major A, bias, symbolic sizes": "wmma_types-tf32tof32_a-col_init-bias_row_sizes-symbolic",
    "WMMA float32 K remainder with a SiLU": "wmma_types-tf32tof32_K-40_chunk-32_epilogue-silu",
    "AMX 2 x 1 tiles, K outermost": "amx_tiles-2x1_loops-k_outer",
    # tiles of fewer than 16 rows or 16 columns side by side: each packs
    # closer than a register's 1 KiB, which the C once refused after verifying
    "AMX two 16 x 8 tiles side by side": "amx_N-8_tiles-1x2",
    "AMX four 8 x 16 int8 tiles": "amx_types-u8i8_b-vnni_M-8_tiles-1x4",
    # each tile's bias read through `let mm.s0.x.xi.base`, bound again before
    # every tile: one shared temporary filled under the first binding gave
    # every tile the first tile's bias (caught by verification as a mismatch)
    "AMX bias down the rows of four 16 x 8 tiles": "amx_N-8_tiles-1x4_init-bias_row",
    "AMX int8 bias down the rows of four 16 x 8 tiles": "amx_types-u8i8_b-vnni_N-8_tiles-1x4_init-bias_row",
    # an epilogue reading a transposed accumulator: the spill copies whole
    # tiles in storage order (what a tile or fragment store writes), and the
    # epilogue reads the copy at its own transposed index
    "AMX cast of a transposed 16 x 4 accumulator": "amx_order-ba_M-4_epilogue-cast_form-single_acc_layout-xy",
    "AMX int8 ReLU of a transposed accumulator": "amx_types-u8i8_epilogue-relu_acc_layout-xy",
    "WMMA ReLU of a transposed accumulator": "wmma_epilogue-relu_acc_layout-yx",
    "WMMA bias of a transposed m32n8 accumulator": "wmma_M-32_N-8_epilogue-bias_acc_layout-yx",
    # tiles side by side in a transposed accumulator, filled and copied out
    # column by column: lane_order.py walks them in storage order (upstream
    # Halide refuses both AMX ones)
    "AMX two transposed tiles with partial edges": "amx_tiles-1x2_loops-swap_tiles_acc_layout-xy_rem-8",
    "AMX four transposed int8 8 x 16 tiles": "amx_types-i8i8_M-8_tiles-1x4_acc_layout-xy",
    "WMMA 2 x 2 transposed fragments with ReLU": "wmma_K-16_tiles-2x2_epilogue-relu_acc_layout-yx",
    "WMMA two transposed bf16 fragments": "wmma_types-bf16tof32_tiles-1x2_acc_layout-yx",
    # reductions no multiple of a fragment's K, and operands Tensor Cores
    # cannot read in place: chunks of 16 and a zero-padded remainder, computed
    # and gathered operands staged in shared memory (partition.py)
    "WMMA reduction of 40 in one statement": "wmma_K-40_chunk-64",
    "WMMA m32n8 reduction of 24, bias": "wmma_M-32_N-8_K-24_chunk-32_epilogue-bias",
    "WMMA negated operand in chunks of 8": "wmma_chunk-8_operand-neg",
    "WMMA boundary condition of a symbolic size": "wmma_tiles-1x2_sizes-output_operand-boundary",
    # a scaled operand, which Halide moves out of the reduction (mm + sum(A * B) * 3):
    # the product in a tile of its own, the accumulator in scratch memory (isolate.py)
    "AMX scaled product": "amx_operand-scale",
    "WMMA scaled product": "wmma_operand-scale",
    "WMMA int8 scaled product": "wmma_types-i8toi32_operand-scale",
    # the loop over an accumulator's tiles left rolled: a loop variable cannot
    # name a tile register, so it is unrolled (unroll.py)
    "AMX two tiles, rolled loop": "amx_tiles-1x2_unroll-none",
    "AMX four int8 8 x 16 tiles, rolled loop": "amx_types-u8i8_M-8_tiles-1x4_unroll-none",
    # a negated int8 operand does not fit 8 bits: the product is negated instead (isolate.py)
    "AMX negated int8 operand": "amx_types-i8i8_operand-neg",
    # zero points subtracted inline no longer fit 8 bits: the tile multiplies
    # the operands themselves, their sums are added beside it (isolate.py);
    # run-time zero points are scalar params of the generated function
    "AMX u8 x i8 zero points": "amx_types-u8i8_b-vnni_operand-zero_point",
    "AMX int8 run-time zero points, two tiles": "amx_types-i8i8_tiles-1x2_operand-zero_point_param",
    "AMX activation zero point, ReLU": "amx_types-u8i8_b-vnni_epilogue-relu_operand-zero_point_a",
    "WMMA int8 zero points": "wmma_types-i8toi32_operand-zero_point",
    "WMMA u8 run-time zero points, two tiles": "wmma_types-u8toi32_tiles-2x1_operand-zero_point_param",
    "WMMA activation zero point, K = 48": "wmma_types-i8toi32_K-48_operand-zero_point_a",
    # K in no whole VNNI groups: the operands are copied into zero-padded
    # blocks (partition.py), a long K cut into tile-wide chunks first
    "AMX u8 x i8 K = 10": "amx_types-u8i8_K-10",
    "AMX bf16 K = 7": "amx_K-7",
    "AMX int8 K = 68 (64 + 4)": "amx_types-i8i8_K-68",
    "AMX u8 x u8 4 x 4 tile, K = 9": "amx_types-u8u8_M-4_N-4_K-9",
    # more accumulator tiles than the registers hold beside the operands: the
    # largest accumulators live in memory (legalize/amx_registers.py)
    # a transposed accumulator: B in VNNI order is the A side, its K pairs
    # gathered into rows; a block wider than a tile is cut into tiles
    "AMX transposed accumulator, B in VNNI order": "amx_b-vnni_acc_layout-xy",
    "AMX transposed accumulator, u8 x i8, B in VNNI order": "amx_types-u8i8_b-vnni_order-ba_acc_layout-xy",
    "AMX transposed 8 x 32 blocks": "amx_b-nk_M-32_N-8_tiles-1x4_init-const_acc_layout-xy",
    "AMX transposed 32 x 16 blocks, K outermost": "amx_M-8_chunk-2x_tiles-1x4_loops-k_outer_acc_layout-xy",
    # a negated operand every row shares (x16(f32(0 - A))): the broadcast
    # moves into the negation (axioms.egg); an unsigned one moves out of
    # the sum; a transposed copy-out does not stop K being cut
    "AMX negated bf16 operand, transposed accumulator": "amx_a-col_chunk-2x_form-single_operand-neg_acc_layout-xy",
    "AMX negated u8 operand, 32 x 32 transposed, K = 40":
        "amx_types-u8u8_M-32_N-32_K-40_form-single_operand-neg_acc_layout-xy",
    # a boundary condition's clamped operand staged into a row-major copy;
    # verification gives A the region read before the clamp
    "AMX boundary condition, batched, symbolic sizes": "amx_sizes-symbolic_batch_operand-boundary",
    "AMX boundary condition, column-major A, K = 128, SiLU":
        "amx_a-col_K-128_epilogue-silu_sizes-symbolic_batch_operand-boundary",
    # u8 operands widened to i16 and then to i32: one widening of u8
    "WMMA u8 widened in two steps, column-major B, chunks of 8": "wmma_types-u8toi32_b-col_chunk-8_widen-i16",
    "WMMA u8 widened in two steps, scaled, two fragments":
        "wmma_types-u8toi32_a-col_b-col_tiles-1x2_widen-i16_operand-scale",
    "AMX sigmoid of a transposed int32 accumulator":
        "amx_types-i8u8_init-const_epilogue-sigmoid_loops-k_outer_acc_layout-xy_rem-8",
    "AMX eight 16 x 16 tiles": "amx_M-32_tiles-1x4",
    "AMX two accumulators of four tiles": "amx_tiles-1x4_form-two_acc",
    "AMX two accumulators of four 4-row int8 tiles": "amx_types-u8i8_M-4_tiles-1x4_form-two_acc",
    # a scaled product in a fragment of its own, its reduction cut into k16
    # chunks (a bare product P = sum(...) is cut like an accumulation)
    "WMMA scaled product in chunks of 32": "wmma_chunk-32_operand-scale",
    "WMMA scaled product, K = 24 in chunks of 8, bias": "wmma_K-24_chunk-8_init-bias_col_operand-scale",
}


def _options(name: str, tmp_path: Path | None = None, **kw: object) -> CompileOptions:
    wmma = name.startswith("wmma")
    selection = SelectionOptions(store_in={"prod": "WMMAAccumulator"} if wmma else {}, cache_dir=None,
                                 verbose=bool(kw.pop("verbose", False)))
    if tmp_path is None:
        return CompileOptions.from_flags(selection=selection, **kw)  # type: ignore[arg-type]
    build = str(tmp_path / "kernel.ptx") if wmma and HAS_NVCC else None
    return CompileOptions.from_flags(selection=selection, emit=("cuda",) if wmma else ("c",), verify=True,
                          run=not wmma, build_path=build)


def _compile(name: str, options: CompileOptions):  # type: ignore[no-untyped-def]
    return compile_text(f"{name}.stmt", (SWEEP / f"{name}.stmt").read_bytes(), options)


def test_the_sweep_is_real_halide_output() -> None:
    manifest = json.loads((SWEEP / "MANIFEST.json").read_text())
    assert len(manifest) >= 200
    assert all("halide_error" not in entry for entry in manifest.values())
    assert {p.stem for p in SWEEP.glob("*.stmt")} == set(manifest)
    assert set(REGRESSIONS.values()) <= set(manifest)


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(REGRESSIONS.values()))
def test_regression_variant_lowers_verifies_and_builds(variant: str, tmp_path: Path) -> None:
    result = _compile(variant, _options(variant, tmp_path))
    assert result.exit_code == 0, [d.render_text() for d in result.diagnostics]
    statements = result.report["statements"]
    assert statements and all(s["lowered"] for s in statements)
    assert result.report["verification"]["ok"]
    kind = "cuda" if variant.startswith("wmma") else "c"
    if kind == "c":
        assert result.report["run"]["ok"]  # the generated C ran and matched the interpreter
    assert ("wmma::mma_sync" if kind == "cuda" else "_tile_") in result.outputs[kind]


def _lowered_ir(name: str) -> str:
    """The rewritten IR of a variant that must lower."""
    result = _compile(name, _options(name))
    assert result.exit_code == 0, [d.render_text() for d in result.diagnostics]
    return str(result.outputs["ir"])


def test_an_epilogue_reads_a_spilled_copy_of_the_accumulator() -> None:
    ir_text = _lowered_ir("amx_epilogue-relu")
    assert "allocate mm.spill.0[float32 * 256] in Stack" in ir_text
    assert "tile_store(16, 64, mm.spill.0, 0, 64, mm[ramp(0, 1, 256)])" in ir_text


def test_an_epilogue_of_a_transposed_accumulator_reads_it_in_storage_order() -> None:
    ir_text = _lowered_ir("amx_types-u8i8_epilogue-relu_acc_layout-xy")
    # lane_order.py swaps the ReLU's lanes: it reads the tile's copy in order
    # and writes the output column by column
    assert "tile_store(16, 64, mm.spill.0, 0, 64, mm[ramp(0, 1, 256)])" in ir_text
    assert "32, 16), x16(1), 16)] = max(mm.spill.0[ramp(0, 1, 256)], x256(0))" in ir_text


def test_a_32x32_accumulator_becomes_four_tiles_and_k64_two_matmuls() -> None:
    text = _lowered_ir("amx_M-32_N-32")
    assert text.count("tile_matmul") == text.count("tile_zero") == text.count("tile_store") == 4  # 2 x 2 tiles
    # 32 x 16 with 64 bf16 products per statement: 2 row tiles x 2 chunks of K = 32
    assert _lowered_ir("amx_M-32_chunk-2x").count("tile_matmul") == 4


def test_a_short_wmma_reduction_is_padded_with_zero_products() -> None:
    text = _lowered_ir("wmma_chunk-8")
    # A (16 x 8) and B (8 x 16) copied into zeroed 16 x 16 buffers, one m16n16k16 mma
    assert "allocate A.kpad.0[float16 * 256] in GPUShared" in text
    assert "allocate B.kpad.1[float16 * 256] in GPUShared" in text
    assert text.count("wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32") == 1


def test_a_k_remainder_left_scalar_becomes_a_shorter_tile_product() -> None:
    text = _lowered_ir("amx_K-48")
    # K = 48 in chunks of 32: one chunk of 32 and the remainder of 16, each a tile product
    assert "tile_matmul(16, 64, 32," in text and "tile_matmul(16, 64, 16," in text
    assert "for (mm.s1.r$x.rri" not in text  # the scalar remainder loop is gone


def test_a_k_in_no_whole_vnni_groups_is_padded_to_whole_ones() -> None:
    # K = 10 uint8: A (16 x 10) and B (10 x 16) copied into zeroed 16 x 12 and
    # 12 x 16 blocks, one tile product of 12 (three groups of four)
    text = _lowered_ir("amx_types-u8i8_K-10")
    assert "allocate A.kpad.0[uint8 * 192] in Stack" in text and "allocate B.kpad.1[int8 * 192] in Stack" in text
    assert text.count("tile_matmul(") == 1 and "tile_matmul(16, 64, 12," in text
    # K = 68 int8: a tile-wide chunk of 64 and one of 4, which is whole: nothing padded
    text = _lowered_ir("amx_types-i8i8_K-68")
    assert "tile_matmul(16, 64, 64," in text and "tile_matmul(16, 64, 4," in text and "kpad" not in text


def test_accumulators_beyond_the_tile_registers_wait_in_memory() -> None:
    # Two accumulators of four 16 x 16 tiles and two operand tiles: ten
    # registers. One accumulator moves to the stack and works in a register
    # of its own (4 + 1 + 2 = 7), loaded before and stored after each tile
    # operation; the other keeps its four registers.
    text = _lowered_ir("amx_tiles-1x4_form-two_acc")
    assert "allocate mm[float32 * 16 * 64] in Stack" in text and "allocate mm.tile[float32 * 256] in AMXTile" in text
    assert "allocate mm2[float32 * 16 * 64] in AMXTile" in text and "mm2.tile" not in text
    matmuls = text.count("mm.tile[ramp(0, 1, 256)] = (float32x256)tile_matmul(")
    assert matmuls == 4 and text.count("tile_store(16, 64, mm, ") == 2 * matmuls  # after each zero and matmul
    # One accumulator of eight tiles (32 x 64) and two operands: it moves
    text = _lowered_ir("amx_M-32_tiles-1x4")
    assert "allocate mm.tile[float32 * 256] in AMXTile" in text


def test_tiles_side_by_side_are_stored_tile_after_tile() -> None:
    text = _lowered_ir("amx_tiles-2x2")
    assert text.count("tile_matmul(") == 4 and "spill" not in text
    for offset in (0, 256, 512, 768):  # each 16 x 16 tile contiguous in the 32 x 32 buffer
        assert f"mm[ramp({offset}, 1, 256)]" in text


def test_a_scalar_update_that_cannot_be_vectorized_exactly_is_explained_in_schedule_terms() -> None:
    # amx_K-48 with its remainder guard made symbolic: the number of products
    # is no constant, so the nest stays scalar and the miss says why
    text = (SWEEP / "amx_K-48.stmt").read_text()
    guard = "if (mm.s1.r$x.rri <= 15)"
    assert guard in text
    text = text.replace(guard, "if (mm.s1.r$x.rri <= mm_global_wrapper$0.s0.y.yo)")
    result = compile_text("amx_K-48.stmt", text.encode(), _options("amx_K-48"))
    assert result.exit_code == 1
    notes = " ".join(result.diagnostics[0].notes)
    assert "Halide left this statement of 'mm' scalar" in notes and "vectorize the update" in notes


FLOAT32_32X8 = "wmma_types-tf32tof32_M-32_N-8"


def test_float32_operands_are_multiplied_as_three_tf32_products() -> None:
    result = _compile("wmma_types-tf32tof32", _options("wmma_types-tf32tof32", emit=("ir", "cuda")))
    assert result.exit_code == 0, [d.render_text() for d in result.diagnostics]
    assert "wmma.mma.sync.aligned.row.row.m16n16k8.f32.f32" in result.outputs["ir"]
    cuda = result.outputs["cuda"]
    assert cuda.count("hb_mma_split(") == 2  # the prelude's definition and the one mma
    assert "wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major>" in cuda
    assert "(const float *)A" in cuda  # tf32 fragments load from float memory


def test_float32_in_a_tile_no_tf32_fragment_has_is_a_hardware_limit_with_the_tile_to_use() -> None:
    result = _compile(FLOAT32_32X8, _options(FLOAT32_32X8))
    assert result.exit_code == 1
    note = result.diagnostics[0].notes[0]
    assert note.startswith("hardware limit: Tensor Cores multiply float32 operands only in m16n16k8 fragments")
    assert "tiles are 32 x 8" in note and "tile the accumulator 16 x 16" in note


def test_the_root_cause_comes_first_and_follow_on_misses_are_one_note() -> None:
    short = _compile(FLOAT32_32X8, _options(FLOAT32_32X8))
    assert len(short.diagnostics) == 1
    assert "vector_reduce_add" in (short.diagnostics[0].location.source_line or "")  # type: ignore[union-attr]
    assert short.diagnostics[0].notes[-1].startswith("2 other stores of the same accumulator")
    full = _compile(FLOAT32_32X8, _options(FLOAT32_32X8, verbose=True))
    assert len(full.diagnostics) == 3
    assert "32 x 8" in full.diagnostics[0].notes[0]


# ------------------------------------------------------------- slicing unit tests

def _ramp(base: int, stride: int, lanes: int) -> ir.Ramp:
    return ir.Ramp(ir.IntImm(base), ir.IntImm(stride), lanes)


@pytest.mark.parametrize("index, extents", [
    (_ramp(0, 1, 32 * 32), (32, 32)),  # a flat accumulator index
    (ir.Ramp(_ramp(5, 1, 32), ir.Broadcast(ir.IntImm(100), 32), 32), (32, 32)),  # a 2-D output block
    (ir.Broadcast(ir.Ramp(_ramp(0, 7, 8), ir.Broadcast(ir.IntImm(1), 8), 4), 6), (6, 4, 8)),  # B of a matmul
    (ir.Ramp(ir.Broadcast(_ramp(3, 1, 8), 4), ir.Broadcast(ir.IntImm(50), 32), 6), (6, 4, 8)),  # A of a matmul
    # B whose 8 K values are two groups of 4 (64 apart, the groups 1024
    # apart): a half of K is one group, and the K axis is split to take it
    (ir.Broadcast(ir.Ramp(ir.Ramp(_ramp(0, 64, 4), ir.Broadcast(ir.IntImm(1024), 4), 2),
                          ir.Broadcast(ir.IntImm(1), 8), 4), 6), (6, 4, 8)),
])
def test_slicing_keeps_exactly_the_selected_lanes(index: ir.Expr, extents: tuple[int, ...]) -> None:
    slicer = LaneSlicer(lambda load, axis, start, count: None)
    whole = index_lanes(index)
    for axis, extent in enumerate(extents):
        for start, count in ((0, extent // 2), (extent // 2, extent - extent // 2)):
            sliced = slicer.slice(index, extents, axis, start, count)
            assert sliced is not None
            strides = [1] * len(extents)
            for d in range(len(extents) - 2, -1, -1):
                strides[d] = strides[d + 1] * extents[d + 1]
            kept = [whole[i] for i in range(len(whole))
                    if start <= (i // strides[axis]) % extents[axis] < start + count]
            assert index_lanes(sliced) == kept


def test_partition_leaves_statements_that_fit_one_instruction() -> None:
    stmt = parse_input((SWEEP / "amx_base.stmt").read_text()).ir
    assert isinstance(stmt, ir.Stmt)
    assert partition_accumulators(stmt, {"mm": "AMX"}) == {}
    big = parse_input((SWEEP / "amx_M-32_N-32.stmt").read_text()).ir
    assert isinstance(big, ir.Stmt)
    pieces = partition_accumulators(big, {"mm": "AMX"})
    assert len(pieces) == 3  # the zero fill, the update and the copy out


def test_a_call_that_reads_an_accumulator_is_no_lowering() -> None:
    """exp(-mm[...]) decodes without a marker (the rules see the call as
    opaque), yet still reads the tile in arithmetic: the store is a miss
    until spilled, and the spilled epilogue reads ordinary memory."""
    from hardboiled.select.extract import read_outside_intrinsics

    epilogue = parse_input("out[ramp(0, 1, 4)] = (float32x4)exp_f32(x4(0.000000f) - (float32x4)mm[ramp(0, 1, 4)])\n").ir
    assert read_outside_intrinsics(epilogue, {"mm"}) == "mm"
    stored = parse_input("tile_store(16, 64, mm.spill.0, 0, 64, (float32x256)mm[ramp(0, 1, 256)])\n").ir
    assert read_outside_intrinsics(stored, {"mm"}) is None
    text = _lowered_ir("amx_epilogue-sigmoid")
    assert "exp_f32(x256(0.000000f) - mm.spill.0[" in text.replace("(float32x256)", "")


WMMA_REMAINDER = """allocate prod[float32 * 16 * 16] in Register
prod[ramp(0, 1, 256)] = x256(0.000000f)
prod[ramp(0, 1, 256)] = (float32x256)vector_reduce_add(float32x6144((float16x6144)A[ramp(x16(ramp(0, 1, 24)), x384(24), 16)])*float32x6144(x6144(0.000000h) - (float16x6144)B[x16(ramp(ramp(0, 16, 24), x24(1), 16))])) + prod[ramp(0, 1, 256)]
out[ramp(0, 1, 256)] = prod[ramp(0, 1, 256)]
"""


def test_a_reduction_of_24_is_a_chunk_of_16_and_a_padded_chunk_of_8_with_its_negated_operand_staged() -> None:
    """K = 24 on m16n16k16: one product of 16, and the remaining 8 copied
    into zero-padded 16-wide operands; the negated B is staged as it
    computes (in float16). Run before and after: the same sums exactly."""
    from hardboiled.select.reinsert import reinsert
    from hardboiled.verify.interp import Interpreter, Pointer

    stmt = parse_input(WMMA_REMAINDER, "k24.stmt", buffer_types={"A": ir.Float(16), "B": ir.Float(16),
                                                                 "out": ir.Float(32)}).ir
    assert isinstance(stmt, ir.Stmt)
    cut = reinsert(stmt, partition_accumulators(stmt, {"prod": "WMMA"}))
    text = print_ir(cut)
    # the first 16 read A in place and a staged negated B; the last 8 both
    # operands padded (zero-filled first)
    assert text.count("vector_reduce_add(") == 2 and text.count("kpad.0[float16 * 256]") == 2
    assert text.count("x256(0.000000h)\n") == 2
    assert "= x256(0.000000h) - (float16x256)B[" in text and "= x128(0.000000h) - (float16x128)B[" in text

    rng = np.random.default_rng(5)
    a, b = (rng.integers(-4, 5, 16 * 24).astype(np.float16) for _ in range(2))

    def run(program: ir.Stmt) -> np.ndarray:
        pointers = {"A": Pointer(a.copy(), 0, "A"), "B": Pointer(b.copy(), 0, "B"),
                    "out": Pointer(np.zeros(256, np.float32), 0, "out")}
        Interpreter(params=pointers).run(program)
        return pointers["out"].array

    expected = a.reshape(16, 24).astype(np.float32) @ -b.reshape(24, 16).astype(np.float32)
    assert np.array_equal(run(stmt), expected.reshape(-1)) and np.array_equal(run(cut), run(stmt))


def _column_blocks(block: int) -> str:
    """A 16 x 32 accumulator whose bias fills it ``block`` columns at a time
    (a row stride of 32 in each), while the update and the copy-out take it
    whole."""
    fills = "".join(f"mm[ramp(ramp({c}, 1, {block}), x{block}(32), 16)] = bias[x16(ramp({c}, 1, {block}))]\n"
                    for c in range(0, 32, block))
    return ("allocate mm[float32 * 32 * 16] in AMXTile\n" + fills +
            "mm[ramp(0, 1, 512)] = (float32x512)vector_reduce_add(float32x16384(A[ramp(x32(ramp(0, 1, 32)), "
            "x1024(32), 16)])*float32x16384(x16(B[ramp(ramp(0, 32, 32), x32(1), 32)]))) + mm[ramp(0, 1, 512)]\n"
            "out[ramp(0, 1, 512)] = mm[ramp(0, 1, 512)]\n")


@pytest.mark.parametrize("block", [16, 8])
def test_an_accumulator_initialized_one_block_of_columns_at_a_time_is_cut_into_tiles(block: int) -> None:
    """Every statement is cut to the same tile slots, the blocks included,
    and computes what it did. A tile is as wide as every block allows: 16
    columns (of 64 bytes) for blocks of 16, 8 for blocks of 8, where one
    16-column tile would split each block."""
    from hardboiled.select.reinsert import reinsert
    from hardboiled.verify.interp import Interpreter, Pointer

    stmt = parse_input(_column_blocks(block), "blocks.stmt", buffer_types={
        "A": ir.Float(32), "B": ir.Float(32), "bias": ir.Float(32), "out": ir.Float(32)}).ir
    assert isinstance(stmt, ir.Stmt)
    pieces = partition_accumulators(stmt, {"mm": "AMX"})
    assert len(pieces) == 32 // block + 2
    cut = reinsert(stmt, pieces)
    text = print_ir(cut)
    tile = 16 * block
    assert f"mm[ramp(0, 1, {tile})] = (float32x{tile})bias[x16(ramp(0, 1, {block}))]" in text
    assert f"mm[ramp({tile}, 1, {tile})] = (float32x{tile})bias[x16(ramp({block}, 1, {block}))]" in text
    # the copy-out takes tile after tile back to the output's columns
    assert f"out[ramp(ramp({block}, 1, {block}), x{block}(32), 16)] = mm[ramp({tile}, 1, {tile})]" in text

    rng = np.random.default_rng(7)
    a, b, bias = (rng.integers(-4, 5, n).astype(np.float32) for n in (16 * 32, 32 * 32, 32))

    def run(program: ir.Stmt) -> np.ndarray:
        pointers = {"A": Pointer(a.copy(), 0, "A"), "B": Pointer(b.copy(), 0, "B"), "bias": Pointer(bias.copy(), 0, "bias"),
                    "out": Pointer(np.zeros(512, np.float32), 0, "out")}
        Interpreter(params=pointers).run(program)
        return pointers["out"].array

    expected = a.reshape(16, 32) @ b.reshape(32, 32) + bias
    assert np.array_equal(run(stmt), expected.reshape(-1)) and np.array_equal(run(cut), run(stmt))


def test_a_column_block_taller_than_a_tile_is_cut_into_tiles_at_their_slots() -> None:
    # a zero fill of a 32-row, 16-column block of a 32-wide accumulator:
    # two 16 x 16 tiles, at slots 0 and 2 (tiles run along the rows first),
    # each index a plain ramp (the second row's offset folded into it)
    store = parse_input("mm[ramp(ramp(0, 1, 16), x16(32), 32)] = x512(0)\n", "fill.stmt").ir
    assert isinstance(store, ir.Store)
    block = partition._block_of(store, "mm", 32)
    assert block == (32, 0, 16)
    pieces = partition._cut(store, "mm", 32, block, partition._Piece(16, 16, 64, accelerator="AMX"))
    assert pieces is not None
    assert [print_ir(p) for p in pieces] == ["mm[ramp(0, 1, 256)] = x256(0)\n", "mm[ramp(512, 1, 256)] = x256(0)\n"]


RANK_ONE = """allocate mm[int32 * 4 * 4] in AMXTile
mm[ramp(0, 1, 16)] = x16(0)
for (mm.s1.r$x, 0, 64) {
 mm[ramp(0, 1, 16)] = mm[ramp(0, 1, 16)] + (int32x16(x4(B[ramp(mm.s1.r$x*4, 1, 4)]))*int32x16(A[ramp(x4(mm.s1.r$x), x4(64), 4)]))
}
out[ramp(0, 1, 16)] = mm[ramp(0, 1, 16)]
"""


def test_a_reduction_left_as_a_loop_of_rank_one_updates_is_explained_in_schedule_terms() -> None:
    # mm.update() vectorized over the tile but not over r: each iteration adds
    # one product per element, and the miss says to vectorize the reduction
    result = compile_text("rank1.stmt", RANK_ONE.encode(), _options("amx_rank1", buffer_types={
        "A": ir.Int(8), "B": ir.Int(8), "out": ir.Int(32)}))
    assert result.exit_code == 1
    notes = " ".join(note for d in result.diagnostics for note in d.notes)
    assert "adds one product per element of 'mm'" in notes and "serial loop" in notes
    assert "mm.update().atomic().vectorize(r.x, K)" in notes


UNEVEN = """allocate mm[int32 * 16 * 8] in AMXTile
mm[ramp(0, 1, 64)] = x64(0)
mm[ramp(64, 1, 64)] = x64(0)
mm[ramp(0, 1, 128)] = (int32x128)vector_reduce_add(int32x6144(A[ramp(x16(ramp(0, 1, 48)), x768(48), 8)])*int32x6144(x8(B[ramp(ramp(0, 16, 48), x48(1), 16)]))) + mm[ramp(0, 1, 128)]
out[ramp(0, 1, 64)] = mm[ramp(0, 1, 64)]
out[ramp(64, 1, 64)] = mm[ramp(64, 1, 64)]
"""


def test_statements_that_disagree_on_an_accumulators_tiles_are_cut_to_the_same_ones() -> None:
    """Two 4-row fills and copies around one 8-row update: each would lower
    as it is, and the C generator would find one tile register with two
    shapes (a GuardWithIf edge made such a program from real Halide). The
    accumulator is partitioned before selection instead: the update becomes
    two 4-row ones, at the fills' tiles, and the program computes the same."""
    from hardboiled.select.partition import uneven_tiles
    from hardboiled.select.reinsert import reinsert
    from hardboiled.verify.interp import Interpreter, Pointer

    types = {"A": ir.Int(8), "B": ir.Int(8), "out": ir.Int(32)}
    stmt = parse_input(UNEVEN, "uneven.stmt", buffer_types=types).ir
    assert isinstance(stmt, ir.Stmt)
    assert uneven_tiles(stmt, {"mm"}) == {"mm"}
    cut = reinsert(stmt, partition_accumulators(stmt, {"mm": "AMX"}))
    assert uneven_tiles(cut, {"mm"}) == set()
    text = print_ir(cut)
    assert "mm[ramp(0, 1, 128)]" not in text and text.count("vector_reduce_add(") == 2

    rng = np.random.default_rng(3)
    a, b = rng.integers(-8, 8, 8 * 48).astype(np.int8), rng.integers(-8, 8, 48 * 16).astype(np.int8)

    def run(program: ir.Stmt) -> np.ndarray:
        pointers = {"A": Pointer(a.copy(), 0, "A"), "B": Pointer(b.copy(), 0, "B"),
                    "out": Pointer(np.zeros(128, np.int32), 0, "out")}
        Interpreter(params=pointers).run(program)
        return pointers["out"].array

    expected = a.reshape(8, 48).astype(np.int32) @ b.reshape(48, 16).astype(np.int32)
    assert np.array_equal(run(stmt), expected.reshape(-1)) and np.array_equal(run(cut), run(stmt))
