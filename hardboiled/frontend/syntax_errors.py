"""Syntax errors in Halide's terms: what the parser expected, named as a
reader of Halide IR would name it, at the right place in the input."""

from __future__ import annotations

import re
from collections.abc import Iterable

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from hardboiled.frontend.grammar import halide_parser
from hardboiled.support.diagnostics import InputError, error_at

# A line that opens a block like a loop does: `word (...) {` or `word<API> (...) {`.
_BLOCK_HEADER_RE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<[^>]*>)?\s*\(.*\{\s*$")


_TERMINAL_NAMES = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a float literal",
    "STRING": "a string",
    "_NL": "end of line",
    "$END": "end of input",
    "TYPE_PREFIX": "a type such as (int32)",
    "HANDLE_TYPE": "a handle type such as (void *)",
    "REINTERPRET": "reinterpret<...>",
    "FOR_KIND": "a loop kind",
    "DEVICE_API": "a device API such as <CUDA>",
    "LINKAGE": "a function linkage",
    "MODULE_HEADER": "a module header",
    "BUFFER_BODY": "a buffer body",
    "_ALLOC_TIMES": "' * '",
    "BIN_OP": "an operator",
}

_STATEMENT_KEYWORDS = frozenset(
    "let assert allocate free produce consume if else predicate atomic fork acquire "
    "hoisted_storage for parallel unrolled vectorized extern gpu_block gpu_thread gpu_lane "
    "module buffer".split()
)


def _describe_terminal(name: str) -> str:
    if name in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[name]
    for term in halide_parser().terminals:
        if term.name == name and term.pattern.type == "str":
            return f"'{term.pattern.value}'"
    return name.lower()


def _describe_token(token: Token) -> str:
    if token.type == "$END":
        return "end of input"
    if token.type == "_NL":
        return "end of line"
    value = str(token)
    if len(value) > 40:
        value = value[:37] + "..."
    return f"'{value}'"


def _expected_list(names: Iterable[str]) -> str:
    # The allocation-extent separator only matters inside `allocate [...]`;
    # listing it elsewhere would just confuse.
    described = sorted({_describe_terminal(n) for n in names if n != "_ALLOC_TIMES"})
    if len(described) > 8:
        described = described[:8] + ["..."]
    return ", ".join(described)


def syntax_error(exc: UnexpectedInput, text: str, filename: str, line_offset: int) -> InputError:
    lines = text.split("\n")
    if isinstance(exc, UnexpectedCharacters):
        position = exc.pos_in_stream if exc.pos_in_stream is not None else len(text)
        ch = text[position] if position < len(text) else ""
        what = repr(ch) if not ch.isprintable() or ch == "'" else f"'{ch}'"
        message = f"unexpected character {what}"
        if ch == "\x00" or not ch.isprintable():
            message += "; this does not look like Halide IR text"
        return error_at(message, filename, text, exc.line, exc.column, line_offset=line_offset)
    if isinstance(exc, (UnexpectedToken, UnexpectedEOF)):
        token = getattr(exc, "token", None)
        expected = getattr(exc, "expected", None) or getattr(exc, "accepts", None) or set()
        if token is None or token.type == "$END":
            # Point just past the last non-blank line: where more text was due.
            last = len(lines)
            while last > 1 and not lines[last - 1].strip():
                last -= 1
            return error_at(
                "unexpected end of input; the IR is truncated",
                filename,
                text,
                last,
                len(lines[last - 1]) + 1,
                notes=(f"expected {_expected_list(expected)}",),
                line_offset=line_offset,
            )
        line, column = token.line or 1, token.column or 1
        source_line = lines[line - 1] if line - 1 < len(lines) else ""
        first_word = _BLOCK_HEADER_RE.match(source_line)
        if first_word is not None and first_word.group(1) not in _STATEMENT_KEYWORDS:
            return error_at(
                f"unknown statement '{first_word.group(1)}'",
                filename,
                text,
                line,
                first_word.start(1) + 1,
                notes=("Halide statements are let, assert, allocate, free, produce, consume, "
                       "if, for-loops, atomic, fork, acquire, stores and expressions",),
                line_offset=line_offset,
            )
        return error_at(
            f"unexpected {_describe_token(token)}",
            filename,
            text,
            line,
            column,
            notes=(f"expected {_expected_list(expected)}",),
            line_offset=line_offset,
        )
    return error_at(str(exc).split("\n")[0], filename, text, 1, 1, line_offset=line_offset)
