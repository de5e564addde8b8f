"""Round trip over every committed Halide dump.

``print(parse(text))`` must reproduce Halide's own text byte for byte, and
``parse(print(ir)) == ir`` must hold for the IR parsed from it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input, parse_text
from hardboiled.frontend.stages import split_log
from hardboiled.ir.printer import print_ir

from ..conftest import FIXTURES, LOG_FIXTURES, MANIFEST, STMT_FIXTURES, fixture_id, run_cli


def test_every_manifest_case_has_its_files() -> None:
    assert len(MANIFEST) >= 20
    for case, entry in MANIFEST.items():
        for name in entry["files"]:
            assert (FIXTURES / case / name).is_file(), f"{case}/{name} missing"
        assert "vectorizing.stmt" in entry["files"]


@pytest.mark.parametrize("path", STMT_FIXTURES, ids=fixture_id)
def test_print_reproduces_halide_text(path: Path) -> None:
    text = path.read_text()
    parsed = parse_input(text, str(path))
    expected_kind = "module" if path.name == "lowered.stmt" else "stmt"
    assert parsed.kind == expected_kind
    assert print_ir(parsed.ir) == text


@pytest.mark.parametrize("path", STMT_FIXTURES, ids=fixture_id)
def test_parse_of_print_is_identity(path: Path) -> None:
    tree = parse_input(path.read_text(), str(path)).ir
    again = parse_text(print_ir(tree), "<printed>")
    assert again == tree
    assert hash(again) == hash(tree)


@pytest.mark.parametrize("path", LOG_FIXTURES, ids=fixture_id)
def test_log_default_stage_is_vectorizing(path: Path) -> None:
    log_text = path.read_text()
    parsed = parse_input(log_text, str(path))
    assert parsed.kind == "log" and parsed.stage == "vectorizing"
    stmt_text = (path.parent / "vectorizing.stmt").read_text()
    assert print_ir(parsed.ir) == stmt_text
    assert parsed.ir == parse_text(stmt_text)


@pytest.mark.parametrize(
    "path", [p for p in LOG_FIXTURES if (p.parent / "extracting_tile_operations.stmt").exists()],
    ids=fixture_id,
)
def test_log_named_stage(path: Path) -> None:
    parsed = parse_input(path.read_text(), str(path), stage="extracting tile operations")
    assert print_ir(parsed.ir) == (path.parent / "extracting_tile_operations.stmt").read_text()


def test_unchanged_stage_resolves_to_the_last_printed_ir() -> None:
    log_path = LOG_FIXTURES[0]
    text = log_path.read_text()
    stages = split_log(text)
    names = [s.name for s in stages]
    i = names.index("unrolling")
    assert stages[i].body is None, "the fixture's unrolling stage is expected to be unchanged"
    previous = next(s for s in reversed(stages[:i]) if s.body is not None)
    parsed = parse_input(text, str(log_path), stage="unrolling")
    assert parsed.ir == parse_text(previous.body or "")


@pytest.mark.parametrize("path", LOG_FIXTURES, ids=fixture_id)
def test_every_stage_of_a_log_round_trips(path: Path) -> None:
    """Not just 'vectorizing': every block Halide printed, from the first
    loop nests (realize/provide) to the final closures, reads and prints
    back exactly."""
    stages = [s for s in split_log(path.read_text()) if s.body is not None]
    assert len(stages) > 20
    for stage in stages:
        parsed = parse_text(stage.body or "", f"{path}:{stage.name}")
        assert print_ir(parsed) == stage.body, stage.name


@pytest.mark.parametrize("path", STMT_FIXTURES[:3] + LOG_FIXTURES[:1], ids=fixture_id)
def test_cli_parse_round_trips_through_stdin_and_stdout(path: Path) -> None:
    result = run_cli("parse", "-", stdin=path.read_bytes())
    assert result.returncode == 0, result.stderr.decode()
    expected = path.read_bytes()
    if path.name == "debug.log":
        expected = (path.parent / "vectorizing.stmt").read_bytes()
    assert result.stdout == expected
    assert result.stderr == b""


def test_cli_output_file(tmp_path: Path) -> None:
    path = STMT_FIXTURES[0]
    out = tmp_path / "out.stmt"
    result = run_cli("parse", str(path), "-o", str(out))
    assert result.returncode == 0
    assert result.stdout == b""
    assert out.read_bytes() == path.read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == ["out.stmt"]


def test_module_structure() -> None:
    path = FIXTURES / "amx_bf16_matmul_std_single" / "lowered.stmt"
    module = parse_input(path.read_text(), str(path)).ir
    assert isinstance(module, ir.Module)
    assert module.target == "x86-64-linux-avx512_sapphirerapids"
    assert [f.name for f in module.functions] == ["mm_global_wrapper_0"]
    assert module.functions[0].args == ("A", "B", "mm_global_wrapper$0")
    assert module.functions[0].linkage == "external_plus_metadata"


@pytest.mark.parametrize("form", ["shuffle((bfloat16x2)k[ramp(0, 1, 2)], 0.000000h, 0, 2, 1)",
                                  "concat_vectors((bfloat16x2)k[ramp(0, 1, 2)], x2(0.000000h))"])
def test_a_half_literal_beside_bfloat16_lanes_is_bfloat16(form: str) -> None:
    """Halide prints every 16-bit float literal with an h; joined with
    bfloat16 lanes (a Toeplitz block's padding zero beside bf16 taps, as
    hardboiled prints it) it is bfloat16, and the text reads back to the
    same program."""
    stmt = parse_text(f"out[ramp(0, 1, 3)] = {form}") if "shuffle" in form else parse_text(
        f"out[ramp(0, 1, 4)] = {form}")
    assert isinstance(stmt, ir.Store)
    assert stmt.value.type.code is ir.TypeCode.BFLOAT
    assert parse_text(print_ir(stmt)) == stmt
