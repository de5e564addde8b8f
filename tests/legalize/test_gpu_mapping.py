"""The GPU mapping passes (legalize/fragment_reuse.py, lane_spreading.py,
barriers.py): each is an IR pass that the interpreter checks, that
``--print-after`` shows, and that the CUDA generator only prints."""

from __future__ import annotations

import re

import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.legalize.barriers import place_barriers
from hardboiled.legalize.fragment_reuse import reuse_operand_fragments
from hardboiled.legalize.gpu_mapping import SPREAD, THREAD_BARRIER, WARP_BARRIER, barrier_level, spread_value
from hardboiled.legalize.lane_spreading import spread_lanes
from hardboiled.legalize.passes import GPU_MAPPING, LEGALIZATION, legalize, map_to_gpu
from hardboiled.select.options import SelectionOptions
from hardboiled.select.selector import select_instructions
from hardboiled.verify.compare import verify

from ..conftest import ROOT, run_cli

APPS = ROOT / "tests" / "fixtures" / "apps"


def _selected(name: str, accumulator: str) -> tuple[ir.Stmt, ir.Stmt]:
    """An application's original IR, and the IR after selection and the
    accelerator legalization (before the GPU mapping)."""
    original = parse_input((APPS / f"{name}.stmt").read_text()).ir
    assert isinstance(original, ir.Stmt)
    selection = select_instructions(original, SelectionOptions(store_in={accumulator: "WMMAAccumulator"}))
    return original, legalize(selection.stmt, selection, LEGALIZATION)


def _fragment_stores_read_without_a_barrier(stmt: ir.Stmt) -> list[str]:
    """The buffers that a plain load reads, in the order the code runs,
    after a fragment was stored to them and before any barrier: each lane
    stored part of the tile, so another lane's read is a race."""
    stored: set[str] = set()
    racy = []
    for node in ir.walk(stmt):
        if isinstance(node, ir.Evaluate) and barrier_level(node):
            stored.clear()
        elif isinstance(node, ir.Call) and node.name.startswith("wmma.store") and isinstance(node.args[0], ir.Variable):
            stored.add(node.args[0].name)
        elif isinstance(node, ir.Load) and node.name in stored:
            racy.append(node.name)
            stored.discard(node.name)
    return racy


def _count(stmt: ir.Stmt, predicate) -> int:  # type: ignore[no-untyped-def]
    return sum(1 for n in ir.walk(stmt) if predicate(n))


@pytest.mark.parametrize("name, accumulator", [("conv1d", "conv"), ("gemm", "prod"), ("upsample", "conv")])
def test_each_mapping_pass_keeps_what_the_program_computes(name: str, accumulator: str) -> None:
    """The interpreter runs the program after each pass: the same outputs
    as the original."""
    original, stmt = _selected(name, accumulator)
    for step in GPU_MAPPING:
        stmt = step.apply(stmt, None)  # type: ignore[arg-type]
        check = verify(original, stmt, seed=1)
        assert check.ok, f"after {step.name}: {check.summary()}"


def test_the_mapping_is_idempotent() -> None:
    _, stmt = _selected("conv2d", "conv")
    mapped = map_to_gpu(stmt)
    assert map_to_gpu(mapped) == mapped


def test_operand_fragments_used_twice_are_loaded_once_into_a_let() -> None:
    """gemm's 4 x 4 tiles: per reduction step 4 A and 4 B fragments, each
    read by four products; the 16 lane loops of one step became one."""
    _, stmt = _selected("gemm", "prod")
    reused = reuse_operand_fragments(stmt)
    lets = [n for n in ir.walk(reused) if isinstance(n, ir.LetStmt) and n.name.startswith("wmma.")]
    assert sorted({n.name.split(".")[1] for n in lets}) == ["a", "b"]
    loads = [n for n in ir.calls(reused) if n.name.startswith("wmma.load.a") or n.name.startswith("wmma.load.b")]
    assert len(loads) == len(set(loads)) == 32
    lane_loops = _count(reused, lambda n: isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_LANE)
    assert lane_loops < _count(stmt, lambda n: isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_LANE)


def test_a_fragment_is_loaded_again_after_its_memory_is_written() -> None:
    """A staging copy into the buffer an operand is read from ends its reuse."""
    text = """gpu_block<CUDA> (b.block_id_x, 0, 1) {
 allocate acc[float32 * 512] in WMMAAccumulator
 allocate A.wmma_stage.0[float16 * 256] in GPUShared
 gpu_lane<CUDA> (wmma.lane, 0, 32) {
  acc[ramp(0, 1, 256)] = (float32x256)wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32((float16x256)wmma.load.a.sync.aligned.row.m16n16k16.f16(A.wmma_stage.0, 0, 16), (float16x256)wmma.load.b.sync.aligned.row.m16n16k16.f16(B, 0, 16), acc[ramp(0, 1, 256)])
  A.wmma_stage.0[ramp(0, 1, 256)] = A[ramp(0, 1, 256)]
  acc[ramp(256, 1, 256)] = (float32x256)wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32((float16x256)wmma.load.a.sync.aligned.row.m16n16k16.f16(A.wmma_stage.0, 0, 16), (float16x256)wmma.load.b.sync.aligned.row.m16n16k16.f16(B, 0, 16), acc[ramp(256, 1, 256)])
 }
}
"""
    stmt = parse_input(text, buffer_types={"A": ir.Float(16), "B": ir.Float(16)}).ir
    assert isinstance(stmt, ir.Stmt)
    reused = reuse_operand_fragments(stmt)
    lets = [n for n in ir.walk(reused) if isinstance(n, ir.LetStmt)]
    assert [let.name for let in lets] == ["wmma.b.0"]  # B is shared, A is written in between
    assert _count(reused, lambda n: isinstance(n, ir.Call) and n.name.startswith("wmma.load.a")) == 2


def test_spread_stores_and_their_barriers_on_a_conv1d() -> None:
    """conv1d's three fills (a Toeplitz matrix and two padded operands) are
    spread over the block: one barrier before the first (the products of
    the previous reduction step may still read what it overwrites), and one
    that the three share, before this step's products."""
    _, stmt = _selected("conv1d", "conv")
    spread = spread_lanes(reuse_operand_fragments(stmt))
    fills = [n for n in ir.walk(spread) if isinstance(n, ir.Store) and spread_value(n) is not None]
    assert len(fills) == 3 and all(".toeplitz." in s.name or ".padded." in s.name for s in fills)
    placed = place_barriers(spread)
    levels = [barrier_level(n) for n in ir.walk(placed) if isinstance(n, ir.Evaluate) and barrier_level(n)]
    assert levels == ["block", "block"]
    loop = next(n for n in ir.walk(placed) if isinstance(n, ir.For) and n.kind is ir.ForKind.SERIAL)
    order = [("barrier" if barrier_level(n) else "fill" if isinstance(n, ir.Store) and spread_value(n) else "mma")
             for n in ir.walk(loop) if (isinstance(n, ir.Evaluate) and barrier_level(n))
             or (isinstance(n, ir.Store) and (spread_value(n) or n.name == "conv"))]
    assert order == ["barrier", "fill", "fill", "fill", "barrier", "mma", "mma"]


@pytest.mark.parametrize("name", ["resize", "resize_up"])
def test_lanes_read_a_stored_fragment_only_after_a_warp_barrier(name: str) -> None:
    """resize's second pass stores its accumulator tile to shared memory and
    the schedule's own lane loops read it back element by element, in a
    block that is one warp. The first run on a GPU (H200, 2026-11-28)
    found no barrier there (racecheck: 4 hazards per kernel); the lane loop
    that stores now owes a warp barrier, placed before the reads."""
    selection = select_instructions(parse_input((APPS / f"{name}.stmt").read_text()).ir,  # type: ignore[arg-type]
                                    SelectionOptions(store_in={"resized_y": "WMMAAccumulator",
                                                               "resized_x": "WMMAAccumulator"}))
    mapped = map_to_gpu(legalize(selection.stmt, selection, LEGALIZATION))
    assert _count(mapped, lambda n: isinstance(n, ir.Call) and n.name.startswith("wmma.store")) >= 2
    assert _fragment_stores_read_without_a_barrier(mapped) == []


def test_a_lane_loop_that_writes_only_what_nothing_reads_owes_no_barrier() -> None:
    """A warp storing its tile to the output, which the kernel never reads,
    needs no barrier after it (none at the kernel's end either)."""
    text = """gpu_block<CUDA> (b.block_id_x, 0, 1) {
 allocate acc[float32 * 256] in WMMAAccumulator
 allocate tile[float32 * 256] in GPUShared
 gpu_lane<CUDA> (wmma.lane, 0, 32) {
  acc[ramp(0, 1, 256)] = (float32x256)wmma.fill.m16n16k16.f32(0.000000f)
  wmma.store.d.sync.aligned.row.m16n16k16.f32(tile, acc[ramp(0, 1, 256)], 0, 16)
 }
 gpu_lane<CUDA> (l.thread_id_x, 0, 32) {
  out[l.thread_id_x] = tile[l.thread_id_x*8]
 }
 gpu_lane<CUDA> (wmma.lane, 0, 32) {
  wmma.store.d.sync.aligned.row.m16n16k16.f32(out2, acc[ramp(0, 1, 256)], 0, 16)
 }
}
"""
    stmt = parse_input(text, buffer_types={"out": ir.Float(32), "out2": ir.Float(32)}).ir
    assert isinstance(stmt, ir.Stmt)
    placed = place_barriers(stmt)
    assert _fragment_stores_read_without_a_barrier(stmt) == ["tile"]
    assert _fragment_stores_read_without_a_barrier(placed) == []
    assert _program_order(placed) == ["lanes write tile", "warp barrier", "lanes write out", "lanes write out2"]


def _program_order(stmt: ir.Stmt) -> list[str]:
    """A loop body's statements as they run: barriers, lane loops (by the
    buffers they write) and spread fills (by theirs)."""
    order = []
    for node in ir.walk(stmt):
        if isinstance(node, ir.Evaluate) and barrier_level(node):
            order.append(f"{barrier_level(node)} barrier")
        elif isinstance(node, ir.For) and node.kind is ir.ForKind.GPU_LANE:
            written = sorted({n.name for n in ir.walk(node.body) if isinstance(n, ir.Store) and n.name != "acc"}
                             | {n.args[0].name for n in ir.walk(node.body) if isinstance(n, ir.Call)
                                and n.name.startswith("wmma.store")})
            order.append(f"lanes write {','.join(written)}")
        elif isinstance(node, ir.Store) and spread_value(node) is not None:
            order.append(f"fill {node.name}")
    return order


def test_a_lane_loop_waits_for_readers_of_what_it_overwrites_and_fills_wait_for_it() -> None:
    """In a loop, a warp stores its tile to shared memory for its lanes to
    read, then refills an operand its products read. The store waits at a
    barrier for the lanes still reading the last iteration's tile (write
    after read), the refill waits for the products (the lane loop's loads),
    and the reads wait for the store."""
    text = """gpu_block<CUDA> (b.block_id_x, 0, 1) {
 gpu_thread<CUDA> (w.thread_id_x, 0, 2) {
  allocate A[float16 * 512] in GPUShared
  allocate K[float16 * 128] in GPUShared
  allocate tile[float32 * 256] in GPUShared
  allocate acc[float32 * 256] in WMMAAccumulator
  for (r, 0, 4) {
   gpu_lane<CUDA> (wmma.lane, 0, 32) {
    acc[ramp(0, 1, 256)] = (float32x256)wmma.mma.sync.aligned.row.row.m32n8k16.f32.f32((float16x512)wmma.load.a.sync.aligned.row.m32n8k16.f16(A, 0, 16), (float16x128)wmma.load.b.sync.aligned.row.m32n8k16.f16(K, 0, 8), acc[ramp(0, 1, 256)])
    wmma.store.d.sync.aligned.row.m32n8k16.f32(tile, acc[ramp(0, 1, 256)], 0, 8)
   }
   A[ramp(0, 1, 512)] = (float16x512)spread_over_threads(image[ramp(r*512, 1, 512)])
   gpu_lane<CUDA> (n.thread_id_x, 0, 32) {
    out[n.thread_id_x + (r*32)] = tile[n.thread_id_x*8]
   }
  }
 }
}
"""
    stmt = parse_input(text, buffer_types={"image": ir.Float(16), "out": ir.Float(32)}).ir
    assert isinstance(stmt, ir.Stmt)
    loop = next(n for n in ir.walk(place_barriers(stmt)) if isinstance(n, ir.For) and n.kind is ir.ForKind.SERIAL)
    assert _program_order(loop.body) == ["warp barrier", "lanes write tile", "warp barrier", "fill A",
                                         "warp barrier", "lanes write out"]


def test_a_barrier_is_not_placed_twice() -> None:
    _, stmt = _selected("conv2d", "conv")
    placed = map_to_gpu(stmt)
    for node in ir.walk(placed):
        if isinstance(node, ir.Block):
            levels = [barrier_level(s) for s in node.stmts]
            assert not any(a is not None and a == b for a, b in zip(levels, levels[1:]))


def test_print_after_shows_the_three_passes_on_a_conv1d() -> None:
    args = ("compile", str(APPS / "conv1d.stmt"), "--store-in", "conv=WMMAAccumulator", "--no-cache", "-q",
            "--print-after", "wmma-fragments", "--print-after", "reuse-operand-fragments",
            "--print-after", "spread-lanes", "--print-after", "place-barriers", "-o", "/dev/null")
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr.decode()
    dumps = dict(re.findall(r"// -----// IR Dump After (\S+) .*? //----- //\n(.*?)(?=// -----//|\Z)",
                            result.stderr.decode(), re.S))
    assert set(dumps) == {"wmma-fragments", "reuse-operand-fragments", "spread-lanes", "place-barriers"}
    lane_loops = [text.count("gpu_lane<CUDA> (wmma.lane") for text in dumps.values()]
    assert lane_loops[1] < lane_loops[0]  # neighbouring lane loops joined
    assert SPREAD not in dumps["reuse-operand-fragments"] and SPREAD in dumps["spread-lanes"]
    assert THREAD_BARRIER not in dumps["spread-lanes"] and THREAD_BARRIER in dumps["place-barriers"]
    assert WARP_BARRIER not in dumps["wmma-fragments"]
