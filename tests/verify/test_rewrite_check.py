"""The check every selected rewrite passes before it is emitted
(verify/rewrite_check.py): each replacement against its store, on its own,
in the interpreter."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping

import pytest

from hardboiled import ir
from hardboiled.pipeline.driver import compile_text
from hardboiled.pipeline.options import CompileOptions
from hardboiled.select.options import SelectionOptions
from hardboiled.verify.rewrite_check import check_rewrite

from ..conftest import FIXTURES, MANIFEST, ROOT

Checked = tuple[ir.Stmt, ir.Stmt, Mapping[str, ir.Expr], Mapping[str, object]]

CASES = [c for c, m in sorted(MANIFEST.items()) if m["accelerator"] != "none"]
APP_VARIANTS = sorted(p.stem for p in (ROOT / "tests" / "fixtures" / "app_variants").glob("upsample-*.stmt"))[:2]


def _store_in(case: str) -> dict[str, str]:
    entry = MANIFEST[case]
    if entry["memory_type"] in ("AMXTile", "WMMAAccumulator"):
        return {}
    return {str(entry["accumulator"]): "AMXTile" if entry["accelerator"] == "amx" else "WMMAAccumulator"}


@functools.cache
def _checked(path: str, store_in: tuple[tuple[str, str], ...]) -> tuple[int, list[Checked]]:
    """Every (store, replacement, temporaries, layouts) the pipeline checked
    compiling ``path``, and its exit status."""
    seen: list[Checked] = []

    def recording(store: ir.Stmt, rewritten: ir.Stmt, temporaries: Mapping[str, ir.Expr],
                  layouts: Mapping[str, object]) -> str | None:
        seen.append((store, rewritten, dict(temporaries), dict(layouts)))
        return check_rewrite(store, rewritten, temporaries, layouts)  # type: ignore[arg-type]

    options = CompileOptions.from_flags(selection=SelectionOptions(store_in=dict(store_in), cache_dir=None,
                                                                   rewrite_check=recording))
    result = compile_text(path, (ROOT / path).read_bytes(), options)
    return result.exit_code, seen


def _all_checked() -> Iterator[tuple[str, Checked]]:
    for case in CASES:
        path = str((FIXTURES / case / "vectorizing.stmt").relative_to(ROOT))
        code, seen = _checked(path, tuple(sorted(_store_in(case).items())))
        assert code == 0, case
        yield from ((case, s) for s in seen)
    for name in APP_VARIANTS:
        code, seen = _checked(f"tests/fixtures/app_variants/{name}.stmt", (("conv", "WMMAAccumulator"),))
        assert code == 0, name
        yield from ((name, s) for s in seen)


@pytest.mark.slow
def test_every_rewrite_of_the_fixtures_passes() -> None:
    """Run again outside the pipeline, every rewrite it accepted is checked
    (none could not be run on its own) and still passes (the check is
    deterministic), and there are many of them."""
    from hardboiled.verify.rewrite_check import checked

    rewrites = list(_all_checked())
    assert len(rewrites) >= 150
    results = [(case, checked(store, rewritten, temporaries, layouts))  # type: ignore[arg-type]
               for case, (store, rewritten, temporaries, layouts) in rewrites]
    assert [case for case, (ran, _) in results if not ran] == []  # every one is run, none skipped
    assert [(case, reason) for case, (_, reason) in results if reason is not None] == []


# ------------------------------------------------------------------ mutants
@pytest.mark.slow
@pytest.mark.parametrize("operator", ["operand offset", "leading dimension"])
def test_a_rewrite_that_reads_or_writes_elsewhere_is_refused(operator: str) -> None:
    """Every load and store of every checked rewrite, moved one element on
    or given a wider leading dimension (verify/mutants.py): each mutant reads
    or writes other elements than the store does, and the check names where
    they differ."""
    from hardboiled.verify.mutants import mutants

    count = 0
    survivors: list[str] = []
    for case, (store, rewritten, temporaries, layouts) in _all_checked():
        for mutant in mutants(rewritten):
            if mutant.operator != operator:
                continue
            count += 1
            if check_rewrite(store, mutant.program, temporaries, layouts) is None:  # type: ignore[arg-type]
                survivors.append(f"{case}: {mutant.where}")
    assert count >= 150
    assert survivors == []


@pytest.mark.slow
def test_every_mutant_of_every_operator_is_refused_whatever_the_seed() -> None:
    """Every mutant (verify/mutants.py) of every checked rewrite computes
    something else for some inputs, and the check finds it at each of
    several seeds, not at the one it ships with alone: its first trial
    draws no scalar 0, which would hide a product such as a min times a
    stride (a min left out went unseen for some seeds before)."""
    from hardboiled.verify.mutants import mutants
    from hardboiled.verify.rewrite_check import checked

    programs = [(case, store, mutant, temporaries, layouts)
                for case, (store, rewritten, temporaries, layouts) in _all_checked()
                for mutant in mutants(rewritten)]
    assert len(programs) >= 400 and len({mutant.operator for *_, mutant, _, _ in programs}) >= 5
    survivors = [(seed, case, mutant.operator, mutant.where)
                 for seed in range(4) for case, store, mutant, temporaries, layouts in programs
                 if checked(store, mutant.program, temporaries, layouts, seed=seed)[1] is None]  # type: ignore[arg-type]
    assert survivors == []


def test_a_statement_reading_elements_two_to_the_31_apart_is_not_run_here() -> None:
    """A fuzzed dump's K stride of 2147483647: the statement's footprint
    is 2^37 elements, which the per-store check does not allocate (it took
    24 GB before the machine killed it); it says it could not run, and the
    whole program's --verify reports the out-of-bounds read."""
    from hardboiled.frontend.parse import parse_input
    from hardboiled.verify.rewrite_check import checked

    store = parse_input("out[ramp(0, 1, 4)] = (int32x4)vector_reduce_add("
                        "int32x256(A[ramp(0, 2147483647, 256)]))\n", "huge.stmt",
                        buffer_types={"A": ir.Int(8), "out": ir.Int(32)}).ir
    assert checked(store, store, {}) == (False, None)


def test_the_check_s_draws_are_the_seed_s_own_and_cover_their_range() -> None:
    import numpy as np

    from hardboiled.verify.rewrite_check import _Draws

    first, again, other = _Draws(3), _Draws(3), _Draws(4)
    drawn = first.integers(-3, 4, 70_000)
    assert (drawn == again.integers(-3, 4, 70_000)).all() and not (drawn == other.integers(-3, 4, 70_000)).all()
    assert sorted(set(drawn.tolist())) == list(range(-3, 4))
    assert np.bincount(drawn + 3).min() > 9_000  # about 10,000 each
    assert not (first.integers(-3, 4, 1000) == drawn[:1000]).all()  # a draw goes on from the last
    # Another seed's stream is not this one's, shifted (word n mixes seed + n * gamma).
    assert all(not (other.integers(-3, 4, 1000) == _Draws(3).integers(-3, 4, 1000 + shift)[shift:]).all()
               for shift in range(4) for other in [_Draws(4)])
    with pytest.raises(ValueError):
        _Draws(0).integers(2, 2)
    wide = _Draws(0).integers(-(1 << 20), 1 << 20, 50_000, endpoint=True)
    assert wide.min() >= -(1 << 20) and wide.max() <= 1 << 20 and wide.min() < -(1 << 19) < (1 << 19) < wide.max()
    one = _Draws(1).integers(0, 9)
    assert 0 <= int(one) < 9


def test_a_compile_s_checks_load_no_random_module(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """numpy.random and what it imports cost every compile 8 ms; the checks
    draw their own (a static figure, not a time)."""
    import subprocess
    import sys

    log = FIXTURES / "amx_bf16_matmul_std_single" / "debug.log"
    probe = ("import sys\nfrom hardboiled.cli import main\n"
             f"sys.argv = ['hardboiled', 'compile', {str(log)!r}, '--no-cache', '-q', '-o', {str(tmp_path / 'o.stmt')!r}]\n"
             "try:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code\n"
             "print(sorted(m for m in ('numpy.random', 'secrets', 'hashlib') if m in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
