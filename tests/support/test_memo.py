"""support/memo.py: results remembered by the trees' identity, the last
few only."""

from __future__ import annotations

from hardboiled import ir
from hardboiled.support.memo import by_identity


def test_a_tree_is_remembered_by_identity_and_the_oldest_goes_first() -> None:
    calls: list[object] = []

    @by_identity(size=2)
    def size_of(tree: ir.Expr, extra: int) -> int:
        calls.append(tree)
        return len(list(ir.walk(tree))) + extra

    a = ir.Binary(ir.BinOp.ADD, ir.Variable("x"), ir.IntImm(1))
    twin = ir.Binary(ir.BinOp.ADD, ir.Variable("x"), ir.IntImm(1))  # equal to a, another object
    b = ir.Variable("y")
    assert size_of(a, 0) == size_of(a, 0) == 3 and calls == [a]
    assert size_of(twin, 0) == 3 and len(calls) == 2  # equality is not identity: computed again
    assert size_of(a, 1) == 4 and len(calls) == 3  # the other arguments are part of the key
    # Two are kept: (twin, 0) and (a, 1); (a, 0), the least recently asked, went.
    assert size_of(a, 1) == 4 and len(calls) == 3
    size_of(b, 0)  # (twin, 0) goes
    assert size_of(a, 1) == 4 and len(calls) == 4
    assert size_of(a, 0) == 3 and len(calls) == 5
    assert size_of(twin, 0) == 3 and len(calls) == 6
    size_of.forget()  # type: ignore[attr-defined]
    size_of(b, 0)
    assert len(calls) == 7
