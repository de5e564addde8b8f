#!/usr/bin/env python3
"""Tensor Core selection, CUDA generation and nvcc compilation per kernel.

Figure (issue "NVIDIA Tensor Core (WMMA) selection and CUDA code
generation"): selection plus CUDA generation plus nvcc compile, per kernel.
For every WMMA fixture that tensorizes (its accumulator marked with
--store-in NAME=WMMAAccumulator, as stock Halide's dumps need), time:

* selection: tile extraction, the egglog child process, reinsertion,
  legalization and the WMMA post-processing (no result cache);
* CUDA generation from the rewritten IR;
* nvcc -arch=sm_80 -ptx, and the PTX is checked for wmma.mma.sync.

The polyphase upsampling (upsample2) interleaves its phases into the
output, which no fragment store covers: it is listed with the time the
explained miss took.

    .venv/bin/python bench/wmma_speed.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _common import accelerator_cases, fixture_stmt, write_results

from hardboiled.codegen.cuda import GENERATED_CUDA_FLAGS, generate_cuda
from hardboiled.codegen.toolchain import compile_cuda
from hardboiled.legalize.passes import tensorize
from hardboiled.select.selector import SelectionMiss, SelectionOptions


def measure(case: str, accumulator: str, tmp: Path) -> dict[str, object]:
    stmt = fixture_stmt(case)
    start = time.perf_counter()
    try:
        rewritten = tensorize(stmt, SelectionOptions(store_in={accumulator: "WMMAAccumulator"})).stmt
    except SelectionMiss:
        return {"case": case, "miss": True, "select_s": time.perf_counter() - start}
    selected = time.perf_counter()
    source = generate_cuda(rewritten)
    generated = time.perf_counter()
    ptx = compile_cuda(source, tmp / "k.ptx", kind="ptx", extra=GENERATED_CUDA_FLAGS).read_text()
    compiled = time.perf_counter()
    assert "wmma.mma.sync.aligned." in ptx, f"{case}: no Tensor Core MMA in the PTX"
    return {"case": case, "miss": False, "select_s": selected - start, "generate_s": generated - selected,
            "nvcc_s": compiled - generated, "total_s": compiled - start}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per kernel; the median is reported")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, meta in accelerator_cases("wmma").items():
            runs = [measure(case, str(meta["accumulator"]), Path(tmp)) for _ in range(args.repeat)]
            row: dict[str, object] = {"case": case, "miss": runs[0]["miss"]}
            for key in ("select_s", "generate_s", "nvcc_s", "total_s"):
                if key in runs[0]:
                    row[key] = round(statistics.median(float(r[key]) for r in runs), 3)  # type: ignore[arg-type]
            rows.append(row)
    write_results("wmma_speed.json", {"repeat": args.repeat, "kernels": rows})
    print(f"{'case':28s} {'select s':>8s} {'cuda s':>7s} {'nvcc s':>7s} {'total s':>8s}")
    for r in rows:
        if r["miss"]:
            print(f"{r['case']:28s} {r['select_s']:8.3f}  (explained miss, no CUDA)")
            continue
        print(f"{r['case']:28s} {r['select_s']:8.3f} {r['generate_s']:7.3f} {r['nvcc_s']:7.3f} {r['total_s']:8.3f}")
    lowered = [r for r in rows if not r["miss"]]
    worst = max(r['total_s'] for r in lowered)
    print(f"{len(lowered)} kernels: selection + CUDA generation + nvcc, worst {worst:.2f} s, "
          f"median {statistics.median(r['total_s'] for r in lowered):.2f} s per kernel")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
