"""What the scanner (scanning.py) needs of the grammar's regular
expressions.

Read from ``re``'s own parse of them (``re._parser``): the characters a
match may start with (``first_characters``), and whether a match is
certain once its first character is there (``certain_from``). Both
answers may be wrong only in the safe direction: a character said to start
a match that never does, or a match said to be uncertain that is certain,
costs the scanner speed; the other way round would change what it reads.
So anything these functions do not follow (a flag that changes how
characters match, a construct not listed) gets the safe answer.

Rewritten as text: the same pattern without its groups
(``regex_without_groups``), and one that matches whatever the pattern may
match in some context (``regex_relaxed``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from re import _constants as sre
from re import _parser
from typing import Any

ASCII = frozenset(map(chr, range(128)))

_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
_ZERO_WIDTH = (sre.AT, sre.ASSERT, sre.ASSERT_NOT)
_ONE_CHARACTER = (sre.LITERAL, sre.NOT_LITERAL, sre.IN, sre.ANY)
_FLAGS_THAT_CHANGE_CHARACTERS = re.IGNORECASE | re.DOTALL


def first_characters(regex: str, alphabet: frozenset[str]) -> frozenset[str]:
    """The characters of ``alphabet`` that a match of ``regex`` may start
    with: all of them where ``regex`` may match the empty text (then what
    follows the match starts it) or uses what this does not follow."""
    found, may_be_empty, _ = _first_of_pattern(regex, alphabet)
    return alphabet if may_be_empty else frozenset(found)


def starts_within(regex: str, characters: frozenset[str]) -> bool:
    """Whether every match of ``regex`` starts with one of ``characters``
    (never empty); False where this cannot tell."""
    _, may_be_empty, may_start_outside = _first_of_pattern(regex, characters)
    return not may_be_empty and not may_start_outside


def _first_of_pattern(regex: str, alphabet: frozenset[str]) -> tuple[set[str], bool, bool]:
    items = _parsed(regex)
    if items is None:
        return set(alphabet), False, True
    return _first(items, alphabet)


@lru_cache(maxsize=256)
def _parsed_cached(regex: str) -> tuple[Any, ...] | None:
    parsed = _parser.parse(regex)
    return None if parsed.state.flags & _FLAGS_THAT_CHANGE_CHARACTERS else tuple(parsed)


def _parsed(regex: str) -> list[Any] | None:
    """``re``'s parse of ``regex``, its parts in order; None where a flag
    for the whole pattern changes how characters match. (The scanner asks
    of each terminal several times.)"""
    items = _parsed_cached(regex)
    return None if items is None else list(items)


def _first(items: list[Any], alphabet: frozenset[str]) -> tuple[set[str], bool, bool]:
    """What the sequence ``items`` may start with: the characters of
    ``alphabet``, whether it may match the empty text (then the characters
    are only those of its leading parts that may), and whether a character
    out of ``alphabet``."""
    found: set[str] = set()
    outside = False
    for op, argument in items:
        if op is sre.LITERAL:
            character = chr(argument)
            return found | ({character} & alphabet), False, outside or character not in alphabet
        if op is sre.NOT_LITERAL:
            return found | (alphabet - {chr(argument)}), False, True
        if op is sre.IN:
            inside, beyond = _class_members(argument, alphabet)
            return found | inside, False, outside or beyond
        if op in _ZERO_WIDTH:
            continue
        if op is sre.SUBPATTERN and not argument[1] & _FLAGS_THAT_CHANGE_CHARACTERS:
            first, may_be_empty, beyond = _first(list(argument[-1]), alphabet)
        elif op is sre.ATOMIC_GROUP:
            first, may_be_empty, beyond = _first(list(argument), alphabet)
        elif op is sre.BRANCH:
            branches = [_first(list(branch), alphabet) for branch in argument[1]]
            first = set().union(*(chars for chars, _, _ in branches))
            may_be_empty = any(empty for _, empty, _ in branches)
            beyond = any(out for _, _, out in branches)
        elif op in _REPEATS:
            first, may_be_empty, beyond = _first(list(argument[2]), alphabet)
            may_be_empty = may_be_empty or argument[0] == 0
        else:  # ANY, a flagged group, and what this does not follow: any character
            return set(alphabet), False, True
        found |= first
        outside = outside or beyond
        if not may_be_empty:
            return found, False, outside
    return found, True, outside


def _class_members(members: list[Any], alphabet: frozenset[str]) -> tuple[frozenset[str], bool]:
    """The characters of ``alphabet`` that a character class (``[...]``)
    may hold, and whether it may hold one out of ``alphabet``."""
    negated = bool(members) and members[0][0] is sre.NEGATE
    inside: set[str] = set()
    beyond = negated
    for member, value in members[negated:]:
        if member is sre.LITERAL:
            inside.add(chr(value))
            beyond = beyond or chr(value) not in alphabet
        elif member is sre.RANGE:
            low, high = value
            inside.update(c for c in alphabet if low <= ord(c) <= high)
            beyond = beyond or high - low >= len(alphabet) or any(chr(i) not in alphabet for i in range(low, high + 1))
        elif member is sre.CATEGORY and value in _CATEGORIES:
            inside.update(c for c in alphabet if _CATEGORIES[value].fullmatch(c))
            beyond = True
        else:  # what this does not follow: any character may be in it
            return alphabet, True
    if negated:  # what the members leave out (a category's characters past ASCII too), and characters past the alphabet
        return alphabet - inside, True
    return alphabet & inside, beyond


def _categories() -> dict[Any, re.Pattern[str]]:
    return {sre.CATEGORY_DIGIT: re.compile(r"\d"), sre.CATEGORY_NOT_DIGIT: re.compile(r"\D"),
            sre.CATEGORY_SPACE: re.compile(r"\s"), sre.CATEGORY_NOT_SPACE: re.compile(r"\S"),
            sre.CATEGORY_WORD: re.compile(r"\w"), sre.CATEGORY_NOT_WORD: re.compile(r"\W")}


_CATEGORIES = _categories()
"""The classes ``\\d``, ``\\s``, ``\\w`` and their complements, as ``re``
parses them, and as patterns that test one character."""


def certain_from(regex: str, characters: frozenset[str]) -> bool:
    """Whether ``regex`` matches wherever the text starts with one of
    ``characters``, whatever follows: its first part is a character it
    takes (a literal, a class, or a choice with a one-character branch)
    and every part after it may match nothing (a repeat of at least zero).
    An alternative that follows a certain one in a choice is never tried."""
    items = _parsed(regex)
    if items is None:
        return False
    while len(items) == 1 and items[0][0] is sre.SUBPATTERN and not items[0][1][1]:
        items = list(items[0][1][-1])
    if not items or not all(op in _REPEATS and argument[0] == 0 for op, argument in items[1:]):
        return False
    op, argument = items[0]
    if op is sre.LITERAL:
        return characters <= {chr(argument)}
    if op is sre.IN:
        if not all(member in (sre.LITERAL, sre.RANGE) or (member is sre.CATEGORY and value in _CATEGORIES)
                   for member, value in argument):
            return False  # negated, or what this does not follow
        inside, _ = _class_members(argument, characters)
        return characters <= inside
    if op is sre.BRANCH:
        single = {chr(branch[0][1]) for branch in argument[1]
                  if len(branch) == 1 and branch[0][0] is sre.LITERAL}
        return characters <= single
    return False


def possessive_repeats_are_greedy(regex: str) -> bool:
    """Whether ``regex`` commits to no choice but by possessive repeats
    that never give back what a greedy repeat would: then it matches
    wherever ``regex_relaxed(regex)`` matches, the same text, and so reads
    the same whatever follows its match. (A string literal's
    ``"[^"\\]*(?:\\.[^"\\]*)*+"``: the repeat stops only before a
    character it cannot take, which is the closing quote.)

    Such a repeat, ``X*+`` followed by ``R``, gives back nothing because a
    greedy one could not use it: every part of ``X`` is one character or
    a repeat of one, and the repeated character cannot start what follows
    that repeat (the rest of ``X``, or ``X`` again or ``R``), so no
    iteration can end earlier; and ``R`` cannot start where ``X`` starts,
    so no iteration can be given back. False where anything else commits
    (a look around, an anchor, an atomic group), or where this cannot tell."""
    items = _parsed(regex)
    return items is not None and _commits_only_as_greedy(items, [])


def _commits_only_as_greedy(items: list[Any], after: list[Any] | None) -> bool:
    """``possessive_repeats_are_greedy`` for the sequence ``items``, which
    ``after`` follows; None where what follows is not known (inside a
    greedy repeat, which may repeat it): then a possessive repeat in it
    counts as a commitment."""
    for at, (op, argument) in enumerate(items):
        rest = None if after is None else items[at + 1:] + after
        if op in _ZERO_WIDTH or op is sre.ATOMIC_GROUP:
            return False
        if op is sre.SUBPATTERN:
            # Flags change what a character part holds, which only the check
            # of a possessive repeat reads; where what follows is not known,
            # any possessive repeat is refused unread.
            flagged = after is not None and argument[1] & _FLAGS_THAT_CHANGE_CHARACTERS
            if flagged or not _commits_only_as_greedy(list(argument[-1]), rest):
                return False
        elif op is sre.BRANCH:
            if not all(_commits_only_as_greedy(list(branch), rest) for branch in argument[1]):
                return False
        elif op is sre.POSSESSIVE_REPEAT:
            if rest is None or not _gives_nothing_back(list(argument[2]), rest):
                return False
        elif op in _REPEATS:
            if not _commits_only_as_greedy(list(argument[2]), None):
                return False
        elif op not in _ONE_CHARACTER:
            return False
    return True


def _gives_nothing_back(body: list[Any], rest: list[Any]) -> bool:
    """Whether a possessive repeat of ``body`` followed by ``rest`` gives
    back nothing a greedy repeat would (``possessive_repeats_are_greedy``)."""
    body_first, body_may_be_empty, body_outside = _first(body, ASCII)
    rest_first, rest_may_be_empty, rest_outside = _first(rest, ASCII)
    if body_may_be_empty or body_outside or rest_may_be_empty or rest_outside or body_first & rest_first:
        return False
    for at, (op, argument) in enumerate(body):
        if op in _ONE_CHARACTER:
            continue
        if op not in (sre.MAX_REPEAT, sre.POSSESSIVE_REPEAT) or len(argument[2]) != 1 \
                or argument[2][0][0] not in _ONE_CHARACTER:
            return False
        follow, follow_may_be_empty, follow_outside = _first(body[at + 1:], ASCII)
        if follow_outside:
            return False
        if follow_may_be_empty:
            follow = follow | body_first | rest_first
        if any(_holds(argument[2][0], character) for character in follow):
            return False
    return True


def _holds(item: Any, character: str) -> bool:
    """Whether the one-character part ``item`` may match ``character``."""
    op, argument = item
    if op is sre.LITERAL:
        return chr(argument) == character
    if op is sre.NOT_LITERAL:
        return chr(argument) != character
    if op is sre.ANY:
        return character != "\n"
    inside, _ = _class_members(argument, frozenset(character))
    return bool(inside)


# ------------------------------------------------------------------ rewrites
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
