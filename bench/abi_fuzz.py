#!/usr/bin/env python3
"""ABI fuzz (issue 33): random ``halide_buffer_t``s through both entry
points of every fixture's generated C kernel, built with AddressSanitizer
and UndefinedBehaviorSanitizer.

Each call describes every buffer argument with a seeded draw: the layout
the verifier would use, then one change (strides of either sign, in any
order or padded; mins shifted near int32's ends; extents zero, negative,
short or huge; strides that overflow int32 indexing; a NULL host or buffer;
a wrong type or dimension count; two buffers over the same memory). Memory
is malloc'd to exactly the span the buffer claims, so that ASan sees any
access past it; a claim too large to allocate (over 64 MB) gets 64 bytes
and must be refused. A call passes when it returns 0 or a documented code
(a halide_error_code_t from ``NAME``; -N for the N-th check, or one of
``RAW_FAILURES``, from ``NAME_raw``), refuses what it must, and the
sanitizers say nothing.

    .venv/bin/python bench/abi_fuzz.py [--calls 10000] [--seed 1] [--json FILE]

Calls run in child processes with libasan preloaded; a child that a
sanitizer stops is reported with the call that stopped it, and the run
goes on from the next call.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import pickle
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HARDBOILED = ROOT / ".venv" / "bin" / "hardboiled"
FIXTURES = ROOT / "tests" / "fixtures" / "halide"
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
MAX_ALLOCATION = 64 << 20
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1

LAYOUT_CHANGES = ("none", "reversed", "negative_stride", "padded", "min_shift", "alias")
"""Layouts a kernel must compute with (or refuse with a documented code)."""
REFUSAL_CHANGES = ("min_extreme", "extent_zero", "extent_negative", "extent_short", "extent_huge",
                   "stride_overflow", "null_host", "null_buffer", "wrong_type", "wrong_dimensions")
"""Buffers Halide's checks (or the entry points' own) should refuse."""


def build(case: str, directory: Path) -> tuple[Path, list[Any], dict[str, Any], list[Any]] | None:
    """The fixture's kernel as an ASan/UBSan shared library, its
    signature and verification buffers (None when it emits no C)."""
    from hardboiled.codegen.abi import kernel_signature
    from hardboiled.frontend.parse import parse_input
    from hardboiled.ir.buffers import scalar_params
    from hardboiled.verify.inputs import make_buffers, scalar_draws

    source = FIXTURES / case / "vectorizing.stmt"
    out = directory / f"{case}.c"
    result = subprocess.run([str(HARDBOILED), "compile", str(source), "--no-cache", "-q", "--emit", "c",
                             "-o", str(out), "--name", "k"], capture_output=True, timeout=300)
    if result.returncode != 0:
        return None
    library = directory / f"{case}.so"
    compiled = subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-g", *SANITIZE, "-DHB_AMX_EMULATE",
                               "-ffp-contract=off", str(out), "-o", str(library), "-lm"],
                              capture_output=True, timeout=300)
    if compiled.returncode != 0:
        raise RuntimeError(f"{case}: gcc failed: {compiled.stderr.decode()[-500:]}")
    program = parse_input(source.read_text()).ir
    arguments = kernel_signature(program)
    buffers, _ = make_buffers(program, {}, 1)
    layouts = {name: (b.type, b.mins, b.extents, b.strides) for name, b in buffers.items()}
    scalars = next(scalar_draws(scalar_params(program), {}, 1))
    codes = [int(n) for n in re.findall(r"return -(\d+);", out.read_text()) if int(n) < 100000]
    checks = max(codes, default=0)
    return library, arguments, {"layouts": layouts, "scalars": scalars, "checks": checks}, []


def _span(extents: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int] | None:
    """The lowest and highest element offsets a buffer claims (None: none)."""
    low = high = 0
    for extent, stride in zip(extents, strides):
        if extent <= 0:
            return None
        reach = (extent - 1) * stride
        low, high = low + min(0, reach), high + max(0, reach)
    return low, high


def _indexes_past_int32(mins: tuple[int, ...], extents: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    span = sum((e - 1) * abs(s) for e, s in zip(extents, strides) if e > 0)
    elements = 1
    for e in extents:
        elements *= max(e, 0)
    return span > INT32_MAX or elements > INT32_MAX or any(m + e - 1 > INT32_MAX for m, e in zip(mins, extents))


def _change(rng: random.Random, change: str, mins: list[int], extents: list[int], strides: list[int]) -> None:
    """Apply one change to a buffer's fields, in place."""
    dims = len(extents)
    d = rng.randrange(dims) if dims else 0
    if change == "reversed" and dims > 1:
        order = list(range(dims))
        rng.shuffle(order)
        dense = 1
        for i in order:
            strides[i] = dense
            dense *= max(extents[i], 1)
    elif change == "negative_stride" and dims:
        strides[d] = -strides[d]
    elif change == "padded" and dims > 1:
        strides[1:] = [s + rng.randrange(1, 9) * strides[0] * (i + 1) for i, s in enumerate(strides[1:])]
    elif change == "min_shift" and dims:
        mins[d] += rng.choice((-1, 1)) * rng.randrange(1, 1 << rng.randrange(1, 20))
    elif change == "min_extreme" and dims:
        mins[d] = rng.choice((INT32_MIN, INT32_MAX, INT32_MAX - extents[d] + 1, -(1 << 30)))
    elif change == "extent_zero" and dims:
        extents[d] = 0
    elif change == "extent_negative" and dims:
        extents[d] = -rng.randrange(1, 1 << 16)
    elif change == "extent_short" and dims:
        extents[d] = max(0, extents[d] - rng.randrange(1, 17))
    elif change == "extent_huge" and dims:
        extents[d] = rng.choice((1 << 20, 1 << 28, INT32_MAX))
    elif change == "stride_overflow" and dims:
        strides[d] = rng.choice((1 << 24, 1 << 30, INT32_MAX, -(1 << 30)))


def draw_call(rng: random.Random, spec: dict[str, Any], arguments: list[Any]) -> dict[str, Any]:
    """One call: an entry point, and for each buffer argument its fields,
    element bytes and whether the call must refuse it."""
    from hardboiled.codegen.abi import HALIDE_TYPE_CODES

    call: dict[str, Any] = {"entry": rng.choice(("k", "k_raw")), "buffers": {}, "must_refuse": False}
    # Three calls in five change only layouts; the others also give one
    # buffer something to refuse.
    refused = rng.choice([a.buffer for a in arguments if not a.scalar] or [None]) if rng.random() < 0.4 else None
    for argument in arguments:
        if argument.scalar:
            continue
        t, mins, extents, strides = spec["layouts"][argument.buffer]
        mins, extents, strides = list(mins), list(extents), list(strides)
        code, bits, dims = HALIDE_TYPE_CODES[argument.type.code], argument.type.bits, len(extents)
        change = rng.choice(REFUSAL_CHANGES if argument.buffer == refused else LAYOUT_CHANGES)
        if call["entry"] == "k_raw" and change in ("null_buffer", "wrong_type", "wrong_dimensions", "null_host"):
            change = "none"  # NAME_raw takes no struct; a NULL pointer is the caller's promise broken
        _change(rng, change, mins, extents, strides)
        mins = [max(INT32_MIN, min(INT32_MAX, m)) for m in mins]
        buffer = {"mins": mins, "extents": extents, "strides": strides, "code": code, "bits": bits,
                  "dims": dims, "bytes": max(1, bits // 8), "change": change, "alias": None}
        if change == "wrong_type":
            buffer["bits"] = {8: 16, 16: 32, 32: 8, 64: 32}.get(bits, 8)
        if change == "wrong_dimensions":
            buffer["dims"] = dims + rng.choice((-1, 1)) if dims else 1
        span = _span(tuple(extents), tuple(strides))
        too_large = span is not None and (span[1] - span[0] + 1) * buffer["bytes"] > MAX_ALLOCATION
        if too_large:
            buffer["lie"] = True
            if not (_indexes_past_int32(tuple(mins), tuple(extents), tuple(strides)) or change in (
                    "extent_negative",)):
                # A claim Halide accepts but this harness cannot back with
                # memory: keep the layout the verifier uses instead.
                t, mins0, extents0, strides0 = spec["layouts"][argument.buffer]
                buffer.update(mins=list(mins0), extents=list(extents0), strides=list(strides0), lie=False,
                              change="none")
            else:
                call["must_refuse"] = True
        call["buffers"][argument.buffer] = buffer
    names = list(call["buffers"])
    for name in names:
        if call["buffers"][name]["change"] == "alias" and len(names) > 1:
            other = rng.choice([n for n in names if n != name])
            if call["buffers"][other]["change"] != "alias":
                call["buffers"][name]["alias"] = other
    return call


def run_calls(request: Path) -> None:
    """The child: make each call, print its outcome as one JSON line."""
    from hardboiled.verify.run import HalideBuffer, HalideDimension, HalideType, scalar_argument

    library, arguments, spec, calls, start, short_by = pickle.loads(request.read_bytes())
    lib = ctypes.CDLL(str(library))
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    for index in range(start, len(calls)):
        call = calls[index]
        print(json.dumps({"start": index}), flush=True)
        blocks, hosts = [], {}
        extent: dict[str, tuple[int, int]] = {}  # each buffer's (lowest byte, bytes) it claims
        for name, b in call["buffers"].items():
            span = _span(tuple(b["extents"]), tuple(b["strides"]))
            if b.get("lie") or span is None:
                extent[name] = (0, 64)
            else:
                extent[name] = (span[0] * b["bytes"], (span[1] - span[0] + 1) * b["bytes"])
        # An aliased buffer shares one block with another, as large as
        # either claims, both starting at its first byte.
        roots = {name: b["alias"] or name for name, b in call["buffers"].items()}
        for root in set(roots.values()):
            size = max(extent[name][1] for name in roots if roots[name] == root) - short_by
            block = libc.malloc(max(size, 1))
            ctypes.memset(block, 0x3c, max(size, 1))
            blocks.append(block)
            for name in roots:
                if roots[name] == root:
                    hosts[name] = block - extent[name][0]
        args: list[Any] = []
        keep: list[Any] = []
        for argument in arguments:
            if argument.scalar:
                args.append(scalar_argument(argument, spec["scalars"][argument.buffer]))
                continue
            b = call["buffers"][argument.buffer]
            if call["entry"] == "k_raw":
                args.append(ctypes.c_void_p(hosts[argument.buffer]))
                for d in range(argument.dimensions):
                    args.extend(ctypes.c_int32(v) for v in (b["mins"][d], b["extents"][d], b["strides"][d]))
                continue
            if b["change"] == "null_buffer":
                args.append(None)
                continue
            dims = (HalideDimension * max(1, b["dims"]))(*(
                HalideDimension(b["mins"][d], b["extents"][d], b["strides"][d], 0)
                for d in range(min(b["dims"], len(b["mins"])))))
            host = None if b["change"] == "null_host" else hosts[argument.buffer]
            struct = HalideBuffer(0, None, host, 0, HalideType(b["code"], b["bits"], 1), b["dims"], dims, None)
            keep += [dims, struct]
            args.append(ctypes.byref(struct))
        function = getattr(lib, call["entry"])
        function.restype = ctypes.c_int
        status = int(function(*args))
        for block in blocks:
            libc.free(block)
        print(json.dumps({"done": index, "status": status}), flush=True)


def _allowed(call: dict[str, Any], status: int, spec: dict[str, Any]) -> bool:
    from hardboiled.codegen.abi import HALIDE_ERROR_CODES, RAW_FAILURES

    if call["must_refuse"] and status == 0:
        return False
    if call["entry"] == "k":
        return status == 0 or status in HALIDE_ERROR_CODES.values()
    return status == 0 or status in RAW_FAILURES or -max(spec["checks"], 200) <= status < 0


def fuzz_kernel(case: str, library: Path, arguments: list[Any], spec: dict[str, Any], calls: list[dict[str, Any]],
                directory: Path, short_by: int = 0, max_failures: int | None = None) -> dict[str, Any]:
    """Run ``calls`` in children under the sanitizers, a new child after
    each one a sanitizer stops; with ``max_failures``, stop once that many
    calls failed (the rest are not run: ``done`` says how many were)."""
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:allocator_may_return_null=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
               LD_PRELOAD=subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                                         text=True).stdout.strip())
    statuses: dict[int, int] = {}
    failures: list[dict[str, Any]] = []
    start = 0
    while start < len(calls) and (max_failures is None or len(failures) < max_failures):
        request = directory / f"{case}.request"
        request.write_bytes(pickle.dumps((library, arguments, spec, calls, start, short_by)))
        proc = subprocess.run([sys.executable, __file__, "--child", str(request)], capture_output=True, text=True,
                              env=env, timeout=1800)
        last = start
        for line in proc.stdout.splitlines():
            record = json.loads(line)
            if "start" in record:
                last = record["start"]
            else:
                statuses[record["status"]] = statuses.get(record["status"], 0) + 1
                if not _allowed(calls[record["done"]], record["status"], spec):
                    failures.append({"case": case, "call": calls[record["done"]], "status": record["status"]})
                last = record["done"] + 1
        if proc.returncode != 0:
            said = re.search(r"(ERROR: AddressSanitizer: [\w-]+|runtime error: [^\n]*)", proc.stderr)
            failures.append({"case": case, "crash": proc.returncode,
                             "what": said.group(1) if said else proc.stderr.strip()[-200:],
                             "call": calls[last] if last < len(calls) else None, "report": proc.stderr[-3000:]})
            last += 1
        start = max(last, start + 1) if proc.returncode != 0 else len(calls)
    return {"statuses": statuses, "failures": failures, "done": min(start, len(calls))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--cases", help="only these fixtures (names separated by commas)")
    parser.add_argument("--short-by", type=int, default=0,
                        help="self-test: back every buffer with this many bytes fewer than it claims, so that "
                        "the sanitizers must stop calls that compute")
    parser.add_argument("--max-failures", type=int,
                        help="stop each kernel's calls once this many failed (a self-test needs only a few)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_calls(args.child)
        return 0
    if shutil.which("gcc") is None:
        print("abi_fuzz: needs gcc with libasan")
        return 2
    begin = time.perf_counter()
    cases = sorted(p.name for p in FIXTURES.iterdir() if (p / "vectorizing.stmt").exists())
    if args.cases:
        cases = [case for case in cases if case in args.cases.split(",")]
    rng = random.Random(args.seed)
    totals: dict[str, Any] = {"calls": 0, "kernels": 0, "failures": [], "statuses": {}}
    with tempfile.TemporaryDirectory(prefix="hardboiled-abi-fuzz-") as tmp:
        built = []
        for case in cases:
            made = build(case, Path(tmp))
            if made is not None:
                built.append((case, made))
        per_kernel = -(-args.calls // max(1, len(built)))
        for case, (library, arguments, spec, _) in built:
            calls = [draw_call(rng, spec, arguments) for _ in range(per_kernel)]
            outcome = fuzz_kernel(case, library, arguments, spec, calls, Path(tmp), args.short_by, args.max_failures)
            totals["calls"] += outcome["done"]
            totals["kernels"] += 1
            totals["failures"] += outcome["failures"]
            for status, count in outcome["statuses"].items():
                totals["statuses"][status] = totals["statuses"].get(status, 0) + count
            stopped = f" (stopped after {outcome['done']} of {len(calls)})" if outcome["done"] < len(calls) else ""
            print(f"  {case:48} {outcome['done']} calls, {len(outcome['failures'])} failures{stopped}", flush=True)
    seconds = time.perf_counter() - begin
    crashes = sum(1 for f in totals["failures"] if "crash" in f)
    print(f"{totals['calls']} calls over {totals['kernels']} kernels (seed {args.seed}) in {seconds:.0f} s: "
          f"{len(totals['failures'])} failures ({crashes} stopped by a sanitizer or a signal)")
    print("statuses: " + ", ".join(f"{s}: {n}" for s, n in sorted(totals["statuses"].items())))
    for failure in totals["failures"][:10]:
        print(json.dumps(failure, default=str)[:3000])
    if args.json:
        args.json.write_text(json.dumps(totals, indent=1, default=str))
    return 1 if totals["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
