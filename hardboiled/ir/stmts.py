"""The statement nodes of the IR (``Stmt`` and its frozen dataclasses),
``make_block``, which keeps sequences flat, and the nodes of a lowered
module (``Module``, its ``LoweredFunc``s and ``Buffer``s)."""

from __future__ import annotations

from dataclasses import dataclass

from hardboiled.ir.enums import ForKind
from hardboiled.ir.exprs import Expr, IntImm
from hardboiled.ir.types import Type


class Stmt:
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class LetStmt(Stmt):
    name: str
    value: Expr
    body: Stmt


@dataclass(frozen=True, slots=True)
class AssertStmt(Stmt):
    condition: Expr
    message: Expr


@dataclass(frozen=True, slots=True)
class ProducerConsumer(Stmt):
    name: str
    is_producer: bool
    body: Stmt


@dataclass(frozen=True, slots=True)
class For(Stmt):
    name: str
    min: Expr
    extent: Expr
    kind: ForKind
    device_api: str | None
    body: Stmt


@dataclass(frozen=True, slots=True)
class Store(Stmt):
    name: str
    value: Expr
    index: Expr
    predicate: Expr | None = None
    alignment: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Allocate(Stmt):
    name: str
    type: Type
    """Element type; Halide allows a vector element type (``float32x256``)."""
    memory_type: str
    extents: tuple[Expr, ...]
    body: Stmt
    condition: Expr | None = None
    new_expr: Expr | None = None
    free_function: str | None = None
    padding: Expr | None = None
    """Extra elements after the extents' product (Halide prints it only with
    two or more extents; with one, ``(e + pad)`` is just an extent)."""

    @property
    def constant_elements(self) -> int | None:
        """How many elements (lanes counted) the allocation holds when every
        extent is a constant; None for a symbolic size."""
        size = self.type.lanes
        for extent in self.extents:
            if not isinstance(extent, IntImm):
                return None
            size *= extent.value
        return size


@dataclass(frozen=True, slots=True)
class Free(Stmt):
    name: str


@dataclass(frozen=True, slots=True)
class IfThenElse(Stmt):
    condition: Expr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(frozen=True, slots=True)
class Evaluate(Stmt):
    value: Expr


@dataclass(frozen=True, slots=True)
class Block(Stmt):
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class Atomic(Stmt):
    producer: str
    mutex: str | None
    body: Stmt


@dataclass(frozen=True, slots=True)
class Fork(Stmt):
    first: Stmt
    rest: Stmt


@dataclass(frozen=True, slots=True)
class Acquire(Stmt):
    semaphore: Expr
    count: Expr
    body: Stmt


@dataclass(frozen=True, slots=True)
class HoistedStorage(Stmt):
    name: str | None
    body: Stmt


@dataclass(frozen=True, slots=True)
class Realize(Stmt):
    """A multi-dimensional Func realization (before storage flattening)."""

    name: str
    memory_type: str
    bounds: tuple[tuple[Expr, Expr], ...]
    """(min, extent) per dimension."""
    body: Stmt
    condition: Expr | None = None


@dataclass(frozen=True, slots=True)
class Provide(Stmt):
    """``f(args) = value`` (before storage flattening); tuples give several values."""

    name: str
    values: tuple[Expr, ...]
    args: tuple[Expr, ...]
    predicate: Expr | None = None


@dataclass(frozen=True, slots=True)
class Prefetch(Stmt):
    """``prefetch buf, at, from, ([min, extent], ...)`` (early stages only)."""

    name: str
    at: Expr
    from_: Expr
    bounds: tuple[tuple[Expr, Expr], ...]


@dataclass(frozen=True, slots=True)
class NoOp(Stmt):
    """An empty body (``{}`` with nothing inside)."""


def make_block(stmts: list[Stmt] | tuple[Stmt, ...]) -> Stmt:
    """Sequence statements, flattening nested blocks and dropping no-ops."""
    flat: list[Stmt] = []
    for s in stmts:
        if isinstance(s, Block):
            flat.extend(s.stmts)
        elif not isinstance(s, NoOp):
            flat.append(s)
    if not flat:
        return NoOp()
    if len(flat) == 1:
        return flat[0]
    return Block(tuple(flat))


# --------------------------------------------------------------------------
# Modules: the output of compile_to_lowered_stmt
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Buffer:
    """``buffer NAME = {...}``; ``contents`` holds embedded text (GPU source)."""

    name: str
    contents: str | None = None


@dataclass(frozen=True, slots=True)
class LoweredFunc:
    linkage: str
    name: str
    args: tuple[str, ...]
    body: Stmt


@dataclass(frozen=True, slots=True)
class Module:
    name: str
    target: str
    buffers: tuple[Buffer, ...]
    functions: tuple[LoweredFunc, ...]
