#!/usr/bin/env python3
"""Batch compile speed: cold and warm cache, -j 2 against -j 1.

Figures (issue "The CLI for build systems and CI"): a batch of all
fixtures; cold time, warm-cache time and -j 2 against -j 1. Warm-cache time
should be at most 10% of cold. Runs the installed console script, as a
build system would, on the vectorizing stage of every fixture that has an
accelerator buffer or none (all of them), with --allow-fallback so that the
WMMA dumps (not lowered yet) do not stop the batch.

    .venv/bin/python bench/batch_speed.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import FIXTURES, write_results

HARDBOILED = Path(sys.executable).parent / "hardboiled"


def run(inputs: list[str], out: Path, *args: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([str(HARDBOILED), "compile", *inputs, "-o", str(out), "-q", *args],
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"compile failed ({proc.returncode}): {proc.stderr[:2000]}")
    return elapsed


def main() -> int:
    inputs = sorted(str(p) for p in FIXTURES.glob("*/vectorizing.stmt"))
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        cold = run(inputs, Path(tmp) / "cold", "--cache-dir", str(cache))
        warm = run(inputs, Path(tmp) / "warm", "--cache-dir", str(cache))
        j1 = run(inputs, Path(tmp) / "j1", "--no-cache", "-j", "1")
        j2 = run(inputs, Path(tmp) / "j2", "--no-cache", "-j", "2")
        same = all((Path(tmp) / "j1" / p.name).read_bytes() == p.read_bytes() for p in (Path(tmp) / "j2").iterdir())
    result = {"inputs": len(inputs), "cold_s": round(cold, 2), "warm_s": round(warm, 2),
              "warm_over_cold": round(warm / cold, 3), "j1_s": round(j1, 2), "j2_s": round(j2, 2),
              "j2_speedup": round(j1 / j2, 2), "j2_output_identical": same}
    write_results("batch_speed.json", result)
    print(f"{len(inputs)} inputs")
    print(f"cold cache {cold:.2f} s, warm cache {warm:.2f} s ({100 * warm / cold:.0f}% of cold; target <= 10%)")
    print(f"-j 1 {j1:.2f} s, -j 2 {j2:.2f} s (speed-up {j1 / j2:.2f}x; outputs identical: {same})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
