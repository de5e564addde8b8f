"""A schedule's ``(repeat N S...)`` run round by round, to its fixpoint.

egglog runs ``(repeat N S...)`` N times even after a round has changed
nothing. A round that reports no update added nothing to the database,
and egglog matches each rule against what is new since that rule last
ran: in a plain schedule (``_plain``: runs of rulesets, repeat, saturate,
seq) every later round finds nothing to do either, and the rest are
wasted. The default schedule repeats 20 rounds, and most programs reach
their fixpoint in a handful (the AMX matmul in 5: three quarters of its
saturation time went to rounds that changed nothing). The egglog child
(select/eqsat_child.py) runs a plain top-level ``(run-schedule ...)`` one
part at a time with ``schedule_parts``, and a repeat one round at a time
until a round reports no update; the e-graph it ends with, and so every
extraction, is the one egglog's own repeat would leave. Anything else
(``:until``, which reads the whole database; a ``let-scheduler``, whose
state the parts share) runs as written.

This module reads text only (the child imports it; it loads nothing).
"""

from __future__ import annotations

_REPEAT_HEAD = "repeat"


def schedule_parts(form: str) -> list[tuple[str, int]] | None:
    """For a top-level ``(run-schedule X...)`` form: one
    ``(run-schedule ...)`` form per X, to run in order, each with how many
    rounds it may take (a repeat's count, the repeat itself taken away;
    1 for anything else). Each part is ``form`` with everything else blanked
    (newlines kept), so that egglog's positions stay those of the file.
    None for any other form, for one this does not read, and for a schedule
    that is not plain (``_plain``): egglog runs those as written."""
    if not form.lstrip().startswith("(run-schedule"):
        return None  # a rule, a store, a check: not read character by character
    spans = _spans(form)
    if spans is None:
        return None
    start, end, children = spans
    if len(children) < 2 or _atom(form, children[0]) != "run-schedule":
        return None
    if not all(_plain(form, child) for child in children[1:]):
        return None
    head_end = children[0][1]
    parts = []
    for child in children[1:]:
        inner = child[2]
        if len(inner) >= 3 and _atom(form, inner[0]) == _REPEAT_HEAD and _count(form, inner[1]) is not None:
            count = _count(form, inner[1])
            assert count is not None
            kept = (inner[2][0], inner[-1][1])
        else:
            count, kept = 1, (child[0], child[1])
        parts.append((_blank_except(form, ((start, head_end), kept, (end - 1, end))), count))
    return parts


_Span = tuple[int, int, list]  # start, end, children (for a list; empty for an atom)


def _spans(text: str) -> _Span | None:
    """The one s-expression in ``text`` as nested spans (comments
    skipped), or None (more or less than one form, a string, unbalanced)."""
    stack: list[tuple[int, list[_Span]]] = []
    top: list[_Span] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c == "(":
            stack.append((i, []))
            i += 1
        elif c == ")":
            if not stack:
                return None
            opened, children = stack.pop()
            (stack[-1][1] if stack else top).append((opened, i + 1, children))
            i += 1
        elif c == ";":
            while i < n and text[i] != "\n":
                i += 1
        elif c == '"':
            return None  # no schedule names a string: egglog reads such a form itself
        else:
            j = i
            while j < n and text[j] not in ' \t\r\n()";':
                j += 1
            (stack[-1][1] if stack else top).append((i, j, []))
            i = j
    if stack or len(top) != 1 or not top[0][2] and text[top[0][0]] != "(":
        return None
    return top[0]


def _atom(text: str, span: _Span) -> str | None:
    start, end, children = span
    return None if children or text[start] == "(" else text[start:end]


COMBINATORS = {"repeat": 1, "saturate": 0, "seq": 0}
"""The combinators a plain schedule is made of (and a schedule file may
use: rules.py's ``check_schedule``), with how many counts come before
their schedules."""


def _plain(text: str, span: _Span) -> bool:
    """Whether a schedule is made of ``(run RULESET)``, ``repeat``,
    ``saturate`` and ``seq`` only (the schedules rules.py's
    ``check_schedule`` lets a schedule file hold). Only for such a schedule
    does a round that adds nothing mean a fixpoint: egglog matches a rule
    against what is new since it last ran, so a round that added nothing
    leaves the next nothing to match. A schedule that reads the whole
    database (``:until``), or that keeps state across its parts (a
    ``let-scheduler`` and its ``run-with``), is run as written."""
    children = span[2]
    if not children:
        return False
    head = _atom(text, children[0])
    if head == "run":
        return len(children) == 2 and _name(text, children[1])
    if head not in COMBINATORS:
        return False
    counts = COMBINATORS[head]
    if len(children) < 2 + counts or any(_count(text, c) is None for c in children[1:1 + counts]):
        return False
    return all(_plain(text, child) for child in children[1 + counts:])


def _name(text: str, span: _Span) -> bool:
    atom = _atom(text, span)
    return atom is not None and not atom.startswith(":")


def _count(text: str, span: _Span) -> int | None:
    atom = _atom(text, span)
    return int(atom) if atom is not None and atom.isascii() and atom.isdigit() and len(atom) <= 18 else None


def _blank_except(text: str, kept: tuple[tuple[int, int], ...]) -> str:
    """``text`` with every character outside the ``kept`` ranges a space
    (line breaks stay)."""
    pieces = []
    at = 0
    for start, end in kept:
        pieces.append(_blank(text[at:start]))
        pieces.append(text[start:end])
        at = end
    pieces.append(_blank(text[at:]))
    return "".join(pieces)


def _blank(text: str) -> str:
    return "".join(c if c == "\n" else " " for c in text)
