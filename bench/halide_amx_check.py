"""Is Halide's own build of bench/amx_speed.py's MatMuls right, on any CPU?

    .venv/bin/python bench/halide_amx_check.py [--size 128] [--target x86-64-linux]

On an AMX host, bench/device.py found Halide 21's own library wrong for
every bf16 schedule with several accumulator tiles (reorder, reorder4,
preload_b), with B in either layout, while hardboiled's C of the same
pipelines was right. This builds Halide's library of each pipeline for a
target without AMX (a plain x86-64 CPU runs it), runs it once on the
operands bench/amx_device.py times with, and compares it with numpy:
where it is wrong here too, the fault is in Halide's lowering of the
schedule, not in its AMX code nor in our harness (the single-tile
schedule, built and run the same way, is right).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import amx_device  # noqa: E402
import amx_speed  # noqa: E402


def check(pipeline: amx_speed.Pipeline, target: str, workdir: Path) -> str:
    library = amx_speed.halide_library(pipeline, target, workdir)
    if library is None:
        return "Halide did not build it"
    entry = {"types": pipeline.types, "layout": pipeline.layout, "size": pipeline.size}
    a, b, reference = amx_device._operands(entry, np.random.default_rng(pipeline.size))
    b_layout = amx_device.b_in_layout(pipeline.layout, pipeline.types, b)
    out = np.zeros(reference.shape, np.float32 if pipeline.types == "bf16" else np.int32)
    if amx_device._halide_runner(library, entry, a, b_layout, out)(1) < 0:
        return "Halide's library returned an error"
    if amx_device._correct(out, reference):
        return "right"
    wrong = np.abs(out - reference) > 1e-2 * float(np.abs(reference).max())
    rows = np.flatnonzero(wrong.any(axis=1))
    return f"WRONG: {int(wrong.sum())} of {wrong.size} elements, in {len(rows)} rows (first {rows[:4].tolist()})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--target", default="x86-64-linux", help="Halide's target (default: no AMX, no AVX-512)")
    args = parser.parse_args()
    pipelines = [p for p in amx_speed.pipelines([args.size]) if p.layout == "vnni" or p.types == "bf16"]
    with tempfile.TemporaryDirectory(prefix="hb_halide_check_") as tmp:
        for pipeline in pipelines:
            print(f"{pipeline.key} on {args.target}: {check(pipeline, args.target, Path(tmp))}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
