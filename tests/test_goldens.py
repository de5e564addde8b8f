"""Every fixture's outputs (rewritten IR, JSON report, C or CUDA) are
byte for byte the committed goldens (tests/goldens.py, `make goldens`), and
the IR invariants hold after every pass on every fixture (the goldens are
computed with --verify-ir)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .goldens import GOLDENS, RUNTIME, cases, compute


@pytest.mark.parametrize("case", cases())
def test_outputs_match_the_goldens(case: str, tmp_path: Path) -> None:
    expected = {p.name: p.read_text() for p in sorted((GOLDENS / case).iterdir())}
    assert expected, f"no goldens for {case}: run `make goldens`"
    actual = compute(case, str(tmp_path / "cache"))
    runtime = actual.pop(RUNTIME, None)
    if runtime is not None:
        assert runtime == (GOLDENS / RUNTIME).read_text(), "the inlined AMX runtime differs from its golden"
    assert sorted(actual) == sorted(expected), "a different set of outputs (or failures) than the goldens"
    for filename, text in expected.items():
        assert actual[filename] == text, f"{case}/{filename} differs from the golden (`make goldens` if intended)"


def test_goldens_cover_every_kind() -> None:
    """The goldens are not vacuous: IR, reports, C and CUDA all appear, and
    some accelerator stores were really lowered."""
    names = [p.name for p in GOLDENS.glob("*/*")]
    for suffix in ("out.stmt", "report.json", "out.c", "out.cu", "lowered.out.stmt"):
        assert suffix in names
    with_runtime = sum(RUNTIME in p.read_text() for p in GOLDENS.glob("*/out.c"))
    assert with_runtime >= 20 and "_tile_loadconfig" in (GOLDENS / RUNTIME).read_text()
    lowered = sum('"lowered": true' in p.read_text() for p in GOLDENS.glob("*/report.json"))
    assert lowered >= 30
    assert not any("internal error" in p.read_text() for p in GOLDENS.glob("*/*.failed"))
