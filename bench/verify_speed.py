#!/usr/bin/env python3
"""Translation-validation speed.

Figures (issue "Reference interpreter and translation validation"): a
16x16x32 tile-matmul statement validates in under 1 s; validating all
fixtures takes under 60 s.

* single: `verify()` of the paper's single-tile bf16 matmul (16x16 output,
  K = 32) against its rewrite: buffer set-up, both interpreter runs and the
  comparison, best of --repeat;
* all: selection + verification of every AMX fixture (selection's egglog
  child included), and the count that verified.

    .venv/bin/python bench/verify_speed.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

from _common import amx_cases, fixture_stmt, write_results

from hardboiled.legalize.passes import tensorize
from hardboiled.select.selector import SelectionOptions
from hardboiled.verify.compare import verify


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    single = fixture_stmt("amx_bf16_matmul_std_single")
    rewritten = tensorize(single, SelectionOptions()).stmt
    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        assert verify(single, rewritten).ok
        best = min(best, time.perf_counter() - start)

    start = time.perf_counter()
    verified = 0
    cases = amx_cases()
    for case in cases:
        stmt = fixture_stmt(case)
        verified += verify(stmt, tensorize(stmt, SelectionOptions()).stmt).ok
    total = time.perf_counter() - start

    result = {"single_16x16x32_seconds": round(best, 4), "all_fixtures_seconds": round(total, 2),
              "fixtures": len(cases), "verified": verified}
    write_results("verify_speed.json", result)
    print(f"16x16x32 tile-matmul statement verifies in {best:.3f} s (target < 1 s)")
    print(f"all {len(cases)} AMX fixtures selected and verified in {total:.1f} s "
          f"({verified} verified; target < 60 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
