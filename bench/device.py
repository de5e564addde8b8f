#!/usr/bin/env python3
"""Run, check and time hardboiled's CUDA on a lent GPU: one command
prepares everything here, one runs everything there.

    .venv/bin/python bench/device.py prepare --out build/device        # here: no GPU needed
    python3 bench/device.py run --in build/device --out OUT            # there: numpy and the GPU
    .venv/bin/python bench/device.py run --in build/device --out OUT --dry-run   # here: all but launches

``prepare`` compiles every Tensor Core application of apps/ at its test
size and at the paper's size (``--sizes``), and the WMMA variants of the
listed sweep (``--sweep N`` of them, test size only, from its committed
manifest), with hardboiled to
CUDA, and links them all, with a small runtime of its own (RUNNER_CUDA:
allocation, copies, CUDA events), into one shared library for sm_80 and
sm_90 (nvcc links the CUDA runtime statically, so the library needs only
the driver). At the test size it also writes the inputs it ran the
original program on in the reference interpreter, the outputs it
computed and, per element, how far a correct kernel may be from them
(twice the error model's bound, or compare.tolerance where the model has
none). At the paper's size the interpreter would take too long: the run
there draws inputs from a seed and only times the kernel. Everything goes
into one folder with a manifest.json, well under the 60 MiB a device call
may carry.

``run`` needs nothing of hardboiled (the device has numpy, not lark or
egglog): it loads the library, and for each kernel

* at the test size: runs it once and compares every output with the
  reference, element by element; then, unless ``--no-sanitizer``, runs it
  again under ``compute-sanitizer`` (memcheck, racecheck, synccheck) in a
  child process (``bench/device.py check``), counting the errors;
* times it with CUDA events around each launch: ``--warmup`` launches,
  then the median of ``--repeat`` (at least 50), and, where the
  application has one (``App.cuda_baseline``), its CUDA-only Halide
  baseline the same way, launch for launch in turn, on the same device
  buffers; the two outputs are compared too (the baseline's is the
  reference at the paper's size, within BASELINE_TOLERANCE);
* writes OUT/device-results.json and OUT/device-results.md.

The baselines are the applications' own algorithms with the schedule of
``apps.common.cuda_only`` (output tiles over blocks and threads, the
accumulator in registers, the reduction unrolled by 4), compiled ahead of
time by the halide package here for ``BASELINE_TARGET`` without Halide's
runtime; one standalone runtime is linked beside them, and the runner makes
it use the primary CUDA context and the default stream.

``--quick`` keeps the applications at the paper's size and the test-size
checks of five of them, no sweep variants and one sanitizer tool
(memcheck). ``--dry-run`` does everything but talk to the GPU: it loads
the library and resolves every entry point, builds every argument list,
draws the paper-size inputs and compares each reference with itself, so
that the first real run does not fail on a path nobody executed.

The host CPU of a lent machine may have AMX (the H200's of 2026-11-28 had):
``prepare`` also writes the AMX MatMuls of bench/amx_device.py
(``--amx-sizes``, '' for none) into ``amx/``, and a run that picks no
kernels (no ``--only``, no ``--sizes``) times them there when the CPU has
``amx_tile`` (``amx`` in the results); the dry run checks them under the
emulation.

What it does not do yet: baselines for rec_filter, the DCTs and attention
(``baseline_time_us`` is null there, with the reason) and schedules an autotuner improved. The
vendor libraries (cuBLAS, cuDNN, PyTorch's attention: ``vendor_time_us``)
are called through the device's PyTorch with its defaults (cudnn.benchmark
on), f16 in and out.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import io
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# One core for numpy's BLAS, set before numpy loads: the AMX half compares
# one core's AMX with one core's float32 products (bench/amx_device.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = "kernels.so"
MANIFEST = "manifest.json"
AMX_FOLDER = "amx"
"""The AMX half (bench/amx_device.py), prepared and run beside the kernels."""
MAX_CARRY_BYTES = 60 << 20
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")
QUICK_CHECKS = ("conv1d", "conv2d", "downsample", "gemm", "conv_layer")
PAPER_SEED = 2026
RUNNER = "hb_runner"
NVCC_ARCHES = ("-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=[sm_90,compute_90]")
"""Machine code for A100 and Hopper, and Hopper's PTX for anything newer."""

RUNNER_CUDA = r"""
// The runner's half of the library: what bench/device.py run calls
// through ctypes, from the same (static) CUDA runtime as the kernels.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
extern "C" {
int hbr_device_count(int *count) { return (int)cudaGetDeviceCount(count); }
int hbr_describe(char *out, int size) {
    cudaDeviceProp p;
    int driver = 0, runtime = 0;
    int err = (int)cudaGetDeviceProperties(&p, 0);
    if (err) return err;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    snprintf(out, size, "%s|sm_%d%d|%d|%d", p.name, p.major, p.minor, driver, runtime);
    return 0;
}
int hbr_malloc(void **pointer, size_t bytes) { return (int)cudaMalloc(pointer, bytes); }
int hbr_free(void *pointer) { return (int)cudaFree(pointer); }
int hbr_to_device(void *device, const void *host, size_t bytes) {
    return (int)cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
}
int hbr_to_host(void *host, const void *device, size_t bytes) {
    return (int)cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost);
}
int hbr_synchronize(void) { return (int)cudaDeviceSynchronize(); }
int hbr_last_error(void) { return (int)cudaGetLastError(); }
const char *hbr_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }
int hbr_event_create(void **event) { return (int)cudaEventCreate((cudaEvent_t *)event); }
int hbr_event_destroy(void *event) { return (int)cudaEventDestroy((cudaEvent_t)event); }
int hbr_event_record(void *event) { return (int)cudaEventRecord((cudaEvent_t)event, 0); }
int hbr_elapsed_ms(float *ms, void *start, void *stop) {
    int err = (int)cudaEventSynchronize((cudaEvent_t)stop);
    if (err) return err;
    return (int)cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)stop);
}

// The CUDA-only Halide baselines (AOT objects and Halide's runtime, when
// prepared). Halide's runtime makes a CUDA context of its own unless told
// otherwise; these strong definitions replace its weak ones so that it
// runs on the runtime API's primary context, where the runner's buffers
// live, and on the default stream, where the runner records its events.
struct halide_buffer_t;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
int halide_cuda_wrap_device_ptr(void *, struct halide_buffer_t *, uint64_t) __attribute__((weak));
int halide_cuda_detach_device_ptr(void *, struct halide_buffer_t *) __attribute__((weak));
int halide_cuda_acquire_context(void *user_context, CUcontext *ctx, bool create) {
    static CUcontext primary = 0;
    if (!primary) {
        cudaFree(0);  // makes the primary context current
        void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
        typedef int (*current_t)(CUcontext *);
        current_t current = driver ? (current_t)dlsym(driver, "cuCtxGetCurrent") : 0;
        if (!current || current(&primary) != 0 || !primary) return -1;
    }
    *ctx = primary;
    return 0;
}
int halide_cuda_release_context(void *user_context) { return 0; }
int halide_cuda_get_stream(void *user_context, CUcontext ctx, CUstream *stream) {
    *stream = 0;
    return 0;
}
// Halide's own error handler prints and aborts the process, which would
// end the whole run at one baseline's failed check; this one keeps the
// message for the runner to report, and the pipeline returns its error.
static char hbr_halide_message[2048];
void halide_error(void *user_context, const char *message) {
    strncpy(hbr_halide_message, message, sizeof hbr_halide_message - 1);
}
const char *hbr_halide_error(void) { return hbr_halide_message; }
void hbr_halide_error_reset(void) { hbr_halide_message[0] = 0; }
int hbr_wrap(struct halide_buffer_t *buffer, void *device) {
    return halide_cuda_wrap_device_ptr ? halide_cuda_wrap_device_ptr(0, buffer, (uint64_t)device) : -2;
}
int hbr_detach(struct halide_buffer_t *buffer) {
    return halide_cuda_detach_device_ptr ? halide_cuda_detach_device_ptr(0, buffer) : -2;
}
}
"""

NUMPY_TYPES = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8,
               "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64, "float16": np.float16,
               "float32": np.float32, "float64": np.float64, "bfloat16": np.uint16}
"""A manifest type's numpy storage (bfloat16 as its bits: the device side
needs no ml_dtypes; its values are drawn and compared as float32)."""


# --------------------------------------------------------------------------
# There: run (numpy, ctypes and the GPU only)
# --------------------------------------------------------------------------


# halide_buffer_t as ctypes, for the baselines' entry points. hardboiled/verify/run.py has
# the same structures; the run side here imports nothing of hardboiled (the device has no
# lark or egglog, and a test holds it to that), so they are spelled again.
class HalideDimension(ctypes.Structure):
    _fields_ = [("min", ctypes.c_int32), ("extent", ctypes.c_int32), ("stride", ctypes.c_int32),
                ("flags", ctypes.c_uint32)]


class HalideType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class HalideBuffer(ctypes.Structure):
    """``halide_buffer_t``, for the baselines' AOT entry points."""

    _fields_ = [("device", ctypes.c_uint64), ("device_interface", ctypes.c_void_p), ("host", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("type", HalideType), ("dimensions", ctypes.c_int32),
                ("dim", ctypes.POINTER(HalideDimension)), ("padding", ctypes.c_void_p)]


HALIDE_TYPE_CODES = {"int": 0, "uint": 1, "float": 2, "bfloat": 4}


def halide_buffer(argument: dict[str, Any]) -> tuple[HalideBuffer, Any]:
    """A buffer description for ``argument`` (no memory yet); and its
    dimensions, which must live as long as it."""
    code, bits = re.fullmatch(r"([a-z]+?)(\d+)", argument["type"]).groups()  # type: ignore[union-attr]
    dims = (HalideDimension * len(argument["dims"]))(*(HalideDimension(lo, extent, stride, 0)
                                                       for lo, extent, stride in argument["dims"]))
    buffer = HalideBuffer(0, None, None, 0, HalideType(HALIDE_TYPE_CODES[code], int(bits), 1), len(argument["dims"]),
                          ctypes.cast(dims, ctypes.POINTER(HalideDimension)), None)
    return buffer, dims


class DeviceError(Exception):
    def __init__(self, message: str, code: int = 0):
        super().__init__(message)
        self.code = code


NO_DEVICE = 100
"""cudaErrorNoDevice: no rebuilt library helps."""


class Runtime:
    """The library's runner functions, and the kernels' raw entry points."""

    def __init__(self, library: Path, dry_run: bool):
        self.library = ctypes.CDLL(str(library))
        self.dry_run = dry_run
        self.library.hbr_error_string.restype = ctypes.c_char_p
        self.library.hbr_halide_error.restype = ctypes.c_char_p

    def call(self, function: str, *args: Any) -> None:
        code = getattr(self.library, function)(*args)
        if code != 0:
            text = self.library.hbr_error_string(code).decode()
            raise DeviceError(f"{function}: {text} ({code})", code)

    def describe(self) -> dict[str, str]:
        if self.dry_run:
            return {"gpu": "none (dry run)", "arch": "", "driver": "", "runtime": ""}
        text = ctypes.create_string_buffer(256)
        self.call("hbr_describe", text, 256)
        name, arch, driver, runtime = text.value.decode().split("|")
        return {"gpu": name, "arch": arch, "driver": _version(int(driver)), "runtime": _version(int(runtime))}

    def halide_message(self) -> str:
        """What Halide's runtime last reported (the runner's halide_error)."""
        return self.library.hbr_halide_error().decode().strip()

    def require_device(self) -> None:
        if self.dry_run:
            return
        count = ctypes.c_int(0)
        self.call("hbr_device_count", ctypes.byref(count))
        if count.value == 0:
            raise DeviceError("no CUDA device", NO_DEVICE)

    def entry(self, name: str) -> Any:
        function = getattr(self.library, name)  # AttributeError: the library lacks it
        function.restype = ctypes.c_int
        return function


def _version(number: int) -> str:
    return f"{number // 1000}.{number % 1000 // 10}"


class Launch:
    """One kernel's device buffers and argument list."""

    def __init__(self, runtime: Runtime, kernel: dict[str, Any], arrays: dict[str, np.ndarray]):
        self.runtime, self.kernel, self.arrays = runtime, kernel, arrays
        self.device: dict[str, ctypes.c_void_p] = {}
        self.entry = runtime.entry(kernel["entry"])
        for argument in kernel["arguments"]:
            pointer = ctypes.c_void_p(None)
            if not runtime.dry_run:
                size = ctypes.c_size_t(max(arrays[argument["name"]].nbytes, 1))
                runtime.call("hbr_malloc", ctypes.byref(pointer), size)
            self.device[argument["name"]] = pointer
        self.args: list[object] = []
        for argument in kernel["arguments"]:
            self.args.append(self.device[argument["name"]])
            for low, extent, stride in argument["dims"]:
                self.args.extend(ctypes.c_int32(v) for v in (low, extent, stride))
        self.args.append(ctypes.c_void_p(None))  # the default stream
        self.baseline = None
        self.halide_buffers: list[tuple[HalideBuffer, Any]] = []
        if kernel.get("baseline"):
            self.baseline = runtime.entry(kernel["baseline"]["entry"])
            by_name = {a["name"]: a for a in kernel["arguments"]}
            for name in kernel["baseline"]["order"]:
                buffer, dims = halide_buffer(by_name[name])
                if not runtime.dry_run:
                    runtime.call("hbr_wrap", ctypes.byref(buffer), self.device[name])
                self.halide_buffers.append((buffer, dims))

    def upload(self) -> None:
        if self.runtime.dry_run:
            return
        for name, pointer in self.device.items():
            host = np.ascontiguousarray(self.arrays[name])
            self.runtime.call("hbr_to_device", pointer, host.ctypes.data_as(ctypes.c_void_p),
                              ctypes.c_size_t(host.nbytes))

    def launch(self) -> None:
        if self.runtime.dry_run:
            return
        code = self.entry(*self.args)
        if code != 0:
            raise DeviceError(f"{self.kernel['entry']} returned {code} (one of the pipeline's checks failed)")

    def launch_baseline(self) -> None:
        if self.runtime.dry_run or self.baseline is None:
            return
        self.runtime.library.hbr_halide_error_reset()
        code = self.baseline(*(ctypes.byref(buffer) for buffer, _ in self.halide_buffers))
        if code != 0:
            raise DeviceError(f"the CUDA-only Halide baseline returned Halide error {code}: "
                              f"{self.runtime.halide_message()}")

    def baseline_bounds_problems(self) -> list[str]:
        """Halide's bounds query of the baseline (no GPU: its buffers have
        neither host nor device memory, so the pipeline only says which
        region of each buffer it would touch): every region it names that
        the kernel's buffers do not hold. Run before the first launch, since
        a baseline that reaches outside its buffers fails its own checks
        there. Not in the dry run: the pipeline loads its kernels into a
        CUDA context before it answers a query (prepare, which reads
        Halide's warnings, catches what is certain to fail)."""
        if self.baseline is None or self.runtime.dry_run:
            return []
        by_name = {a["name"]: a for a in self.kernel["arguments"]}
        queries = [halide_buffer(by_name[name]) for name in self.kernel["baseline"]["order"]]
        self.runtime.library.hbr_halide_error_reset()
        code = self.baseline(*(ctypes.byref(buffer) for buffer, _ in queries))
        if code != 0:
            return [f"the bounds query returned Halide error {code}: {self.runtime.halide_message()}"]
        problems = []
        for name, (_, dims) in zip(self.kernel["baseline"]["order"], queries):
            for axis, ((low, extent, _), asked) in enumerate(zip(by_name[name]["dims"], dims)):
                if asked.min < low or asked.min + asked.extent > low + extent:
                    problems.append(f"{name} dimension {axis}: the baseline touches [{asked.min}, "
                                    f"{asked.min + asked.extent}), the buffer holds [{low}, {low + extent})")
        return problems

    def download(self, name: str) -> np.ndarray:
        host = np.empty_like(self.arrays[name])
        if self.runtime.dry_run:
            return self.arrays[name].copy()
        self.runtime.call("hbr_synchronize")
        self.runtime.call("hbr_to_host", host.ctypes.data_as(ctypes.c_void_p), self.device[name],
                          ctypes.c_size_t(host.nbytes))
        return host

    def time_us(self, warmup: int, repeat: int) -> tuple[float | None, float | None]:
        """The median of ``repeat`` launches of the kernel, each between two
        CUDA events, and of its baseline (None without one), launched in
        turn with it so that both see the same clocks."""
        if self.runtime.dry_run:
            return None, None
        runs = [self.launch] + ([self.launch_baseline] if self.baseline is not None else [])
        for _ in range(warmup):
            for launch in runs:
                launch()
        self.runtime.call("hbr_synchronize")
        events = [ctypes.c_void_p(None) for _ in range(2)]
        for event in events:
            self.runtime.call("hbr_event_create", ctypes.byref(event))
        times: list[list[float]] = [[] for _ in runs]
        try:
            for _ in range(repeat):
                for launch, samples in zip(runs, times):
                    self.runtime.call("hbr_event_record", events[0])
                    launch()
                    self.runtime.call("hbr_event_record", events[1])
                    elapsed = ctypes.c_float(0.0)
                    self.runtime.call("hbr_elapsed_ms", ctypes.byref(elapsed), events[0], events[1])
                    samples.append(elapsed.value * 1000.0)
        finally:
            for event in events:
                self.runtime.call("hbr_event_destroy", event)
        medians = [statistics.median(samples) for samples in times]
        return medians[0], medians[1] if len(medians) > 1 else None

    def free(self) -> None:
        if not self.runtime.dry_run:
            for buffer, _ in self.halide_buffers:
                self.runtime.call("hbr_detach", ctypes.byref(buffer))
            for pointer in self.device.values():
                self.runtime.call("hbr_free", pointer)


def load_arrays(folder: Path, kernel: dict[str, Any]) -> dict[str, np.ndarray]:
    """The kernel's buffers: the prepared inputs (test size) or inputs drawn
    from the seed (paper size); outputs start zeroed."""
    rng = np.random.default_rng(kernel.get("seed", PAPER_SEED))
    arrays = {}
    for argument in kernel["arguments"]:
        name, dtype = argument["name"], NUMPY_TYPES[argument["type"]]
        stored = kernel.get("inputs", {}).get(name)
        if stored is not None:
            arrays[name] = np.load(folder / stored)
        elif argument["output"]:
            arrays[name] = np.zeros(argument["elements"], dtype=dtype)
        elif argument["type"] == "bfloat16":
            values = rng.uniform(-1, 1, argument["elements"]).astype(np.float32)
            arrays[name] = (values.view(np.uint32) >> 16).astype(np.uint16)
        elif np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            arrays[name] = rng.integers(max(info.min, -8), min(info.max, 8), argument["elements"]).astype(dtype)
        else:
            arrays[name] = rng.uniform(-1, 1, argument["elements"]).astype(dtype)
    return arrays


def as_float64(array: np.ndarray, type_name: str) -> np.ndarray:
    if type_name == "bfloat16":
        return (array.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return array.astype(np.float64)


def compare_output(expected: np.ndarray, actual: np.ndarray, tolerance: np.ndarray, type_name: str) -> dict[str, Any]:
    """Element by element within the prepared tolerance (NaN matches NaN,
    an infinity itself); the worst error as a fraction of its tolerance."""
    e, a = as_float64(expected, type_name), as_float64(actual, type_name)
    same = (e == a) | (np.isnan(e) & np.isnan(a))
    with np.errstate(invalid="ignore"):
        error = np.where(same, 0.0, np.abs(e - a))
    error = np.where(np.isnan(error), np.inf, error)
    bad = np.flatnonzero(error > tolerance)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(error == 0, 0.0, error / tolerance)
    first = int(bad[0]) if bad.size else None
    return {"matches": not bad.size, "mismatches": int(bad.size), "max_error": float(error.max(initial=0.0)),
            "max_error_vs_bound": float(ratio.max(initial=0.0)),
            "first_mismatch": None if first is None else {"element": first, "expected": float(e[first]),
                                                          "actual": float(a[first])}}


def open_runtime(folder: Path, manifest: dict[str, Any], out: Path, dry_run: bool,
                 rebuild: bool) -> tuple[Runtime, Path, str]:
    """The prepared library; or, where it does not load or its CUDA runtime
    does not start on this machine (another image's system libraries or
    driver), one built here from the prepared sources with this machine's
    nvcc. Returns the runtime, the library's path and which it is."""
    library = folder / manifest["library"]
    reason = "--rebuild"
    if not rebuild:
        try:
            runtime = Runtime(library, dry_run)
            runtime.require_device()
            return runtime, library, "prepared"
        except DeviceError as error:
            if error.code == NO_DEVICE:
                raise
            reason = str(error)
        except OSError as error:
            reason = str(error)
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise DeviceError(f"the prepared library cannot be used ({reason}) and there is no nvcc to rebuild it")
    sources = [Path(k["source"]) for k in manifest["kernels"]] + [Path("src") / f"{RUNNER}.cu"]
    out.mkdir(parents=True, exist_ok=True)
    library = out / LIBRARY
    failed = build_library(folder, sources, [Path(o) for o in manifest["objects"]], manifest["nvcc_flags"], [nvcc],
                           os.cpu_count() or 1, library)
    if failed:
        print(f"rebuilt without {', '.join(sorted(failed))}: nvcc here refused them", flush=True)
    runtime = Runtime(library, dry_run)
    runtime.require_device()
    return runtime, library, f"rebuilt on this machine ({reason})"


def check_kernel(folder: Path, runtime: Runtime, kernel: dict[str, Any]) -> dict[str, Any]:
    """Run a test-size kernel once and compare its outputs with the reference."""
    arrays = load_arrays(folder, kernel)
    launch = Launch(runtime, kernel, arrays)
    try:
        launch.upload()
        launch.launch()
        comparisons = {}
        for name, reference in kernel["reference"].items():
            expected = np.load(folder / reference)
            tolerance = np.load(folder / kernel["tolerance"][name])
            actual = launch.download(name) if not runtime.dry_run else expected
            argument = next(a for a in kernel["arguments"] if a["name"] == name)
            comparisons[name] = compare_output(expected, actual, tolerance, argument["type"])
    finally:
        launch.free()
    return {"matches_reference": all(c["matches"] for c in comparisons.values()),
            "max_error_vs_bound": max((c["max_error_vs_bound"] for c in comparisons.values()), default=0.0),
            "outputs": comparisons}


BASELINE_TOLERANCE = 1e-3
"""How far hardboiled's output may be from the baseline's at the paper's
size, as a fraction of the largest magnitude there: the interpreter cannot
bound it per element at that size, and both sum in float32 in orders of
their own."""


def against_baseline(launch: Launch) -> dict[str, Any]:
    """Run the kernel and its baseline on the same inputs and compare their
    outputs (the baseline's is the reference at the paper's size)."""
    outputs = [a for a in launch.kernel["arguments"] if a["output"]]
    ours: dict[str, np.ndarray] = {}
    launch.launch()
    for argument in outputs:
        ours[argument["name"]] = launch.download(argument["name"])
    launch.launch_baseline()
    worst = 0.0
    matches = True
    for argument in outputs:
        theirs = launch.download(argument["name"])
        scale = max(float(np.nanmax(np.abs(as_float64(theirs, argument["type"])), initial=0.0)), 1.0)
        tolerance = np.full(theirs.shape, BASELINE_TOLERANCE * scale)
        comparison = compare_output(theirs, ours[argument["name"]], tolerance, argument["type"])
        matches = matches and comparison["matches"]
        worst = max(worst, comparison["max_error_vs_bound"])
    return {"matches_baseline": matches, "max_error_vs_baseline_tolerance": worst}


VENDOR_APPS = {"gemm": "cuBLAS", "gemm_wide": "cuBLAS", "conv_layer": "cuDNN", "conv_layer_c32": "cuDNN",
               "attention": "PyTorch SDPA"}
"""The applications a vendor library also computes, through the device's
PyTorch, from the application's sizes (``vendor_time_us``)."""


def vendor_time_us(app: str, sizes: dict[str, int], warmup: int, repeat: int) -> tuple[float | None, str]:
    """The median time of the vendor library's version of ``app`` (f16 in;
    f32 accumulation), timed with CUDA events like the kernels; None, with
    the reason, where PyTorch or a GPU is missing."""
    try:
        import torch  # the device image has it; here it is optional
        import torch.nn.functional as functional
    except ImportError:
        return None, "no PyTorch"
    if not torch.cuda.is_available():
        return None, "PyTorch sees no GPU"
    half = dict(device="cuda", dtype=torch.float16)
    if app.startswith("gemm"):
        a, b = torch.randn(sizes["n"], sizes["n"], **half), torch.randn(sizes["n"], sizes["n"], **half)

        def work() -> Any:
            return torch.matmul(a, b)
    elif app.startswith("conv_layer"):
        c = sizes["channels"]
        x = torch.randn(sizes["batch"], c, sizes["height"] + 2, sizes["width"] + 2, **half)
        w, bias = torch.randn(c, c, 3, 3, **half), torch.randn(c, **half)
        torch.backends.cudnn.benchmark = True

        def work() -> Any:
            return torch.relu(functional.conv2d(x, w, bias))
    else:
        q, k, v = (torch.randn(1, sizes["heads"], sizes["length"], sizes["d"], **half) for _ in range(3))

        def work() -> Any:
            return functional.scaled_dot_product_attention(q, k, v)
    for _ in range(warmup):
        work()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000.0)
    return statistics.median(times), VENDOR_APPS[app]


def sanitize(folder: Path, library: Path, kernel: dict[str, Any], tools: tuple[str, ...],
             dry_run: bool) -> dict[str, Any]:
    """Each compute-sanitizer tool on a child that runs the kernel once.
    Where the sanitizer cannot watch this GPU (gVisor: "Device not
    supported"), the count is None, with its words."""
    sanitizer = shutil.which("compute-sanitizer")
    command = [sys.executable, str(Path(__file__).resolve()), "check", "--in", str(folder), "--library", str(library),
               "--kernel", kernel["name"]]
    if dry_run or sanitizer is None:
        return {"sanitizer_errors": None, "sanitizer": "not run" if dry_run else "compute-sanitizer not found",
                "command": command}
    errors, notes = 0, {}
    for tool in tools:
        proc = subprocess.run([sanitizer, "--tool", tool, "--error-exitcode", "99", *command],
                              capture_output=True, text=True, timeout=300)
        said = proc.stdout + proc.stderr
        if "Device not supported" in said:
            return {"sanitizer_errors": None, "sanitizer": f"{tool} cannot watch this GPU: {said.strip()[-300:]}"}
        # racecheck sums up as "N hazards displayed (E errors, W warnings)":
        # its warnings are hazards between the lanes of a warp, races since
        # Volta's independent thread scheduling, so they count.
        found = re.search(r"ERROR SUMMARY: (\d+) error", said)
        hazards = re.search(r"RACECHECK SUMMARY: (\d+) hazard", said)
        count = (max(int(found.group(1)) if found else 0, int(hazards.group(1)) if hazards else 0)
                 if found or hazards else 0 if proc.returncode == 0 else 1)
        errors += count
        if count or proc.returncode not in (0, 99):
            notes[tool] = said[-2000:]
    return {"sanitizer_errors": errors, "sanitizer": ",".join(tools), "sanitizer_output": notes}


def run(folder: Path, out: Path, *, dry_run: bool, quick: bool, sanitizer: bool, warmup: int,
        repeat: int, rebuild: bool = False, sizes: list[str] | None = None,
        tools: tuple[str, ...] = (), only: tuple[str, ...] = ()) -> dict[str, Any]:
    manifest = json.loads((folder / MANIFEST).read_text())
    runtime, library, built = open_runtime(folder, manifest, out, dry_run, rebuild)
    results: dict[str, Any] = {"date": datetime.date.today().isoformat(), **runtime.describe(), "library": built,
                               "host_cpu": _cpu_name(), "host_amx": _has_amx(), "dry_run": dry_run,
                               "quick": quick, "repeat": repeat, "complete": False, "kernels": []}
    started = time.perf_counter()
    for kernel in manifest["kernels"]:
        if quick and (kernel.get("sweep") or kernel["size"] == "test" and kernel["app"] not in QUICK_CHECKS):
            continue
        if sizes is not None and kernel["size"] not in sizes or only and kernel["name"] not in only:
            continue
        row: dict[str, Any] = {key: kernel.get(key) for key in ("name", "app", "size", "paper_speedup")}
        row.update(baseline_time_us=None, speedup_vs_cuda_only=None,
                   baseline="CUDA-only Halide" if kernel.get("baseline") else "no CUDA-only Halide baseline for it yet")
        if kernel.get("baseline_missing"):
            row["baseline_error"] = kernel["baseline_missing"]
        try:
            if kernel.get("reference"):
                row.update(check_kernel(folder, runtime, kernel))
                if sanitizer:
                    row.update(sanitize(folder, library, kernel, tools or (("memcheck",) if quick else SANITIZER_TOOLS),
                                            dry_run))
            launch = Launch(runtime, kernel, load_arrays(folder, kernel))
            try:
                launch.upload()
                if launch.baseline is not None and (problems := launch.baseline_bounds_problems()):
                    row["baseline_error"] = "not run: " + "; ".join(problems)
                    launch.baseline = None
                if launch.baseline is not None:
                    row.update(against_baseline(launch))
                row["time_us"], row["baseline_time_us"] = launch.time_us(warmup, repeat)
                if row["time_us"] and row["baseline_time_us"]:
                    row["speedup_vs_cuda_only"] = round(row["baseline_time_us"] / row["time_us"], 3)
            finally:
                launch.free()
            if kernel["size"] == "paper" and kernel["app"] in VENDOR_APPS and not dry_run:
                row["vendor_time_us"], row["vendor"] = vendor_time_us(kernel["app"], kernel["sizes"], warmup, repeat)
        except (DeviceError, AttributeError, OSError, ValueError) as error:
            row["error"] = str(error)
        results["kernels"].append(row)
        print(json.dumps(row)[:300], flush=True)
        # Written after every kernel: a run stopped at its time limit still
        # brings back what it measured.
        results["seconds"] = round(time.perf_counter() - started, 1)
        _write_results(out, results)
    if (folder / AMX_FOLDER).is_dir() and not only and sizes is None:
        results["amx"] = _amx_results(folder / AMX_FOLDER, dry_run)
    results["complete"] = True
    _write_results(out, results)
    return results


def _amx_results(folder: Path, dry_run: bool) -> dict[str, Any]:
    """The AMX MatMuls on the host CPU (bench/amx_device.py): timed where it
    has AMX; in the dry run, checked under the emulation."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # run through runpy, bench/ is not on it
    from amx_device import run_amx

    if not dry_run and not _has_amx():
        return {"amx": False, "why": "the host CPU has no amx_tile: nothing timed"}
    try:
        return run_amx(folder, emulate=dry_run or not _has_amx())
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        return {"error": str(error)}


def _write_results(out: Path, results: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, text in (("device-results.json", json.dumps(results, indent=2) + "\n"),
                       ("device-results.md", markdown_table(results))):
        partial = out / (name + ".partial")
        partial.write_text(text)
        partial.replace(out / name)


def markdown_table(results: dict[str, Any]) -> str:
    lines = [f"# Device results ({results['date']}, {results['gpu']}, driver {results['driver']}, "
             f"CUDA {results['runtime']}{', dry run' if results['dry_run'] else ''})", "",
             "| kernel | size | matches | max error / bound | sanitizer errors | time (µs) | baseline (µs) | "
             "speedup | paper | vendor (µs) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in results["kernels"]:
        def cell(key: str, digits: int = 2, row: dict[str, Any] = row) -> str:
            value = row.get(key)
            if value is None:
                return "-"
            return f"{value:.{digits}f}" if isinstance(value, float) else str(value)
        lines.append(f"| {row['name']} | {row['size']} | {cell('matches_reference')} | {cell('max_error_vs_bound')} "
                     f"| {cell('sanitizer_errors')} | {cell('time_us', 1)} | {cell('baseline_time_us', 1)} | "
                     f"{cell('speedup_vs_cuda_only')} | {cell('paper_speedup')} | {cell('vendor_time_us', 1)} |"
                     + (f" {row['error']}" if row.get("error") else ""))
    return "\n".join(lines + _amx_table(results.get("amx"))) + "\n"


def _amx_table(amx: dict[str, Any] | None) -> list[str]:
    """The AMX half's rows (GFLOP/s, or GOP/s for int8; a share of the
    peak loop's rate), when the run had one."""
    if not amx:
        return []
    head = f"peak {amx['peak_tflops']:.2f} TFLOP/s" if amx.get("peak_tflops") else amx.get("why", "emulated: no speed")
    lines = ["", f"## AMX on the host CPU ({head})", "", "| pipeline | hardboiled | Halide | numpy f32 |",
             "|---|---|---|---|"]
    for row in amx.get("pipelines", []):
        def cell(name: str, row: dict[str, Any] = row) -> str:
            figures = row.get(name) or {}
            text = f"{figures['gflops']}" if "gflops" in figures else "checked" if figures.get("correct") else "-"
            text += f" ({figures['peak_pct']}%)" if figures.get("peak_pct") else ""
            text += "" if figures.get("correct", True) else " WRONG"
            return text + (" (none)" if "missing" in figures else "")
        lines.append(f"| {row['pipeline']} | {cell('hardboiled')} | {cell('halide')} | {cell('numpy_f32')} |"
                     + (f" {row['error']}" if row.get("error") else ""))
    return lines


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _has_amx() -> bool:
    try:
        return "amx_tile" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def check_one(folder: Path, library: Path, name: str) -> int:
    """The sanitizer's child: one kernel, once (exit 1 when it does not match)."""
    manifest = json.loads((folder / MANIFEST).read_text())
    kernel = next(k for k in manifest["kernels"] if k["name"] == name)
    result = check_kernel(folder, Runtime(library, False), kernel)
    return 0 if result["matches_reference"] else 1


# --------------------------------------------------------------------------
# Here: prepare (hardboiled, Halide's dumps, nvcc)
# --------------------------------------------------------------------------


def _paper_speedup(text: str) -> float | None:
    found = re.search(r"(\d+(?:\.\d+)?)x over Halide CUDA", text)
    return float(found.group(1)) if found else None


def _wmma_apps(names: list[str] | None) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from apps.run import applications

    apps = {name: app for name, app in applications().items() if app.accelerator == "wmma"}
    unknown = sorted(set(names or ()) - set(apps))
    if unknown:
        raise SystemExit(f"not a Tensor Core application: {', '.join(unknown)} (choose from {', '.join(apps)})")
    return {name: apps[name] for name in names} if names else apps


def _app_dump(app: Any, size: str, cache: Path) -> Path:
    """The application's vectorizing stage: the committed fixture at the
    test size, else Halide's dump (cached under build/apps/)."""
    if size == "test":
        fixture = ROOT / "tests" / "fixtures" / "apps" / f"{app.name}.stmt"
        if fixture.exists():
            return fixture
    path = cache / f"{app.name}-{size}" / "vectorizing.stmt"
    if not path.exists():
        from apps.run import dump

        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(dump(app, size))
    return path


def _argument_record(argument: Any, buffer: Any) -> dict[str, Any]:
    return {"name": argument.buffer, "type": str(argument.type.element()), "output": argument.output,
            "dims": [list(map(int, d)) for d in zip(buffer.mins, buffer.extents, buffer.strides)],
            "elements": int(buffer.data.size)}


def prepare_kernel(folder: Path, name: str, stmt_path: Path, store_in: dict[str, str], reference: bool,
                   inputs: dict[str, np.ndarray] | None = None) -> tuple[dict[str, Any], str]:
    """Compile one dump to CUDA; with ``reference``, run the original in the
    interpreter and write its inputs, outputs and per-element tolerances.
    Returns the manifest entry and the CUDA source."""
    import hardboiled
    from hardboiled.codegen.abi import kernel_signature
    from hardboiled.frontend.parse import parse_input
    from hardboiled.verify.compare import run_original_program, tolerance
    from hardboiled.verify.divergence import divergence
    from hardboiled.verify.inputs import make_buffers

    symbol = _symbol(name)
    result = hardboiled.compile(stmt_path, store_in=store_in, target="wmma", name=symbol)
    assert result.cuda is not None
    original = parse_input(stmt_path.read_text(), str(stmt_path)).ir
    rewritten = result.program
    arguments = kernel_signature(rewritten)
    if any(argument.scalar for argument in arguments):
        raise ValueError("a pipeline with scalar params: the runner passes buffers only")
    entry: dict[str, Any] = {"name": name, "entry": f"{symbol}_raw"}
    if reference:
        run = run_original_program(original, {}, 0, inputs, differing=divergence(original, rewritten))
        buffers = run.buffers
        kernel_dir = folder / name
        kernel_dir.mkdir(parents=True, exist_ok=True)
        entry["inputs"], entry["reference"], entry["tolerance"] = {}, {}, {}
        for argument in arguments:
            data = buffers[argument.buffer].data
            if argument.output:
                expected = run.expected[argument.buffer].data
                bound = None if run.bounds is None else run.bounds.get(argument.buffer)
                allowed = (np.where(np.isnan(bound), np.inf, 2.0 * bound) if bound is not None
                           else np.full(expected.shape, tolerance(argument.type, expected)))
                for kind, array in (("reference", _storable(expected)), ("tolerance", allowed)):
                    np.save(kernel_dir / f"{argument.buffer}.{kind}.npy", array)
                    entry[kind][argument.buffer] = f"{name}/{argument.buffer}.{kind}.npy"
            else:
                np.save(kernel_dir / f"{argument.buffer}.npy", _storable(data))
                entry["inputs"][argument.buffer] = f"{name}/{argument.buffer}.npy"
    else:
        buffers, _ = make_buffers(original, {}, PAPER_SEED)
    entry["arguments"] = [_argument_record(a, buffers[a.buffer]) for a in arguments]
    return entry, result.cuda


BASELINE_TARGET = "x86-64-linux-cuda-cuda_capability_80"
"""Halide's target for the baselines: its PTX for sm_80, which the driver
compiles for the GPU at the first launch (a warm-up launch)."""


def prepare_baseline(folder: Path, app: Any, size: str, entry: dict[str, Any]) -> None:
    """The application's CUDA-only schedule (``cuda_only``) compiled ahead
    of time by Halide into src/, without its runtime; ``entry`` learns its
    entry point and argument order (its inputs, then the kernel's output)."""
    import halide as h

    outputs, params = app.pipeline(schedule="cuda", **app.sizes[size])
    ours = [a["name"] for a in entry["arguments"] if a["output"]]
    order = [p.name() for p in params] + ours
    if len(outputs) != 1 or len(ours) != 1 or sorted(order) != sorted(a["name"] for a in entry["arguments"]):
        raise ValueError(f"the baseline's arguments {order} are not the kernel's")
    symbol = f"{_symbol(entry['name'])}_baseline"
    path = folder / "src" / f"{symbol}.o"
    with _halide_warnings() as warnings:
        h.Pipeline(outputs).compile_to_object(str(path), params, symbol, h.Target(BASELINE_TARGET + "-no_runtime"))
    failing = re.search(r"guaranteed to fail an assertion at runtime:\s*(.*)", "".join(warnings))
    if failing:
        path.unlink()
        raise ValueError(f"Halide says the CUDA-only baseline fails at its first launch: {failing.group(1)}")
    entry["baseline"] = {"entry": symbol, "order": order, "object": f"src/{symbol}.o"}


@contextlib.contextmanager
def _halide_warnings() -> Any:
    """What Halide prints meanwhile: the list yielded holds that text once
    the block ends, and it is printed again on standard error (nothing is
    hidden). Its Python binding prints warnings through sys.stdout; its C++
    half can write to file descriptors 1 and 2: all are caught."""
    said: list[str] = []
    libc = ctypes.CDLL(None)
    with tempfile.TemporaryFile() as sink, io.StringIO() as text:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
                yield said
        finally:
            libc.fflush(None)  # C stdio's buffers, before the descriptors go back
            for descriptor, copy in enumerate(saved, start=1):
                os.dup2(copy, descriptor)
                os.close(copy)
            sink.seek(0)
            said.extend((sink.read().decode(errors="replace"), text.getvalue()))
            sys.stderr.write("".join(said))


def _symbol(name: str) -> str:
    """A kernel's name as a C identifier (its entry points, its files)."""
    return re.sub(r"\W", "_", name)


def _storable(array: np.ndarray) -> np.ndarray:
    """An array numpy alone can load: bfloat16 as its bits."""
    return array.view(np.uint16) if array.dtype.name == "bfloat16" else array


def build_library(folder: Path, sources: list[Path], objects: list[Path], flags: list[str], nvcc: list[str],
                  jobs: int, output: Path) -> dict[str, str]:
    """Compile each CUDA source (the kernels', the runner's) in ``folder`` to
    an object and link those that compiled, with ``objects`` (the baselines'
    and Halide's runtime), into ``output``; returns the sources that did
    not compile, with nvcc's complaint. Runs here (prepare) and, when the
    prepared library does not load there, on the device."""
    from concurrent.futures import ThreadPoolExecutor

    failed: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="hb_device_") as tmp_name:
        tmp = Path(tmp_name)

        def compile_unit(source: Path) -> tuple[str, str | None]:
            proc = subprocess.run([*nvcc, *NVCC_ARCHES, *flags, "-c", "-Xcompiler", "-fPIC", str(folder / source),
                                   "-o", str(tmp / source.with_suffix(".o").name)], capture_output=True, text=True)
            return source.stem, None if proc.returncode == 0 else proc.stderr.strip()[-600:]

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for name, error in pool.map(compile_unit, sources):
                if error is not None:
                    failed[name] = error
        if RUNNER in failed:
            raise SystemExit(f"the runner does not compile: {failed[RUNNER]}")
        linked = [str(tmp / source.with_suffix(".o").name) for source in sources if source.stem not in failed]
        linked += [str(folder / o) for o in objects]
        proc = subprocess.run([*nvcc, *NVCC_ARCHES, "-shared", *linked, "-ldl", "-lpthread", "-o", str(output)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"linking {output.name} failed: {proc.stderr.strip()[-1000:]}")
    return failed


SPLIT_FLOAT32_VARIANT = "wmma_types-tf32tof32"


def _sweep_variants(count: int) -> list[tuple[str, Path, dict[str, str]]]:
    """``count`` WMMA variants of the listed sweep (tests/fixtures/sweep,
    committed), spread evenly over it, and float32 as tf32 parts (3xTF32,
    which only a GPU shows the real rounding of) among them."""
    fixtures = ROOT / "tests" / "fixtures" / "sweep"
    manifest = json.loads((fixtures / "MANIFEST.json").read_text())
    names = sorted(name for name, entry in manifest.items() if entry["spec"]["acc"] == "wmma"
                   and (fixtures / f"{name}.stmt").exists())
    step = max(1, len(names) // max(count, 1))
    chosen = names[::step][:count]
    if count and SPLIT_FLOAT32_VARIANT not in chosen:
        chosen[-1] = SPLIT_FLOAT32_VARIANT
    return [(f"sweep-{name}", fixtures / f"{name}.stmt", {"prod": "WMMAAccumulator"}) for name in chosen]


def prepare(out: Path, app_names: list[str] | None, sizes: list[str], sweep: int, jobs: int) -> dict[str, Any]:
    apps = _wmma_apps(app_names)
    if out.exists():
        shutil.rmtree(out)
    (out / "src").mkdir(parents=True)
    kernels: list[dict[str, Any]] = []
    sources: dict[str, str] = {}
    skipped: dict[str, str] = {}
    jobs_list: list[tuple[str, Path, dict[str, str], bool, Any, dict[str, Any]]] = []
    for name, app in apps.items():
        for size in sizes:
            inputs = app.verification_inputs(**app.sizes[size]) if app.verification_inputs and size == "test" else None
            jobs_list.append((f"{name}-{size}", _app_dump(app, size, ROOT / "build" / "apps"),
                              {acc: app.memory for acc in app.accumulators}, size == "test", inputs,
                              {"app": name, "size": size, "paper_speedup": _paper_speedup(app.paper),
                               "sizes": app.sizes[size], "application": app}))
    for name, path, store_in in _sweep_variants(sweep):
        jobs_list.append((name, path, store_in, True, None, {"app": name, "size": "test", "sweep": True}))
    for name, path, store_in, reference, inputs, extra in jobs_list:
        started = time.perf_counter()
        try:
            entry, source = prepare_kernel(out, name, path, store_in, reference, inputs)
        except Exception as error:  # noqa: BLE001 - every kernel that cannot be prepared is listed, with why
            skipped[name] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            print(f"{name}: skipped: {skipped[name]}", flush=True)
            continue
        application = extra.pop("application", None)
        entry.update(extra)
        if application is not None and application.cuda_baseline:
            try:
                prepare_baseline(out, application, entry["size"], entry)
            except Exception as error:  # noqa: BLE001 - the kernel runs without it; the reason is kept
                entry["baseline_missing"] = f"{type(error).__name__}: {error}"
        if not reference:
            entry["seed"] = PAPER_SEED
        kernels.append(entry)
        sources[name] = source
        print(f"{name}: prepared in {time.perf_counter() - started:.1f} s", flush=True)
    from hardboiled.codegen.cuda import GENERATED_CUDA_FLAGS
    from hardboiled.codegen.toolchain import find_nvcc

    objects = [Path(k["baseline"]["object"]) for k in kernels if k.get("baseline")]
    if objects:
        import halide as h

        h.compile_standalone_runtime(str(out / "src" / "halide_runtime.o"), h.Target(BASELINE_TARGET))
        objects.append(Path("src") / "halide_runtime.o")
    files = []
    for name, source in [*sources.items(), (RUNNER, RUNNER_CUDA)]:
        path = Path("src") / f"{_symbol(name)}.cu"
        (out / path).write_text(source)
        files.append(path)
    flags = ["-std=c++17", "-O3", *GENERATED_CUDA_FLAGS]
    failed = build_library(out, files, objects, flags, find_nvcc(), jobs, out / LIBRARY)
    for kernel in kernels:
        kernel["source"] = f"src/{_symbol(kernel['name'])}.cu"
    failed = {next(k["name"] for k in kernels if _symbol(k["name"]) == stem): error for stem, error in failed.items()}
    for name, error in failed.items():
        skipped[name] = f"nvcc: {error}"
    kernels = [k for k in kernels if k["name"] not in failed]
    manifest = {"library": LIBRARY, "kernels": kernels, "skipped": skipped, "nvcc_flags": flags,
                "objects": [str(o) for o in objects],
                "prepared": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(kernels)} kernels, {len(skipped)} skipped")
    _check_carry(out)
    return manifest


def _check_carry(out: Path) -> None:
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"{size / 2**20:.1f} MiB in {out}")
    if size > MAX_CARRY_BYTES:
        raise SystemExit(f"{out} holds {size / 2**20:.1f} MiB, over the {MAX_CARRY_BYTES >> 20} MiB "
                         "a device call carries")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("prepare", help="compile, link and write inputs and references (here)")
    p.add_argument("--out", type=Path, default=ROOT / "build" / "device")
    p.add_argument("--apps", nargs="*", help="the applications (default: every Tensor Core one)")
    p.add_argument("--sizes", nargs="*", default=["test", "paper"], choices=["test", "paper"])
    p.add_argument("--sweep", type=int, default=12, help="how many listed-sweep WMMA variants (test size)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--amx-sizes", default="512,1024",
                   help="matrix sizes of the AMX MatMuls timed on the host CPU ('' for none)")
    r = commands.add_parser("run", help="run, check and time every prepared kernel (there)")
    r.add_argument("--in", dest="folder", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--dry-run", action="store_true", help="everything but the GPU")
    r.add_argument("--quick", action="store_true", help="the paper sizes and five test-size checks")
    r.add_argument("--no-sanitizer", action="store_true")
    r.add_argument("--sizes", nargs="+", choices=["test", "paper"], help="only the kernels of these sizes")
    r.add_argument("--only", nargs="+", default=[], help="only the kernels of these names")
    r.add_argument("--tools", nargs="*", choices=SANITIZER_TOOLS, default=[],
                   help="the sanitizer's tools (default: all three; memcheck with --quick)")
    r.add_argument("--rebuild", action="store_true", help="build the library here from the prepared sources")
    r.add_argument("--warmup", type=int, default=10)
    r.add_argument("--repeat", type=int, default=50)
    c = commands.add_parser("check", help="run one kernel once (the sanitizer's child)")
    c.add_argument("--in", dest="folder", type=Path, required=True)
    c.add_argument("--library", type=Path, required=True)
    c.add_argument("--kernel", required=True)
    args = parser.parse_args(argv)
    if args.command != "prepare" and not (args.folder / MANIFEST).is_file():
        parser.error(f"{args.folder} holds no {MANIFEST}: make it with 'bench/device.py prepare --out {args.folder}'")
    if args.command == "prepare":
        prepare(args.out, args.apps, args.sizes, args.sweep, args.jobs)
        amx_sizes = tuple(int(n) for n in args.amx_sizes.split(",") if n)
        if amx_sizes:
            from amx_device import prepare_amx

            prepare_amx(args.out / AMX_FOLDER, amx_sizes)
            _check_carry(args.out)
        return 0
    if args.command == "check":
        return check_one(args.folder, args.library, args.kernel)
    if args.repeat < 50 and not args.dry_run:
        parser.error("--repeat must be at least 50: the median of fewer launches is noise")
    try:
        results = run(args.folder, args.out, dry_run=args.dry_run, quick=args.quick, sanitizer=not args.no_sanitizer,
                      warmup=args.warmup, repeat=args.repeat, rebuild=args.rebuild, sizes=args.sizes,
                      tools=tuple(args.tools), only=tuple(args.only))
    except DeviceError as error:
        print(f"bench/device.py: error: {error}", file=sys.stderr)
        return 3
    bad = [k["name"] for k in results["kernels"] if k.get("error") or k.get("matches_reference") is False
           or k.get("sanitizer_errors") or k.get("baseline_error")]
    print(f"{len(results['kernels'])} kernels in {results['seconds']} s; "
          f"{len(bad)} failed{': ' + ', '.join(bad) if bad else ''}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
