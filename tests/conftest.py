"""Shared paths and helpers for the test suite."""

from __future__ import annotations

import functools
import json
import os
import shutil
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

_SHARED_CACHE = "HARDBOILED_TEST_CACHE_DIR"
"""Names the test run's selection cache for the processes it starts (the
workers of a parallel run, pytest-xdist)."""
_OWN_CACHE = _SHARED_CACHE not in os.environ
if _OWN_CACHE:
    os.environ[_SHARED_CACHE] = tempfile.mkdtemp(prefix="hardboiled-test-cache-")
CACHE_DIR = os.environ[_SHARED_CACHE]
os.environ.setdefault("HARDBOILED_NO_SERVER", "1")  # a user's compile server is not the tests' (test_server.py starts its own)
"""The CLI caches selection results; tests get a cache of their own, made
by the process that starts the run and shared by its workers, as
concurrent compiles share one (support/cache.py writes entries
atomically)."""


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _OWN_CACHE:
        shutil.rmtree(CACHE_DIR, ignore_errors=True)


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
def tensorized_fixture(case: str) -> tuple[ir.Stmt, ir.Stmt]:
    """A fixture of tests/fixtures/halide (its vectorizing stage) and what
    selection and legalization make of it with its accumulator in
    accelerator memory (as ``compile`` marks it, or the dump does; a
    fixture with no accelerator is compiled as it is);
    computed once per test process, for the tests that read it. The IR is
    immutable, so sharing it is safe."""
    from hardboiled.frontend.parse import parse_input
    from hardboiled.legalize.passes import tensorize
    from hardboiled.select.selector import SelectionOptions

    original = parse_input((FIXTURES / case / "vectorizing.stmt").read_text()).ir
    assert isinstance(original, ir.Stmt)
    entry = MANIFEST[case]
    marked = entry["accelerator"] == "none" or entry["memory_type"] in ("AMXTile", "WMMAAccumulator")
    store_in = {} if marked else {
        str(entry["accumulator"]): "AMXTile" if entry["accelerator"] == "amx" else "WMMAAccumulator"}
    return original, tensorize(original, SelectionOptions(store_in=store_in, cache_dir=CACHE_DIR)).stmt


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
    return tensorize(stmt, SelectionOptions(store_in={a: app.memory for a in app.accumulators},
                                            cache_dir=CACHE_DIR)).stmt


@functools.cache
def app_cuda(name: str) -> str:
    """The application's generated CUDA (as ``--emit cuda`` writes it)."""
    from hardboiled.codegen.cuda import generate_cuda

    return generate_cuda(tensorized_app(name))
