"""Reading inputs and writing outputs safely.

Outputs are written atomically (a temporary file in the same directory, then
``os.replace``), so a failed or interrupted run never leaves a half-written
file behind.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from .diagnostics import Diagnostic, InputError, Location

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
        reason = exc.strerror or str(exc)
        raise InputError(
            Diagnostic("error", f"cannot read '{path}': {reason}", Location(path, 1, 1))
        ) from None


def write_output(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically, or to standard output for ``-``."""
    if path == STDIO:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
