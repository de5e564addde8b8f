#!/usr/bin/env python3
"""Verification's time on the listed sweep, this tree against another, in
one run on one machine.

Each variant of tests/fixtures/sweep (or a seeded sample of them) is
compiled with ``--verify`` (selection through a cache both trees warm
first, so that only verification differs in cost) in a child process per
tree, the trees alternating chunk by chunk so that machine noise falls on
both. The figure is the ``verify`` pass's own wall time (``--timing``):
the original program run (as its error-bound program) and the rewritten
one, in each layout of verify/inputs.py's SHAPES, and the comparison.
Prints the totals, the median ratio per variant, and whether both trees
gave every variant the same verdict.

    git worktree add /tmp/before REV
    .venv/bin/python bench/verify_sweep_speed.py --tree /tmp/before [--sample 60 --seed 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWEEP = ROOT / "tests" / "fixtures" / "sweep"

_CHILD = r"""
import json, re, sys
from pathlib import Path
from hardboiled.pipeline.driver import compile_text
from hardboiled.pipeline.options import CompileOptions
from hardboiled.select.selector import SelectionOptions
rows = []
verify = sys.argv[2] == "verify"
for name in sys.argv[3:]:
    wmma = name.startswith("wmma")
    store_in = {"prod": "WMMAAccumulator"} if wmma else {}
    options = CompileOptions.from_flags(selection=SelectionOptions(store_in=store_in, cache_dir=sys.argv[1]),
                                        verify=verify, timing=verify)
    result = compile_text(f"{name}.stmt", (Path(%r) / f"{name}.stmt").read_bytes(), options)
    seconds = [float(m.group(1)) for text in result.instrumentation
               for m in re.finditer(r"^\s+([0-9.]+) \(\s*[0-9.]+%%\)\s+verify$", text, re.M)]
    rows.append((name, sum(seconds), result.exit_code, (result.report.get("verification") or {}).get("ok")))
print(json.dumps(rows))
"""


def _run(tree: Path, cache: str, names: list[str], *, verify: bool = True) -> list[list[object]]:
    """Compile ``names`` in ``tree`` (warming the selection cache only,
    without ``verify``: the whole-file cache's key differs)."""
    env = dict(os.environ, PYTHONPATH=str(tree), HARDBOILED_RULES_DIR=str(tree / "rules"))
    out = subprocess.run([sys.executable, "-c", _CHILD % str(SWEEP), cache, "verify" if verify else "warm", *names],
                         env=env,
                         capture_output=True, text=True, check=True, cwd=tree)
    rows: list[list[object]] = json.loads(out.stdout)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, required=True, help="the other checkout (the baseline)")
    parser.add_argument("--sample", type=int, default=0, help="this many variants drawn with --seed (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=10, help="variants per child process")
    args = parser.parse_args()
    names = sorted(json.loads((SWEEP / "MANIFEST.json").read_text()))
    if args.sample:
        names = sorted(random.Random(args.seed).sample(names, min(args.sample, len(names))))
    trees = {"before": args.tree.resolve(), "after": ROOT}
    caches = {label: tempfile.mkdtemp(prefix=f"hb-verify-speed-{label}-") for label in trees}
    rows: dict[str, dict[str, list[object]]] = {label: {} for label in trees}
    chunks = [names[i:i + args.chunk] for i in range(0, len(names), args.chunk)]
    for index, chunk in enumerate(chunks):
        for label, tree in trees.items():  # warm each tree's selection cache: selection is not measured
            _run(tree, caches[label], chunk, verify=False)
        order = list(trees.items()) if index % 2 == 0 else list(reversed(trees.items()))
        for label, tree in order:
            for row in _run(tree, caches[label], chunk):
                rows[label][str(row[0])] = row
        print(f"{sum(len(c) for c in chunks[:index + 1])}/{len(names)}", file=sys.stderr, flush=True)
    before, after = rows["before"], rows["after"]
    verified = [n for n in names if before[n][3] is not None and after[n][3] is not None]
    ratios = [float(after[n][1]) / float(before[n][1]) for n in verified if float(before[n][1]) > 0]  # type: ignore[arg-type]
    same = all(before[n][2:] == after[n][2:] for n in names)
    summary = {
        "variants": len(names), "verified_in_both": len(verified),
        "verify_seconds_before": round(sum(float(before[n][1]) for n in verified), 2),  # type: ignore[arg-type]
        "verify_seconds_after": round(sum(float(after[n][1]) for n in verified), 2),  # type: ignore[arg-type]
        "median_ratio": round(statistics.median(ratios), 3) if ratios else None,
        "same_verdicts": same,
        "slowest_before": sorted(((round(float(before[n][1]), 2), round(float(after[n][1]), 2), n)  # type: ignore[arg-type]
                                  for n in verified), reverse=True)[:5],
    }
    print(json.dumps(summary, indent=2))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
