"""The ``hardboiled`` command line.

Results go to standard output (or ``-o``); diagnostics go to standard error
in the GNU ``file:line:col: error:`` format. Exit statuses are the
``ExitCode`` values, documented in docs/cli.md.
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from typing import Callable, TypeVar

import click

from . import __version__, ir
from .diagnostics import Diagnostic, ExitCode, HardboiledError
from .fileio import STDIO, display_name, read_input_bytes, write_output

F = TypeVar("F", bound=Callable[..., None])
T = TypeVar("T")


def _report(diagnostic: Diagnostic) -> None:
    sys.stderr.write(diagnostic.render_text())
    sys.stderr.flush()


def handles_errors(command: F) -> F:
    """Turn our exceptions into diagnostics and documented exit codes.

    A bug becomes a one-line "internal error" with exit status 70; the
    traceback is printed only when HARDBOILED_TRACEBACK=1.
    """

    @functools.wraps(command)
    def wrapper(*args: object, **kwargs: object) -> None:
        try:
            command(*args, **kwargs)
        except HardboiledError as exc:
            for diagnostic in getattr(exc, "diagnostics", [exc.diagnostic]):
                _report(diagnostic)
            sys.exit(int(exc.exit_code))
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            _report(Diagnostic("error", "interrupted"))
            sys.exit(130)
        except BrokenPipeError:
            # The reader of our output went away (e.g. `| head`): not an error.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(int(ExitCode.SUCCESS))
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if os.environ.get("HARDBOILED_TRACEBACK") == "1":
                traceback.print_exc()
            _report(
                Diagnostic(
                    "error",
                    f"internal error: {type(exc).__name__}: {exc}",
                    notes=("this is a bug in hardboiled; set HARDBOILED_TRACEBACK=1 for details",),
                )
            )
            sys.exit(int(ExitCode.INTERNAL_ERROR))

    return wrapper  # type: ignore[return-value]


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


def _parse_buffer_types(values: tuple[str, ...]) -> dict[str, ir.Type]:
    from .parse import parse_type_option

    return _key_values(values, "--buffer-type", parse_type_option)


def _read_program(path: str, stage: str | None, buffer_types: tuple[str, ...]):  # type: ignore[no-untyped-def]
    from .parse import decode_input, parse_input

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


def _version_text() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for dependency in ("egglog", "lark"):
        try:
            parts.append(f"{dependency} {version(dependency)}")
        except PackageNotFoundError:
            parts.append(f"{dependency} (not installed)")
    return f"hardboiled {__version__} ({', '.join(parts)})"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(_version_text())
        ctx.exit(int(ExitCode.SUCCESS))


seed_option = click.option("--seed", type=int, default=0, show_default=True,
                           help="Seed of the random input data used by verification.")
param_option = click.option("--param", "params", metavar="NAME=VALUE", multiple=True,
                            help="Value of a buffer field the dump leaves symbolic, e.g. "
                            "B.stride.1=40 or out.extent.0=64 (repeatable).")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Print the versions of hardboiled, egglog and lark, then exit.")
def main() -> None:
    """hardboiled: a tensor instruction selector for Halide IR."""


@main.command("parse")
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
    from .printer import print_ir

    write_output(output_path, print_ir(_read_program(input_path, stage, buffer_types).ir))


@main.command("compile")
@click.argument("input_path", metavar="FILE|-")
@stage_option
@buffer_type_option
@click.option("-o", "--output", "output_path", default=STDIO, metavar="FILE|-",
              help="Where to write the result (default: standard output).")
@click.option("--store-in", "store_in", metavar="NAME=MEMORY", multiple=True,
              help="Treat buffer NAME as stored in MEMORY (e.g. mm=AMXTile), whatever the dump says.")
@click.option("--schedule", "schedule_path", metavar="FILE", default=None,
              help="egglog rule schedule to run instead of the default; @ITERATIONS@ in it is "
              "replaced by --iterations.")
@click.option("--iterations", type=click.IntRange(min=1), default=None,
              help="Rounds of the rule schedule (default 20).")
@click.option("--allow-fallback", is_flag=True,
              help="Leave stores that cannot be lowered as they are (with a warning) instead of failing.")
@click.option("--emit", type=click.Choice(["ir", "c", "egg"]), default="ir", show_default=True,
              help="ir: the rewritten IR; c: a C function with AMX intrinsics; egg: the egglog program "
              "that selection runs.")
@click.option("--build", "build_path", metavar="FILE", default=None,
              help="Also compile the generated C to FILE: a shared library if it ends in .so, else an "
              "object file.")
@click.option("--run", "run_kernel", is_flag=True,
              help="Build the generated C, run it on seeded random inputs and compare with the original "
              "IR in the reference interpreter (exit 5 on a mismatch).")
@click.option("--cc", "cc", metavar="COMPILER", default=None,
              help="C compiler (default: $CC, else clang if installed, else gcc).")
@click.option("--amx", "amx_mode", type=click.Choice(["native", "emulate", "auto"]), default="auto",
              show_default=True,
              help="Compile AMX intrinsics for the hardware, or against hardboiled's portable emulation; "
              "auto emulates unless the CPU has AMX.")
@click.option("--egglog-timeout", type=click.FloatRange(min=0.1), default=None, metavar="SECONDS",
              help="Wall-clock limit for equality saturation (default 60).")
@click.option("--egglog-memory", type=click.IntRange(min=64), default=None, metavar="MB",
              help="Memory limit for equality saturation (default 4096).")
@click.option("--verify", "verify_result", is_flag=True,
              help="Run the original and the rewritten IR in the reference interpreter on random inputs "
              "and compare their outputs (exit 5 on a mismatch).")
@seed_option
@param_option
@click.option("-q", "--quiet", is_flag=True, help="No summary on standard error.")
@handles_errors
def compile_command(input_path: str, stage: str | None, buffer_types: tuple[str, ...], output_path: str,
                    store_in: tuple[str, ...], schedule_path: str | None, iterations: int | None,
                    allow_fallback: bool, emit: str, build_path: str | None, run_kernel: bool, cc: str | None,
                    amx_mode: str, egglog_timeout: float | None, egglog_memory: int | None,
                    verify_result: bool, seed: int, params: tuple[str, ...], quiet: bool) -> None:
    """Select tensor instructions for the stores in accelerator memory.

    FILE is read as by `hardboiled parse`. Stores whose buffers live in
    AMXTile memory (or are named by --store-in) become AMX tile
    operations; the rewritten IR is printed in Halide's format.
    """
    from .egglog_bridge import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S
    from .printer import print_ir
    from .select import SelectionOptions, select

    parsed = _read_program(input_path, stage, buffer_types)
    name, text = parsed.filename, parsed.text
    options = SelectionOptions(
        store_in=_key_values(store_in, "--store-in", str),
        schedule_path=schedule_path,
        iterations=iterations,
        allow_fallback=allow_fallback,
        timeout_s=egglog_timeout or DEFAULT_TIMEOUT_S,
        memory_mb=egglog_memory or DEFAULT_MEMORY_MB,
    )
    if emit == "egg":
        write_output(output_path, _egglog_program(parsed.ir, options))
        return
    results = []

    def run(stmt: ir.Stmt, first_store: int) -> ir.Stmt:
        result = select(stmt, options, filename=name, source=text,
                        store_lines=parsed.store_lines[first_store:])
        for warning in result.warnings:
            _report(warning)
        results.append(result)
        return result.stmt

    if isinstance(parsed.ir, ir.Module):
        import dataclasses

        from .extract import iter_stores

        functions, offset = [], 0
        for func in parsed.ir.functions:
            functions.append(dataclasses.replace(func, body=run(func.body, offset)))
            offset += sum(1 for _ in iter_stores(func.body))
        rewritten: ir.Stmt | ir.Module = dataclasses.replace(parsed.ir, functions=tuple(functions))
    else:
        rewritten = run(parsed.ir, 0)
    param_values = _key_values(params, "--param", int)
    if verify_result:
        # Before any output exists: a mismatch leaves nothing behind.
        _verify_and_report(parsed.ir, rewritten, seed, param_values, quiet)
    source = None
    if emit == "c" or build_path or run_kernel:
        source = _generate_c(rewritten)
    if run_kernel:
        _run_and_report(parsed.ir, rewritten, source, cc, amx_mode, seed, param_values, quiet)
    if build_path:
        from pathlib import Path

        from .toolchain import compile_c, find_compiler

        compiler = compile_c(source, Path(build_path), shared=build_path.endswith(".so"), amx=amx_mode,
                             compiler=find_compiler(cc))
        if not quiet:
            sys.stderr.write(f"hardboiled: built {build_path} with {compiler.name}\n")
    write_output(output_path, source if emit == "c" else print_ir(rewritten))
    if not quiet:
        _summarize(results)


def _generate_c(program: ir.Stmt | ir.Module) -> str:
    from .codegen_c import generate_c

    if isinstance(program, ir.Module):
        raise HardboiledError(Diagnostic(
            "error", "C generation takes a single statement; use a debug log or a stmt file, not a module",
        ))
    return generate_c(program)


def _run_and_report(original: ir.Stmt | ir.Module, rewritten: ir.Stmt | ir.Module, source: str, cc: str | None,
                    amx_mode: str, seed: int, params: dict[str, int], quiet: bool) -> None:
    from .verify import mismatch_error, run_generated_c

    assert isinstance(original, ir.Stmt) and isinstance(rewritten, ir.Stmt)
    result, compiler, mode = run_generated_c(original, rewritten, source, cc=cc, amx=amx_mode, seed=seed,
                                             params=params)
    if not result.ok:
        raise mismatch_error(result)
    if not quiet:
        sys.stderr.write(f"hardboiled: ran the generated C ({compiler}, AMX {mode}): {result.summary()}\n")


def _verify_and_report(original: ir.Stmt | ir.Module, rewritten: ir.Stmt | ir.Module, seed: int,
                       params: dict[str, int], quiet: bool) -> None:
    from .verify import mismatch_error, verify

    if isinstance(original, ir.Module) or isinstance(rewritten, ir.Module):
        raise HardboiledError(Diagnostic(
            "error", "verification runs a single statement; use a debug log or a stmt file, not a module",
        ))
    result = verify(original, rewritten, seed=seed, params=params)
    if not result.ok:
        raise mismatch_error(result)
    if not quiet:
        sys.stderr.write("hardboiled: " + result.summary() + "\n")


@main.command("verify")
@click.argument("original_path", metavar="ORIGINAL")
@click.argument("rewritten_path", metavar="REWRITTEN")
@stage_option
@buffer_type_option
@seed_option
@param_option
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
@handles_errors
def verify_command(original_path: str, rewritten_path: str, stage: str | None, buffer_types: tuple[str, ...],
                   seed: int, params: tuple[str, ...], quiet: bool) -> None:
    """Check that REWRITTEN computes what ORIGINAL computes.

    Both run in hardboiled's reference interpreter on the same seeded random
    inputs; every output buffer is compared, with a tolerance derived from
    its type (exact for integers). ORIGINAL may be a debug log (--stage
    applies to it); REWRITTEN is a stmt, such as `compile` prints. Exit
    status 5 on a mismatch.
    """
    original = _read_program(original_path, stage, buffer_types).ir
    rewritten = _read_program(rewritten_path, None, buffer_types).ir
    _verify_and_report(original, rewritten, seed, _key_values(params, "--param", int), quiet)


def _egglog_program(program: ir.Stmt | ir.Module, options: object) -> str:
    from .eqsat import load_schedule, program_text
    from .extract import accelerator_allocations, encode_stores, select_stores

    bodies = [f.body for f in program.functions] if isinstance(program, ir.Module) else [program]
    terms: list[str] = []
    for body in bodies:
        allocations = accelerator_allocations(body, options.store_in)  # type: ignore[attr-defined]
        selected = [s for s in select_stores(body, allocations, options.store_in)  # type: ignore[attr-defined]
                    if s.store.predicate is None]
        terms.extend(encode_stores(selected, allocations).terms)
    schedule = load_schedule(options.schedule_path, options.iterations)  # type: ignore[attr-defined]
    return program_text(terms, schedule)


def _summarize(results: list) -> None:  # type: ignore[type-arg]
    reports = [r for result in results for r in result.reports]
    if not reports:
        sys.stderr.write("hardboiled: no store touches accelerator memory; the IR is unchanged\n")
        return
    lowered = sum(1 for r in reports if r.lowered)
    schedule = next((r.schedule for r in results if r.schedule is not None), None)
    sizes = [r.egraph for r in results if r.egraph is not None]
    seconds = sum(r.seconds for r in results)
    parts = [f"hardboiled: lowered {lowered} of {len(reports)} accelerator stores"]
    if schedule is not None:
        parts.append(f"schedule {schedule.source} ({schedule.iterations} iterations)")
    if sizes:
        parts.append(f"e-graph {sum(s.nodes for s in sizes)} nodes, {sum(s.classes for s in sizes)} classes")
    parts.append(f"{seconds:.2f} s")
    sys.stderr.write("; ".join(parts) + "\n")


if __name__ == "__main__":  # pragma: no cover
    main()
