"""Loops whose iterations are independent (parallel, gpu_block, gpu_thread,
gpu_lane) run batched in the interpreter: every statement once for all
iterations, on values with a row per iteration (verify/interp.py). That is
only an engine: it must compute, bit for bit, what running the iterations
one after the other computes, on the real programs (the applications and
fixtures, original and tensorized) and on the constructs that make
iterations disagree (tails, branches, allocations, offsets), while running
far fewer statements."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.verify.compare import poison_seed, run_original
from hardboiled.verify.interp import INDEPENDENT_ITERATIONS, BufferT, Interpreter, InterpreterError

from ..conftest import MANIFEST, ROOT, tensorized_app, tensorized_fixture


class _Counting(Interpreter):
    """Counts the stores it runs (one per statement run, batched or not)."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.stores = 0

    def visit_store(self, s: ir.Store) -> None:
        self.stores += 1
        super().visit_store(s)


class _Serial(_Counting):
    batches_loops = False


def _both(stmt: ir.Stmt, buffers: dict[str, BufferT], seed: int = 3, params: dict | None = None,
          batched_class: type[_Counting] = _Counting) -> tuple[_Counting, _Serial, dict, dict]:
    batched_state, serial_state = copy.deepcopy(buffers), copy.deepcopy(buffers)
    batched = batched_class(params=params, buffers=batched_state, poison_seed=poison_seed(seed, 1))
    serial = _Serial(params=params, buffers=serial_state, poison_seed=poison_seed(seed, 1))
    batched.run(stmt)
    serial.run(stmt)
    return batched, serial, batched_state, serial_state


def _assert_same(batched: dict[str, BufferT], serial: dict[str, BufferT]) -> None:
    for name in serial:
        a, b = batched[name].data, serial[name].data
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), f"'{name}' differs between batched and serial"


def _batches(stmt: ir.Stmt) -> bool:
    """Whether a loop of independent iterations runs more than once (a lane
    loop of WMMA operations runs once either way)."""
    return any(isinstance(n, ir.For) and n.kind in INDEPENDENT_ITERATIONS - {ir.ForKind.GPU_LANE}
               and not (isinstance(n.extent, ir.IntImm) and n.extent.value < 2) for n in ir.walk(stmt))


_APPS = sorted(p.stem for p in (ROOT / "tests" / "fixtures" / "apps").glob("*.stmt"))


@pytest.mark.slow
@pytest.mark.parametrize("name", _APPS)
def test_every_application_computes_the_same_batched_and_serial(name: str) -> None:
    """Original and tensorized, every output and every input bit for bit,
    the same reads of unwritten memory; the GPU programs run fewer
    statements (at the test sizes, a few blocks: bench/verify_paper.py has
    the paper's)."""
    original = parse_input((ROOT / "tests" / "fixtures" / "apps" / f"{name}.stmt").read_text()).ir
    assert isinstance(original, ir.Stmt)
    buffers, _, _ = run_original(original, {}, 0)
    for program in (original, tensorized_app(name)):
        batched, serial, batched_state, serial_state = _both(program, buffers)
        _assert_same(batched_state, serial_state)
        assert batched.undefined_reads == serial.undefined_reads
        assert batched.stores <= serial.stores
        if _batches(program):
            assert batched.stores < serial.stores, (batched.stores, serial.stores)


_GPU_FIXTURES = sorted(case for case, entry in MANIFEST.items() if entry["accelerator"] == "wmma")


@pytest.mark.parametrize("case", _GPU_FIXTURES[::3])
def test_gpu_fixtures_compute_the_same_batched_and_serial(case: str) -> None:
    original, rewritten = tensorized_fixture(case)
    buffers, _, _ = run_original(original, {}, 0)
    for program in (original, rewritten):
        _, _, batched_state, serial_state = _both(program, buffers)
        _assert_same(batched_state, serial_state)


def _run_text(text: str, arrays: dict[str, np.ndarray], params: dict | None = None,
              batched_class: type[_Counting] = _Counting) -> tuple[_Counting, _Serial, dict, dict]:
    stmt = parse_input(text, "batched.stmt",
                       buffer_types={name: ir.Int(32) for name in arrays}).ir
    assert isinstance(stmt, ir.Stmt)
    buffers = {name: BufferT(name, ir.Int(32), array.copy(), (0,), (array.size,), (1,))
               for name, array in arrays.items()}
    hosts = stmt
    for name in arrays:
        hosts = ir.LetStmt(name, ir.Call("_halide_buffer_get_host", (ir.Variable(f"{name}.buffer", ir.handle_type()),),
                                         ir.handle_type()), hosts)
    return _both(hosts, buffers, params=params, batched_class=batched_class)


def test_tails_branches_and_allocations_of_each_iteration() -> None:
    """Blocks whose inner loop runs over ranges of their own (a tail),
    whose branch differs, each with an allocation of its own written at an
    offset that depends on the block: the same as one block at a time."""
    text = (
        "gpu_block<CUDA> (b, 0, 7) {\n"
        " allocate tmp[int32 * 8] in Auto\n"
        " for (i, 0, min(8, 50 - b*8)) {\n"
        "  tmp[i] = b*100 + i\n"
        " }\n"
        " gpu_thread<CUDA> (t, 0, 4) {\n"
        "  if (b % 2 == t % 2) {\n"
        "   out[(b*4) + t] = tmp[t] + tmp[min(7, t + (b % 3))]\n"
        "  } else {\n"
        "   out[(b*4) + t] = 0 - 1\n"
        "  }\n"
        " }\n"
        "}\n"
    )
    batched, serial, batched_state, serial_state = _run_text(text, {"out": np.zeros(28, np.int32)})
    _assert_same(batched_state, serial_state)
    assert batched_state["out"].data[4 * 6 + 0] == 1200  # block 6 wrote 2 elements of tmp only: its tail
    assert batched.stores < serial.stores


def test_a_read_of_an_unwritten_element_names_the_iterations_own_index() -> None:
    """Poison in a per-block allocation: the log names the element in the
    block's own allocation, not its place in the batch's memory."""
    text = (
        "gpu_block<CUDA> (b, 0, 4) {\n"
        " allocate tmp[int32 * 4] in Auto\n"
        " tmp[ramp(0, 1, 2)] = x2(b)\n"
        " out[b] = tmp[3]\n"
        "}\n"
    )
    batched, serial, _, _ = _run_text(text, {"out": np.zeros(4, np.int32)})
    assert batched.undefined_reads == serial.undefined_reads == ["'tmp' element 3"]


def test_iterations_that_write_one_element_leave_the_last_ones_value() -> None:
    """Two iterations storing to one element (a race on a GPU): the later
    iteration's value stays, as when they run one after the other."""
    text = "gpu_block<CUDA> (b, 0, 5) {\n out[b / 2] = b\n}\n"
    _, _, batched_state, serial_state = _run_text(text, {"out": np.zeros(3, np.int32)})
    _assert_same(batched_state, serial_state)
    assert list(batched_state["out"].data) == [1, 3, 4]


def test_an_atomic_update_runs_its_iterations_one_by_one() -> None:
    text = "parallel (i, 0, 16) {\n atomic (out) {\n  out[0] = out[0] + i\n }\n}\n"
    batched, _, batched_state, _ = _run_text(text, {"out": np.zeros(1, np.int32)})
    assert batched_state["out"].data[0] == sum(range(16))
    assert batched.stores == 16


def test_a_tile_operation_stays_inside_its_iterations_allocation() -> None:
    """An AMX tile load in a parallel loop runs iteration by iteration; its
    allocation is one row of the batch's memory, and a load past that row
    (into the next iteration's) is out of bounds, batched or not."""
    text = (
        "parallel (b, 0, 3) {\n"
        " allocate tmp[float32 * 16] in Stack\n"
        " tmp[ramp(0, 1, 16)] = x16(1.000000f)\n"
        " out[ramp(b*16, 1, 16)] = (float32x16)tile_load(2, 64, tmp, 0, 64)\n"
        "}\n"
    )
    stmt = parse_input(text, "tiles.stmt", buffer_types={"out": ir.Float(32)}).ir
    out = BufferT("out", ir.Float(32), np.zeros(48, np.float32), (0,), (48,), (1,))
    program = ir.LetStmt("out", ir.Call("_halide_buffer_get_host", (ir.Variable("out.buffer", ir.handle_type()),),
                                        ir.handle_type()), stmt)
    for interpreter in (Interpreter(buffers={"out": copy.deepcopy(out)}),
                        _Serial(buffers={"out": copy.deepcopy(out)})):
        with pytest.raises(InterpreterError, match="out of bounds"):
            interpreter.run(program)


def test_threads_inside_a_block_that_ran_on_its_own() -> None:
    """A block whose second allocation has a size of its own (a tail) runs
    block by block from there; the (nested) thread loops inside are batched
    again, over the block's share of the first allocation, made for all
    blocks."""
    text = (
        "gpu_block<CUDA> (b, 0, 3) {\n"
        " allocate tmp[int32 * 16] in Auto\n"
        " allocate tail[int32 * (4 - b)] in Auto\n"
        " gpu_thread<CUDA> (ty, 0, 2) {\n"
        "  gpu_thread<CUDA> (tx, 0, 2) {\n"
        "   tmp[ramp(((ty*2) + tx)*4, 1, 4)] = x4((b*10) + ((ty*2) + tx))\n"
        "  }\n"
        " }\n"
        " gpu_thread<CUDA> (t, 0, 4 - b) {\n"
        "  tail[t] = tmp[(3 - t)*4]\n"
        " }\n"
        " gpu_thread<CUDA> (t, 0, 4 - b) {\n"
        "  out[(b*4) + t] = tail[t]\n"
        " }\n"
        "}\n"
    )
    _, _, batched_state, serial_state = _run_text(text, {"out": np.full(12, -1, np.int32)})
    _assert_same(batched_state, serial_state)
    assert list(batched_state["out"].data[4:8]) == [13, 12, 11, -1]


# Serial loops Halide leaves around a scalar update (verify/independence.py)
# The serial run of the last four takes seconds by design (up to 264,000
# scalar stores, one interpreter step each): they run in `make test`, not
# in `make test-fast`.
_SCALARIZED = ("amx_K-48", *(pytest.param(name, marks=pytest.mark.slow) for name in (
    "amx_acc_layout-xy", "amx_tiles-2x2", "wmma_acc_layout-yx", "wmma_K-40")))


@pytest.mark.parametrize("name", _SCALARIZED)
def test_scalar_update_nests_of_the_sweep_run_batched_with_the_same_bits(name: str) -> None:
    """Real Halide dumps whose update Halide left scalar: the serial loops
    whose iterations update disjoint elements run batched, every buffer
    bit for bit as serially, with far fewer statements."""
    original = parse_input((ROOT / "tests" / "fixtures" / "sweep" / f"{name}.stmt").read_text()).ir
    assert isinstance(original, ir.Stmt)
    buffers, _, _ = run_original(original, {}, 0)
    batched, serial, batched_state, serial_state = _both(original, buffers)
    _assert_same(batched_state, serial_state)
    assert batched.undefined_reads == serial.undefined_reads
    assert batched.stores * 4 <= serial.stores


_NEST = """for (x, 0, 4) {
 for (y, 0, 4) {
  for (r, 0, 8) {
   let i = {index}
   acc[i] = acc[i] + (a[(x*8) + r]*b[(r*4) + y])
  }
 }
}
"""


class _Recording(_Counting):
    """Records the serial loops it runs batched."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.batched_loops: set[str] = set()

    def _run_batched(self, s: ir.For, lo: int, count: int, chunk: int) -> None:
        self.batched_loops.add(s.name)
        super()._run_batched(s, lo, count, chunk)


@pytest.mark.parametrize(("index", "batched_loops"), [
    ("(x*4) + y", {"x", "y"}),   # rows 4 apart, 4 wide: every iteration of x or y its own elements
    ("(x*2) + y", {"y"}),        # rows overlap: x stays serial, y (for each x) is independent
    ("x + y", {"y"}),            # iterations of x meet each other's elements; of y, for one x, do not
    ("(y*4) + x", {"x", "y"}),   # transposed: x's elements are columns, disjoint all the same
    ("(y*w) + x", {"x", "y"}),   # a row width known only at run time (w = 4)
    ("(y*w) + (x*2)", {"y"}),    # the same width, x's columns spread past it (x = 2 meets y + 1's x = 0)
    ("0", set()),                # every iteration updates the same element
])
def test_a_serial_loop_runs_batched_only_when_its_iterations_touch_disjoint_elements(
        index: str, batched_loops: set[str]) -> None:
    rng = np.random.default_rng(0)
    arrays = {"acc": rng.integers(-100, 100, 32), "a": rng.integers(-100, 100, 32), "b": rng.integers(-100, 100, 32)}
    batched, serial, batched_state, serial_state = _run_text(
        _NEST.replace("{index}", index), {k: v.astype(np.int32) for k, v in arrays.items()}, {"w": 4}, _Recording)
    _assert_same(batched_state, serial_state)
    assert isinstance(batched, _Recording) and batched.batched_loops == batched_loops
    assert (batched.stores < serial.stores) == bool(batched_loops)


@pytest.mark.parametrize("seed", range(4))
def test_the_disjointness_check_agrees_with_counting_each_elements_iterations(seed: int) -> None:
    """``touch_disjoint_elements`` (a table over the elements' span, or a
    sort where they spread too far for one) against the definition: no
    (row, element) is touched by two iterations. Seeded draws: indices
    dense or spread over 2**31, some iterations repeating a lane, some
    rows sharing elements, a lane count of 1 to 16."""
    from hardboiled.verify.independence import touch_disjoint_elements

    rng = np.random.default_rng(seed)
    verdicts = set()
    for _ in range(300):
        rows, iterations, lanes = (int(rng.integers(1, n)) for n in (4, 12, 17))
        spread = int(rng.choice([1, 2, 64, 1 << 20, 1 << 31]))
        row = np.repeat(np.arange(rows), iterations)
        iteration = np.tile(np.arange(iterations, dtype=np.int32) + int(rng.integers(-5, 5)), rows)
        if rng.random() < 0.5:  # disjoint by construction, but for the collisions drawn below
            base = np.arange(iterations * lanes, dtype=np.int64).reshape(iterations, lanes) * spread
            index = np.tile(base, (rows, 1)) - spread * int(rng.integers(0, 3))
        else:
            index = rng.integers(0, max(2, iterations * lanes * int(rng.integers(1, 3))), (rows * iterations, lanes))
            index = index.astype(np.int64) * spread
        if rng.random() < 0.3:  # one element touched again by another point
            a, b = rng.integers(0, rows * iterations, 2)
            index[a, int(rng.integers(0, lanes))] = index[b, int(rng.integers(0, lanes))]
        touched: dict[tuple[int, int], set[int]] = {}
        for point in range(rows * iterations):
            for element in index[point]:
                touched.setdefault((int(row[point]), int(element)), set()).add(int(iteration[point]))
        expected = all(len(found) == 1 for found in touched.values())
        assert touch_disjoint_elements(row, iteration, index) == expected
        verdicts.add(expected)
    assert verdicts == {True, False}


def test_a_loop_that_reads_another_iterations_element_is_not_an_update_nest() -> None:
    from hardboiled.verify.independence import update_nest

    text = _NEST.replace("{index}", "(x*4) + y").replace("(a[(x*8) + r]", "(acc[0]")
    stmt = parse_input(text, "nest.stmt", buffer_types={"acc": ir.Int(32), "b": ir.Int(32)}).ir
    loops = [n for n in ir.walk(stmt) if isinstance(n, ir.For)]
    assert loops and not any(update_nest(n, list(ir.walk(n.body))) for n in loops)


def test_an_index_that_reads_memory_is_not_an_update_nest() -> None:
    from hardboiled.verify.independence import update_nest

    text = _NEST.replace("{index}", "a[x] + y")
    stmt = parse_input(text, "nest.stmt", buffer_types={n: ir.Int(32) for n in ("acc", "a", "b")}).ir
    assert not any(update_nest(n, list(ir.walk(n.body))) for n in ir.walk(stmt) if isinstance(n, ir.For))
