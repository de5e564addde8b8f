"""The term schema (hardboiled/select/terms.py): the generated rule file
matches it, terms built and read through it round-trip on the real
fixtures, and terms it does not allow are refused."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.frontend.stages import decode_input
from hardboiled.ir.visitor import map_expr, with_exprs
from hardboiled.select import terms
from hardboiled.select.extract import MARKERS, accelerator_allocations, encode_stores, select_stores
from hardboiled.select.reinsert import Decoder, decoder_method, strip_markers
from hardboiled.select.terms import TERMS, TermError, make, parse_term

from ..conftest import FIXTURES, MANIFEST, ROOT


def test_the_committed_definition_egg_is_generated_from_the_schema() -> None:
    committed = (ROOT / "rules" / terms.GENERATED_FILE).read_text()
    assert committed == terms.declarations_text(), (
        f"rules/{terms.GENERATED_FILE} differs from the schema: run `{terms.REGENERATE_COMMAND}` (make terms)"
    )


def test_the_check_mode_agrees() -> None:
    assert terms.main(["--check"]) == 0


def test_every_sort_used_by_a_field_is_declared() -> None:
    for constructor in terms.CONSTRUCTORS.values():
        for field in constructor.fields:
            assert field.sort in terms.PRIMITIVE_SORTS or field.sort in terms.SORTS, (constructor.name, field)


def test_the_name_tables_cover_the_ir_enums() -> None:
    for code in ir.TypeCode:
        assert terms.type_code_of(terms.type_code_name(code)) is code
    for op in ir.BinOp:
        assert terms.binop_of(terms.binop_name(op)) is op
    with pytest.raises(TermError):
        terms.binop_of("IntT")


def test_every_expression_constructor_can_be_decoded() -> None:
    """A constructor added to the schema needs its meaning in reinsert.py
    (markers excepted: they mean the store was not lowered)."""
    for name in terms.CONSTRUCTORS:
        if terms.SORT_OF[name] == "Expr" and name not in MARKERS:
            assert hasattr(Decoder, decoder_method(name)), f"Decoder has no method for {name}"


# --------------------------------------------------------------------------
# Round trip on the real fixtures
# --------------------------------------------------------------------------


def _encodings() -> list[tuple[str, ir.Store, str, object]]:
    found = []
    for case, entry in sorted(MANIFEST.items()):
        store_in = {str(entry["accumulator"]): "WMMAAccumulator"} if entry["accelerator"] == "wmma" else {}
        path = FIXTURES / case / "vectorizing.stmt"
        program = parse_input(decode_input(path.read_bytes(), str(path)), str(path)).ir
        bodies = [f.body for f in program.functions] if isinstance(program, ir.Module) else [program]
        for body in bodies:
            allocations = accelerator_allocations(body, store_in)
            selected = [s for s in select_stores(body, allocations, store_in) if s.store.predicate is None]
            encoding = encode_stores(selected, allocations, store_in)
            found.extend((case, s.store, text, encoding) for s, text in zip(selected, encoding.terms))
    return found


ENCODINGS = _encodings()


def test_the_fixtures_have_stores_to_encode() -> None:
    assert len(ENCODINGS) >= 40
    assert {"Mem2AMX", "AMX2Mem", "Mem2WMMA", "WMMA2Mem"} <= {m for _, _, text, _ in ENCODINGS for m in MARKERS
                                                             if f"({m} " in text}


@pytest.mark.parametrize("case,store,text,encoding", ENCODINGS,
                         ids=[f"{case}:{store.name}:{i}" for i, (case, store, _, _) in enumerate(ENCODINGS)])
def test_encode_render_parse_decode_round_trips(case: str, store: ir.Store, text: str, encoding: object) -> None:
    term = parse_term(text, "Stmt")
    assert term.render() == text
    decoded = Decoder(encoding).stmt(strip_markers(term))  # type: ignore[arg-type]
    assert decoded == dataclasses.replace(with_exprs(store, _without_alignment), alignment=None)


def _without_alignment(e: ir.Expr) -> ir.Expr | None:
    """The schema's Load and Store have no alignment field: Halide's
    ``aligned(m, r)`` hints are not encoded, so decoded ones have none."""
    if isinstance(e, ir.Load) and e.alignment is not None:
        return dataclasses.replace(e, alignment=None, index=map_expr(e.index, _without_alignment))
    return None


# --------------------------------------------------------------------------
# Terms the schema refuses
# --------------------------------------------------------------------------

I32 = TERMS.Ty(TERMS.IntT(), 32, 1)


def test_building_checks_arity_and_sorts() -> None:
    assert TERMS.IntImm(I32, -3).render() == "(IntImm (Ty (IntT) 32 1) -3)"
    assert TERMS.Var(I32, 'a"b\\').render() == '(Var (Ty (IntT) 32 1) "a\\"b\\\\")'
    with pytest.raises(TermError, match=r"IntImm takes 2 fields \(type value\), not 1"):
        TERMS.IntImm(I32)
    with pytest.raises(TermError, match="field value of IntImm must be a i64"):
        TERMS.IntImm(I32, "3")
    with pytest.raises(TermError, match="field type of IntImm must be a Type, not IntImm"):
        TERMS.IntImm(TERMS.IntImm(I32, 1), 3)
    with pytest.raises(TermError, match="unknown constructor Bogus"):
        make("Bogus")
    with pytest.raises(AttributeError, match="unknown constructor Bogus"):
        TERMS.Bogus  # noqa: B018


def test_fields_are_read_by_name() -> None:
    load = parse_term('(TileZero (Ty (FloatT) 32 256) 16 64)')
    assert (load.rows, load.colbytes, load.type.bits) == (16, 64, 32)
    with pytest.raises(AttributeError, match="TileZero has no field 'stride'"):
        load.stride  # noqa: B018


@pytest.mark.parametrize("text,message", [
    ("(Bogus 1 2)", "unknown constructor Bogus"),
    ("(IntImm (Ty (IntT) 32 1))", r"IntImm takes 2 fields \(type value\), not 1"),
    ("(IntImm (Ty (IntT) 32 1) 1 2)", "IntImm takes 2 fields"),
    ('(Var (Ty (IntT) 32 1) x)', "field name of Var must be a String"),
    ('(Load (Ty (IntT) 32 1) "A" "i")', "expected a constructor application"),
    ("(Cast (IntImm (Ty (IntT) 32 1) 1) (Var (Ty (IntT) 32 1) \"x\"))", "expected a Type, not IntImm"),
    ("(Ty (Ramp) 32 1)", r"expected a TypeCode, not Ramp \(a Expr\)"),
    ("(Ty (IntT 8) 32 1)", r"IntT takes 0 fields \(\), not 1"),
    ("(IntImm (Ty (IntT) 32 1) 1", "exactly one complete"),
])
def test_parsing_refuses_what_the_schema_does_not_allow(text: str, message: str) -> None:
    with pytest.raises(TermError, match=message):
        parse_term(text)


def test_parsing_can_require_a_sort() -> None:
    with pytest.raises(TermError, match="expected a Stmt, not IntImm"):
        parse_term("(IntImm (Ty (IntT) 32 1) 1)", "Stmt")


def test_generated_file_is_written_by_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / terms.GENERATED_FILE
    monkeypatch.setattr(terms, "_generated_path", lambda: target)
    assert terms.main(["--check"]) == 1
    assert terms.main([]) == 0
    assert target.read_text() == terms.declarations_text()
    assert terms.main(["--check"]) == 0
