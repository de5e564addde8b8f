#!/usr/bin/env python3
"""The listed sweep's compile time per variant, this tree against another,
in one run on one machine (the generality issue's budget: within 1.2x).

Each variant of tests/fixtures/sweep present in both trees' manifests is
compiled (parse, selection, legalization, --emit c or cuda; no
verification, no build, no cache) in a child process per tree, the trees
alternating variant by variant so that machine noise falls on both. Prints
the total and the median ratio, over the variants both trees lower and
over all of them.

    git worktree add /tmp/before REV
    .venv/bin/python bench/sweep_compile_time.py --tree /tmp/before
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWEEP = ROOT / "tests" / "fixtures" / "sweep"

_CHILD = r"""
import json, sys, time
from pathlib import Path
from hardboiled.pipeline.driver import compile_text
from hardboiled.pipeline.options import CompileOptions
from hardboiled.select.selector import SelectionOptions
rows = []
for name in sys.argv[1:]:
    wmma = name.startswith("wmma")
    store_in = {"prod": "WMMAAccumulator"} if wmma else {}
    options = CompileOptions.from_flags(selection=SelectionOptions(store_in=store_in, cache_dir=None),
                                        emit=("cuda",) if wmma else ("c",))
    text = (Path(%r) / f"{name}.stmt").read_bytes()
    start = time.perf_counter()
    result = compile_text(f"{name}.stmt", text, options)
    rows.append((name, time.perf_counter() - start, result.exit_code))
print(json.dumps(rows))
"""


def _run(tree: Path, names: list[str]) -> list[tuple[str, float, int]]:
    env = dict(os.environ, PYTHONPATH=str(tree), HARDBOILED_RULES_DIR=str(tree / "rules"))
    out = subprocess.run([sys.executable, "-c", _CHILD % str(SWEEP), *names], env=env, capture_output=True,
                         text=True, check=True, cwd=tree)
    return [tuple(row) for row in json.loads(out.stdout)]  # type: ignore[misc]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, required=True, help="the other checkout (the baseline)")
    parser.add_argument("--chunk", type=int, default=20, help="variants per child process")
    args = parser.parse_args()
    ours = json.loads((SWEEP / "MANIFEST.json").read_text())
    theirs = json.loads((args.tree / "tests" / "fixtures" / "sweep" / "MANIFEST.json").read_text())
    names = sorted(set(ours) & set(theirs))
    times: dict[str, dict[str, tuple[float, int]]] = {"before": {}, "after": {}}
    started = time.perf_counter()
    for i in range(0, len(names), args.chunk):
        chunk = names[i:i + args.chunk]
        for label, tree in (("before", args.tree), ("after", ROOT)):
            for name, seconds, code in _run(tree, chunk):
                times[label][name] = (seconds, code)
    both = [n for n in names if times["before"][n][1] == 0 and times["after"][n][1] == 0]
    for title, subset in (("lowered by both", both), ("all", names)):
        before = sum(times["before"][n][0] for n in subset)
        after = sum(times["after"][n][0] for n in subset)
        ratio = statistics.median(times["after"][n][0] / times["before"][n][0] for n in subset)
        print(f"{title}: {len(subset)} variants, before {before:.1f} s, after {after:.1f} s "
              f"({after / before:.2f}x total, median per variant {ratio:.2f}x)")
    lowered = {label: sum(code == 0 for _, code in t.values()) for label, t in times.items()}
    print(f"lowered and emitted: before {lowered['before']}/{len(names)}, after {lowered['after']}/{len(names)}; "
          f"{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
