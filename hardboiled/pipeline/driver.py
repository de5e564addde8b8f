"""Compiling one input, and a batch of them.

``compile_text`` runs the pass pipeline (pipeline/passes.py) on one
input held in memory and returns what it produced: output texts by kind, a
JSON-ready report, diagnostics and an exit code. It never raises for the
user's errors, so a batch can run inputs in worker processes (``-j``) and
still report them in input order.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hardboiled.pipeline.options import HEADER, CompileOptions
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError, Location, internal_error

if TYPE_CHECKING:  # the passes load only when the cache cannot answer
    from hardboiled.pipeline.compilation import Compilation


@dataclass
class FileResult:
    input: str
    outputs: dict[str, str] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    """Lines for the human summary (verification, build)."""
    exit_code: int = int(ExitCode.SUCCESS)
    instrumentation: list[str] = field(default_factory=list)
    """--print-before/--print-after dumps and --timing reports, for standard error."""
    cached: bool = False
    """Answered by the whole-file cache."""


def compile_text(name: str, data: bytes | None, options: CompileOptions,
                 read_error: Diagnostic | None = None) -> FileResult:
    """One input through the pipeline (or the cache). Every result carries
    the input's finished report, a failed one included."""
    start = time.perf_counter()
    cache, key = (None, "") if read_error is not None else _file_cache(name, data or b"", options)
    if cache is not None and (entry := cache.get(key, _ENTRY_SHAPE)) is not None:
        return _from_cache(name, entry)
    result = _compile(name, data, options, read_error)
    from hardboiled.pipeline.report import finish_report

    result.report = finish_report(result.report, name, result.exit_code, result.diagnostics,
                                  time.perf_counter() - start)
    if "report" in options.output.emit and not result.exit_code:
        result.outputs["report"] = json.dumps(result.report, indent=2, sort_keys=True) + "\n"
    if cache is not None and not result.exit_code:  # a failure is computed again, never replayed
        cache.put(key, _to_cache(result))
    return result


def _compile(name: str, data: bytes | None, options: CompileOptions, read_error: Diagnostic | None) -> FileResult:
    result = FileResult(name)
    if read_error is not None:
        result.diagnostics.append(read_error)
        result.exit_code = int(ExitCode.INPUT_ERROR)
        return result
    if _will_saturate(data or b"", options):
        # The egglog child starts on the rule files now, while this process
        # loads the pipeline, parses and extracts (select/eqsat.py).
        from hardboiled.select.rule_files import prestart_rules

        prestart_rules(options.selection.memory_mb)
    from hardboiled.pipeline.compilation import Compilation
    from hardboiled.pipeline.runner import run_pipeline
    from hardboiled.select.eqsat import discard_unused
    from hardboiled.support.deep import call_deep

    compilation = Compilation(name, data or b"")
    try:
        call_deep(run_pipeline, compilation, options)
        _take_state(compilation, result)
        _collect_outputs(compilation, options.output.emit, result)
    except HardboiledError as exc:
        result = FileResult(name)
        _take_state(compilation, result)
        result.diagnostics.extend(getattr(exc, "diagnostics", [exc.diagnostic]))
        result.exit_code = int(exc.exit_code)
        _failure_report(compilation, options.output.emit, result)
        return result
    except Exception as exc:  # an internal error (or the machine's fault), reported without a traceback
        from hardboiled.support.environment import environment_fault

        result = FileResult(name)
        _take_state(compilation, result)
        if os.environ.get("HARDBOILED_TRACEBACK") == "1":
            traceback.print_exc()
        fault = environment_fault(exc)
        result.diagnostics.append(fault.diagnostic if fault is not None else internal_error(exc))
        result.exit_code = int(fault.exit_code if fault is not None else ExitCode.INTERNAL_ERROR)
        return result
    finally:
        discard_unused()
    return result


ACCELERATOR_MEMORY = (b"AMXTile", b"WMMAAccumulator")
"""What an input that will need equality saturation names (or --store-in does)."""


def _will_saturate(data: bytes, options: CompileOptions) -> bool:
    """Whether this input is likely to need equality saturation: it names
    accelerator memory, or --store-in does (a wrong guess costs a child
    process started for nothing, or one started later)."""
    return bool(options.selection.store_in) or any(memory in data for memory in ACCELERATOR_MEMORY)


def _take_state(c: Compilation, result: FileResult) -> None:
    """What a compile produced besides its outputs, kept when it fails
    too: warnings, the report so far, summary lines and instrumentation."""
    result.diagnostics.extend(c.diagnostics)
    result.report = c.report
    result.messages = c.messages
    result.instrumentation = c.instrumentation


def _failure_report(c: Compilation, emit: tuple[str, ...], result: FileResult) -> None:
    """A failed input writes nothing but its HTML report, when asked for:
    the page that explains a miss is most wanted when there is one."""
    if "html" not in emit or c.program is None or not c.report:
        return
    from hardboiled.pipeline.passes import report_html

    result.outputs["html"] = report_html(c)


def _collect_outputs(c: Compilation, emit: tuple[str, ...], result: FileResult) -> None:
    for kind in ("egg", "html"):
        if kind in emit:
            result.outputs[kind] = c.outputs[kind]
    if "ir" in emit:
        from hardboiled.ir.printer import print_ir

        assert c.program is not None
        result.outputs["ir"] = print_ir(c.program)
    if c.c_source is not None and "c" in emit:
        result.outputs["c"] = c.c_source
    if c.cuda_source is not None and "cuda" in emit:
        result.outputs["cuda"] = c.cuda_source
    if c.header is not None and ("c" in emit or "cuda" in emit):
        result.outputs[HEADER] = c.header


def _file_cache(name: str, data: bytes, options: CompileOptions) -> tuple[Any, str]:
    """The whole-file cache: a warm rebuild skips parsing too, and loads
    neither the parser nor the selector. The key is taken from the raw
    input bytes, the options, the schedule file's bytes and hardboiled's
    code (support/cache.py). Runs that execute code (--verify, --run,
    --build) are never served from it."""
    if (options.selection.cache_dir is None or options.verification.executes or options.build.path
            or options.instrumentation.active):
        return None, ""
    from hardboiled.support.cache import ResultCache, cache_key
    from hardboiled.support.digest import hex_content_digest, hex_digest

    schedule = ""
    if options.selection.schedule_path is not None:
        try:
            schedule = hex_digest(Path(options.selection.schedule_path).read_bytes())
        except OSError:
            return None, ""  # the pipeline reports it
    selection = options.selection
    settings = repr((name, options.input.stage, sorted((k, str(v)) for k, v in options.input.buffer_types.items()),
                     sorted(selection.store_in.items()), selection.allow_fallback, selection.verbose,
                     selection.iterations, options.output.emit, sorted(options.codegen.required),
                     options.codegen.wanted, selection.timeout_s, selection.memory_mb, options.codegen.name,
                     options.codegen.args, selection.require))
    texts = ["file", settings, hex_content_digest(data), schedule]
    return ResultCache(Path(options.selection.cache_dir)), cache_key(texts, [])


_DIAGNOSTIC_SHAPE = {"severity": str, "message": str, "file": (str, None), "line": (int, None),
                     "column": (int, None), "source_line": (str, None), "notes": [str]}
_ENTRY_SHAPE = {"outputs": {"*": str}, "report": dict, "messages": [str], "diagnostics": [_DIAGNOSTIC_SHAPE],
                "exit_code": int}
"""What a whole-file cache entry must look like to be served."""


def _to_cache(result: FileResult) -> dict[str, Any]:
    return {
        "outputs": result.outputs,
        "report": result.report,
        "messages": result.messages,
        "diagnostics": [d.to_json() for d in result.diagnostics],
        "exit_code": result.exit_code,
    }


def _from_cache(name: str, entry: dict[str, Any]) -> FileResult:
    diagnostics = []
    for d in entry["diagnostics"]:
        location = Location(d["file"], d["line"], d["column"], d.get("source_line")) if d["file"] else None
        diagnostics.append(Diagnostic(d["severity"], d["message"], location, tuple(d["notes"])))
    report = entry["report"]
    for statement in report.get("statements", []):
        statement["cached"] = True
    return FileResult(name, entry["outputs"], report, diagnostics, entry["messages"], entry["exit_code"], cached=True)


# --------------------------------------------------------------------------
# Batches
# --------------------------------------------------------------------------


def _job(args: tuple[str, bytes | None, CompileOptions, Diagnostic | None]) -> FileResult:
    return compile_text(*args)


def compile_batch(inputs: list[tuple[str, bytes | None, Diagnostic | None]], options: CompileOptions, jobs: int,
                  progress: Callable[[FileResult], None] | None = None) -> list[FileResult]:
    """Compile every input; results come back in input order whatever -j is.
    Each input's function is named after its output file, which is unique
    in the batch (two vectorizing.stmt from different directories make two
    different functions, which can be linked together)."""
    names = [name for name, _, _ in inputs]
    if len(inputs) > 1 and options.codegen.name is None:
        from hardboiled.codegen.naming import entry_point_name

        each = [dataclasses.replace(options, codegen=dataclasses.replace(options.codegen, name=entry_point_name(stem)))
                for stem in output_names(names)]
    else:
        each = [options] * len(inputs)
    work = [(name, data, own, error) for (name, data, error), own in zip(inputs, each)]
    if jobs <= 1 or len(work) <= 1:
        results = []
        for item in work:
            results.append(_job(item))
            if progress:
                progress(results[-1])
        return results
    from concurrent.futures import ProcessPoolExecutor

    from hardboiled.select.spare import discard_spare
    from hardboiled.support import children

    discard_spare()  # each worker starts its own egglog child: this process's spare would idle through the batch
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_worker_setup)
    results = []
    workers: list[Any] = []
    try:
        mapped = pool.map(_job, work)
        workers = list(getattr(pool, "_processes", {}).values())
        for worker in workers:  # an interrupt kills them (support/deep.py), which wakes this thread
            children.track(worker)
        for result in mapped:
            results.append(result)
            if progress:
                progress(result)
    except BaseException:
        # An interrupt or SIGTERM: the workers ignore both, so stop them
        # here rather than wait for them (which could hang).
        for process in list(getattr(pool, "_processes", {}).values()):
            process.kill()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        for worker in workers:
            children.untrack(worker)
    pool.shutdown()
    return results


def _worker_setup() -> None:
    """A ``-j`` worker: killed with the parent, and deaf to the terminal's
    Ctrl-C and to SIGTERM, which the parent handles for it."""
    import signal

    from hardboiled.support.children import die_with_parent

    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


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
            stems[i] = f"{Path(inputs[i]).absolute().parent.name}_{stem}"
    seen: dict[str, int] = {}
    unique = []
    for stem in stems:
        n = seen.get(stem, 0)
        seen[stem] = n + 1
        unique.append(stem if n == 0 else f"{stem}_{n}")
    return unique
