"""Running the passes on one input, with the instrumentation ``mlir-opt``
users expect: ``--print-before PASS``/``--print-after PASS`` show the
program around a pass (the generated source for the code generators),
``--timing`` reports each pass's wall time, and ``--verify-ir`` checks the
IR invariants (hardboiled/ir/invariants.py) after every IR pass."""

from __future__ import annotations

import time

from hardboiled.ir.printer import print_ir
from hardboiled.pipeline.compilation import Compilation
from hardboiled.pipeline.options import CompileOptions
from hardboiled.pipeline.passes import IR_PASSES, PIPELINE, Pass


def _shown(c: Compilation, step: Pass) -> str:
    if step.shows_code == "c":
        return c.c_source or ""
    if step.shows_code == "cuda":
        return c.cuda_source or ""
    return print_ir(c.program) if c.program is not None else "(nothing parsed yet)\n"


def _dump(c: Compilation, step: Pass, when: str) -> str:
    """The program around ``step``, headed as mlir-opt heads its dumps."""
    return f"// -----// IR Dump {when} {step.name} ({c.name}) //----- //\n" + _shown(c, step)


def _wants(names: tuple[str, ...], step: Pass) -> bool:
    return "all" in names or step.name in names


def run_pipeline(c: Compilation, options: CompileOptions) -> None:
    """Run every pass that applies to ``c``; a pass's error propagates."""
    instrumentation = options.instrumentation
    timings: list[tuple[str, float]] = []
    try:
        for step in PIPELINE:
            granted = step.granted(options)
            if not step.applies(granted, c):
                continue
            if _wants(instrumentation.print_before, step):
                c.instrumentation.append(_dump(c, step, "Before"))
            start = time.perf_counter()
            try:
                step.run(c, granted)
            finally:
                timings.append((step.name, time.perf_counter() - start))
            if options.verification.verify and step.name in IR_PASSES and step.name != "parse" \
                    and c.program is not None and (not c.after_passes or c.after_passes[-1][1] is not c.program):
                c.after_passes.append((step.name, c.program))
            if instrumentation.verify_ir and step.name in IR_PASSES and c.program is not None:
                from hardboiled.ir.invariants import check_program

                # After parse, a broken invariant is the input's fault.
                check_program(c.program, after=step.name, blame_input=step.name == "parse")
            if _wants(instrumentation.print_after, step):
                c.instrumentation.append(_dump(c, step, "After"))
    finally:
        if instrumentation.timing:
            c.instrumentation.append(timing_report(c.name, timings))


def timing_report(name: str, timings: list[tuple[str, float]]) -> str:
    """The --timing table, in the style of mlir-opt's -mlir-timing."""
    total = sum(seconds for _, seconds in timings)
    rule = "===" + "-" * 73 + "===\n"
    lines = [rule, f"{'... Pass execution timing report ...':^79}\n", rule,
             f"  Total Execution Time: {total:.4f} seconds ({name})\n\n",
             "  ----Wall Time----  ----Name----\n"]
    for step, seconds in timings:
        share = 100.0 * seconds / total if total else 0.0
        lines.append(f"  {seconds:8.4f} ({share:5.1f}%)  {step}\n")
    lines.append(f"  {total:8.4f} (100.0%)  Total\n")
    return "".join(lines)
