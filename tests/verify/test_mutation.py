"""The mutation harness (hardboiled/verify/mutants.py, bench/mutation.py)
on a sample: every mutant of a few tensorized programs, each operator
represented, is refused by verification (a mismatch, or a rewritten
program that cannot run)."""

from __future__ import annotations

from collections import Counter

import pytest

from hardboiled.verify.compare import verify
from hardboiled.verify.interp import InterpreterError
from hardboiled.verify.mutants import OPERATORS, mutants

from ..conftest import tensorized_app, tensorized_fixture

SAMPLE = ["amx_bf16_std_reorder", "amx_int8_matmul_vnni_tiled", "amx_bf16_std_preload_b", "wmma_int8_matmul",
          "wmma_scaled_matmul_params", "app:upsample", "app:conv1d"]


def _programs(name: str):  # type: ignore[no-untyped-def]
    if name.startswith("app:"):
        from pathlib import Path

        from hardboiled.frontend.parse import parse_input

        app = name.removeprefix("app:")
        original = parse_input((Path(__file__).resolve().parents[1] / "fixtures" / "apps" / f"{app}.stmt").read_text()).ir
        return original, tensorized_app(app)
    return tensorized_fixture(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLE)
def test_every_mutant_of_the_sample_is_refused(name: str) -> None:
    original, tensorized = _programs(name)
    assert verify(original, tensorized).ok
    survivors, seen = [], Counter()
    for mutant in mutants(tensorized):
        seen[mutant.operator] += 1
        try:
            refused = not verify(original, mutant.program).ok
        except InterpreterError:
            refused = True
        if not refused:
            survivors.append((mutant.operator, mutant.where))
    assert sum(seen.values()) >= 10
    assert survivors == []


def test_the_sample_covers_every_operator() -> None:
    seen = {m.operator for name in SAMPLE for m in mutants(_programs(name)[1])}
    assert seen == {name for name, _ in OPERATORS}
