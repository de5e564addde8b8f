"""Shuffle tables as arithmetic: which lane of its source each lane of a
shuffle reads, computed from the lane's index instead of read from memory.

A lane spread over GPU threads (``spread_over_threads``) looks its source
lane up in a table, one entry per lane. In a kernel the table is memory: a
load the thread waits for before the load of the data it names, every
trip of every fill. The shuffles that feed a Tensor Core operand are
regular (a padded row, a Toeplitz band, interleaved phases), so most
tables are one affine function of the digits of the lane's index in a
mixed radix (its row and column, say), with one constant (the padding
lane) outside a box:

    t[i] = a0 * (i / p0) + a1 * (i / p1 % (p0 / p1)) + ... + c   inside the box
           fallback                                             outside

``affine_form`` finds such a form when one reproduces every entry, and
returns None otherwise (the emitter then keeps the table). On an H200,
conv2d's fills ran 1.5 times faster once their tables were arithmetic
(docs/performance.md).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

MAX_DIGITS = 3
"""Digits of a lane index tried, most significant first: a row and a
column, or a row, a group and a place in the group (upsample's phases)."""

MAX_FULL_CHECKS = 4
"""Candidates that fit every lane but the padding, checked against the
whole table before the table is kept as it is."""


@dataclass(frozen=True, slots=True)
class AffineForm:
    """``value = sum(steps[k] * digit k) + offset``, kept where every bound
    holds, else ``fallback``. Digit k of lane i is ``i / places[k]``, modulo
    ``places[k - 1] / places[k]`` below the first."""

    places: tuple[int, ...]
    """The place value of each digit, most significant first; the last is 1."""
    steps: tuple[int, ...]
    offset: int
    bounds: tuple[tuple[int, str, int], ...]
    """(term, ">=" or "<=", limit), only those the table needs. The terms
    (``terms``) are the digits, the value, and the value less each digit's
    part (a Toeplitz band's row less column, beside a phase)."""
    fallback: int | None

    def digits(self, i: int) -> list[int]:
        found = [i // self.places[0]]
        return found + [i // place % (above // place) for above, place in zip(self.places, self.places[1:])]

    def terms(self, i: int) -> list[int]:
        digits = self.digits(i)
        value = sum(s * d for s, d in zip(self.steps, digits)) + self.offset
        return [*digits, value, *(value - s * d for s, d in zip(self.steps, digits))]

    def at(self, i: int) -> int:
        terms = self.terms(i)
        inside = all(terms[k] >= limit if op == ">=" else terms[k] <= limit for k, op, limit in self.bounds)
        value = terms[len(self.places)]
        return value if inside or self.fallback is None else self.fallback


def affine_form(table: Sequence[int]) -> AffineForm | None:
    """The simplest form that reproduces ``table`` exactly, or None. Most
    wrong candidates fail on one of the first lanes they check; a candidate
    that fits every lane but the padding costs a pass over the table, and
    after MAX_FULL_CHECKS of those the table stays a table (an identity
    with one stray lane fits every place chain so).

    A kernel's statements repeat the same few shuffles (an unrolled conv1d:
    384 searches of 2 tables, 1.4 s), and the answer depends on the table
    alone: each table is searched once per process."""
    return _affine_form(tuple(table))


@functools.lru_cache(maxsize=256)
def _affine_form(table: tuple[int, ...]) -> AffineForm | None:
    if len(table) < 2:
        return None
    # the padding lane: the value most lanes share, or one past either end
    # of the source (a lone padded lane)
    frequent, count = Counter(table).most_common(1)[0]
    fallbacks: list[int | None] = [None] + ([frequent] if count > 1 else [])
    fallbacks += [v for v in (max(table), min(table)) if v not in fallbacks]
    inside = {fallback: [i for i, v in enumerate(table) if v != fallback] for fallback in fallbacks}
    members = {fallback: set(lanes) for fallback, lanes in inside.items()}
    full_checks = 0
    for places in _place_chains(len(table)):
        for fallback in fallbacks:
            form = _fit(table, places, inside[fallback], members[fallback])
            if form is None:
                continue
            if fallback is None:
                return form
            boxed = _boxed(form, table, fallback, inside[fallback])
            if boxed is not None:
                return boxed
            full_checks += 1
            if full_checks == MAX_FULL_CHECKS:
                return None
    return None


def _place_chains(lanes: int) -> Iterator[tuple[int, ...]]:
    """Place values of up to MAX_DIGITS digits of an index below ``lanes``,
    fewest digits first; each place divides the one above it."""
    chains: list[tuple[int, ...]] = [(1,)]
    for _ in range(MAX_DIGITS):
        yield from chains
        chains = [(p, *chain) for chain in chains for p in range(chain[0] * 2, lanes, chain[0])
                  if lanes % p == 0]


def _fit(table: Sequence[int], places: tuple[int, ...], inside: list[int], members: set[int]) -> AffineForm | None:
    """The affine form over ``places`` of the lanes ``inside`` (``members``
    too), without bounds, or None."""
    if not inside:
        return None
    steps = tuple(_step(table, places, inside, members, k) for k in range(len(places)))
    plain = AffineForm(places, steps, 0, (), None)
    form = AffineForm(places, steps, table[inside[0]] - plain.at(inside[0]), (), None)
    if any(form.at(i) != table[i] for i in inside):
        return None
    return form


def _boxed(form: AffineForm, table: Sequence[int], fallback: int, inside: list[int]) -> AffineForm | None:
    """``form`` inside the box its ``inside`` lanes span, ``fallback``
    outside, with the fewest bounds; None if that does not reproduce the
    table."""
    terms = [form.terms(i) for i in inside]
    bounds = [bound for k in range(len(terms[0]))
              for bound in ((k, ">=", min(t[k] for t in terms)), (k, "<=", max(t[k] for t in terms)))]
    return _with_fewest_bounds(AffineForm(form.places, form.steps, form.offset, tuple(bounds), fallback), table)


def _step(table: Sequence[int], places: tuple[int, ...], inside: list[int], members: set[int], k: int) -> int:
    """What one more in digit k adds to the value: from the first lane whose
    next one in that digit (the lane ``places[k]`` further on) is inside
    too, with no carry into the digit above; 0 where none is."""
    place, radix = places[k], (places[k - 1] // places[k] if k else None)
    for i in inside:
        if i + place in members and (radix is None or i // place % radix != radix - 1):
            return table[i + place] - table[i]
    return 0


def _with_fewest_bounds(form: AffineForm, table: Sequence[int]) -> AffineForm | None:
    """The form if its box reproduces the table, without each bound the
    table does not need (a lower bound of 0 on a digit, which every lane
    meets, say), so that the emitted test is as short as it can be; None if
    the box does not reproduce it."""
    terms = [form.terms(i) for i in range(len(table))]
    value = len(form.places)
    holds = [[t[k] >= limit if op == ">=" else t[k] <= limit for t in terms] for k, op, limit in form.bounds]
    failing = [sum(not h[i] for h in holds) for i in range(len(table))]
    if any((failing[i] == 0 and terms[i][value] != v) or (failing[i] and v != form.fallback)
           for i, v in enumerate(table)):
        return None
    kept = []
    for bound, held in zip(form.bounds, holds):
        # dropped, the bound lets in the lanes that fail it alone
        if all(held[i] or failing[i] > 1 or terms[i][value] == table[i] for i in range(len(table))):
            failing = [f - (not h) for f, h in zip(failing, held)]
        else:
            kept.append(bound)
    return AffineForm(form.places, form.steps, form.offset, tuple(kept), form.fallback)


def c_expression(form: AffineForm, i: str) -> str:
    """C for the form at lane ``i`` (a C expression of a lane index, never
    negative)."""
    terms = [f"(({i}) / {form.places[0]})" if form.places[0] > 1 else f"({i})"]
    for above, place in zip(form.places, form.places[1:]):
        terms.append(f"((({i}) / {place}) % {above // place})" if place > 1 else f"(({i}) % {above})")
    digits = list(terms)
    terms.append(_sum(form.steps, digits, form.offset))
    terms += [_sum([0 if j == k else s for j, s in enumerate(form.steps)], digits, form.offset)
              for k in range(len(digits))]
    value = terms[len(digits)]
    tests = [f"{terms[k]} {op} {limit}" for k, op, limit in form.bounds]
    if not tests:
        return value
    return f"(({' && '.join(tests)}) ? {value} : {form.fallback})"


def _sum(steps: Sequence[int], digits: Sequence[str], offset: int) -> str:
    value = "".join(_term(step, text) for step, text in zip((*steps, offset), (*digits, "")))
    value = value.removeprefix(" + ").replace(" - ", "-", 1 if value.startswith(" - ") else 0) or "0"
    return f"({value})" if " " in value else value


def _term(step: int, text: str) -> str:
    """`` + step * text`` or `` - |step| * text`` (a constant without
    ``text``), nothing for 0."""
    if step == 0:
        return ""
    sign = " - " if step < 0 else " + "
    if not text:
        return f"{sign}{abs(step)}"
    return f"{sign}{text}" if abs(step) == 1 else f"{sign}{abs(step)} * {text}"
