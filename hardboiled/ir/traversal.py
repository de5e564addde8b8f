"""Traversing the IR: ``children`` (every pass's way down), ``walk`` (pre-order),
and the queries built on it (``calls``, ``has_gpu_loops``, ``is_wmma_call``).

``children`` and ``walk`` are the hottest functions of hardboiled: keep them
plain loops over module globals.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeGuard

from hardboiled.ir.enums import ForKind
from hardboiled.ir.exprs import Call, Expr
from hardboiled.ir.stmts import For, Stmt

Node = Expr | Stmt
"""Any expression or statement: what ``children`` and ``walk`` visit."""


def children(node: Node) -> list[Node]:
    """The direct Expr/Stmt children of a node, in field order (looking
    into tuples of them, and tuples of tuples such as ``Realize.bounds``).

    Every traversal goes through here, so it is a plain loop filling a list
    (no generators), over field names looked up once per class."""
    found: list[Node] = []
    for name in _field_names(type(node)):
        _collect_nodes(getattr(node, name), found)
    return found


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(cls.__dataclass_fields__)  # type: ignore[attr-defined]
    return names


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
    return any(isinstance(n, For) and n.kind in GPU_LOOP_KINDS for n in walk(node))


def calls(node: Node) -> Iterator[Call]:
    """Every call under ``node`` (``node`` included), in pre-order."""
    for n in walk(node):
        if isinstance(n, Call):
            yield n


def is_wmma_call(node: Node) -> TypeGuard[Call]:
    """A Tensor Core fragment operation (``wmma.load...``, ``wmma.mma...``,
    ``wmma.store.d...``, ``wmma.fill...``), as selection emits them."""
    return isinstance(node, Call) and node.name.startswith("wmma.")
