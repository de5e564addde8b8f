"""Every output is valid input: the IR hardboiled prints for each fixture
and application parses back to the same program, verifies against the
original, and compiles again (nothing left to select, the same output)."""

from __future__ import annotations

import sys

import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.pipeline.driver import compile_text
from hardboiled.pipeline.options import CompileOptions
from hardboiled.select.selector import SelectionOptions
from hardboiled.verify.compare import verify

from ..conftest import FIXTURES, MANIFEST, ROOT

sys.path.insert(0, str(ROOT))
from apps.run import applications  # noqa: E402

APPS = applications()
CASES = [f"fixture:{c}" for c in sorted(MANIFEST) if c != "cpu_extern_stage"] + [f"app:{a}" for a in sorted(APPS)]


def _source(case: str) -> tuple[str, bytes, dict[str, str], dict]:
    kind, name = case.split(":")
    if kind == "app":
        app = APPS[name]
        inputs = app.verification_inputs(**app.sizes["test"]) if app.verification_inputs else {}
        return (f"{name}.stmt", (ROOT / "tests" / "fixtures" / "apps" / f"{name}.stmt").read_bytes(),
                {a: app.memory for a in app.accumulators}, inputs)
    entry = MANIFEST[name]
    store_in = {} if entry["accelerator"] == "none" or entry["memory_type"] in ("AMXTile", "WMMAAccumulator") else {
        str(entry["accumulator"]): "AMXTile" if entry["accelerator"] == "amx" else "WMMAAccumulator"}
    return "vectorizing.stmt", (FIXTURES / name / "vectorizing.stmt").read_bytes(), store_in, {}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_the_output_parses_verifies_and_compiles_again(case: str) -> None:
    filename, text, store_in, inputs = _source(case)
    options = CompileOptions.from_flags(selection=SelectionOptions(store_in=store_in, cache_dir=None))
    first = compile_text(filename, text, options)
    assert first.exit_code == 0, [d.message for d in first.diagnostics]
    printed = next(iter(first.outputs.values()))
    reread = parse_input(printed, "out.stmt").ir
    assert isinstance(reread, ir.Stmt)
    original = parse_input(text.decode(), filename).ir
    assert isinstance(original, ir.Stmt)
    result = verify(original, reread, inputs=inputs)
    assert result.ok, result.summary()
    again = compile_text("out.stmt", printed.encode(), options)
    assert again.exit_code == 0, [d.message for d in again.diagnostics]
    assert next(iter(again.outputs.values())) == printed
