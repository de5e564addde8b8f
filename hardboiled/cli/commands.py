"""The ``hardboiled`` command line.

Results go to standard output (or ``-o``); diagnostics go to standard error
in the GNU ``file:line:col: error:`` format. Exit statuses are the
``ExitCode`` values, documented in docs/cli.md.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hardboiled.cli.client import DEFAULT_IDLE_TIMEOUT_S
from hardboiled.cli.errors import DiagnosingGroup, handles_errors
from hardboiled.cli.outputs import tell_cached_compile, write_results
from hardboiled.cli.summary import reports_json, summarize
from hardboiled.pipeline.options import AMX_MODES
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError
from hardboiled.support.fileio import STDIO, display_name, read_input_bytes, write_output
from hardboiled.support.version import VERSION
from hardboiled.targets.cuda_arch import DEFAULT_SM, MIN_SM

if TYPE_CHECKING:  # imported lazily at run time: --help must start fast
    from hardboiled import ir
    from hardboiled.frontend.parse import ParsedInput
    from hardboiled.pipeline.driver import FileResult
    from hardboiled.pipeline.options import CompileOptions
    from hardboiled.select.options import SelectionOptions

BatchInput = tuple[str, bytes | None, Diagnostic | None]
"""One input of a batch: its display name, its bytes, or why it could not be read."""

T = TypeVar("T")


def _key_values(values: tuple[str, ...], option: str, convert: Callable[[str], T]) -> dict[str, T]:
    """Parse repeated NAME=VALUE options."""
    result: dict[str, T] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name or not text:
            raise click.BadParameter(f"'{value}' is not NAME=VALUE", param_hint=option)
        try:
            result[name] = convert(text)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint=option) from None
    return result


def _number(text: str) -> float:
    """A --param value: an integer (a buffer field, an integer param) or a
    float param's value."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def _parse_buffer_types(values: tuple[str, ...]) -> dict[str, ir.Type]:
    if not values:
        return {}  # the parser (and lark) load only when needed: a cache hit never needs them
    from hardboiled.frontend.parse import parse_type_option

    return _key_values(values, "--buffer-type", parse_type_option)


def _read_program(path: str, stage: str | None, buffer_types: tuple[str, ...]) -> ParsedInput:
    from hardboiled.frontend.parse import parse_input
    from hardboiled.frontend.stages import decode_input

    name = display_name(path)
    text = decode_input(read_input_bytes(path), name)
    return parse_input(text, name, stage=stage, buffer_types=_parse_buffer_types(buffer_types))


stage_option = click.option(
    "--stage",
    metavar="NAME",
    default=None,
    help="For an HL_DEBUG_CODEGEN log: which 'Lowering after NAME:' block to read "
    "(default: vectorizing).",
)
buffer_type_option = click.option(
    "--buffer-type",
    "buffer_types",
    metavar="NAME=TYPE",
    multiple=True,
    help="Element type of a buffer whose type the dump does not state, e.g. A=bfloat16.",
)


_PASS_CHOICES = ("all", "parse", "emit-egg", "select", "place-temporaries", "hoist-operand-copies",
                 "retag-memory", "fit-tile-registers",
                 "check-amx", "stage-wmma-operands", "wmma-lanes", "wmma-fragments",
                 "reuse-operand-fragments", "spread-lanes", "place-barriers", "report",
                 "verify", "emit-cuda", "build-cuda", "emit-c", "run-c", "build-c", "emit-html")
"""``all`` and the pass names of hardboiled/pipeline/passes.py (spelled out so
that --help does not import the pipeline; a test keeps them in step)."""


def _version_text() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for dependency in ("egglog", "lark"):
        try:
            parts.append(f"{dependency} {version(dependency)}")
        except PackageNotFoundError:
            parts.append(f"{dependency} (not installed)")
    return f"hardboiled {VERSION} ({', '.join(parts)})"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(_version_text())
        ctx.exit(int(ExitCode.SUCCESS))


diagnostics_format_option = click.option(
    "--diagnostics-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
    help="text: file:line:col: error: with the source line and a caret; json: one JSON object per line.",
)
seed_option = click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                           help="Seed of the random input data used by verification.")
verify_timeout_option = click.option(
    "--verify-timeout", "verify_timeout", type=click.FloatRange(min=0.1), default=None, metavar="SECONDS",
    help="Wall-clock limit for the reference interpreter in one verification (default 300); exceeding it "
    "exits 4.")
accept_unproven_option = click.option(
    "--accept-unproven", is_flag=True,
    help="Accept a verification that found no difference where some elements' error bounds are wider than "
    "the output's range (which otherwise exits 7: any value there would have passed).")
input_option = click.option(
    "--input", "input_files", metavar="NAME=FILE", multiple=True,
    help="Verify on the contents of FILE (a .npy array, numpy order: shape (rows, columns) is Halide's "
    "(extent.1, extent.0)) for input buffer NAME instead of random data (repeatable).")
param_option = click.option("--param", "params", metavar="NAME=VALUE", multiple=True,
                            help="Value of a buffer field the dump leaves symbolic, or of a scalar Param of the "
                            "pipeline, e.g. B.stride.1=40, out.extent.0=64 or gain=0.5 (repeatable; a Param "
                            "not given is drawn at random among values its asserts accept).")


def _epilog(*examples: tuple[str, str]) -> str:
    """The end of a command's --help: examples, then the exit codes. ``\b``
    keeps click from rewrapping a block."""
    from hardboiled.support.diagnostics import EXIT_CODE_MEANINGS

    lines = ["\b", "Examples:"]
    for comment, command in examples:
        lines += [f"  # {comment}", f"  {command}"]
    lines += ["", "\b", "Exit codes:"]
    lines += [f"  {int(code):>3}  {meaning}" for code, meaning in EXIT_CODE_MEANINGS.items()]
    return "\n".join(lines)


EXAMPLE_LOG = "tests/fixtures/halide/amx_bf16_matmul_std_single/debug.log"
COMPILE_EXAMPLES = (
    ("AMX tile instructions for a debug log, the rewritten IR on standard output",
     f"hardboiled compile {EXAMPLE_LOG}"),
    ("C with AMX intrinsics, checked in the reference interpreter",
     f"hardboiled compile {EXAMPLE_LOG} --emit c -o mm.c --verify"),
    ("the visual report, for a browser", f"hardboiled compile {EXAMPLE_LOG} --verify --emit html -o mm.html"),
    ("Tensor Cores: mark the accumulator, emit CUDA and build PTX",
     "hardboiled compile conv.stmt --store-in prod=WMMAAccumulator --emit cuda -o conv.cu --build conv.ptx"),
    ("in CI: fail when nothing is tensorized, keep the JSON report",
     "hardboiled compile dumps/*.stmt -o out/ --require --report-file report.json"),
)

@click.group(cls=DiagnosingGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=_epilog(*COMPILE_EXAMPLES[:2], ("does REWRITTEN compute what ORIGINAL computes?",
                                                    "hardboiled verify original.stmt rewritten.stmt")))
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Print the versions of hardboiled, egglog and lark, then exit.")
def main() -> None:
    """hardboiled: a tensor instruction selector for Halide IR."""


@main.command("parse", epilog=_epilog(
    ("the vectorizing stage of a debug log, printed back in Halide's format",
     f"hardboiled parse {EXAMPLE_LOG}"),
    ("another stage", f"hardboiled parse {EXAMPLE_LOG} --stage 'extracting tile operations'")))
@click.argument("input_path", metavar="FILE|-")
@stage_option
@buffer_type_option
@click.option("-o", "--output", "output_path", default=STDIO, metavar="FILE|-",
              help="Where to write the IR (default: standard output).")
@handles_errors
def parse_command(input_path: str, stage: str | None, buffer_types: tuple[str, ...],
                  output_path: str) -> None:
    """Parse Halide IR and print it back in Halide's format.

    FILE is a single stmt, a whole HL_DEBUG_CODEGEN=2 log (with --stage
    picking the block) or compile_to_lowered_stmt text output. Printing
    what was parsed reproduces Halide's own text byte for byte, so this is
    both a formatter and a round-trip check.
    """
    from hardboiled.ir.printer import print_ir

    write_output(output_path, print_ir(_read_program(input_path, stage, buffer_types).ir))


@main.command("compile", epilog=_epilog(*COMPILE_EXAMPLES))
@click.argument("input_paths", metavar="FILE...|-", nargs=-1, required=True)
@stage_option
@buffer_type_option
@click.option("-o", "--output", "output_path", default=None, metavar="FILE|DIR|-",
              help="Where results go: standard output (default, one input and one --emit kind), a file, "
              "or a directory (several inputs or kinds), with one FILE-STEM.EXT per input and kind.")
@click.option("--emit", "emit", default="ir", show_default=True, metavar="KINDS",
              help="Comma-separated: ir (rewritten IR, .stmt), c (C with AMX intrinsics, .c), "
              "egg (the egglog program that runs, .egg), report (JSON report, .report.json), "
              "cuda (CUDA C++ with nvcuda::wmma kernels and a host launch wrapper, .cu), html (a "
              "one-file visual report: each statement beside its selected instructions, rewrite, "
              "e-graph and verification, .html).")
@click.option("--store-in", "store_in", metavar="NAME=MEMORY", multiple=True,
              help="Treat buffer NAME as stored in MEMORY (mm=AMXTile or prod=WMMAAccumulator), "
              "whatever the dump says.")
@click.option("--schedule", "schedule_path", metavar="FILE", default=None,
              help="egglog rule schedule to run instead of the default; @ITERATIONS@ in it is "
              "replaced by --iterations.")
@click.option("--iterations", type=click.IntRange(min=1), default=None,
              help="Rounds of the rule schedule (default 20).")
@click.option("--require", is_flag=True,
              help="No store in accelerator memory is a miss (exit 1), naming the Funcs that could be "
              "tensorized and the --store-in flag that marks each.")
@click.option("--allow-fallback", is_flag=True,
              help="Leave stores that cannot be lowered as they are (with a warning) instead of failing.")
@click.option("-v", "--verbose", is_flag=True,
              help="Report every store that cannot be lowered, in full (by default: the root causes, "
              "with long expressions shortened).")
@click.option("--verify", "verify_result", is_flag=True,
              help="Run the original and the rewritten IR in the reference interpreter on random inputs "
              "and compare their outputs (exit 5 on a mismatch).")
@click.option("--run", "run_kernel", is_flag=True,
              help="Build the generated C, run it on seeded random inputs and compare with the original "
              "IR in the reference interpreter (exit 5 on a mismatch).")
@click.option("--build", "build_path", metavar="FILE", default=None,
              help="Also compile the generated code to FILE (one input only): PTX or a cubin (.ptx, .cubin) "
              "with nvcc, else a shared library (.so) or an object file, with nvcc for a GPU program and the "
              "C compiler for a CPU one.")
@click.option("--cuda-arch", "cuda_arch", metavar="sm_XX", default=f"sm_{DEFAULT_SM}",
              show_default=True,
              help=f"GPU architecture for nvcc's --build; sm_{MIN_SM} or newer.")
@click.option("--name", "entry_point", metavar="NAME", default=None,
              help="Name of the generated function (default: the input's stem made a C name, e.g. "
              "conv-layer.debug.log gives conv_layer; hb_kernel for standard input). Every other symbol "
              "of the output is static or carries the name: the halide_buffer_t entry point is NAME, the "
              "raw-pointer one NAME_raw. One input only.")
@click.option("--args", "argument_order", metavar="A,B,...", default=None,
              help="The buffers in Halide's argument order (inputs, then outputs, as the pipeline declares "
              "them), for the generated functions' parameters. Default: the signature of a lowered module "
              "(compile_to_lowered_stmt output), else inputs then outputs, each sorted by name.")
@click.option("--cc", "cc", metavar="COMPILER", default=None,
              help="C compiler, with arguments if any, split as a shell would (default: $CC, else clang if "
              "installed, else gcc). $NVCC names nvcc the same way.")
@click.option("-I", "--include-dir", "include_dirs", metavar="DIR", multiple=True,
              help="A header directory for the C compiler and nvcc (--build, --run); repeatable.")
@click.option("--amx", "amx_mode", type=click.Choice(AMX_MODES), default="auto",
              show_default=True,
              help="Compile AMX intrinsics for the hardware, or against hardboiled's portable emulation; "
              "auto emulates unless the CPU has AMX.")
@seed_option
@param_option
@input_option
@verify_timeout_option
@accept_unproven_option
@click.option("--egglog-timeout", type=click.FloatRange(min=0.1), default=None, metavar="SECONDS",
              help="Wall-clock limit for equality saturation (default 60).")
@click.option("--egglog-memory", type=click.IntRange(min=64), default=None, metavar="MB",
              help="Memory limit for equality saturation (default 4096).")
@click.option("--cache-dir", metavar="DIR", default=None,
              help="Cache of selection results (default: $HARDBOILED_CACHE_DIR, else "
              "$XDG_CACHE_HOME/hardboiled or ~/.cache/hardboiled).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=1, show_default=True,
              help="Inputs compiled in parallel (0: one per CPU); with one input, egglog processes that "
              "saturate its statements side by side.")
@click.option("--report", "report_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True,
              help="The summary on standard error: text (a table on a terminal) or JSON (schema: "
              "docs/report-schema.json).")
@click.option("--report-file", "report_file", metavar="FILE", default=None,
              help="Also write the JSON report of every input, failed ones included, to FILE (written "
              "whole, whatever the exit status).")
@diagnostics_format_option
@click.option("-q", "--quiet", is_flag=True, help="No summary or progress on standard error.")
@click.option("--print-before", "print_before", metavar="PASS", multiple=True, type=click.Choice(_PASS_CHOICES),
              help="Print the program to standard error before PASS runs (repeatable; 'all' for every pass). "
              "The passes are listed in docs/cli.md.")
@click.option("--print-after", "print_after", metavar="PASS", multiple=True, type=click.Choice(_PASS_CHOICES),
              help="Print the program (the generated source after emit-c or emit-cuda) to standard error "
              "after PASS runs (repeatable; 'all' for every pass).")
@click.option("--timing", is_flag=True, help="Print each pass's wall time to standard error.")
@click.option("--verify-ir", "verify_ir", is_flag=True,
              help="Check the IR invariants after every pass that changes the IR (a failure is exit 70).")
@handles_errors
def compile_command(input_paths: tuple[str, ...], stage: str | None, buffer_types: tuple[str, ...],
                    output_path: str | None, emit: str, store_in: tuple[str, ...], schedule_path: str | None,
                    iterations: int | None, require: bool, allow_fallback: bool, verbose: bool,
                    verify_result: bool,
                    run_kernel: bool,
                    build_path: str | None, cuda_arch: str, entry_point: str | None,
                    argument_order: str | None, cc: str | None,
                    include_dirs: tuple[str, ...], amx_mode: str, seed: int,
                    params: tuple[str, ...], input_files: tuple[str, ...], verify_timeout: float | None,
                    accept_unproven: bool, egglog_timeout: float | None, egglog_memory: int | None,
                    cache_dir: str | None,
                    no_cache: bool, jobs: int, report_format: str, report_file: str | None,
                    diagnostics_format: str,
                    quiet: bool, print_before: tuple[str, ...], print_after: tuple[str, ...], timing: bool,
                    verify_ir: bool) -> None:
    """Select tensor instructions for the stores in accelerator memory.

    Each FILE is read as by `hardboiled parse` (`-` is standard input).
    Stores whose buffers live in AMXTile or WMMAAccumulator memory (or are
    named by --store-in) become AMX tile or Tensor Core (WMMA) fragment
    operations; the rewritten IR is printed in Halide's format, C with
    --emit c, or CUDA with --emit cuda.
    """
    from hardboiled.pipeline.options import CompileOptions
    from hardboiled.targets.cuda_arch import parse_cuda_arch

    kinds = _emit_kinds(emit)
    _check_compile_usage(input_paths, output_path, kinds, build_path, bool(params or input_files),
                         verify_result or run_kernel)
    inputs, input_reads = _verification_inputs(input_files)
    _check_entry_point(entry_point, input_paths)
    selection = _selection_options(store_in, schedule_path, iterations, allow_fallback, egglog_timeout,
                                   egglog_memory, None if no_cache else str(cache_dir or _default_cache_dir()))
    workers = jobs or (os.cpu_count() or 1)
    # One input: -j's workers saturate its scopes side by side instead.
    selection = dataclasses.replace(selection, verbose=verbose,
                                    saturation_jobs=workers if len(input_paths) == 1 else 1)
    if selection.cache_dir is not None:
        _check_cache_directory(Path(selection.cache_dir))
    options = CompileOptions.from_flags(
        stage=stage, buffer_types=_parse_buffer_types(buffer_types), selection=selection, require=require,
        emit=kinds, verify=verify_result, run=run_kernel, seed=seed, params=_key_values(params, "--param", _number),
        verify_timeout_s=verify_timeout, accept_unproven=accept_unproven, inputs=inputs, build_path=build_path,
        cc=cc, amx=amx_mode,
        cuda_arch=parse_cuda_arch(cuda_arch), include_dirs=include_dirs, name=entry_point,
        args=_argument_order(argument_order), print_before=print_before, print_after=print_after, timing=timing,
        verify_ir=verify_ir,
    )
    source_inputs = [_read_input(path) for path in input_paths]
    results = _run_batch(source_inputs, options, workers, quiet)
    written = write_results(results, [name for name, _, _ in source_inputs], kinds, output_path,
                            diagnostics_format,
                            None if report_file is None else (report_file, reports_json(results)))
    if not quiet:
        summarize(results, report_format)
    if selection.cache_dir and STDIO not in input_paths and all(r.cached for r in results):
        tell_cached_compile(selection.cache_dir, input_paths, [data for _, data, _ in source_inputs],
                            schedule_path, written, input_reads)
    code = max(r.exit_code for r in results)
    if code:
        sys.exit(code)


def _verification_inputs(input_files: tuple[str, ...]) -> tuple[dict[str, Any], list[tuple[str, bytes]]]:
    """--input NAME=FILE: each .npy file's array by buffer name, and the
    files' bytes (a repeated compile is answered only while they hold)."""
    if not input_files:
        return {}, []
    import io

    from hardboiled.support.environment import load_numpy

    load_numpy()
    import numpy as np

    arrays: dict[str, Any] = {}
    reads: list[tuple[str, bytes]] = []
    for name, path in _key_values(input_files, "--input", str).items():
        try:
            data = Path(path).read_bytes()
            arrays[name] = np.load(io.BytesIO(data), allow_pickle=False)
        except OSError as exc:
            raise HardboiledError(Diagnostic("error", f"--input {name}: cannot read '{path}': "
                                             f"{exc.strerror or exc}")) from None
        except ValueError as exc:
            raise HardboiledError(Diagnostic("error", f"--input {name}: '{path}' is not a numpy array file (.npy)",
                                             notes=(str(exc),))) from None
        reads.append((path, data))
    return arrays, reads


def _argument_order(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    names = tuple(name.strip() for name in text.split(","))
    if not all(names):
        raise click.BadParameter(f"'{text}': expected buffer names separated by commas", param_hint="'--args'")
    return names


def _check_entry_point(name: str | None, input_paths: tuple[str, ...]) -> None:
    if name is None:
        return
    from hardboiled.codegen.naming import is_entry_point_name

    if not is_entry_point_name(name):
        raise click.BadParameter(f"'{name}' is not a C identifier, or is a C or C++ keyword, main, or a name "
                                 "starting with hb_ (the generated code's own)", param_hint="--name")
    if len(input_paths) > 1:
        raise click.UsageError("--name names one function: with several inputs, each is named after its file")


def _check_cache_directory(directory: Path) -> None:
    """A cache answers for the compiler: one that another user can write
    could serve them any output (docs/security.md)."""
    from hardboiled.support.cache import cache_directory_problem

    problem = cache_directory_problem(directory)
    if problem is not None:
        raise HardboiledError(Diagnostic(
            "error", f"cache directory '{directory}' {problem}; it could hold results another user put there",
            notes=("use a directory of your own that only you can write (chmod 700), another --cache-dir, "
                   "or --no-cache",),
        ))


def _default_cache_dir() -> Path:
    from hardboiled.support.cache import default_cache_dir

    return default_cache_dir()


def _emit_kinds(emit: str) -> tuple[str, ...]:
    """The --emit list, each kind once, in the order given."""
    from hardboiled.pipeline.options import EMIT_SUFFIXES

    kinds = tuple(dict.fromkeys(k.strip() for k in emit.split(",") if k.strip()))
    unknown = [k for k in kinds if k not in EMIT_SUFFIXES]
    if unknown or not kinds:
        raise click.BadParameter(f"unknown kind {unknown[0] if unknown else '(none)'}; choose from "
                                 + ", ".join(EMIT_SUFFIXES), param_hint="--emit")
    return kinds


def _check_compile_usage(input_paths: tuple[str, ...], output_path: str | None, kinds: tuple[str, ...],
                         build_path: str | None, params: bool, executes: bool) -> None:
    """Option combinations that cannot work, refused before any work."""
    if input_paths.count(STDIO) > 1:
        raise click.UsageError("standard input can be read only once")
    if output_path in (None, STDIO) and (len(input_paths) > 1 or len(kinds) > 1):
        raise click.UsageError("several inputs or --emit kinds need -o DIR")
    if build_path and len(input_paths) > 1:
        raise click.UsageError("--build takes one input")
    if params and not executes:
        raise click.UsageError("--param and --input set buffers for --verify and --run; without them they do "
                               "nothing")


def _selection_options(store_in: tuple[str, ...], schedule_path: str | None, iterations: int | None,
                       allow_fallback: bool, egglog_timeout: float | None, egglog_memory: int | None,
                       cache_dir: str | None) -> SelectionOptions:
    from hardboiled.select.options import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, SelectionOptions

    return SelectionOptions(
        store_in=_key_values(store_in, "--store-in", str),
        schedule_path=schedule_path,
        iterations=iterations,
        allow_fallback=allow_fallback,
        timeout_s=egglog_timeout or DEFAULT_TIMEOUT_S,
        memory_mb=egglog_memory or DEFAULT_MEMORY_MB,
        cache_dir=cache_dir,
    )


def _read_input(path: str) -> tuple[str, bytes | None, Diagnostic | None]:
    name = display_name(path)
    try:
        return name, read_input_bytes(path), None
    except HardboiledError as exc:
        return name, None, exc.diagnostic


def _run_batch(inputs: list[BatchInput], options: CompileOptions, jobs: int, quiet: bool) -> list[FileResult]:
    from hardboiled.pipeline.driver import compile_batch

    if quiet or len(inputs) < 2 or not sys.stderr.isatty():
        return compile_batch(inputs, options, jobs)
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("compiling", total=len(inputs))
        return compile_batch(inputs, options, jobs,
                             progress=lambda _result: progress.advance(task))


def _verify_and_report(original: ir.Stmt | ir.Module, rewritten: ir.Stmt | ir.Module, seed: int,
                       params: dict[str, float], quiet: bool, timeout_s: float | None = None,
                       accept_unproven: bool = False, inputs: dict[str, Any] | None = None) -> None:
    from hardboiled import ir
    from hardboiled.verify.compare import checked, verify
    from hardboiled.verify.interp import INTERPRETER_TIMEOUT_S

    if isinstance(original, ir.Module) or isinstance(rewritten, ir.Module):
        raise HardboiledError(Diagnostic(
            "error", "verification runs a single statement; use a debug log or a stmt file, not a module",
        ))
    result = verify(original, rewritten, seed=seed, params=params, timeout_s=timeout_s or INTERPRETER_TIMEOUT_S,
                    inputs=inputs)
    summary = checked(result, accept_unproven)
    if not quiet:
        sys.stderr.write("hardboiled: " + summary + "\n")


@main.command("verify", epilog=_epilog(
    ("check a rewrite against the original", "hardboiled verify original.stmt rewritten.stmt"),
    ("check Halide's own AMX stage against the vectorizing stage of the same log",
     f"hardboiled verify {EXAMPLE_LOG} {EXAMPLE_LOG} --rewritten-stage 'extracting tile operations'")))
@click.argument("original_path", metavar="ORIGINAL")
@click.argument("rewritten_path", metavar="REWRITTEN")
@stage_option
@click.option("--rewritten-stage", metavar="NAME", default=None,
              help="When REWRITTEN is a debug log: the stage to read from it (e.g. 'extracting tile "
              "operations', Halide's own AMX result).")
@buffer_type_option
@seed_option
@param_option
@input_option
@verify_timeout_option
@accept_unproven_option
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
@handles_errors
def verify_command(original_path: str, rewritten_path: str, stage: str | None, rewritten_stage: str | None,
                   buffer_types: tuple[str, ...], seed: int, params: tuple[str, ...], input_files: tuple[str, ...],
                   verify_timeout: float | None, accept_unproven: bool, quiet: bool) -> None:
    """Check that REWRITTEN computes what ORIGINAL computes.

    Both run in hardboiled's reference interpreter on the same seeded random
    inputs; every output buffer is compared, with a tolerance derived from
    its type (exact for integers). ORIGINAL may be a debug log (--stage
    applies to it); REWRITTEN is a stmt, such as `compile` prints. Exit
    status 5 on a mismatch, 7 where some elements' error bounds prove nothing.
    """
    if original_path == rewritten_path == STDIO:
        raise click.UsageError("standard input can be read only once")
    original = _read_program(original_path, stage, buffer_types).ir
    rewritten = _read_program(rewritten_path, rewritten_stage, buffer_types).ir
    _verify_and_report(original, rewritten, seed, _key_values(params, "--param", _number), quiet, verify_timeout,
                       accept_unproven, _verification_inputs(input_files)[0])


@main.command("rules", epilog=_epilog(("the rulesets and their sizes", "hardboiled rules")))
@handles_errors
def rules_command() -> None:
    """List the rule files, their rulesets and how many rules each has."""
    from hardboiled.select.rules import RULE_FILES, rule_text, rules_by_ruleset

    for filename in (*RULE_FILES, "schedules/default.egg"):
        counts = rules_by_ruleset(rule_text(filename))
        total = sum(counts.values())
        sys.stdout.write(f"rules/{filename}: {total} rule{'s' if total != 1 else ''}\n")
        for ruleset, count in sorted(counts.items()):
            sys.stdout.write(f"  {ruleset}: {count}\n")


@main.group("server", cls=DiagnosingGroup, epilog=_epilog(
    ("keep hardboiled loaded for the commands that follow", "hardboiled server start"),
    ("is one running?", "hardboiled server status"), ("stop it", "hardboiled server stop")))
def server_group() -> None:
    """A compile server: hardboiled loaded once, each command a forked worker.

    While a server runs for this user and this build of hardboiled, every
    hardboiled command is run by it: same outputs, messages and exit
    status, without the start-up (cli/server.py). HARDBOILED_NO_SERVER=1
    runs a command without it.
    """


@server_group.command("start")
@click.option("--idle-timeout", "idle_timeout", type=click.FloatRange(min=1), metavar="SECONDS",
              default=DEFAULT_IDLE_TIMEOUT_S, show_default=True, help="Stop after this long without a command.")
@handles_errors
def server_start_command(idle_timeout: float) -> None:
    """Start a server for this build of hardboiled, unless one runs."""
    from hardboiled.cli import client

    try:
        started, status = client.start(idle_timeout)
    except OSError as exc:
        raise HardboiledError(Diagnostic("error", f"cannot start the compile server: {exc}")) from None
    verb = "started" if started else "already running"
    sys.stdout.write(f"hardboiled: server {verb}: pid {status['pid']}, socket {status['socket']}\n")


@server_group.command("stop")
@handles_errors
def server_stop_command() -> None:
    """Stop every server of this user, of any build."""
    from hardboiled.cli import client

    stopped = client.stop_all()
    for status in stopped:
        sys.stdout.write(f"hardboiled: server stopped: pid {status['pid']}\n")
    if not stopped:
        sys.stdout.write("hardboiled: no server was running\n")


@server_group.command("status")
@handles_errors
def server_status_command() -> None:
    """Say whether a server for this build runs (exit 0) or not (exit 1)."""
    from hardboiled.cli import client

    status = client.status(client.socket_path(client.server_directory()))
    if status is None:
        sys.stdout.write("hardboiled: no server is running for this build\n")
        sys.exit(1)
    sys.stdout.write(f"hardboiled: server running: pid {status['pid']}, socket {status['socket']}, "
                     f"up {status['uptime_s']:g} s, idle timeout {status['idle_timeout_s']:g} s\n")


if __name__ == "__main__":  # pragma: no cover
    main()
