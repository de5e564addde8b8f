"""How the command line reports errors: diagnostics on standard error (GNU
text, coloured on a terminal, or JSON), a documented exit status for every
exception (an internal error is one line and exit 70, its traceback only
with HARDBOILED_TRACEBACK=1), and click's own usage errors reported the
same way."""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import click

from hardboiled.cli.terminal import color_enabled, print_colored
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError, Terminated, internal_error
from hardboiled.support.fileio import silence_standard_output

F = TypeVar("F", bound=Callable[..., None])


def report(diagnostic: Diagnostic, diagnostics_format: str = "text") -> None:
    """One diagnostic on standard error: JSON, or GNU text (coloured as gcc
    colours it on a terminal)."""
    if diagnostics_format == "text" and color_enabled(sys.stderr):
        print_colored(diagnostic)
        return
    sys.stderr.write(diagnostic.render_json() if diagnostics_format == "json" else diagnostic.render_text())
    sys.stderr.flush()


def handles_errors(command: F) -> F:
    """Turn our exceptions into diagnostics and documented exit codes.

    A bug becomes a one-line "internal error" with exit status 70; the
    traceback is printed only when HARDBOILED_TRACEBACK=1.
    """

    @functools.wraps(command)
    def wrapper(*args: object, **kwargs: object) -> None:
        from hardboiled.support.deep import call_deep

        try:
            call_deep(command, *args, **kwargs)
        except HardboiledError as exc:
            fmt = kwargs.get("diagnostics_format", "text")
            for diagnostic in getattr(exc, "diagnostics", [exc.diagnostic]):
                report(diagnostic, fmt if isinstance(fmt, str) else "text")
            sys.exit(int(exc.exit_code))
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            report(Diagnostic("error", "interrupted"))
            sys.exit(int(ExitCode.INTERRUPTED))
        except Terminated:
            report(Diagnostic("error", "terminated"))
            sys.exit(int(ExitCode.TERMINATED))
        except BrokenPipeError:
            # The reader of our output went away (e.g. `| head`): not an error.
            silence_standard_output()
            sys.exit(int(ExitCode.SUCCESS))
        except Exception as exc:  # the last line of defence
            from hardboiled.support.environment import environment_fault

            if os.environ.get("HARDBOILED_TRACEBACK") == "1":
                traceback.print_exc()
            fault = environment_fault(exc)
            if fault is not None:  # the machine's doing (memory, a library that cannot load), not a bug
                report(fault.diagnostic)
                sys.exit(int(fault.exit_code))
            report(internal_error(exc))
            sys.exit(int(ExitCode.INTERNAL_ERROR))

    return cast(F, wrapper)


class DiagnosingGroup(click.Group):
    """click reports bad options in its own "Usage: ... Error: ..." block;
    hardboiled reports them like every other error (text or JSON, exit 2)."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        try:
            result = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as exc:
            context = exc.ctx if isinstance(exc, click.UsageError) else None
            if type(exc).__name__ == "NoArgsIsHelpError" and context is not None:
                # A bare command asks for help (click >= 8.2 raises this).
                click.echo(context.get_help(), err=True)
                sys.exit(exc.exit_code)
            notes: tuple[str, ...] = ()
            if context is not None:
                notes = (f"see '{context.command_path} --help'",)
            report(Diagnostic("error", exc.format_message(), notes=notes), _diagnostics_format_in(argv))
            sys.exit(exc.exit_code)
        except click.Abort:
            report(Diagnostic("error", "interrupted"))
            sys.exit(int(ExitCode.INTERRUPTED))
        if not standalone_mode:
            return result
        sys.exit(result if isinstance(result, int) else int(ExitCode.SUCCESS))


def _diagnostics_format_in(argv: list[str]) -> str:
    """--diagnostics-format as written on the command line, before click has
    parsed it (the error may be that parsing failed)."""
    for i, arg in enumerate(argv):
        if arg == "--diagnostics-format=json" or (arg == "--diagnostics-format" and argv[i + 1:i + 2] == ["json"]):
            return "json"
    return "text"
