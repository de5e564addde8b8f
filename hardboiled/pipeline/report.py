"""The JSON report of one compile (schema in docs/cli.md): every selected
statement with its outcome, intrinsics and e-graph figures, and the
results of verification and of running the generated code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hardboiled.support.diagnostics import Diagnostic, ExitCode
from hardboiled.support.version import VERSION
from hardboiled.targets.amx import AMXIntrinsic, AMXOp
from hardboiled.targets.wmma import WMMAIntrinsic, WMMAOp

if TYPE_CHECKING:  # a failed input's report is finished without loading selection
    from hardboiled.select.candidates import Candidate
    from hardboiled.select.selector import SelectionResult, StoreReport

REPORT_SCHEMA_VERSION = 2
_HEADER = {"schema": "hardboiled-report", "schema_version": REPORT_SCHEMA_VERSION, "hardboiled": VERSION}


_PATTERNS: tuple[tuple[WMMAOp | AMXOp, str], ...] = (
    (WMMAOp.MMA, "fragment product C + A*B"),
    (WMMAOp.FILL, "filled accumulator fragment"),
    (WMMAOp.STORE, "accumulator fragment stored to memory"),
    (WMMAOp.LOAD, "accumulator fragment loaded from memory"),
    (AMXOp.MATMUL, "tile product C + A*B"),
    (AMXOp.ZERO, "zeroed accumulator tile"),
    (AMXOp.STORE, "accumulator tile stored to memory"),
    (AMXOp.LOAD, "operand tile preloaded into an AMX buffer"),
)
"""What a lowered statement does, named by the first operation it uses in
this order (a statement with an mma also loads and stores fragments)."""


def _pattern(report: StoreReport) -> str | None:
    if not report.lowered:
        return None
    wmma = report.accelerator == "WMMA"
    parse = WMMAIntrinsic.parse if wmma else AMXIntrinsic.parse
    ops = {intrinsic.op for name in report.intrinsics if (intrinsic := parse(name)) is not None}
    fallback = "accumulator fragment loaded from memory" if wmma else "tile operation"
    return next((text for op, text in _PATTERNS if op in ops), fallback)


def selection_report(name: str, stage: str | None, selections: list[SelectionResult],
                     candidates: Sequence[Candidate] = (), already_lowered: int = 0) -> dict[str, Any]:
    statements = []
    for selection in selections:
        size = selection.egraph
        for r in selection.reports:
            statements.append({
                "buffer": r.buffer,
                "line": r.line,
                "target": r.accelerator.lower(),
                "outcome": "lowered" if r.lowered else "missed",
                "lowered": r.lowered,
                "pattern": _pattern(r),
                "intrinsics": list(r.intrinsics),
                "reason": _first_line(r.explanation),
                "explanation": r.explanation,
                "egraph": {"nodes": size.nodes, "classes": size.classes} if size else None,
                "seconds": round(selection.seconds, 4),
                "cached": selection.cached,
            })
    schedule = next((s.schedule for s in selections if s.schedule is not None), None)
    return {
        **_HEADER,
        "input": name,
        "stage": stage,
        "schedule": {"source": schedule.source, "iterations": schedule.iterations} if schedule else None,
        "statements": statements,
        "lowered": sum(1 for s in statements if s["lowered"]),
        "selected": len(statements),
        "candidates": [c.to_json() for c in candidates],
        "already_lowered": already_lowered,
    }


def _first_line(explanation: str | None) -> str | None:
    """A miss's reason in one line: the first of its explanation."""
    return explanation.strip().split("\n", 1)[0] if explanation else None


def finish_report(report: dict[str, Any], name: str, exit_code: int, diagnostics: list[Diagnostic],
                  seconds: float) -> dict[str, Any]:
    """The report of one input as the user gets it, whatever became of the
    input: what selection found (nothing, for an input that failed before
    selection), the outcome and exit status, every diagnostic, and the
    input's wall time. Fields are always present (docs/report-schema.json)."""
    finished = {**_HEADER, "input": name, "stage": None, "schedule": None, "statements": [], "lowered": 0,
                "selected": 0, "candidates": [], "already_lowered": 0, **report}
    finished["outcome"] = ExitCode(exit_code).name.lower().replace("_", "-")
    finished["exit_code"] = exit_code
    finished["diagnostics"] = [d.to_json() for d in diagnostics]
    finished["seconds"] = round(seconds, 4)
    return finished


def verification_json(check: Any) -> dict[str, Any]:
    return {
        "ok": check.ok,
        "seed": check.seed,
        "error": check.error,
        "outputs": [
            {"buffer": c.name, "elements": c.elements, "max_abs_error": c.max_abs_error,
             "max_rel_error": c.max_rel_error, "tolerance": c.tolerance,
             "first_mismatch": list(c.coordinates) if c.coordinates else c.first_mismatch,
             "unproven": c.unproven}
            for c in check.outputs
        ],
    }
