"""Checking one selected rewrite on its own: does the statement selection
put in a store's place compute what the store computed?

Selection answers with terms extracted from an e-graph; a rule that equates
two things that differ, a decoding slip or a fault in egglog itself (13.2.0
matched a rule's pattern across two stores: docs/architecture.md,
"Soundness") makes a statement that computes something else, and the
whole-program verification (``--verify``) is optional. This check is not:
every replacement is run against its store in the interpreter, on its own,
before it is put in the program.

The store and its replacement are run side by side:

* every free scalar (loop variables, lets from outside, buffer fields) takes
  the same random value in both; a rewrite must hold whatever they are,
  since no rule knows their values;
* every buffer gets random contents over the part of it the original
  statement touches (found by running it), widened by ``MARGIN`` elements
  on each side: a fragment or tile may read past the elements it uses (a
  window's rows multiplied by the zeros of its Toeplitz block), not further;
* floats are small integers, so that every product and sum of the original
  and of the rewrite is exact whatever order the accelerator adds in, and
  any difference is a different computation, not rounding;
* the temporaries the rewrite reads (operand copies, Toeplitz blocks) are
  filled from their values first, as legalization will fill them;
* fragment alignment is not asked for: staging, after selection, provides it.

Every buffer must hold the same values afterwards, in both runs.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import numpy as np

from hardboiled import ir
from hardboiled.targets.amx import VNNILayout
from hardboiled.verify.interp import Interpreter, InterpreterError, ResourceLimitError, fragment_alignment_unchecked
from hardboiled.verify.values import Pointer, dtype_of, new_array

MARGIN = 4096
"""Elements past the original statement's footprint that a rewrite may read."""
TRIALS = 2
"""Independent draws of the scalars and the buffers' contents."""
_FOOTPRINT_ROUNDS = 64
"""A statement reads at most this many buffers (each found by one run)."""
_FLOAT_SLACK = (1e-3, 1e-6)
"""Relative slack for 16-bit and for wider floats."""
_SCALAR_RANGES = ((1, 9), (0, 9))
"""Free integer scalars are drawn from here, the first trial's from the
first range, every later one's from the second: non-negative, like the
loop variables and extents they stand for, and small enough that the
footprint stays small. None is 0 in the first trial: a term of an address
is often a product of two of them (a buffer's min times its stride), which
a 0 in either hides, and with 0 drawn one time in nine a wrong address
(a min left out) went unseen in both trials for some seeds: over six
seeds, 5 to 10 of the AMX fixtures' 260 mutants in all (either generator:
tests/verify/test_rewrite_check.py), none with this first trial."""


class _Draws:
    """Integers drawn from a seed: SplitMix64 over a counter, in numpy's
    wrapping uint64 arithmetic. All the check asks of a generator, without
    ``numpy.random``, whose import (and what it loads: secrets, hmac,
    hashlib and OpenSSL) took 8 ms of every compile."""

    _GAMMA, _MIX1, _MIX2 = (np.uint64(v) for v in (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB))

    def __init__(self, seed: int):
        self._base = np.array([seed], dtype=np.uint64)  # SplitMix64's state: word n mixes seed + n * gamma
        self._drawn = 0

    def _words(self, count: int) -> np.ndarray:
        z = np.arange(self._drawn + 1, self._drawn + count + 1, dtype=np.uint64) * self._GAMMA + self._base
        self._drawn += count
        z = (z ^ (z >> np.uint64(30))) * self._MIX1
        z = (z ^ (z >> np.uint64(27))) * self._MIX2
        return z ^ (z >> np.uint64(31))

    def integers(self, low: int, high: int, size: int | None = None, endpoint: bool = False) -> np.ndarray:
        """Like ``numpy.random.Generator.integers``: ``size`` int64 values
        in [low, high) (or [low, high] with ``endpoint``), or one."""
        span = high - low + (1 if endpoint else 0)
        if span <= 0:
            raise ValueError(f"no integers in [{low}, {high}{']' if endpoint else ')'}")
        values = (self._words(1 if size is None else size) % np.uint64(span)).astype(np.int64) + low
        return values[0] if size is None else values


class _Outside(Exception):
    """The original statement reached past the buffer region made so far."""

    def __init__(self, name: str, low: int, high: int):
        super().__init__(name)
        self.name, self.low, self.high = name, low, high


class _FootprintInterpreter(Interpreter):
    """An interpreter that, instead of failing on an access outside a
    buffer, says which elements it wanted (relative to the buffer's start)."""

    batches_loops = False  # every access is one iteration's, at its own offset

    @staticmethod
    def _check_bounds(pointer: Pointer, index: np.ndarray, name: str) -> None:
        if index.size and (index.min() < 0 or index.max() >= pointer.array.size):
            raise _Outside(name, int(index.min()) - pointer.offset, int(index.max()) - pointer.offset)


def check_rewrite(original: ir.Stmt, rewritten: ir.Stmt, temporaries: Mapping[str, ir.Expr],
                  layouts: Mapping[str, VNNILayout] | None = None, seed: int = 0) -> str | None:
    """Why ``rewritten`` does not compute what ``original`` does (a sentence
    naming the buffer and the first element that differs), or None if the
    two agree on ``TRIALS`` random draws. ``temporaries``: the buffers the
    rewrite reads that selection introduced, by name, and the value each
    holds. ``layouts``: the AMX buffers the rewrite keeps in VNNI order,
    where the rewrite starts from, and must end with, the original's
    contents in that order. A statement the interpreter cannot run at all
    (a call it does not know) cannot be checked here: None too, and
    ``checked`` tells the two apart (the whole program's --verify, which
    fails on such a call, remains)."""
    return checked(original, rewritten, temporaries, layouts, seed)[1]


def checked(original: ir.Stmt, rewritten: ir.Stmt, temporaries: Mapping[str, ir.Expr],
            layouts: Mapping[str, VNNILayout] | None = None, seed: int = 0) -> tuple[bool, str | None]:
    """Whether the store could be run on its own at all, and ``check_rewrite``'s answer."""
    layouts = layouts or {}
    rng = _Draws(seed)
    # Only the temporaries this rewrite reads: selection passes every one
    # it made in the program, and walking them all for each store made
    # checking quadratic in the number of stores.
    used = {n.name for n in ir.walk(rewritten) if isinstance(n, ir.Variable)}
    read = {name: value for name, value in temporaries.items() if name in used}
    program = _with_temporaries(rewritten, read)
    types = _buffer_types(original)
    scalars = _free_scalars(original, rewritten, read, set(types) | set(temporaries))
    for trial in range(TRIALS):
        scalar_range = _SCALAR_RANGES[min(trial, len(_SCALAR_RANGES) - 1)]
        params = {name: _random_scalar(t, rng, scalar_range) for name, t in scalars.items()}
        try:
            regions = _footprint(original, params, types)
        except (InterpreterError, ResourceLimitError, _Outside):
            return False, None
        buffers = {name: _random_buffer(types[name], regions[name], rng) for name in regions}
        expected = _run(original, params, buffers)
        if expected is None:
            return False, None
        expected = {name: _in_layout(pointer, layouts.get(name)) for name, pointer in expected.items()}
        try:
            with fragment_alignment_unchecked():
                actual = _run_or_raise(program, params, {name: _in_layout(pointer, layouts.get(name))
                                                         for name, pointer in buffers.items()})
        except _Outside as outside:
            return True, (f"it reads '{outside.name}' elements {outside.low}..{outside.high}, more than {MARGIN} "
                          "elements past what the statement reads")
        except InterpreterError as exc:
            return True, f"it cannot run: {exc.diagnostic.message}"
        difference = _first_difference(expected, actual, types)
        if difference is not None:
            return True, difference
    return True, None


def _in_layout(pointer: Pointer, layout: VNNILayout | None) -> Pointer:
    """The buffer's contents as the rewrite keeps them: every whole block
    of ``layout`` the array holds, from the buffer's start, in VNNI order."""
    if layout is None:
        return pointer
    array = pointer.array.copy()
    order = np.array(layout.order(), dtype=np.int64)
    # Blocks start at buffer element 0, which is array index pointer.offset.
    start = pointer.offset % layout.block
    for block_start in range(start, array.size - layout.block + 1, layout.block):
        array[block_start:block_start + layout.block] = pointer.array[block_start + order]
    return Pointer(array, pointer.offset, pointer.name)


def _with_temporaries(rewritten: ir.Stmt, temporaries: Mapping[str, ir.Expr]) -> ir.Stmt:
    """The rewrite inside allocations of the temporaries (those it reads),
    each filled with its value first."""
    program = rewritten
    for name, value in sorted(temporaries.items(), reverse=True):
        lanes = value.type.lanes
        fill = ir.Store(name, value, ir.Ramp(ir.IntImm(0), ir.IntImm(1), lanes))
        program = ir.Allocate(name, value.type.element(), "Stack", (ir.IntImm(lanes),),
                              ir.make_block([fill, program]))
    return program


def _buffer_types(original: ir.Stmt) -> dict[str, ir.Type]:
    """The element type of every buffer the original statement loads or stores."""
    types: dict[str, ir.Type] = {}
    for node in ir.walk(original):
        if isinstance(node, ir.Load):
            types.setdefault(node.name, node.type.element())
        elif isinstance(node, ir.Store):
            types.setdefault(node.name, node.value.type.element())
    return types


def _free_scalars(original: ir.Stmt, rewritten: ir.Stmt, temporaries: Mapping[str, ir.Expr],
                  buffers: set[str]) -> dict[str, ir.Type]:
    """Names read but not bound by either statement (nor a temporary's
    value), other than ``buffers`` (and temporaries) and handles, with
    their types."""
    bound: set[str] = set(buffers) | set(temporaries)
    found: dict[str, ir.Type] = {}
    roots: list[ir.Node] = [original, rewritten, *temporaries.values()]
    for root in roots:
        for node in ir.walk(root):
            if isinstance(node, (ir.Let, ir.LetStmt, ir.For)):
                bound.add(node.name)
            elif isinstance(node, ir.Variable) and not node.type.is_handle:
                found.setdefault(node.name, node.type)
    return {name: t for name, t in sorted(found.items()) if name not in bound}


def _random_scalar(t: ir.Type, rng: _Draws, scalar_range: tuple[int, int]) -> np.ndarray:
    if t.is_float:
        return np.array([rng.integers(-4, 5)], dtype=dtype_of(t.element()))
    if t.is_bool:
        return np.array([rng.integers(0, 2)], dtype=np.bool_)
    return np.array([rng.integers(*scalar_range)], dtype=dtype_of(t.element()))


def _footprint(original: ir.Stmt, params: dict[str, np.ndarray], types: dict[str, ir.Type]
               ) -> dict[str, tuple[int, int]]:
    """The elements of each buffer the original statement touches, as
    (lowest, highest) relative to the buffer's start: run it, widening a
    buffer each time it reaches past what is there."""
    regions = {name: (0, 0) for name in types}
    for _ in range(_FOOTPRINT_ROUNDS):
        buffers = {name: _zero_buffer(name, types[name], region) for name, region in regions.items()}
        try:
            _FootprintInterpreter(params=_bound(params, buffers)).run(original)
            return regions
        except _Outside as outside:
            low, high = regions.get(outside.name, (outside.low, outside.high))
            regions[outside.name] = (min(low, outside.low), max(high, outside.high))
    raise _Outside("", 0, 0)


def _zero_buffer(name: str, t: ir.Type, region: tuple[int, int]) -> Pointer:
    """Zeros over the region, within the interpreter's limit per buffer
    (a statement that reads elements 2^31 apart cannot be run here: the
    whole program's --verify remains)."""
    low, high = region
    return Pointer(new_array(high - low + 1, dtype_of(t), name), -low, "")


def _random_buffer(t: ir.Type, region: tuple[int, int], rng: _Draws) -> Pointer:
    """Random contents over the region and ``MARGIN`` elements either side."""
    low, high = region[0] - MARGIN, region[1] + MARGIN
    size = high - low + 1
    if t.is_float:
        data = rng.integers(-3, 4, size).astype(dtype_of(t))
    elif t.is_bool:
        data = rng.integers(0, 2, size).astype(np.bool_)
    else:
        info = np.iinfo(dtype_of(t))
        low_value, high_value = max(info.min, -(1 << 20)), min(info.max, 1 << 20)
        data = rng.integers(low_value, high_value, size, endpoint=True).astype(dtype_of(t))
    return Pointer(data, -low, "")


def _bound(params: dict[str, np.ndarray], buffers: dict[str, Pointer]) -> dict[str, object]:
    return {**params, **buffers}


def _run(stmt: ir.Stmt, params: dict[str, np.ndarray], buffers: dict[str, Pointer]) -> dict[str, Pointer] | None:
    try:
        return _run_or_raise(stmt, params, buffers)
    except (InterpreterError, _Outside):
        return None


def _run_or_raise(stmt: ir.Stmt, params: dict[str, np.ndarray], buffers: dict[str, Pointer]) -> dict[str, Pointer]:
    state = {name: Pointer(pointer.array.copy(), pointer.offset, name) for name, pointer in buffers.items()}
    _FootprintInterpreter(params=_bound(params, copy.copy(state))).run(stmt)
    return state


def _first_difference(expected: dict[str, Pointer], actual: dict[str, Pointer], types: dict[str, ir.Type]
                      ) -> str | None:
    """The first element of any buffer where the runs differ. Integers must
    be equal; floats within ``_FLOAT_SLACK`` of the largest magnitude (an
    epilogue's exp or division is not exact, and a rule may reassociate a
    sum around it), far below the whole units a wrong operand makes."""
    for name in sorted(expected):
        if np.array_equal(expected[name].array, actual[name].array):
            continue  # equal element for element (most buffers: every one the statement leaves alone)
        want, got = expected[name].array.astype(np.float64), actual[name].array.astype(np.float64)
        slack = 0.0
        if types[name].is_float:
            finite = np.abs(want[np.isfinite(want)])
            slack = _FLOAT_SLACK[types[name].bits > 16] * max(1.0, float(finite.max()) if finite.size else 0.0)
        with np.errstate(invalid="ignore"):
            same = (want == got) | (np.isnan(want) & np.isnan(got)) | (np.abs(want - got) <= slack)
        if not bool(np.all(same)):
            first = int(np.nonzero(~same)[0][0])
            return (f"'{name}' element {first - expected[name].offset} is {actual[name].array[first].item()!r} "
                    f"where the statement computes {expected[name].array[first].item()!r}")
    return None
