"""The three input kinds, and picking one stage out of an HL_DEBUG_CODEGEN log.

A debug log is recognised by its ``Lowering after NAME:`` headers; each
stage's body keeps its line offset in the log, so diagnostics point into
the log. A stage logged as ``(unchanged)`` stands for the last IR printed
before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hardboiled.support.diagnostics import error_at

DEFAULT_STAGE = "vectorizing"

# ``Lowering after NAME:`` starts a stage; ``(unchanged)`` stages have no body.
# One of Halide's headers ("clamping unsafe data-dependent accesses") has no
# colon.
_STAGE_HEADER_RE = re.compile(r"^Lowering after (.*?):?( \(unchanged\))?$")


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
    stages: list[Stage] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _STAGE_HEADER_RE.match(lines[i])
        if m is None:
            i += 1
            continue
        header_line = i + 1
        if m.group(2):
            stages.append(Stage(m.group(1), header_line, None))
            i += 1
            continue
        end = i + 1 + stage_body_line_count(lines, i + 1)
        stages.append(Stage(m.group(1), header_line, "\n".join(lines[i + 1 : end]) + "\n"))
        i = end
    return stages


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
    stages = split_log(text)
    last_body: Stage | None = None
    for stage in stages:
        if stage.body is not None:
            last_body = stage
        if stage.name == stage_name:
            if last_body is None:
                break
            return last_body.body or "", last_body.header_line, stage_name
    names = sorted({s.name for s in stages})
    first_line = text.split("\n", 1)[0]
    raise error_at(
        f"no stage named '{stage_name}' in this HL_DEBUG_CODEGEN log",
        filename,
        first_line,
        1,
        1,
        notes=("stages in this log: " + ", ".join(names),),
    )
