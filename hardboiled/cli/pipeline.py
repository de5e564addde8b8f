"""The compile pipeline as a list of named passes.

One input flows through ``PIPELINE`` in order; each ``Pass`` reads and
updates a ``Compilation``. The IR passes (parse, select, the legalization
passes) rewrite ``Compilation.program``; the later ones verify it, generate
code and build or run it. A pass that has nothing to do for the options
given (no ``--verify``, no ``--emit cuda``) is skipped.

``--print-before PASS``/``--print-after PASS`` show the program around a
pass (the generated source for the code generators), ``--timing`` reports
each pass's wall time, and ``--verify-ir`` checks the IR invariants
(hardboiled/ir/invariants.py) after every IR pass, as ``mlir-opt`` does.

``tensorize`` runs the selection and legalization passes on a single
statement, for library use and tests.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hardboiled import ir
from hardboiled.cli.options import CODE as CODE  # re-exported
from hardboiled.cli.options import CUDA_BUILD_SUFFIXES as CUDA_BUILD_SUFFIXES
from hardboiled.cli.options import CompileOptions as CompileOptions
from hardboiled.ir.printer import print_ir
from hardboiled.select.candidates import Candidate
from hardboiled.select.selector import SelectionMiss, SelectionOptions, SelectionResult, select_instructions
from hardboiled.support.diagnostics import Diagnostic, HardboiledError
from hardboiled.targets.wmma import WMMA_TENSOR_CORE

# --------------------------------------------------------------------------
# Legalization: statement passes that follow selection
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StmtPass:
    """A pass over one statement that selection produced."""

    name: str
    summary: str
    apply: Callable[[ir.Stmt, SelectionResult], ir.Stmt]


def _place_temporaries(stmt: ir.Stmt, selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.temporaries import place_temporaries

    return place_temporaries(stmt, list(selection.temporaries))


def _hoist_operand_copies(stmt: ir.Stmt, selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.operand_hoisting import hoist_operand_copies

    return hoist_operand_copies(stmt, [t.name for t in selection.temporaries])


def _retag_memory(stmt: ir.Stmt, selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.memory import apply_memory_overrides

    return apply_memory_overrides(stmt, dict(selection.memory_types))


def _check_amx(stmt: ir.Stmt, _selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.amx_checks import check_amx_program

    return check_amx_program(stmt)


def _stage_wmma_operands(stmt: ir.Stmt, _selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.wmma_staging import buffer_element_types, stage_unaligned_operands, uses_wmma_memory

    return stage_unaligned_operands(stmt, buffer_element_types(stmt)) if uses_wmma_memory(stmt) else stmt


def _wmma_lanes(stmt: ir.Stmt, _selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.wmma_lanes import enforce_wmma_lanes
    from hardboiled.legalize.wmma_staging import uses_wmma_memory

    return enforce_wmma_lanes(stmt) if uses_wmma_memory(stmt) else stmt


def _wmma_fragments(stmt: ir.Stmt, _selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.wmma_fragments import push_fragment_allocations
    from hardboiled.legalize.wmma_staging import uses_wmma_memory

    return push_fragment_allocations(stmt) if uses_wmma_memory(stmt) else stmt


LEGALIZATION: tuple[StmtPass, ...] = (
    StmtPass("place-temporaries", "allocate and fill the operand temporaries selection introduced",
             _place_temporaries),
    StmtPass("hoist-operand-copies", "fill each VNNI operand copy once, outside the loops that read it",
             _hoist_operand_copies),
    StmtPass("retag-memory", "move buffers to the memory --store-in names (Auto after a fallback)", _retag_memory),
    StmtPass("check-amx", "tile shapes, whole-tile indexing and tile-register pressure", _check_amx),
    StmtPass("stage-wmma-operands", "copy operands not provably aligned through shared memory",
             _stage_wmma_operands),
    StmtPass("wmma-lanes", "run every WMMA operation in a 32-lane warp loop", _wmma_lanes),
    StmtPass("wmma-fragments", "make fragment allocations per-thread", _wmma_fragments),
)


def legalize(stmt: ir.Stmt, selection: SelectionResult, steps: tuple[StmtPass, ...] = LEGALIZATION) -> ir.Stmt:
    """``stmt`` (what ``selection`` produced) through the legalization
    passes; unchanged when it has no accelerator memory."""
    if not selection.has_accelerator_memory:
        return stmt
    for step in steps:
        stmt = step.apply(stmt, selection)
    return stmt


def tensorize(stmt: ir.Stmt, options: SelectionOptions, *, filename: str = "<string>", source: str = "",
              store_lines: tuple[int, ...] = ()) -> SelectionResult:
    """Selection and legalization of one statement: the result's ``stmt``
    is executable IR."""
    selection = select_instructions(stmt, options, filename=filename, source=source, store_lines=store_lines)
    return dataclasses.replace(selection, stmt=legalize(selection.stmt, selection))


# --------------------------------------------------------------------------
# The whole compile pipeline
# --------------------------------------------------------------------------


GENERATED_CUDA_FLAGS = ("-diag-suppress=177",)
"""The shared prelude defines helpers that a kernel may not use."""


@dataclass
class Compilation:
    """One input on its way through the passes."""

    name: str
    data: bytes
    options: CompileOptions
    text: str = ""
    program: ir.Stmt | ir.Module | None = None
    original: ir.Stmt | ir.Module | None = None
    stage: str | None = None
    store_lines: tuple[int, ...] = ()
    selections: list[SelectionResult] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    """With nothing in accelerator memory: the Funcs that could be."""
    already_lowered: int = 0
    """With nothing in accelerator memory: the tile or fragment operations
    the input calls already (Halide's own AMX stage)."""
    c_source: str | None = None
    cuda_source: str | None = None
    header: str | None = None
    """The declaration of the generated C or CUDA function, for callers."""
    outputs: dict[str, str] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    """Lines for the human summary (verification, build)."""
    instrumentation: list[str] = field(default_factory=list)
    """--print-before/--print-after dumps and the --timing report, in order."""


@dataclass(frozen=True, slots=True)
class Pass:
    name: str
    summary: str
    run: Callable[[Compilation], None]
    enabled: Callable[[CompileOptions], bool] = lambda _options: True
    shows_code: str | None = None
    """For a code generator: which generated source --print-after shows."""


def _bodies(program: ir.Stmt | ir.Module) -> list[ir.Stmt]:
    return [f.body for f in program.functions] if isinstance(program, ir.Module) else [program]


def _with_bodies(program: ir.Stmt | ir.Module, bodies: list[ir.Stmt]) -> ir.Stmt | ir.Module:
    if isinstance(program, ir.Module):
        functions = tuple(dataclasses.replace(f, body=b) for f, b in zip(program.functions, bodies))
        return dataclasses.replace(program, functions=functions)
    return bodies[0]


def _single(program: ir.Stmt | ir.Module | None, what: str) -> ir.Stmt:
    """The one statement code generation and verification work on: the
    program, or the body of a lowered module's only function."""
    if isinstance(program, ir.Module) and len(program.functions) == 1:
        return program.functions[0].body
    if isinstance(program, ir.Module) or program is None:
        raise HardboiledError(Diagnostic(
            "error", f"{what} takes a single statement; this module has {len(program.functions) if program else 0} "
            "functions (Halide's closures for parallel loops or async producers)",
            notes=("use the debug log's vectorizing stage or a stmt file",),
        ))
    return program


def _argument_order(c: Compilation) -> tuple[str, ...] | None:
    """Halide's argument order: --args, else the lowered module's signature."""
    if c.options.args is not None:
        return c.options.args
    if isinstance(c.program, ir.Module) and len(c.program.functions) == 1:
        return c.program.functions[0].args
    return None


def _signature(c: Compilation, program: ir.Stmt) -> list[Any]:
    from hardboiled.codegen.abi import kernel_signature

    return kernel_signature(program, _argument_order(c))


def _parse(c: Compilation) -> None:
    from hardboiled.frontend.parse import parse_input
    from hardboiled.frontend.stages import decode_input

    c.text = decode_input(c.data, c.name)
    parsed = parse_input(c.text, c.name, stage=c.options.stage, buffer_types=c.options.buffer_types)
    c.program = c.original = parsed.ir
    c.stage = parsed.stage
    c.store_lines = parsed.store_lines


def _emit_egg(c: Compilation) -> None:
    from hardboiled.select.extract import (
        ScopeGroup,
        accelerator_allocations,
        encode_stores,
        scope_groups,
        select_stores,
    )
    from hardboiled.select.facts import sliding_windows
    from hardboiled.select.rules import STATEMENTS_PER_SCOPE, load_schedule, program_text
    from hardboiled.select.unflatten import unflatten_stores

    assert c.program is not None
    options = c.options.selection
    terms: list[str] = []
    groups: list[ScopeGroup] = []
    windows: list[tuple[int, int, int]] = []
    for body in _bodies(c.program):
        allocations = accelerator_allocations(body, options.store_in)
        body = unflatten_stores(body, allocations)
        selected = [s for s in select_stores(body, allocations, options.store_in) if s.store.predicate is None]
        groups.extend(group.shifted(len(terms)) for group in scope_groups(selected, STATEMENTS_PER_SCOPE))
        terms.extend(encode_stores(selected, allocations, options.store_in).terms)
        windows.extend(sliding_windows(s.store for s in selected))
    # One program for every body: its window shape is the choice over all of
    # them (selection runs each body alone, so with several bodies whose
    # windows differ each may get its own).
    c.outputs["egg"] = program_text(terms, load_schedule(options.schedule_path, options.iterations),
                                    WMMA_TENSOR_CORE.best_window_shape(windows), groups)


def _select(c: Compilation) -> None:
    from hardboiled.select.candidates import (
        NothingMarked,
        candidate_diagnostics,
        compiled_gpu_kernels,
        find_candidates,
        gpu_kernels_compiled,
        nothing_marked,
        tile_operations,
    )
    from hardboiled.select.extract import iter_stores

    assert c.program is not None
    kernels = compiled_gpu_kernels(c.program)
    if kernels and (c.options.selection.store_in or c.options.require):
        _report(c)
        raise NothingMarked([gpu_kernels_compiled(kernels, c.name, c.text, "error")])
    bodies, first_store = [], 0
    for body in _bodies(c.program):
        try:
            selection = select_instructions(body, c.options.selection, filename=c.name, source=c.text,
                                            store_lines=c.store_lines[first_store:])
        except SelectionMiss as miss:
            # The report of a failed input still lists every statement.
            if miss.selection is not None:
                c.selections.append(miss.selection)
            _report(c)
            raise
        c.diagnostics.extend(selection.warnings)
        c.selections.append(selection)
        bodies.append(selection.stmt)
        if not selection.reports:
            c.candidates.extend(find_candidates(body, c.store_lines[first_store:]))
        first_store += sum(1 for _ in iter_stores(body))
    c.program = _with_bodies(c.program, bodies)
    if not any(s.reports for s in c.selections):
        # Nothing to select. An input that calls tile operations already
        # (Halide's own AMX stage) is tensorized; otherwise say which Funcs
        # could have been, and how to mark them: with --require, a miss.
        c.already_lowered = sum(tile_operations(body) for body in _bodies(c.program))
        if c.already_lowered:
            return
        if kernels:
            c.diagnostics.append(gpu_kernels_compiled(kernels, c.name, c.text, "warning"))
            return
        if c.options.require:
            _report(c)
            raise nothing_marked(c.candidates, c.name, c.text)
        c.diagnostics.extend(candidate_diagnostics(c.candidates, c.name, c.text, "warning"))


def _legalization_pass(step: StmtPass) -> Callable[[Compilation], None]:
    def run(c: Compilation) -> None:
        assert c.program is not None
        bodies = [legalize(body, selection, (step,)) for body, selection in zip(_bodies(c.program), c.selections)]
        c.program = _with_bodies(c.program, bodies)

    return run


def _report(c: Compilation) -> None:
    from hardboiled.cli.report import selection_report

    c.report = selection_report(c.name, c.stage, c.selections, c.candidates, c.already_lowered)


def _interpreter_timeout(c: Compilation) -> float:
    from hardboiled.verify.interp import INTERPRETER_TIMEOUT_S

    return c.options.verify_timeout_s or INTERPRETER_TIMEOUT_S


def _verify(c: Compilation) -> None:
    from hardboiled.cli.report import verification_json
    from hardboiled.verify.compare import mismatch_error, verify

    check = verify(_single(c.original, "verification"), _single(c.program, "verification"),
                   seed=c.options.seed, params=c.options.params, timeout_s=_interpreter_timeout(c))
    c.report["verification"] = verification_json(check)
    if not check.ok:
        raise mismatch_error(check)
    c.messages.append(check.summary())


def _emit_html(c: Compilation) -> None:
    from hardboiled.cli.html_report import render_html

    assert c.program is not None
    stores = [store for selection in c.selections for store in selection.reports]
    c.outputs["html"] = render_html(c.report, c.text, stores, c.program)


def _checked_for(stmt: ir.Stmt, language: str) -> ir.Stmt:
    """C runs on the CPU (AMX), CUDA on the GPU (Tensor Cores): say so
    plainly when a program is sent to the other one."""
    gpu = ir.has_gpu_loops(stmt)
    if language == "c" and gpu:
        raise HardboiledError(Diagnostic(
            "error", "this program has GPU loops: the C output (--emit c, --run, --build FILE.o/.so) runs on the CPU",
            notes=("use --emit cuda (and --build FILE.ptx or FILE.cubin); --verify checks it on the CPU",),
        ))
    if language == "cuda" and not gpu:
        raise HardboiledError(Diagnostic(
            "error", "this program has no gpu_block loop: there is no kernel for --emit cuda",
            notes=("schedule the pipeline on the GPU (gpu_blocks), or use --emit c for a CPU (AMX) program",),
        ))
    return stmt


def _emit_cuda(c: Compilation) -> None:
    from hardboiled.codegen.cuda import generate_cuda, generate_cuda_header

    program = _single(c.program, "CUDA generation")
    if "cuda" not in c.options.emit and not c.options.cuda_build and not ir.has_gpu_loops(program):
        return  # --build FILE.o/.so of a CPU program: the C build makes it
    name, arguments = _entry_point(c), _signature(c, program)
    c.cuda_source = generate_cuda(_checked_for(program, "cuda"), name, arguments)
    c.header = generate_cuda_header(program, name, arguments)


def _build_cuda(c: Compilation) -> None:
    from hardboiled.codegen.cuda import required_sm
    from hardboiled.codegen.toolchain import compile_cuda

    options = c.options
    assert options.build_path is not None
    if c.cuda_source is None:
        return  # a CPU program's object or library: the C build makes it
    needed = required_sm(_single(c.program, "CUDA generation"))
    if options.cuda_arch < needed:
        raise HardboiledError(Diagnostic(
            "error", f"--cuda-arch sm_{options.cuda_arch}: these Tensor Core operations need sm_{needed} or newer",
            notes=("bfloat16 fragments need sm_80",),
        ))
    suffix = Path(options.build_path).suffix
    kind = CUDA_BUILD_SUFFIXES.get(suffix) or ("so" if suffix == ".so" else "o")
    compile_cuda(c.cuda_source, Path(options.build_path), kind=kind, sm=options.cuda_arch,
                 extra=GENERATED_CUDA_FLAGS + options.include_flags)
    c.messages.append(f"built {options.build_path} with nvcc (sm_{options.cuda_arch}, {kind})")


def _emit_c(c: Compilation) -> None:
    from hardboiled.codegen.c import generate_c, generate_c_header

    program = _single(c.program, "C generation")
    if "c" not in c.options.emit and not c.options.run and ir.has_gpu_loops(program):
        return  # --build FILE.o/.so of a GPU program: nvcc makes it from the CUDA
    name, arguments = _entry_point(c), _signature(c, program)
    c.c_source = generate_c(_checked_for(program, "c"), name, arguments)
    c.header = generate_c_header(program, name, arguments)


def _entry_point(c: Compilation) -> str:
    from hardboiled.codegen.naming import entry_point_name

    return c.options.name or entry_point_name(c.name)


def _run_c(c: Compilation) -> None:
    from hardboiled.cli.report import verification_json
    from hardboiled.verify.compare import mismatch_error
    from hardboiled.verify.run import run_generated_c

    options = c.options
    assert c.c_source is not None
    check, compiler, mode = run_generated_c(_single(c.original, "running"), _single(c.program, "running"),
                                            c.c_source, cc=options.cc, amx=options.amx, seed=options.seed,
                                            params=options.params, function=_entry_point(c),
                                            order=_argument_order(c),
                                            extra=options.include_flags, timeout_s=_interpreter_timeout(c))
    c.report["run"] = dict(verification_json(check), compiler=compiler, amx=mode)
    if not check.ok:
        raise mismatch_error(check)
    c.messages.append(f"ran the generated C ({compiler}, AMX {mode}): {check.summary()}")


def _build_c(c: Compilation) -> None:
    from hardboiled.codegen.toolchain import compile_c, find_compiler

    options = c.options
    assert options.build_path is not None
    if c.c_source is None:
        return  # a GPU program: built by nvcc
    compiler = compile_c(c.c_source, Path(options.build_path), shared=options.build_path.endswith(".so"),
                         amx=options.amx, compiler=find_compiler(options.cc), extra=options.include_flags)
    c.messages.append(f"built {options.build_path} with {compiler.name}")


PIPELINE: tuple[Pass, ...] = (
    Pass("parse", "Halide IR text to IR (one stage of a debug log)", _parse),
    Pass("emit-egg", "the egglog program selection runs (--emit egg)", _emit_egg, lambda o: "egg" in o.emit),
    Pass("select", "tile extraction, equality saturation, decoding and reinsertion", _select),
    *(Pass(step.name, step.summary, _legalization_pass(step)) for step in LEGALIZATION),
    Pass("report", "the selection report", _report),
    Pass("verify", "run the original and the rewritten IR in the interpreter and compare", _verify,
         lambda o: o.verify),
    Pass("emit-cuda", "CUDA with nvcuda::wmma kernels", _emit_cuda,
         lambda o: "cuda" in o.emit or CODE in o.emit or bool(o.build_path), shows_code="cuda"),
    Pass("build-cuda", "compile the CUDA with nvcc", _build_cuda, lambda o: bool(o.build_path)),
    Pass("emit-c", "C with AMX intrinsics", _emit_c,
         lambda o: "c" in o.emit or CODE in o.emit or o.c_build or o.run, shows_code="c"),
    Pass("run-c", "build the C, run it and compare with the interpreter", _run_c, lambda o: o.run),
    Pass("build-c", "compile the C to an object or shared library", _build_c, lambda o: o.c_build),
    Pass("emit-html", "the visual report (--emit html)", _emit_html, lambda o: "html" in o.emit),
)

PASS_NAMES = tuple(p.name for p in PIPELINE)
IR_PASSES = frozenset({"parse", "select", *(step.name for step in LEGALIZATION)})
"""The passes that change the IR: --verify-ir checks after each of them."""


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


def run_pipeline(c: Compilation) -> None:
    """Run every enabled pass on ``c``; a pass's error propagates."""
    options = c.options
    timings: list[tuple[str, float]] = []
    try:
        for step in PIPELINE:
            if not step.enabled(options):
                continue
            if _wants(options.print_before, step):
                c.instrumentation.append(_dump(c, step, "Before"))
            start = time.perf_counter()
            try:
                step.run(c)
            finally:
                timings.append((step.name, time.perf_counter() - start))
            if options.verify_ir and step.name in IR_PASSES and c.program is not None:
                from hardboiled.ir.invariants import check_program

                # After parse, a broken invariant is the input's fault.
                check_program(c.program, after=step.name, blame_input=step.name == "parse")
            if _wants(options.print_after, step):
                c.instrumentation.append(_dump(c, step, "After"))
    finally:
        if options.timing:
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
