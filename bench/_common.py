"""What the benchmarks share: where the checkout, its fixtures and the
results live, the AMX and WMMA fixtures' vectorizing statements, and writing a
result file. Importing it puts the checkout first on sys.path, so a
benchmark measures this tree's hardboiled."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "halide"
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT))

from hardboiled import ir  # noqa: E402
from hardboiled.frontend.parse import parse_input  # noqa: E402


def fixture_stmt(case: str) -> ir.Stmt:
    stmt = parse_input((FIXTURES / case / "vectorizing.stmt").read_text()).ir
    assert isinstance(stmt, ir.Stmt)
    return stmt


def accelerator_cases(accelerator: str) -> dict[str, dict[str, Any]]:
    """The fixtures for one accelerator ("amx" or "wmma"), with their manifest entries."""
    manifest = json.loads((FIXTURES / "MANIFEST.json").read_text())
    return {case: meta for case, meta in sorted(manifest.items()) if meta["accelerator"] == accelerator}


def amx_cases() -> list[str]:
    return list(accelerator_cases("amx"))


def write_results(name: str, data: Any) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path
