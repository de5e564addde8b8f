"""Reading Halide IR text into the IR of hardboiled/ir: the entry points
(``parse_input``, ``parse_text``, ``parse_type_option``) and what they return
(``ParsedInput``). The input kinds and stages are in ``stages``, syntax
errors in ``syntax_errors``.

Three kinds of input are accepted, and told apart by their content:

1. a bare statement, as Halide prints it after one lowering pass;
2. a whole ``HL_DEBUG_CODEGEN=2`` log, from which one "Lowering after NAME:"
   block is taken (``stage``, default ``vectorizing``);
3. ``compile_to_lowered_stmt`` text output (a module with functions and
   buffers).

The grammar (grammars/halide_ir.lark) defines the language, and Lark's
LALR parser reads it; most input is read into the same tree, faster, by the
recursive-descent reader of ``descent``, which leaves the rest (and every
syntax error) to Lark. The tree is then turned into typed IR by ``TreeBuilder``, which tracks which
names are bound where, because Halide omits types that the reader is
expected to know: a load's element type comes from the buffer's
``allocate`` line or its ``X.type == (uint32)N`` assert, and a float16
literal may really be a bfloat16 one. The builder is split by concern:

* ``builder_base``: its state (names in scope, buffer types) and errors;
* ``expressions``: expressions (precedence, variables, loads, literals);
* ``call_forms``: the nodes Halide prints as calls (``ramp``, ``x8``, ...);
* ``statements``: statements, scoping, and modules (``TreeBuilder``);
* ``literals``: literal values and the float16/bfloat16 reading.

All errors are ``InputError`` diagnostics pointing into the original file.
"""

from __future__ import annotations

import gc
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import cast

from hardboiled import ir
from hardboiled.frontend.descent import Unhandled, parse_tree
from hardboiled.frontend.grammar import halide_parser
from hardboiled.frontend.stages import DEFAULT_STAGE, is_debug_log, select_stage
from hardboiled.frontend.statements import TreeBuilder
from hardboiled.frontend.syntax_tree import Tree
from hardboiled.support.deep import call_deep, on_deep_stack
from hardboiled.support.diagnostics import InputError, error_at

_TYPE_ASSERT_RE = re.compile(r"assert\(([^\s()]+)\.type == \(uint32\)(\d{1,10}),")
_ALLOCATE_RE = re.compile(r"allocate (\S+)\[((?:u?int|b?float)\d+)(?:x\d+)? ")
"""An allocation, where only spaces are before it on its line (which
``_buffer_types_from_asserts`` checks: a pattern that starts with a
literal is searched for at C's speed, one that starts with ``^\\s*`` is
tried at every character)."""


# --------------------------------------------------------------------------
# Inputs and stages
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParsedInput:
    """What ``parse_input`` found: the IR and where it came from."""

    kind: str
    """"stmt", "log" or "module"."""
    ir: ir.Stmt | ir.Module
    stage: str | None = None
    """The log stage the IR was taken from, for kind "log"."""
    filename: str = "<string>"
    text: str = ""
    """The whole input, for quoting source lines in diagnostics."""
    store_lines: tuple[int, ...] = ()
    """Line (in ``text``) of every Store, in the pre-order of ``ir.walk``."""


def parse_input(
    text: str,
    filename: str = "<string>",
    stage: str | None = None,
    buffer_types: dict[str, ir.Type] | None = None,
) -> ParsedInput:
    """Parse any of the three input kinds; see the module docstring."""
    if is_debug_log(text):
        body, offset, stage_name = select_stage(text, filename, stage or DEFAULT_STAGE)
        stmt, lines = _parse(body, filename, offset, buffer_types)
        return ParsedInput("log", stmt, stage_name, filename, text, lines)
    if stage is not None:
        raise error_at(
            f"--stage '{stage}' needs an HL_DEBUG_CODEGEN log, but this input has no "
            "'Lowering after' headers",
            filename,
            text,
            1,
            1,
        )
    result, lines = _parse(text, filename, 0, buffer_types)
    kind = "module" if isinstance(result, ir.Module) else "stmt"
    return ParsedInput(kind, result, None, filename, text, lines)


# --------------------------------------------------------------------------
# Lark
# --------------------------------------------------------------------------


def parse_text(
    text: str,
    filename: str = "<string>",
    line_offset: int = 0,
    buffer_types: dict[str, ir.Type] | None = None,
) -> ir.Stmt | ir.Module:
    """Parse a bare statement or a lowered module (not a log)."""
    return _parse(text, filename, line_offset, buffer_types)[0]


def _parse(
    text: str, filename: str, line_offset: int, buffer_types: dict[str, ir.Type] | None
) -> tuple[ir.Stmt | ir.Module, tuple[int, ...]]:
    if not text.strip():
        raise error_at("empty input: expected Halide IR", filename, text, 1, 1, line_offset=line_offset)
    ends_mid_line = not text.endswith("\n")
    if ends_mid_line:
        text += "\n"
    with _collection_paused():
        deep = on_deep_stack()
        if deep or len(text) <= _READ_DEEP_FROM:
            try:
                return _read(text, filename, line_offset, buffer_types, ends_mid_line, deep)
            except RecursionError:
                if deep:
                    raise
        # Long, or nested deeper than this caller's stack allows (the reader
        # and the builder recurse once per level): read on the compile's deep
        # stack, as the command line and the API read everything (or here,
        # where no thread can be made: then Lark reads what the fast reader
        # cannot).
        return call_deep(_read, text, filename, line_offset, buffer_types, ends_mid_line, True)


_READ_DEEP_FROM = 64 << 10
"""Characters past which a text read outside a deep stack (the API's
``parse_input``) is read on one at once, not first tried on the caller's
stack: a long dump is likely to nest deeper than that stack allows, and a
failed first try costs as much as the read (starting the thread costs a
fraction of a millisecond)."""

_pause_lock = threading.Lock()
_pauses = 0
_enable_after = False


@contextmanager
def _collection_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a text is read: reading
    makes hundreds of thousands of tokens, trees and IR nodes, none of them
    in a cycle, and each collection of the older generations walks every
    one still alive (a third of the reading time of a megabyte dump).
    Reads in several threads (the API) share one pause: the last to end
    puts the collector back as the first found it."""
    global _pauses, _enable_after
    with _pause_lock:
        if _pauses == 0:
            _enable_after = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _enable_after:
                gc.enable()


def _read(
    text: str, filename: str, line_offset: int, buffer_types: dict[str, ir.Type] | None, ends_mid_line: bool,
    last_try: bool,
) -> tuple[ir.Stmt | ir.Module, tuple[int, ...]]:
    """Read ``text``; a reader that runs out of stack on the first of two
    tries raises (``_parse`` tries again deeper), on the last leaves the
    text to Lark."""
    try:
        tree = parse_tree(text)
    except (Unhandled, RecursionError) as exc:
        if isinstance(exc, RecursionError) and not last_try:
            raise
        # Lark reads what the fast reader does not, and words every syntax error.
        from lark.exceptions import UnexpectedInput

        from hardboiled.frontend.syntax_errors import syntax_error

        try:
            # Lark's tree has the shape of syntax_tree's (the builder reads either).
            tree = cast(Tree, halide_parser().parse(text))
        except UnexpectedInput as exc:
            error = syntax_error(exc, text, filename, line_offset)
            raise _mark_truncation(error, text, ends_mid_line, line_offset) from None
    known = _buffer_types_from_asserts(text)
    known.update(buffer_types or {})
    builder = TreeBuilder(filename, text, line_offset, known)
    result = builder.build(tree)
    builder.check_free_reads()
    return result, tuple(builder.store_lines)


def _mark_truncation(error: InputError, text: str, ends_mid_line: bool, line_offset: int) -> InputError:
    """A syntax error on an unfinished last line means the file was cut short."""
    location = error.diagnostic.location
    last_line = text.count("\n") + line_offset
    if not ends_mid_line or location is None or location.line != last_line:
        return error
    if "truncated" in error.diagnostic.message:
        return error
    diagnostic = replace(
        error.diagnostic,
        message=error.diagnostic.message + "; the input ends in the middle of a line (truncated?)",
    )
    return InputError(diagnostic)


def _buffer_types_from_asserts(text: str) -> dict[str, ir.Type]:
    """Element types the whole text states: pipeline buffers' type asserts
    and allocations (a parallel closure reads a buffer that the enclosing
    function allocates, outside the closure's scope)."""
    found: dict[str, ir.Type] = {}
    for m in _TYPE_ASSERT_RE.finditer(text):
        t = ir.type_from_packed_halide_type(int(m.group(2)))
        if t is not None:
            found.setdefault(m.group(1), t)
    for m in _ALLOCATE_RE.finditer(text):
        if text[text.rfind("\n", 0, m.start()) + 1 : m.start()].strip():
            continue  # not where its line starts
        t = ir.parse_type_name(m.group(2))
        if t is not None:
            found.setdefault(m.group(1), t)
    return found


def parse_type_option(text: str) -> ir.Type:
    """Parse a ``--buffer-type`` value such as ``bfloat16``."""
    t = ir.parse_type_name(text)
    if t is None or t.lanes != 1:
        raise ValueError(f"'{text}' is not a scalar Halide type such as float32 or bfloat16")
    return t
