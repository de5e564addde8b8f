"""Per-element error bounds in verification (verify/error_bound.py).

The bound must hold (the original's f16 or f32 result is within it of the
exact result), must grow with the accumulation length and the types rather
than be one loose number per buffer, and must still catch wrong rewrites.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.ir.visitor import map_expr, map_stmt, with_exprs
from hardboiled.legalize.passes import tensorize
from hardboiled.select.selector import SelectionOptions
from hardboiled.verify.compare import error_bounds, run_original, tolerance, verify
from hardboiled.verify.error_bound import ERROR, F64, bound_program, unit_roundoff
from hardboiled.verify.interp import Interpreter, Pointer

from ..conftest import FIXTURES, ROOT

APP_FIXTURES = ROOT / "tests" / "fixtures" / "apps"


def _load(path: Path) -> ir.Stmt:
    return parse_input(path.read_text(), str(path)).ir


def _bounds_against_exact(stmt: ir.Stmt, output: str) -> tuple[np.ndarray, np.ndarray, dict]:
    """The original's output and its error bound, every buffer counted."""
    buffers, outputs, expected = run_original(stmt, {}, 0)
    stored = {n.name for n in ir.walk(stmt) if isinstance(n, ir.Store)}
    program = bound_program(stmt, {output}, stored)
    err = Pointer(np.zeros(buffers[output].data.size), 0, output + ERROR)
    Interpreter(params={output + ERROR: err}, buffers=copy.deepcopy(buffers)).run(program)
    return expected[output].data.astype(np.float64), err.array, buffers


def test_the_bound_holds_for_a_float16_accumulation() -> None:
    """prod(x, y) = sum_k A(k, y) * B(x, k), 64 products accumulated in float16:
    the original is within its bound of the exact (float64) product, and the
    bound is no wider than K * u * sum |products| (Higham's gamma_K)."""
    stmt = _load(FIXTURES / "wmma_f16acc_matmul" / "vectorizing.stmt")
    got, err, buffers = _bounds_against_exact(stmt, "prod_global_wrapper$0")
    a = buffers["A"].data.astype(np.float64).reshape(64, 64)  # a[y, k]
    b = buffers["B"].data.astype(np.float64).reshape(64, 64)  # b[k, x]
    exact = (a @ b).reshape(-1)
    assert np.all(np.isfinite(err))
    assert np.all(np.abs(got - exact) <= err)
    worst = 65 * unit_roundoff(ir.Float(16)) * (np.abs(a) @ np.abs(b)).reshape(-1)
    assert np.all(err <= worst)
    # per element: the bound follows the sizes of the element's own products
    assert err.max() > 2 * err.min()
    assert np.corrcoef(err, worst)[0, 1] > 0.5


def test_the_bound_holds_for_a_float32_convolution() -> None:
    stmt = _load(FIXTURES / "wmma_conv1d" / "vectorizing.stmt")
    got, err, buffers = _bounds_against_exact(stmt, "output")
    kernel = buffers["K"].data.astype(np.float64)
    image = buffers["I"].data.astype(np.float64)
    exact = np.array([np.dot(kernel, image[x:x + 16]) for x in range(got.size)])
    assert np.all(np.abs(got - exact) <= err)
    # float32 accumulation of float16 products: orders of magnitude below float16's
    assert err.max() < 1e-4 * np.abs(exact).max()


def _tensorized(path: Path, accumulators: dict[str, str]) -> tuple[ir.Stmt, ir.Stmt]:
    stmt = _load(path)
    return stmt, tensorize(stmt, SelectionOptions(store_in=accumulators, cache_dir=None)).stmt


def _fill_with(value: float) -> Callable[[ir.Expr], ir.Expr | None]:
    def replace(e: ir.Expr) -> ir.Expr | None:
        if isinstance(e, ir.Call) and e.name.startswith("wmma.fill"):
            return dataclasses.replace(e, args=(ir.FloatImm(value, e.args[0].type),))
        return None

    return replace


def _mutate(stmt: ir.Stmt, replace: Callable[[ir.Expr], ir.Expr | None]) -> ir.Stmt:
    """``stmt`` with ``replace`` applied to the expressions of every store and evaluation."""
    return map_stmt(stmt, lambda s: with_exprs(s, lambda e: map_expr(e, replace))
                    if isinstance(s, (ir.Store, ir.Evaluate)) else None)


def test_a_small_error_is_caught_where_a_global_tolerance_let_it_pass() -> None:
    """GEMM (float32 accumulators): every accumulator starting from 1e-3
    instead of 0 is an error far below 1e-4 of the largest output (the old
    global tolerance) but far above these elements' rounding bounds."""
    original, rewritten = _tensorized(APP_FIXTURES / "gemm.stmt", {"prod": "WMMAAccumulator"})
    assert verify(original, rewritten).ok
    wrong = _mutate(rewritten, _fill_with(1e-3))
    check = verify(original, wrong)
    assert not check.ok
    (comparison,) = check.outputs
    assert comparison.per_element and comparison.max_abs_error < 2e-3
    buffers, _, expected = run_original(original, {}, 0)
    assert comparison.max_abs_error < tolerance(ir.Float(32), expected["output"].data)


def test_a_wrong_operand_is_caught_in_float16_accumulations() -> None:
    """DCT denoise accumulates in float16 through four chained products, so
    some elements' bounds are wide; reading the transform matrix one element
    off is still caught."""
    accumulators = {name: "WMMAAccumulator" for name in ("dct_rows", "dct_cols", "idct_rows", "idct_cols")}
    original, rewritten = _tensorized(APP_FIXTURES / "dct_denoise.stmt", accumulators)
    assert verify(original, rewritten).ok

    def shifted(e: ir.Expr) -> ir.Expr | None:
        if isinstance(e, ir.Call) and e.name.startswith("wmma.load.b") and isinstance(e.args[0], ir.Variable) \
                and e.args[0].name == "IDCT":
            pointer, offset, ldm = e.args
            return dataclasses.replace(e, args=(pointer, ir.Binary(ir.BinOp.ADD, offset, ir.IntImm(1)), ldm))
        return None

    wrong = _mutate(rewritten, shifted)
    assert wrong != rewritten
    assert not verify(original, wrong).ok


def test_what_the_rewrite_does_not_reach_has_no_tolerance() -> None:
    """Attention: the rewrite changes the two products; the bound of the
    final output comes from them, and only the buffers they reach carry a
    bound (the softmax reads scores; nothing reads the inputs' copies)."""
    original, rewritten = _tensorized(APP_FIXTURES / "attention.stmt",
                                      {"scores": "WMMAAccumulator", "weighted_sum": "WMMAAccumulator"})
    buffers, outputs, _ = run_original(original, {}, 0)
    bounds = error_bounds(original, rewritten, buffers, outputs)
    assert bounds is not None and np.all(np.isfinite(bounds["output"])) and bounds["output"].max() > 0
    # the same program against itself: nothing differs, so nothing may
    assert error_bounds(original, original, buffers, outputs)["output"].max() == 0.0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))


# ---------------------------------------------------------------- soundness
def _bound_of(text: str, arrays: dict[str, np.ndarray], output: str = "out") -> tuple[np.ndarray, np.ndarray]:
    """A hand-written statement over the given arrays: its output and the
    error bound the model gives each element (every store counts as
    computed another way)."""
    stmt = parse_input(text).ir
    assert isinstance(stmt, ir.Stmt)
    size = 4
    program = bound_program(stmt, {output}, {output})
    pointers = {name: Pointer(array.copy(), 0, name) for name, array in arrays.items()}
    store = next(n for n in ir.walk(stmt) if isinstance(n, ir.Store))
    pointers[output] = Pointer(np.zeros(size, np.float16 if store.value.type.bits == 16 else np.float32), 0, output)
    err = Pointer(np.zeros(size), 0, output + ERROR)
    Interpreter(params={**pointers, output + ERROR: err}).run(program)
    return pointers[output].array.astype(np.float64), err.array


def test_min_and_max_move_as_far_as_their_farthest_operand() -> None:
    """min(a + b, 1) where a + b rounds to 1 or just past it: the original
    chose the constant 1, but the rewrite's sum may fall below it. The bound
    is the sum's rounding, not the constant's zero."""
    a = np.array([0.5, 0.25, 0.5, 0.5], np.float16)
    b = np.array([np.float16(0.5) + np.float16(2.0 ** -11), 0.25, 0.25, 0.75], np.float16)
    got, err = _bound_of("out[ramp(0, 1, 4)] = min((float16x4)a[ramp(0, 1, 4)] + (float16x4)b[ramp(0, 1, 4)], x4(1.000000h))",
                         {"a": a, "b": b})
    assert got[0] == 1.0 and err[0] >= unit_roundoff(ir.Float(16)) * 1.0
    assert np.all(err > 0)


def test_a_select_whose_comparison_rounding_may_turn_bounds_both_sides() -> None:
    """Thresholding, select(c < 0.1, 0, c) with c = a * b: where c lies
    within its rounding of the threshold, the rewrite may keep c where the
    original zeroed it; far from it, the chosen side's error alone."""
    a = np.array([0.1, 4.0, 1.0, 0.0], np.float32)
    b = np.array([1.0, 1.0, 1.0, 1.0], np.float32)
    got, err = _bound_of("out[ramp(0, 1, 4)] = select((float32x4)a[ramp(0, 1, 4)]*(float32x4)b[ramp(0, 1, 4)] "
                         "< x4(0.100000f), x4(0.000000f), (float32x4)a[ramp(0, 1, 4)]*(float32x4)b[ramp(0, 1, 4)])", {"a": a, "b": b})
    near = np.float64(np.float32(0.1))
    assert err[0] >= near  # the two sides are about 0.1 apart, and either may be chosen
    assert err[1] <= 4.0 * 2 * unit_roundoff(ir.Float(32)) + 1e-30  # far: the product's rounding
    assert err[3] < 1e-40  # 0 * 1 is exact, and far from 0.1


def test_rounding_near_zero_is_absolute() -> None:
    """A float16 result in the subnormal range (below 2^-14) is rounded to a
    multiple of 2^-24, not to a relative precision: the bound is at least
    half of that step (the f16 epilogue the review saw failed by one)."""
    a = np.array([3e-4, 1e-3, 2e-4, 1.0], np.float32)
    b = np.array([1e-4, 1e-4, 3e-4, 1.0], np.float32)
    got, err = _bound_of("out[ramp(0, 1, 4)] = float16x4((float32x4)a[ramp(0, 1, 4)]*(float32x4)b[ramp(0, 1, 4)])", {"a": a, "b": b})
    assert np.all(err[:3] >= 2.0 ** -25)
    exact = a.astype(np.float64) * b
    assert np.all(np.abs(got - exact) <= err)


def test_a_masked_lane_costs_nothing_through_exp() -> None:
    """exp(score + mask) with mask -1e30: the sum's error is huge (u * 1e30)
    but exp of anything near -1e30 is 0: the bound is exp(x + err) - exp(x),
    0 there, not infinite or NaN."""
    score = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    mask = np.array([0.0, -1e30, 0.0, -1e30], np.float32)
    got, err = _bound_of("out[ramp(0, 1, 4)] = (float32x4)exp_f32((float32x4)score[ramp(0, 1, 4)] + (float32x4)mask[ramp(0, 1, 4)])",
                         {"score": score, "mask": mask})
    assert np.all(np.isfinite(err))
    assert err[1] < 1e-30 and err[3] < 1e-30
    assert err[0] > 0 and err[0] < 1e-5


def test_an_infinite_bound_is_unproven_and_exit_7_unless_accepted() -> None:
    from hardboiled.support.diagnostics import ExitCode
    from hardboiled.verify.compare import VerificationResult, VerificationUnproven, checked, compare

    expected = np.array([1.0, 2.0, 3.0], np.float32)
    comparison = compare("out", ir.Float(32), expected, expected, np.array([0.0, np.inf, 5.0]))
    assert comparison.unproven == 2 and comparison.first_mismatch is None
    result = VerificationResult(0, (comparison,))
    with pytest.raises(VerificationUnproven) as raised:
        checked(result)
    assert raised.value.exit_code == ExitCode.VERIFICATION_UNPROVEN == 7
    assert "proves nothing about 2 output elements" in raised.value.diagnostic.message
    assert "unproven elements accepted" in checked(result, accept_unproven=True)


def test_a_product_of_float16_values_in_float32_is_exact() -> None:
    """float32(a) * float32(b) of float16 a and b: 11 + 11 significant bits
    fit float32's 24, and the exponents stay in range, so the product is
    exact and its bound is 0; float32 operands (24 bits each) round."""
    a = np.array([0.1, 3.0, -65504.0, 2.0 ** -24], np.float16)
    b = np.array([0.3, 7.0, 65504.0, 2.0 ** -24], np.float16)
    got, err = _bound_of("out[ramp(0, 1, 4)] = float32x4((float16x4)a[ramp(0, 1, 4)])*float32x4((float16x4)b[ramp(0, 1, 4)])",
                         {"a": a, "b": b})
    assert np.all(err == 0.0)
    assert np.array_equal(got, a.astype(np.float64) * b.astype(np.float64))
    wide_a, wide_b = a.astype(np.float32) + np.float32(1e-3), b.astype(np.float32)
    _, rounded = _bound_of("out[ramp(0, 1, 4)] = (float32x4)a[ramp(0, 1, 4)]*(float32x4)b[ramp(0, 1, 4)]",
                           {"a": wide_a, "b": wide_b})
    assert np.all(rounded > 0)


def test_exact_operands_add_no_work_to_the_bound_program() -> None:
    """The bound of a float32 sum of products of float16 inputs: the inputs
    are exact, so the bound program multiplies no error by a value and
    adds no zero vectors (what an exact operand contributes is dropped when
    the program is built)."""
    stmt = parse_input("out[ramp(0, 1, 4)] = float32x4((float16x4)a[ramp(0, 1, 4)])*float32x4((float16x4)b[ramp(0, 1, 4)]) + "
                       "(float32x4)out[ramp(0, 1, 4)]\n").ir
    program = bound_program(stmt, {"out"}, {"out"})
    # the only selects: the bound is infinite where a value may overflow
    selects = [n for n in ir.walk(program) if isinstance(n, ir.Select)
               and not (isinstance(n.true_value, ir.Broadcast) and n.true_value.value == ir.FloatImm(math.inf, F64))]
    zeros = [n for n in ir.walk(program) if isinstance(n, ir.Binary) and n.op is ir.BinOp.ADD
             and any(isinstance(x, ir.Broadcast) and isinstance(x.value, ir.FloatImm) and x.value.value == 0.0
                     for x in (n.a, n.b))]
    assert not selects and not zeros


def test_an_epilogue_both_programs_compute_alike_on_integers_rounds_alike() -> None:
    """A sigmoid of an int32 accumulator (the sweep's int8 GEMM with a
    sigmoid epilogue, real Halide): the rewrite computes the integers
    exactly and the epilogue on a spilled copy with the same operations, so
    the two agree bit for bit and the tolerance is 0, not the bound through
    exp that proved nothing; a float16 accumulator keeps its bound."""
    from hardboiled.verify.divergence import divergence

    sweep = ROOT / "tests" / "fixtures" / "sweep"
    original = _load(sweep / "amx_types-u8i8_b-vnni_epilogue-sigmoid.stmt")
    rewritten = tensorize(original, SelectionOptions()).stmt
    epilogue = next(n for n in ir.walk(original) if isinstance(n, ir.Store) and n.name == "out")
    assert epilogue in divergence(original, rewritten).alike
    result = verify(original, rewritten)
    assert result.ok and not result.unproven
    assert all(c.max_abs_error == 0 and c.tolerance == 0 for c in result.outputs)
    halves = _load(sweep / "wmma_types-f16tof16_epilogue-sigmoid.stmt")
    halves_rewritten = tensorize(halves, SelectionOptions(store_in={"prod": "WMMAAccumulator"})).stmt
    assert verify(halves, halves_rewritten).outputs[0].tolerance > 0


def test_an_epilogue_copied_out_in_the_accumulators_order_is_alike_too() -> None:
    """The same sigmoid of a transposed int32 accumulator: the rewrite
    stores the copy-out with its lanes in the accumulator's order
    (lane_order.py), the same elements in another order, so it is alike and
    verified to the bit (was: every element unproven through exp)."""
    from hardboiled.verify.divergence import divergence

    sweep = ROOT / "tests" / "fixtures" / "sweep"
    original = _load(sweep / "amx_types-i8u8_init-const_epilogue-sigmoid_loops-k_outer_acc_layout-xy_rem-8.stmt")
    rewritten = tensorize(original, SelectionOptions()).stmt
    epilogues = [n for n in ir.walk(original) if isinstance(n, ir.Store) and n.name == "out"]
    assert epilogues and all(n in divergence(original, rewritten).alike for n in epilogues)
    result = verify(original, rewritten)
    assert result.ok and not result.unproven
    assert all(c.max_abs_error == 0 and c.tolerance == 0 for c in result.outputs)


def test_a_value_that_may_overflow_its_type_has_an_infinite_bound() -> None:
    """A float16 exp near 65,504 (a SiLU's exp(-x)): moved by its
    argument's rounding, one program may round it to infinity (the SiLU is
    then -0.0) and the other not (-0.00017). The bound is infinite there, so
    the element is unproven, never a false mismatch; far from it, finite."""
    a = np.array([11.0859375, 11.0, 1.0, -3.0], np.float16)
    _, err = _bound_of("out[ramp(0, 1, 4)] = (float16x4)exp_f16((float16x4)a[ramp(0, 1, 4)] + "
                       "(float16x4)b[ramp(0, 1, 4)])", {"a": a, "b": np.zeros(4, np.float16)})
    assert np.isinf(err[0]) and np.isfinite(err[1:]).all()


@pytest.mark.parametrize("numerator", ["x4(1.000000h)", "(float16x4)a[ramp(0, 1, 4)]"])
def test_a_sigmoid_whose_exp_may_overflow_has_a_finite_bound(numerator: str) -> None:
    """1 / (exp(-x) + 1) and the SiLU x / (exp(-x) + 1): where exp(-x)
    may round to infinity in one program only (x near -11.09), the divisor
    is still at least 1 + exp(-x - err(x)) in both, so the quotient moves by
    at most |numerator| / that: the element is proven, where the exp alone
    is unbounded (the test above). Checked against the exact quotient."""
    a = np.array([-11.0859375, -11.0, -1.0, 3.0], np.float16)
    text = (f"out[ramp(0, 1, 4)] = {numerator}/((float16x4)exp_f16(x4(0.000000h) - ((float16x4)a[ramp(0, 1, 4)] + "
            "(float16x4)b[ramp(0, 1, 4)])) + x4(1.000000h))")
    got, err = _bound_of(text, {"a": a, "b": np.full(4, 2.0 ** -9, np.float16)})
    assert np.isfinite(err).all()
    x = a.astype(np.float64) + 2.0 ** -9
    top = 1.0 if numerator.startswith("x4") else x
    exact = top / (np.exp(-x) + 1.0)
    assert np.all(np.abs(got - exact) <= err)
    assert err[0] < 1e-3 and err[3] < 0.01  # far below the SiLU's range



def test_a_copy_out_at_a_symbolic_row_stride_or_from_an_edge_copy_is_alike() -> None:
    """Seed 8675's unproven sigmoids: the output's row stride is a
    parameter (the copy-out stored in the accumulator's order has it as
    another level), or the copy-out reads a spill of an edge copy
    (``mm.edge.1.spill.0``) where the original read ``mm``."""
    from hardboiled.verify.divergence import divergence

    def program(text: str) -> ir.Stmt:
        stmt = parse_input(text, "t.stmt", buffer_types={"out": ir.Float(32), "A": ir.Int(32)}).ir
        assert isinstance(stmt, ir.Stmt)
        return stmt

    def sigmoid(read: str) -> str:
        return f"x16(1.000000f)/((float32x16)exp_f32(float32x16(x16(0) - {read})) + x16(1.000000f))"

    original = program("allocate mm[int32 * 16]\nmm[ramp(0, 1, 16)] = A[ramp(0, 1, 16)] + x16(1)\n"
                       f"out[ramp(ramp(0, 1, 4), x4(s), 4)] = {sigmoid('mm[ramp(ramp(0, 4, 4), x4(1), 4)]')}\n"
                       "free mm\n")

    def rewritten(out_index: str) -> ir.Stmt:
        return program("allocate mm.edge.1[int32 * 16]\nmm.edge.1[ramp(0, 1, 16)] = x16(1) + A[ramp(0, 1, 16)]\n"
                       "allocate mm.edge.1.spill.0[int32 * 16]\n"
                       "mm.edge.1.spill.0[ramp(0, 1, 16)] = mm.edge.1[ramp(0, 1, 16)]\n"
                       f"out[{out_index}] = {sigmoid('mm.edge.1.spill.0[ramp(0, 1, 16)]')}\n"
                       "free mm.edge.1.spill.0\nfree mm.edge.1\n")

    epilogue = next(n for n in ir.walk(original) if isinstance(n, ir.Store) and n.name == "out")
    assert epilogue in divergence(original, rewritten("ramp(ramp(0, s, 4), x4(1), 4)")).alike
    # a store of other elements (its row stride another parameter) is not
    assert epilogue not in divergence(original, rewritten("ramp(ramp(0, t, 4), x4(1), 4)")).alike


def test_float32_products_as_tf32_parts_verify_and_one_tf32_pass_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """Float32 GEMM on Tensor Cores (real Halide, 64 products an element):
    the bound allows what the high and low tf32 parts drop (2^-19 of a product at most)
    (``split_product_error``), and still catches a single tf32 product,
    whose operands keep 11 of their 24 bits."""
    from hardboiled.verify import divergence, fragments
    sweep = ROOT / "tests" / "fixtures" / "sweep" / "wmma_types-tf32tof32.stmt"
    original, rewritten = _tensorized(sweep, {"prod": "WMMAAccumulator"})
    assert divergence.divergence(original, rewritten).split_significand == 11
    assert verify(original, rewritten).ok

    def one_tf32_pass(a: np.ndarray, b: np.ndarray, bits: int, shape: object) -> np.ndarray:
        high_a, high_b = (fragments.round_significand(x, bits).astype(np.float64) for x in (a, b))
        return np.matmul(high_a.reshape(*a.shape[:-1], shape.m, shape.k),  # type: ignore[attr-defined]
                         high_b.reshape(*b.shape[:-1], shape.k, shape.n))  # type: ignore[attr-defined]

    monkeypatch.setattr(fragments, "_split_products", one_tf32_pass)
    assert not verify(original, rewritten).ok


def test_a_dense_store_and_its_rows_in_another_order_write_the_same_elements() -> None:
    """Seed 40961's unproven sigmoid of a transposed int32 accumulator: the
    original stores out[ramp(0, 1, 512)], the rewrite the same 512 elements
    as ramp(ramp(0, 16, 32), x32(1), 16); levels that continue one another
    merge into one, so both are the same elements (and a gap is not)."""
    from hardboiled.verify.divergence import _elements

    def index(text: str) -> ir.Expr:
        store = parse_input(f"out[{text}] = x512(1.000000f)\n", "t.stmt", buffer_types={"out": ir.Float(32)}).ir
        assert isinstance(store, ir.Store)
        return store.index

    dense = _elements(index("ramp(0, 1, 512)"))
    assert _elements(index("ramp(ramp(0, 16, 32), x32(1), 16)")) == dense
    assert _elements(index("ramp(ramp(0, 32, 16), x16(1), 32)")) == dense
    assert _elements(index("ramp(ramp(0, 17, 32), x32(1), 16)")) != dense
