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
from collections.abc import Iterator
from itertools import accumulate
from operator import add, itemgetter
from typing import Any

NO_TERMINAL = "__NO_TERMINAL"  # frontend/lexer.py's NO_TERMINAL (not imported: it loads Lark)
INT_RUN = "__INT_RUN"
INT_RUN_PATTERN = rf"[\x09\x0c\x20]*+(?P<{INT_RUN}>(?:-?\d+, )+-?\d++(?!\.))"
"""Integer literals separated by ``, `` (a shuffle's lane indices, often
thousands in a row), matched at once where a token starts: the grammar's
scanner reads such text as INT, COMMA, INT, ... (no terminal before INT in
its order matches a digit or ``-`` then a digit, and none other than
FLOAT continues a number: a number followed by ``.`` is left to the
general scan), so ``Scanner.scan`` splits the run into exactly those
tokens, at C's speed rather than one match per token."""

_KIND, _VALUE = itemgetter(0), itemgetter(1)
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

    def __init__(self, table: dict[str, Any], with_runs: bool = True):
        pattern_text = f"{INT_RUN_PATTERN}|{table['pattern']}" if with_runs else table["pattern"]
        self.grouped = re.compile(pattern_text)
        self.plain = re.compile(regex_without_groups(pattern_text))
        assert self.plain.groups == 0
        literals = table["literals"]
        kinds = [""] * (self.grouped.groups + 1)
        for name, group in self.grouped.groupindex.items():
            kinds[group] = literals.get(name, name)
        self.kinds: tuple[str, ...] = tuple(kinds)
        """The kind of a token by the index of its group in ``grouped``:
        its terminal's name, or its text for punctuation and keywords."""
        self.keywords = frozenset(table["keywords"])
        terminals = dict(table["terminals"])
        if with_runs:
            terminals[INT_RUN] = INT_RUN_PATTERN[INT_RUN_PATTERN.index(">") + 1 : -1]
        space_led = table["space_led"]
        # The terminals decided by more than their own text, with patterns
        # that match every text they could match in some context.
        self._sensitive: list[tuple[int, re.Pattern[str]]] = []
        self._sensitive_groups: set[int] = set()
        for name, regex in terminals.items():
            relaxed = regex_relaxed(regex)
            if relaxed != regex or space_led is None or name in space_led:
                group = self.grouped.groupindex[name]
                self._sensitive.append((group, re.compile(relaxed)))
                self._sensitive_groups.add(group)
        self._sensitive.sort(key=lambda entry: entry[0])
        self._space_led = [re.compile(regex_relaxed(terminals[name])) for name in space_led or ()]
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
        ``Unhandled`` where a character starts no terminal."""
        texts = self.plain.findall(text)
        ends = list(accumulate(map(len, texts)))
        if not ends or ends[-1] != len(text):
            raise Unhandled  # not one match after another (see the module's docstring)
        found: list[Any] = list(map(self.known.get, texts))
        if None in found:
            self._match_the_rest(text, texts, ends, found)
        kinds, values = list(map(_KIND, found)), list(map(_VALUE, found))
        if NO_TERMINAL in kinds:
            raise Unhandled
        if INT_RUN in kinds:
            return _runs_split(kinds, values, ends)
        return kinds, values, ends

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


def _runs_split(kinds: list[str], values: list[str], ends: list[int]) -> tuple[list[str], list[str], list[int]]:
    """The tokens with each run of integer literals (``INT_RUN``) split into
    the INT and comma tokens the grammar's scanner reads it as."""
    runs = [i for i, kind in enumerate(kinds) if kind == INT_RUN]
    split_kinds: list[str] = []
    split_values: list[str] = []
    split_ends: list[int] = []
    after = 0
    for i in runs:
        split_kinds += kinds[after:i]
        split_values += values[after:i]
        split_ends += ends[after:i]
        numbers = values[i].split(", ")
        count = len(numbers)
        # The end of number j: where the run starts, the lengths of numbers
        # 0..j and a comma and a space after each number before it.
        number_ends = list(map(add, accumulate(map(len, numbers)),
                               range(ends[i] - len(values[i]), ends[i] + 2 * count, 2)))
        run_values = [","] * (2 * count - 1)
        run_values[0::2] = numbers
        run_ends = [0] * (2 * count - 1)
        run_ends[0::2] = number_ends
        run_ends[1::2] = [end + 1 for end in number_ends[:-1]]
        split_kinds += (["INT", ","] * count)[:-1]
        split_values += run_values
        split_ends += run_ends
        after = i + 1
    split_kinds += kinds[after:]
    split_values += values[after:]
    split_ends += ends[after:]
    return split_kinds, split_values, split_ends


# ------------------------------------------------------------------ patterns
_REPEAT = re.compile(r"\{(?:\d+(?:,\d*)?|,\d*)\}")
"""``{m}``, ``{m,}``, ``{m,n}``, ``{,n}``, ``{,}``: a repeat; ``{}`` and
the rest are the characters themselves, as ``re`` reads them."""
_LOOKAROUNDS = ("(?=", "(?!", "(?<=", "(?<!")
_ANCHORS = frozenset("bBAZz")
_BACK_REFERENCE_DIGITS = frozenset("123456789")
_INLINE = re.compile(r"\(\?[aiLmsux]+\)|\(\?#[^)]*\)")
_FLAGGED_GROUP = re.compile(r"\(\?[aiLmsux]*(?:-[imsx]+)?:")
_VERBOSE = re.compile(r"\(\?[aiLmsu]*x[aiLmsux]*[):]")


def regex_without_groups(regex: str) -> str:
    """``regex`` with every capturing group (named or not) made
    non-capturing: the same matches, for ``findall`` to give whole."""
    return _rewritten(regex, relax=False)


def regex_relaxed(regex: str) -> str:
    """``regex`` without what lets a match depend on the text around it or
    on a committed choice: lookarounds and anchors dropped, atomic groups
    made plain, possessive repeats greedy. It matches every text that
    ``regex`` matches in some context (and maybe more); it is ``regex``
    itself where ``regex`` has none of these."""
    return _rewritten(regex, relax=True)


def _rewritten(regex: str, relax: bool) -> str:
    out: list[str] = []
    dropped: list[bool] = []
    """Per open group: whether it is a lookaround being left out."""
    after_dropped = False
    """The last piece was left out whole (a lookaround, an anchor): a
    repeat of it goes with it."""
    for kind, piece in _regex_pieces(regex):
        if after_dropped and kind in ("repeat", "possessive", "lazy"):
            continue
        after_dropped = False
        if kind == "open":
            dropped.append(relax and (bool(dropped) and dropped[-1] or piece.startswith(_LOOKAROUNDS)))
            if not dropped[-1]:
                out.append(_opening(piece, relax))
            continue
        if kind == "close":
            if not dropped.pop():
                out.append(piece)
            else:
                after_dropped = not dropped or not dropped[-1]
            continue
        if dropped and dropped[-1]:
            continue
        if relax and kind == "anchor":
            after_dropped = True
            continue
        if relax and kind == "possessive":
            continue
        out.append(piece)
    return "".join(out)


def _opening(piece: str, relax: bool) -> str:
    """A group's opening as the rewrite keeps it."""
    if piece == "(?>":
        return "(?:" if relax else piece
    if relax:
        return piece
    return "(?:" if piece == "(" or piece.startswith("(?P<") else piece


def _regex_pieces(regex: str) -> Iterator[tuple[str, str]]:
    """The syntax of ``regex`` as (kind, text) pieces: ``escape``,
    ``anchor``, ``class``, ``open`` (a group's opening, up to its
    contents), ``close``, ``repeat``, ``possessive`` and ``lazy`` (the
    ``+`` or ``?`` after a repeat) and ``char``."""
    i, n = 0, len(regex)
    while i < n:
        c = regex[i]
        if c == "\\":
            piece = regex[i : i + 2]
            if piece[1:] in _BACK_REFERENCE_DIGITS:
                raise ValueError(f"the scanner cannot rewrite a back reference: {regex!r}")
            yield ("anchor" if piece[1:] in _ANCHORS else "escape"), piece
        elif c == "[":
            piece = _class_at(regex, i)
            yield "class", piece
        elif c == "(":
            if _VERBOSE.match(regex, i):
                raise ValueError(f"the scanner cannot rewrite a verbose pattern (its spaces and # comments): {regex!r}")
            inline = _INLINE.match(regex, i)
            if inline:  # flags for the whole pattern, or a comment: no group
                piece = inline.group()
                yield "char", piece
            else:
                piece = _opening_at(regex, i)
                yield "open", piece
        elif c == ")":
            piece = c
            yield "close", piece
        elif c in "*+?" or (c == "{" and _REPEAT.match(regex, i)):
            repeat = _REPEAT.match(regex, i)
            piece = repeat.group() if c == "{" and repeat else c
            yield "repeat", piece
            after = regex[i + len(piece) : i + len(piece) + 1]
            if after in ("+", "?"):
                yield ("possessive" if after == "+" else "lazy"), after
                piece += after
        else:
            piece = c
            yield ("anchor" if c in "^$" else "char"), piece
        i += len(piece)


def _class_at(regex: str, i: int) -> str:
    """The character class ``[...]`` that starts at ``i``."""
    j = i + 1
    if regex[j : j + 1] == "^":
        j += 1
    if regex[j : j + 1] == "]":
        j += 1
    while regex[j] != "]":
        j += 2 if regex[j] == "\\" else 1
    return regex[i : j + 1]


def _opening_at(regex: str, i: int) -> str:
    """The opening of the group that starts at ``i``: ``(``, ``(?P<name>``,
    or ``(?`` and the characters that say what it is."""
    if regex.startswith(("(?P=", "(?("), i):
        raise ValueError(f"the scanner cannot rewrite a back reference: {regex!r}")
    if regex.startswith("(?P<", i):
        return regex[i : regex.index(">", i) + 1]
    for opening in (*_LOOKAROUNDS, "(?>", "(?:"):
        if regex.startswith(opening, i):
            return opening
    flagged = _FLAGGED_GROUP.match(regex, i)
    if flagged:
        return flagged.group()
    if regex.startswith("(?", i):
        raise ValueError(f"the scanner cannot rewrite this group: {regex[i:i + 12]!r} in {regex!r}")
    return "("
