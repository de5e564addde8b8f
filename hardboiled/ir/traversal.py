"""Traversing the IR: ``children`` (every pass's way down), ``walk`` (pre-order),
and the queries built on it (``calls``, ``has_gpu_loops``, ``is_wmma_call``).

``children`` and ``walk`` are the hottest functions of hardboiled: each node
class has a children function of its own, written from its fields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeGuard

from hardboiled.ir import exprs, stmts
from hardboiled.ir.enums import ForKind
from hardboiled.ir.exprs import Call, Expr
from hardboiled.ir.stmts import Allocate, For, Stmt, Store
from hardboiled.support.dataclass_code import compiled

Node = Expr | Stmt
"""Any expression or statement: what ``children`` and ``walk`` visit."""


def children(node: Node) -> list[Node]:
    """The direct Expr/Stmt children of a node, in field order (looking
    into tuples of them, and tuples of tuples such as ``Realize.bounds``),
    in a new list."""
    return _CHILDREN_OF[type(node)](node)


def walk(node: Node) -> Iterator[Node]:
    """Pre-order traversal of a node and everything below it."""
    stack = [node]
    pop, extend, children_of = stack.pop, stack.extend, _CHILDREN_OF
    while stack:
        current = pop()
        yield current
        found = children_of[type(current)](current)
        if found:
            found.reverse()
            extend(found)


_ONE_NODE = frozenset({"Expr", "Stmt", "Node"})
_MAYBE_NODE = frozenset({"Expr | None", "Stmt | None", "Node | None"})
_NODES = frozenset({"tuple[Expr, ...]", "tuple[Stmt, ...]", "tuple[Node, ...]"})
_NO_NODE = frozenset({"str", "str | None", "int", "bool", "float", "Type", "BinOp", "ForKind", "ReduceOp",
                      "tuple[int, ...]", "tuple[int, int] | None"})
"""Field annotations (as written: the IR modules postpone annotations)
that hold one node, one node or None, a tuple of nodes, and no node. A
field of any other annotation is searched as ``_collect_nodes`` searches,
so an unforeseen one costs time, never a child."""


def _children_function_text(cls: type) -> str:
    """The source of a function that lists the children of a ``cls``: its
    fields read by name, in order, each as its annotation says (a plain loop
    over a plan of the fields took two and a half times as long, and every
    pass walks the tree several times)."""
    fields = [(name, str(cls.__dataclass_fields__[name].type)) for name in node_fields(cls)]  # type: ignore[attr-defined]
    header = f"def children_of_{cls.__name__}(node):\n"
    if all(annotation in _ONE_NODE for _, annotation in fields):
        return header + f"    return [{', '.join(f'node.{name}' for name, _ in fields)}]\n"
    lines = [header, "    found = []\n"]
    for name, annotation in fields:
        if annotation in _ONE_NODE:
            lines.append(f"    found.append(node.{name})\n")
        elif annotation in _MAYBE_NODE:
            lines.append(f"    if node.{name} is not None:\n        found.append(node.{name})\n")
        elif annotation in _NODES:
            lines.append(f"    found.extend(node.{name})\n")
        else:
            lines.append(f"    collect_nodes(node.{name}, found)\n")
    lines.append("    return found\n")
    return "".join(lines)


def node_fields(cls: type) -> tuple[str, ...]:
    """The names of the fields of ``cls`` that may hold a node (or a tuple
    of them), in order: what a rebuild looks at."""
    names = _NODE_FIELDS.get(cls)
    if names is None:
        names = _NODE_FIELDS[cls] = tuple(f.name for f in cls.__dataclass_fields__.values()  # type: ignore[attr-defined]
                                          if str(f.type) not in _NO_NODE)
    return names


_NODE_FIELDS: dict[type, tuple[str, ...]] = {}


def _collect_nodes(value: object, found: list[Node]) -> None:
    if isinstance(value, (Expr, Stmt)):
        found.append(value)
    elif type(value) is tuple:
        for item in value:
            _collect_nodes(item, found)


class _ChildrenTable(dict[type, Callable[[Node], list[Node]]]):
    """The children function of each node class, written for every class
    of the IR's modules at once (one text, whose code support/dataclass_code.py
    keeps between runs); a class from elsewhere gets its own on first use."""

    def __missing__(self, cls: type) -> Callable[[Node], list[Node]]:
        self.update(_children_functions([cls]))
        return self[cls]


def _children_functions(classes: list[type]) -> dict[type, Callable[[Node], list[Node]]]:
    namespace: dict[str, object] = {"collect_nodes": _collect_nodes}
    exec(compiled("".join(_children_function_text(cls) for cls in classes)), namespace)  # noqa: S102 - our own text
    return {cls: namespace[f"children_of_{cls.__name__}"] for cls in classes}  # type: ignore[misc]


def _node_classes() -> list[type]:
    """Every node class of the IR's modules, in definition order."""
    return [value for module in (exprs, stmts) for value in vars(module).values()
            if isinstance(value, type) and value.__module__ == module.__name__ and issubclass(value, (Expr, Stmt))
            and hasattr(value, "__dataclass_fields__")]


_CHILDREN_OF = _ChildrenTable(_children_functions(_node_classes()))


def children_functions() -> dict[type, Callable[[Node], list[Node]]]:
    """The children function of each node class (what ``children`` calls),
    for a loop that calls them itself (visitor.py's ``rewrite``)."""
    return _CHILDREN_OF


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
