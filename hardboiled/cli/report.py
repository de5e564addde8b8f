"""The JSON report of one compile (schema in docs/cli.md): every selected
statement with its outcome, intrinsics and e-graph figures, and the
results of verification and of running the generated code."""

from __future__ import annotations

from typing import Any

from hardboiled import __version__
from hardboiled.select.selector import SelectionResult, StoreReport
from hardboiled.targets.amx import AMXIntrinsic, AMXOp
from hardboiled.targets.wmma import WMMAIntrinsic, WMMAOp

REPORT_SCHEMA_VERSION = 1




def _pattern(report: StoreReport) -> str | None:
    if not report.lowered:
        return None
    names = set(report.intrinsics)
    if report.accelerator == "WMMA":
        kinds = {intrinsic.op for name in names if (intrinsic := WMMAIntrinsic.parse(name)) is not None}
        if WMMAOp.MMA in kinds:
            return "fragment product C + A*B"
        if WMMAOp.FILL in kinds:
            return "filled accumulator fragment"
        if WMMAOp.STORE in kinds:
            return "accumulator fragment stored to memory"
        return "accumulator fragment loaded from memory"
    ops = {amx.op for name in names if (amx := AMXIntrinsic.parse(name)) is not None}
    if AMXOp.MATMUL in ops:
        return "tile product C + A*B"
    if AMXOp.ZERO in ops:
        return "zeroed accumulator tile"
    if AMXOp.STORE in ops:
        return "accumulator tile stored to memory"
    if AMXOp.LOAD in ops:
        return "operand tile preloaded into an AMX buffer"
    return "tile operation"


def selection_report(name: str, stage: str | None, selections: list[SelectionResult]) -> dict[str, Any]:
    statements = []
    for selection in selections:
        size = selection.egraph
        for r in selection.reports:
            statements.append({
                "buffer": r.buffer,
                "line": r.line,
                "target": r.accelerator.lower(),
                "lowered": r.lowered,
                "pattern": _pattern(r),
                "intrinsics": list(r.intrinsics),
                "explanation": r.explanation,
                "egraph": {"nodes": size.nodes, "classes": size.classes} if size else None,
                "seconds": round(selection.seconds, 4),
                "cached": selection.cached,
            })
    schedule = next((s.schedule for s in selections if s.schedule is not None), None)
    return {
        "schema": "hardboiled-report",
        "schema_version": REPORT_SCHEMA_VERSION,
        "hardboiled": __version__,
        "input": name,
        "stage": stage,
        "schedule": {"source": schedule.source, "iterations": schedule.iterations} if schedule else None,
        "statements": statements,
        "lowered": sum(1 for s in statements if s["lowered"]),
        "selected": len(statements),
    }


def verification_json(check: Any) -> dict[str, Any]:
    return {
        "ok": check.ok,
        "seed": check.seed,
        "error": check.error,
        "outputs": [
            {"buffer": c.name, "elements": c.elements, "max_abs_error": c.max_abs_error,
             "max_rel_error": c.max_rel_error, "tolerance": c.tolerance,
             "first_mismatch": list(c.coordinates) if c.coordinates else c.first_mismatch}
            for c in check.outputs
        ],
    }
