"""Direct mode: a repeated ``compile`` answered before anything heavy loads.

A build runs the same ``hardboiled compile`` command again and again on
inputs that did not change. The result cache (support/cache.py) answers
such a run, but only once Python has loaded click and the command line.
Direct mode (after ccache's mode of that name) answers it from the
invocation itself:

* a ``compile`` whose every input was answered by the result cache records
  what it did: the files it read, with a digest of their bytes; the files
  it wrote; what it printed; its exit status. The record's key is made of
  the arguments, the working directory, the environment variables
  hardboiled reads (``ENVIRONMENT``), which of standard output and error
  are terminals, and the identity of hardboiled's code and egglog's build;
* the next run with that key checks that every file read still has the
  same bytes, then writes the same files (atomically, as ever) and prints
  the same text, without importing click, the parser or the selector.

Anything unexpected (no record, a changed input, a file that cannot be
written, a malformed record) falls through to the ordinary command line,
which gives the same answer the slow way. What a terminal shows (colour,
tables sized to it) is never recorded.

This module is the ``hardboiled`` command's entry point, so a replay
imports nothing beyond the standard library and the small support modules.
A ``compile`` it cannot answer starts the spare egglog child
(select/spare.py, ``start_spare``) before loading the command line.
"""

from __future__ import annotations

import os
import sys

from hardboiled.cli.terminal import is_terminal
from hardboiled.support.digest import hex_content_digest
from hardboiled.support.signals import Terminated

# Only what Python has loaded before any of ours: a replay imports none of
# json, hashlib (OpenSSL), pathlib, signal (enum), contextlib or threading,
# which would cost it more than Python's own start (15 ms against 10 here).
# ``_signal`` is what ``signal`` wraps (its handlers as numbers, not enums).

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (20 ms at every start)
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Callable
    from typing import Any
else:
    import _signal  # signal's own functions, without its enums (the type checker reads them as signal's)

ENVIRONMENT = ("CC", "NVCC", "HARDBOILED_CACHE_DIR", "HARDBOILED_RULES_DIR", "HARDBOILED_TRACEBACK",
               "XDG_CACHE_HOME", "HOME", "NO_COLOR", "TERM", "COLUMNS", "PATH")
"""Every environment variable that can change what ``compile`` does or
prints (tests/cli/test_compile_time.py checks the code reads no other)."""

_RECORD_SHAPE = {"reads": [[str]], "writes": [[str]], "stdout": str, "stderr": str, "exit_code": int}

DIRECTORY = "direct"
"""Records live in this subdirectory of the cache directory."""


def main(args: list[str] | None = None, forward: Callable[[list[str]], int | None] | None = None) -> None:
    """The ``hardboiled`` command: a recorded answer, else, where
    ``forward`` hands it to a compile server (cli/__init__.py passes
    cli/client.py's; the server's worker, which runs the command, none),
    the server's, else the command line in this process. The record comes
    first: it answers here in the time the server's socket alone would
    take. SIGTERM unwinds it like an interrupt (temporary files removed,
    children killed, nothing half-written) and exits 143."""
    argv = list(sys.argv[1:] if args is None else args)
    try:
        previous = _signal.signal(_signal.SIGTERM, _terminate)
    except ValueError:
        previous = None  # not the main thread (a caller embedding the command): its own handlers stand
    try:
        try:
            # Inside the try: a SIGTERM that lands while this loads is an
            # ordinary termination too, not a traceback.
            from hardboiled.support.limits import fit_address_limit

            fit_address_limit()
            _main(argv, forward)
        finally:
            # The work is done (or undone): a SIGTERM from here on, during the
            # interpreter's shutdown, ends the process as it would have before,
            # not with a traceback from an exit handler.
            if previous is not None:
                _signal.signal(_signal.SIGTERM, previous)
    except Terminated:
        # Also one that landed in the finally above, before the handler was
        # put back. Another SIGTERM is ignored while the clean-up runs (it
        # must not stop half-way); then the previous handler is back.
        if previous is not None:
            _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
        from hardboiled.support.diagnostics import ExitCode
        from hardboiled.support.fileio import discard_unfinished

        discard_unfinished()
        if previous is not None:
            _signal.signal(_signal.SIGTERM, previous)
        sys.stderr.write("hardboiled: error: terminated\n")
        sys.exit(int(ExitCode.TERMINATED))


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def _main(argv: list[str], forward: Callable[[list[str]], int | None] | None = None) -> None:
    code = replay(argv)
    if code is None and forward is not None:
        code = forward(argv)
    if code is not None:
        sys.exit(code)
    if _may_saturate(argv):
        # The egglog child starts now, beside click and the command line,
        # not once the compile knows it saturates (select/eqsat.py).
        from hardboiled.select import spare

        spare.start_spare()
        try:
            _run_command_line(argv)
        finally:
            spare.discard_spare()  # one this command did not take (a cache hit, an error)
        return
    _run_command_line(argv)


def _run_command_line(argv: list[str]) -> None:
    from hardboiled.cli import commands, outputs

    if argv[:1] != ["compile"]:
        commands.main.main(argv)
        return
    recording = _Recording(argv)
    outputs.cached_compile_observers.append(recording.note)
    try:
        with recording:
            commands.main.main(argv)
    except SystemExit as exit:
        recording.finish(exit.code)
        raise
    finally:
        outputs.cached_compile_observers.remove(recording.note)


def _may_saturate(argv: list[str]) -> bool:
    """Whether the command line may be a compile that saturates at the
    default memory limit (read without click: a wrong guess only starts a
    child that is not used, or starts it later)."""
    if argv[:1] != ["compile"]:
        return False
    return not any(arg in ("--help", "-h") or arg.startswith("--egglog-memory") for arg in argv)


# --------------------------------------------------------------------------
# Replaying
# --------------------------------------------------------------------------


def replay(argv: list[str]) -> int | None:
    """Answer ``argv`` from its record: the exit status, or None when the
    ordinary command line must run."""
    if argv[:1] != ["compile"]:
        return None
    directory = _cache_directory_named_in(argv)
    if directory is None:
        return None
    from hardboiled.support.cache import RecordCache

    records = RecordCache(os.path.join(directory, DIRECTORY))
    key = invocation_key(argv)
    if not _written_by_this_user_alone(records.entry_path(key), directory):
        return None
    entry = records.get(key, _RECORD_SHAPE)
    if entry is None:
        return None
    from hardboiled.support.fileio import OutputTransaction, pathlib_spelling

    try:
        for path, digest in entry["reads"]:
            with open(path, "rb") as handle:
                if hex_content_digest(handle.read()) != digest:
                    return None
        writes = [(str(path), str(text), how == "follow") for path, text, how in entry["writes"]]
        if not all(os.path.isdir(os.path.dirname(pathlib_spelling(path)) or ".") and _named_on_command_line(path, argv)
                   for path, _, _ in writes):
            return None
        stdout, stderr, code = str(entry["stdout"]), str(entry["stderr"]), int(entry["exit_code"])
        with OutputTransaction() as outputs:
            for path, text, follow_links in writes:
                outputs.add(path, text, follow_links=follow_links)
    except Exception:  # a stale or damaged record, an output that cannot be written: the
        return None     # ordinary command line answers (and reports what is wrong)
    failed = _print_recorded(stdout, argv)
    if failed is not None:
        return failed
    sys.stderr.write(stderr)
    return code


def _print_recorded(stdout: str, argv: list[str]) -> int | None:
    """Print what the run printed; the exit status where standard output
    cannot take it (closed, full: the diagnostic the command line gives; a
    reader that went away: success, as the command line ends), else None."""
    if not stdout:
        return None
    from hardboiled.support.fileio import silence_standard_output, write_standard_output

    try:
        write_standard_output([stdout])
    except BrokenPipeError:
        silence_standard_output()
        return 0
    except Exception as exc:
        from hardboiled.support.diagnostics import HardboiledError

        if not isinstance(exc, HardboiledError):  # only "cannot write standard output" is the user's
            raise
        from hardboiled.cli.errors import _diagnostics_format_in, report

        report(exc.diagnostic, _diagnostics_format_in(argv))
        return int(exc.exit_code)
    return None


def _written_by_this_user_alone(record: str, cache_directory: str) -> bool:
    """A record tells what files to write: one that another user could have
    planted (it, or a directory up to the cache directory, is writable by
    others, another user's, or a symbolic link) is not followed."""
    from hardboiled.support.cache import path_problem
    from hardboiled.support.fileio import pathlib_spelling

    # Spelled as pathlib spells them, which leaves ``..`` alone: the walk
    # checks the directories the record is read through, links included.
    path, top = pathlib_spelling(record), pathlib_spelling(cache_directory)
    while path_problem(path) is None:
        parent = os.path.dirname(path) or "."
        if path == top or parent == path:
            return True
        path = parent
    return False


def _named_on_command_line(path: str, argv: list[str]) -> bool:
    """Whether the command line names ``path``, its directory, or a file in
    its directory (a header goes beside the -o file): a record never writes
    where the command line did not point."""
    target = os.path.abspath(path)
    places = {os.path.abspath(arg) for arg in argv if not arg.startswith("-") or arg == "-"}
    places |= {os.path.dirname(place) for place in places}
    return target in places or os.path.dirname(target) in places


def _cache_directory_named_in(argv: list[str]) -> str | None:
    """The cache directory as the arguments name it, read without click. A
    misreading only looks in the wrong place: records are keyed by the
    whole argument list, so it can miss but never answer wrongly."""
    directory = None
    for i, arg in enumerate(argv):
        if arg == "--no-cache":
            return None
        if arg == "--cache-dir" and i + 1 < len(argv):
            directory = argv[i + 1]
        elif arg.startswith("--cache-dir="):
            directory = arg.partition("=")[2]
    if directory is not None:
        return directory
    from hardboiled.support.identity import default_cache_dir

    return default_cache_dir()


def invocation_key(argv: list[str]) -> str:
    from hardboiled.support.identity import code_signature, egglog_identity

    try:
        cwd = os.getcwd()
    except OSError:
        cwd = ""
    identity = (
        ("argv", tuple(argv)), ("cwd", cwd), ("env", tuple((name, os.environ.get(name)) for name in ENVIRONMENT)),
        ("terminals", (is_terminal(sys.stdout), is_terminal(sys.stderr))),
        ("code", code_signature()), ("egglog", egglog_identity()), ("python", sys.version),
    )
    # repr of strings, numbers, None, booleans and tuples of them is one
    # text for one value (and the Python build is part of the value).
    return hex_content_digest(repr(identity).encode("utf-8", "surrogateescape"))


# --------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------


class _Tee:
    """A standard stream that keeps a copy of what is written to it."""

    def __init__(self, stream: Any):
        self._stream = stream
        self.text: list[str] = []

    def write(self, text: str) -> int:
        self.text.append(text)
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Recording:
    """What one ``compile`` run read, wrote and printed."""

    def __init__(self, argv: list[str]):
        self.argv = argv
        self.record: dict[str, Any] | None = None
        self.cache_directory: str | None = None

    def __enter__(self) -> None:
        self.saved = sys.stdout, sys.stderr
        if sys.stdout is None or sys.stderr is None:  # a closed stream (>&-): nothing to record or replay
            self.record_nothing = True
            return
        self.record_nothing = False
        self.stdout, self.stderr = _Tee(sys.stdout), _Tee(sys.stderr)
        sys.stdout, sys.stderr = self.stdout, self.stderr

    def __exit__(self, *exc: object) -> None:
        sys.stdout, sys.stderr = self.saved

    def note(self, cache_directory: str, reads: list[tuple[str, bytes]], writes: list[tuple[str, str, str]]) -> None:
        """``compile`` tells of a run the result cache answered in full: the
        files it read (inputs, schedule) with their bytes, and the files it
        wrote (cli/outputs.py, ``cached_compile_observers``)."""
        self.cache_directory = cache_directory
        self.record = {"reads": [(path, hex_content_digest(data)) for path, data in reads], "writes": writes}

    def finish(self, exit_code: object) -> None:
        if self.record is None or self.cache_directory is None or self.record_nothing:
            return
        stderr = "".join(self.stderr.text)
        if stderr and is_terminal(self.saved[1]):
            return  # shaped for this terminal (colour, its width)
        from hardboiled.support.cache import RecordCache

        code = 0 if exit_code is None else exit_code if isinstance(exit_code, int) else 1
        record = dict(self.record, stdout="".join(self.stdout.text), stderr=stderr, exit_code=code)
        RecordCache(os.path.join(self.cache_directory, DIRECTORY)).put(invocation_key(self.argv), record)
