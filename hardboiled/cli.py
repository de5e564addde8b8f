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
            _report(exc.diagnostic)
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


def _parse_buffer_types(values: tuple[str, ...]) -> dict[str, ir.Type]:
    from .parse import parse_type_option

    result: dict[str, ir.Type] = {}
    for value in values:
        name, sep, type_text = value.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"'{value}' is not NAME=TYPE", param_hint="--buffer-type")
        try:
            result[name] = parse_type_option(type_text)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--buffer-type") from None
    return result


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
    from .parse import decode_input, parse_input
    from .printer import print_ir

    name = display_name(input_path)
    text = decode_input(read_input_bytes(input_path), name)
    parsed = parse_input(text, name, stage=stage, buffer_types=_parse_buffer_types(buffer_types))
    write_output(output_path, print_ir(parsed.ir))


if __name__ == "__main__":  # pragma: no cover
    main()
