"""AMX speed on a lent machine's host CPU, in bench/device.py's two halves.

``prepare_amx(folder)`` runs here (hardboiled, Halide): for each of
``DEVICE_PIPELINES`` (bench/amx_speed.py's MatMul schedules) it writes the
C hardboiled generates, with its timing entry, Halide's own static library
of the same pipeline, and the peak loop, with a manifest of the arguments'
order and layout and of the compiler flags (hardboiled's own, read from
its toolchain here: the other half cannot import hardboiled).

``run_amx(folder, out)`` runs there, with gcc and numpy alone. Where the
CPU has ``amx_tile`` it builds each natively and times hardboiled's
product, Halide's and numpy's (float32; one core where the caller set
OPENBLAS_NUM_THREADS=1 before numpy loaded, as bench/device.py does) in
turn, round by round,
keeping each one's best round, and checks both AMX results against numpy.
Without AMX (``emulate=True``, the dry run) it builds hardboiled's C with
the emulation, runs each kernel once and checks it, and only links
Halide's: its code needs the instructions.

The numpy helpers and C harnesses here are bench/amx_speed.py's too.
"""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

AMX_MANIFEST = "amx.json"
DEVICE_PIPELINES = ("bf16_vnni_reorder4", "bf16_std_reorder4", "bf16_vnni_preload_b", "int8_vnni_ref")
DEVICE_SIZES = (512, 1024)
ROUNDS = 5

HALIDE_HARNESS = r"""
#include <string.h>
#include <time.h>
#include "HalideRuntime.h"
#include "halide_matmul.h"
/* dims: per buffer, dimensions then (extent, stride) pairs; code/bits: its type. */
static void describe(halide_buffer_t *b, halide_dimension_t *d, void *host, const int *dims, int code, int bits) {
    memset(b, 0, sizeof *b);
    b->host = (uint8_t *)host;
    b->type.code = (halide_type_code_t)code; b->type.bits = (uint8_t)bits; b->type.lanes = 1;
    b->dimensions = dims[0]; b->dim = d;
    for (int i = 0; i < dims[0]; i++) {
        d[i].min = 0; d[i].extent = dims[1 + 2 * i]; d[i].stride = dims[2 + 2 * i]; d[i].flags = 0;
    }
}
double run_halide(int reps, void *a, void *b, void *c, const int *da, const int *db, const int *dc,
                  int in_code, int in_bits, int out_code) {
    halide_buffer_t A, B, C; halide_dimension_t dA[4], dB[4], dC[4];
    describe(&A, dA, a, da, in_code, in_bits); describe(&B, dB, b, db, in_code, in_bits);
    describe(&C, dC, c, dc, out_code, 32);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < reps; i++) if (halide_matmul(&A, &B, &C) != 0) return -1.0;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
}
"""

PEAK_LOOP = r"""
#include <stdio.h>
#include <time.h>
int main(void) {
    static unsigned char cfg[64]; static char data[1024];
    if (hb_amx_enable() != 0) return 1;
    cfg[0] = 1;
    for (int t = 0; t < 8; t++) { cfg[16 + 2 * t] = 64; cfg[48 + t] = 16; }
    _tile_loadconfig(cfg);
    _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
    _tile_loadd(4, data, 64); _tile_loadd(5, data, 64);
    long iterations = 20000000;
    struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < iterations; i++) {
        _tile_dpbf16ps(0, 4, 5); _tile_dpbf16ps(1, 4, 5); _tile_dpbf16ps(2, 4, 5); _tile_dpbf16ps(3, 4, 5);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    _tile_stored(0, data, 64);
    _tile_release();
    double s = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    printf("%.4f\n", iterations * 4.0 * 16 * 16 * 32 * 2 / s / 1e12);
    return 0;
}
"""
"""Four independent bf16 tile products in a loop: the core's AMX peak
(needs hardboiled's AMX runtime before it, for hb_amx_enable)."""


def timing_entry(order: list[tuple[str, int]]) -> str:
    """C appended to the kernel: call hb_kernel_raw ``reps`` times on buffers
    given as pointers and (extent, stride) pairs, mins 0."""
    arguments = []
    for i, (_, dims) in enumerate(order):
        arguments.append(f"p[{i}]")
        for d in range(dims):
            arguments.append(f"0, s[{i}][{2 * d}], s[{i}][{2 * d + 1}]")
    params = ", ".join(arguments)
    return ("\n#include <time.h>\n"
            "double hb_bench(int reps, void **p, const int (*s)[8]) {\n"
            "  struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);\n"
            f"  for (int i = 0; i < reps; i++) if (hb_kernel_raw({params}) != 0) return -1.0;\n"
            "  clock_gettime(CLOCK_MONOTONIC, &t1);\n"
            "  return (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);\n}\n")


def b_in_layout(layout: str, types: str, b: np.ndarray) -> np.ndarray:
    """B as the pipeline reads it: B(y, r) row-major is (K, N); the VNNI
    B(r % kp, y, r / kp) is (K / kp, N, kp)."""
    if layout == "std":
        return np.ascontiguousarray(b)
    kp = 2 if types == "bf16" else 4
    k, n = b.shape
    return np.ascontiguousarray(b.reshape(k // kp, kp, n).transpose(0, 2, 1))


def halide_dims(array: np.ndarray) -> list[int]:
    """Halide's (extent, stride) pairs, innermost first."""
    shape, strides = array.shape[::-1], [s // array.itemsize for s in array.strides[::-1]]
    return [v for pair in zip(shape, strides) for v in pair]


# --------------------------------------------------------------------------
# Here: prepare
# --------------------------------------------------------------------------


def prepare_amx(folder: Path, sizes: tuple[int, ...] = DEVICE_SIZES) -> dict[str, Any]:
    """Everything ``run_amx`` builds and times, in ``folder``; returns its manifest."""
    import amx_speed
    import halide

    from hardboiled.codegen.c import amx_runtime_source
    from hardboiled.codegen.toolchain import AMX_FLAGS, BASE_FLAGS

    folder.mkdir(parents=True, exist_ok=True)
    include = folder / "include"
    include.mkdir(exist_ok=True)
    shutil.copy(Path(halide.__file__).parent / "include" / "HalideRuntime.h", include / "HalideRuntime.h")
    (folder / "harness.c").write_text(HALIDE_HARNESS)
    (folder / "peak.c").write_text(amx_runtime_source() + PEAK_LOOP)
    entries = []
    for name in DEVICE_PIPELINES:
        for size in sizes:
            pipeline = amx_speed._pipeline_of(f"{name}@{size}")
            compiled = amx_speed.compile_with_hardboiled(amx_speed.vectorizing_stage(pipeline))
            key = f"{name}_{size}"
            (folder / key).mkdir(exist_ok=True)
            (folder / key / "kernel.c").write_text(compiled.source + timing_entry(compiled.order))
            prefix = folder / key / "halide_matmul"
            proc = subprocess.run([sys.executable, amx_speed.__file__, "--child", pipeline.key, str(prefix),
                                   amx_speed.AMX_TARGET], capture_output=True, text=True, timeout=600)
            entries.append({"key": key, "types": pipeline.types, "layout": pipeline.layout, "size": size,
                            "order": compiled.order,
                            "halide": f"{key}/halide_matmul.a" if proc.returncode == 0 else None,
                            "halide_missing": None if proc.returncode == 0 else
                            (proc.stderr.strip().splitlines() or ["no message"])[-1][-300:]})
            print(f"amx {key}: prepared", flush=True)
    manifest = {"base_flags": list(BASE_FLAGS), "amx_flags": list(AMX_FLAGS), "emulate_flags": ["-DHB_AMX_EMULATE"],
                "rounds": ROUNDS, "pipelines": entries}
    (folder / AMX_MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


# --------------------------------------------------------------------------
# There: run (gcc and numpy)
# --------------------------------------------------------------------------


def _operands(entry: dict[str, Any], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A, B (K x N, row-major) and the float64 reference A @ B; bfloat16 as
    its bits (uint16, rounded to nearest even), so that numpy alone will do."""
    n = entry["size"]
    if entry["types"] == "int8":
        a, b = rng.integers(-8, 8, (n, n), dtype=np.int8), rng.integers(-8, 8, (n, n), dtype=np.int8)
        return a, b, a.astype(np.float64) @ b.astype(np.float64)
    bits = []
    for _ in range(2):
        word = rng.standard_normal((n, n)).astype(np.float32).view(np.uint32).astype(np.uint64)
        bits.append(((word + 0x7FFF + ((word >> 16) & 1)) >> 16).astype(np.uint16))
    a, b = bits
    values = [(x.astype(np.uint32) << 16).view(np.float32).astype(np.float64) for x in (a, b)]
    return a, b, values[0] @ values[1]


def _build(folder: Path, sources: list[str], flags: list[str], output: Path, extra: tuple[str, ...] = ()) -> None:
    command = ["gcc", *flags, "-I", str(folder / "include"), *[str(folder / s) for s in sources], *extra,
               "-o", str(output), "-lm", "-lpthread", "-ldl"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"gcc failed on {' '.join(sources)}: {proc.stderr.strip()[-500:]}")


def _hardboiled_runner(library: Path, entry: dict[str, Any], a: np.ndarray, b_layout: np.ndarray,
                       out: np.ndarray) -> Any:
    bench = ctypes.CDLL(str(library)).hb_bench
    bench.restype = ctypes.c_double
    arrays = {"A": a, "B": b_layout}
    order = entry["order"]
    pointers = (ctypes.c_void_p * len(order))(*[arrays.get(name, out).ctypes.data for name, _ in order])
    shapes = (ctypes.c_int * 8 * len(order))()
    for i, (name, _) in enumerate(order):
        for j, v in enumerate(halide_dims(arrays.get(name, out))):
            shapes[i][j] = v
    return lambda reps: bench(reps, pointers, shapes)


def _halide_runner(library: Path, entry: dict[str, Any], a: np.ndarray, b_layout: np.ndarray,
                   out: np.ndarray) -> Any:
    run = ctypes.CDLL(str(library)).run_halide
    run.restype = ctypes.c_double
    code, bits = (4, 16) if entry["types"] == "bf16" else (0, 8)
    out_code = 2 if entry["types"] == "bf16" else 0

    def dims(x: np.ndarray) -> Any:
        values = halide_dims(x)
        return (ctypes.c_int * (1 + len(values)))(len(values) // 2, *values)

    da, db, dc = dims(a), dims(b_layout), dims(out)
    return lambda reps: run(reps, ctypes.c_void_p(a.ctypes.data), ctypes.c_void_p(b_layout.ctypes.data),
                            ctypes.c_void_p(out.ctypes.data), da, db, dc, code, bits, out_code)


def _numpy_runner(a: np.ndarray, b: np.ndarray, entry: dict[str, Any]) -> Any:
    as_f32 = [(x.astype(np.uint32) << 16).view(np.float32) if entry["types"] == "bf16" else x.astype(np.float32)
              for x in (a, b)]

    def run(reps: int) -> float:
        started = time.perf_counter()
        for _ in range(reps):
            as_f32[0] @ as_f32[1]
        return time.perf_counter() - started

    return run


def _correct(out: np.ndarray, reference: np.ndarray) -> bool:
    return bool(np.abs(out.reshape(reference.shape) - reference).max() <= 1e-2 * float(np.abs(reference).max()))


def run_pipeline(folder: Path, work: Path, entry: dict[str, Any], manifest: dict[str, Any],
                 emulate: bool) -> dict[str, Any]:
    """One pipeline: built, checked and (natively) timed."""
    flags = [*manifest["base_flags"], *(manifest["emulate_flags"] if emulate else manifest["amx_flags"]),
             "-shared", "-fPIC"]
    a, b, reference = _operands(entry, np.random.default_rng(entry["size"]))
    b_layout = b_in_layout(entry["layout"], entry["types"], b)
    outputs = {name: np.zeros((entry["size"], entry["size"]), np.float32 if entry["types"] == "bf16" else np.int32)
               for name in ("hardboiled", "halide")}
    library = work / f"{entry['key']}.so"
    _build(folder, [f"{entry['key']}/kernel.c"], flags, library)
    runners = {"hardboiled": _hardboiled_runner(library, entry, a, b_layout, outputs["hardboiled"])}
    row: dict[str, Any] = {"pipeline": entry["key"]}
    if entry["halide"]:
        halide = work / f"{entry['key']}_halide.so"
        _build(folder, ["harness.c"], ["-O2", "-shared", "-fPIC", "-I", str(folder / entry["key"])], halide,
               extra=(str(folder / entry["halide"]),))
        if not emulate:  # Halide's code needs AVX-512 and AMX
            runners["halide"] = _halide_runner(halide, entry, a, b_layout, outputs["halide"])
    else:
        row["halide"] = {"missing": entry["halide_missing"]}
    if emulate:
        if runners["hardboiled"](1) < 0:
            raise RuntimeError(f"{entry['key']}: the kernel returned an error")
        row["hardboiled"] = {"correct": _correct(outputs["hardboiled"], reference)}
        return row
    runners["numpy_f32"] = _numpy_runner(a, b, entry)
    flops = 2.0 * entry["size"] ** 3
    reps = max(1, int(2e9 / flops))
    best = {name: float("inf") for name in runners}
    for _ in range(manifest["rounds"]):
        for name, run in runners.items():
            seconds = run(reps)
            best[name] = min(best[name], seconds / reps if seconds >= 0 else float("nan"))
    for name, seconds in best.items():
        row[name] = {"gflops": round(flops / seconds / 1e9, 1)}
        if name in outputs:
            row[name]["correct"] = _correct(outputs[name], reference)
    return row


def run_amx(folder: Path, emulate: bool) -> dict[str, Any]:
    """Every prepared pipeline (``emulate``: checked under the emulation,
    untimed); the peak loop natively."""
    manifest = json.loads((folder / AMX_MANIFEST).read_text())
    result: dict[str, Any] = {"amx": not emulate, "pipelines": []}
    with tempfile.TemporaryDirectory(prefix="hb_amx_device_") as tmp:
        work = Path(tmp)
        if not emulate:
            peak = work / "peak"
            _build(folder, ["peak.c"], [*manifest["base_flags"], *manifest["amx_flags"]], peak)
            result["peak_tflops"] = float(subprocess.run([str(peak)], capture_output=True, text=True,
                                                         check=True, timeout=120).stdout)
        for entry in manifest["pipelines"]:
            try:
                row = run_pipeline(folder, work, entry, manifest, emulate)
            except (RuntimeError, OSError, subprocess.SubprocessError) as error:
                row = {"pipeline": entry["key"], "error": str(error)}
            if result.get("peak_tflops"):
                for figures in row.values():
                    if isinstance(figures, dict) and "gflops" in figures:
                        figures["peak_pct"] = round(100 * figures["gflops"] / 1e3 / result["peak_tflops"], 1)
            result["pipelines"].append(row)
            print(json.dumps(row), flush=True)
    return result
