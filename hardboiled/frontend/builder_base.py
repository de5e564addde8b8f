"""The state that the tree builder carries down the Lark tree, and its helpers.

Owns the names in scope and their types (``bind``/``unbind``), the element
types of buffers and realized Funcs, the located errors (``error``: every
one an ``InputError`` pointing into the original file), type names
(``type_name``) and the per-node check against ir/invariants.py
(``checked``). The builders of expressions (``expressions``), of the calls
that are IR nodes (``call_forms``) and of statements (``statements``) each
add their rules on top of ``BuilderBase``.
"""

from __future__ import annotations

import re
from typing import TypeVar, cast

from hardboiled import ir
from hardboiled.frontend.syntax_tree import IntRun, Token, Tree
from hardboiled.ir.invariants import node_problem
from hardboiled.support.diagnostics import InputError, error_at

N = TypeVar("N", bound=ir.Node)

_LOOKS_LIKE_SCALAR_TYPE = re.compile(r"(u?int|b?float)\d+(x\d+)?")
_UNBOUND = object()

_TYPE_NAMES: dict[str, ir.Type] = {}
"""The type each type name read so far spells (a dump spells the same few
in a hundred thousand type prefixes: a regular expression's match each)."""
_TYPE_NAMES_LIMIT = 1 << 12
"""Names remembered at most; past that the memory starts again."""

ALLOCATION_MARKER = ir.handle_type("hardboiled allocation")
"""The scope entry for an allocation: a name whose loads get the allocation's
element type and whose bare references are handles (compared by identity)."""


def token_of(node: Tree | Token | str) -> Token:
    """A child that the grammar guarantees is a token (a literal or a name).
    Lark's tokens and the reader's are both ``str`` with a token's
    attributes; trees are not ``str``."""
    assert isinstance(node, str), node
    return cast(Token, node)


def first_token(node: Tree | Token | None) -> Token | None:
    """The leftmost token under a tree: the position to blame in errors."""
    stack: list[Tree | Token | None] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, str):
            return current  # a token, Lark's or the reader's
        if isinstance(current, IntRun):
            stack.extend(reversed(current.trees()))
        elif current is not None:
            stack.extend(reversed(current.children))
    return None


class BuilderBase:
    """Names in scope, buffer and Func element types, and located errors."""

    def __init__(self, filename: str, text: str, line_offset: int, buffer_types: dict[str, ir.Type]):
        self.filename = filename
        self.text = text
        self.line_offset = line_offset
        self.buffer_types = buffer_types
        self.scope: dict[str, ir.Type] = {}
        self.defined_names: set[str] = set()
        """Names some loop or let of the program defines."""
        self.free_reads: dict[str, Tree | Token] = {}
        """The first read of each name out of every scope: a scalar Param,
        unless ``defined_names`` holds it."""
        self.func_types: dict[str, ir.Type] = {}
        self.store_lines: list[int] = []

    def error(self, message: str, node: Tree | Token | None, notes: tuple[str, ...] = ()) -> InputError:
        token = first_token(node)
        line = token.line if token is not None and token.line else 1
        column = token.column if token is not None and token.column else 1
        return error_at(message, self.filename, self.text, line, column, notes, self.line_offset)

    def bind(self, name: str, t: ir.Type) -> tuple[str, object]:
        previous = self.scope.get(name, _UNBOUND)
        self.scope[name] = t
        if t is not ALLOCATION_MARKER:
            self.defined_names.add(name)
        return name, previous

    def unbind(self, saved: tuple[str, object]) -> None:
        name, previous = saved
        if previous is _UNBOUND:
            del self.scope[name]
        else:
            self.scope[name] = previous  # type: ignore[assignment]

    def type_name(self, text: str, node: Tree | Token) -> ir.Type:
        known = _TYPE_NAMES.get(text)
        if known is not None:
            return known
        t = self._type_name(text, node)
        if len(_TYPE_NAMES) >= _TYPE_NAMES_LIMIT:
            _TYPE_NAMES.clear()
        _TYPE_NAMES[text] = t
        return t

    def _type_name(self, text: str, node: Tree | Token) -> ir.Type:
        if text.startswith("(") and text.endswith(")"):
            inner = text[1:-1]
            scalar = ir.parse_type_name(inner)
            if scalar is not None:
                return scalar
            if not _LOOKS_LIKE_SCALAR_TYPE.fullmatch(inner):
                return ir.handle_type(inner)
            text = inner
        t = ir.parse_type_name(text)
        if t is None:
            raise self.error(f"unknown type '{text if len(text) <= 60 else text[:40] + '...'}'", node)
        return t

    def check_free_reads(self) -> None:
        """A name read out of every scope is a scalar Param of the pipeline
        (Halide prints Params as bare names), unless a loop or let defines
        it elsewhere: then the read is outside that loop or let, which
        Halide never prints, and the C would not compile."""
        for name, site in self.free_reads.items():
            if name in self.defined_names:
                raise self.error(f"'{name}' is read outside the loop or let that defines it", site,
                                 notes=("a name no loop or let defines is read as a scalar Param of the "
                                        "pipeline; this one is defined elsewhere in the program",))

    def checked(self, node: N, tree: Tree | Token) -> N:
        """``node``, if its types and lanes agree (ir/invariants.py); a
        mismatch is the input's error, located here, not a crash later."""
        problem = node_problem(node)
        if problem is not None:
            raise self.error(problem, tree)
        return node
