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

# Terminals that must not be taken where the parser does not expect them.
_CONTEXTUAL = frozenset(
    {"FOR_KIND", "LINKAGE", "MODULE_HEADER", "_ALLOC_TIMES", "DEVICE_API", "BUFFER_BODY", "TYPE_PREFIX",
     "HANDLE_TYPE", "REINTERPRET", "FLOAT"}
)
_IGNORE = "__IGNORE"


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
    terminals, as data: one pattern that skips spaces and reads the next
    terminal (a space is skipped only where no terminal starts, as the
    alternation below tries spaces last), the keywords, and the terminals
    that are literal text (whose text the reader uses as their kind)."""
    lexer = HalideLexer(conf)
    return {
        "pattern": f"(?:{'|'.join(lexer.ignore)})*?(?:{_choices(lexer.scanned)})",
        "keywords": sorted(lexer.keywords),
        "literal_kinds": sorted(t.name for t in lexer.scanned
                                if t.pattern.type == "str" and t.name != "_ALLOC_TIMES"),
        "newline_kinds": sorted(lexer.newline_types),
    }


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
