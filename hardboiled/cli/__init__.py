"""The ``hardboiled`` command (the pass pipeline it runs is hardboiled/pipeline/).

``main`` is the command's entry point (``run``, the console script's,
calls it and then ends the process at once). A repeated compile is
answered from its record before click loads (cli/direct.py); otherwise,
where a compile server runs, the command is handed to it (cli/client.py,
which loads next to nothing); anything else goes to the command line
(cli/commands.py)."""

from __future__ import annotations


def main(args: list[str] | None = None) -> None:
    import sys

    try:
        _main(args)
    except KeyboardInterrupt:
        sys.exit(interrupted())


def interrupted() -> int:
    """Ctrl-C before the command line took charge of it (while Python
    loads, or a record is replayed): an interruption, said in one line as
    the command line says it, not a traceback. The exit status."""
    import sys

    from hardboiled.support.diagnostics import ExitCode
    from hardboiled.support.fileio import discard_unfinished

    discard_unfinished()
    sys.stderr.write("hardboiled: error: interrupted\n")
    return int(ExitCode.INTERRUPTED)


def exit_status(code: str | int | None) -> int:
    """The status ``sys.exit(code)`` ends a process with; a message is
    printed, as Python prints it, and is status 1."""
    import sys

    if code is None or isinstance(code, int):
        return code or 0
    sys.stderr.write(f"{code}\n")
    return 1


def _main(args: list[str] | None) -> None:
    import sys

    from hardboiled.cli.client import forward

    if sys.stderr is None:  # started with its standard error closed (2>&-): its messages go nowhere
        import os

        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the process's stream, open until it exits
    argv = list(sys.argv[1:] if args is None else args)
    from hardboiled.cli.direct import main as run_here

    run_here(argv, forward)


COLLECTION_THRESHOLDS = (100_000, 20, 20)
"""The cyclic collector's thresholds in a command (Python's are 700, 10,
10). A command's objects stay alive until it ends (modules, classes, the
IR): in a cold compile the collector ran 85 times, found next to nothing
and took 13 ms. It now runs every 100,000 allocations (none in that
compile; a thousand-statement input still collects as it goes). The API
leaves its caller's collector as it is."""


def collect_less_often() -> None:
    """``COLLECTION_THRESHOLDS`` for this process (the command's, or the
    compile server's, whose workers inherit them)."""
    import gc

    gc.set_threshold(*COLLECTION_THRESHOLDS)


def run() -> None:
    """The ``hardboiled`` console script and ``python -m hardboiled``:
    ``main``, then the end of the process without the interpreter's
    teardown. Freeing every module and object (numpy, the IR, click) took
    30 to 60 ms after a compile, for nothing; so, as mypy ends its runs,
    the process does what an exit must do (the threads' and the exit
    handlers' clean-up, flushing the standard streams) and leaves."""
    collect_less_often()
    try:
        main()
        code: str | int | None = 0
    except SystemExit as exit:
        code = exit.code
    _leave(code)


def _leave(code: str | int | None) -> None:
    """Exit with ``code`` as ``sys.exit(code)`` would, skipping the
    interpreter's teardown; where a profiler, debugger or coverage tool
    watches (``python -m cProfile -m hardboiled``), the usual exit, which
    gives it control back."""
    import atexit
    import os
    import sys

    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    status = exit_status(code)
    if not 0 <= status <= 255:
        sys.exit(status)  # as the interpreter maps it
    threading = sys.modules.get("threading")  # never imported (a replayed compile): no other thread to join
    shutdown = getattr(threading, "_shutdown", None)
    try:
        if shutdown is not None:
            shutdown()  # what the interpreter does first: joins the other threads, runs their exit hooks
    except KeyboardInterrupt:
        pass  # a Ctrl-C while waiting for them: the interpreter too ignores it there, and keeps the status
    atexit._run_exitfuncs()  # the kept egglog child stopped, finalizers of temporary files run
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except Exception:
            sys.exit(status)  # the usual exit, which reports the failure as Python does (status 120)
    os._exit(status)


__all__ = ["COLLECTION_THRESHOLDS", "collect_less_often", "exit_status", "interrupted", "main", "run"]
