"""The package structure: stages import one way, with no import cycles
(the layer contracts themselves are checked by `make lint`, lint-imports)."""

from __future__ import annotations

import grimp

TIERS = (("halide",), ("api", "cli"), ("pipeline",), ("verify", "measure"), ("codegen",), ("legalize",), ("select",),
         ("targets", "frontend"), ("ir",), ("support",))
"""Top to bottom; the packages of one tier are independent of each other
(the API and the command line are two front doors on the same pipeline).
The package itself (``hardboiled/__init__.py``) imports the API lazily, and
no stage imports it."""


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("hardboiled")


def test_no_module_imports_itself_back() -> None:
    graph = _graph()
    cycles = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            chain = graph.find_shortest_chain(importer=imported, imported=module)
            if chain:
                cycles.add(tuple(chain))
    assert not cycles, f"import cycles: {sorted(cycles)}"


def test_no_stage_imports_a_later_stage_or_a_sibling() -> None:
    graph = _graph()
    wrong = []
    for i, tier in enumerate(TIERS):
        for lower in tier:
            for higher in [p for upper in TIERS[:i] for p in upper] + [p for p in tier if p != lower]:
                if graph.chain_exists(importer=f"hardboiled.{lower}", imported=f"hardboiled.{higher}",
                                      as_packages=True):
                    wrong.append(f"{lower} -> {higher}")
    assert wrong == []


def test_only_eqsat_imports_egglog() -> None:
    graph = grimp.build_graph("hardboiled", "egglog")
    ours = {m for m in graph.modules if m.startswith("hardboiled")}
    importers = {m for m in ours if any(i == "egglog" or i.startswith("egglog.")
                                         for i in graph.find_modules_directly_imported_by(m))}
    assert importers == {"hardboiled.select.eqsat_child"}  # select.eqsat's child process


def test_the_egglog_child_loads_only_what_it_runs() -> None:
    """The child starts for every compile a server or a kept child does not
    answer: it imports no dataclasses, subprocess, threading or
    diagnostics (select/eqsat.py's), nor the rest of hardboiled."""
    import subprocess
    import sys

    code = ("import sys\n"
            "import hardboiled.select.eqsat_child\n"
            "print(sorted(m for m in sys.modules if m.startswith('hardboiled') or m in "
            "('dataclasses', 'subprocess', 'threading', 'typing', 'pathlib', 'numpy', 'egglog')))\n")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == str(["hardboiled", "hardboiled.select", "hardboiled.select.eqsat_child",
                                  "hardboiled.select.rounds", "hardboiled.support", "hardboiled.support.dataclass_code",
                                  "hardboiled.support.version"])


MAX_MODULE_LINES = 700
MAX_COMPLEXITY = 20
"""Cyclomatic complexity as radon counts it (every ``and``/``or`` a branch,
which ruff's C901 does not count)."""


def _modules() -> list[tuple[str, str]]:
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent / "hardboiled"
    return [(str(path.relative_to(package.parent)), path.read_text()) for path in sorted(package.rglob("*.py"))]


def test_no_module_is_over_700_lines() -> None:
    long = [f"{name}: {text.count(chr(10))}" for name, text in _modules() if text.count("\n") > MAX_MODULE_LINES]
    assert long == []


def test_no_function_is_over_complexity_20() -> None:
    from radon.complexity import cc_visit

    complex_functions = [f"{name}: {block.fullname} {block.complexity}"
                         for name, text in _modules() for block in cc_visit(text)
                         if block.complexity > MAX_COMPLEXITY]
    assert complex_functions == []


def test_intrinsic_descriptors_are_resolved_in_one_place() -> None:
    """Passes, printers, the interpreter and the counters ask
    ``wmma_intrinsic``/``amx_intrinsic`` for a call's descriptor: only the
    target tables read a call name, and the report, which holds names
    (``StoreReport.intrinsics``) rather than calls."""
    readers = {name for name, text in _modules() if "Intrinsic.parse" in text}
    assert readers == {"hardboiled/targets/wmma.py", "hardboiled/targets/amx.py", "hardboiled/pipeline/report.py"}
