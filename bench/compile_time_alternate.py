"""P2 for several checkouts, measured in turn, run after run.

    .venv/bin/python bench/compile_time_alternate.py --runs 15 before=/tmp/before after=.

bench/compile_time.py measures one tree after the other; on a machine
whose load drifts, two trees measured minutes apart differ by more than a
change of 20 ms. Here each run measures every tree once, one after the
other, so drift falls on all of them alike: the AMX matmul compiled
without the cache, the same compile answered by the whole-file cache
(another output name each run, so that direct mode has no record of it),
and, every third run, the batch of 12 AMX fixtures (-j 1, seconds per
input); with ``--parse``, every real dump parsed in one process (as
compile_time.py's parsing figure). Halide's own lowering is measured in
each run too. Medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compile_time as ct  # noqa: E402  (bench/ is not a package)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", help="NAME=CHECKOUT, measured in this order in each run")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--parse", action="store_true", help="also parse every real dump in each run (MB/s)")
    args = parser.parse_args()
    trees = {name: Path(path).resolve() for name, _, path in (t.partition("=") for t in args.trees)}
    log = str(ct.MATMUL_LOG)
    inputs = [str(p) for p in sorted(ct.ROOT.glob("tests/fixtures/halide/amx_*/vectorizing.stmt"))[:ct.BATCH_INPUTS]]
    times: dict[str, dict[str, list[float]]] = {name: {"cold": [], "hit": [], "batch": [], "parse": []}
                                                for name in trees}
    dumps, megabytes = ct.real_dumps()
    halide: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, tree in trees.items():  # fill each tree's cache
            ct.measure(*ct.hardboiled(tree, "compile", log, "--cache-dir", f"{tmp}/{name}", "-q", "-o", f"{tmp}/o"))
        for run in range(args.runs):
            halide.append(ct.measure([sys.executable, ct.__file__, "--halide-lowering"])["seconds"])
            for name, tree in trees.items():
                uncached = ct.hardboiled(tree, "compile", log, "--no-cache", "-q", "-o", f"{tmp}/cold.stmt")
                times[name]["cold"].append(ct.measure(*uncached)["seconds"])
                cached = ct.hardboiled(tree, "compile", log, "--cache-dir", f"{tmp}/{name}", "-q", "-o",
                                       f"{tmp}/hit{run}.stmt")
                times[name]["hit"].append(ct.measure(*cached)["seconds"])
                if run % 3 == 0:
                    batch = ct.hardboiled(tree, "compile", *inputs, "--no-cache", "-q", "-j", "1", "-o", f"{tmp}/b")
                    times[name]["batch"].append(ct.measure(*batch)["seconds"] / len(inputs))
                if args.parse:
                    times[name]["parse"].append(ct.parse_seconds(tree, dumps)[0])
    lowering = statistics.median(halide)
    print(f"{args.runs} runs; Halide's lowering {lowering:.3f} s")
    for name, figures in times.items():
        cold, hit = statistics.median(figures["cold"]), statistics.median(figures["hit"])
        print(f"  {name:<10} compile {cold:.3f} s ({cold / lowering:.2f}x)  whole-file hit {hit:.3f} s "
              f"({hit / lowering:.2f}x)  batch {statistics.median(figures['batch']):.3f} s per input")
        if figures["parse"]:
            parse = statistics.median(figures["parse"])
            print(f"  {'':<10} parsing {len(dumps)} real dumps, {megabytes:.1f} MB: {parse:.2f} s "
                  f"({megabytes / parse:.2f} MB/s; fastest run {megabytes / min(figures['parse']):.2f} MB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
