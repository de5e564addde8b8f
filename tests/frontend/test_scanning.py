"""The reader's scanner (hardboiled/frontend/scanning.py): a text it has
seen before reads as it read then, unless what follows could change how it
reads; every scan is what the pattern with its groups gives, match by
match, whatever the scanner saw before."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from hardboiled.frontend import scanning
from hardboiled.frontend.grammar import stored_scanner_table
from hardboiled.frontend.regex_forms import regex_relaxed, regex_without_groups
from hardboiled.frontend.scanning import Scanner, Unhandled

from ..conftest import ROOT

_PIECES = [
    "for", "parallel", "vectorized", "gpu_block", "extern", "external", "internal", " func ", "func", "inf", "nan",
    "-inf", "inff", "1.5", "2", "-3", ", ", ",", " ", "  ", "\t", " * ", "*", "(", ")", "<", ">", "[", "]", "{", "}",
    ";", ".", "x", "_y", "$z", ":", "\n", "\n  ", '"s"', "(int32)", "(uint8_t *)", "(void *)", "<CUDA>",
    "reinterpret<(int32)>", "module name=m", "formula", "inf.", "e3", "f", "7, 8, 9", "==", "!", "=", "!=",
    '"q\\"r"', '"\\\\"', '\\', '"', "1, 2, 3, 4, 5, 6, 7, 8",
]
"""Texts that read otherwise by what follows them (loop kinds, linkages,
``inf``, the allocation's `` * ``, runs of integers) and what may follow."""


def _reference(scanner: Scanner, text: str) -> object:
    """The scan as the grouped pattern gives it, one match object per token."""
    matches = list(scanner.grouped.finditer(text))
    if not matches or matches[0].start() != 0 or matches[-1].end() != len(text) or any(
            a.end() != b.start() for a, b in zip(matches, matches[1:])):
        return "unhandled"
    kinds = [scanner.kinds[m.lastindex] for m in matches]  # type: ignore[index]
    if scanning.NO_TERMINAL in kinds:
        return "unhandled"
    values = [m.group(m.lastindex) for m in matches]  # type: ignore[arg-type]
    ends = [m.end() for m in matches]
    return kinds, values, ends


def _scanned(scanner: Scanner, text: str) -> object:
    try:
        return scanner.scan(text)
    except Unhandled:
        return "unhandled"


def _table() -> dict[str, object]:
    table = stored_scanner_table()
    assert table is not None
    return table


def _soups(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 30))) + "\n" for _ in range(count)]


_NEVER = 1 << 62
"""A ``dispatch_from`` never reached: the scanner keeps ``plain``."""


@pytest.mark.parametrize("dispatch_from", [_NEVER, 0])
@pytest.mark.parametrize("seed", range(3))
def test_a_text_seen_before_scans_as_the_grouped_pattern_scans_it(seed: int, dispatch_from: int) -> None:
    """One scanner over thousands of texts drawn from a seed: each scan is
    the grouped pattern's, though the texts repeat in other contexts; with
    the plain pattern and with its dispatched form."""
    scanner = Scanner(_table(), dispatch_from=dispatch_from)
    texts = _soups(seed, 3000)
    for text in texts:
        assert _scanned(scanner, text) == _reference(scanner, text), text
    assert len(scanner.known) > 50  # it did remember texts


def test_a_word_that_reads_otherwise_before_other_text_is_never_remembered() -> None:
    """``for`` before ``;`` is a name and before `` (`` a loop kind;
    ``external`` is a linkage only before `` func ``: both orders, one
    scanner each."""
    pairs = [("for;\n", "for (x, 0, 4) {\n"), ("external;\n", "external func f() {\n"),
             ("a * b\n", "a * \n"), ("1, 2, 3, 4)\n", "1, 2, 3, 4.5)\n")]
    for first, second in pairs:
        for order in ((first, second), (second, first)):
            scanner = Scanner(_table())
            for text in order:
                assert _scanned(scanner, text) == _reference(scanner, text), text
    scanner = Scanner(_table())
    scanner.scan("for (x, 0, 4) {\n")
    assert "for" not in scanner.known and " (" in scanner.known


def test_the_check_of_what_may_be_remembered_is_what_keeps_scans_right(monkeypatch: pytest.MonkeyPatch) -> None:
    """With every text remembered, a text seen before in another context
    reads wrong: the check is needed, and the tests above would see its
    absence."""
    monkeypatch.setattr(Scanner, "remembers", lambda self, text, group, value: True)
    scanner = Scanner(_table())
    scanner.scan("for;\n")
    assert _scanned(scanner, "for (x, 0, 4) {\n") != _reference(scanner, "for (x, 0, 4) {\n")


def test_every_real_dump_scans_as_the_grouped_pattern_scans_it() -> None:
    """One scanner over the real dumps, in order (the stages of one
    pipeline repeat each other's text), with the dispatched pattern from
    the first (the soups above try both)."""
    scanner = Scanner(_table(), dispatch_from=0)
    fixtures = ROOT / "tests" / "fixtures"
    paths = sorted(path for path in fixtures.glob("*/**/*.stmt")
                   if path.relative_to(fixtures).parts[0] not in {"final", "sweep", "operations"})
    assert len(paths) > 50
    for path in paths:
        text = Path(path).read_text()
        text += "" if text.endswith("\n") else "\n"
        assert _scanned(scanner, text) == _reference(scanner, text), path


def test_the_dispatched_pattern_starts_after_enough_text_and_reads_the_space_led_terminal_first() -> None:
    """The scanner compiles the dispatched form once it has read
    ``dispatch_from`` characters, and no sooner; for this grammar (whose
    only terminal that starts with a space is `` * ``) that form reads
    `` * `` first and skips spaces without looking ahead."""
    scanner = Scanner(_table(), dispatch_from=100)
    scanner.scan("x = 1\n" * 10)
    assert scanner._dispatched is None
    scanner.scan("x = 1\n" * 10)
    assert scanner._dispatched is not None
    assert scanner._dispatched.pattern.startswith("(?:\\ \\*\\ )|[\\x09\\x0c\\x20]*+(?:")
    assert _scanned(scanner, "allocate a[float32 * 8 * 8]\n") == _reference(scanner, "allocate a[float32 * 8 * 8]\n")


_SMALL_TABLE = {
    "prefix": r"(?>(?!\ ?a)[\x20]+)?", "skipped": " ", "space_led": ["A"], "keywords": [], "literals": {},
    "terminals": [["A", r"\ ?a"], ["NAME", r"[a-z]+"], ["NUMBER", r"\d+(?=;)|\d"], ["_NL", r"\n"]],
}
"""A grammar of its own: a terminal that may start with a space but need
not (``A``), so the dispatched form keeps the skip's look ahead; a number
decided by what follows it."""


@pytest.mark.parametrize("dispatch_from", [_NEVER, 0])
def test_a_grammar_whose_space_led_terminal_may_start_otherwise_scans_as_its_grouped_pattern(
        dispatch_from: int) -> None:
    scanner = Scanner(_SMALL_TABLE, with_runs=False, dispatch_from=dispatch_from)
    rng = random.Random(11)
    pieces = ["a", " a", "  a", "b", "ab", " ", "  ", "1", "12", ";", "\n", "x", "\u00e9"]
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) + "\n"
        assert _scanned(scanner, text) == _reference(scanner, text), text
    if dispatch_from == 0:
        assert scanner._dispatched is not None and scanner._dispatched.pattern.startswith(_SMALL_TABLE["prefix"])


@pytest.mark.parametrize(("terminals", "text"), [
    ([["EE", "\u00e9\u00e9"]], "\u00e9\u00e9\n"),  # starts only past ASCII
    ([["U", "\u00e9"], ["T", "[a\u00e9]x?"], ["X", "x"]], "a\u00e9x\u00e9\n"),  # starts with a or past ASCII
])
def test_a_terminal_that_may_start_past_ascii_scans_as_its_grouped_pattern_once_dispatched(
        terminals: list[list[str]], text: str) -> None:
    """A group needs no look at the character only where its terminals
    can start with nothing else, past ASCII included (a review found
    ``.`` and ``[a\u00e9]`` taken without one)."""
    table = {"prefix": r"[\x20]*+", "skipped": " ", "space_led": [], "keywords": [], "literals": {},
             "terminals": [*terminals, ["_NL", r"\n"]]}
    scanner = Scanner(table, with_runs=False, dispatch_from=0)
    assert _scanned(scanner, text) == _reference(scanner, text)


def test_the_memory_starts_again_past_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``_KNOWN_LIMIT`` texts the memory is emptied before the next
    scan remembers more: it stays bounded over any number of texts."""
    monkeypatch.setattr(scanning, "_KNOWN_LIMIT", 10)
    scanner = Scanner(_table())
    sizes = []
    for text in _soups(7, 200):
        assert _scanned(scanner, text) == _reference(scanner, text), text
        assert len(scanner.known) <= 10 + len(scanner.plain.findall(text))
        sizes.append(len(scanner.known))
    assert any(later < earlier for earlier, later in zip(sizes, sizes[1:]))


def test_a_scanner_whose_spaces_are_skipped_as_lark_skips_them_remembers_nothing() -> None:
    """Where the skip of spaces is Lark's lazy one (a table whose skipped
    text is not a run of characters: ``space_led`` is None), which spaces
    are skipped depends on what follows: nothing is remembered."""
    table = dict(_table(), space_led=None)
    scanner = Scanner(table)
    for text in _soups(3, 100):
        assert _scanned(scanner, text) == _reference(scanner, text), text
    assert not scanner.known


@pytest.mark.parametrize(("regex", "relaxed"), [
    (r"(for|x)(?=[ <(])", r"(for|x)"),
    (r"a++b*+c?+d{2,3}+e+?f*?", r"a+b*c?d{2,3}e+?f*?"),
    (r"(?>(?!\ \*\ )[\x09\x0c\x20]+)?x", r"(?:[\x09\x0c\x20]+)?x"),
    (r"-?((inf|nan)[fh]?(?![A-Za-z(?=)]))", r"-?((inf|nan)[fh]?)"),
    (r"\bx$|^y\B", r"x|y"),
    (r"[]a)(]|[^]b]|\(|\)", r"[]a)(]|[^]b]|\(|\)"),
    (r"(?<=a)b(?<!c)", r"b"),
    (r"(?=a)*b(?!c)+?d\b+e", r"bde"),  # a repeat of what is left out goes with it
    (r"x{}+y{,}+z{2}+", r"x{}+y{,}z{2}"),  # {} is two characters, {,} a repeat (as re reads them)
])
def test_a_relaxed_pattern_leaves_out_what_looks_past_its_match(regex: str, relaxed: str) -> None:
    assert regex_relaxed(regex) == relaxed


@pytest.mark.parametrize("regex", [r"(?P<A>a(b))|(?P<B>[(]c)", r"(x)(?:y)(?>z)(?=w)", r"[(](\()", r"(?i:(ab))(?#no)c",
                                   r"(?i)(x)"])
def test_a_pattern_without_groups_matches_as_the_pattern(regex: str) -> None:
    plain = re.compile(regex_without_groups(regex))
    assert plain.groups == 0
    for text in ["ab", "(c", "xyzw", "((", "abab(c", "xyz", "ABc", "X"]:
        assert [m.span() for m in plain.finditer(text)] == [m.span() for m in re.finditer(regex, text)]


@pytest.mark.parametrize("regex", [r"(a)\1", r"(?P<a>x)(?P=a)", r"(a)(?(1)b|c)", r"(?x) a # (", r"(?ix:a b)"])
def test_a_pattern_the_rewrite_does_not_follow_is_refused(regex: str) -> None:
    with pytest.raises(ValueError, match="the scanner cannot rewrite"):
        regex_without_groups(regex)


def test_a_long_text_is_matched_each_time_not_remembered() -> None:
    """A string literal, a module's header, a buffer's embedded code can be
    hundreds of kilobytes: past ``_LONGEST_KNOWN`` characters nothing is
    kept, and the scan is still the grouped pattern's."""
    scanner = Scanner(_table())
    text = 'f("' + "x" * (scanning._LONGEST_KNOWN + 1) + '")\n'
    for _ in range(2):
        assert _scanned(scanner, text) == _reference(scanner, text)
    assert all(len(known) <= scanning._LONGEST_KNOWN for known in scanner.known)
    assert "f" in scanner.known
