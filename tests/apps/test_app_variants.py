"""The applications with schedules of their own (tools/gen_app_variants.py,
seed 1, committed in tests/fixtures/app_variants): every accelerator store
lowers, verification finds no difference, and the CUDA is emitted.

The upsample variants keep several accumulator rows per block: ten windows
into the image per reduction step, at different rows. egglog 13.2.0 merged
them into one operand (all ten read the first row); the rewrite check now
refuses such a rewrite, and egglog 13.2 is excluded (pyproject.toml).
The DCT denoise variants verify on the real DCT matrices: their float16
worst-case error bounds pass the output's range (the application says why,
apps/dct_denoise.py), so those elements are accepted as unproven, never as
proven.
"""

from __future__ import annotations

import json
import sys

import pytest

from hardboiled.pipeline.driver import compile_text
from hardboiled.pipeline.options import CompileOptions
from hardboiled.select.selector import SelectionOptions

from ..conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import gen_app_variants as gav  # noqa: E402

VARIANTS = ROOT / "tests" / "fixtures" / "app_variants"
MANIFEST = json.loads((VARIANTS / "MANIFEST.json").read_text())


def test_the_committed_set_is_the_generator_s_draw() -> None:
    """Generated, not listed: the files are what seed 1 draws, and the draw
    covers both applications and several choices of each dimension."""
    names = gav.variants(MANIFEST["seed"], MANIFEST["count"])
    assert sorted(names) == sorted(p.stem for p in VARIANTS.glob("*.stmt")) == sorted(MANIFEST["variants"])
    choices = [gav.choices(n)[1] for n in names]
    assert len({c["rows"] for c in choices if "rows" in c}) >= 3
    assert len({c["tail"] for c in choices if "tail" in c}) >= 2
    assert any(c.get("side_by_side") for c in choices)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MANIFEST["variants"]))
def test_a_variant_lowers_and_verifies(name: str) -> None:
    entry = MANIFEST["variants"][name]
    app = entry["app"]
    options = CompileOptions.from_flags(
        selection=SelectionOptions(store_in={a: entry["memory"] for a in entry["accumulators"]}, cache_dir=None),
        emit=("cuda",), verify=True, inputs=gav.verification_inputs(name),
        accept_unproven=app == "dct_denoise")
    result = compile_text(f"{name}.stmt", (VARIANTS / f"{name}.stmt").read_bytes(), options)
    messages = [*result.messages, *(d.message for d in result.diagnostics)]
    assert result.exit_code == 0, messages
    statements = result.report["statements"]
    assert statements and all(s["lowered"] for s in statements)
    verification = result.report["verification"]
    assert verification["ok"]
    if app == "upsample":
        assert all(o["unproven"] == 0 for o in verification["outputs"])
    else:
        # Unproven, but measured: on the real matrices the two programs
        # agree to float16 rounding (about 12 steps of 2^-10 at most, where
        # a wrong operand moves outputs by tenths) in an output in [0, 1].
        assert all(o["max_abs_error"] < 0.02 for o in verification["outputs"])
    assert "wmma::mma_sync(" in next(iter(result.outputs.values()))
