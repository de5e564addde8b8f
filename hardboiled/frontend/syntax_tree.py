"""The parse tree that the tree builder reads: ``Tree`` and ``Token``,
shaped as Lark's (a rule's name and children; a terminal's text, kind and
position).

The recursive-descent reader (``descent``) builds these, and imports
nothing of Lark, so that a compile whose input it reads does not load
Lark at all. Lark's parser, which reads the rest, builds its own classes
of the same shape: the builder tells a token from a tree by ``str``, never
by these classes.
"""

from __future__ import annotations

from typing import Any


class Token(str):
    """A terminal: its text, its kind (the grammar's terminal name) and
    where it is (1-based line and column, offsets from the start)."""

    __slots__ = ("type", "line", "column", "start_pos", "end_line", "end_column", "end_pos")
    type: str
    line: int
    column: int
    start_pos: int
    end_line: int
    end_column: int
    end_pos: int


class Tree:
    """A rule (``data``, its name or alias in the grammar) and its children:
    trees, tokens, and None for an absent ``[optional]`` part."""

    __slots__ = ("data", "children")

    def __init__(self, data: str, children: list[Any]):
        self.data = data
        self.children = children

