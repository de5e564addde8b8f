"""The interpreter's whole-fragment WMMA semantics (groundwork for issue 6),
on hand-computed values: every fragment shape of the Tensor Core table,
row- and column-major operands, f16 and bf16 inputs, f32 and f16
accumulators, and the alignment load/store_matrix_sync require."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_text
from hardboiled.targets import wmma
from hardboiled.verify.interp import Interpreter, InterpreterError, Pointer

TC = wmma.WMMA_TENSOR_CORE
SUFFIX = {np.dtype(np.float16): "f16", np.dtype(ml_dtypes.bfloat16): "bf16", np.dtype(np.float32): "f32",
          np.dtype(np.float64): "f64"}
IR_TYPE = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64"}
DTYPES = {ir.BFloat(16): np.dtype(ml_dtypes.bfloat16), ir.Float(64): np.dtype(np.float64),
          ir.Float(32): np.dtype(np.float32)}
"""numpy types of the operands and accumulators (integer operands are
exercised as float16 here: the lanes and layouts are the same)."""


def _layout_memory(matrix: np.ndarray, layout: str, ldm: int, offset: int, dtype: np.dtype) -> np.ndarray:
    """The matrix placed in a flat buffer as load_matrix_sync reads it."""
    rows, cols = matrix.shape
    memory = np.full(offset + ldm * (rows if layout == "row" else cols) + 64, 99, dtype=dtype)
    for i in range(rows):
        for j in range(cols):
            memory[offset + (i * ldm + j if layout == "row" else j * ldm + i)] = matrix[i, j]
    return memory


def _run(program: str, **buffers: np.ndarray) -> None:
    stmt = parse_text(program)
    assert isinstance(stmt, ir.Stmt)
    interp = Interpreter()
    interp.env.values.update({name: Pointer(array, 0, name) for name, array in buffers.items()})
    interp.run(stmt)


CASES = [(shape, element, acc, a_layout, b_layout)
         for element in TC.elements for shape in TC.shapes_of(element) for acc in element.accumulators
         for a_layout, b_layout in (("row", "row"), ("col", "row"), ("row", "col"), ("col", "col"))]


@pytest.mark.parametrize("shape, element, acc, a_layout, b_layout", CASES,
                         ids=[f"{s.name}-{e.cuda_type}-{c}-{la}.{lb}" for s, e, c, la, lb in CASES])
def test_load_mma_store_computes_a_times_b_plus_c(shape: wmma.WMMAShape, element: wmma.WMMAElement,
                                                   acc: ir.Type, a_layout: str, b_layout: str) -> None:
    rng = np.random.default_rng(shape.m * 100 + shape.n)
    in_dtype = DTYPES.get(element.type, np.dtype(np.float16))
    acc_dtype = DTYPES.get(acc, np.dtype(np.float16))
    # Small integers: every product and sum is exact in every type involved,
    # so the expected value is exact whatever the summation order.
    a = rng.integers(-3, 4, (shape.m, shape.k)).astype(in_dtype)
    b = rng.integers(-3, 4, (shape.k, shape.n)).astype(in_dtype)
    c = rng.integers(-8, 9, (shape.m, shape.n)).astype(acc_dtype)
    ldm_a, ldm_b, ldm_c = 48, 32, 40  # padded, 16-byte multiples for 16-bit data
    a_memory = _layout_memory(a, a_layout, ldm_a, 16, in_dtype)
    b_memory = _layout_memory(b, b_layout, ldm_b, 32, in_dtype)
    c_memory = _layout_memory(c, "row", ldm_c, 16, acc_dtype)
    out = np.zeros_like(c_memory)
    t_in, t_acc = SUFFIX[in_dtype], SUFFIX[acc_dtype]
    lanes_c = shape.m * shape.n
    program = (
        f"allocate frag[{IR_TYPE[t_acc]} * {lanes_c}]\n"
        f"frag[ramp(0, 1, {lanes_c})] = ({IR_TYPE[t_acc]}x{lanes_c})"
        f"wmma.mma.sync.aligned.{a_layout}.{b_layout}.{shape.name}.{t_acc}.{t_acc}("
        f"({IR_TYPE[t_in]}x{shape.m * shape.k})wmma.load.a.sync.aligned.{a_layout}.{shape.name}.{t_in}(A, 16, {ldm_a}), "
        f"({IR_TYPE[t_in]}x{shape.k * shape.n})wmma.load.b.sync.aligned.{b_layout}.{shape.name}.{t_in}(B, 32, {ldm_b}), "
        f"({IR_TYPE[t_acc]}x{lanes_c})wmma.load.c.sync.aligned.row.{shape.name}.{t_acc}(C, 16, {ldm_c}))\n"
        f"wmma.store.d.sync.aligned.col.{shape.name}.{t_acc}(out, frag[ramp(0, 1, {lanes_c})], 0, {shape.m})\n"
    )
    _run(program, A=a_memory, B=b_memory, C=c_memory, out=out)
    expected = a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)
    # Stored column-major with ldm = m: the transpose, flattened.
    got = out[: shape.m * shape.n].astype(np.float64).reshape(shape.n, shape.m).T
    assert np.array_equal(got, expected)
    assert (out[shape.m * shape.n:] == 0).all()  # nothing written past the fragment


def test_a_misaligned_fragment_address_fails_like_the_gpu_would() -> None:
    data = np.zeros(1024, dtype=np.float16)
    for offset, ldm in ((8, 16), (16, 12)):  # 16 bytes off 32; a leading dimension of 24 bytes
        with pytest.raises(InterpreterError, match="alignment"):
            _run("allocate f[float16 * 256]\n"
                 f"f[ramp(0, 1, 256)] = (float16x256)wmma.load.a.sync.aligned.row.m16n16k16.f16(A, {offset}, {ldm})\n",
                 A=data)


@pytest.mark.parametrize("name, message", [
    ("wmma.load.a.sync.aligned.row.m16n8k16.f16(A, 0, 16)", "not a WMMA fragment shape"),
    ("wmma.load.a.sync.aligned.row.m16n16k16.bf16(A, 0, 16)", "which holds float16"),
    ("wmma.load.a.sync.aligned.row.m16n16k16.f16(A, 1008, 16)", "out of bounds"),
])
def test_bad_fragment_loads_are_interpreter_errors(name: str, message: str) -> None:
    with pytest.raises(InterpreterError, match=message):
        _run(f"allocate f[float16 * 256]\nf[ramp(0, 1, 256)] = (float16x256){name}\n",
             A=np.zeros(1024, dtype=np.float16))


def test_bf16_with_an_f16_accumulator_is_rejected() -> None:
    # The table allows bf16 only with float32 accumulation.
    program = (
        "allocate f[float16 * 256]\n"
        "f[ramp(0, 1, 256)] = (float16x256)wmma.mma.sync.aligned.row.row.m16n16k16.f16.f16("
        "(bfloat16x256)wmma.load.a.sync.aligned.row.m16n16k16.bf16(A, 0, 16), "
        "(bfloat16x256)wmma.load.b.sync.aligned.row.m16n16k16.bf16(A, 0, 16), f[ramp(0, 1, 256)])\n"
    )
    with pytest.raises(InterpreterError, match="no Tensor Core instruction"):
        _run(program, A=np.zeros(1024, dtype=ml_dtypes.bfloat16))


def test_rounding_to_tf32_is_to_nearest_with_ties_away_from_zero() -> None:
    from hardboiled.verify.fragments import round_significand
    values = np.array([1 + 2.0 ** -11, 1 + 2.0 ** -12, -(1 + 2.0 ** -11), 1 + 3 * 2.0 ** -11,
                       np.finfo(np.float32).max, np.inf, -np.inf], dtype=np.float32)
    expected = np.array([1 + 2.0 ** -10, 1, -(1 + 2.0 ** -10), 1 + 2 * 2.0 ** -10, np.inf, np.inf, -np.inf],
                        dtype=np.float32)
    assert np.array_equal(round_significand(values, 11), expected)
    assert np.isnan(round_significand(np.array([np.nan], dtype=np.float32), 11)).all()


def test_float32_operands_multiply_as_high_and_low_tf32_parts() -> None:
    """(1 + 2^-20)^2 in one m16n16k8 product: one tf32 pass gives 1 (the
    operands lose their low bits); high and low parts give 1 + 2^-19, the
    exact product less the low x low term 2^-40."""
    shape = wmma.WMMAShape(16, 16, 8)
    a = np.zeros((16, 8), dtype=np.float32)
    b = np.zeros((8, 16), dtype=np.float32)
    a[0, 0] = b[0, 0] = 1 + 2.0 ** -20
    out = np.zeros(256, dtype=np.float32)
    program = (
        "allocate frag[float32 * 256]\n"
        "frag[ramp(0, 1, 256)] = (float32x256)wmma.mma.sync.aligned.row.row.m16n16k8.f32.f32("
        "(float32x128)wmma.load.a.sync.aligned.row.m16n16k8.f32(A, 0, 8), "
        "(float32x128)wmma.load.b.sync.aligned.row.m16n16k8.f32(B, 0, 16), "
        "(float32x256)wmma.fill.m16n16k8.f32(0.000000f))\n"
        "wmma.store.d.sync.aligned.row.m16n16k8.f32(out, frag[ramp(0, 1, 256)], 0, 16)\n"
    )
    _run(program, A=a.reshape(-1), B=b.reshape(-1), out=out)
    assert out[0] == np.float32(1 + 2.0 ** -19)
    assert TC.element(ir.Float(32)).shapes == (shape,)  # type: ignore[union-attr]


def test_split_operands_keep_infinities_and_never_overflow() -> None:
    """An infinity (or NaN) is its own high part with a low part of 0, so
    that it multiplies as in float32 (inf - inf would make the low part a
    NaN); the largest float's high part is truncated, not rounded up to
    infinity, and high + low stays within 2^-22 of it."""
    from hardboiled.verify.fragments import split_operand
    largest = np.finfo(np.float32).max
    x = np.array([np.inf, -np.inf, np.nan, largest, 1 + 2.0 ** -20], dtype=np.float32)
    high, low = split_operand(x, 11)
    assert high[0] == np.inf and high[1] == -np.inf and np.isnan(high[2])
    assert (low[:3] == 0).all()
    assert np.isfinite(high[3]) and abs((float(high[3]) + float(low[3])) - float(largest)) <= 2.0 ** -22 * float(largest)
    assert high[4] == 1 and low[4] == 2.0 ** -20
