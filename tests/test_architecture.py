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
    assert importers == {"hardboiled.select.eqsat"}
