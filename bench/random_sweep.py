#!/usr/bin/env python3
"""Selection generality on a seeded sweep: how many drawn schedules lower,
verify, emit and build.

    .venv/bin/python bench/random_sweep.py --seed 11 --count 1200
    .venv/bin/python bench/random_sweep.py --seed 11 --count 1200 --report docs/coverage-random.md

tools/gen_random_sweep.py draws every dimension of each variant on its own
from the seed and dumps it with Halide 21 into build/random-SEED/ (variants
Halide itself refuses are not executable and not counted). Each dump is then
compiled as bench/sweep.py does: --verify in the reference interpreter,
--emit c and a run of the C (natively with AMX, else through the emulation
header) or --emit cuda and a PTX build with nvcc. Prints every variant that
is not lowered, the rate by accelerator and by drawn value of each
dimension, and the misses grouped by their first diagnostic.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from _common import ROOT, write_results
from sweep import OUTCOMES, compile_dump, lowered_with_edges_in_memory


def _compile(args: tuple[Path, dict[str, Any], bool]) -> dict[str, Any]:
    path, spec, build = args
    return dict(compile_dump(path, spec, build), spec=spec)


def _rate(rows: list[dict[str, Any]]) -> str:
    hit = sum(r["outcome"] == "lowered" for r in rows)
    return f"{hit}/{len(rows)} ({100 * hit / len(rows):.1f}%)" if rows else "-"


def miss_class(row: dict[str, Any]) -> str:
    """A variant's first diagnostic with its numbers and names blurred, so that
    misses of one cause count together."""
    text = " ".join((row["message"] + " | " + " ".join(row["notes"][:1])).split())
    text = re.sub(r"'[^']*'", "'…'", text)
    return re.sub(r"\d+", "N", text)[:180]


def by_dimension(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for accelerator in ("amx", "wmma"):
        subset = [r for r in rows if r["accelerator"] == accelerator]
        groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for row in subset:
            for key, value in row["spec"].items():
                groups[(key, json.dumps(value))].append(row)
        lines.append(f"\n{accelerator.upper()}: {_rate(subset)}")
        for (key, value), group in sorted(groups.items()):
            if key != "acc":
                lines.append(f"  {key:11s} {value:12s} {_rate(group)}")
    return lines


def report(rows: list[dict[str, Any]], seed: int, refused: int, seconds: float) -> str:
    counts = Counter(r["outcome"] for r in rows)
    amx = [r for r in rows if r["accelerator"] == "amx"]
    wmma = [r for r in rows if r["accelerator"] == "wmma"]
    classes = Counter(miss_class(r) for r in rows if r["outcome"] != "lowered")
    out = [f"seed {seed}: {len(rows)} executable variants ({refused} more refused by Halide itself), "
           f"{seconds:.0f} s",
           f"lowered, verified, emitted and built: {_rate(rows)} (AMX {_rate(amx)}, WMMA {_rate(wmma)})",
           ", ".join(f"{o} {counts[o]}" for o in OUTCOMES[1:]),
           f"of the lowered, {lowered_with_edges_in_memory(rows)}"
           " keep partial tiles at the output's edge in ordinary memory (GuardWithIf tails; the whole tiles are"
           " tensorized)",
           "", "not lowered, by first diagnostic:"]
    out += [f"  {n:4d}  {text}" for text, n in classes.most_common()]
    out += by_dimension(rows)
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--no-build", action="store_true", help="verification only")
    parser.add_argument("--report", type=Path, help="also write the report to this file")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    out = ROOT / "build" / f"random-{args.seed}"
    subprocess.run([sys.executable, str(ROOT / "tools" / "gen_random_sweep.py"), "--seed", str(args.seed),
                    "--count", str(args.count), "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    variants = json.loads((out / "MANIFEST.json").read_text())["variants"]
    work = [(out / f"{name}.stmt", entry["spec"], not args.no_build)
            for name, entry in variants.items() if "halide_error" not in entry]
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(_compile, work, chunksize=4))
    seconds = time.perf_counter() - started
    for row in rows:
        if row["outcome"] != "lowered":
            print(f"{row['outcome']:7s} {row['name']:16s} {' '.join(row['message'].split())[:140]}")
    text = report(rows, args.seed, len(variants) - len(work), seconds)
    print(text)
    write_results(f"random_sweep-{args.seed}.json", rows)
    if args.report:
        args.report.write_text(text)
    return 1 if any(r["outcome"] in ("wrong", "error") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
