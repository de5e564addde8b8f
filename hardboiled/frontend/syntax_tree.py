"""The parse tree that the tree builder reads: ``Tree`` and ``Token``,
shaped as Lark's (a rule's name and children; a terminal's text, kind and
position).

The recursive-descent reader (``descent``) builds these, and imports
nothing of Lark, so that a compile whose input it reads does not load
Lark at all. Lark's parser, which reads the rest, builds its own classes
of the same shape: the builder tells a token from a tree by ``str``, never
by these classes. The reader's one addition is ``IntRun``: many integer
literal arguments in a row, standing for their trees.
"""

from __future__ import annotations

import bisect
from typing import Any


class Token(str):
    """A terminal: its text, its kind (the grammar's terminal name) and
    where it is (1-based line and column, offsets from the start).

    The reader knows only the offsets of a token when it makes it: lines
    and columns are worked out from its ``Lines`` when asked, which is
    rarely (a store's line, a diagnostic), and a dump has a hundred
    thousand tokens."""

    __slots__ = ("type", "start_pos", "end_pos", "lines")
    type: str
    start_pos: int
    end_pos: int
    lines: Lines

    @property
    def line(self) -> int:
        return self.lines.line_of(self.start_pos)

    @property
    def column(self) -> int:
        return self.start_pos - self.lines.start_of(self.line) + 1

    @property
    def end_line(self) -> int:
        # A token with line breaks in it (a statement's end) ends on the
        # line after its last one, as Lark counts.
        return self.lines.line_of(self.end_pos) if "\n" in self else self.line

    @property
    def end_column(self) -> int:
        return self.end_pos - self.lines.start_of(self.end_line) + 1


class Lines:
    """Where each line of a text starts, found once, on first use."""

    __slots__ = ("text", "_starts")

    def __init__(self, text: str):
        self.text = text
        self._starts: list[int] | None = None

    def _line_starts(self) -> list[int]:
        if self._starts is None:
            starts = [0]
            find, at = self.text.find, self.text.find("\n")
            while at >= 0:
                starts.append(at + 1)
                at = find("\n", at + 1)
            self._starts = starts
        return self._starts

    def line_of(self, position: int) -> int:
        """The 1-based line of an offset."""
        return bisect.bisect_right(self._line_starts(), position)

    def start_of(self, line: int) -> int:
        """The offset where a 1-based line starts."""
        return self._line_starts()[line - 1]


class Tree:
    """A rule (``data``, its name or alias in the grammar) and its children:
    trees, tokens, and None for an absent ``[optional]`` part."""

    __slots__ = ("data", "children")

    def __init__(self, data: str, children: list[Any]):
        self.data = data
        self.children = children


class IntRun:
    """Integer literals of nine characters or fewer, each a whole argument
    of a call, one after another (a shuffle's lane indices, thousands in a
    row), as the reader keeps them: their texts and ends. They stand for
    the ``int_lit`` trees that Lark's parser makes of them (``trees``); the
    builder reads the texts at once.

    A run the scanner found whole (``IntRun.scanned``) keeps only where it
    ends: the literals' ends are worked out when asked, which is only for
    a diagnostic."""

    __slots__ = ("texts", "_ends", "_end", "lines")

    def __init__(self, texts: list[str], ends: list[int] | None, lines: Lines, end: int = 0):
        self.texts = texts
        self._ends = ends
        self._end = end
        self.lines = lines

    @classmethod
    def scanned(cls, texts: list[str], end: int, lines: Lines) -> IntRun:
        """The literals of a run that ends at offset ``end``, each followed
        by a comma and a space but the last."""
        return cls(texts, None, lines, end)

    @property
    def ends(self) -> list[int]:
        if self._ends is None:
            from hardboiled.frontend.scanning import run_ends

            self._ends = run_ends(self.texts, self._end)
        return self._ends

    def trees(self) -> list[Tree]:
        found = []
        for text, end in zip(self.texts, self.ends):
            token = str.__new__(Token, text)
            token.type, token.start_pos, token.end_pos, token.lines = "INT", end - len(text), end, self.lines
            found.append(Tree("int_lit", [token]))
        return found


def expanded(children: list[Any]) -> list[Any]:
    """``children`` with each ``IntRun`` replaced by the trees it stands for."""
    found: list[Any] = []
    for child in children:
        found.extend(child.trees() if isinstance(child, IntRun) else (child,))
    return found
