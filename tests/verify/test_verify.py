"""The reference interpreter and translation validation (issue: every
rewrite proven by execution)."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input, parse_text
from hardboiled.legalize.passes import tensorize
from hardboiled.select import rule_files
from hardboiled.select.selector import SelectionOptions
from hardboiled.verify.compare import compare, verify
from hardboiled.verify.interp import BufferT, Interpreter

from ..conftest import FIXTURES, MANIFEST, run_cli, tensorized_fixture

AMX_CASES = sorted(c for c, m in MANIFEST.items() if m["accelerator"] == "amx")


def _stmt(case: str, name: str = "vectorizing.stmt") -> ir.Stmt:
    parsed = parse_input((FIXTURES / case / name).read_text())
    assert isinstance(parsed.ir, ir.Stmt)
    return parsed.ir


@pytest.mark.slow
@pytest.mark.parametrize("case", AMX_CASES)
def test_every_amx_rewrite_verifies(case: str) -> None:
    original, rewritten = tensorized_fixture(case)
    for seed in (0, 1):
        result = verify(original, rewritten, seed=seed)
        assert result.ok, result.summary()
        assert result.outputs and all(c.elements >= 128 for c in result.outputs)


@pytest.mark.parametrize("case", [c for c in AMX_CASES if MANIFEST[c]["strides"] == "symbolic"
                                  and MANIFEST[c]["b_layout"] == "vnni" and "preload" not in c])
def test_symbolic_vnni_strides_verify_when_they_are_not_dense(case: str) -> None:
    # B.stride.1 = 5 (not the dense 2 or 4): the rewrite must gather B.
    original, rewritten = tensorized_fixture(case)
    result = verify(original, rewritten, params={"B.stride.1": 5, "B.stride.2": 200})
    assert result.ok, result.summary()


def test_upstream_halides_standard_layout_output_is_caught() -> None:
    # Upstream Halide's own AMX pass writes a 1-byte row stride for a
    # standard-layout B: wrong code, found by running it.
    case = FIXTURES / "amx_bf16_matmul_std_single"
    bad = run_cli("verify", str(case / "debug.log"), str(case / "extracting_tile_operations.stmt"))
    assert bad.returncode == 5
    text = bad.stderr.decode()
    assert "computes different results" in text and "MISMATCH at mm_global_wrapper$0[" in text
    assert "replay with --seed 0" in text
    # Its VNNI output is right on dense buffers from 0, and wrong where the
    # rows are padded: verification's second buffer layout finds it alone.
    vnni = FIXTURES / "amx_bf16_matmul_vnni_single"
    upstream = run_cli("verify", str(vnni / "debug.log"), str(vnni / "extracting_tile_operations.stmt"))
    assert upstream.returncode == 5, upstream.stderr.decode()
    assert "in the buffer layout 'mins shifted by 3, rows padded by 5'" in upstream.stderr.decode()
    ours = run_cli("compile", str(vnni / "debug.log"), "--verify", "-o", "-")
    assert ours.returncode == 0 and b"buffer layouts: dense from 0, mins shifted by 3, rows padded by 5" in ours.stderr


def test_upstream_vnni_with_a_non_dense_stride_is_caught_and_ours_is_not(tmp_path: Path) -> None:
    case = FIXTURES / "amx_bf16_matmul_vnni_tiled"
    ours = tmp_path / "ours.stmt"
    compiled = run_cli("compile", str(case / "vectorizing.stmt"), "-o", str(ours), "-q")
    assert compiled.returncode == 0
    params = ["--param", "B.stride.1=3", "--param", "B.stride.2=50"]
    assert run_cli("verify", str(case / "vectorizing.stmt"), str(ours), *params).returncode == 0
    upstream = run_cli("verify", str(case / "vectorizing.stmt"), str(case / "extracting_tile_operations.stmt"), *params)
    assert upstream.returncode == 5


def test_a_broken_index_is_caught() -> None:
    # Mutation: the A tile's row stride doubled.
    original = _stmt("amx_bf16_matmul_std_tiled")
    rewritten = tensorize(original, SelectionOptions()).stmt
    from hardboiled.ir.printer import print_ir

    text = print_ir(rewritten)
    stride = "int64(A.stride.1)*(int64)2"
    assert stride in text
    broken = parse_text(text.replace(stride, "int64(A.stride.1)*(int64)4"))
    assert isinstance(broken, ir.Stmt)
    assert not verify(original, broken).ok


def test_a_broken_rule_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Mutation: the standard-layout B rule interleaves by 4 instead of the
    # element's K pack (2 for bf16). Selection still succeeds; running it
    # shows the result is wrong.
    real = rule_files.rule_text

    def mutated(name: str) -> str:
        text = real(name)
        if name == "amx_layouts.egg":
            text = text.replace("(Temp (VNNIInterleave kpack k n", "(Temp (VNNIInterleave 4 k n", 1)
        return text

    monkeypatch.setattr(rule_files, "rule_text", mutated)
    original = _stmt("amx_bf16_matmul_std_single")
    rewritten = tensorize(original, SelectionOptions()).stmt
    assert any(isinstance(n, ir.Call) and n.name == "tile_matmul" for n in ir.walk(rewritten))
    assert not verify(original, rewritten).ok


def test_compile_verify_fails_cleanly_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = FIXTURES / "amx_bf16_matmul_std_single" / "debug.log"
    out = tmp_path / "out.stmt"
    ok = run_cli("compile", str(case), "--verify", "-o", str(out))
    assert ok.returncode == 0 and out.exists()
    assert b"verify (seed 0): mm_global_wrapper$0: equal" in ok.stderr
    out.unlink()
    # A rule file that lies about the interleave, through a schedule that
    # redefines nothing: exercised via the mutated-rule path above; here the
    # CLI path is checked with a wrong stride given to the original.
    bad = run_cli("verify", str(case), str(FIXTURES / "amx_bf16_matmul_std_single" / "extracting_tile_operations.stmt"),
                  "--seed", "7")
    assert bad.returncode == 5 and b"replay with --seed 7" in bad.stderr
    assert not out.exists()


# --------------------------------------------------------------------------
# Interpreter semantics
# --------------------------------------------------------------------------


def _eval(text: str, **env: object) -> np.ndarray:
    stmt = parse_text(f"let result = {text}\n")
    assert isinstance(stmt, ir.LetStmt)
    return Interpreter(env).eval(stmt.value)  # type: ignore[arg-type]


def test_integer_division_and_modulo_follow_halide() -> None:
    assert _eval("(0 - 7)/2").tolist() == [-4]
    assert _eval("(0 - 7) % 2").tolist() == [1]
    assert _eval("7/(0 - 2)").tolist() == [-3]
    assert _eval("7 % (0 - 2)").tolist() == [1]
    assert _eval("(0 - 7)/(0 - 2)").tolist() == [4]
    assert _eval("5/0").tolist() == [0] and _eval("5 % 0").tolist() == [0]


def test_casts_wrap_and_truncate() -> None:
    assert _eval("int8(200)").tolist() == [-56]
    assert _eval("uint8((0 - 1))").tolist() == [255]
    assert _eval("int32(-2.700000f)").tolist() == [-2]
    value = _eval("bfloat16(1.007812f)")  # 1 + 2^-7 is exactly a bfloat16
    assert value.dtype == ml_dtypes.bfloat16 and float(value[0]) == 1.0078125
    # rounding to nearest even: 1 + 3*2^-9 rounds up to 1 + 2^-7
    assert float(_eval("bfloat16(1.005859f)")[0]) == 1.0078125


def test_vectors_ramps_broadcasts_and_reductions() -> None:
    assert _eval("ramp(ramp(0, 1, 2), x2(10), 3)").tolist() == [0, 1, 10, 11, 20, 21]
    assert _eval("x3(ramp(5, 2, 2))").tolist() == [5, 7, 5, 7, 5, 7]
    assert _eval("(int32x2)vector_reduce_add(ramp(0, 1, 6))").tolist() == [3, 12]
    assert _eval("(int32x3)vector_reduce_max(ramp(0, 1, 6))").tolist() == [1, 3, 5]
    assert _eval("slice_vectors(ramp(0, 1, 8), 1, 3, 2)").tolist() == [1, 4]


def test_tile_ops_on_hand_computed_values() -> None:
    # A 2x4 bf16 tile times a 4x2 B in VNNI order: C = A . B, by hand.
    a = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], dtype=np.float32)
    b = np.array([[1, 0], [0, 1], [1, 1], [2, 0]], dtype=np.float32)  # K x N
    vnni = b.reshape(2, 2, 2).transpose(0, 2, 1).reshape(-1)  # [k/2][n][k%2]
    a_buf = np.zeros(1024, dtype=ml_dtypes.bfloat16)
    a_buf[:8] = a.reshape(-1)
    b_buf = np.zeros(1024, dtype=ml_dtypes.bfloat16)
    b_buf[:8] = vnni
    out = np.zeros(4, dtype=np.float32)
    program = parse_text(
        "allocate c[float32 * 256]\n"
        "c[ramp(0, 1, 256)] = (float32x256)tile_zero(2, 8)\n"
        "c[ramp(0, 1, 256)] = (float32x256)tile_matmul(2, 8, 4, c[ramp(0, 1, 256)], "
        "(bfloat16x512)tile_load(2, 8, A, 0, 8), (bfloat16x512)tile_load(2, 8, B, 0, 8))\n"
        "tile_store(2, 8, out, 0, 8, c[ramp(0, 1, 256)])\n"
    )
    interp = Interpreter()
    from hardboiled.verify.interp import Pointer

    interp.env.values.update(A=Pointer(a_buf), B=Pointer(b_buf), out=Pointer(out))
    assert isinstance(program, ir.Stmt)
    interp.run(program)
    assert out.reshape(2, 2).tolist() == (a @ b).tolist() == [[12, 5], [28, 13]]


def test_buffers_are_sized_from_the_dumps_checks() -> None:
    from hardboiled.verify.inputs import make_buffers

    buffers, outputs = make_buffers(_stmt("amx_bf16_matmul_std_tiled_const"), {}, 0)
    assert outputs == {"mm_global_wrapper$0"}
    a = buffers["A"]
    assert isinstance(a, BufferT) and a.type == ir.BFloat(16)
    assert a.extents == (128, 64) and a.strides == (1, 128)
    b = buffers["B"]
    assert b.extents == (64, 128)


def test_an_input_behind_a_boundary_condition_holds_the_region_read_before_the_clamp() -> None:
    # A is read through constant_exterior, so any size of A is valid; an A
    # beside the region the program reads (its batch dimension at the
    # layout's shifted min) gave an output of zeros alone, which proved
    # nothing. A covers that region now, less one element at each end of a
    # long dimension, so that the exterior is read too.
    from hardboiled.verify.inputs import SHAPES, make_buffers

    stmt = parse_input((FIXTURES.parent / "sweep" / "amx_sizes-symbolic_batch_operand-boundary.stmt").read_text()).ir
    for shape in SHAPES:
        buffers, _ = make_buffers(stmt, {}, 0, shape=shape)
        a = buffers["A"]
        assert isinstance(a, BufferT)
        assert a.mins[2] == 0 and a.extents[2] == 2  # both batches (n = 0, 1) are read
        assert a.mins[0] == 1 and a.extents[0] == 64 - 2  # K = 64, less its first and last


@pytest.mark.parametrize("expected,actual,mismatch", [
    # A NaN or an infinity in the original must not widen the tolerance to
    # NaN or infinity (which accepted any difference at all).
    ([np.nan, 1.0, 2.0], [np.nan, 1.0, 100.0], 2),
    ([np.inf, 1.0, 2.0], [np.inf, 1.0, 100.0], 2),
    ([np.inf, 1.0], [-np.inf, 1.0], 0),
    ([np.nan, 1.0], [0.0, 1.0], 0),
    ([-np.inf, np.nan, 3.0], [-np.inf, np.nan, 3.0], None),
])
def test_non_finite_values_are_matched_exactly(expected: list, actual: list, mismatch: int | None) -> None:
    result = compare("out", ir.Float(32), np.array(expected, np.float32), np.array(actual, np.float32))
    assert result.first_mismatch == mismatch
    assert np.isfinite(result.tolerance)


def test_a_mismatch_names_the_first_pass_that_broke_the_program(monkeypatch: pytest.MonkeyPatch) -> None:
    """A legalization pass that moves a fragment load (a stand-in for any
    faulty pass): --verify fails, and says which pass to look at."""
    from hardboiled.legalize import wmma_staging
    from hardboiled.pipeline.driver import compile_text
    from hardboiled.pipeline.options import CompileOptions
    from hardboiled.verify.mutants import mutants

    real = wmma_staging.stage_unaligned_operands

    def faulty(stmt: ir.Stmt, types: dict) -> ir.Stmt:  # type: ignore[type-arg]
        staged = real(stmt, types)
        return next(m.program for m in mutants(staged) if m.operator == "operand offset")

    monkeypatch.setattr(wmma_staging, "stage_unaligned_operands", faulty)
    case = FIXTURES / "wmma_f16_matmul" / "vectorizing.stmt"
    options = CompileOptions.from_flags(selection=SelectionOptions(store_in={"prod": "WMMAAccumulator"},
                                                                   cache_dir=None), verify=True)
    result = compile_text(str(case), case.read_bytes(), options)
    assert result.exit_code == 5
    notes = [n for d in result.diagnostics for n in d.notes]
    assert "the first pass whose output computes something else: stage-wmma-operands " \
           "(--print-after stage-wmma-operands shows it)" in notes


def test_running_the_generated_c_compares_it_with_verification_s_run_of_the_original(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """--verify --run interprets the original once per buffer layout: the
    generated C is compared with the run verification made of the same
    program, on the same buffers and seed (the interpreter is
    deterministic), not with a second run of it."""
    from hardboiled.pipeline.driver import compile_text
    from hardboiled.pipeline.options import CompileOptions
    from hardboiled.verify import compare

    runs: list[str] = []
    real_run = compare.run_original_program

    def counted(original, params, seed, inputs, shape, differing=None):  # type: ignore[no-untyped-def]
        runs.append(shape.name)
        return real_run(original, params, seed, inputs, shape, differing)

    monkeypatch.setattr(compare, "run_original_program", counted)
    path = FIXTURES / "amx_bf16_matmul_std_single" / "vectorizing.stmt"
    options = CompileOptions.from_flags(selection=SelectionOptions(cache_dir=None), verify=True, run=True, emit=("c",))
    result = compile_text(str(path), path.read_bytes(), options)
    assert result.exit_code == 0, [d.render_text() for d in result.diagnostics]
    assert result.report["verification"]["ok"] and result.report["run"]["ok"]
    assert len(runs) >= 2 and len(set(runs)) == len(runs), runs  # each layout once, the first one not again


def test_verifying_an_extern_stage_says_what_it_is_and_what_to_do(tmp_path: Path) -> None:
    """A new user's --verify of a pipeline with an extern stage got only the
    interpreter's "does not know the call": the note now says it is an
    extern stage's buffer and what to do instead."""
    source = FIXTURES / "cpu_extern_stage" / "vectorizing.stmt"
    result = run_cli("compile", str(source), "--no-cache", "--verify", "-o", str(tmp_path / "out.stmt"))
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert "does not know the call '_halide_buffer_init_from_buffer'" in stderr
    assert "to call an extern stage (define_extern)" in stderr and "without --verify and --run" in stderr
    assert "Traceback" not in stderr and not (tmp_path / "out.stmt").exists()


def test_the_elements_a_tile_touches_are_np_unique_s_without_numpy_ma() -> None:
    """verify/tiles.py finds the elements under a tile's bytes as
    ``np.unique`` would (sorted, each once, the same dtype), without the
    ``numpy.ma`` import that ``np.unique`` makes (9 ms of every --verify
    of an AMX program)."""
    import os
    import subprocess
    import sys
    import tempfile

    from hardboiled.verify import tiles
    from hardboiled.verify.values import Pointer

    rng = np.random.default_rng(35)
    for size in (0, 1, 2, 3, 64, 1000):
        for dtype in (np.int64, np.int32):
            for itemsize in (1, 2, 4):
                addresses = rng.integers(0, 300, size=(size, 1)).astype(dtype)
                got = tiles._tile_elements(Pointer(np.zeros(1, dtype=f"u{itemsize}")), addresses)
                want = np.unique(addresses.reshape(-1) // itemsize)
                assert got.dtype == want.dtype and np.array_equal(got, want), (size, dtype, itemsize)
    script = ("import sys\n"
              "from hardboiled.cli import direct\n"
              "try:\n"
              f"    direct.main(['compile', {str(FIXTURES / 'amx_bf16_matmul_std_single' / 'debug.log')!r}, "
              "'--no-cache', '-q', '--verify', '-o', sys.argv[1]])\n"
              "except SystemExit as exit:\n"
              "    assert not exit.code, exit.code\n"
              "print('numpy.ma' in sys.modules)\n")
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, "-c", script, f"{tmp}/out.stmt"], capture_output=True, text=True,
                              timeout=120, env=dict(os.environ, HARDBOILED_NO_SERVER="1"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "False"
