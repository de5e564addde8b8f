"""The three input kinds, and picking one stage out of an HL_DEBUG_CODEGEN log.

A debug log is recognised by its ``Lowering after NAME:`` headers; each
stage's body keeps its line offset in the log, so diagnostics point into
the log. A stage logged as ``(unchanged)`` stands for the last IR printed
before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from hardboiled.support.diagnostics import error_at

DEFAULT_STAGE = "vectorizing"

# ``Lowering after NAME:`` starts a stage; ``(unchanged)`` stages have no body.
# One of Halide's headers ("clamping unsafe data-dependent accesses") has no
# colon.
_STAGE_HEADER_RE = re.compile(r"Lowering after (.*?):?( \(unchanged\))?$")
"""A header line (matched from its start to the line's end)."""


@dataclass(frozen=True, slots=True)
class Stage:
    """One "Lowering after NAME:" block of a debug log."""

    name: str
    header_line: int
    """1-based line of the header in the log."""
    body: str | None
    """The IR text; None for an "(unchanged)" stage."""


def decode_input(data: bytes, filename: str) -> str:
    """Decode input bytes as UTF-8, or explain where they stop being text."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        prefix = data[: exc.start].decode("utf-8", errors="replace")
        line = prefix.count("\n") + 1
        column = len(prefix) - (prefix.rfind("\n") + 1) + 1
        text = data.decode("utf-8", errors="replace")
        raise error_at(
            f"input is not UTF-8 text (byte 0x{data[exc.start]:02x}); expected Halide IR",
            filename,
            text,
            line,
            column,
        ) from None


def split_log(text: str) -> list[Stage]:
    """All stages of an HL_DEBUG_CODEGEN log, in order."""
    return [Stage(name, line, None if body is None else _body_text(text, body))
            for name, line, body in _stage_spans(text)]


def _stage_spans(text: str) -> Iterator[tuple[str, int, tuple[int, int] | None]]:
    """Each stage's name, header line and body (its offsets in ``text``;
    None for an "(unchanged)" stage), found with string searches: a log is
    large (half a megabyte for a small pipeline), and a compile takes one
    of its 30 stages. A header is a line that starts with ``LOG_MARKER``
    after the last body ended; a body runs to ``stage_body_line_count``'s
    end."""
    position, line = 0, 1
    while (found := text.find(LOG_MARKER, position)) >= 0:
        if found and text[found - 1] != "\n":  # the marker inside a line
            line += text.count("\n", position, found + 1)
            position = found + 1
            continue
        line += text.count("\n", position, found)
        header_end = text.find("\n", found)
        header_end = len(text) if header_end < 0 else header_end
        m = _STAGE_HEADER_RE.match(text, found, header_end)
        assert m is not None  # the pattern takes any line that starts with the marker
        body_start = header_end + 1
        if m.group(2):
            yield m.group(1), line, None
            position = body_start
        else:
            body_end = _body_end(text, body_start)
            yield m.group(1), line, (body_start, body_end)
            position = body_end
        line += text.count("\n", found, position)


def _body_end(text: str, start: int) -> int:
    """Where the line that ends the body starting at ``start`` begins (one
    past the text's end where the body runs to its last line): its first
    blank line, unless a let-expression store may make a blank line part
    of the IR, where the lines are counted as ``stage_body_line_count``
    counts them."""
    blank = text.find("\n\n", start - 1)
    if blank >= 0:
        end = blank + 1
    else:
        end = len(text) if text.endswith("\n") and start <= len(text) else len(text) + 1
    if text.find("] = \n", start, end) < 0 and not (end > len(text) and text.endswith("] = ")):
        return end
    lines = text[start:].split("\n")
    return start + sum(len(body_line) + 1 for body_line in lines[:stage_body_line_count(lines, 0)])


def _body_text(text: str, body: tuple[int, int]) -> str:
    start, end = body
    return text[start:end - 1] + "\n"


def stage_body_line_count(lines: list[str], start: int) -> int:
    """How many lines from ``start`` belong to a stage body.

    A body ends at a blank line, with one exception: Halide prints a stored
    let-expression as ``buf[i] = `` followed by ``let x = v in`` lines and
    the body, and then an empty line, which is part of the IR.
    """
    i = start
    in_let_store = blank_is_ir = False
    while i < len(lines):
        line = lines[i]
        if line == "":
            if not blank_is_ir:
                break
            blank_is_ir = False
        elif line.endswith("] = "):
            in_let_store = True
        elif in_let_store:
            stripped = line.lstrip()
            if not (stripped.startswith("let ") and stripped.endswith(" in")):
                in_let_store = False
                blank_is_ir = True
        i += 1
    return i - start


LOG_MARKER = "Lowering after "
"""What a line of HL_DEBUG_CODEGEN's log starts with where a stage begins."""


def is_debug_log(text: str) -> bool:
    """Whether a line of ``text`` starts a stage. A plain substring search:
    a multi-line ``^`` is tried by ``re`` at every position, which took 2.5 %
    of reading a dump that is not a log."""
    return text.startswith(LOG_MARKER) or ("\n" + LOG_MARKER) in text


def select_stage(text: str, filename: str, stage_name: str) -> tuple[str, int, str]:
    """The body of ``stage_name`` in a log: (text, line offset, stage name).

    An "(unchanged)" stage resolves to the last stage printed before it,
    because that is the IR the pass left behind.
    """
    stages = []
    last_body: tuple[int, tuple[int, int]] | None = None
    for name, line, body in _stage_spans(text):
        stages.append(name)
        if body is not None:
            last_body = line, body
        if name == stage_name:
            if last_body is None:
                break
            return _body_text(text, last_body[1]), last_body[0], stage_name
    names = sorted(set(stages))
    first_line = text.split("\n", 1)[0]
    raise error_at(
        f"no stage named '{stage_name}' in this HL_DEBUG_CODEGEN log",
        filename,
        first_line,
        1,
        1,
        notes=("stages in this log: " + ", ".join(names),),
    )
