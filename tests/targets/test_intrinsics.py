"""The intrinsic descriptors of hardboiled/targets: every operation the
tables define formats and parses back, and the interpreter and the code
generators accept every one of them."""

from __future__ import annotations

import numpy as np
import pytest

from hardboiled import ir
from hardboiled.codegen import c as c_codegen
from hardboiled.codegen import cuda as cuda_codegen
from hardboiled.codegen import cuda_kernel
from hardboiled.targets.amx import AMX_INTRINSIC, AMX_INTRINSICS, AMX_TILE, AMXIntrinsic, AMXOp
from hardboiled.targets.wmma import WMMA_TENSOR_CORE, Layout, MatrixUse, WMMAIntrinsic, WMMAOp, WMMAShape
from hardboiled.verify import expression_code, interp, tiles
from hardboiled.verify.fragments import wmma_call

WMMA_INTRINSICS = WMMA_TENSOR_CORE.intrinsics()


def test_the_wmma_table_defines_every_kind_of_operation() -> None:
    assert {i.op for i in WMMA_INTRINSICS} == set(WMMAOp)
    assert {i.shape for i in WMMA_INTRINSICS} == set(WMMA_TENSOR_CORE.all_shapes)
    assert len(set(WMMA_INTRINSICS)) == len(WMMA_INTRINSICS)


@pytest.mark.parametrize("intrinsic", WMMA_INTRINSICS, ids=lambda i: i.name)
def test_every_wmma_operation_formats_and_parses_back(intrinsic: WMMAIntrinsic) -> None:
    assert WMMAIntrinsic.parse(intrinsic.name) == intrinsic
    assert WMMA_TENSOR_CORE.defines(intrinsic)


def test_the_names_are_the_ptx_spellings() -> None:
    shape = WMMAShape(16, 16, 16)
    f16, f32 = ir.Float(16), ir.Float(32)
    assert WMMAIntrinsic.load(MatrixUse.A, Layout.COL, shape, f16).name == "wmma.load.a.sync.aligned.col.m16n16k16.f16"
    assert (WMMAIntrinsic.mma(Layout.ROW, Layout.ROW, shape, f32, f32).name
            == "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32")
    assert WMMAIntrinsic.store(Layout.ROW, shape, f32).name == "wmma.store.d.sync.aligned.row.m16n16k16.f32"
    assert WMMAIntrinsic.fill(shape, f32).name == "wmma.fill.m16n16k16.f32"


@pytest.mark.parametrize("name", [
    "wmma.fill.m16n16k16", "wmma.fill.m16n16k16.f128", "wmma.load.d.sync.aligned.row.m16n16k16.f32",
    "wmma.load.a.sync.aligned.diag.m16n16k16.f16", "wmma.mma.sync.aligned.row.m16n16k16.f32.f32",
    "wmma.store.c.sync.aligned.row.m16n16k16.f32", "wmma.load.a.sync.aligned.row.m016n16k16.f16",
    "tile_load", "wmma.copy.m16n16k16.f32",
])
def test_names_that_spell_no_operation_are_refused(name: str) -> None:
    assert WMMAIntrinsic.parse(name) is None


def test_a_shape_outside_the_table_parses_but_is_not_defined() -> None:
    intrinsic = WMMAIntrinsic.parse("wmma.load.a.sync.aligned.row.m16n8k16.f16")
    assert intrinsic is not None and intrinsic.extent == (16, 16)
    assert not WMMA_TENSOR_CORE.defines(intrinsic)


def test_float64_fragments_come_only_in_their_own_shape() -> None:
    for name, defined in (("wmma.fill.m8n8k4.f64", True), ("wmma.fill.m16n16k16.f64", False),
                          ("wmma.mma.sync.aligned.row.col.m8n8k4.f64.f64", True),
                          ("wmma.load.a.sync.aligned.row.m8n8k4.f16", False)):
        intrinsic = WMMAIntrinsic.parse(name)
        assert intrinsic is not None and WMMA_TENSOR_CORE.defines(intrinsic) is defined, name


def test_extents_cuda_spellings_and_sm() -> None:
    shape = WMMAShape(32, 8, 16)
    assert MatrixUse.A.extent(shape) == (32, 16) and MatrixUse.B.extent(shape) == (16, 8)
    assert MatrixUse.D.extent(shape) == (32, 8) and MatrixUse.D.cuda == "accumulator"
    assert Layout.COL.cuda == "col_major" and Layout.ROW.cuda_memory == "mem_row_major"
    bf16_load = WMMAIntrinsic.load(MatrixUse.B, Layout.ROW, shape, ir.BFloat(16))
    assert WMMA_TENSOR_CORE.min_sm_of(bf16_load) == 80
    assert WMMA_TENSOR_CORE.min_sm_of(WMMAIntrinsic.fill(shape, ir.Float(32))) == WMMA_TENSOR_CORE.min_sm


# --------------------------------------------------------------------------
# Consumers accept every WMMA operation
# --------------------------------------------------------------------------

_LDM = 32
"""A leading dimension that suits every fragment (<= 32 rows or columns)
and load/store_matrix_sync's 16-byte rule."""


def _wmma_arguments(intrinsic: WMMAIntrinsic) -> list[object]:
    memory = interp.Pointer(np.zeros(_LDM * _LDM, dtype=interp.dtype_of(intrinsic.type)), 0, "memory")
    shape = intrinsic.shape
    if intrinsic.op is WMMAOp.LOAD:
        return [memory, np.array([0]), np.array([_LDM])]
    if intrinsic.op is WMMAOp.STORE:
        return [memory, np.ones(shape.m * shape.n, dtype=interp.dtype_of(intrinsic.type)), np.array([0]),
                np.array([_LDM])]
    if intrinsic.op is WMMAOp.FILL:
        return [np.array([1.0])]
    element = next(e for e in WMMA_TENSOR_CORE.elements if intrinsic.type in e.accumulators)
    operand = interp.dtype_of(element.type)
    assert intrinsic.c_type is not None
    return [np.ones(shape.m * shape.k, dtype=operand), np.ones(shape.k * shape.n, dtype=operand),
            np.zeros(shape.m * shape.n, dtype=interp.dtype_of(intrinsic.c_type))]


@pytest.mark.parametrize("intrinsic", WMMA_INTRINSICS, ids=lambda i: i.name)
def test_the_interpreter_runs_every_wmma_operation(intrinsic: WMMAIntrinsic) -> None:
    lanes = intrinsic.shape.m * intrinsic.shape.n if intrinsic.op is not WMMAOp.LOAD else \
        intrinsic.extent[0] * intrinsic.extent[1]
    result_type = ir.INT32 if intrinsic.op is WMMAOp.STORE else intrinsic.type.with_lanes(lanes)
    call = ir.Call(intrinsic.name, (), result_type)
    result = wmma_call(call, _wmma_arguments(intrinsic))  # type: ignore[arg-type]
    if intrinsic.op is WMMAOp.MMA:
        assert np.all(result == intrinsic.shape.k)
    elif intrinsic.op is not WMMAOp.STORE:
        assert result.shape == (lanes,)


@pytest.mark.parametrize("intrinsic", WMMA_INTRINSICS, ids=lambda i: i.name)
def test_the_cuda_generator_reads_every_wmma_operation(intrinsic: WMMAIntrinsic) -> None:
    call = ir.Call(intrinsic.name, (), intrinsic.type)
    shape = intrinsic.shape
    assert cuda_kernel._shape(call) == (shape.m, shape.n, shape.k)
    assert cuda_kernel._wmma_op(call) is intrinsic.op
    if intrinsic.layout is not None and intrinsic.op is not WMMAOp.MMA:
        assert cuda_kernel._memory_layout(call) == f"mem_{intrinsic.layout.value}_major"
    assert cuda_codegen.required_sm(ir.Evaluate(call))[0] == WMMA_TENSOR_CORE.min_sm_of(intrinsic)


# --------------------------------------------------------------------------
# AMX
# --------------------------------------------------------------------------


@pytest.mark.parametrize("intrinsic", AMX_INTRINSICS, ids=lambda i: i.name)
def test_every_amx_operation_parses_back_and_is_interpreted(intrinsic: AMXIntrinsic) -> None:
    assert AMXIntrinsic.parse(intrinsic.name) is intrinsic is AMX_INTRINSIC[intrinsic.op]
    assert intrinsic.name in expression_code.CALLS  # the calls the interpreter computes from their values
    assert (intrinsic.c_name is None) == (intrinsic.op is AMXOp.MATMUL), "only the matmul's C name varies"


def test_amx_argument_names() -> None:
    call = ir.Call("tile_matmul", tuple(ir.IntImm(v) for v in range(6)), ir.Float(32, 256))
    assert AMX_INTRINSIC[AMXOp.MATMUL].argument(call, "b") == ir.IntImm(5)
    assert AMXIntrinsic.parse("tile_transpose") is None


@pytest.mark.parametrize("product", AMX_TILE.dot_products, ids=lambda d: d.c_name)
def test_every_amx_dot_product_is_generated_and_interpreted(product) -> None:  # type: ignore[no-untyped-def]
    assert AMX_TILE.dot_product(product.a.with_lanes(64), product.b) is product
    assert c_codegen._dot_product(product.a, product.b) == product.c_name
    dtypes = (interp.dtype_of(product.a), interp.dtype_of(product.b), interp.dtype_of(product.accumulator))
    assert tiles._amx_dot_product(*(np.dtype(d) for d in dtypes)) is product


def test_amx_dot_products_cover_every_operand_pair_of_the_table() -> None:
    names = {AMX_TILE.dot_product(a.type, b.type).c_name  # type: ignore[union-attr]
             for a in AMX_TILE.elements for b in AMX_TILE.elements if a.accumulator == b.accumulator}
    assert names == {"_tile_dpbf16ps", "_tile_dpbssd", "_tile_dpbsud", "_tile_dpbusd", "_tile_dpbuud"}
    assert AMX_TILE.dot_product(ir.BFloat(16), ir.Int(8)) is None
