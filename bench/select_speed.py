#!/usr/bin/env python3
"""Selection speed and e-graph size per AMX matmul statement.

Figures (issue "Equality-saturation core and Intel AMX matmul selection"):
selection time per matmul statement, child process included, target under
0.5 s; e-graph size (nodes and classes) per statement.

For every AMX fixture that selection lowers, this runs `tensorize()` (tile
extraction, the egglog child process, decoding, reinsertion and checks) on
its vectorizing stage, best of --repeat runs, and divides by the number of
tile_matmul statements. Results go to bench/results/select_speed.json.

    .venv/bin/python bench/select_speed.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

from _common import amx_cases, fixture_stmt, write_results

from hardboiled import ir
from hardboiled.legalize.passes import tensorize
from hardboiled.select.selector import SelectionMiss, SelectionOptions


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for case in amx_cases():
        stmt = fixture_stmt(case)
        best, result = float("inf"), None
        try:
            for _ in range(args.repeat):
                start = time.perf_counter()
                result = tensorize(stmt, SelectionOptions())
                best = min(best, time.perf_counter() - start)
        except SelectionMiss:
            rows.append({"case": case, "lowered": False})
            continue
        assert result is not None and result.egraph is not None
        matmuls = sum(1 for n in ir.walk(result.stmt) if isinstance(n, ir.Call) and n.name == "tile_matmul")
        statements = len(result.reports)
        rows.append({
            "case": case, "lowered": True, "statements": statements, "matmuls": matmuls,
            "seconds": round(best, 4), "seconds_per_matmul": round(best / matmuls, 4),
            "egraph_nodes": result.egraph.nodes, "egraph_classes": result.egraph.classes,
            "nodes_per_statement": round(result.egraph.nodes / statements, 1),
            "classes_per_statement": round(result.egraph.classes / statements, 1),
        })
    write_results("select_speed.json", rows)
    print(f"{'case':36s} {'stmts':>5s} {'mm':>3s} {'s/run':>7s} {'s/matmul':>9s} "
          f"{'nodes':>6s} {'classes':>7s} {'n/stmt':>7s}")
    for r in rows:
        if not r["lowered"]:
            print(f"{r['case']:36s}  (not lowered: preloaded operands)")
            continue
        print(f"{r['case']:36s} {r['statements']:5d} {r['matmuls']:3d} {r['seconds']:7.3f} "
              f"{r['seconds_per_matmul']:9.3f} {r['egraph_nodes']:6d} {r['egraph_classes']:7d} "
              f"{r['nodes_per_statement']:7.1f}")
    lowered = [r for r in rows if r["lowered"]]
    worst = max(r["seconds_per_matmul"] for r in lowered)
    print(f"worst selection time per matmul statement: {worst:.3f} s (target < 0.5 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
