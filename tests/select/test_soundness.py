"""What selection answers must compute what the store computes, whatever
egglog or a rule does: the rewrite check turns any other answer into a
miss, and the egglog in use must not be one that matches a rule's pattern
across stores (13.2.0 did: docs/architecture.md, "Soundness")."""

from __future__ import annotations

import importlib.metadata

import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.pipeline.driver import compile_text
from hardboiled.pipeline.options import CompileOptions
from hardboiled.select.options import SelectionOptions
from hardboiled.select.reinsert import Decoder
from hardboiled.select.selector import select_instructions

from ..conftest import ROOT

UPSAMPLE = ROOT / "tests" / "fixtures" / "app_variants" / "upsample-r10-t16-w256-h40.stmt"
"""Ten accumulator rows per block: ten windows of the image per reduction
step, rows 136 apart."""


def test_the_egglog_in_use_is_not_13_2() -> None:
    version = importlib.metadata.version("egglog")
    assert not version.startswith("13.2"), version


def test_ten_windows_at_ten_rows_read_ten_operands() -> None:
    """Selection alone (no rewrite check): each accumulation of the ten rows
    reads a zero-padded copy of its own window. Under egglog 13.2.0 all ten
    read the first one."""
    stmt = parse_input(UPSAMPLE.read_text()).ir
    assert isinstance(stmt, ir.Stmt)
    selection = select_instructions(stmt, SelectionOptions(store_in={"conv": "WMMAAccumulator"}, cache_dir=None))
    windows = {t.value for t in selection.temporaries if ".padded." in t.name}
    assert len(windows) == 10
    bases = {str(load.index) for value in windows for load in ir.walk(value) if isinstance(load, ir.Load)}
    assert len(bases) == 10


@pytest.mark.parametrize("broken", ["decode_padded_rows", "decode_frag_load"])
def test_a_rewrite_that_computes_something_else_is_a_miss_never_code(broken: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A decoder that moves every operand window one element on (a stand-in
    for any unsound rule or egglog fault): nothing is emitted, the run
    fails as a miss (exit 1) at each store, and the note says whose fault
    it is."""
    original = getattr(Decoder, broken)

    def shifted(self: Decoder, term: object) -> ir.Expr:
        value = original(self, term)
        if isinstance(value, ir.Call):  # a fragment load: its offset
            args = list(value.args)
            args[1] = ir.Binary(ir.BinOp.ADD, args[1], ir.IntImm(1, args[1].type))
            return ir.Call(value.name, tuple(args), value.type)
        assert isinstance(value, ir.Shuffle)  # the padded rows: their first element
        return ir.Shuffle(value.vectors, tuple(i + 1 if i + 1 < value.input_lanes else i for i in value.indices))

    monkeypatch.setattr(Decoder, broken, shifted)
    options = CompileOptions.from_flags(selection=SelectionOptions(store_in={"conv": "WMMAAccumulator"},
                                                                   cache_dir=None), emit=("cuda",))
    result = compile_text(UPSAMPLE.name, UPSAMPLE.read_bytes(), options)
    assert result.exit_code == 1 and result.outputs == {}
    refused = [d for d in result.diagnostics if any("does not compute what the store computes" in n for n in d.notes)]
    assert refused and all("not in the schedule" in n for d in refused for n in d.notes if "does not compute" in n)
