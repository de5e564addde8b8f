#!/usr/bin/env python3
"""Parse speed: seconds per MB of Halide dump.

Figures (issue "Foundation"): a 2 MB HL_DEBUG_CODEGEN dump parses in under
1 s. Three numbers are reported, best of --repeat runs each:

* dump:   read a whole real debug log, find the requested stage and parse
          it (what `hardboiled parse LOG` and `compile LOG` do);
* all-IR: parse the body of every stage in that log, i.e. every byte of IR
          it contains (raw parser throughput);
* fixtures: parse every committed tests/fixtures/halide/*/*.stmt file.

The debug log is produced by real Halide (the `halide` dev dependency) for a
fixture case, in a child process, and cached in bench/results/. Usage:

    .venv/bin/python bench/parse_speed.py [--case wmma_conv_layer] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT / "tools"))

from hardboiled.frontend.grammar import halide_parser  # noqa: E402
from hardboiled.frontend.parse import parse_input, parse_text  # noqa: E402
from hardboiled.frontend.stages import split_log  # noqa: E402


def real_debug_log(case: str) -> Path:
    """The full HL_DEBUG_CODEGEN=2 log of a fixture case (cached)."""
    path = RESULTS / f"{case}.debug.log"
    if path.exists():
        return path
    import gen_fixtures  # tools/gen_fixtures.py: runs Halide in a child process

    with tempfile.TemporaryDirectory() as tmp:
        lines, rc, _ = gen_fixtures.run_child(case, tmp, False, 600)
    if rc != 0:
        raise SystemExit(f"halide failed for {case} (exit {rc})")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    return path


def best_of(repeat: int, work) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", default="wmma_conv_layer", help="fixture case whose full log to use")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    start = time.perf_counter()
    halide_parser()
    grammar_load = time.perf_counter() - start

    log_path = real_debug_log(args.case)
    raw = log_path.read_bytes()
    log_mb = len(raw) / 1e6
    stages = [s for s in split_log(raw.decode()) if s.body]
    ir_mb = sum(len(s.body or "") for s in stages) / 1e6

    dump_s = best_of(args.repeat, lambda: parse_input(log_path.read_bytes().decode(), str(log_path)))
    all_ir_s = best_of(args.repeat, lambda: [parse_text(s.body or "") for s in stages])

    fixtures = sorted((ROOT / "tests" / "fixtures" / "halide").glob("*/*.stmt"))
    texts = [p.read_text() for p in fixtures]
    fixtures_mb = sum(len(t) for t in texts) / 1e6
    fixtures_s = best_of(args.repeat, lambda: [parse_input(t) for t in texts])

    result = {
        "python": platform.python_version(),
        "grammar_load_s": round(grammar_load, 4),
        "dump": {"case": args.case, "mb": round(log_mb, 3), "seconds": round(dump_s, 4),
                 "s_per_mb": round(dump_s / log_mb, 4)},
        "all_ir": {"stages": len(stages), "mb": round(ir_mb, 3), "seconds": round(all_ir_s, 4),
                   "s_per_mb": round(all_ir_s / ir_mb, 4)},
        "fixtures": {"files": len(texts), "mb": round(fixtures_mb, 3), "seconds": round(fixtures_s, 4),
                     "s_per_mb": round(fixtures_s / fixtures_mb, 4)},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "parse_speed.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"grammar load (cached):        {grammar_load:7.3f} s")
    print(f"dump     {log_mb:6.2f} MB log, stage 'vectorizing': {dump_s:7.3f} s  ({dump_s / log_mb:.3f} s/MB)")
    print(f"all-IR   {ir_mb:6.2f} MB in {len(stages)} stages:      {all_ir_s:7.3f} s  ({all_ir_s / ir_mb:.3f} s/MB)")
    print(f"fixtures {fixtures_mb:6.2f} MB in {len(texts)} files:        {fixtures_s:7.3f} s  "
          f"({fixtures_s / fixtures_mb:.3f} s/MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
