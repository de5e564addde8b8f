#!/usr/bin/env python3
"""The mutation harness: how many wrong programs verification catches.

    .venv/bin/python bench/mutation.py [--every N] [--json FILE]

Every fixture of tests/fixtures/halide with an accelerator and every
application of tests/fixtures/apps is tensorized; each mutation operator of
hardboiled/verify/mutants.py is applied at every place it fits (every Nth
mutant with --every N) and the mutant is verified against the original
program (`verify`: every buffer layout, poisoned memory, the error model).
A mutant verification passes has survived: it is printed with the operator
and the place, and listed in EQUIVALENT with why it computes the same (the
harness fails on a survivor that is not listed). A mutant of a program whose
verification proves nothing about some elements (DCT denoise, the
recursive filter: exit 7 without the mutation too) is counted as refused
but not killed. Prints the figures by operator.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EQUIVALENT: dict[tuple[str, str, str], str] = {}
"""(program, operator, place) of a mutant that survives because it computes
the same: why."""


def programs() -> list[tuple[str, object, object, dict]]:
    """(name, original, tensorized, verification inputs) of every fixture
    with an accelerator and every application at test size."""
    from apps.run import applications
    from hardboiled import ir
    from hardboiled.frontend.parse import parse_input
    from hardboiled.legalize.passes import tensorize
    from hardboiled.select.options import SelectionOptions

    found = []
    manifest = json.loads((ROOT / "tests" / "fixtures" / "halide" / "MANIFEST.json").read_text())
    for case, entry in sorted(manifest.items()):
        if entry["accelerator"] == "none":
            continue
        stmt = parse_input((ROOT / "tests" / "fixtures" / "halide" / case / "vectorizing.stmt").read_text()).ir
        assert isinstance(stmt, ir.Stmt)
        store_in = {} if entry["memory_type"] in ("AMXTile", "WMMAAccumulator") else {
            entry["accumulator"]: "AMXTile" if entry["accelerator"] == "amx" else "WMMAAccumulator"}
        found.append((case, stmt, tensorize(stmt, SelectionOptions(store_in=store_in)).stmt, {}))
    for name, app in sorted(applications().items()):
        stmt = parse_input((ROOT / "tests" / "fixtures" / "apps" / f"{name}.stmt").read_text()).ir
        assert isinstance(stmt, ir.Stmt)
        inputs = app.verification_inputs(**app.sizes["test"]) if app.verification_inputs else {}
        found.append((f"app:{name}", stmt, tensorize(
            stmt, SelectionOptions(store_in={a: app.memory for a in app.accumulators})).stmt, inputs))
    return found


def run(every: int = 1, offset: int = 0, operators: tuple[str, ...] = ()) -> dict:
    from hardboiled.verify.compare import verify
    from hardboiled.verify.interp import InterpreterError
    from hardboiled.verify.mutants import mutants

    started = time.perf_counter()
    total: Counter[str] = Counter()
    killed: Counter[str] = Counter()
    unproven: Counter[str] = Counter()
    survivors: list[dict] = []
    index = 0
    for name, original, tensorized, inputs in programs():
        for mutant in mutants(tensorized):  # type: ignore[arg-type]
            if operators and mutant.operator not in operators:
                continue
            index += 1
            if (index - 1) % every != offset:
                continue
            total[mutant.operator] += 1
            try:
                result = verify(original, mutant.program, inputs=inputs)  # type: ignore[arg-type]
            except InterpreterError:
                killed[mutant.operator] += 1  # the mutant cannot even run
                continue
            if not result.ok:
                killed[mutant.operator] += 1
            elif result.unproven:
                unproven[mutant.operator] += 1  # refused (exit 7), not refuted
            else:
                survivors.append(dict(program=name, operator=mutant.operator, where=mutant.where,
                                      equivalent=EQUIVALENT.get((name, mutant.operator, mutant.where))))
    return dict(total=dict(total), killed=dict(killed), unproven=dict(unproven), survivors=survivors,
                seconds=round(time.perf_counter() - started, 1))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=1, help="run every Nth mutant")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--operator", action="append", default=[], help="only this operator (repeatable)")
    args = parser.parse_args(argv)
    figures = run(args.every, operators=tuple(args.operator))
    for operator, count in sorted(figures["total"].items()):
        print(f"{operator:20s} {figures['killed'].get(operator, 0):4d} killed, "
              f"{figures['unproven'].get(operator, 0):3d} unproven, of {count:4d}")
    mutants_run = sum(figures["total"].values())
    unexplained = [s for s in figures["survivors"] if s["equivalent"] is None]
    equivalent = len(figures["survivors"]) - len(unexplained)
    killed, unproven = sum(figures["killed"].values()), sum(figures["unproven"].values())
    wrong = mutants_run - equivalent
    print(f"{mutants_run} mutants, {equivalent} equivalent; of the {wrong} others {killed + unproven} refused "
          f"({100 * (killed + unproven) / max(1, wrong):.1f}%): {killed} killed by a mismatch "
          f"({100 * killed / max(1, wrong):.1f}%), {unproven} left unproven (exit 7, as their programs "
          f"are without the mutation); {figures['seconds']} s")
    for survivor in figures["survivors"]:
        why = survivor["equivalent"] or "NOT EXPLAINED"
        print(f"  survived: {survivor['program']}: {survivor['operator']} at {survivor['where']}: {why}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
