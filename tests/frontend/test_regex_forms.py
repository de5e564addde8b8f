"""What the scanner reads of the grammar's regular expressions
(hardboiled/frontend/regex_forms.py): the characters a match may start
with, whether every match starts with given characters, and whether a
match is certain from its first character. Each may err only the safe way,
which the checks over the grammar's own terminals test on drawn texts."""

from __future__ import annotations

import random
import re

import pytest

from hardboiled.frontend.grammar import stored_scanner_table
from hardboiled.frontend.regex_forms import (
    ASCII,
    certain_from,
    first_characters,
    possessive_repeats_are_greedy,
    regex_relaxed,
    starts_within,
)
from hardboiled.frontend.scanning import INT_RUN_PATTERN

_DIGITS = frozenset("0123456789")


@pytest.mark.parametrize(("regex", "first"), [
    (r"-?\d+", _DIGITS | {"-"}),
    (r"(?:-?\d+, ){7,}-?\d++(?!\.)", _DIGITS | {"-"}),
    (r"(?= )x|(?>y)", {"x", "y"}),  # a look ahead takes no character
    (r"\bfor\b", {"f"}),
    (r"[A-Za-z_][\w]*", frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")),
    (r"[^x]", ASCII - {"x"}),
    (r"[^\d]", ASCII - _DIGITS),
    (r"a?b*c", {"a", "b", "c"}),  # the optional parts, then the first that is not
    (r"x*", ASCII),  # may be empty: any character may follow
    (r"(?:a|)b", {"a", "b"}),  # a choice that may be empty, then b
    (r"(?i:a)", ASCII),  # a flag that changes what matches: anything
    (r"(?i)a", ASCII),
    (r".", ASCII),
    (r"\(|\[", {"(", "["}),
])
def test_the_characters_a_match_may_start_with(regex: str, first: frozenset[str]) -> None:
    assert first_characters(regex, ASCII) == frozenset(first)


def test_the_characters_asked_about_need_not_be_ascii() -> None:
    assert first_characters(r"[\d]", frozenset("\u0663x")) == {"\u0663"}
    assert first_characters(r"\s", frozenset("x")) == frozenset()


@pytest.mark.parametrize(("regex", "within"), [
    (r"\ \*\ ", True), (r" |\t", True), (r"[ \t]x", True), (r"\ ?a", False), (r"\s", False), (r"[^x]", False),
    (r" *", False), (r"(?i: )", False), (r"(?= ) ", True), (r"\ \d+|x", False),
])
def test_whether_every_match_starts_with_a_space_or_tab(regex: str, within: bool) -> None:
    assert starts_within(regex, frozenset(" \t")) is within


@pytest.mark.parametrize(("regex", "characters", "certain"), [
    (r"\(", "(", True), (r"[A-Za-z_][A-Za-z0-9_]*", "ab_", True), (r"[A-Za-z_][A-Za-z0-9_]*", "a1", False),
    (r"\|\||<=|<|>", "<>", True), (r"\|\||<=|<|>", "|", False), (r"-?\d+", "7", False), (r"(?:\d)\d*", "7", True),
    (r"\(x?", "(", True), (r"\(x", "(", False), (r"\((?=a)", "(", False), (r"[^x]", "a", False), (r"(?i:a)", "a", False),
    (r"\w+", "a", False), (r"[\d]y*", "5", True),
])
def test_whether_a_match_is_certain_from_its_first_character(regex: str, characters: str, certain: bool) -> None:
    assert certain_from(regex, frozenset(characters)) is certain


_STRING = '"[^"\\\\\n]*(?:\\\\.[^"\\\\\n]*)*+"'  # as the scanner table has it: a newline, not its escape


@pytest.mark.parametrize(("regex", "greedy"), [
    (_STRING, True), (r"a*+b", True), (r"(?:ab)*+c", True), (r"(?:a.)*+b", True), (r"x[ab]++y", True),
    (r"a*+a", False), (r"(?:ab)*+a", False), (r"(?:a[bc]*)*+b", False), (r"x*+", False),  # nothing follows
    (r"-?\d++(?!\.)", False), (r"(?>a|ab)c", False), (r"a\b", False), (r"(?:a*+b)*", False), (r"(?i:a*+b)", False),
])
def test_which_possessive_repeats_give_back_nothing_a_greedy_one_would(regex: str, greedy: bool) -> None:
    assert possessive_repeats_are_greedy(regex) is greedy
    assert dict(_terminals())["STRING"] == _STRING  # the grammar's string literal is the one tried here


def test_a_pattern_whose_possessive_repeats_are_greedy_matches_as_its_relaxed_form() -> None:
    """At every position of texts drawn from the patterns' characters, the
    same match (or none) as the pattern with greedy repeats; and a pattern
    said not to be so differs somewhere (the check is not vacuous)."""
    rng = random.Random(3)
    texts = ["".join(rng.choice('ab"\\\nxyc.') for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    for regex in (_STRING, r"a*+b", r"(?:ab)*+c", r"(?:a.)*+b", r"x[ab]++y"):
        assert possessive_repeats_are_greedy(regex)
        pattern, relaxed = re.compile(regex), re.compile(regex_relaxed(regex))
        for text in texts:
            for at in range(len(text)):
                found, expected = pattern.match(text, at), relaxed.match(text, at)
                assert (found and found.span()) == (expected and expected.span()), (regex, text, at)
    differs = re.compile(r"(?:ab)*+a"), re.compile(regex_relaxed(r"(?:ab)*+a"))
    assert any(bool(differs[0].match(text)) != bool(differs[1].match(text)) for text in texts)


def _terminals() -> list[tuple[str, str]]:
    table = stored_scanner_table()
    assert table is not None
    return [("__INT_RUN", INT_RUN_PATTERN), *map(tuple, table["terminals"])]


_PIECES = ["for", "(", ")", " * ", "1, 2, 3, 4, 5, 6, 7, 8", "-1", "1.5e3f", "inf", "nan", "x.y", '"s\\"t"', "\n  ",
           "(int32x8)", "(void *)", "reinterpret<(int32)>", "<CUDA>", "{...}", "==", "!", " func ", "module name=m",
           "external", " ", ",", "\u00e9", "]", "[", "%", "&&", ";", "\t", "0"]


def test_no_match_of_a_grammar_terminal_starts_with_a_character_it_is_said_not_to() -> None:
    """Every match of every terminal, at every position of drawn texts,
    starts with one of its first characters; and where a terminal is said
    to be certain from a character, it matches there whatever follows."""
    rng = random.Random(5)
    texts = ["".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 20))) for _ in range(400)]
    matched = 0
    for name, regex in _terminals():
        pattern = re.compile(regex)
        first = first_characters(regex, ASCII)
        for text in texts:
            for at in range(len(text)):
                match = pattern.match(text, at)
                if match and match.end() > at and text[at] in ASCII:
                    assert text[at] in first, (name, text, at)
                    matched += 1
        for character in sorted(ASCII):
            if certain_from(regex, frozenset(character)):
                for text in texts[:50]:
                    assert pattern.match(character + text), (name, character, text)
    assert matched > 10_000
