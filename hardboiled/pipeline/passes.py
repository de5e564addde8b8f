"""The compile pipeline as a list of named passes.

One input flows through ``PIPELINE`` in order; each ``Pass`` reads and
updates a ``Compilation`` (pipeline/compilation.py). The IR passes (parse,
select, the legalization passes of hardboiled/legalize/passes.py) rewrite
``Compilation.program``; the later ones verify it, generate code and build
or run it.

Each pass names the option groups it reads (pipeline/options.py) and is
given those and no others; ``Pass.applies`` is the one place that decides,
from those groups and what earlier passes produced, whether it runs. The
driver (pipeline/runner.py) adds the instrumentation: ``--print-before``,
``--print-after``, ``--timing`` and ``--verify-ir``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hardboiled import ir
from hardboiled.legalize.passes import PASSES, StmtPass, legalize
from hardboiled.pipeline.compilation import Compilation, KernelInterface, bodies, single, with_bodies
from hardboiled.pipeline.options import CUDA_BUILD_SUFFIXES, CompileOptions
from hardboiled.select.options import RewriteCheck
from hardboiled.select.selector import SelectionMiss, select_instructions
from hardboiled.support.diagnostics import Diagnostic, HardboiledError
from hardboiled.targets.wmma import WMMA_TENSOR_CORE


class Granted:
    """The option groups one pass may read: any other is an AttributeError,
    so that a pass cannot come to depend on options it does not declare."""

    __slots__ = ("_options", "_groups")

    def __init__(self, options: CompileOptions, groups: tuple[str, ...]):
        self._options = options
        self._groups = groups

    def __getattr__(self, name: str) -> Any:
        if name in self._groups:
            return getattr(self._options, name)
        raise AttributeError(f"this pass reads the option groups {', '.join(self._groups) or '(none)'}, not {name!r}")


@dataclass(frozen=True, slots=True)
class Pass:
    name: str
    summary: str
    run: Callable[[Compilation, Any], None]
    """Runs the pass: the compilation, and its option groups (``Granted``)."""
    groups: tuple[str, ...] = ()
    """The option groups (CompileOptions fields) the pass reads."""
    applies: Callable[[Any, Compilation], bool] = lambda _options, _c: True
    """Whether the pass runs, from its option groups and the compilation
    so far."""
    shows_code: str | None = None
    """For a code generator: which generated source --print-after shows."""

    def granted(self, options: CompileOptions) -> Granted:
        return Granted(options, self.groups)


# --------------------------------------------------------------------------
# Reading and selecting
# --------------------------------------------------------------------------


def _parse(c: Compilation, o: Any) -> None:
    from hardboiled.frontend.parse import parse_input
    from hardboiled.frontend.stages import decode_input

    c.text = decode_input(c.data, c.name)
    parsed = parse_input(c.text, c.name, stage=o.input.stage, buffer_types=o.input.buffer_types)
    c.program = c.original = parsed.ir
    c.stage = parsed.stage
    c.store_lines = parsed.store_lines
    if o.codegen.args is not None and isinstance(parsed.ir, ir.Stmt):
        from hardboiled.codegen.abi import kernel_signature

        # Before selection and verification spend their time: selection
        # keeps the pipeline's buffers and params, so --args is checked now.
        kernel_signature(parsed.ir, o.codegen.args)


def _emit_egg(c: Compilation, o: Any) -> None:
    from hardboiled.select.extract import (
        ScopeGroup,
        accelerator_allocations,
        accelerators_used,
        encode_stores,
        scope_groups,
        select_stores,
    )
    from hardboiled.select.facts import sliding_windows
    from hardboiled.select.rules import STATEMENTS_PER_SCOPE, load_schedule, program_text
    from hardboiled.select.unflatten import unflatten_stores

    assert c.program is not None
    options = o.selection
    terms: list[str] = []
    groups: list[ScopeGroup] = []
    windows: list[tuple[int, int, int]] = []
    accelerators: frozenset[str] = frozenset()
    for body in bodies(c.program):
        allocations = accelerator_allocations(body, options.store_in)
        body = unflatten_stores(body, allocations)
        selected = [s for s in select_stores(body, allocations, options.store_in) if s.store.predicate is None]
        groups.extend(group.shifted(len(terms)) for group in scope_groups(selected, STATEMENTS_PER_SCOPE))
        encoding = encode_stores(selected, allocations, options.store_in)
        terms.extend(encoding.terms)
        accelerators |= accelerators_used(selected, encoding)
        windows.extend(sliding_windows(s.store for s in selected))
    # One program for every body: its window shape is the choice over all of
    # them, and its accelerators all of theirs (selection runs each body
    # alone, so with several bodies whose windows or accelerators differ
    # each may get its own).
    c.outputs["egg"] = program_text(terms, load_schedule(options.schedule_path, options.iterations),
                                    WMMA_TENSOR_CORE.best_window_shape(windows), groups, accelerators)


def _rewrite_checker_loading() -> RewriteCheck:
    """verify/rewrite_check.py's check, its module (and numpy, a tenth of a
    second) loading on a thread meanwhile: selection spends that long
    waiting for the egglog child, with the GIL released. A failed import is
    raised where the check is first called, as a plain import's would be."""

    def load() -> None:
        with contextlib.suppress(BaseException):  # raised again by the import below, in this thread
            importlib.import_module("hardboiled.verify.rewrite_check")

    loading = threading.Thread(target=load, name="hardboiled-load-verify", daemon=True)
    try:
        loading.start()
    except RuntimeError:  # no memory for a thread (a tight ulimit -v): loaded when first called
        load()

    def check(*args: Any, **kwargs: Any) -> str | None:
        if loading.ident is not None:
            loading.join()
        from hardboiled.verify.rewrite_check import check_rewrite

        return check_rewrite(*args, **kwargs)

    return check


def _select(c: Compilation, o: Any) -> None:
    from hardboiled.select.candidates import NothingMarked, compiled_gpu_kernels, gpu_kernels_compiled
    from hardboiled.select.extract import iter_stores

    assert c.program is not None
    options = o.selection
    if options.rewrite_check is None:
        # Every rewrite is checked against its store before it is emitted.
        options = dataclasses.replace(options, rewrite_check=_rewrite_checker_loading())
    kernels = compiled_gpu_kernels(c.program)
    if _already_lowered(c):
        return
    if kernels and (options.store_in or options.require):
        report(c)
        raise NothingMarked([gpu_kernels_compiled(kernels, c.name, c.text, "error")])
    new_bodies, first_store = [], 0
    for body in bodies(c.program):
        try:
            selection = select_instructions(body, options, filename=c.name, source=c.text,
                                            store_lines=c.store_lines[first_store:])
        except SelectionMiss as miss:
            # The report of a failed input still lists every statement.
            if miss.selection is not None:
                c.selections.append(miss.selection)
            report(c)
            raise
        c.diagnostics.extend(selection.warnings)
        c.selections.append(selection)
        new_bodies.append(selection.stmt)
        if not selection.reports:
            from hardboiled.select.candidates import find_candidates

            c.candidates.extend(find_candidates(body, c.store_lines[first_store:]))
        first_store += sum(1 for _ in iter_stores(body))
    c.program = with_bodies(c.program, new_bodies)
    if not any(s.reports for s in c.selections):
        _nothing_selected(c, options.require, kernels)


def _nothing_selected(c: Compilation, require: bool, compiled_kernels: list[str]) -> None:
    """Nothing to select. An input that calls tile operations already
    (Halide's own AMX stage) is tensorized; otherwise say which Funcs could
    have been, and how to mark them: with --require, a miss."""
    from hardboiled.select.candidates import (
        candidate_diagnostics,
        gpu_kernels_compiled,
        nothing_marked,
        tile_operations,
    )

    assert c.program is not None
    c.already_lowered = sum(tile_operations(body) for body in bodies(c.program))
    if c.already_lowered:
        return
    if compiled_kernels:
        c.diagnostics.append(gpu_kernels_compiled(compiled_kernels, c.name, c.text, "warning"))
        return
    if require:
        report(c)
        raise nothing_marked(c.candidates, c.name, c.text)
    c.diagnostics.extend(candidate_diagnostics(c.candidates, c.name, c.text, "warning"))


def _already_lowered(c: Compilation) -> bool:
    """A program that already calls tile or fragment operations (hardboiled's
    own output, Halide's AMX stage) is not selected again: it is left as it
    is, and the report says what it calls."""
    from hardboiled.select.candidates import tile_operations
    from hardboiled.select.selector import SelectionResult

    assert c.program is not None
    c.already_lowered = sum(tile_operations(body) for body in bodies(c.program))
    if c.already_lowered:
        c.selections.extend(SelectionResult(body, (), None, None, 0.0) for body in bodies(c.program))
    return bool(c.already_lowered)


def _legalization_pass(step: StmtPass) -> Callable[[Compilation, Any], None]:
    def run(c: Compilation, _options: Any) -> None:
        assert c.program is not None
        new_bodies = [legalize(body, selection, (step,)) for body, selection in zip(bodies(c.program), c.selections)]
        c.program = with_bodies(c.program, new_bodies)

    return run


def report(c: Compilation, _options: Any = None) -> None:
    from hardboiled.pipeline.report import selection_report

    c.report = selection_report(c.name, c.stage, c.selections, c.candidates, c.already_lowered)


# --------------------------------------------------------------------------
# Verification
# --------------------------------------------------------------------------


def _interpreter_timeout(timeout_s: float | None) -> float:
    from hardboiled.verify.interp import INTERPRETER_TIMEOUT_S

    return timeout_s or INTERPRETER_TIMEOUT_S


def _verify(c: Compilation, o: Any) -> None:
    from hardboiled.pipeline.report import verification_json
    from hardboiled.verify.compare import VerificationMismatch, checked, verify

    options = o.verification
    check = verify(single(c.original, "verification"), single(c.program, "verification"),
                   seed=options.seed, params=options.params, timeout_s=_interpreter_timeout(options.timeout_s),
                   inputs=options.inputs)
    c.report["verification"] = verification_json(check)
    try:
        c.messages.append(checked(check, options.accept_unproven))
    except VerificationMismatch as mismatch:
        culprit = _first_breaking_pass(c, options)
        if culprit is not None:
            mismatch.diagnostic = dataclasses.replace(mismatch.diagnostic, notes=(
                *mismatch.diagnostic.notes, f"the first pass whose output computes something else: {culprit} "
                f"(--print-after {culprit} shows it)"))
        raise


def _first_breaking_pass(c: Compilation, options: Any) -> str | None:
    """The first pass after which the program no longer verifies, on the
    mismatch's seed (before staging, fragments need not be aligned yet)."""
    from hardboiled.verify.compare import verify
    from hardboiled.verify.interp import InterpreterError, ResourceLimitError, fragment_alignment_unchecked

    aligned = False
    for name, program in c.after_passes:
        aligned = aligned or name == "stage-wmma-operands"
        try:
            with contextlib.nullcontext() if aligned else fragment_alignment_unchecked():
                result = verify(single(c.original, "verification"), single(program, "verification"),
                                seed=options.seed, params=options.params, inputs=options.inputs,
                                timeout_s=_interpreter_timeout(options.timeout_s))
        except ResourceLimitError:
            return None  # out of time: no pass is to blame for that
        except (InterpreterError, HardboiledError):
            return name
        if not result.ok:
            return name
    return None


# --------------------------------------------------------------------------
# Code generation, building and running
# --------------------------------------------------------------------------


def _is_gpu_program(c: Compilation) -> bool:
    """Whether the program (a lowered module's only function) has GPU
    loops; a module of several functions is neither kind, and code
    generation refuses it."""
    program = c.program
    if isinstance(program, ir.Module) and len(program.functions) == 1:
        program = program.functions[0].body
    return isinstance(program, ir.Stmt) and ir.has_gpu_loops(program)


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


def _kernel_interface(c: Compilation, program: ir.Stmt, codegen: Any) -> KernelInterface:
    """The generated function's name (--name, else the input's) and its
    parameters in Halide's order: --args, else a lowered module's
    signature, else inputs then outputs by name."""
    from hardboiled.codegen.abi import kernel_signature
    from hardboiled.codegen.naming import entry_point_name

    order = codegen.args
    if order is None and isinstance(c.program, ir.Module) and len(c.program.functions) == 1:
        order = c.program.functions[0].args
    arguments = kernel_signature(program, order)
    params = [f"{a.buffer} ({a.type})" for a in arguments if a.scalar]
    if params and not any(f"scalar params {', '.join(params)}" in m for m in c.messages):
        # A Param is a name no loop or let defines: say which names were
        # taken as Params, so that a misspelt one is seen.
        c.messages.append(f"scalar params {', '.join(params)}: names the IR reads but never defines, "
                          "arguments of the generated functions")
    return KernelInterface(codegen.name or entry_point_name(c.name), arguments, order)


def _emit_cuda(c: Compilation, o: Any) -> None:
    from hardboiled.codegen.cuda import generate_cuda_code

    program = single(c.program, "CUDA generation")
    c.kernel = _kernel_interface(c, program, o.codegen)
    code = generate_cuda_code(_checked_for(program, "cuda"), c.kernel.name, c.kernel.arguments)
    c.cuda_source, c.header = code.source, code.header


def _emit_c(c: Compilation, o: Any) -> None:
    from hardboiled.codegen.c import generate_c_code

    program = single(c.program, "C generation")
    c.kernel = _kernel_interface(c, program, o.codegen)
    code = generate_c_code(_checked_for(program, "c"), c.kernel.name, c.kernel.arguments)
    c.c_source, c.header = code.source, code.header


def _build_cuda(c: Compilation, o: Any) -> None:
    from hardboiled.codegen.cuda import GENERATED_CUDA_FLAGS, required_sm
    from hardboiled.codegen.toolchain import compile_cuda

    build = o.build
    assert build.path is not None and c.cuda_source is not None
    needed, types = required_sm(single(c.program, "CUDA generation"))
    if build.cuda_arch < needed:
        raise HardboiledError(Diagnostic(
            "error", f"--cuda-arch sm_{build.cuda_arch}: these Tensor Core operations need sm_{needed} or newer",
            notes=(f"{', '.join(map(str, types))} fragments need sm_{needed}: build with --cuda-arch {needed}, "
                   "or cast the operands to a type the older architecture multiplies (float16, int8)",),
        ))
    suffix = Path(build.path).suffix
    kind = CUDA_BUILD_SUFFIXES.get(suffix) or ("so" if suffix == ".so" else "o")
    compile_cuda(c.cuda_source, Path(build.path), kind=kind, sm=build.cuda_arch,
                 extra=GENERATED_CUDA_FLAGS + build.include_flags,
                 warn=lambda message: c.diagnostics.append(Diagnostic("warning", message)))
    c.messages.append(f"built {build.path} with nvcc (sm_{build.cuda_arch}, {kind})")


def _run_c(c: Compilation, o: Any) -> None:
    from hardboiled.pipeline.report import verification_json
    from hardboiled.verify.compare import checked
    from hardboiled.verify.run import run_generated_c

    verification, build = o.verification, o.build
    assert c.c_source is not None and c.kernel is not None
    check, compiler, mode = run_generated_c(single(c.original, "running"), single(c.program, "running"),
                                            c.c_source, cc=build.cc, amx=build.amx, seed=verification.seed,
                                            params=verification.params, function=c.kernel.name,
                                            order=c.kernel.order, extra=build.include_flags,
                                            timeout_s=_interpreter_timeout(verification.timeout_s),
                                            inputs=verification.inputs)
    c.report["run"] = dict(verification_json(check), compiler=compiler, amx=mode)
    c.messages.append(f"ran the generated C ({compiler}, AMX {mode}): {checked(check, verification.accept_unproven)}")


def _build_c(c: Compilation, o: Any) -> None:
    from hardboiled.codegen.toolchain import compile_c, find_compiler

    build = o.build
    assert build.path is not None and c.c_source is not None
    compiler = compile_c(c.c_source, Path(build.path), shared=build.path.endswith(".so"),
                         amx=build.amx, compiler=find_compiler(build.cc), extra=build.include_flags)
    c.messages.append(f"built {build.path} with {compiler.name}")


def report_html(c: Compilation) -> str:
    """The visual report of the compile so far (a failed one's too)."""
    from hardboiled.pipeline.html_report import render_html

    assert c.program is not None
    stores = [store for selection in c.selections for store in selection.reports]
    return render_html(c.report, c.text, stores, c.program)


def _emit_html(c: Compilation, _options: Any) -> None:
    c.outputs["html"] = report_html(c)


PIPELINE: tuple[Pass, ...] = (
    Pass("parse", "Halide IR text to IR (one stage of a debug log)", _parse, ("input", "codegen")),
    Pass("emit-egg", "the egglog program selection runs (--emit egg)", _emit_egg, ("selection", "output"),
         lambda o, c: "egg" in o.output.emit),
    Pass("select", "tile extraction, equality saturation, decoding and reinsertion", _select, ("selection",)),
    # A program that already calls tile or fragment operations (hardboiled's
    # own output, Halide's AMX stage) was legalized already: once is all.
    *(Pass(step.name, step.summary, _legalization_pass(step), (), lambda _o, c: not c.already_lowered)
      for step in PASSES),
    Pass("report", "the selection report", report),
    Pass("verify", "run the original and the rewritten IR in the interpreter and compare", _verify,
         ("verification",), lambda o, c: o.verification.verify),
    Pass("emit-cuda", "CUDA with nvcuda::wmma kernels", _emit_cuda, ("codegen",),
         lambda o, c: o.codegen.generates("cuda", _is_gpu_program(c)), shows_code="cuda"),
    Pass("build-cuda", "compile the CUDA with nvcc", _build_cuda, ("build",),
         lambda o, c: bool(o.build.path) and c.cuda_source is not None),
    Pass("emit-c", "C with AMX intrinsics", _emit_c, ("codegen",),
         lambda o, c: o.codegen.generates("c", _is_gpu_program(c)), shows_code="c"),
    Pass("run-c", "build the C, run it and compare with the interpreter", _run_c, ("verification", "build"),
         lambda o, c: o.verification.run),
    Pass("build-c", "compile the C to an object or shared library", _build_c, ("build",),
         lambda o, c: o.build.object and c.c_source is not None),
    Pass("emit-html", "the visual report (--emit html)", _emit_html, ("output",),
         lambda o, c: "html" in o.output.emit),
)

PASS_NAMES = tuple(p.name for p in PIPELINE)
IR_PASSES = frozenset({"parse", "select", *(step.name for step in PASSES)})
"""The passes that change the IR: --verify-ir checks after each of them."""
