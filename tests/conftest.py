"""Shared paths and helpers for the test suite."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import configuration, settings

from hardboiled import ir

# Tests write nothing into the checkout: Hypothesis keeps no example
# database and its other files (a character-table cache) go to a temporary
# directory; pytest's own cache is off (see pyproject.toml).
configuration.set_hypothesis_home_dir(tempfile.mkdtemp(prefix="hardboiled-hypothesis-"))
settings.register_profile("hardboiled", database=None)
settings.load_profile("hardboiled")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "halide"
MANIFEST = json.loads((FIXTURES / "MANIFEST.json").read_text())
STMT_FIXTURES = sorted(FIXTURES.glob("*/*.stmt"))
LOG_FIXTURES = sorted(FIXTURES.glob("*/debug.log"))

# The installed console script, next to the interpreter running the tests.
HARDBOILED = Path(sys.executable).parent / "hardboiled"

# The CLI caches selection results; tests get a cache of their own.
CACHE_DIR = tempfile.mkdtemp(prefix="hardboiled-test-cache-")


def fixture_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def run_cli(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run the installed ``hardboiled`` script, as a user or build system would."""
    assert HARDBOILED.exists(), f"console script not installed at {HARDBOILED}"
    full_env = dict(os.environ)
    full_env["HARDBOILED_CACHE_DIR"] = CACHE_DIR
    full_env.update(env or {})
    return subprocess.run(
        [str(HARDBOILED), *args], input=stdin if stdin is not None else b"",
        capture_output=True, env=full_env, cwd=cwd, timeout=120,
    )


@pytest.fixture(scope="session")
def manifest() -> dict[str, dict[str, object]]:
    return MANIFEST


@functools.cache
def tensorized_app(name: str) -> ir.Stmt:
    """An application of apps/ at test size (tests/fixtures/apps), selected
    and legalized with its accumulators in accelerator memory; computed once
    per session for the tests that read its generated code."""
    sys.path.insert(0, str(ROOT))
    from apps.run import applications
    from hardboiled.frontend.parse import parse_input
    from hardboiled.legalize.passes import tensorize
    from hardboiled.select.selector import SelectionOptions

    app = applications()[name]
    stmt = parse_input((ROOT / "tests" / "fixtures" / "apps" / f"{name}.stmt").read_text()).ir
    assert isinstance(stmt, ir.Stmt)
    return tensorize(stmt, SelectionOptions(store_in={a: app.memory for a in app.accumulators})).stmt


@functools.cache
def app_cuda(name: str) -> str:
    """The application's generated CUDA (as ``--emit cuda`` writes it)."""
    from hardboiled.codegen.cuda import generate_cuda

    return generate_cuda(tensorized_app(name))
