"""The scanner of the recursive-descent reader: the grammar's terminals
(the scanner table that grammar.py makes of them) over a whole text at
once, into the tokens' kinds, texts and ends.

Python's regular expressions cost most per match object, and a dump has
a hundred thousand tokens or more. So the scanner runs its pattern twice
over: once without groups (``findall`` then gives each match's text,
spaces before it included, with no match object), and with its groups, one
per terminal, only where a text has not been seen yet. A text seen before
has the kind and token text it had then (``Scanner.known``), which is what
the grouped pattern would find again, unless what follows the text could
change how it reads: a terminal decided by a look past its own end
(``for`` is a loop kind before ``(`` and a name before ``;``), by an atomic
group or a possessive repeat. Such texts are never remembered
(``Scanner.remembers``), and are matched with groups every time.

The matches of the pattern follow one another with nothing between them
(where no terminal starts, one character matches as ``__NO_TERMINAL``), so
a token's end is the sum of the lengths of the texts up to it.
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import accumulate
from operator import add, itemgetter
from typing import Any

from hardboiled.frontend.regex_forms import (
    ASCII,
    certain_from,
    first_characters,
    possessive_repeats_are_greedy,
    regex_relaxed,
    regex_without_groups,
    starts_within,
)

NO_TERMINAL = "__NO_TERMINAL"  # frontend/lexer.py's NO_TERMINAL (not imported: it loads Lark)
INT_RUN = "__INT_RUN"
SHORTEST_RUN = 8
"""Fewer integer literals in a row (``for (x, 0, 8)``, ``ramp(x, 1, 8)``,
nine in ten of the runs in real dumps) are scanned one token at a time:
those texts are remembered (``Scanner.known``), and a run, which ends
with a look past it, is matched with groups and split every time."""
INT_RUN_PATTERN = rf"(?:-?\d+, ){{{SHORTEST_RUN - 1},}}-?\d++(?!\.)"
"""``SHORTEST_RUN`` or more integer literals separated by ``, `` (a
shuffle's lane indices, often thousands in a row), matched at once where a
token starts (tried before the grammar's terminals): the grammar's scanner
reads such text as INT, COMMA, INT, ... (no terminal before INT in its
order matches a digit or ``-`` then a digit, and none other than FLOAT
continues a number: a number followed by ``.`` is left to the general
scan), so ``Scanner.scan`` splits the run into exactly those tokens, at
C's speed rather than one match per token."""

_KIND, _VALUE = itemgetter(0), itemgetter(1)
_DISPATCH_FROM = 1 << 19
"""Characters a scanner reads with ``plain`` before it makes the
dispatched form (``Scanner._dispatch``): making and compiling it take
about 6 ms, and it saves about 16 ns a character (0.22 s of the 14 MB of
real dumps), so it pays from about 400 KB (a compile server, the API, a
batch, a big dump)."""
_SAMPLE_CHARACTERS = 1 << 16
"""How much of the text that makes the dispatched form is counted to
order its groups."""
_KNOWN_LIMIT = 1 << 16
"""Texts remembered at most; past that the memory starts again (a compile
server reads file after file)."""
_LONGEST_KNOWN = 256
"""Longer texts (a string literal, a module's header, a buffer's embedded
GPU code: hundreds of kilobytes) are not remembered: they seldom repeat,
and one match costs little beside their length; so the memory holds at
most 16 million characters of text (about 25 MB)."""


class Unhandled(Exception):
    """The reader does not read this input; Lark will."""


class Scanner:
    """The grammar's terminals as the reader scans them."""

    def __init__(self, table: dict[str, Any], with_runs: bool = True, dispatch_from: int | None = None):
        self._terminals: list[tuple[str, str]] = [
            *([(INT_RUN, INT_RUN_PATTERN)] if with_runs else []), *map(tuple, table["terminals"]), (NO_TERMINAL, ".")]
        """Every alternative of the pattern, in the order it tries them."""
        self._prefix: str = table["prefix"]
        self._skipped: str | None = table["skipped"]
        pattern_text = f"{self._prefix}(?:{'|'.join(f'(?P<{name}>{regex})' for name, regex in self._terminals)})"
        self.grouped = re.compile(pattern_text)
        self.plain = re.compile(regex_without_groups(pattern_text))
        assert self.plain.groups == 0
        self._dispatched: re.Pattern[str] | None = None
        """``plain`` as it is tried faster (``_dispatch``), once the scanner
        has read enough to pay for compiling it."""
        self._scanned = 0
        self._dispatch_from = _DISPATCH_FROM if dispatch_from is None else dispatch_from
        literals = table["literals"]
        kinds = [""] * (self.grouped.groups + 1)
        for name, group in self.grouped.groupindex.items():
            kinds[group] = literals.get(name, name)
        self.kinds: tuple[str, ...] = tuple(kinds)
        """The kind of a token by the index of its group in ``grouped``:
        its terminal's name, or its text for punctuation and keywords."""
        self.keywords = frozenset(table["keywords"])
        terminals = dict(self._terminals)
        del terminals[NO_TERMINAL]
        space_led = table["space_led"]
        # The terminals decided by more than their own text, with patterns
        # that match every text they could match in some context.
        self._sensitive: list[tuple[int, re.Pattern[str]]] = []
        self._sensitive_groups: set[int] = set()
        for name, regex in terminals.items():
            relaxed = regex_relaxed(regex)
            commits = relaxed != regex and not possessive_repeats_are_greedy(regex)
            if commits or space_led is None or name in space_led:
                group = self.grouped.groupindex[name]
                self._sensitive.append((group, re.compile(relaxed)))
                self._sensitive_groups.add(group)
        self._sensitive.sort(key=lambda entry: entry[0])
        self._space_led = [re.compile(regex_relaxed(terminals[name])) for name in space_led or ()]
        self._space_led_names = frozenset(space_led or ())
        self._remember_nothing = space_led is None
        self.known: dict[str, tuple[str, str]] = {}
        """What a text (spaces before the token included) scans as, its
        kind and token text, for the texts that scan the same wherever
        they are. One entry holds both, so that a scan in another thread
        (the API reads in several) never sees one without the other."""

    def remembers(self, text: str, group: int, value: str) -> bool:
        """Whether ``text``, matched as terminal ``group`` with token text
        ``value``, reads so wherever it is.

        A terminal's match depends only on the text it matches unless it
        looks past it (a lookahead, a word boundary) or commits to a
        choice (an atomic group, a possessive repeat): a terminal that
        does either is never remembered; nor is a text that one of them
        tried earlier in the order could match in some other context
        (its pattern without those parts matches it), nor one a terminal
        that may start with a space could match (where one starts, the
        spaces before a token are not skipped)."""
        if self._remember_nothing or group in self._sensitive_groups:
            return False
        for earlier, relaxed in self._sensitive:
            if earlier > group:
                break
            if relaxed.fullmatch(value):
                return False
        return not any(relaxed.fullmatch(text) for relaxed in self._space_led)

    def scan(self, text: str) -> tuple[list[str], list[str], list[int]]:
        """The kinds, texts and ends of the tokens of ``text``, or
        ``Unhandled`` where a character starts no terminal. A run of
        integer literals is one token (``INT_RUN``), which ``split_runs``
        makes the grammar's tokens."""
        pattern = self._dispatched or self._pattern_for(text)
        texts = pattern.findall(text)
        ends = list(accumulate(map(len, texts)))
        if not ends or ends[-1] != len(text):
            raise Unhandled  # not one match after another (see the module's docstring)
        found: list[Any] = list(map(self.known.get, texts))
        if None in found:
            self._match_the_rest(text, texts, ends, found)
        kinds, values = list(map(_KIND, found)), list(map(_VALUE, found))
        if NO_TERMINAL in kinds:
            raise Unhandled
        return kinds, values, ends

    def _pattern_for(self, text: str) -> re.Pattern[str]:
        """``plain``, until the scanner has read ``dispatch_from``
        characters (``_DISPATCH_FROM``; this text included); then the
        dispatched form."""
        self._scanned += len(text)
        if self._scanned < self._dispatch_from:
            return self.plain
        self._dispatched = re.compile(self._dispatch(self.plain.findall(text, 0, _SAMPLE_CHARACTERS)))
        return self._dispatched

    def _dispatch(self, sample: list[str]) -> str:
        """``plain`` with its alternatives grouped by the character a match
        starts with, for ``re`` to try fewer of them per token.

        ``re`` tries every alternative of a choice in turn, and skips one
        at the cost of a comparison only where it starts with a character or
        a class. Here each ASCII character has one group: the alternatives
        whose matches may start with it, in their order (up to the first
        that is certain to match there), behind a look at the character
        unless the group's alternatives cannot start with any other. The
        groups' characters do not overlap, so at most one group may match
        where a token starts, and it finds what ``plain`` finds: the first
        alternative that matches. They are tried most frequent first (in
        ``sample``, tokens as ``plain`` finds them); after them, the
        alternatives as ``plain`` has them, for the characters past ASCII.

        Where every terminal that may start with a skipped character starts
        with one (`` * ``), those terminals go first and the skip needs no
        look ahead: at a space, ``plain`` skips nothing only where one of
        them matches there, and then reads the first of them that does.
        The skip then never gives back what it skipped: ``plain`` would
        give it back only where no terminal starts after it, to read a
        skipped character as ``NO_TERMINAL``, and this form leaves a gap
        there instead; the scan is ``Unhandled`` either way."""
        plain_of = {name: regex_without_groups(regex) for name, regex in self._terminals}
        first = {name: first_characters(regex, ASCII) for name, regex in self._terminals}
        starts = Counter(piece.lstrip(self._skipped or "")[:1] for piece in sample)
        groups = sorted(self._groups(plain_of, first), key=lambda group: -sum(starts[c] for c in group[0]))
        everything = "|".join(f"(?:{plain_of[name]})" for name, _ in self._terminals)
        choice = f"(?:{'|'.join(body for _, body in groups)}|{everything})"
        return f"{self._skip_before(choice)}{choice}"

    def _groups(self, plain_of: dict[str, str], first: dict[str, frozenset[str]]) -> list[tuple[list[str], str]]:
        """``_dispatch``'s groups, in ASCII order: each one's characters and
        pattern."""
        choices: dict[tuple[str, ...], list[str]] = {}
        for character in sorted(ASCII):
            names = tuple(name for name, _ in self._terminals if character in first[name])
            choices.setdefault(names, []).append(character)
        groups: list[tuple[list[str], str]] = []
        for names, characters in choices.items():
            chars = frozenset(characters)
            kept: list[str] = []
            for name in names:
                kept.append(name)
                if certain_from(plain_of[name], chars):
                    break
            body = "|".join(f"(?:{plain_of[name]})" for name in kept)
            alone = all(starts_within(plain_of[name], chars) for name in kept)  # (past ASCII too)
            guard = "" if alone else f"(?={_character_class(characters)})"
            groups.append((characters, f"{guard}(?:{body})"))
        return groups

    def _skip_before(self, choice: str) -> str:
        """What ``_dispatch``'s form reads before ``choice``: the space-led
        terminals, then the skip without a look ahead, where those
        terminals all start with a skipped character; else the table's
        skip."""
        if self._skipped is None or not self._space_led_names:
            return regex_without_groups(self._prefix)
        skipped = frozenset(self._skipped)
        space_led = [regex for name, regex in self._terminals if name in self._space_led_names]
        if not all(starts_within(regex, skipped) for regex in space_led):
            return regex_without_groups(self._prefix)
        leading = "|".join(f"(?:{regex_without_groups(regex)})" for regex in space_led)
        return f"{leading}|{_character_class(sorted(skipped))}*+"

    def _match_the_rest(self, text: str, texts: list[str], ends: list[int], found: list[Any]) -> None:
        """The kinds and values of the texts not known yet, matched with
        groups; remembered where they read the same anywhere."""
        known = self.known
        if len(known) > _KNOWN_LIMIT:
            known.clear()
        match, kind_of = self.grouped.match, self.kinds
        at = 0
        while True:
            try:
                at = found.index(None, at)
            except ValueError:
                return
            piece = texts[at]
            pair = known.get(piece)
            if pair is None:  # not remembered earlier in this text either
                matched = match(text, ends[at] - len(piece))
                assert matched is not None and matched.end() == ends[at], "the grouped and plain patterns disagree"
                group = matched.lastindex
                assert group is not None  # every alternative is a group
                pair = (kind_of[group], matched.group(group))
                if len(piece) <= _LONGEST_KNOWN and self.remembers(piece, group, pair[1]):
                    known[piece] = pair
            found[at] = pair
            at += 1


def split_runs(kinds: list[str], values: list[str], ends: list[int]) -> tuple[list[str], list[str], list[int]]:
    """The tokens with each run of integer literals (``INT_RUN``) split into
    the INT and comma tokens the grammar's scanner reads it as."""
    split_kinds: list[str] = []
    split_values: list[str] = []
    split_ends: list[int] = []
    after = 0
    for i in _indices(kinds, INT_RUN):
        split_kinds += kinds[after:i]
        split_values += values[after:i]
        split_ends += ends[after:i]
        numbers = values[i].split(", ")
        count = len(numbers)
        number_ends = run_ends(numbers, ends[i])
        run_values = [","] * (2 * count - 1)
        run_values[0::2] = numbers
        run_tokens_ends = [0] * (2 * count - 1)
        run_tokens_ends[0::2] = number_ends
        run_tokens_ends[1::2] = [end + 1 for end in number_ends[:-1]]
        split_kinds += (["INT", ","] * count)[:-1]
        split_values += run_values
        split_ends += run_tokens_ends
        after = i + 1
    split_kinds += kinds[after:]
    split_values += values[after:]
    split_ends += ends[after:]
    return split_kinds, split_values, split_ends


def run_ends(numbers: list[str], end: int) -> list[int]:
    """Where each of the literals of a run that ends at ``end`` ends: where
    the run starts, the lengths of the literals up to it and a comma and a
    space after each one before it."""
    start = end - sum(map(len, numbers)) - 2 * (len(numbers) - 1)
    return list(map(add, accumulate(map(len, numbers)), range(start, end + 2 * len(numbers), 2)))


def _indices(items: list[str], wanted: str) -> list[int]:
    """Where ``wanted`` is in ``items``, found at C's speed (the runs are
    a few among a hundred thousand tokens)."""
    found: list[int] = []
    at = -1
    try:
        while True:
            at = items.index(wanted, at + 1)
            found.append(at)
    except ValueError:
        return found


def _character_class(characters: list[str]) -> str:
    """``[...]`` of exactly ``characters``, each written as its code."""
    return "[" + "".join(f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" if ord(c) < 0x10000
                         else f"\\U{ord(c):08x}" for c in characters) + "]"
