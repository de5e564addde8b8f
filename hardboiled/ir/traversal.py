"""Traversing the IR: ``children`` (every pass's way down), ``walk`` (pre-order),
and the queries built on it (``calls``, ``has_gpu_loops``, ``is_wmma_call``).

``children`` and ``walk`` are the hottest functions of hardboiled: keep them
plain loops over module globals.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeGuard

from hardboiled.ir.enums import ForKind
from hardboiled.ir.exprs import Call, Expr
from hardboiled.ir.stmts import Allocate, For, Stmt, Store

Node = Expr | Stmt
"""Any expression or statement: what ``children`` and ``walk`` visit."""


def children(node: Node) -> list[Node]:
    """The direct Expr/Stmt children of a node, in field order (looking
    into tuples of them, and tuples of tuples such as ``Realize.bounds``).

    Every traversal goes through here, so it is a plain loop filling a list
    (no generators), over a plan of each class's fields made once: fields
    that hold one node (or None) are taken as they are, tuples are looked
    into, and fields whose type holds no node (names, types, literal
    values) are not looked at."""
    found: list[Node] = []
    for name, nested in _child_fields(type(node)):
        value = getattr(node, name)
        if nested:
            _collect_nodes(value, found)
        elif value is not None:
            found.append(value)
    return found


_CHILD_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}
_ONE_NODE = frozenset({"Expr", "Stmt", "Node", "Expr | None", "Stmt | None", "Node | None"})
_NO_NODE = frozenset({"str", "str | None", "int", "bool", "float", "Type", "BinOp", "ForKind", "ReduceOp",
                      "tuple[int, ...]", "tuple[int, int] | None"})
"""Field annotations (as written: the IR modules postpone annotations)
that hold one node, and that hold none. A field of any other annotation
is searched as ``_collect_nodes`` searches, so an unforeseen one costs
time, never a child."""


def _child_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """(field name, whether to look into it) for each field that may hold a node."""
    plan = _CHILD_FIELDS.get(cls)
    if plan is None:
        fields = cls.__dataclass_fields__.values()  # type: ignore[attr-defined]
        plan = _CHILD_FIELDS[cls] = tuple((f.name, str(f.type) not in _ONE_NODE) for f in fields
                                          if str(f.type) not in _NO_NODE)
    return plan


def _collect_nodes(value: object, found: list[Node]) -> None:
    if isinstance(value, (Expr, Stmt)):
        found.append(value)
    elif type(value) is tuple:
        for item in value:
            _collect_nodes(item, found)


def walk(node: Node) -> Iterator[Node]:
    """Pre-order traversal of a node and everything below it."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


GPU_LOOP_KINDS = (ForKind.GPU_BLOCK, ForKind.GPU_THREAD, ForKind.GPU_LANE)


def has_gpu_loops(node: Node) -> bool:
    """Whether a GPU loop (block, thread or lane) is under ``node``: the
    program runs on the GPU, its accumulators in Tensor Core fragments."""
    return _outline(node).gpu_loops


def allocations(node: Node) -> tuple[Allocate, ...]:
    """Every allocation under ``node``, in pre-order."""
    return _outline(node).allocations


def stores(node: Node) -> tuple[Store, ...]:
    """Every store under ``node``, in pre-order."""
    return _outline(node).stores


@dataclass(frozen=True, slots=True)
class _Outline:
    gpu_loops: bool
    allocations: tuple[Allocate, ...]
    stores: tuple[Store, ...]


_last_outline: tuple[Node, _Outline] | None = None
"""The last tree ``_outline`` walked, and what it found: the passes of a
compile ask these questions of the same tree several times each (a pass
that changes nothing returns the tree it was given)."""


def _outline(node: Node) -> _Outline:
    """Whether ``node`` has GPU loops, its allocations and its stores: one
    walk per tree, however often they are asked. The cache holds one tree,
    by identity (the nodes are immutable; a tree that is not the last one
    asked about is walked again)."""
    global _last_outline
    last = _last_outline
    if last is not None and last[0] is node:
        return last[1]
    gpu_loops, allocated, stored = False, [], []
    for n in walk(node):
        if isinstance(n, Store):
            stored.append(n)
        elif isinstance(n, For):
            gpu_loops = gpu_loops or n.kind in GPU_LOOP_KINDS
        elif isinstance(n, Allocate):
            allocated.append(n)
    outline = _Outline(gpu_loops, tuple(allocated), tuple(stored))
    _last_outline = (node, outline)
    return outline


def calls(node: Node) -> Iterator[Call]:
    """Every call under ``node`` (``node`` included), in pre-order."""
    for n in walk(node):
        if isinstance(n, Call):
            yield n


def is_wmma_call(node: Node) -> TypeGuard[Call]:
    """A Tensor Core fragment operation (``wmma.load...``, ``wmma.mma...``,
    ``wmma.store.d...``, ``wmma.fill...``), as selection emits them."""
    return isinstance(node, Call) and node.name.startswith("wmma.")
