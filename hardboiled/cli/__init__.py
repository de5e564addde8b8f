"""The ``hardboiled`` command (the pass pipeline it runs is hardboiled/pipeline/).

``main`` is the command's entry point. Where a compile server runs, the
command is handed to it (cli/client.py, which loads next to nothing);
otherwise a repeated compile is answered from its record before click
loads (cli/direct.py), and anything else goes to the command line
(cli/commands.py)."""

from __future__ import annotations


def main(args: list[str] | None = None) -> None:
    import sys

    try:
        _main(args)
    except KeyboardInterrupt:
        # Ctrl-C before the command line took charge of it (while Python
        # loads, or a record is replayed): an interruption, not a traceback.
        from hardboiled.support.diagnostics import ExitCode
        from hardboiled.support.fileio import discard_unfinished

        discard_unfinished()
        sys.stderr.write("hardboiled: error: interrupted\n")
        sys.exit(int(ExitCode.INTERRUPTED))


def _main(args: list[str] | None) -> None:
    import sys

    from hardboiled.cli.client import forward

    if sys.stderr is None:  # started with its standard error closed (2>&-): its messages go nowhere
        import os

        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the process's stream, open until it exits
    argv = list(sys.argv[1:] if args is None else args)
    code = forward(argv)
    if code is not None:
        sys.exit(code)
    from hardboiled.cli.direct import main as run_here

    run_here(argv)


__all__ = ["main"]
