"""Serial loops whose iterations are provably independent, so the
interpreter may run them batched like parallel ones.

Halide leaves an atomic update it did not vectorize as a nest of serial
loops around one scalar store (``mm[x*16 + y] = mm[x*16 + y] + A*B``,
the remainder of a reduction split, a transposed accumulator). Interpreted
one iteration at a time such a nest costs a statement per product, which is
what makes verifying it slow. An iteration of loop ``v`` reads and writes
only its own elements when

* the body allocates, forks, synchronizes or calls nothing that has
  effects, and stores each buffer it writes at one index only,
  ``buf[idx] = value`` (the update, and the error-bound program's
  ``buf.err[idx]`` beside it);
* a buffer the body writes is read there only at that index;
* each such ``idx`` (naming no let of the body) is linear in ``v`` and in
  the variables of the loops inside the body (constant mins and extents),
  and ``v``'s stride exceeds the span of the inner ones, so two iterations
  never touch one element.

Then every element is updated by one iteration only, in the same order as
serially, and running the iterations in lockstep computes the same bits.
"""

from __future__ import annotations

from hardboiled import ir
from hardboiled.select.unflatten import linear_form

_NOT_ALLOWED = (ir.Allocate, ir.Free, ir.Fork, ir.Acquire, ir.Atomic, ir.Evaluate, ir.AssertStmt, ir.Realize)


def has_independent_iterations(loop: ir.For, nodes: list[ir.Node]) -> bool:
    """Whether the iterations of the serial ``loop`` (``nodes``: its body's
    nodes) are independent in the sense above."""
    if any(isinstance(n, _NOT_ALLOWED) for n in nodes):
        return False
    stores: dict[str, ir.Store] = {}
    for n in nodes:
        if isinstance(n, ir.Store):
            if n.predicate is not None or stores.setdefault(n.name, n).index != n.index:
                return False
    if not stores or any(isinstance(n, ir.Load) and n.name in stores and n.index != stores[n.name].index
                         for n in nodes):
        return False
    inner = {n.name: n for n in nodes if isinstance(n, ir.For)}
    bound = {n.name for n in nodes if isinstance(n, (ir.LetStmt, ir.Let))}
    return all(_disjoint(store.index, loop.name, inner, bound) for store in stores.values())


def _disjoint(index: ir.Expr, name: str, inner: dict[str, ir.For], bound: set[str]) -> bool:
    """Whether ``index`` is linear in ``name`` and the inner loops' variables,
    with ``name``'s stride exceeding the span of theirs (and names no let of
    the body, which could hide a loop variable)."""
    if any(isinstance(n, ir.Variable) and n.name in bound for n in ir.walk(index)):
        return False
    linear = linear_form(index)
    if linear is None:
        return False
    stride = 0
    span = 0
    for term, coefficient in linear.items():
        if term is None:
            continue
        uses = {n.name for n in ir.walk(term) if isinstance(n, ir.Variable)}
        if isinstance(term, ir.Variable) and term.name == name:
            stride = abs(coefficient)
        elif isinstance(term, ir.Variable) and term.name in inner:
            loop = inner[term.name]
            if not (isinstance(loop.min, ir.IntImm) and isinstance(loop.extent, ir.IntImm)):
                return False
            span += abs(coefficient) * (loop.extent.value - 1)
        elif uses & ({name} | set(inner)):
            return False  # the variable inside a product or a call: no stride to compare
    return stride > span
