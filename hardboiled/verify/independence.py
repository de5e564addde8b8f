"""Serial loops whose iterations are independent, so the interpreter may
run them batched like parallel ones.

Halide leaves an atomic update it did not vectorize as a nest of serial
loops around one scalar store (``mm[x*16 + y] = mm[x*16 + y] + A*B``,
the remainder of a reduction split, a transposed accumulator, a tile whose
size depends on the block under a GuardWithIf tail). Interpreted one
iteration at a time such a nest costs a statement per product, which is
what makes verifying it slow. An iteration of loop ``v`` reads and writes
only its own elements when

* the body allocates, forks, synchronizes or calls nothing that has
  effects, and stores each buffer it writes at one index only,
  ``buf[idx] = value`` (the update, and the error-bound program's
  ``buf.err[idx]`` beside it), and reads a buffer it writes only at that
  index: the body's *shape*, which ``update_nest`` reads once per loop;
* no element's ``idx`` is reached from two iterations of ``v``: the
  body's *indices*, which ``touch_disjoint_elements`` checks every time
  the loop starts, on the values its indices take over every iteration of
  ``v`` and of the loops inside the body. The check is exact (it holds for
  a transposed ``y*W + x`` whose row width ``W`` is only known at run
  time), and needs indices that read no memory, with the lets of the body
  written out, and inner loops whose bounds the body does not compute.

Then every element is updated by one iteration only, in the same order as
serially, and running the iterations in lockstep computes the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hardboiled import ir
from hardboiled.ir.visitor import rewrite

_NOT_ALLOWED = (ir.Allocate, ir.Free, ir.Fork, ir.Acquire, ir.Atomic, ir.Evaluate, ir.AssertStmt, ir.Realize)


@dataclass(frozen=True)
class UpdateNest:
    """A loop body of the shape above: what checking its indices needs."""

    indices: tuple[ir.Expr, ...]
    """The index of every buffer the body stores, with the body's lets
    written out: expressions of the loop variables and of names bound
    outside the loop."""
    inner: tuple[ir.For, ...]
    """The loops inside the body; their bounds name nothing the body binds."""


def update_nest(loop: ir.For, nodes: list[ir.Node]) -> UpdateNest | None:
    """The serial ``loop`` (``nodes``: its body's nodes) as an update nest,
    or None when its body does not have that shape."""
    if loop.kind not in (ir.ForKind.SERIAL, ir.ForKind.UNROLLED):
        return None
    if any(isinstance(n, _NOT_ALLOWED) for n in nodes):
        return None
    stores = _stores_at_one_index(nodes)
    lets = _lets(nodes)
    if stores is None or lets is None:
        return None
    inner = tuple(n for n in nodes if isinstance(n, ir.For))
    bound = set(lets) | {n.name for n in inner} | {loop.name}
    if any(_names(bound, e) for n in inner for e in (n.min, n.extent)):
        return None
    indices = []
    for store in stores.values():
        index = _written_out(store.index, lets)
        if index is None or any(isinstance(n, (ir.Load, ir.Call)) for n in ir.walk(index)):
            return None
        indices.append(index)
    return UpdateNest(tuple(indices), inner)


def _stores_at_one_index(nodes: list[ir.Node]) -> dict[str, ir.Store] | None:
    """The store of every buffer the nodes write, when each is stored at one
    index, unpredicated, and read only at that index."""
    stores: dict[str, ir.Store] = {}
    for n in nodes:
        if isinstance(n, ir.Store):
            if n.predicate is not None or stores.setdefault(n.name, n).index != n.index:
                return None
    if not stores or any(isinstance(n, ir.Load) and n.name in stores and n.index != stores[n.name].index
                         for n in nodes):
        return None
    return stores


def _lets(nodes: list[ir.Node]) -> dict[str, ir.Expr] | None:
    """The value of every let the nodes bind (None when one name is bound
    twice: which value an index sees would depend on where it is)."""
    lets: dict[str, ir.Expr] = {}
    for n in nodes:
        if isinstance(n, (ir.LetStmt, ir.Let)):
            if n.name in lets:
                return None
            lets[n.name] = n.value
    return lets


def iteration_points(ranges: list[np.ndarray], rows: int) -> list[np.ndarray]:
    """Every point of the iteration space ``ranges`` spans (the loop's, then
    the inner loops'), for each of ``rows`` batch rows: a column per loop,
    row ``r * points + p`` being point p of batch row r."""
    return [np.tile(axis.reshape(-1), rows)[:, None] for axis in np.meshgrid(*ranges, indexing="ij")]


def iterations_disjoint(indices: list[np.ndarray], points: list[np.ndarray], rows: int) -> bool:
    """Whether, at the ``points`` (``iteration_points``), the loop's
    iterations touch disjoint elements: ``indices`` are the stores' indices
    evaluated there (a row per point, or one row every point shares)."""
    count = len(points[0])
    row = np.repeat(np.arange(rows), count // rows)
    return all(touch_disjoint_elements(row, points[0][:, 0], np.broadcast_to(
        index.reshape(-1, index.shape[-1]), (count, index.shape[-1]))) for index in indices)


def touch_disjoint_elements(row: np.ndarray, iteration: np.ndarray, index: np.ndarray) -> bool:
    """Whether no element is reached by two iterations: ``index`` holds the
    elements one point of the iteration space touches (a row per point, a
    column per lane), ``iteration`` the loop's value at that point, ``row``
    the enclosing batch's row (iterations of different rows are already
    independent)."""
    lanes = index.shape[1]
    elements = index.reshape(-1).astype(np.int64, copy=False)
    if elements.size == 0:
        return True
    low = int(elements.min())
    span = int(elements.max()) - low + 1
    # Each (batch row, element) touched as one number: the element's
    # offset in its row's span of elements.
    keys = np.repeat(row.astype(np.int64, copy=False) * span, lanes) + (elements - low)
    iterations = np.repeat(iteration, lanes)
    slots = (int(row.max()) + 1) * span
    if slots <= _DENSE_SLOTS_PER_KEY * keys.size + _DENSE_SLOTS_MIN:
        # A table with a slot per element: every touch writes its iteration
        # into its element's slot, and one iteration's value stays there
        # (whichever). Two iterations touched one element exactly when some
        # touch finds another iteration in its slot.
        table = np.empty(slots, dtype=iterations.dtype)
        table[keys] = iterations
        return bool(np.array_equal(table[keys], iterations))
    # Elements spread too far apart for a table: sorted by element, two
    # iterations of one element meet as neighbours.
    order = np.argsort(keys)
    keys, iterations = keys[order], iterations[order]
    return not bool(np.any((keys[1:] == keys[:-1]) & (iterations[1:] != iterations[:-1])))


_DENSE_SLOTS_PER_KEY = 4
_DENSE_SLOTS_MIN = 1 << 16
"""``touch_disjoint_elements`` uses a table of the elements' whole span
while it holds at most this many slots per touch (plus the minimum): the
table costs a write and a read per touch, where sorting costs n log n."""


def _names(names: set[str], e: ir.Expr) -> bool:
    return any(isinstance(n, ir.Variable) and n.name in names for n in ir.walk(e))


def _written_out(e: ir.Expr, lets: dict[str, ir.Expr], depth: int = 0) -> ir.Expr | None:
    """``e`` with the lets of ``lets`` replaced by their values (None past a
    nesting no real program has)."""
    if depth > 32:
        return None
    failed = False

    def replace(n: ir.Node) -> ir.Expr | None:
        nonlocal failed
        if isinstance(n, ir.Variable) and n.name in lets:
            value = _written_out(lets[n.name], lets, depth + 1)
            failed = failed or value is None
            return value if value is not None else n
        return None

    result = rewrite(e, replace)
    return None if failed else result
