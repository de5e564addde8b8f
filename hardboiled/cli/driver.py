"""The ``compile`` pipeline for one input, and for a batch of them.

``compile_text`` runs parse -> selection -> (verification) -> code
generation -> (build/run) for one input held in memory and returns what
it produced: output texts by kind, a JSON-ready report, diagnostics and an
exit code. It never raises for the user's errors, so a batch can run inputs
in worker processes (``-j``) and still report them in input order.
"""

from __future__ import annotations

import dataclasses
import traceback
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from hardboiled import __version__, ir
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError
from hardboiled.targets.amx import AMXIntrinsic, AMXOp
from hardboiled.targets.wmma import WMMA_TENSOR_CORE, WMMAIntrinsic, WMMAOp
from hardboiled.select.selector import SelectionOptions, SelectionResult, StoreReport, select

REPORT_SCHEMA_VERSION = 1

EMIT_SUFFIXES = {"ir": ".stmt", "c": ".c", "cuda": ".cu", "egg": ".egg", "report": ".report.json"}


@dataclass(frozen=True)
class CompileOptions:
    stage: str | None = None
    buffer_types: dict[str, ir.Type] = field(default_factory=dict)
    selection: SelectionOptions = field(default_factory=SelectionOptions)
    emit: tuple[str, ...] = ("ir",)
    verify: bool = False
    run: bool = False
    seed: int = 0
    params: dict[str, int] = field(default_factory=dict)
    cc: str | None = None
    amx: str = "auto"
    build_path: str | None = None
    cuda_arch: int = WMMA_TENSOR_CORE.default_sm


CUDA_BUILD_SUFFIXES = {".ptx": "ptx", ".cubin": "cubin"}
"""--build FILE with these suffixes compiles the generated CUDA with nvcc."""
GENERATED_CUDA_FLAGS = ("-diag-suppress=177",)
"""The shared prelude defines helpers that a kernel may not use."""


@dataclass
class FileResult:
    input: str
    outputs: dict[str, str] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    """Lines for the human summary (verification, build)."""
    exit_code: int = int(ExitCode.SUCCESS)


def compile_text(name: str, data: bytes | None, options: CompileOptions, read_error: Diagnostic | None = None) -> FileResult:
    result = FileResult(name)
    if read_error is not None:
        result.diagnostics.append(read_error)
        result.exit_code = int(ExitCode.INPUT_ERROR)
        return result
    cache, key = _file_cache(name, data or b"", options)
    if cache is not None and (entry := cache.get(key)) is not None:
        return _from_cache(name, entry)
    try:
        _compile(name, data or b"", options, result)
        if cache is not None:
            cache.put(key, _to_cache(result))
    except HardboiledError as exc:
        result.diagnostics.extend(getattr(exc, "diagnostics", [exc.diagnostic]))
        result.exit_code = int(exc.exit_code)
        result.outputs.clear()
    except Exception as exc:  # noqa: BLE001 - reported as an internal error, never a traceback
        result.diagnostics.append(Diagnostic(
            "error", f"internal error: {type(exc).__name__}: {exc}",
            notes=("this is a bug in hardboiled; set HARDBOILED_TRACEBACK=1 for details",),
        ))
        if __import__("os").environ.get("HARDBOILED_TRACEBACK") == "1":
            traceback.print_exc()
        result.exit_code = int(ExitCode.INTERNAL_ERROR)
        result.outputs.clear()
    return result


def _file_cache(name: str, data: bytes, options: CompileOptions) -> tuple[Any, str]:
    """The whole-file cache: a warm rebuild skips parsing too. Runs that
    execute code (--verify, --run, --build) are never served from it."""
    if options.selection.cache_dir is None or options.verify or options.run or options.build_path:
        return None, ""
    import hashlib

    from hardboiled.support.cache import ResultCache, cache_key
    from hardboiled.select.rules import RULE_FILES, load_schedule, rule_text
    from hardboiled.select.facts import amx_facts

    try:
        schedule = load_schedule(options.selection.schedule_path, options.selection.iterations).text
    except HardboiledError:
        return None, ""
    settings = repr((name, options.stage, sorted((k, str(v)) for k, v in options.buffer_types.items()),
                     sorted(options.selection.store_in.items()), options.selection.allow_fallback,
                     options.emit, options.selection.timeout_s, options.selection.memory_mb))
    texts = ["file", settings, hashlib.sha256(data).hexdigest(), schedule, amx_facts()]
    texts += [rule_text(f) for f in RULE_FILES]
    return ResultCache(Path(options.selection.cache_dir)), cache_key(texts, [])


def _to_cache(result: FileResult) -> dict[str, Any]:
    return {
        "outputs": result.outputs,
        "report": result.report,
        "messages": result.messages,
        "diagnostics": [d.to_json() for d in result.diagnostics],
        "exit_code": result.exit_code,
    }


def _from_cache(name: str, entry: dict[str, Any]) -> FileResult:
    from hardboiled.support.diagnostics import Location

    diagnostics = []
    for d in entry["diagnostics"]:
        location = Location(d["file"], d["line"], d["column"], d.get("source_line")) if d["file"] else None
        diagnostics.append(Diagnostic(d["severity"], d["message"], location, tuple(d["notes"])))
    report = entry["report"]
    for statement in report.get("statements", []):
        statement["cached"] = True
    return FileResult(name, entry["outputs"], report, diagnostics, entry["messages"], entry["exit_code"])


def _compile(name: str, data: bytes, options: CompileOptions, result: FileResult) -> None:
    from hardboiled.frontend.parse import decode_input, parse_input
    from hardboiled.ir.printer import print_ir

    text = decode_input(data, name)
    parsed = parse_input(text, name, stage=options.stage, buffer_types=options.buffer_types)
    if "egg" in options.emit:
        result.outputs["egg"] = _egglog_program(parsed.ir, options.selection)
    selections: list[SelectionResult] = []

    def run(stmt: ir.Stmt, first_store: int) -> ir.Stmt:
        selection = select(stmt, options.selection, filename=name, source=text,
                           store_lines=parsed.store_lines[first_store:])
        result.diagnostics.extend(selection.warnings)
        selections.append(selection)
        return selection.stmt

    if isinstance(parsed.ir, ir.Module):
        from hardboiled.select.extract import iter_stores

        functions, offset = [], 0
        for func in parsed.ir.functions:
            functions.append(dataclasses.replace(func, body=run(func.body, offset)))
            offset += sum(1 for _ in iter_stores(func.body))
        rewritten: ir.Stmt | ir.Module = dataclasses.replace(parsed.ir, functions=tuple(functions))
    else:
        rewritten = run(parsed.ir, 0)
    result.report = _report(name, parsed.stage, selections)
    if options.verify:
        from hardboiled.verify.compare import mismatch_error, verify

        original, changed = _single(parsed.ir, "verification"), _single(rewritten, "verification")
        check = verify(original, changed, seed=options.seed, params=options.params)
        result.report["verification"] = _verification_json(check)
        if not check.ok:
            raise mismatch_error(check)
        result.messages.append(check.summary())
    cuda_build = options.build_path is not None and Path(options.build_path).suffix in CUDA_BUILD_SUFFIXES
    cuda_source = None
    if "cuda" in options.emit or cuda_build:
        from hardboiled.codegen.cuda import generate_cuda, required_sm

        gpu_program = _checked_for(_single(rewritten, "CUDA generation"), "cuda")
        cuda_source = generate_cuda(gpu_program)
    if cuda_build:
        from hardboiled.codegen.toolchain import compile_cuda

        assert cuda_source is not None and options.build_path is not None
        needed = required_sm(gpu_program)
        if options.cuda_arch < needed:
            raise HardboiledError(Diagnostic(
                "error", f"--cuda-arch sm_{options.cuda_arch}: these Tensor Core operations need sm_{needed} or newer",
                notes=("bfloat16 fragments need sm_80",),
            ))
        kind = CUDA_BUILD_SUFFIXES[Path(options.build_path).suffix]
        compile_cuda(cuda_source, Path(options.build_path), kind=kind, sm=options.cuda_arch,
                     extra=GENERATED_CUDA_FLAGS)
        result.messages.append(f"built {options.build_path} with nvcc (sm_{options.cuda_arch}, {kind})")
    source = None
    if "c" in options.emit or (options.build_path and not cuda_build) or options.run:
        from hardboiled.codegen.c import generate_c

        source = generate_c(_checked_for(_single(rewritten, "C generation"), "c"))
    if options.run:
        from hardboiled.verify.compare import mismatch_error
        from hardboiled.verify.run import run_generated_c

        assert source is not None
        check, compiler, mode = run_generated_c(_single(parsed.ir, "running"), _single(rewritten, "running"), source,
                                                cc=options.cc, amx=options.amx, seed=options.seed,
                                                params=options.params)
        result.report["run"] = dict(_verification_json(check), compiler=compiler, amx=mode)
        if not check.ok:
            raise mismatch_error(check)
        result.messages.append(f"ran the generated C ({compiler}, AMX {mode}): {check.summary()}")
    if options.build_path and not cuda_build:
        from hardboiled.codegen.toolchain import compile_c, find_compiler

        assert source is not None
        compiler = compile_c(source, Path(options.build_path), shared=options.build_path.endswith(".so"),
                             amx=options.amx, compiler=find_compiler(options.cc))
        result.messages.append(f"built {options.build_path} with {compiler.name}")
    if "ir" in options.emit:
        result.outputs["ir"] = print_ir(rewritten)
    if source is not None and "c" in options.emit:
        result.outputs["c"] = source
    if cuda_source is not None and "cuda" in options.emit:
        result.outputs["cuda"] = cuda_source
    if "report" in options.emit:
        import json

        result.outputs["report"] = json.dumps(result.report, indent=2, sort_keys=True) + "\n"


def _checked_for(stmt: ir.Stmt, language: str) -> ir.Stmt:
    """C runs on the CPU (AMX), CUDA on the GPU (Tensor Cores): say so
    plainly when a program is sent to the other one."""
    gpu = any(isinstance(n, ir.For) and n.kind in (ir.ForKind.GPU_BLOCK, ir.ForKind.GPU_THREAD, ir.ForKind.GPU_LANE)
              for n in ir.walk(stmt))
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


def _single(program: ir.Stmt | ir.Module, what: str) -> ir.Stmt:
    if isinstance(program, ir.Module):
        raise HardboiledError(Diagnostic(
            "error", f"{what} takes a single statement; use a debug log or a stmt file, not a module",
        ))
    return program


def _egglog_program(program: ir.Stmt | ir.Module, options: SelectionOptions) -> str:
    from hardboiled.select.rules import load_schedule, program_text
    from hardboiled.select.extract import accelerator_allocations, encode_stores, select_stores

    bodies = [f.body for f in program.functions] if isinstance(program, ir.Module) else [program]
    terms: list[str] = []
    for body in bodies:
        allocations = accelerator_allocations(body, options.store_in)
        selected = [s for s in select_stores(body, allocations, options.store_in) if s.store.predicate is None]
        terms.extend(encode_stores(selected, allocations, options.store_in).terms)
    return program_text(terms, load_schedule(options.schedule_path, options.iterations))


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------


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
    ops = {intrinsic.op for name in names if (intrinsic := AMXIntrinsic.parse(name)) is not None}
    if AMXOp.MATMUL in ops:
        return "tile product C + A*B"
    if AMXOp.ZERO in ops:
        return "zeroed accumulator tile"
    if AMXOp.STORE in ops:
        return "accumulator tile stored to memory"
    if AMXOp.LOAD in ops:
        return "operand tile preloaded into an AMX buffer"
    return "tile operation"


def _report(name: str, stage: str | None, selections: list[SelectionResult]) -> dict[str, Any]:
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


def _verification_json(check: Any) -> dict[str, Any]:
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


# --------------------------------------------------------------------------
# Batches
# --------------------------------------------------------------------------


def _job(args: tuple[str, bytes | None, CompileOptions, Diagnostic | None]) -> FileResult:
    return compile_text(*args)


def compile_batch(inputs: list[tuple[str, bytes | None, Diagnostic | None]], options: CompileOptions, jobs: int,
                  progress: Callable[[FileResult], None] | None = None) -> list[FileResult]:
    """Compile every input; results come back in input order whatever -j is."""
    work = [(name, data, options, error) for name, data, error in inputs]
    if jobs <= 1 or len(work) <= 1:
        results = []
        for item in work:
            results.append(_job(item))
            if progress:
                progress(results[-1])
        return results
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        results = []
        for result in pool.map(_job, work):
            results.append(result)
            if progress:
                progress(result)
        return results


def output_names(inputs: list[str]) -> list[str]:
    """A distinct file stem per input: the file name, made unique with its
    directory (fixtures are all called vectorizing.stmt) or an index."""
    stems = []
    for name in inputs:
        if name == "<stdin>":
            stems.append("stdin")
            continue
        path = Path(name)
        stems.append(path.name[: -len("".join(path.suffixes))] if path.suffixes else path.name)
    repeated = {stem for stem in stems if stems.count(stem) > 1}
    for i, stem in enumerate(stems):
        if stem in repeated and inputs[i] != "<stdin>":
            stems[i] = f"{Path(inputs[i]).parent.name}_{stem}"
    seen: dict[str, int] = {}
    unique = []
    for stem in stems:
        n = seen.get(stem, 0)
        seen[stem] = n + 1
        unique.append(stem if n == 0 else f"{stem}_{n}")
    return unique
