"""Figures of the code base itself (the architecture issue's before/after):
suppressed lint and type errors, the most complex functions, the longest
modules and the import cycles between hardboiled's modules.

    .venv/bin/python bench/code_metrics.py [--json]

Cyclomatic complexity is radon's (a dev dependency); cycles are found with
grimp, the import graph library behind import-linter.
"""

from __future__ import annotations

import json
import re
import sys

import grimp
from _common import ROOT
from radon.complexity import cc_visit

PACKAGE = ROOT / "hardboiled"


def _sources() -> list:
    return sorted(PACKAGE.rglob("*.py"))


def _count(pattern: str) -> int:
    regex = re.compile(pattern)
    return sum(len(regex.findall(path.read_text())) for path in _sources())


def _complexities() -> list[tuple[int, str]]:
    found = []
    for path in _sources():
        for block in cc_visit(path.read_text()):
            blocks = [block, *getattr(block, "methods", [])]
            for b in blocks:
                owner = f"{b.classname}." if getattr(b, "classname", None) else ""
                found.append((b.complexity, f"{path.relative_to(ROOT)}:{owner}{b.name}"))
    return sorted(found, reverse=True)


def _cycles() -> int:
    graph = grimp.build_graph("hardboiled")
    cycles = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            chain = graph.find_shortest_chain(importer=imported, imported=module)
            if chain:
                cycles.add(frozenset(chain))
    return len(cycles)


def main(argv: list[str]) -> int:
    lines = sorted(((len(p.read_text().splitlines()), str(p.relative_to(ROOT))) for p in _sources()), reverse=True)
    figures = {
        "noqa": _count(r"# noqa"),
        "type_ignore": _count(r"# type: ignore"),
        "most_complex": _complexities()[:5],
        "longest_modules": lines[:3],
        "modules": len(lines),
        "lines": sum(n for n, _ in lines),
        "import_cycles": _cycles(),
    }
    if "--json" in argv:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"{figures['modules']} modules, {figures['lines']} lines")
    print(f"noqa comments: {figures['noqa']}; type: ignore comments: {figures['type_ignore']}")
    print(f"import cycles between modules: {figures['import_cycles']}")
    print("most complex functions (radon cyclomatic complexity):")
    for complexity, name in figures["most_complex"]:
        print(f"  {complexity:3d}  {name}")
    print("longest modules:")
    for count, name in figures["longest_modules"]:
        print(f"  {count:5d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
