"""The static figures of AMX code speed (issue: generated AMX code at the
speed of the hardware), asserted on the real Halide fixtures, plus the
passes and code shapes behind them.

* No VNNI repack runs inside a loop that multiplies tiles
  (legalize/operand_hoisting.py), and each runs once per call.
* A tile loaded by one statement of a loop body is not loaded again by the
  next (codegen/c.py's operand pools): loads per tile_matmul, counted by
  running the generated C under the emulation.
* A repack is a copy loop of storage words (codegen/copies.py).
* The compiler barrier before tile loads is needed: without it gcc (and
  clang) drop a store into the buffer a tile load reads.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from hardboiled import ir
from hardboiled.codegen.c import generate_c
from hardboiled.codegen.copies import match_permuted_copy, vnni_permutation
from hardboiled.codegen.toolchain import runtime_dir
from hardboiled.frontend.parse import parse_input
from hardboiled.legalize.operand_hoisting import hoist_operand_copies
from hardboiled.legalize.passes import LEGALIZATION, legalize
from hardboiled.measure.tile_counts import count_tile_operations, operand_copy_work
from hardboiled.select.selector import SelectionOptions, select_instructions
from hardboiled.verify.compare import run_program
from hardboiled.verify.interp import BufferT
from hardboiled.verify.run import calls_on_verification_inputs

from ..conftest import FIXTURES, MANIFEST, tensorized_fixture

AMX_CASES = sorted(c for c, m in MANIFEST.items() if m["accelerator"] == "amx")
STANDARD_B = sorted(c for c in AMX_CASES if MANIFEST[c]["b_layout"] == "standard")
COMPILERS = [name for name in ("gcc", "clang") if shutil.which(name)]


def _original(case: str) -> ir.Stmt:
    stmt = parse_input((FIXTURES / case / "vectorizing.stmt").read_text()).ir
    assert isinstance(stmt, ir.Stmt)
    return stmt


# ---------------------------------------------------------------- the repack

@pytest.mark.parametrize("case", AMX_CASES)
def test_no_operand_copy_runs_inside_a_loop_that_multiplies_tiles(case: str) -> None:
    work = operand_copy_work(tensorized_fixture(case)[1])
    assert work.in_matmul_loops == 0


# K x N of each standard-layout fixture: the elements of B its matmul reads.
# The specialized one has two copies of the loop nest (two repacks).
B_ELEMENTS = {
    "amx_bf16_matmul_std_8x16": 32 * 16, "amx_bf16_matmul_std_single": 32 * 16,
    "amx_bf16_matmul_std_tiled": 128 * 64, "amx_bf16_matmul_std_tiled_const": 128 * 64,
    "amx_bf16_matmul_std_specialized": 2 * 128 * 64, "amx_int8_matmul_std_tiled": 128 * 64,
    "amx_bf16_std_ref": 64 * 32, "amx_bf16_std_reorder": 64 * 32,
    "amx_bf16_std_preload_a": 64 * 32, "amx_bf16_std_preload_b": 64 * 32,
}


def test_every_standard_layout_fixture_has_its_b_size() -> None:
    assert sorted(B_ELEMENTS) == STANDARD_B


@pytest.mark.parametrize("case", STANDARD_B)
def test_a_standard_layout_b_is_repacked_once_per_call(case: str) -> None:
    """Each element of B the pipeline reads is copied exactly once per call;
    without the hoisting pass the copy runs inside the reduction loop, once
    per output tile (a regression there fails here)."""
    original = _original(case)
    selection = select_instructions(original, SelectionOptions())
    without_hoisting = tuple(step for step in LEGALIZATION if step.name != "hoist-operand-copies")
    before = operand_copy_work(legalize(selection.stmt, selection, without_hoisting))
    after = operand_copy_work(legalize(selection.stmt, selection))
    assert (after.total, after.in_matmul_loops) == (B_ELEMENTS[case], 0)
    if "single" not in case and "8x16" not in case:  # one tile: no loop to leave
        assert before.in_matmul_loops > 0 and before.total >= after.total


def test_a_repack_is_a_copy_loop_of_storage_words() -> None:
    source = generate_c(tensorized_fixture("amx_bf16_std_reorder")[1])
    repack = source[source.index("B.amx_vnni.0[ramp("):source.index("/* for (mm_global_wrapper$0.s0.y.yo, 0, 2) { */",
                                                                  source.index("B.amx_vnni.0[ramp("))]
    assert "hb_vnni_pack16(" in repack
    assert "hb_bf16_to_f32" not in repack and "hb_f32_to_bf16" not in repack and "static const" not in repack


_PACK_CHECK = r"""
#include <stdio.h>
#include "hb_amx.h"
/* hb_vnni_pack16/8 against the definition, for column counts the SIMD steps
   cover exactly, partly and not at all. */
int main(void) {
    static uint16_t s16[8 * 100], d16[8 * 100]; static uint8_t s8[8 * 100], d8[8 * 100];
    for (int i = 0; i < 800; i++) { s16[i] = (uint16_t)(i * 7 + 1); s8[i] = (uint8_t)(i * 13 + 5); }
    int bad = 0, counts[] = {1, 7, 8, 16, 21, 33};
    for (int t = 0; t < 6; t++) {
        int cols = counts[t];
        hb_vnni_pack16(d16, s16, 8, cols, 97);
        hb_vnni_pack8(d8, s8, 8, cols, 99);
        for (int r = 0; r < 8; r++) for (int c = 0; c < cols; c++) {
            bad += d16[((r / 2) * cols + c) * 2 + r % 2] != s16[r * 97 + c];
            bad += d8[((r / 4) * cols + c) * 4 + r % 4] != s8[r * 99 + c];
        }
    }
    printf("%d\n", bad);
    return 0;
}
"""


@pytest.mark.slow
@pytest.mark.skipif(not COMPILERS, reason="no C compiler")
@pytest.mark.parametrize("compiler", COMPILERS)
def test_the_vectorized_repacks_match_their_definition(compiler: str, tmp_path: Path) -> None:
    (tmp_path / "pack.c").write_text(_PACK_CHECK)
    subprocess.run([compiler, "-O2", "-DHB_AMX_EMULATE", f"-I{runtime_dir()}", str(tmp_path / "pack.c"),
                    "-o", str(tmp_path / "pack"), "-lm"], check=True)
    assert subprocess.run([str(tmp_path / "pack")], capture_output=True, text=True).stdout == "0\n"


def test_the_vnni_permutation_interleaves_row_pairs() -> None:
    # rows r0, r1 of 3 columns: (r0c0, r1c0, r0c1, r1c1, r0c2, r1c2)
    assert vnni_permutation(2, 3, 2) == (0, 3, 1, 4, 2, 5)
    assert vnni_permutation(4, 2, 4) == (0, 2, 4, 6, 1, 3, 5, 7)
    assert vnni_permutation(2, 3, 1) == tuple(range(6))


def test_a_store_that_converts_or_computes_is_not_a_copy() -> None:
    bf16 = ir.BFloat(16)
    load = ir.Load("B", ir.Ramp(ir.IntImm(0), ir.IntImm(1), 4), bf16.with_lanes(4))
    dense = ir.Ramp(ir.IntImm(0), ir.IntImm(1), 4)
    types = {"B": bf16, "T": bf16, "F": ir.Float(32)}
    assert match_permuted_copy(ir.Store("T", load, dense), types) is not None
    assert match_permuted_copy(ir.Store("F", ir.Cast(ir.Float(32, 4), load), dense), types) is None
    assert match_permuted_copy(ir.Store("T", ir.Binary(ir.BinOp.ADD, load, load), dense), types) is None


# ------------------------------------------------------- hoisting, by hand

def _copy_in_a_loop(write_b_inside: bool = False) -> ir.Stmt:
    """for (k, 0, 4) { let base = k*8; copy B[base..base+8) into T; out[k*8..] = T }"""
    i16 = ir.Int(16)
    k = ir.Variable("k")
    fill = ir.Store("T.amx_vnni.0", ir.Load("B", ir.Ramp(ir.Variable("base"), ir.IntImm(1), 8), i16.with_lanes(8)),
                    ir.Ramp(ir.IntImm(0), ir.IntImm(1), 8))
    use = ir.Store("out", ir.Load("T.amx_vnni.0", ir.Ramp(ir.IntImm(0), ir.IntImm(1), 8), i16.with_lanes(8)),
                   ir.Ramp(ir.Binary(ir.BinOp.MUL, k, ir.IntImm(8)), ir.IntImm(1), 8))
    body: list[ir.Stmt] = [use]
    if write_b_inside:
        body.append(ir.Store("B", ir.IntImm(0, i16), ir.IntImm(0)))
    alloc = ir.Allocate("T.amx_vnni.0", i16, "Auto", (ir.IntImm(8),), ir.make_block([fill, *body]))
    let = ir.LetStmt("base", ir.Binary(ir.BinOp.MUL, k, ir.IntImm(8)), alloc)
    return ir.For("k", ir.IntImm(0), ir.IntImm(4), ir.ForKind.SERIAL, None, let)


def _run(stmt: ir.Stmt) -> np.ndarray:
    source = np.arange(32, dtype=np.int16) * 3 + 1
    buffers = {"B": BufferT("B", ir.Int(16), source.copy(), (0,), (32,), (1,)),
               "out": BufferT("out", ir.Int(16), np.zeros(32, dtype=np.int16), (0,), (32,), (1,))}
    for name in buffers:  # the host pointers, bound as a pipeline binds them
        host = ir.Call("_halide_buffer_get_host", (ir.Variable(f"{name}.buffer", ir.handle_type()),),
                       ir.handle_type())
        stmt = ir.LetStmt(name, host, stmt)
    return run_program(stmt, buffers)["out"].data


def test_a_copy_leaves_the_loop_with_one_slot_per_iteration() -> None:
    original = _copy_in_a_loop()
    hoisted = hoist_operand_copies(original, ["T.amx_vnni.0"])
    assert isinstance(hoisted, ir.Allocate) and hoisted.extents == (ir.IntImm(32),)
    fill_loop = hoisted.body.stmts[0]
    assert isinstance(fill_loop, ir.For) and fill_loop.name == "k"
    # the let was inlined into the fill
    assert not any(isinstance(n, ir.Variable) and n.name == "base" for n in ir.walk(fill_loop))
    np.testing.assert_array_equal(_run(hoisted), _run(original))


def test_a_copy_stays_in_a_loop_that_writes_what_it_reads() -> None:
    original = _copy_in_a_loop(write_b_inside=True)
    assert hoist_operand_copies(original, ["T.amx_vnni.0"]) == original


def test_a_copy_is_left_alone_when_it_is_not_a_vnni_operand() -> None:
    original = _copy_in_a_loop()
    assert hoist_operand_copies(original, ["T.toeplitz.0"]) == original


# ---------------------------------------------------------------- tile loads

# Tile loads per tile_matmul, executed (emulation counters). One accumulator
# tile needs both operands per product (2.0); two accumulators sharing the
# B tile of a reduction step load it once (1.5).
LOADS_PER_MATMUL = {
    "amx_bf16_std_ref": 2.0, "amx_bf16_vnni_ref": 2.0,
    "amx_bf16_std_reorder": 1.5, "amx_bf16_vnni_reorder": 1.5,
    "amx_bf16_std_preload_a": 1.5, "amx_bf16_std_preload_b": 1.5,
    "amx_bf16_matmul_std_tiled": 2.0, "amx_int8_matmul_vnni_tiled": 2.0,
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(LOADS_PER_MATMUL))
def test_tile_loads_per_matmul(case: str) -> None:
    original, rewritten = tensorized_fixture(case)
    counts = count_tile_operations(generate_c(rewritten), calls_on_verification_inputs(original, rewritten))
    assert counts.dot_products > 0
    assert counts.loads_per_matmul == LOADS_PER_MATMUL[case]
    # Each accumulator tile is stored once: no store-and-reload round trip.
    output_elements = 64 * 64 if "matmul" in case else 32 * 32
    assert counts.tile_stores == output_elements // 256


def test_a_held_tile_is_reloaded_after_code_that_may_write_its_source() -> None:
    """Two identical loads with a C statement between them: both happen."""
    rewritten = tensorized_fixture("amx_bf16_std_reorder")[1]
    source = generate_c(rewritten)
    body = source[source.index("_tile_zero(0);"):source.index("_tile_stored(0")]
    assert body.count("_tile_loadd(") == 3 and body.count("still holds this operand") == 1


# ---------------------------------------------------------------- the barrier

_STALE_STORE = r"""
#include <stdint.h>
#include "hb_amx.h"
#ifndef WITH_BARRIER
#undef hb_amx_barrier
#define hb_amx_barrier() ((void)0)
#endif
/* A buffer filled, read by a tile load, then refilled (a repack buffer
   reused by the next reduction step): the first fill must reach memory. */
void refill_between_loads(float *packed, float *out) {
    packed[0] = 2.0f;
    hb_amx_barrier(); _tile_loadd(3, (const char *)packed, 64);
    packed[0] = 3.0f;
    _tile_dpbf16ps(0, 2, 3);
    _tile_stored(0, (char *)out, 64);
}
"""


def _stale_store_assembly(compiler: str, level: str, tmp_path: Path, *defines: str) -> str:
    (tmp_path / "stale.c").write_text(_STALE_STORE)
    return subprocess.run([compiler, level, "-S", "-o", "-", "-mamx-tile", "-mamx-bf16", "-mamx-int8",
                           f"-I{runtime_dir()}", *defines, str(tmp_path / "stale.c")],
                          capture_output=True, text=True, check=True).stdout.lower()


_TWO = "0x40000000"  # 2.0f as an immediate: the first store's value


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("gcc"), reason="no gcc")
@pytest.mark.parametrize("level", ["-O2", "-O3"])
def test_without_the_barrier_gcc_drops_a_store_the_tile_load_reads(level: str, tmp_path: Path) -> None:
    """The _tile_loadd of <immintrin.h> (HB_AMX_INTEL_HEADER) is inline
    assembly that declares no memory input: gcc sees the first store as
    dead (overwritten, never read) and deletes it, so the tile would load
    3.0 instead of 2.0. (clang 14 happens to keep it; the barrier is for
    every compiler, tested below.)"""
    assembly = _stale_store_assembly("gcc", level, tmp_path, "-DHB_AMX_INTEL_HEADER")
    assert _TWO not in assembly, f"gcc {level} kept the store: no miscompile"


@pytest.mark.slow
@pytest.mark.skipif(not COMPILERS, reason="no C compiler")
@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("level", ["-O2", "-O3"])
def test_hb_amx_h_own_tile_load_keeps_the_store_even_without_the_barrier(compiler: str, level: str,
                                                                         tmp_path: Path) -> None:
    """hb_amx.h's own _tile_loadd clobbers memory: the first store stays,
    before the load."""
    assembly = _stale_store_assembly(compiler, level, tmp_path)
    assert _TWO in assembly and assembly.index(_TWO) < assembly.index("tileloadd"), assembly


_READ_BACK = r"""
#include "hb_amx.h"
/* C that reads what a tile store wrote (an epilogue on a spilled tile). */
float read_back(float *out) {
    out[0] = 1.0f;
    _tile_stored(0, out, 64);
    return out[0];
}
"""


@pytest.mark.slow
@pytest.mark.skipif(not COMPILERS, reason="no C compiler")
@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("level", ["-O2", "-O3"])
def test_hb_amx_h_own_tile_store_makes_c_read_the_memory_again(compiler: str, level: str, tmp_path: Path) -> None:
    """hb_amx.h's _tile_stored clobbers memory: the C after it reads the
    element again (without the clobber, gcc returns the 1.0 it stored)."""
    (tmp_path / "read_back.c").write_text(_READ_BACK)
    assembly = subprocess.run([compiler, level, "-S", "-o", "-", "-mamx-tile", "-mamx-bf16", "-mamx-int8",
                               f"-I{runtime_dir()}", str(tmp_path / "read_back.c")],
                              capture_output=True, text=True, check=True).stdout.lower()
    after_store = assembly.split("tilestored", 1)[1]
    assert "(%rdi)" in after_store.split("ret", 1)[0], assembly


@pytest.mark.slow
@pytest.mark.skipif(not COMPILERS, reason="no C compiler")
@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("level", ["-O2", "-O3"])
def test_the_barrier_keeps_a_store_the_tile_load_reads(compiler: str, level: str, tmp_path: Path) -> None:
    assert _TWO in _stale_store_assembly(compiler, level, tmp_path, "-DWITH_BARRIER", "-DHB_AMX_INTEL_HEADER")
