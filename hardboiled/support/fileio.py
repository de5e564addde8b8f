"""Reading inputs and writing outputs safely.

Outputs are written atomically (a temporary file in the same directory, then
``os.replace``), so a failed or interrupted run never leaves a half-written
file behind.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loaded on an error only: a direct answer (cli/direct.py) writes without them
    from hardboiled.support.diagnostics import InputError

STDIO = "-"


def display_name(path: str) -> str:
    return "<stdin>" if path == STDIO else path


def read_input_bytes(path: str) -> bytes:
    """The bytes of ``path``, or of standard input for ``-``."""
    if path == STDIO:
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        from hardboiled.support.diagnostics import Diagnostic, InputError, Location

        reason = exc.strerror or str(exc)
        raise InputError(
            Diagnostic("error", f"cannot read '{path}': {reason}", Location(path, 1, 1))
        ) from None


def write_output(path: str, text: str, *, follow_links: bool = True) -> None:
    """Write ``text`` to ``path`` atomically, or to standard output for ``-``
    (``follow_links``: see ``write_bytes_atomically``)."""
    if path == STDIO:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_bytes_atomically(Path(path), text.encode("utf-8"), follow_links=follow_links)


def _read_umask() -> int:
    # os.umask can only be read by setting it; done once, before any thread.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def write_bytes_atomically(target: Path, data: bytes, mode: int = 0o666, *, follow_links: bool = True) -> None:
    """A temporary file beside ``target``, then a rename: readers see the old
    file or the whole new one (a rename from another directory could cross
    file systems, where it is neither atomic nor allowed).

    * A file that exists keeps its permissions (overwriting a 0600 file
      must not make it readable by others); a new one gets ``mode`` masked
      by the umask, as ``open`` would do (mkstemp alone would leave 0600).
    * A symbolic link is written through (the link stays) when
      ``follow_links``, as for a file the user named; otherwise (a file
      hardboiled names inside ``-o DIR``) the link itself is replaced, so
      that a link planted there cannot redirect the output.
    * A target that exists but is not a regular file (/dev/null, a FIFO,
      /dev/stdout) is written in place, since renaming over it would
      replace the device.
    """
    try:
        status = _status(target, follow_links)
        if status is not None and not stat.S_ISREG(status.st_mode) and not stat.S_ISLNK(status.st_mode):
            flags = os.O_WRONLY | os.O_TRUNC | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(os.open(target, flags), "wb") as handle:
                handle.write(data)
            return
        if follow_links:
            target = Path(os.path.realpath(target))
        if status is not None and stat.S_ISREG(status.st_mode):
            permissions = stat.S_IMODE(status.st_mode)
        else:
            permissions = mode & ~_UMASK
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise _cannot_write(target, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            os.fchmod(handle.fileno(), permissions)
        os.replace(tmp_name, target)
    except BaseException as exc:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise _cannot_write(target, exc) from None
        raise


def make_output_directory(directory: Path) -> None:
    """``-o DIR``, created with its parents if missing; a directory that
    cannot be made (a read-only or full disk, a file in the way) is a
    diagnostic, like a file that cannot be written."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _cannot_write(directory, exc) from None


def _status(target: Path, follow_links: bool) -> os.stat_result | None:
    """What is at ``target`` now (through a link when ``follow_links``), or
    None when nothing is."""
    try:
        return os.stat(target) if follow_links else os.lstat(target)
    except FileNotFoundError:
        return None


def _cannot_write(target: Path, exc: OSError) -> InputError:
    from hardboiled.support.diagnostics import Diagnostic, InputError

    reason = exc.strerror or str(exc)
    return InputError(Diagnostic("error", f"cannot write '{target}': {reason}"))
