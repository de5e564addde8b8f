"""A pipeline's scalar Params in verification (tests/fixtures/halide/
wmma_scaled_matmul_params: out = prod * gain + offset, and a 'rows' Param
for the output's size): --param sets them; those not given are drawn among
the values the pipeline's asserts accept, and the summary says which."""

from __future__ import annotations

import dataclasses

from hardboiled import ir
from hardboiled.ir.visitor import map_expr, map_stmt
from hardboiled.verify.compare import verify
from hardboiled.verify.inputs import scalar_params

from ..conftest import FIXTURES, run_cli, tensorized_fixture

CASE = "wmma_scaled_matmul_params"
STMT = str(FIXTURES / CASE / "vectorizing.stmt")


def test_the_params_are_found_with_their_types() -> None:
    original, _ = tensorized_fixture(CASE)
    assert scalar_params(original) == {"gain": ir.Float(32), "offset": ir.Int(32), "rows": ir.Int(32)}


def test_params_not_given_are_drawn_where_the_asserts_accept_them() -> None:
    """'rows' must cover whole 16-row tiles: draws below 16 fail the
    pipeline's own check, and verification draws again."""
    original, rewritten = tensorized_fixture(CASE)
    result = verify(original, rewritten)
    assert result.ok, result.summary()
    values = dict(result.scalars)
    assert set(values) == {"gain", "offset", "rows"} and values["rows"] >= 16
    assert f"rows={values['rows']}" in result.summary()


def test_given_params_are_used_and_a_wrong_epilogue_is_caught() -> None:
    original, rewritten = tensorized_fixture(CASE)
    given = verify(original, rewritten, params={"gain": 0.25, "offset": -3, "rows": 64})
    assert given.ok and dict(given.scalars) == {"gain": 0.25, "offset": -3, "rows": 64}

    def without_gain(e: ir.Expr) -> ir.Expr | None:
        return ir.FloatImm(1.0, e.type) if isinstance(e, ir.Variable) and e.name == "gain" else None

    def replace(s: ir.Stmt) -> ir.Stmt | None:
        if isinstance(s, ir.Store) and s.name == "out":
            return dataclasses.replace(s, value=map_expr(s.value, without_gain))
        return None

    assert not verify(original, map_stmt(rewritten, replace), params={"gain": 0.25}).ok


def test_param_mistakes_are_input_errors() -> None:
    wrong_type = run_cli("compile", STMT, "--store-in", "prod=WMMAAccumulator", "--verify", "--param", "rows=2.5")
    assert wrong_type.returncode == 2 and b"'rows' is an int32 param" in wrong_type.stderr
    unknown = run_cli("compile", STMT, "--store-in", "prod=WMMAAccumulator", "--verify", "--param", "gian=1")
    assert unknown.returncode == 2 and b"params: gain, offset, rows" in unknown.stderr
    refused = run_cli("compile", STMT, "--store-in", "prod=WMMAAccumulator", "--verify", "--param", "rows=5")
    assert refused.returncode == 2 and b"fails its own checks" in refused.stderr
