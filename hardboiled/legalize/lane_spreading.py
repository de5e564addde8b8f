"""Spreading a vector store over the threads that run it (a GPU speed decision).

Invariant established: in a kernel, a vector store that several GPU
threads run as one Halide thread (the whole block outside the thread
loops, a warp inside them) and whose lanes are independent has its value
marked ``spread_over_threads``: those threads compute and write its lanes
together, each its own, instead of one thread writing all of them while
the others wait. Such stores build the Toeplitz matrices and padded
operands beside the fragments, so spreading them is most of a kernel's
non-tensor work done 32 (or a block's) lanes at a time.

A store is spread when every lane can be computed and written on its own:
no predicate, an index whose lanes are distinct addresses, a value and an
index built lane by lane (ramps, broadcasts, loads, casts, arithmetic,
selects, shuffles of those; scalars free of lets, calls and reductions),
and a value that reads the buffer it writes only at the store's own index
(each lane its own element: Halide reads every lane before writing any, so
a lane must not read another's). The marker does not change what the store
computes; legalize/barriers.py places the barrier that makes the lanes
visible to every thread afterwards.
"""

from __future__ import annotations

import dataclasses

from hardboiled import ir
from hardboiled.legalize.gpu_mapping import FRAGMENT_MEMORY, SPREAD, Placement, map_kernels, with_statements


def spread_lanes(stmt: ir.Stmt) -> ir.Stmt:
    """Mark every spreadable store of every kernel (module docstring)."""
    return map_kernels(stmt, lambda body, shape: _spread(body, Placement(shape), frozenset()))


def _spread(s: ir.Stmt, where: Placement, fragments: frozenset[str]) -> ir.Stmt:
    if isinstance(s, ir.Store):
        if s.name not in fragments and not where.wmma_depth and where.shared_by_threads and spreads(s, fragments):
            return dataclasses.replace(s, value=ir.Call(SPREAD, (s.value,), s.value.type))
        return s
    if isinstance(s, ir.For):
        where = where.entering(s)
    if isinstance(s, ir.Allocate) and s.memory_type == FRAGMENT_MEMORY:
        fragments = fragments | {s.name}
    return with_statements(s, lambda child: _spread(child, where, fragments))


def spreads(s: ir.Store, fragments: frozenset[str] = frozenset()) -> bool:
    """Whether the lanes of ``s`` can be computed and written each on its
    own (module docstring); ``fragments`` are the buffers that hold WMMA
    fragments, which no thread can read element by element."""
    if s.predicate is not None or s.value.type.lanes == 1 or not distinct_lanes(s.index):
        return False
    # a lane may read what it overwrites (acc = acc + p * c), not another lane's element
    if any(isinstance(n, ir.Load) and n.name == s.name and n.index != s.index for n in ir.walk(s)):
        return False
    return lanewise(s.value, fragments) and lanewise(s.index, fragments)


def distinct_lanes(index: ir.Expr) -> bool:
    """Whether every lane of a store index is a different address: a ramp
    with a nonzero constant stride, or a ramp of such ramps whose rows do not
    overlap."""
    if index.type.lanes == 1:
        return True
    if not (isinstance(index, ir.Ramp) and isinstance(index.stride, (ir.IntImm, ir.Broadcast))):
        return False
    stride = index.stride.value if isinstance(index.stride, ir.Broadcast) else index.stride
    if not isinstance(stride, ir.IntImm) or stride.value == 0:
        return False
    inner = index.base
    if inner.type.lanes == 1:
        return True
    if not (isinstance(inner, ir.Ramp) and isinstance(inner.stride, ir.IntImm) and inner.base.type.lanes == 1):
        return False
    span = abs(inner.stride.value) * (inner.lanes - 1)
    return inner.stride.value != 0 and abs(stride.value) > span


_LANEWISE_PARTS: dict[type, tuple[str, ...]] = {
    ir.Ramp: ("base", "stride"), ir.Broadcast: ("value",), ir.Cast: ("value",), ir.Binary: ("a", "b"),
    ir.Select: ("condition", "true_value", "false_value"),
}


def lanewise(e: ir.Expr, fragments: frozenset[str] = frozenset()) -> bool:
    """Whether lane i of ``e`` is one expression of i (what the code
    generator writes for each thread's lanes)."""
    if e.type.lanes == 1:
        return not any(isinstance(n, (ir.Let, ir.Call, ir.VectorReduce)) for n in ir.walk(e))
    if isinstance(e, ir.Load):
        return e.predicate is None and e.name not in fragments and lanewise(e.index, fragments)
    parts = _LANEWISE_PARTS.get(type(e))
    if parts is not None:
        return all(lanewise(getattr(e, part), fragments) for part in parts)
    return isinstance(e, ir.Shuffle) and all(lanewise(v, fragments) for v in e.vectors)

