"""Reading inputs and writing outputs safely.

Outputs are written as one transaction (``OutputTransaction``: temporary
files in the same directories, then renames), so a failed or interrupted
run never leaves a half-written file, nor some of its outputs new and
others old.
"""

from __future__ import annotations

import _thread
import errno
import os
import stat
import sys

# Only modules Python has loaded before any of ours (``_signal`` and
# ``_thread`` are what ``signal`` and ``threading`` wrap): a direct answer
# (cli/direct.py) writes its files through this module, and contextlib,
# threading, weakref, signal and pathlib would cost it 6 ms.

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (20 ms at every start)
if TYPE_CHECKING:  # loaded on an error only: a direct answer (cli/direct.py) writes without them
    import signal as _signal
    from collections.abc import Callable

    from hardboiled.support.diagnostics import InputError
else:
    import _signal  # signal's own functions, without its enums (the type checker reads them as signal's)

STDIO = "-"


def display_name(path: str) -> str:
    return "<stdin>" if path == STDIO else path


def read_input_bytes(path: str) -> bytes:
    """The bytes of ``path``, or of standard input for ``-``."""
    if path == STDIO:
        if sys.stdin is None:  # started with its standard input closed (<&-)
            from hardboiled.support.diagnostics import Diagnostic, InputError, Location

            raise InputError(Diagnostic("error", "cannot read standard input: it is closed",
                                        Location(display_name(path), 1, 1)))
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        from hardboiled.support.diagnostics import Diagnostic, InputError, Location

        reason = exc.strerror or str(exc)
        raise InputError(
            Diagnostic("error", f"cannot read '{path}': {reason}", Location(path, 1, 1))
        ) from None


def pathlib_spelling(path: str) -> str:
    """``path`` as ``str(pathlib.PurePosixPath(path))`` spells it (repeated
    and trailing slashes and ``.`` parts gone, ``..`` kept, two leading
    slashes kept), without loading pathlib: where a file lands and how a
    diagnostic names it stay what they were when this module used Path."""
    if not path:
        return "."
    root = "//" if path.startswith("//") and not path.startswith("///") else "/" if path.startswith("/") else ""
    return root + "/".join(part for part in path.split("/") if part and part != ".") or "."


def open_new_private(path: str) -> int:
    """A descriptor, for writing, of a new file at ``path`` that only this
    user can read (mode 0600), as ``tempfile.mkstemp`` makes one: an error
    where anything, a link included, is already there."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)


def write_output(path: str, text: str, *, follow_links: bool = True) -> None:
    """Write ``text`` to ``path`` atomically, or to standard output for ``-``
    (``follow_links``: see ``OutputTransaction.add``)."""
    with OutputTransaction() as outputs:
        outputs.add(path, text, follow_links=follow_links)


def _read_umask() -> int:
    # os.umask can only be read by setting it; done once, before any thread.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def adopt_umask(mask: int) -> None:
    """Set the process's umask, and the copy read at import: the compile
    server's worker takes its client's (cli/server.py)."""
    global _UMASK
    os.umask(mask)
    _UMASK = mask

_COMMITS = _thread.allocate_lock()
_commits_held = False


def hold_commits() -> None:
    """From now on no transaction commits: one renaming its files finishes
    first, and any later one removes its temporaries and raises
    ``CommitsHeld``. Called when the process is interrupted, before the
    compile's thread is stopped, so that a signal never lands between two
    renames of one transaction."""
    global _commits_held
    with _COMMITS:
        _commits_held = True


def release_commits() -> None:
    """Undo ``hold_commits`` once the stopped compile has unwound: a
    process that goes on (a Python session whose compile was interrupted
    through the API) writes again."""
    global _commits_held
    with _COMMITS:
        _commits_held = False


before_commit: list[Callable[[], None]] = []
"""Checks run by every transaction before it commits, in the committing
thread, each of which may stop the process there (the compile server's
worker, whose client may be gone: cli/server.py). A thread that watches
for the same thing may be kept from the processor for longer than a
compile takes, on a loaded machine."""


class CommitsHeld(BaseException):
    """A transaction reached its commit after ``hold_commits``: the process
    is being stopped, and writes nothing more."""


class OutputTransaction:
    """Output files that appear together or not at all.

    Each file is staged in a temporary file beside its target (a rename
    from another directory could cross file systems, where it is neither
    atomic nor allowed); only when every file is staged are they renamed
    into place, one after the other, with no signal between them
    (``hold_commits``). A failure while staging (a full disk, a directory
    in the way, an interrupt) removes every temporary and replaces
    nothing. Only ``kill -9`` during the renames themselves (microseconds)
    can leave some files new and some old, each whole.

    * A file that exists keeps its permissions (overwriting a 0600 file
      must not make it readable by others); a new one gets ``mode`` masked
      by the umask, as ``open`` would do.
    * A symbolic link is written through (the link stays) when
      ``follow_links``, as for a file the user named; otherwise (a name
      hardboiled chose: in ``-o DIR``, a header beside ``-o FILE``) the
      link itself is replaced, so that a link planted there cannot
      redirect the output.
    * A target the user named that exists but is not a regular file
      (/dev/null, a FIFO, /dev/stdout) is written in place at the commit,
      since renaming over it would replace the device; a FIFO with no
      reader is an error, not a hang. Under a name hardboiled chose, such
      a file is an error.
    * Standard output (``-``) is written at the commit, after the files.
    """

    def __init__(self) -> None:
        self._staged: list[tuple[str, str]] = []
        self._in_place: list[tuple[str, bytes, bool]] = []
        self._stdout: list[str] = []
        self._temporaries: list[str] = []

    def __enter__(self) -> OutputTransaction:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()

    def add(self, path: str, data: str | bytes, *, follow_links: bool = True, mode: int = 0o666) -> None:
        if path == STDIO:
            self._stdout.append(data if isinstance(data, str) else data.decode("utf-8"))
            return
        target = pathlib_spelling(os.fspath(path))
        payload = data.encode("utf-8") if isinstance(data, str) else data
        with _NothingIfFailing(self, lambda: target):
            status = _status(target, follow_links)
            if status is not None and stat.S_ISDIR(status.st_mode):
                raise IsADirectoryError(errno.EISDIR, "a directory is in the way")
            if status is not None and not stat.S_ISREG(status.st_mode) and not stat.S_ISLNK(status.st_mode):
                if not follow_links:
                    raise OSError(errno.EEXIST, "something other than a file or a link is in the way "
                                  f"({_kind_of(status.st_mode)}); remove it")
                self._in_place.append((target, payload, follow_links))
                return
            if follow_links:
                target = os.path.realpath(target)
            permissions = stat.S_IMODE(status.st_mode) if status is not None and stat.S_ISREG(status.st_mode) \
                else mode & ~_UMASK
            self._staged.append((self._stage(target, payload, permissions), target))

    def _stage(self, target: str, payload: bytes, permissions: int) -> str:
        # The name is recorded before the file exists, so that an interrupt
        # at any point leaves nothing that discard() does not remove.
        directory, name = os.path.split(target)
        temporary = os.path.join(directory, f".{name}.{os.urandom(4).hex()}.tmp")
        _unfinished.add(self)  # from its first temporary until it commits or discards
        self._temporaries.append(temporary)
        fd = open_new_private(temporary)
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            os.fchmod(handle.fileno(), permissions)
        return temporary

    def commit(self) -> None:
        for check in before_commit:
            check()
        current = ["."]
        with _NothingIfFailing(self, lambda: current[0]), _COMMITS, _SignalsDeferred():
            if _commits_held:
                raise CommitsHeld()
            for temporary, target in self._staged:
                current[0] = target
                os.replace(temporary, target)
                self._temporaries.remove(temporary)
        self._staged = []
        _unfinished.discard(self)
        for target, payload, follow_links in self._in_place:
            _write_in_place(target, payload, follow_links)
        if self._stdout:
            write_standard_output(self._stdout)

    def discard(self) -> None:
        """Remove every temporary file; replace nothing."""
        _unfinished.discard(self)
        for temporary in self._temporaries:
            try:
                os.unlink(temporary)
            except OSError:
                pass  # never made (a read-only disk says so with EROFS, not ENOENT)
        self._temporaries = []
        self._staged = []


class _NothingIfFailing:
    """A failure in the block discards every temporary of ``transaction``;
    an OSError becomes the diagnostic for the file ``target()`` names then."""

    def __init__(self, transaction: OutputTransaction, target: Callable[[], str]):
        self.transaction, self.target = transaction, target

    def __enter__(self) -> None:
        pass

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is None:
            return
        self.transaction.discard()
        if isinstance(error, OSError):
            raise _cannot_write(self.target(), error) from None


class _SignalsDeferred:
    """On the main thread, where Python runs signal handlers, SIGINT and
    SIGTERM wait until the block is done (the compile's thread is stopped
    through ``hold_commits`` instead)."""

    def __enter__(self) -> None:
        self.previous = None
        if _on_main_thread() and hasattr(_signal, "pthread_sigmask"):
            self.previous = _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT, _signal.SIGTERM})

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if self.previous is not None:
            _signal.pthread_sigmask(_signal.SIG_SETMASK, self.previous)


def _on_main_thread() -> bool:
    """Whether this is the thread Python runs signal handlers on: where
    ``threading`` is not loaded, no thread of it runs, and this is that
    thread (hardboiled starts threads through ``threading`` alone)."""
    threading = sys.modules.get("threading")
    return threading is None or threading.current_thread() is threading.main_thread()


_unfinished: set[OutputTransaction] = set()
"""Transactions with temporary files, neither committed nor discarded:
each enters with its first temporary and leaves as it commits or
discards (one that never staged a file, abandoned, has nothing to remove
and is not kept)."""


def discard_unfinished() -> None:
    """Remove the temporaries of every transaction not committed: called
    when the process is stopped, in case the signal landed where a
    transaction could not clean up after itself (between two of its own
    steps, in another thread)."""
    for transaction in list(_unfinished):
        transaction.discard()


def _kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device")):
        if test(mode):
            return name
    return "a special file"


def _write_in_place(target: str, payload: bytes, follow_links: bool) -> None:
    """Write a special file the user named (/dev/null, a FIFO): opened
    without blocking, so that a FIFO with no reader is an error."""
    flags = os.O_WRONLY | os.O_TRUNC | getattr(os, "O_NONBLOCK", 0) \
        | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(target, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            exc = OSError(errno.ENXIO, "a FIFO with no reader")
        raise _cannot_write(target, exc) from None
    try:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
    except OSError as exc:
        raise _cannot_write(target, exc) from None


def write_bytes_atomically(target: str | os.PathLike[str], data: bytes, mode: int = 0o666, *,
                           follow_links: bool = True) -> None:
    """One file, replaced whole or not at all (``OutputTransaction``)."""
    with OutputTransaction() as outputs:
        outputs.add(os.fspath(target), data, follow_links=follow_links, mode=mode)


def make_output_directory(directory: str | os.PathLike[str]) -> None:
    """``-o DIR``, created with its parents if missing; a directory that
    cannot be made (a read-only or full disk, a file in the way) is a
    diagnostic, like a file that cannot be written."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise _cannot_write(directory, exc) from None


def _status(target: str, follow_links: bool) -> os.stat_result | None:
    """What is at ``target`` now (through a link when ``follow_links``), or
    None when nothing is."""
    try:
        return os.stat(target) if follow_links else os.lstat(target)
    except FileNotFoundError:
        return None


def silence_standard_output() -> None:
    """Point standard output at /dev/null: once it has failed (a reader
    gone, a full disk), what is still buffered must not fail again when
    Python flushes it at exit."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def write_standard_output(texts: list[str]) -> None:
    """Standard output closed (>&-) or full (>/dev/full) is a diagnostic,
    like any output that cannot be written; a reader that went away
    (BrokenPipeError) is the command line's to treat as the end."""
    if sys.stdout is None:
        from hardboiled.support.diagnostics import Diagnostic, InputError

        raise InputError(Diagnostic("error", "cannot write standard output: it is closed"))
    try:
        for text in texts:
            sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        from hardboiled.support.diagnostics import Diagnostic, InputError

        silence_standard_output()  # what is buffered goes nowhere now, not into a second failure at exit
        raise InputError(Diagnostic("error", f"cannot write standard output: {exc.strerror or exc}")) from None


def _cannot_write(target: str | os.PathLike[str], exc: OSError) -> InputError:
    from hardboiled.support.diagnostics import Diagnostic, InputError

    reason = exc.strerror or str(exc)
    return InputError(Diagnostic("error", f"cannot write '{target}': {reason}"))
