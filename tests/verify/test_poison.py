"""Memory a program has not written holds garbage in verification, and
different garbage for each program: a rewrite that reads an accumulator
it never zeroed (or zeroed another) computes something else, and the
mismatch says which memory it read unwritten. With zeros there (the
interpreter's old allocations), such rewrites verified equal."""

from __future__ import annotations

import dataclasses

import pytest

from hardboiled import ir
from hardboiled.ir.visitor import map_stmt
from hardboiled.targets.amx import AMXOp, amx_intrinsic
from hardboiled.targets.wmma import WMMAOp, wmma_intrinsic
from hardboiled.verify.compare import mismatch_error, verify

from ..conftest import tensorized_fixture


def _zeroing(store: ir.Store) -> bool:
    if not isinstance(store.value, ir.Call):
        return False
    amx, wmma = amx_intrinsic(store.value), wmma_intrinsic(store.value)
    return (amx is not None and amx.op is AMXOp.ZERO) or (wmma is not None and wmma.op is WMMAOp.FILL)


def _without_zeroing(stmt: ir.Stmt) -> ir.Stmt:
    return map_stmt(stmt, lambda s: ir.Evaluate(ir.IntImm(0)) if isinstance(s, ir.Store) and _zeroing(s) else None)


def _zeroing_the_first_tile_twice(stmt: ir.Stmt) -> ir.Stmt:
    zeros = [s for s in ir.walk(stmt) if isinstance(s, ir.Store) and _zeroing(s)]
    assert len(zeros) >= 2
    first = zeros[0].index
    return map_stmt(stmt, lambda s: dataclasses.replace(s, index=first) if s is zeros[1] else None)


@pytest.mark.parametrize("case", ["amx_bf16_matmul_std_single", "amx_int8_matmul_vnni_tiled", "wmma_f16_matmul"])
def test_an_accumulator_nobody_zeroes_is_a_mismatch_that_says_so(case: str) -> None:
    original, rewritten = tensorized_fixture(case)
    assert verify(original, rewritten).ok
    result = verify(original, _without_zeroing(rewritten))
    assert not result.ok
    assert result.undefined_reads
    notes = " ".join(mismatch_error(result).diagnostic.notes)
    assert "reads memory of its own before writing it" in notes


def test_zeroing_the_wrong_tile_is_a_mismatch() -> None:
    original, rewritten = tensorized_fixture("amx_bf16_std_reorder")
    result = verify(original, _zeroing_the_first_tile_twice(rewritten))
    assert not result.ok and result.undefined_reads
