"""The tree questions the passes ask again and again (ir/traversal.py)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.ir.traversal import allocations, has_gpu_loops, stores

from .. import ir_strategies as irs

_CPU = """allocate acc[float32 * 16] in AMXTile
for (x, 0, 4) {
 acc[x] = 0.0f
 allocate tmp[int32 * 4] in Stack
 tmp[0] = x
}
"""

_GPU = """gpu_block<CUDA> (b, 0, 2) {
 allocate frag[float32 * 256] in WMMAAccumulator
 gpu_thread<CUDA> (t, 0, 32) {
  frag[t] = 0.0f
 }
}
"""


def test_outline_answers_for_the_tree_asked_about_whichever_was_asked_last() -> None:
    """One walk per tree is kept (by identity): asking about one tree, then
    another, then the first again, or about a subtree, gives each its own
    answer, as a walk would."""
    cpu, gpu = (parse_input(text).ir for text in (_CPU, _GPU))
    assert isinstance(cpu, ir.Stmt) and isinstance(gpu, ir.Stmt)

    def walked(node: ir.Node) -> tuple[bool, list[str], list[ir.Store]]:
        nodes = list(ir.walk(node))
        return (any(isinstance(n, ir.For) and n.kind in ir.traversal.GPU_LOOP_KINDS for n in nodes),
                [n.name for n in nodes if isinstance(n, ir.Allocate)], [n for n in nodes if isinstance(n, ir.Store)])

    inner = next(n for n in ir.walk(gpu) if isinstance(n, ir.Allocate)).body
    for node in (cpu, cpu, gpu, cpu, inner, gpu, inner):
        assert (has_gpu_loops(node), [a.name for a in allocations(node)], list(stores(node))) == walked(node)
    assert walked(cpu)[:2] == (False, ["acc", "tmp"]) and walked(gpu)[:2] == (True, ["frag"])
    assert walked(inner)[:2] == (True, []) and [s.name for s in walked(cpu)[2]] == ["acc", "tmp"]


def _children_by_fields(node: ir.Node) -> list[ir.Node]:
    """Every node held by a field, in field order, tuples looked into: what
    the children functions written from the annotations must give."""
    import dataclasses

    found: list[ir.Node] = []

    def collect(value: object) -> None:
        if isinstance(value, (ir.Expr, ir.Stmt)):
            found.append(value)
        elif isinstance(value, tuple):
            for item in value:
                collect(item)

    for field in dataclasses.fields(node):  # type: ignore[arg-type]
        collect(getattr(node, field.name))
    return found


def test_every_node_class_has_a_children_function_of_its_own() -> None:
    from hardboiled.ir import exprs, stmts, traversal

    classes = [c for m in (exprs, stmts) for c in vars(m).values()
               if isinstance(c, type) and c.__module__ == m.__name__ and issubclass(c, (ir.Expr, ir.Stmt))
               and hasattr(c, "__dataclass_fields__")]
    assert len(classes) > 30 and all(c in traversal._CHILDREN_OF for c in classes)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(irs.statements(depth=4, expr_depth=3))
def test_children_and_walk_see_what_the_fields_hold(stmt: ir.Stmt) -> None:
    order: list[ir.Node] = []
    pending: list[ir.Node] = [stmt]
    while pending:
        node = pending.pop()
        order.append(node)
        expected = _children_by_fields(node)
        got = ir.children(node)
        assert got == expected and all(a is b for a, b in zip(got, expected, strict=True)), type(node)
        assert ir.children(node) is not got  # a new list each time: callers may change it
        pending.extend(reversed(expected))
    assert all(a is b for a, b in zip(ir.walk(stmt), order, strict=True)) and len(list(ir.walk(stmt))) == len(order)


def test_a_node_class_from_elsewhere_gets_a_children_function_on_first_use() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Pair(ir.Expr):
        first: ir.Expr
        rest: tuple[ir.Expr, ...]
        maybe: ir.Expr | None
        name: str

    one, two = ir.IntImm(1), ir.IntImm(2)
    pair = Pair(one, (two, one), None, "p")
    assert ir.children(pair) == [one, two, one]
    assert list(ir.walk(Pair(one, (pair,), two, "q")))[:3] == [Pair(one, (pair,), two, "q"), one, pair]


def _holds_what_its_annotation_says(value: object, annotation: str) -> bool:
    kinds = {"Expr": ir.Expr, "Stmt": ir.Stmt, "Node": (ir.Expr, ir.Stmt)}
    if annotation in kinds:
        return isinstance(value, kinds[annotation])
    if annotation.endswith(" | None"):
        return value is None or _holds_what_its_annotation_says(value, annotation.removesuffix(" | None"))
    if annotation.startswith("tuple[") and annotation.endswith(", ...]"):
        return type(value) is tuple and all(_holds_what_its_annotation_says(v, annotation[6:-6]) for v in value)
    return True  # a field that holds no node


def test_real_ir_holds_in_each_field_what_its_annotation_says() -> None:
    """The children functions read a field as its annotation says (an
    ``Expr`` field is a child, never None; a ``tuple[Expr, ...]`` holds only
    nodes), trusting mypy for the passes' own constructions. The parser's
    trees (built untyped by Lark) and what the passes make of them must
    hold it too: every real fixture, parsed and after selection and
    legalization."""
    from hardboiled.ir.traversal import node_fields

    from ..conftest import FIXTURES, tensorized_fixture

    cases = sorted(p.name for p in FIXTURES.iterdir() if (p / "vectorizing.stmt").is_file())
    trees = [parse_input((FIXTURES / case / "vectorizing.stmt").read_text()).ir for case in cases]
    trees += [tensorized_fixture(case)[1] for case in cases[::8]]
    checked = 0
    for tree in trees:
        for node in ir.walk(tree):
            for name in node_fields(type(node)):
                annotation = str(type(node).__dataclass_fields__[name].type)  # type: ignore[attr-defined]
                assert _holds_what_its_annotation_says(getattr(node, name), annotation), (type(node), name)
                checked += 1
    assert len(cases) > 40 and checked > 10_000
