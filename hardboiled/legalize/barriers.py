"""Barriers between the GPU threads of a kernel (correctness, with one
speed decision: deferring a barrier that several fills can share).

Invariant established: in every kernel, whenever GPU threads that make up
one Halide thread read memory that another of them wrote, a barrier
statement (``gpu_thread_barrier`` for the block, ``gpu_warp_barrier`` for
a warp; legalize/gpu_mapping.py) separates the write from the read:

* a memory effect that the first of several threads performs alone (a
  store that is not spread, a call evaluated for its effect) has a barrier
  before it (the others may still read what it overwrites) and after it
  (they are about to read what it wrote);
* a spread store (legalize/lane_spreading.py) has a barrier before it
  unless one is already owed, and owes one after it: the barrier is
  deferred past the spread stores that follow at the same level and do not
  read or overwrite what the earlier ones wrote or read, so that a row of
  independent fills (the operands of one reduction step) shares one
  barrier; it is placed before the next statement that does anything
  else, and at the end of a loop body or branch;
* the lanes of a warp copy a staged operand between warp barriers, and a
  warp reading back memory it stored a fragment to waits at one;
* a thread or lane loop at block level, in a block of several Halide
  threads, is followed by a block barrier (Halide's barrier between GPU
  stages); a lane loop elsewhere, or in a block that is one warp, that
  writes memory the kernel reads (not only fragments) has the same barrier
  at the warp's width before it, where lanes may still read what it
  overwrites (earlier lane loops, or the enclosing loop's last
  iteration), and owes one after it, placed like the fills' (before the
  next statement that does anything, and at the end of a loop body or
  branch).

A barrier is left out where the threads have done nothing since one at
least as wide: code that only declares (shared buffers, constant tables,
the bindings of thread indices) or opens a scope without code of its own
does nothing. The placement follows the generated code's statements in
order, as they run.
"""

from __future__ import annotations

import dataclasses

from hardboiled import ir
from hardboiled.ir.visitor import method_suffix
from hardboiled.legalize.gpu_mapping import (
    FRAGMENT_MEMORY,
    KernelShape,
    Placement,
    barrier_level,
    barrier_statement,
    is_stage_copy,
    is_wmma_lane_loop,
    map_kernels,
    spread_value,
)
from hardboiled.targets.wmma import WMMAOp, wmma_intrinsic

_RUNS_NO_CODE = (ir.Allocate, ir.Block, ir.ProducerConsumer)
"""Statements that are only declarations and structure in a kernel: the
barrier owed by fills before them waits past them."""

_START, _CODE = "start", "code"
"""What the threads did last, besides a barrier of a level ("block",
"warp"): nothing yet (the kernel's start), or some work."""


def place_barriers(stmt: ir.Stmt) -> ir.Stmt:
    """Every kernel of ``stmt`` with its barriers (module docstring)."""
    return map_kernels(stmt, lambda body, shape: _Placer(shape).kernel(body))


def _wmma_pointer(call: ir.Call, op: WMMAOp) -> str | None:
    """The buffer a wmma call of operation ``op`` reads or writes."""
    intrinsic = wmma_intrinsic(call)
    pointer = call.args[0] if call.args else None
    if intrinsic is None or intrinsic.op is not op or not isinstance(pointer, ir.Variable):
        return None
    return pointer.name


def _loaded_buffers(node: ir.Node) -> list[str]:
    """The buffers that the fragment loads under ``node`` read, in order."""
    return [name for n in ir.walk(node) if ir.is_wmma_call(n) and (name := _wmma_pointer(n, WMMAOp.LOAD))]


def _read_buffers(node: ir.Node) -> set[str]:
    """The buffers read under ``node``: by plain loads and fragment loads."""
    return {n.name for n in ir.walk(node) if isinstance(n, ir.Load)} | set(_loaded_buffers(node))


def _memory_written(loop: ir.For, fragments: frozenset[str]) -> set[str]:
    """The buffers ``loop`` stores to by plain stores and by a fragment's
    store to memory; not fragments (registers), nor staged operands (their
    copies sit between barriers of their own)."""
    return {name for n in ir.walk(loop.body)
            if (name := n.name if isinstance(n, ir.Store) and n.name not in fragments and not is_stage_copy(n)
                else _wmma_pointer(n, WMMAOp.STORE) if ir.is_wmma_call(n) else None)}


class _Placer:
    """Walks one kernel as its code runs, keeping what the threads did last,
    the barrier owed by deferred fills, and the buffers a warp stored
    fragments to since it last waited."""

    def __init__(self, shape: KernelShape):
        self.shape = shape
        self.last = _START
        self.owed: str | None = None
        """The level of the barrier owed by the deferred fills."""
        self.owed_by_lane_loop = False
        """Whether a lane loop's writes owe it (no fill may join them)."""
        self.filled: set[str] = set()
        """The buffers those fills wrote."""
        self.read_by_fills: set[str] = set()
        """The buffers they read: another fill may not overwrite them before
        every thread has read (write after read)."""
        self.stored_fragments: set[str] = set()
        """Buffers fragments were stored to and not read back since."""
        self.read_so_far: set[str] = set()
        """The buffers the lane loops placed so far read."""
        self.loop_reads: list[set[str]] = []
        """Per enclosing loop of the kernel, the buffers its body reads."""
        self.read_in_kernel: set[str] = set()
        """The buffers anything in the kernel reads (a lane loop that writes
        only others, such as the pipeline's outputs, owes no barrier)."""

    def kernel(self, body: ir.Stmt) -> ir.Stmt:
        self.read_in_kernel = _read_buffers(body)
        # What is owed at the kernel's end is not needed: nothing runs after.
        return ir.make_block(self.place(body, Placement(self.shape), frozenset()))

    # ------------------------------------------------------------ barriers
    def barrier(self, level: str) -> list[ir.Stmt]:
        """A barrier of ``level``, unless the threads have done nothing since
        one at least as wide (or since the kernel began)."""
        if self.last in (_START, "block") or self.last == level:
            return []
        self.last = level
        return [barrier_statement(level)]

    def settle(self) -> list[ir.Stmt]:
        """The barrier the deferred fills owe, before anything reads them."""
        out = self.barrier(self.owed) if self.owed else []
        self.owed = None
        self.owed_by_lane_loop = False
        self.filled.clear()
        self.read_by_fills.clear()
        return out

    def joins_fills(self, s: ir.Stmt, where: Placement) -> bool:
        """Whether ``s`` is another spread store at the same level that
        neither writes nor reads what the deferred fills wrote, nor writes
        what they read."""
        if self.owed_by_lane_loop or not (isinstance(s, ir.Store) and where.shared_by_threads
                                          and spread_value(s) is not None):
            return False  # a fill after a lane loop's writes waits for them first
        reads = {n.name for n in ir.walk(s) if isinstance(n, ir.Load)}
        return (where.level == self.owed and not ({s.name} | reads) & self.filled
                and s.name not in self.read_by_fills)

    def _opens_with_block_barrier(self, s: ir.Stmt, where: Placement, fragments: frozenset[str]) -> bool:
        """Whether ``s`` begins with a block barrier of its own (a memory
        effect that the block shares), which a warp barrier owed before it
        would only repeat."""
        if isinstance(s, ir.Evaluate):
            if barrier_level(s) is not None:
                return barrier_level(s) == "block"
            return (where.level == "block" and where.first_thread_fenced and not where.wmma_depth
                    and not (isinstance(s.value, ir.Call) and ir.is_wmma_call(s.value)))
        return (isinstance(s, ir.Store) and s.name not in fragments and not where.wmma_depth
                and where.level == "block" and (where.shared_by_threads or where.first_thread_fenced))

    # ------------------------------------------------------------ statements
    def place(self, s: ir.Stmt, where: Placement, fragments: frozenset[str]) -> list[ir.Stmt]:
        """``s`` with its barriers, as a list of statements in order."""
        out: list[ir.Stmt] = []
        if self.owed and not isinstance(s, _RUNS_NO_CODE) and not self.joins_fills(s, where):
            if self.owed == "warp" and self._opens_with_block_barrier(s, where, fragments):
                self.owed = "block"  # that barrier is placed now, and serves the warp too
            out += self.settle()
        if isinstance(s, ir.Block):
            for child in s.stmts:
                out += self.place(child, where, fragments)
            return out
        handler = getattr(self, "_" + method_suffix(type(s)), None)
        if handler is None:
            self.last = _CODE
            out.append(s)
        else:
            out += handler(s, where, fragments)
        return out

    def body(self, s: ir.Stmt, where: Placement, fragments: frozenset[str], closes: bool = True) -> ir.Stmt:
        """A loop's body or a branch: its statements, then what the fills
        in it still owe (the next iteration, or the code after the branch,
        may read them)."""
        statements = self.place(s, where, fragments)
        if closes:
            statements += self.settle()
        return ir.make_block(statements)

    def _producer_consumer(self, s: ir.ProducerConsumer, where: Placement,
                          fragments: frozenset[str]) -> list[ir.Stmt]:
        return [dataclasses.replace(s, body=self.body(s.body, where, fragments, closes=False))]

    def _atomic(self, s: ir.Atomic, where: Placement, fragments: frozenset[str]) -> list[ir.Stmt]:
        return [dataclasses.replace(s, body=self.body(s.body, where, fragments, closes=False))]

    _acquire = _atomic
    _hoisted_storage = _atomic

    def _allocate(self, s: ir.Allocate, where: Placement, fragments: frozenset[str]) -> list[ir.Stmt]:
        if s.memory_type == FRAGMENT_MEMORY:
            fragments = fragments | {s.name}
            self.last = _CODE  # an array of fragments
        elif not self._shared_memory(s, where):
            self.last = _CODE  # a thread's own array
        body = self.body(s.body, where, fragments, closes=False)
        self.last = _CODE  # the scope's end
        return [dataclasses.replace(s, body=body)]

    def _shared_memory(self, s: ir.Allocate, where: Placement) -> bool:
        """Whether the kernel declares ``s`` in shared memory (a declaration
        that does nothing when it runs): per warp inside the thread loops of
        a kernel with lanes and for staging buffers, per block outside the
        thread loops."""
        per_warp = ir.WMMA_STAGE in s.name or (self.shape.lanes and where.thread_depth > 0)
        return per_warp or (where.thread_depth == 0 and not self.shape.single_thread)

    def _let_stmt(self, s: ir.LetStmt, where: Placement, fragments: frozenset[str]) -> list[ir.Stmt]:
        out = self._read_back(s.value)
        self.last = _CODE
        out.append(dataclasses.replace(s, body=self.body(s.body, where, fragments, closes=False)))
        return out

    def _for(self, s: ir.For, where: Placement, fragments: frozenset[str]) -> list[ir.Stmt]:
        if s.kind not in (ir.ForKind.GPU_THREAD, ir.ForKind.GPU_LANE):
            self.last = _CODE  # the bounds and the loop header
            self.loop_reads.append(_read_buffers(s.body))  # read again by the next iteration's code
            body = self.body(s.body, where, fragments)
            self.loop_reads.pop()
            self.last = _CODE
            return [dataclasses.replace(s, body=body)]
        inside = where.entering(s)
        block_stage = where.at_block_level and self.shape.halide_threads > 1
        written = (_memory_written(s, fragments) & self.read_in_kernel
                   if s.kind is ir.ForKind.GPU_LANE and self.shape.lanes and not block_stage else set())
        # Halide's barrier between GPU stages at the warp's width: a lane
        # loop that writes what the kernel reads (a fragment stored to
        # shared memory and read back element by element) waits for the
        # lanes still reading what it overwrites (the stage before, or the
        # last iteration's), and owes a barrier to the lanes that read what
        # it wrote, placed like the fills' (before the next code, never at
        # the kernel's end).
        out: list[ir.Stmt] = self.barrier("warp") if written & self._may_have_been_read() else []
        if not is_wmma_lane_loop(s) or self._idle_guard(s, where):
            self.last = _CODE  # the guard that keeps threads outside it
        body = self.body(s.body, inside, fragments)
        self.last = _CODE
        out.append(dataclasses.replace(s, body=body))
        self.read_so_far |= _read_buffers(s.body)
        if block_stage:
            out += self.barrier("block")  # Halide's barrier between GPU stages
        elif written:
            self.owed = self.owed or "warp"
            self.owed_by_lane_loop = True
        return out

    def _may_have_been_read(self) -> set[str]:
        """What lanes may still be reading: what earlier lane loops read,
        and what the enclosing loops' bodies read (their last iteration)."""
        return self.read_so_far.union(*self.loop_reads)

    def _idle_guard(self, loop: ir.For, where: Placement) -> bool:
        """Whether threads along an axis no loop binds must be kept out of a
        WMMA lane loop (only their first runs it)."""
        inside = {self.shape.thread_axis[n.name] for n in ir.walk(loop.body)
                  if isinstance(n, ir.For) and n.kind is ir.ForKind.GPU_THREAD and n.name in self.shape.thread_axis}
        first = 1 if self.shape.lanes else 0
        return any(self.shape.block[a] > 1 and a not in inside and a not in where.bound for a in range(first, 3))

    def _if_then_else(self, s: ir.IfThenElse, where: Placement, fragments: frozenset[str]) -> list[ir.Stmt]:
        from hardboiled.ir.buffers import bounds_query_value

        known = bounds_query_value(s.condition)
        if known is not None:  # only the branch taken is generated, in a scope of its own
            if known:
                return [dataclasses.replace(s, then_case=self._branch(s.then_case, where, fragments))]
            if s.else_case is None:
                return [s]
            return [dataclasses.replace(s, else_case=self._branch(s.else_case, where, fragments))]
        self.last = _CODE  # the condition
        then_case = self._branch(s.then_case, where, fragments)
        else_case = None
        if s.else_case is not None:
            self.last = _CODE  # else
            else_case = self._branch(s.else_case, where, fragments)
        return [dataclasses.replace(s, then_case=then_case, else_case=else_case)]

    def _branch(self, s: ir.Stmt, where: Placement, fragments: frozenset[str]) -> ir.Stmt:
        body = self.body(s, where, fragments)
        self.last = _CODE
        return body

    def _fork(self, s: ir.Fork, where: Placement, fragments: frozenset[str]) -> list[ir.Stmt]:
        return [dataclasses.replace(s, first=self._branch(s.first, where, fragments),
                                    rest=self._branch(s.rest, where, fragments))]

    def _no_op(self, s: ir.Stmt, _where: Placement, _fragments: frozenset[str]) -> list[ir.Stmt]:
        return [s]  # generates nothing

    _free = _no_op
    _prefetch = _no_op

    def _store(self, s: ir.Store, where: Placement, fragments: frozenset[str]) -> list[ir.Stmt]:
        if s.name in fragments:
            out = self._read_back(s.value)
            self.last = _CODE
            return [*out, s]
        if where.wmma_depth:
            if not is_stage_copy(s):
                self.last = _CODE
                return [s]  # not a warp's work: the CUDA generator refuses it
            # The warp's lanes copy together: what they read was written by
            # other lanes, and what they write is read by other lanes.
            return [*self.barrier("warp"), self._coded(s), *self.barrier("warp")]
        if where.shared_by_threads and spread_value(s) is not None:
            out = [] if self.owed else self.barrier(where.level)  # the threads may still read what it overwrites
            self.last = _CODE
            self.owed = where.level
            self.filled.add(s.name)
            self.read_by_fills.update(n.name for n in ir.walk(s) if isinstance(n, ir.Load))
            return [*out, s]
        return self._by_first_thread(s, where)

    def _evaluate(self, s: ir.Evaluate, where: Placement, _fragments: frozenset[str]) -> list[ir.Stmt]:
        level = barrier_level(s)
        if level is not None:
            return self.barrier(level)  # placed again, where it is needed
        if isinstance(s.value, ir.Call) and ir.is_wmma_call(s.value):
            stored = _wmma_pointer(s.value, WMMAOp.STORE)
            if stored is not None:
                self.stored_fragments.add(stored)
            self.last = _CODE
            return [s]
        return self._by_first_thread(s, where)

    def _by_first_thread(self, s: ir.Stmt, where: Placement) -> list[ir.Stmt]:
        """A memory effect the first thread performs for its Halide thread,
        between barriers where others share it."""
        if not where.first_thread_fenced:
            self.last = _CODE
            return [s]
        return [*self.barrier(where.level), self._coded(s), *self.barrier(where.level)]

    def _coded(self, s: ir.Stmt) -> ir.Stmt:
        self.last = _CODE
        return s

    def _read_back(self, e: ir.Expr) -> list[ir.Stmt]:
        """A warp barrier before a fragment load from memory the warp stored
        fragments to: the lanes of the warp each stored part of it."""
        out: list[ir.Stmt] = []
        for buffer in _loaded_buffers(e):
            if buffer in self.stored_fragments:
                self.stored_fragments.discard(buffer)
                out += self.barrier("warp")
        return out
