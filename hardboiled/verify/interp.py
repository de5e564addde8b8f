"""A numpy reference interpreter for Halide IR.

It runs a lowered statement (the vectorizing stage, or what ``compile``
rewrote it into) on concrete buffers, following Halide's semantics:

* integer division rounds down and the remainder is never negative
  (Euclidean, for positive and negative divisors), and x / 0 == x % 0 == 0;
* integer arithmetic wraps; casts between integers wrap, float to integer
  truncates toward zero;
* float16 and bfloat16 values are stored and rounded as such (ml_dtypes);
* a serial loop runs its iterations one after the other; a loop Halide
  promises has independent iterations (parallel, gpu_block, gpu_thread,
  gpu_lane) runs them together, in lockstep ("batched"): every statement
  of the body runs once for all of them, on values with a row per
  iteration, its allocations made once per iteration (see ``visit_for``);
  vectors are numpy arrays, nested ramps and broadcasts included;
* the AMX tile intrinsics behave as the hardware does: tiles are read and
  written byte by byte at the given byte offsets and strides, B tiles are in
  VNNI order, bf16 products are summed in float32 and int8 dot products in
  int32;
* the WMMA intrinsics (``wmma.load.{a,b,c}``, ``wmma.mma``,
  ``wmma.store.d``) act on whole fragments, as selection produces them
  before the warp-lane post-processing: see ``_wmma_call``.

Values are 1-D numpy arrays (a scalar has one lane); handles are
``Pointer`` objects (values.py). The Halide calls it knows are those of
ir/operations.py, evaluated by calls.py; expressions run as closures made
once each (expression_code.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hardboiled import ir
from hardboiled.ir.visitor import Visitor
from hardboiled.support.diagnostics import Diagnostic
from hardboiled.support.memo import by_identity
from hardboiled.verify.expression_code import MISSING, Code, code_of
from hardboiled.verify.fragments import fragment_alignment_unchecked, is_warp_collective
from hardboiled.verify.independence import UpdateNest, iteration_points, iterations_disjoint, update_nest
from hardboiled.verify.values import (
    DTYPES,
    BufferT,
    Definedness,
    InterpreterError,
    NonUniform,
    Pointer,
    ResourceLimitError,
    Value,
    as_int,
    cast_array,
    dtype_of,
    fail,
    garbage,
    lanes,
    new_array,
    repeated,
    row_of,
    rows_of,
    uniform,
)

INTERPRETER_TIMEOUT_S = 300.0
"""How long one verification may run the interpreter (--verify-timeout):
its inputs are small random buffers, so a run past it is a program that
loops far longer than its sizes justify, or sizes far too large."""

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("interpreter_deadline", default=None)
"""(time.monotonic() past which interpreting stops, the limit in seconds)."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Every interpreter run inside the block (in this thread) stops with a
    ResourceLimitError once ``seconds`` have passed since it began."""
    token = _deadline.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _deadline.reset(token)


def _check_deadline(deadline: tuple[float, float] | None) -> None:
    if deadline is not None and time.monotonic() > deadline[0]:
        raise ResourceLimitError(Diagnostic(
            "error", f"the reference interpreter did not finish within {deadline[1]:g} s",
            notes=("raise the limit with --verify-timeout, or pass smaller sizes with --param",)))


class ProgramAssertFailed(InterpreterError):
    """The program stopped at one of its own asserts (a bounds or size
    check): the buffers it was given are not ones it accepts."""


@dataclass
class _Env:
    values: dict[str, Value] = field(default_factory=dict)

    def bind(self, name: str, value: Value) -> Value:
        previous = self.values.get(name, MISSING)
        self.values[name] = value
        return previous

    def restore(self, name: str, previous: Value) -> None:
        if previous is MISSING:
            self.values.pop(name, None)  # a loop that ran no iteration never bound it
        else:
            self.values[name] = previous


_BODY_ONLY = (ir.ProducerConsumer, ir.Atomic, ir.Acquire, ir.HoistedStorage)

INDEPENDENT_ITERATIONS = frozenset({ir.ForKind.PARALLEL, ir.ForKind.GPU_BLOCK, ir.ForKind.GPU_THREAD,
                                    ir.ForKind.GPU_LANE})
"""Loops whose iterations Halide lets run at once, in any order: none reads
what another writes (Halide refuses a schedule that would race, unless the
update is atomic), so running them together in lockstep computes what
running them one after the other does."""

MAX_INDEX_CHECK = 1 << 21
"""The most indices one check that a serial loop's iterations touch
disjoint elements evaluates (every iteration of it and of the loops inside,
every row and lane): a longer nest runs one iteration at a time."""

MAX_BATCH_ELEMENTS = 1 << 22
"""The most lanes a batched loop's widest value may hold, all rows together
(4M: 32 MiB for an int64 value): a longer loop runs in chunks of iterations."""


@dataclass(frozen=True)
class _LoopFacts:
    """What the interpreter asks of a loop body before running it."""

    warp_collective: bool
    """A lane loop that runs once (``fragments.is_warp_collective``)."""
    widest: int
    """The most lanes of any expression in the body."""
    atomic: bool
    """The body has an atomic update: its iterations read what others wrote."""
    nest: UpdateNest | None
    """A serial loop around an update (independence.py): it runs batched
    like a parallel one whenever its iterations touch disjoint elements."""


@by_identity(size=4096)
def loop_facts_of(s: ir.For) -> _LoopFacts:
    """A loop's facts, worked out once for every interpreter that runs it:
    a verification runs each program once per layout it tries."""
    nodes = list(ir.walk(s.body))
    return _LoopFacts(
        warp_collective=s.kind is ir.ForKind.GPU_LANE and is_warp_collective(s, nodes),
        widest=max((n.type.lanes for n in nodes if isinstance(n, ir.Expr)), default=1),
        atomic=any(isinstance(n, ir.Atomic) for n in nodes),
        nest=update_nest(s, nodes))


class Interpreter(Visitor[Any]):
    """Runs statements against an environment of buffers and parameters."""

    def __init__(self, params: dict[str, Value] | None = None, buffers: dict[str, BufferT] | None = None,
                 poison_seed: int | None = None):
        self.poison_seed = poison_seed
        """With a seed, the program's own allocations start as garbage drawn
        from it (values.garbage) and what they have written is tracked:
        ``undefined_reads`` logs reads of the rest. Without, they start as
        zeros, untracked."""
        self.undefined_reads: list[str] = []
        self.env = _Env()
        for name, value in (params or {}).items():
            self.env.values[name] = np.array([value], dtype=np.int32) if isinstance(value, int) else value
        for name, buf in (buffers or {}).items():
            self.env.values[f"{name}.buffer"] = buf
        self._code: dict[int, tuple[ir.Expr, Code]] = {}
        """The code of each expression this interpreter evaluated, by id."""
        self.batch: int | None = None
        """How many iterations run together (the rows of batched values), or
        None outside a batched loop."""
        self._loop_facts: dict[int, tuple[ir.For, _LoopFacts]] = {}
        self._dependent: set[int] = set()
        """Serial loops (by id) whose iterations were once found to touch a
        common element: not checked again (a reduction loop stays one)."""
        self._running = False

    batches_loops = True
    """Whether loops of INDEPENDENT_ITERATIONS run batched (a subclass that
    reasons about single accesses says no)."""

    # ----------------------------------------------------------- statements
    def run(self, s: ir.Stmt) -> None:
        """Run ``s``: with numpy's floating-point warnings off (an overflow
        to inf or a NaN is Halide's result, not an error), once for a whole
        run rather than per operation."""
        if self._running:
            self._run(s)
            return
        self._running = True
        try:
            with np.errstate(all="ignore"):
                self._run(s)
        finally:
            self._running = False

    def _run(self, s: ir.Stmt) -> None:
        if isinstance(s, _BODY_ONLY):
            # Markers for other passes (produce/consume, atomic, semaphores,
            # hoisted storage): a serial run just enters the body.
            self._run(s.body)
            return
        if self.batch is None:
            self.visit(s)
            return
        try:
            self.visit(s)
        except NonUniform:
            # One of the statement's own expressions (a nested statement
            # catches its own) needs a number the iterations disagree on,
            # before the statement changed anything: each runs it alone.
            self._each_row(s)

    def _each_row(self, s: ir.Stmt) -> None:
        batched, batch = self.env.values, self.batch
        assert batch is not None
        deadline = _deadline.get()
        try:
            self.batch = None
            for row in range(batch):
                _check_deadline(deadline)
                self.env.values = {name: row_of(value, row) for name, value in batched.items()}
                self._run(s)
        finally:
            self.env.values, self.batch = batched, batch

    def _run_rows(self, s: ir.Stmt, rows: np.ndarray) -> None:
        """Run ``s`` for the iterations ``rows`` of the batch only."""
        batched, batch = self.env.values, self.batch
        try:
            self.env.values = {name: rows_of(value, rows) for name, value in batched.items()}
            self.batch = len(rows)
            self._run(s)
        finally:
            self.env.values, self.batch = batched, batch

    def _row_groups(self, *values: Value) -> list[np.ndarray]:
        """The batch's rows grouped by the (one-lane) values they see."""
        assert self.batch is not None
        keys = np.concatenate([np.broadcast_to(np.asarray(v, dtype=np.int64).reshape(-1, 1)
                                               if np.ndim(v) == 2 else np.asarray(v, dtype=np.int64)[:1],
                                               (self.batch, 1)) for v in values], axis=1)
        _, group_of_row = np.unique(keys, axis=0, return_inverse=True)
        group_of_row = group_of_row.reshape(-1)
        return [np.flatnonzero(group_of_row == g) for g in range(int(group_of_row.max()) + 1)]

    def visit_block(self, s: ir.Block) -> None:
        for child in s.stmts:
            self._run(child)

    def visit_no_op(self, s: ir.NoOp) -> None:
        pass

    def visit_let_stmt(self, s: ir.LetStmt) -> None:
        value = self.eval(s.value)
        if isinstance(value, BufferT) and s.name.endswith(".buffer") and value.data.size == 0:
            # A stage computed at root on the GPU: Halide describes its
            # device allocation with a halide_buffer_t and no host memory.
            # The interpreter has one memory: the Allocate of the same name.
            storage = self.env.values.get(s.name[: -len(".buffer")])
            if isinstance(storage, Pointer):
                value = BufferT(s.name[: -len(".buffer")], value.type, storage.array,
                                value.mins, value.extents, value.strides)
        previous = self.env.bind(s.name, value)
        try:
            self._run(s.body)
        finally:
            self.env.restore(s.name, previous)

    def visit_assert_stmt(self, s: ir.AssertStmt) -> None:
        if not bool(np.all(self.eval(s.condition))):
            message = s.message
            text = message.name if isinstance(message, ir.Call) else str(message)
            raise ProgramAssertFailed(Diagnostic("error", f"assertion failed in the program: {text}"))

    def visit_for(self, s: ir.For) -> None:
        facts = self._facts(s)
        if facts.warp_collective:
            # The lanes of a warp execute a WMMA operation together, once:
            # run a body that no lane tells apart from another one time.
            self._run(s.body)
            return
        low, extent = self.eval(s.min), self.eval(s.extent)
        if self.batch is not None and not (uniform(low) and uniform(extent)):
            # Iterations of a batch that loop over different ranges (a
            # tail): each range runs once, for the rows that have it.
            for rows in self._row_groups(low, extent):
                self._run_rows(s, rows)
            return
        lo, count = as_int(low), as_int(extent)
        chunk = self._batchable(s, facts, lo, count)
        if chunk > 1:
            self._run_batched(s, lo, count, chunk)
            return
        previous = self.env.values.get(s.name, MISSING)
        deadline = _deadline.get()
        try:
            for i in range(lo, lo + count):
                _check_deadline(deadline)
                self.env.values[s.name] = np.array([i], dtype=np.int32)
                self._run(s.body)
        finally:
            self.env.restore(s.name, previous)

    def _facts(self, s: ir.For) -> _LoopFacts:
        known = self._loop_facts.get(id(s))
        if known is not None and known[0] is s:
            return known[1]
        facts = loop_facts_of(s)
        self._loop_facts[id(s)] = (s, facts)
        return facts

    def _batchable(self, s: ir.For, facts: _LoopFacts, lo: int, count: int) -> int:
        """How many iterations of ``s`` to run together (1: one at a time)."""
        if not self.batches_loops or facts.atomic or count < 2:
            return 1
        if s.kind not in INDEPENDENT_ITERATIONS and not (
                facts.nest is not None and self._iterations_disjoint(s, facts.nest, lo, count)):
            return 1
        rows = self.batch or 1
        return max(1, min(count, MAX_BATCH_ELEMENTS // (rows * max(facts.widest, 1))))

    def _iterations_disjoint(self, s: ir.For, nest: UpdateNest, lo: int, count: int) -> bool:
        """Whether iterations lo .. lo+count-1 of the update nest ``s`` touch
        disjoint elements (independence.py): its indices evaluated at once
        over every iteration of ``s`` and of the loops inside it."""
        if id(s) in self._dependent:
            return False
        ranges = [np.arange(lo, lo + count, dtype=np.int32)]
        for loop in nest.inner:
            low, extent = self.eval(loop.min), self.eval(loop.extent)
            if not (uniform(low) and uniform(extent)):
                return False
            ranges.append(np.arange(as_int(low), as_int(low) + max(as_int(extent), 0), dtype=np.int32))
        points = int(np.prod([len(r) for r in ranges]))
        rows = self.batch or 1
        widest = max(e.type.lanes for e in nest.indices)
        if points == 0 or points * rows * widest > MAX_INDEX_CHECK:
            return points == 0
        grid = iteration_points(ranges, rows)
        outer, batch = self.env.values, self.batch
        try:
            values = {name: repeated(value, points) for name, value in outer.items()} if batch else dict(outer)
            values.update(zip([s.name] + [loop.name for loop in nest.inner], grid))
            self.env.values, self.batch = values, rows * points
            indices = [np.asarray(self.eval(index)) for index in nest.indices]
        except (InterpreterError, NonUniform):
            return False
        finally:
            self.env.values, self.batch = outer, batch
        disjoint = iterations_disjoint(indices, grid, rows)
        if not disjoint:
            self._dependent.add(id(s))
        return disjoint

    def _run_batched(self, s: ir.For, lo: int, count: int, chunk: int) -> None:
        """Iterations lo .. lo+count-1 of ``s``, ``chunk`` at a time, each
        chunk together: a batch of (rows already batched) x chunk rows,
        row r being iteration r % chunk of the enclosing row r // chunk."""
        outer, batch = self.env.values, self.batch
        deadline = _deadline.get()
        try:
            for start in range(lo, lo + count, chunk):
                _check_deadline(deadline)
                n = min(chunk, lo + count - start)
                values = {name: repeated(value, n) for name, value in outer.items()} if batch else dict(outer)
                values[s.name] = np.tile(np.arange(start, start + n, dtype=np.int32), batch or 1)[:, None]
                self.env.values, self.batch = values, (batch or 1) * n
                self._run(s.body)
        finally:
            self.env.values, self.batch = outer, batch

    def visit_allocate(self, s: ir.Allocate) -> None:
        device_buffer = isinstance(s.body, ir.LetStmt) and s.body.name == f"{s.name}.buffer"
        condition = None if s.condition is None or device_buffer else self.eval(s.condition)
        if condition is not None and not uniform(condition):
            raise NonUniform()
        if condition is not None and not bool(np.all(condition)):
            size = 0
        else:
            size = s.type.lanes
            for extent in s.extents:
                size *= as_int(self.eval(extent))
            if s.padding is not None:
                size += as_int(self.eval(s.padding))
        rows = self.batch or 1
        dtype = dtype_of(s.type.element())
        new_array(size * rows, dtype, s.name)  # the limit on what one allocation may take, all rows together
        defined = None
        if self.poison_seed is not None:
            # Every iteration's allocation starts as the same garbage, as it
            # would one iteration after another.
            array = np.tile(garbage(size, dtype, self.poison_seed, s.name), rows)
            defined = Definedness(np.zeros(size * rows, dtype=np.bool_), self.undefined_reads)
        else:
            array = np.zeros(size * rows, dtype=dtype)
        if self.batch is None:
            pointer = Pointer(array, 0, s.name, defined)
        else:
            offsets = (np.arange(rows, dtype=np.int64) * size)[:, None]
            pointer = Pointer(array, offsets, s.name, defined, row_size=size)
        previous = self.env.bind(s.name, pointer)
        try:
            self._run(s.body)
        finally:
            self.env.restore(s.name, previous)

    def visit_free(self, s: ir.Free) -> None:
        pass

    def visit_if_then_else(self, s: ir.IfThenElse) -> None:
        condition = self.eval(s.condition)
        if self.batch is not None and not uniform(condition):
            # Iterations that take different branches: each branch runs for
            # its own rows (which one runs first cannot matter: they are
            # independent).
            taken = np.broadcast_to(condition, (self.batch, lanes(condition))).all(axis=1)
            self._run_rows(s.then_case, np.flatnonzero(taken))
            if s.else_case is not None:
                self._run_rows(s.else_case, np.flatnonzero(~taken))
            return
        if bool(np.all(condition)):
            self._run(s.then_case)
        elif s.else_case is not None:
            self._run(s.else_case)

    def visit_evaluate(self, s: ir.Evaluate) -> None:
        self.eval(s.value)

    def visit_fork(self, s: ir.Fork) -> None:
        self._run(s.first)
        self._run(s.rest)

    def visit_prefetch(self, s: ir.Prefetch) -> None:
        pass

    def visit_store(self, s: ir.Store) -> None:
        pointer = self.pointer_of(s.name)
        index = self.eval(s.index).astype(np.int64, copy=False) + pointer.offset
        value = self.eval(s.value)
        mask = None if s.predicate is None else self.eval(s.predicate)
        if mask is not None or index.shape != value.shape:  # else nothing to broadcast (the common case)
            shape = np.broadcast_shapes(index.shape, value.shape, () if mask is None else np.shape(mask))
            index, value = np.broadcast_to(index, shape), np.broadcast_to(value, shape)
            if mask is not None:
                mask = np.broadcast_to(mask, shape)
        self.check_access(pointer, index, s.name, mask)
        if mask is not None:
            index, value = index[mask], value[mask]
        # Rows run in iteration order, so where two write one element the
        # later iteration's value stays, as when they run one by one.
        pointer.array[index] = cast_array(value, _array_type(pointer.array, value))
        if pointer.defined is not None:
            pointer.defined.write(index)

    # ----------------------------------------------------------- expressions
    def eval(self, e: ir.Expr) -> Value:
        """An expression's value: its code (expression_code.py), made once
        per expression and kept by this interpreter too."""
        known = self._code.get(id(e))
        if known is None or known[0] is not e:
            known = self._code[id(e)] = (e, code_of(e))
        return known[1](self)

    def visit_default(self, node: Any) -> Any:
        if isinstance(node, ir.Stmt):
            raise fail(f"the interpreter does not run {type(node).__name__} statements")
        return self.eval(node)  # an expression: ``visit`` evaluates it, as it did before ``eval`` had code of its own

    # ----------------------------------------------------------- memory
    def pointer_of(self, name: str) -> Pointer:
        value = self.env.values.get(name, MISSING)
        if isinstance(value, Pointer):
            return value
        raise fail(f"buffer '{name}' is not allocated or bound")

    def check_access(self, pointer: Pointer, index: np.ndarray, name: str, mask: np.ndarray | None) -> None:
        """Fail on an access past the buffer (only the lanes ``mask`` keeps)."""
        if pointer.row_size is None:
            self._check_bounds(pointer, index if mask is None else index[mask], name)
            return
        relative = index - pointer.offset
        if mask is not None:
            relative = relative[mask]
        if relative.size and (relative.min() < 0 or relative.max() >= pointer.row_size):
            raise fail(f"access to '{name}' out of bounds: element {int(relative.min())}..{int(relative.max())} "
                       f"of {pointer.row_size}")

    @staticmethod
    def _check_bounds(pointer: Pointer, index: np.ndarray, name: str) -> None:
        if index.size == 1 and 0 <= index.item() < pointer.array.size:
            return  # a scalar access in bounds (the common case: no reductions over the index)
        if index.size and (index.min() < 0 or index.max() >= pointer.array.size):
            raise fail(
                f"access to '{name}' out of bounds: element {int(index.min())}..{int(index.max())} "
                f"of {pointer.array.size}"
            )


def _array_type(array: np.ndarray, value: np.ndarray) -> ir.Type:
    element = _TYPE_OF_DTYPE.get(array.dtype)
    if element is None:
        raise fail(f"cannot store {value.dtype} into {array.dtype}")
    return element


_TYPE_OF_DTYPE: dict[np.dtype, ir.Type] = {}
"""The Halide type of each dtype DTYPES holds (the first that holds it)."""
for (_code, _bits), _scalar in DTYPES.items():
    _TYPE_OF_DTYPE.setdefault(np.dtype(_scalar), ir.Type(_code, _bits))


__all__ = ["BufferT", "Interpreter", "InterpreterError", "Pointer", "ResourceLimitError", "cast_array", "dtype_of",
           "fragment_alignment_unchecked"]
