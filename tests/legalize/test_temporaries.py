"""Placing temporaries (legalize/temporaries.py)."""

from __future__ import annotations

import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.ir.printer import print_ir
from hardboiled.legalize import temporaries
from hardboiled.select.reinsert import Temporary

PROGRAM = """for (i, 0, 4) {
 out[i] = T1 + T2
}
for (j, 0, 4) {
 if (j < 2) {
  out[j] = T1*T3
 } else {
  out[j] = T3 + T5
 }
}
for (k, 0, 4) {
 out[k] = T4
 for (m, 0, 2) {
  out[(k*2) + m] = T4 + (T1 + T5)
 }
}
"""


def _placed(full_analysis: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    if full_analysis:  # the analysis made again from nothing after each split, as it once was
        extend = temporaries._Subtrees.extend

        def afresh(self: temporaries._Subtrees, stmt: ir.Stmt, names: set[str]) -> None:
            for table in (self.uses, self.writes, self.binds, self.kernels, self.guarded):
                table.clear()
            extend(self, stmt, names)

        monkeypatch.setattr(temporaries._Subtrees, "extend", afresh)
    stmt = parse_input(PROGRAM, "t.stmt", buffer_types={"out": ir.Int(32), "a": ir.Int(32)}).ir
    assert isinstance(stmt, ir.Stmt)
    temps = [Temporary(f"T{n}", ir.Load("a", ir.IntImm(n), ir.Int(32))) for n in range(1, 6)]
    return print_ir(temporaries.place_temporaries(stmt, temps))


def test_temporaries_split_into_copies_are_placed_as_with_the_analysis_made_again(monkeypatch) -> None:
    """T1, T3 and T5 are used where no one statement may hold their fill (two
    loops, two branches of an `if`): each is split into copies, whose own
    uses may split again. The analysis of the tree, extended with what each
    split rebuilt, places everything as one made again from nothing."""
    kept = _placed(False, monkeypatch)
    assert kept == _placed(True, monkeypatch)
    allocated = {line.split()[1].split("[")[0] for line in kept.splitlines() if line.strip().startswith("allocate")}
    assert allocated == {"T1.0", "T1.1", "T1.2", "T2", "T3.0", "T3.1", "T4", "T5.0", "T5.1"}, kept
