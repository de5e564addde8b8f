#!/usr/bin/env python3
"""Fuzzing (issue 18): 10,000 inputs through parse, compile and compile
--verify, outcomes by exit status.

Inputs are drawn four ways (tests/fuzzing.py): strings of the IR grammar
(hypothesis), byte mutations of real Halide dumps, semantic mutations
(numbers, types, lane counts), and (a quarter of them) structural
mutations: truncations, statement swaps and moves, renames, types changed
everywhere, zero and huge extents (strategy "structural-KIND"). The goal:
no exit 70, no signal, no timeout.
Every input that ends in one is written to bench/results/fuzz/ with what
hardboiled said, to be turned into a regression test.

    .venv/bin/python bench/fuzz.py [--count 10000] [--seed 1] [--tree DIR] [--json FILE]

``--tree DIR`` runs another checkout (``git worktree add /tmp/before REV``)
on the same inputs, for before/after figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import fuzzing  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "fuzz"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the hardboiled checkout to run")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per input")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    start = time.perf_counter()
    items = fuzzing.inputs(args.seed, args.count)
    drawn_s = time.perf_counter() - start
    start = time.perf_counter()
    outcomes = fuzzing.run(items, args.timeout, args.tree.resolve())
    run_s = time.perf_counter() - start
    print(f"tree {args.tree.resolve()}; {len(items)} inputs (seed {args.seed}), drawn in {drawn_s:.0f} s, "
          f"run in {run_s:.0f} s")
    by_target: dict[str, dict[str, int]] = {}
    for (target, outcome), count in sorted(outcomes.counts.items()):
        by_target.setdefault(target, {})[outcome] = count
    for target, counts in by_target.items():
        print(f"  {target:8} " + ", ".join(f"{outcome}: {count}" for outcome, count in counts.items()))
    print(f"  bad (exit 70, signal, timeout): {outcomes.bad()}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    for old in RESULTS.glob("failure-*"):
        old.unlink()
    for i, (item, outcome, said) in enumerate(outcomes.failures):
        (RESULTS / f"failure-{i:04d}-{item.target}-{item.strategy}.stmt").write_bytes(item.data)
        (RESULTS / f"failure-{i:04d}-{item.target}-{item.strategy}.txt").write_text(f"{outcome}\n{said}\n")
    by_strategy: dict[str, int] = {}
    for item, _, _ in outcomes.failures:
        by_strategy[item.strategy] = by_strategy.get(item.strategy, 0) + 1
    if by_strategy:
        print("  bad by strategy: " + ", ".join(f"{s}: {n}" for s, n in sorted(by_strategy.items())))
    if args.json:
        args.json.write_text(json.dumps({"tree": str(args.tree.resolve()), "count": len(items), "seed": args.seed,
                                         "outcomes": by_target, "bad": outcomes.bad(),
                                         "bad_by_strategy": by_strategy}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
