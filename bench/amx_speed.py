"""AMX code speed: hardboiled's generated C against Halide's own AMX build,
numpy (OpenBLAS, f32) and torch (oneDNN), on one core.

    .venv/bin/python bench/amx_speed.py [--sizes 256,512,1024] [--rounds 5] [--json FILE]

The pipelines are C(y, x) = sum_r A(r, x) * B(y, r) with the Intel
Optimization Reference Manual's MatMul schedules (tools/gen_fixtures.py's
amx_matmul): ref (one accumulator tile), reorder (two, K loop outside),
preload_a / preload_b (an operand kept in AMXTile), and reorder4 (four
accumulator tiles), bf16 with B in standard and VNNI layout, plus int8 with
a VNNI B. Halide 21 lowers each one in a child process (as the fixtures
are made) and hardboiled compiles the vectorizing stage.

Where the CPU has AMX (amx_tile in /proc/cpuinfo), it measures:

1. the peak: a tdpbf16ps loop over four independent accumulators;
2. per pipeline and size, in one run, variants alternating round by round
   (the best round is kept): hardboiled's C built native, Halide's AOT
   static library for avx512_sapphirerapids (results checked against
   numpy: Halide 21 is wrong for bf16 schedules with several accumulator
   tiles, bench/halide_amx_check.py), numpy f32 and
   torch bf16 (skipped, and said so, when torch is not installed). Each
   figure is GFLOP/s (GOP/s for int8) and a share of the peak.

Everywhere, AMX or not, it prints the static figures: tile loads and dot
products per call (executed, under hardboiled's emulation), loads per
tile_matmul, operand-copy elements per call and how many of them run
inside loops that multiply tiles, and the system calls hb_amx_enable makes
in 1000 calls.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, for numpy too
os.environ.setdefault("OMP_NUM_THREADS", "1")

from _common import ROOT  # noqa: E402
from amx_device import HALIDE_HARNESS, PEAK_LOOP, b_in_layout, halide_dims, timing_entry  # noqa: E402

sys.path.insert(0, str(ROOT / "tools"))

import numpy as np  # noqa: E402

from hardboiled import ir  # noqa: E402
from hardboiled.codegen.abi import kernel_signature  # noqa: E402
from hardboiled.codegen.c import generate_c, split_amx_runtime  # noqa: E402
from hardboiled.codegen.toolchain import compile_c, cpu_has_amx, find_compiler, runtime_dir  # noqa: E402
from hardboiled.frontend.parse import parse_input  # noqa: E402
from hardboiled.legalize.passes import tensorize  # noqa: E402
from hardboiled.measure.tile_counts import count_tile_operations, operand_copy_work  # noqa: E402
from hardboiled.select.selector import SelectionOptions  # noqa: E402
from hardboiled.targets.amx import AMX_TILE  # noqa: E402
from hardboiled.verify.run import calls_on_verification_inputs  # noqa: E402

AMX_TARGET = "x86-64-linux-avx512_sapphirerapids"
SCHEDULES = {
    "ref": dict(acc=(1, 1)),
    "reorder": dict(acc=(1, 2), k_outer=True),
    "preload_a": dict(acc=(1, 2), k_outer=True, preload="A"),
    "preload_b": dict(acc=(1, 2), k_outer=True, preload="B"),
    "reorder4": dict(acc=(1, 4), k_outer=True),
}


@dataclass(frozen=True)
class Pipeline:
    schedule: str
    types: str  # "bf16" or "int8"
    layout: str  # "std" or "vnni"
    size: int

    @property
    def key(self) -> str:
        return f"{self.types}_{self.layout}_{self.schedule}@{self.size}"

    def build(self):
        import gen_fixtures as gf

        a_t = b_t = "bf16" if self.types == "bf16" else "i8"
        n = self.size
        return gf.amx_matmul(a_t, b_t, vnni=self.layout == "vnni", M=n, N=n, K=n, tiled=True, const=True,
                             **SCHEDULES[self.schedule])


def pipelines(sizes: list[int]) -> list[Pipeline]:
    found = [Pipeline(s, "bf16", layout, n) for n in sizes for layout in ("std", "vnni") for s in SCHEDULES]
    found += [Pipeline("ref", "int8", "vnni", n) for n in sizes]
    return found


def _pipeline_of(key: str) -> Pipeline:
    name, size = key.split("@")
    types, layout, schedule = name.split("_", 2)
    return Pipeline(schedule, types, layout, int(size))


# ------------------------------------------------------------------ Halide

def child(key: str, out_path: str, mode: str) -> None:
    """In a child process: lower (for the dump on stderr) or build Halide's
    own static library of the pipeline."""
    import halide as hl

    out, args = _pipeline_of(key).build()
    if mode == "lower":
        out.compile_to_lowered_stmt(out_path, args, hl.StmtOutputFormat.Text, hl.Target(AMX_TARGET))
    else:
        out.compile_to_static_library(out_path, args, "halide_matmul", hl.Target(mode))


def vectorizing_stage(pipeline: Pipeline) -> str:
    import gen_fixtures as gf

    with tempfile.TemporaryDirectory(prefix="hb_amx_speed_") as tmp:
        lines, rc, _ = gf.run_child(f"{pipeline.key}", tmp, False, 600, script=__file__)
    stages = gf.split_stages(lines)
    if "vectorizing" not in stages:
        raise SystemExit(f"{pipeline.key}: Halide failed (exit {rc}): {gf.error_text(lines)}")
    return stages["vectorizing"].decode()


def halide_library(pipeline: Pipeline, target: str, workdir: Path) -> Path | None:
    """Halide's own build, linked with a timing harness into a shared library."""
    workdir = Path(tempfile.mkdtemp(prefix="halide_", dir=workdir))  # dlopen: one path per library
    prefix = workdir / "halide_matmul"
    proc = subprocess.run([sys.executable, __file__, "--child", pipeline.key, str(prefix), target],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        print(f"  Halide's build of {pipeline.key} failed: {proc.stderr.strip()[-300:]}")
        return None
    import halide

    include = Path(halide.__file__).parent / "include"
    harness = workdir / "harness.c"
    harness.write_text(HALIDE_HARNESS)
    library = workdir / "halide_matmul.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", f"-I{include}", f"-I{workdir}", str(harness),
                    f"{prefix}.a", "-o", str(library), "-lpthread", "-ldl", "-lm"], check=True)
    return library


# ------------------------------------------------------------------ hardboiled

@dataclass
class Compiled:
    original: ir.Stmt
    rewritten: ir.Stmt
    source: str
    order: list[tuple[str, int]] = field(default_factory=list)


def compile_with_hardboiled(stage: str) -> Compiled:
    original = parse_input(stage).ir
    assert isinstance(original, ir.Stmt)
    rewritten = tensorize(original, SelectionOptions()).stmt
    order = [(a.buffer, a.dimensions) for a in kernel_signature(rewritten)]
    return Compiled(original, rewritten, generate_c(rewritten), order)


# ------------------------------------------------------------------ data

def operands(pipeline: Pipeline, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A (M x K), B (K x N), in the element type; the output (M x N)."""
    n = pipeline.size
    if pipeline.types == "bf16":
        import ml_dtypes

        a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
        b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
        return {"A": a, "B": b, "out": np.zeros((n, n), np.float32)}
    return {"A": rng.integers(-8, 8, (n, n), dtype=np.int8), "B": rng.integers(-8, 8, (n, n), dtype=np.int8),
            "out": np.zeros((n, n), np.int32)}


def b_in_layout_of(pipeline: Pipeline, b: np.ndarray) -> np.ndarray:
    return b_in_layout(pipeline.layout, pipeline.types, b)


# ------------------------------------------------------------------ measuring

def peak_tflops(workdir: Path) -> float:
    source = workdir / "peak.c"
    source.write_text(_PEAK)
    binary = workdir / "peak"
    subprocess.run(["gcc", "-O2", "-mamx-tile", "-mamx-bf16", "-mamx-int8", f"-I{runtime_dir()}", str(source),
                    "-o", str(binary)], check=True)
    return float(subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout)


_PEAK = '#include "hb_amx.h"\n' + PEAK_LOOP


def syscalls_per_1000_calls(workdir: Path) -> int:
    """hb_amx_enable called 1000 times, with syscall() interposed to count."""
    source = workdir / "enable.c"
    source.write_text('#include <stdio.h>\n#include "hb_amx.h"\nstatic int calls;\n'
                      "long syscall(long n, ...) { (void)n; calls++; return 0; }\n"
                      "int main(void) { for (int i = 0; i < 1000; i++) hb_amx_enable();\n"
                      '  printf("%d\\n", calls); return 0; }\n')
    subprocess.run(["gcc", "-O2", "-mamx-tile", "-mamx-bf16", "-mamx-int8", f"-I{runtime_dir()}", str(source),
                    "-o", str(workdir / "enable")], check=True)
    return int(subprocess.run([str(workdir / "enable")], capture_output=True, text=True, check=True).stdout)


_NULL_AMX = r"""
#include "hb_amx.h"
/* Tile instructions compiled out: what is left is everything else the
   kernel does (repacks, loops, address arithmetic, checks). A tile load
   hands its address to a function the compiler cannot see into, so the
   stores that fill the buffer it would read are kept. */
__attribute__((noinline)) void hb_null_sink(const void *p, long s) {
    __asm__ volatile("" :: "r"(p), "r"(s) : "memory");
}
#undef _tile_loadconfig
#undef _tile_release
#undef _tile_zero
#undef _tile_loadd
#undef _tile_stored
#define _tile_loadconfig(c) ((void)(c))
#define _tile_release() ((void)0)
#define _tile_zero(t) ((void)0)
#define _tile_loadd(t, b, s) hb_null_sink((const void *)(b), (long)(s))
#define _tile_stored(t, b, s) hb_null_sink((const void *)(b), (long)(s))
"""


def overhead_microseconds(pipeline: Pipeline, compiled: Compiled, workdir: Path, rounds: int) -> float:
    """Time per call of the kernel with its tile instructions compiled out
    (best of ``rounds``): the work around the tile instructions, which any
    CPU can measure."""
    import re

    dot_products = "|".join(d.c_name for d in AMX_TILE.dot_products)
    runtime, generated = split_amx_runtime(compiled.source)
    source = runtime + re.sub(rf"\b({dot_products})\(", "(void)(", generated)
    bench = _timed_kernel(_NULL_AMX + source, compiled.order, workdir, "emulate")
    pointers, shapes, _ = _kernel_arguments(pipeline, compiled, operands(pipeline, np.random.default_rng(0)))
    reps = max(1, int(2e8 / pipeline.size ** 2))
    return min(bench(reps, pointers, shapes) for _ in range(rounds)) / reps * 1e6


def _timed_kernel(source: str, order: list[tuple[str, int]], workdir: Path, amx: str):
    """``hb_bench`` of ``source`` built with the timing entry: seconds for
    ``reps`` calls of the kernel."""
    # A fresh directory per build: dlopen hands back a library already
    # loaded from the same path.
    library = Path(tempfile.mkdtemp(prefix="kernel_", dir=workdir)) / "kernel.so"
    compile_c(source + timing_entry(order), library, shared=True, amx=amx, compiler=find_compiler(None))
    bench = ctypes.CDLL(str(library)).hb_bench
    bench.restype = ctypes.c_double
    return bench


def _kernel_arguments(pipeline: Pipeline, compiled: Compiled, data: dict[str, np.ndarray]):
    """ctypes pointers and (extent, stride) tables for hb_bench, and the
    arrays behind them (A, B in the pipeline's layout, the output), for the
    ``operands`` in ``data``."""
    arrays = {"A": data["A"], "B": b_in_layout_of(pipeline, data["B"])}
    output = data["out"]
    assert len([name for name, _ in compiled.order if name not in arrays]) == 1
    pointers = (ctypes.c_void_p * len(compiled.order))(
        *[arrays.get(name, output).ctypes.data for name, _ in compiled.order])
    shapes = (ctypes.c_int * 8 * len(compiled.order))()
    for i, (name, _) in enumerate(compiled.order):
        for j, v in enumerate(halide_dims(arrays.get(name, output))):
            shapes[i][j] = v
    return pointers, shapes, {**arrays, "out": output}


def static_figures(pipeline: Pipeline, compiled: Compiled, workdir: Path, rounds: int) -> dict:
    counts = count_tile_operations(compiled.source, calls_on_verification_inputs(compiled.original, compiled.rewritten))
    work = operand_copy_work(compiled.rewritten)
    return {"tile_loads": counts.tile_loads, "dot_products": counts.dot_products,
            "loads_per_matmul": round(counts.loads_per_matmul, 3),
            "copy_elements": work.total, "copy_elements_in_matmul_loops": work.in_matmul_loops,
            "overhead_us": round(overhead_microseconds(pipeline, compiled, workdir, rounds), 2)}


def measure(pipeline: Pipeline, compiled: Compiled, workdir: Path, rounds: int, peak: float,
            halide_target: str, amx: str) -> dict:
    data = operands(pipeline, np.random.default_rng(0))
    a, b, out = data["A"], data["B"], data["out"]
    reference = a.astype(np.float32) @ b.astype(np.float32)
    flops = 2.0 * pipeline.size ** 3
    variants = {}

    bench = _timed_kernel(compiled.source, compiled.order, workdir, amx)
    pointers, shapes, arrays = _kernel_arguments(pipeline, compiled, data)
    b_pipeline, hb_out = arrays["B"], arrays["out"]
    variants["hardboiled"] = lambda reps: bench(reps, pointers, shapes)

    halide = halide_library(pipeline, halide_target, workdir)
    halide_out = np.zeros_like(out)
    if halide is not None:
        hlib = ctypes.CDLL(str(halide))
        hlib.run_halide.restype = ctypes.c_double
        code, bits = (4, 16) if pipeline.types == "bf16" else (0, 8)
        out_code = 2 if pipeline.types == "bf16" else 0

        def dims(x):
            values = halide_dims(x)
            return (ctypes.c_int * (1 + len(values)))(len(values) // 2, *values)

        da, db, dc = dims(a), dims(b_pipeline), dims(halide_out)
        variants["halide"] = lambda reps: hlib.run_halide(reps, ctypes.c_void_p(a.ctypes.data),
                                                          ctypes.c_void_p(b_pipeline.ctypes.data),
                                                          ctypes.c_void_p(halide_out.ctypes.data),
                                                          da, db, dc, code, bits, out_code)
    variants["numpy_f32"] = _python_matmul(a.astype(np.float32), b.astype(np.float32))
    try:
        import torch

        torch.set_num_threads(1)
        ta = torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16 if pipeline.types == "bf16" else torch.float32)
        variants["torch"] = _python_matmul(ta, torch.from_numpy(b.astype(np.float32)).to(ta.dtype))
    except ImportError:
        pass
    reps = max(1, int(2e9 / flops))  # about a second of work per round at 1 TFLOP/s, at least once
    best = {name: float("inf") for name in variants}
    for _ in range(rounds):
        for name, run in variants.items():
            seconds = run(reps)
            best[name] = min(best[name], seconds / reps if seconds >= 0 else float("nan"))
    result = {}
    for name, seconds in best.items():
        gflops = flops / seconds / 1e9
        result[name] = {"gflops": round(gflops, 1), "peak_pct": round(100 * gflops / 1e3 / peak, 1) if peak else None}
    tolerance = 1e-2 * float(np.abs(reference).max())
    result["hardboiled"]["correct"] = bool(np.abs(hb_out.reshape(reference.shape) - reference).max() <= tolerance)
    if "halide" in result:
        result["halide"]["correct"] = bool(np.abs(halide_out.reshape(reference.shape) - reference).max()
                                           <= tolerance)
    return result


def _python_matmul(a, b):
    """A timing function for ``a @ b`` (numpy or torch): seconds for ``reps`` products."""

    def run(reps: int) -> float:
        t0 = time.perf_counter()
        for _ in range(reps):
            a @ b
        return time.perf_counter() - t0

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="256,512,1024")
    parser.add_argument("--static-sizes", default="256", help="sizes whose static figures are printed")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--halide-target", default=AMX_TARGET)
    parser.add_argument("--time-emulated", action="store_true",
                        help="without AMX, time the emulated build anyway (checks the harness; not a speed)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    static_sizes = [int(s) for s in args.static_sizes.split(",")]
    has_amx = cpu_has_amx()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    print(f"machine: {cpu}, {os.cpu_count()} cores; AMX: {'yes' if has_amx else 'no (amx_tile not in /proc/cpuinfo)'}")
    report: dict = {"machine": cpu, "amx": has_amx, "pipelines": {}}
    with tempfile.TemporaryDirectory(prefix="hb_amx_speed_") as tmp:
        workdir = Path(tmp)
        report["syscalls_per_1000_calls"] = syscalls_per_1000_calls(workdir)
        print(f"hb_amx_enable: {report['syscalls_per_1000_calls']} system call(s) in 1000 calls")
        peak = peak_tflops(workdir) if has_amx else 0.0
        if has_amx:
            print(f"peak (tdpbf16ps loop): {peak:.2f} TFLOP/s")
        else:
            print("no AMX here: no speed is measured; static figures only"
                  + (" (emulated timings below check the harness, they are no speed)" if args.time_emulated else ""))
        report["peak_tflops"] = peak
        print(f"{'pipeline':28} {'loads':>8} {'dp':>8} {'ld/mm':>6} {'copy':>9} {'in mm loops':>12} "
              f"{'other us':>9}  speed")
        for pipeline in pipelines(sorted(set(sizes) | set(static_sizes))):
            entry: dict = {}
            compiled = compile_with_hardboiled(vectorizing_stage(pipeline))
            if pipeline.size in static_sizes:
                entry["static"] = static_figures(pipeline, compiled, workdir, args.rounds)
            if pipeline.size in sizes and (has_amx or args.time_emulated):
                entry["speed"] = measure(pipeline, compiled, workdir, args.rounds, peak, args.halide_target,
                                         "native" if has_amx else "emulate")
            report["pipelines"][pipeline.key] = entry
            s = entry.get("static")
            figures = (f"{s['tile_loads']:>8} {s['dot_products']:>8} {s['loads_per_matmul']:>6} "
                       f"{s['copy_elements']:>9} {s['copy_elements_in_matmul_loops']:>12} "
                       f"{s['overhead_us']:>9}") if s else " " * 57
            speed = "  ".join(f"{k} {v['gflops']} GFLOP/s" + (f" ({v['peak_pct']}%)" if v.get("peak_pct") else "")
                              + ("" if v.get("correct", True) else " WRONG")
                              for k, v in entry.get("speed", {}).items())
            print(f"{pipeline.key:28} {figures}  {speed}", flush=True)
        if has_amx or args.time_emulated:
            try:
                import torch  # noqa: F401
            except ImportError:
                print("torch is not installed: no oneDNN figures (pip install torch==2.13.0 gives the CPU build)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "lower")
    else:
        main()
