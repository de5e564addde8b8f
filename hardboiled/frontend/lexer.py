"""A fast contextual lexer for the Halide IR grammar.

Lark's own contextual lexer gives the behaviour the grammar needs (a word is
a keyword only where the parser can accept that keyword, so ``free`` or
``in`` still work as names elsewhere), but it builds a scanner per parser
state and spends most of its time in per-token bookkeeping. Halide dumps
run to megabytes, so this lexer gets the same result with one compiled
regular expression and a look at the parser's current state:

* a NAME whose text is a keyword becomes that keyword if the parser accepts
  it here;
* a terminal that only makes sense in some places (a loop kind, `` * ``
  between allocation extents, ``inf``) is taken only if the parser accepts
  it; otherwise the text is scanned again without such terminals.

Everything else (terminal priorities, error reporting through Lark's
exceptions) matches Lark's contextual lexer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from lark.common import LexerConf
from lark.exceptions import UnexpectedCharacters
from lark.lexer import Lexer, LexerState, TerminalDef, Token

from hardboiled.frontend.regex_forms import first_characters

# Terminals that must not be taken where the parser does not expect them.
_CONTEXTUAL = frozenset(
    {"FOR_KIND", "LINKAGE", "MODULE_HEADER", "_ALLOC_TIMES", "DEVICE_API", "BUFFER_BODY", "TYPE_PREFIX",
     "HANDLE_TYPE", "REINTERPRET", "FLOAT"}
)
_IGNORE = "__IGNORE"
NO_TERMINAL = "__NO_TERMINAL"
"""The scanner table's name for a character where no terminal starts."""


def _order(terminals: list[TerminalDef]) -> list[TerminalDef]:
    # Lark's order: priority, then longest possible match, then longest
    # pattern text, then name.
    return sorted(
        terminals,
        key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name),
    )


def _choices(terminals: list[TerminalDef]) -> str:
    """The terminals as one alternation of named groups, in Lark's order."""
    return "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in _order(terminals))


def _alternation(terminals: list[TerminalDef], ignore: list[str]) -> re.Pattern[str]:
    return re.compile(f"{_choices(terminals)}|(?P<{_IGNORE}>{'|'.join(ignore)})")


def scanner_table(conf: LexerConf) -> dict[str, Any]:
    """What the recursive-descent reader (descent.py) needs of the grammar's
    terminals, as data: the pattern that skips spaces before a token
    (``prefix``) and the characters it skips (``skipped``), the terminals in
    the order they are tried, the keywords, and the terminals that are
    literal text with their text (which the reader uses as their kind). The
    scanner (scanning.py) reads the skip, then the first terminal that
    matches or, where none starts, the one character ``NO_TERMINAL``.

    Spaces are skipped as Lark's lexer skips them: a run of them at once,
    unless a terminal that starts with a space (`` * `` between allocation
    extents) starts where the run does (``space_led``: those terminals, or
    None where the skip is Lark's own). Where what is skipped is a run of
    single characters, the pattern says just that, without backtracking.
    (The lazy skip of runs that Lark's patterns allow, ``(?:[ ]+)*?``, tries
    every way of cutting a run of spaces into runs where the text after it
    reads as no terminal: exponential in its length.)"""
    lexer = HalideLexer(conf)
    characters = _run_of_characters(lexer.ignore)
    space_led: list[TerminalDef] | None = None
    if characters is None:
        prefix = f"(?:{'|'.join(lexer.ignore)})*?"  # what Lark skips, as Lark does
    else:
        alphabet = frozenset(characters)
        space_led = [t for t in lexer.scanned if first_characters(t.pattern.to_regexp(), alphabet)]
        one = "[" + "".join(f"\\x{ord(c):02x}" for c in sorted(characters)) + "]"
        prefix = (f"(?>(?!{'|'.join(t.pattern.to_regexp() for t in space_led)}){one}+)?" if space_led
                  else f"{one}*+")
    return {
        "prefix": prefix,
        "skipped": None if characters is None else "".join(sorted(characters)),
        "terminals": [[t.name, t.pattern.to_regexp()] for t in _order(lexer.scanned)],
        "space_led": None if space_led is None else [t.name for t in space_led],
        "keywords": sorted(lexer.keywords),
        "literals": {t.name: t.pattern.value for t in sorted(lexer.scanned, key=lambda t: t.name)
                     if t.pattern.type == "str" and t.name != "_ALLOC_TIMES"},
    }


def _run_of_characters(patterns: list[str]) -> set[str] | None:
    """The characters, if each of ``patterns`` is one character of a set
    or a run of them (``[ \\t]+``), so that skipping any sequence of their
    matches is skipping any run of these characters; else None."""
    from re import _constants as sre
    from re import _parser

    characters: set[str] = set()
    for pattern in patterns:
        items = list(_parser.parse(pattern))
        while len(items) == 1 and items[0][0] is sre.SUBPATTERN:
            items = list(items[0][1][-1])
        if len(items) == 1 and items[0][0] in (sre.MAX_REPEAT, sre.POSSESSIVE_REPEAT) and items[0][1][0] >= 1:
            items = list(items[0][1][2])
        if len(items) != 1:
            return None
        op, argument = items[0]
        members = [(sre.LITERAL, argument)] if op is sre.LITERAL else list(argument) if op is sre.IN else []
        for member, value in members:
            if member is sre.LITERAL:
                characters.add(chr(value))
            elif member is sre.RANGE and value[1] - value[0] < 256:
                characters.update(map(chr, range(value[0], value[1] + 1)))
            else:
                return None
        if not members:
            return None
    return characters or None


class HalideLexer(Lexer):
    """Lark custom lexer (interface 2: it sees the parser state)."""

    __future_interface__ = 2

    def __init__(self, conf: LexerConf) -> None:
        name_pattern = re.compile(next(t for t in conf.terminals if t.name == "NAME").pattern.to_regexp())
        self.keywords: dict[str, str] = {}
        self.scanned: list[TerminalDef] = []
        """The terminals the regular expressions scan (not keywords, not spaces)."""
        self.ignore: list[str] = []
        """The patterns of what is skipped between terminals."""
        for term in conf.terminals:
            if term.name in conf.ignore:
                self.ignore.append(term.pattern.to_regexp())
            elif term.pattern.type == "str" and name_pattern.fullmatch(term.pattern.value):
                self.keywords[term.pattern.value] = term.name
            else:
                self.scanned.append(term)
        self.newline_types = frozenset(
            t.name for t in self.scanned if "\n" in t.pattern.value or "\\n" in t.pattern.to_regexp()
        )
        self.full = _alternation(self.scanned, self.ignore)
        self.plain = _alternation([t for t in self.scanned if t.name not in _CONTEXTUAL], self.ignore)
        self.terminals_by_name = {t.name: t for t in conf.terminals}

    def lex(self, lexer_state: LexerState, parser_state: Any) -> Iterator[Token]:
        text_slice = lexer_state.text
        text: str = text_slice.text
        pos, end = text_slice.start, text_slice.end
        line, line_start = 1, 0
        states = parser_state.parse_conf.states
        keywords = self.keywords
        full_match, plain_match = self.full.match, self.plain.match
        newline_types = self.newline_types
        new_str = str.__new__
        while pos < end:
            m = full_match(text, pos)
            kind = m.lastgroup if m is not None else None
            if m is not None and kind == _IGNORE:
                pos = m.end()
                continue
            accepts = states[parser_state.position]
            if kind in _CONTEXTUAL and kind not in accepts:
                m = plain_match(text, pos)
                kind = m.lastgroup if m is not None else None
                if m is not None and kind == _IGNORE:
                    pos = m.end()
                    continue
            if m is None or kind is None:
                raise UnexpectedCharacters(
                    text, pos, line, pos - line_start + 1,
                    allowed=set(accepts), state=parser_state, terminals_by_name=self.terminals_by_name,
                )
            value = m.group()
            if kind == "NAME":
                keyword = keywords.get(value)
                if keyword is not None and keyword in accepts:
                    kind = keyword
            next_pos = m.end()
            # Token(...) goes through a compatibility shim that costs more
            # than the rest of this loop; fill the slots directly. The token
            # is a str of the same text, and stands for its own value: a
            # second copy would double what a long string literal costs.
            token = new_str(Token, value)
            token.type, token.value, token.start_pos = kind, token, pos
            token.line, token.column = line, pos - line_start + 1
            if kind in newline_types:
                breaks = value.count("\n")
                if breaks:
                    line += breaks
                    line_start = pos + value.rindex("\n") + 1
            token.end_line, token.end_column, token.end_pos = line, next_pos - line_start + 1, next_pos
            pos = next_pos
            lexer_state.last_token = token
            yield token
