"""The summary of a compile on standard error: one line per input (a table
on a terminal), or the JSON reports of every input."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from hardboiled.cli.terminal import color_enabled

if TYPE_CHECKING:
    from hardboiled.pipeline.driver import FileResult


def reports_json(results: list[FileResult]) -> str:
    """The reports of every input, failed ones included, in input order
    (a list of docs/report-schema.json objects)."""
    return json.dumps([r.report for r in results], indent=2, sort_keys=True) + "\n"


def summarize(results: list[FileResult], report_format: str) -> None:
    if report_format == "json":
        sys.stderr.write(reports_json(results))
        return
    for result in results:
        for message in result.messages:
            sys.stderr.write(f"hardboiled: {result.input}: {message}\n")
    # An input that failed before selection has its diagnostics, and no line here.
    summarized = [r for r in results if not r.exit_code or r.report.get("statements") or r.report.get("candidates")]
    rows = [summary_row(result) for result in summarized]
    if not rows:
        return
    if color_enabled(sys.stderr):
        from rich.console import Console
        from rich.table import Table

        table = Table("input", "selection", "schedule", "e-graph and time", title="hardboiled")
        for row, result in zip(rows, summarized):
            table.add_row(*row, style="red" if result.exit_code else None)
        Console(stderr=True).print(table)
        return
    for name, *parts in rows:
        sys.stderr.write(f"hardboiled: {name}: " + "; ".join(p for p in parts if p) + "\n")


def summary_row(result: FileResult) -> tuple[str, str, str, str]:
    """One input's line of the summary: selection, schedule, e-graph and time."""
    report = result.report
    statements = report.get("statements", [])
    # A later step (verification, the C compiler) may have failed after
    # selection succeeded: the line must not read like a success.
    written = "only the HTML report written" if "html" in result.outputs else "nothing written"
    failed = f"failed (exit {result.exit_code}), {written}" if result.exit_code else ""
    if not statements:
        if report.get("already_lowered"):
            return (result.input, f"already tensorized: the input calls {report['already_lowered']} tile or "
                    "fragment operations (Halide's own AMX stage?); nothing to select, `hardboiled verify` "
                    "checks it against the stage it came from", "", "")
        found = len(report.get("candidates", []))
        hint = f" ({found} candidate Func{'s' if found != 1 else ''} named above)" if found else ""
        if failed:
            return (result.input, f"{failed}: no store is in accelerator memory{hint}", "", "")
        return (result.input, f"no store touches accelerator memory; the IR is unchanged{hint}", "", "")
    sizes = {(s["egraph"]["nodes"], s["egraph"]["classes"]) for s in statements if s["egraph"]}
    nodes = sum(n for n, _ in sizes)
    classes = sum(c for _, c in sizes)
    cached = all(s["cached"] for s in statements)
    seconds = max(s["seconds"] for s in statements)
    schedule = report["schedule"]
    return (
        result.input,
        (failed + "; " if failed else "") + f"lowered {report['lowered']} of {report['selected']} accelerator stores",
        f"schedule {schedule['source']} ({schedule['iterations']} iterations)" if schedule else "",
        f"e-graph {nodes} nodes, {classes} classes; " + ("cached" if cached else f"{seconds:.2f} s"),
    )
