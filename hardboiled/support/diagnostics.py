"""User-facing diagnostics in the GNU format.

Every error a user can cause reaches them through this module, as

    file:line:col: error: message
    <the source line>
    <a caret under the column>

followed by optional ``note:`` lines. Lines and columns count from 1.
Nothing here prints a traceback.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field

from hardboiled.support.signals import Terminated as Terminated  # re-exported: SIGTERM sits with the exit codes


class ExitCode(enum.IntEnum):
    """Process exit statuses; documented in docs/cli.md and stable."""

    SUCCESS = 0
    SELECTION_MISS = 1
    INPUT_ERROR = 2
    """Usage errors and unusable input (syntax errors, unknown stage, ...)."""
    TOOLCHAIN_FAILURE = 3
    RESOURCE_LIMIT = 4
    VERIFICATION_MISMATCH = 5
    KERNEL_CRASHED = 6
    """The generated code, run by --run, crashed (a signal) or passed its
    time or memory limit; it runs in a child process, so hardboiled does not."""
    VERIFICATION_UNPROVEN = 7
    """Verification found no difference, but the error bound of some output
    elements is wider than the output's range (or infinite): the comparison
    there proves nothing. --accept-unproven makes it success."""
    INTERNAL_ERROR = 70
    """A bug in hardboiled (os.EX_SOFTWARE)."""
    INTERRUPTED = 130
    """SIGINT (Ctrl-C): 128 + 2, as a shell reports it."""
    TERMINATED = 143
    """SIGTERM: 128 + 15."""




EXIT_CODE_MEANINGS = {
    ExitCode.SUCCESS: "success",
    ExitCode.SELECTION_MISS: "a store marked for an accelerator could not be lowered (or --require found none)",
    ExitCode.INPUT_ERROR: "usage or input error: bad options, unreadable or malformed input, unwritable output",
    ExitCode.TOOLCHAIN_FAILURE: "the C compiler or nvcc failed, or a library of the installation cannot load",
    ExitCode.RESOURCE_LIMIT: "a time or memory limit: egglog, the reference interpreter, or the machine's",
    ExitCode.VERIFICATION_MISMATCH: "verification: the rewritten program computed different results",
    ExitCode.KERNEL_CRASHED: "the generated code crashed or passed its limits when --run ran it",
    ExitCode.VERIFICATION_UNPROVEN: "verification: no difference found, but some elements' error bounds are "
    "wider than the output's range (--accept-unproven accepts that)",
    ExitCode.INTERNAL_ERROR: "internal error: a bug in hardboiled",
    ExitCode.INTERRUPTED: "interrupted (SIGINT)",
    ExitCode.TERMINATED: "terminated (SIGTERM)",
}
"""One line per exit status, for --help and the man page (docs/cli.md has
the full table)."""


@dataclass(frozen=True, slots=True)
class Location:
    """A point in a named input; ``source_line`` is the text of that line."""

    filename: str
    line: int
    column: int
    source_line: str | None = None


@dataclass(frozen=True, slots=True)
class Diagnostic:
    severity: str
    message: str
    location: Location | None = None
    notes: tuple[str, ...] = field(default=())

    def render_text(self) -> str:
        loc = self.location
        if loc is None:
            head = f"hardboiled: {self.severity}: {self.message}"
        else:
            head = f"{loc.filename}:{loc.line}:{loc.column}: {self.severity}: {self.message}"
        lines = [head]
        if loc is not None and loc.source_line is not None:
            shown, column = _window(loc.source_line, loc.column)
            lines.append(_printable(shown))
            lines.append(_caret_line(shown, column))
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, object]:
        loc = self.location
        return {
            "severity": self.severity,
            "message": self.message,
            "file": loc.filename if loc else None,
            "line": loc.line if loc else None,
            "column": loc.column if loc else None,
            "source_line": loc.source_line if loc else None,
            "notes": list(self.notes),
        }

    def render_json(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True) + "\n"


SOURCE_LINE_WIDTH = 1000
"""Longer source lines (binary junk, a dump joined onto one line) are shown as a window
around the column."""


def _window(source_line: str, column: int) -> tuple[str, int]:
    """The part of ``source_line`` to show, and the caret's column in it."""
    if len(source_line) <= SOURCE_LINE_WIDTH:
        return source_line, column
    start = max(0, min(column - 1 - SOURCE_LINE_WIDTH // 2, len(source_line) - SOURCE_LINE_WIDTH))
    end = start + SOURCE_LINE_WIDTH
    head = "..." if start > 0 else ""
    tail = "..." if end < len(source_line) else ""
    return head + source_line[start:end] + tail, column - start + len(head)


def _printable(text: str) -> str:
    # Binary junk must not reach the terminal; one '?' per character keeps
    # the caret aligned.
    return "".join(ch if (ch.isprintable() and ch != "\ufffd") or ch == "\t" else "?" for ch in text)


def _caret_line(source_line: str, column: int) -> str:
    # Keep tabs so that the caret lines up under tab-indented source.
    prefix = "".join(ch if ch == "\t" else " " for ch in source_line[: max(column - 1, 0)])
    return prefix + "^"


class HardboiledError(Exception):
    """An error to be reported to the user as a diagnostic.

    ``exit_code`` is the documented process exit status for this class of
    failure (see docs/cli.md).
    """

    exit_code = ExitCode.INPUT_ERROR

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def internal_error(exc: BaseException) -> Diagnostic:
    """How a bug in hardboiled reaches the user: one line, no traceback."""
    return Diagnostic("error", f"internal error: {type(exc).__name__}: {exc}",
                      notes=("this is a bug in hardboiled; set HARDBOILED_TRACEBACK=1 for details",))


class InputError(HardboiledError):
    """Malformed or unusable input: syntax errors, unknown stages, bad types."""

    exit_code = ExitCode.INPUT_ERROR


def statement_location(filename: str, source: str, line: int | None) -> Location | None:
    """Where the statement on ``line`` of ``source`` starts (its first
    non-blank column); None without a line."""
    if line is None:
        return None
    lines = source.split("\n")
    text = lines[line - 1] if 0 < line <= len(lines) else None
    column = len(text) - len(text.lstrip()) + 1 if text else 1
    return Location(filename, line, column, text)


def error_at(
    message: str,
    filename: str,
    text: str | None,
    line: int,
    column: int,
    notes: tuple[str, ...] = (),
    line_offset: int = 0,
) -> InputError:
    """Build an InputError pointing at ``line``/``column`` of ``text``.

    ``line`` counts within ``text``; ``line_offset`` is added when ``text`` is
    a slice of a larger file (a stage inside a debug log).
    """
    source_line = None
    if text is not None:
        lines = text.split("\n")
        if 1 <= line <= len(lines):
            source_line = lines[line - 1].rstrip("\r")
    location = Location(filename, line + line_offset, max(column, 1), source_line)
    return InputError(Diagnostic("error", message, location, notes))
