"""The LALR parser for grammars/halide_ir.lark, built once per process
(and cached on disk by Lark), with hardboiled's contextual lexer."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from lark import Lark

from hardboiled.frontend.lexer import HalideLexer


@lru_cache(maxsize=1)
def halide_parser() -> Lark:
    grammar = resources.files("hardboiled.grammars").joinpath("halide_ir.lark").read_text()
    return Lark(grammar, parser="lalr", lexer=HalideLexer, maybe_placeholders=True, cache=True)
