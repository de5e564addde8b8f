"""Scopes saturated side by side in several egglog children (``-j`` with
one input; select/eqsat.py's ``run_egglog_side_by_side``) extract what one
child running them in turn extracts."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from hardboiled.pipeline.driver import compile_text
from hardboiled.pipeline.options import CompileOptions
from hardboiled.select import selector
from hardboiled.select.eqsat import ProgramChunk, Scope
from hardboiled.select.options import SelectionOptions
from hardboiled.select.rules import side_by_side

from ..conftest import FIXTURES, ROOT, run_cli


@pytest.mark.parametrize("seed", range(6))
def test_the_scopes_are_cut_into_runs_in_order_one_per_child_at_most(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(200):
        scopes = tuple(Scope((ProgramChunk("s", "x" * rng.randint(0, 500)),), (f"$s{i}",))
                       for i in range(rng.randint(1, 40)))
        jobs = rng.randint(1, 8)
        batches = side_by_side(scopes, jobs)
        assert tuple(s for batch in batches for s in batch) == scopes  # every scope, in order, once
        assert all(batches) and len(batches) == min(jobs, len(scopes))


CASES = {"halide/amx_bf16_matmul_std_tiled/vectorizing.stmt": {},
         "halide/wmma_conv_layer/vectorizing.stmt": {"conv": "WMMAAccumulator"}}
"""Fixtures and the memory of their accumulators (an application at its
own scope size is the command-line test's, below)."""


def _options(case: str, jobs: int) -> CompileOptions:
    return CompileOptions.from_flags(selection=SelectionOptions(store_in=CASES[case], cache_dir=None,
                                                                saturation_jobs=jobs),
                                     emit=("ir", "report"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_side_by_side_children_extract_what_one_child_extracts(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One statement a scope, so that every fixture has several; then one
    child, two and three."""
    from hardboiled.select import eqsat, rules

    monkeypatch.setattr(selector, "STATEMENTS_PER_SCOPE", 1)
    path = FIXTURES.parent / case
    spawned: list[int] = []
    batches: list[int] = []
    spawn, run = eqsat.spawn, rules.run_egglog_side_by_side
    monkeypatch.setattr(eqsat, "spawn", lambda memory_mb: spawned.append(memory_mb) or spawn(memory_mb))
    monkeypatch.setattr(rules, "run_egglog_side_by_side",
                        lambda chunks, cut, **kw: batches.append(len(cut)) or run(chunks, cut, **kw))
    results = []
    for jobs in (1, 2, 3):
        spawned.clear()
        batches.clear()
        results.append(compile_text(path.name, path.read_bytes(), _options(case, jobs)))
        # each batch of scopes in a child: the ones beside the prestarted child were started for it
        assert batches and all(1 <= b <= jobs for b in batches) and (jobs == 1 or max(batches) >= 2)
        assert len(spawned) >= max(batches) - 1
    assert results[0].exit_code == 0, [d.render_text() for d in results[0].diagnostics]
    assert results[0].report["lowered"] >= 3
    for result in results[1:]:
        assert result.exit_code == 0 and result.outputs["ir"] == results[0].outputs["ir"]
        assert _untimed(result.report["statements"]) == _untimed(results[0].report["statements"])


def _untimed(statements: list[dict]) -> list[dict]:
    """What the report says of each statement, but how long it took."""
    return [{key: value for key, value in s.items() if key != "seconds"} for s in statements]


def test_dash_j_with_one_input_saturates_side_by_side_to_the_same_bytes(tmp_path: Path) -> None:
    """64 tensor statements in one input, two scopes of 32: -j 2 saturates
    them in two children."""
    source = ROOT / "tests" / "fixtures" / "apps" / "gemm.stmt"
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}.stmt"
        result = run_cli("compile", str(source), "--store-in", "prod=WMMAAccumulator", "--no-cache", "-q",
                         "-j", jobs, "-o", str(out))
        assert result.returncode == 0, result.stderr
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
