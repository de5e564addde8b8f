"""Colour on standard error: on a terminal only, never when ``NO_COLOR`` is
set (https://no-color.org) or ``TERM`` is ``dumb``, so that logs, pipes
and CI output stay plain text, byte for byte what a test compares.

Diagnostics are coloured as gcc and clang colour theirs: the location in
bold, the severity in its colour, the caret in green.

This module imports only the standard library at load time: direct mode
(cli/direct.py), which answers before anything heavy loads, asks it
whether its streams are terminals.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (20 ms at every start)
if TYPE_CHECKING:
    from typing import Any

    from hardboiled.support.diagnostics import Diagnostic

SEVERITY_STYLES = {"error": "bold red", "warning": "bold magenta", "note": "bold cyan"}


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (False for a closed or replaced one)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def color_enabled(stream: Any) -> bool:
    return not (os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb") and is_terminal(stream)


def print_colored(diagnostic: Diagnostic) -> None:
    """``diagnostic`` on standard error as ``render_text`` lays it out, in colour."""
    from rich.console import Console
    from rich.text import Text

    lines = diagnostic.render_text().rstrip("\n").split("\n")
    head = Text()
    location = f"{diagnostic.location.filename}:{diagnostic.location.line}:{diagnostic.location.column}:" \
        if diagnostic.location else "hardboiled:"
    head.append(location, style="bold")
    head.append(f" {diagnostic.severity}:", style=SEVERITY_STYLES.get(diagnostic.severity, "bold"))
    head.append(lines[0][len(location) + len(diagnostic.severity) + 2:])
    out = [head]
    body = lines[1:]
    if diagnostic.location is not None and diagnostic.location.source_line is not None and len(body) >= 2:
        out.append(Text(body[0]))
        out.append(Text(body[1], style="bold green"))
        body = body[2:]
    for line in body:  # notes, and the lines of a note that has several
        note = Text()
        if line.startswith("note:"):
            note.append("note:", style=SEVERITY_STYLES["note"])
            line = line[len("note:"):]
        note.append(line)
        out.append(note)
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    for text in out:
        console.print(text)
