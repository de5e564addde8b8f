"""The AMX register plan: a tile holds its register while its buffer is
allocated, so buffers that are never live at once share registers of one
shape (amx_plan.buffer_registers)."""

from __future__ import annotations

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.legalize.amx_plan import buffer_registers, register_count


def _zero(name: str, base: int, rows: int = 16, colbytes: int = 64) -> str:
    lanes = rows * colbytes // 4
    return f"{name}[ramp({base}, 1, {lanes})] = (int32x{lanes})tile_zero({rows}, {colbytes})\n"


def _scope(name: str, elements: int, body: str) -> str:
    """An allocation that ends where its block does (as Halide prints a
    Func's storage inside its producer)."""
    return f"produce {name} {{\nallocate {name}[int32 * {elements}] in AMXTile\n{body}}}\n"


def _plan(text: str, names: set[str]) -> dict[tuple[str, int], int]:
    stmt = parse_input(text, "plan.stmt").ir
    assert isinstance(stmt, ir.Stmt)
    return buffer_registers(stmt, names)


def test_buffers_allocated_one_after_the_other_share_registers_of_one_shape() -> None:
    # four isolated products of one 16 x 64-byte tile each, in turn: one register
    text = "".join(_scope(f"p{i}", 256, _zero(f"p{i}", 0)) for i in range(4))
    plan = _plan(text, {f"p{i}" for i in range(4)})
    assert set(plan) == {(f"p{i}", 0) for i in range(4)}
    assert set(plan.values()) == {0}


def test_nested_buffers_and_other_shapes_take_registers_of_their_own() -> None:
    # an accumulator of two tiles around a product: three registers live at
    # once; a later 8-row product cannot take a 16-row register
    text = _scope("acc", 512, _zero("acc", 0) + _zero("acc", 256) + _scope("p", 256, _zero("p", 0)) +
                  _scope("q", 128, _zero("q", 0, rows=8)))
    plan = _plan(text, {"acc", "p", "q"})
    assert len({plan[("acc", 0)], plan[("acc", 256)], plan[("p", 0)]}) == 3
    assert plan[("q", 0)] not in {plan[("acc", 0)], plan[("acc", 256)], plan[("p", 0)]}
    stmt = parse_input(text, "plan.stmt").ir
    assert isinstance(stmt, ir.Stmt)
    assert register_count(stmt, {"acc", "p", "q"}) == 4


def test_a_sibling_of_the_same_shape_reuses_a_register_given_back() -> None:
    text = (_scope("p", 256, _zero("p", 0)) + _scope("q", 128, _zero("q", 0, rows=8)) +
            _scope("r", 128, _zero("r", 0, rows=8)))
    plan = _plan(text, {"p", "q", "r"})
    assert plan[("q", 0)] == plan[("r", 0)] != plan[("p", 0)]
