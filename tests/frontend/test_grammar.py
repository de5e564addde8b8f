"""The grammar itself: conflict-free LALR, and our fast lexer agrees with Lark's."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest
from lark import Lark

from hardboiled.frontend.grammar import halide_parser as _parser

from ..conftest import ROOT, STMT_FIXTURES, fixture_id

GRAMMAR = (ROOT / "grammars" / "halide_ir.lark").read_text()


@lru_cache(maxsize=1)
def _reference_parser() -> Lark:
    # Lark's own contextual lexer: the behaviour hardboiled.frontend.lexer reproduces.
    return Lark(GRAMMAR, parser="lalr", lexer="contextual", maybe_placeholders=True)


def test_grammar_is_conflict_free_lalr() -> None:
    # strict=True raises on any shift/reduce conflict or terminal collision.
    Lark(GRAMMAR, parser="lalr", lexer="contextual", maybe_placeholders=True, strict=True)


@pytest.mark.parametrize("path", STMT_FIXTURES, ids=fixture_id)
def test_fast_lexer_builds_the_same_tree_as_larks_lexer(path: Path) -> None:
    text = path.read_text()
    assert _parser().parse(text) == _reference_parser().parse(text)


@pytest.mark.parametrize(
    "source",
    [
        "let in = 1\nfree free\n",  # keywords stay names where no keyword fits
        "allocate a[float32 * (n*2) * 4] in Register if (uint1)1\na[0] = 1.000000f\n",
        "for (x, 0, extern) {\n a[x] = parallel(x)\n}\n",
        "f((halide_task_t)::g, inff, -inff, nanh, (void *)x, reinterpret<(void *)>((uint64)0))\n",
    ],
)
def test_fast_lexer_on_context_dependent_words(source: str) -> None:
    assert _parser().parse(source) == _reference_parser().parse(source)


@pytest.mark.parametrize(("text", "known"), [
    ("allocate a[float32 * 4]\n", {"a": "float32"}),
    ("  \t allocate a[bfloat16x8 * 4] in Stack\n", {"a": "bfloat16"}),
    ("x\n\n   allocate b[uint8 * 2]\n", {"b": "uint8"}),
    ('f("allocate c[int32 * 2]")\n', {}),
    ("y = 1 allocate d[int32 * 2]\n", {}),
    ("allocate allocate e[int16 * 2]\n", {}),
])
def test_only_allocations_that_start_their_line_state_a_buffers_type(text: str, known: dict[str, str]) -> None:
    """The whole text's allocations (a closure reads a buffer its enclosing
    function allocates) count where only spaces are before them on their
    line, as ``^\\s*allocate`` matched them before the pattern was made
    one that is searched for by its literal start."""
    from hardboiled.frontend.parse import _buffer_types_from_asserts

    assert {name: str(t) for name, t in _buffer_types_from_asserts(text).items()} == known
