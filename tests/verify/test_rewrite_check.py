"""The check every selected rewrite passes before it is emitted
(verify/rewrite_check.py): each replacement against its store, on its own,
in the interpreter."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping

import pytest

from hardboiled import ir
from hardboiled.ir.visitor import map_expr
from hardboiled.pipeline.driver import compile_text
from hardboiled.pipeline.options import CompileOptions
from hardboiled.select.options import SelectionOptions
from hardboiled.targets.amx import AMXOp, amx_intrinsic
from hardboiled.targets.wmma import WMMAOp, wmma_intrinsic
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
    """Run again outside the pipeline, every rewrite it accepted still
    passes (the check is deterministic), and there are many of them."""
    checked = list(_all_checked())
    assert len(checked) >= 150
    failures = [(case, reason) for case, (store, rewritten, temporaries, layouts) in checked
                if (reason := check_rewrite(store, rewritten, temporaries, layouts)) is not None]  # type: ignore[arg-type]
    assert failures == []


# ------------------------------------------------------------------ mutants
def _mutate_calls(stmt: ir.Stmt, change: Callable[[ir.Call], ir.Expr | None]) -> Iterator[ir.Stmt]:
    """One mutant per call ``change`` rewrites (each changes one call)."""
    calls = [n for n in ir.walk(stmt) if isinstance(n, ir.Call) and change(n) is not None]
    for target in calls:
        replacement = change(target)
        assert replacement is not None
        yield _replace_expr(stmt, target, replacement)


def _replace_expr(stmt: ir.Stmt, target: ir.Expr, replacement: ir.Expr) -> ir.Stmt:
    def visit(node: ir.Stmt) -> ir.Stmt | None:
        if isinstance(node, ir.Store):
            return dataclasses.replace(node, value=map_expr(node.value, swap), index=map_expr(node.index, swap))
        if isinstance(node, ir.Evaluate):
            return dataclasses.replace(node, value=map_expr(node.value, swap))
        return None

    def swap(e: ir.Expr) -> ir.Expr | None:
        return replacement if e is target else None

    from hardboiled.ir.visitor import map_stmt

    return map_stmt(stmt, visit)


def _plus(e: ir.Expr, amount: int) -> ir.Expr:
    return ir.Binary(ir.BinOp.ADD, e, ir.IntImm(amount, e.type))


def _shifted_offset(call: ir.Call) -> ir.Expr | None:
    """A fragment or tile loaded (or stored) one element (one row for AMX's
    byte offsets) further on."""
    wmma = wmma_intrinsic(call)
    if wmma is not None and wmma.op in (WMMAOp.LOAD, WMMAOp.STORE):
        position = 1 if wmma.op is WMMAOp.LOAD else 2
        return dataclasses.replace(call, args=tuple(_plus(a, 1) if i == position else a
                                                    for i, a in enumerate(call.args)))
    amx = amx_intrinsic(call)
    if amx is not None and amx.op in (AMXOp.LOAD, AMXOp.STORE):
        position = amx.arguments.index("offset")
        return dataclasses.replace(call, args=tuple(_plus(a, 64) if i == position else a
                                                    for i, a in enumerate(call.args)))
    return None


def _wider_stride(call: ir.Call) -> ir.Expr | None:
    """A leading dimension (stride) one row-step wider."""
    wmma = wmma_intrinsic(call)
    if wmma is not None and wmma.op in (WMMAOp.LOAD, WMMAOp.STORE):
        position = 2 if wmma.op is WMMAOp.LOAD else 3
        return dataclasses.replace(call, args=tuple(_plus(a, 8) if i == position else a
                                                    for i, a in enumerate(call.args)))
    amx = amx_intrinsic(call)
    if amx is not None and amx.op in (AMXOp.LOAD, AMXOp.STORE):
        position = amx.arguments.index("stride")
        return dataclasses.replace(call, args=tuple(_plus(a, 64) if i == position else a
                                                    for i, a in enumerate(call.args)))
    return None


@pytest.mark.slow
@pytest.mark.parametrize("mutation", [_shifted_offset, _wider_stride], ids=["offset", "stride"])
def test_a_rewrite_that_reads_or_writes_elsewhere_is_refused(mutation: Callable[[ir.Call], ir.Expr | None]) -> None:
    """Every load and store of every checked rewrite, moved (offset) or
    spread (stride): each mutant reads or writes other elements than the
    store does, and the check names where they differ."""
    mutants = survivors = 0
    kept: list[str] = []
    for case, (store, rewritten, temporaries, layouts) in _all_checked():
        for mutant in _mutate_calls(rewritten, mutation):
            mutants += 1
            if check_rewrite(store, mutant, temporaries, layouts) is None:  # type: ignore[arg-type]
                survivors += 1
                kept.append(case)
    assert mutants >= 150
    assert survivors == 0, kept
