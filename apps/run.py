#!/usr/bin/env python3
"""Build the paper's applications end to end: Halide dump -> hardboiled -> CUDA or C.

    .venv/bin/python apps/run.py conv1d              # one application, test size
    .venv/bin/python apps/run.py conv1d --size paper # the paper's problem size
    .venv/bin/python apps/run.py --all               # every application
    .venv/bin/python apps/run.py --fixtures          # refresh tests/fixtures/apps (test size)
    .venv/bin/python apps/run.py --all --table docs/applications.md

For each application this writes, under build/apps/NAME-SIZE/:

* vectorizing.stmt: what Halide 21 prints after "Lowering after vectorizing:"
  for the pipeline and its paper schedule (a child process with
  HL_DEBUG_CODEGEN=2, stopped once that stage is printed);
* vectorizing.cu (or .c) and NAME.ptx (or NAME.so): hardboiled's output, from
  ``hardboiled compile --verify --emit cuda,report --build NAME.ptx``: every
  accelerator store is lowered, the rewritten pipeline is checked against the
  original in the reference interpreter (for AMX the C is run too), and nvcc
  (or the C compiler) builds it;
* vectorizing.report.json: the selection report.

It prints the intrinsics, the number of MMA instructions in the PTX, the compile
time and the peak memory of hardboiled's process.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from apps.common import App  # noqa: E402

MODULES = ("conv1d", "conv2d", "downsample", "upsample", "resize", "rec_filter", "dct_denoise", "dct",
           "conv_layer", "attention", "gemm", "amx_conv1d")
FIXTURES = ROOT / "tests" / "fixtures" / "apps"
DUMP_TIMEOUT_S = 600


def applications() -> dict[str, App]:
    found: dict[str, App] = {}
    for module_name in MODULES:
        module = importlib.import_module(f"apps.{module_name}")
        for value in vars(module).values():
            if isinstance(value, App):
                found[value.name] = value
    return found


def child(key: str, out_path: str) -> None:
    """In the child: build the pipeline and lower it (the dump goes to stderr)."""
    import halide as hl

    name, size = key.split("@")
    app = applications()[name]
    outputs, arguments = app.pipeline(**app.sizes[size])
    pipeline = hl.Pipeline(outputs) if len(outputs) > 1 else outputs[0]
    try:
        pipeline.compile_to_lowered_stmt(out_path, arguments, hl.StmtOutputFormat.Text, hl.Target(app.target))
    except hl.HalideError as e:
        print("HALIDE_ERROR: " + " ".join(str(e).split()), file=sys.stderr)
        sys.exit(3)


def dump(app: App, size: str) -> bytes:
    """Halide's vectorizing stage for the application at this size."""
    import gen_fixtures as gf

    with tempfile.TemporaryDirectory(prefix="hb_app_") as tmp:
        lines, rc, _ = gf.run_child(f"{app.name}@{size}", tmp, app.accelerator == "wmma", DUMP_TIMEOUT_S,
                                    script=__file__)
    stages = gf.split_stages(lines)
    if "vectorizing" not in stages:
        raise SystemExit(f"{app.name}: Halide failed (exit {rc}): {gf.error_text(lines)}")
    return stages["vectorizing"]


_MEASURED = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "sys.stderr.write('HB_PEAK_KIB=%d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "sys.exit(code)\n"
)


def verification_flags(app: App, size: str, out_dir: Path) -> list[str]:
    """--input flags for the application's own verification inputs (each
    written to OUT_DIR/NAME.npy), and --accept-unproven where it says why."""
    import numpy as np

    flags: list[str] = []
    if app.verification_inputs is not None:
        for name, array in sorted(app.verification_inputs(**app.sizes[size]).items()):
            path = out_dir / f"{name}.npy"
            np.save(path, array)
            flags += ["--input", f"{name}={path}"]
    return flags + (["--accept-unproven"] if app.unproven else [])


def tensorize(app: App, stmt: Path, out_dir: Path, verify: bool = True, size: str = "test") -> dict:
    """Run hardboiled on the dump; return the figures for the table."""
    cuda = app.accelerator == "wmma"
    code = out_dir / f"{stmt.stem}.{'cu' if cuda else 'c'}"  # -o DIR names outputs after the input
    binary = out_dir / f"{app.name}.{'ptx' if cuda else 'so'}"
    command = [str(ROOT / ".venv" / "bin" / "hardboiled"), "compile", str(stmt),
               *[arg for acc in app.accumulators for arg in ("--store-in", f"{acc}={app.memory}")],
               "--emit", f"{'cuda' if cuda else 'c'},report", "-o", str(out_dir), "--build", str(binary),
               "--no-cache"]  # measured, not replayed from the result cache
    if verify:
        command += ["--verify", *verification_flags(app, size, out_dir)]
    if verify and not cuda:
        command.append("--run")  # the C, on AMX or through the emulation header
    print("$ " + " ".join(shlex.quote(str(c)) for c in command), flush=True)
    started = time.perf_counter()
    # A fresh process runs the command, so that the peak memory is that of
    # hardboiled and its own children (egglog, nvcc) alone.
    result = subprocess.run([sys.executable, "-c", _MEASURED, *command], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    stderr, _, peak = result.stderr.rpartition("HB_PEAK_KIB=")
    peak_mib = int(peak) / 1024 if peak.strip().isdigit() else float("nan")
    sys.stderr.write(stderr)
    figures = dict(name=app.name, exit=result.returncode, seconds=round(seconds, 2),
                   peak_mib=round(peak_mib), verified=verify and result.returncode == 0)
    if result.returncode != 0:
        return figures
    source = code.read_text()
    figures["intrinsics"] = intrinsics(source, cuda)
    figures["mma"] = count_mma(source, cuda)
    if cuda:
        ptx = binary.read_text()
        figures["mma_in_ptx"] = len(re.findall(r"\bwmma\.mma\.sync|\bmma\.sync", ptx))
    return figures


def generated_part(code: str) -> str:
    """The generated code, without the AMX runtime inlined before it."""
    from hardboiled.codegen.c import split_amx_runtime

    return split_amx_runtime(code)[1]


def intrinsics(code: str, cuda: bool) -> list[str]:
    """The accelerator operations the generated code calls, with the fragment shapes."""
    if not cuda:
        return sorted(set(re.findall(r"\b(_tile_\w+)\(", generated_part(code))))
    calls = set(re.findall(r"wmma::(\w+_sync|fill_fragment)\(", code))
    shapes = {f"m{m}n{n}k{k}" for m, n, k in re.findall(r"wmma::fragment<wmma::\w+, (\d+), (\d+), (\d+)", code)}
    return sorted(shapes) + sorted(calls)


def run_app(app: App, size: str, out_root: Path, verify: bool) -> dict:
    out_dir = out_root / f"{app.name}-{size}"
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    stmt = out_dir / "vectorizing.stmt"
    stmt.write_bytes(dump(app, size))
    print(f"{app.name} ({size}): Halide dump in {time.perf_counter() - started:.1f} s -> {stmt}", flush=True)
    figures = tensorize(app, stmt, out_dir, verify, size)
    figures["size"] = size
    print(json.dumps(figures), flush=True)
    return figures


def count_mma(code: str, cuda: bool) -> int:
    """Tensor instructions in the generated source (a static figure)."""
    return code.count("wmma::mma_sync(") if cuda else len(re.findall(r"\b_tile_dp\w+\(", generated_part(code)))


def applications_table(apps: dict[str, App], rows: dict[str, dict[str, dict]]) -> str:
    """docs/applications.md: what each application lowers to and how long it takes."""
    gpu = "not measured: no GPU was lent to the session that wrote this table"
    lines = [
        "# Applications",
        "",
        "The paper's applications as Halide 21 pipelines with the paper's schedules (`apps/`), each",
        "tensorized end to end by `apps/run.py NAME` (`make app APP=NAME`): Halide's dump, `hardboiled",
        "compile --verify`, and nvcc (CUDA) or the C compiler (AMX). Regenerate this page with `make apps`.",
        "",
        "* **test**: the sizes the end-to-end tests use (tests/fixtures/apps); the rewrite is verified in the",
        "  reference interpreter (per-element error bounds) and, for AMX, the generated C is run.",
        "* **paper**: the paper's problem sizes (or the nearest one dump allows), compiled and built here;",
        "  `bench/verify_paper.py` verifies them in the interpreter (docs/performance.md has its table).",
        "* **MMA**: `mma_sync` calls (Tensor Cores) or `_tile_dp*` calls (AMX) in the generated source; **PTX",
        "  MMA**: `mma` instructions nvcc emitted for the test size.",
        "* **compile**: wall time of `hardboiled compile --no-cache` (selection, legalization, code",
        "  generation, nvcc; with `--verify` at the test size), and its peak memory with its children",
        "  (egglog, nvcc), on the machine that wrote the table (2 cores).",
        f"* **GPU time**: {gpu}.",
        "",
        "| application | what | intrinsics | MMA (src) | PTX MMA | test: compile | paper: compile "
        "| paper: peak MiB | GPU time |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, app in apps.items():
        test, paper = rows.get(name, {}).get("test", {}), rows.get(name, {}).get("paper", {})

        def cell(figures: dict, key: str, unit: str = "") -> str:
            if not figures:
                return "-"
            if figures.get("exit") != 0:
                return f"**failed (exit {figures.get('exit')})**"
            value = figures.get(key)
            return "-" if value is None else f"{value}{unit}"

        lines.append(f"| {name} | {app.description} | {', '.join(test.get('intrinsics', [])) or '-'} | "
                     f"{cell(test, 'mma')} | {cell(test, 'mma_in_ptx')} | {cell(test, 'seconds', ' s')} | "
                     f"{cell(paper, 'seconds', ' s')} | {cell(paper, 'peak_mib')} | - |")
    papers = [f"* {name}: {app.paper}" for name, app in apps.items() if app.paper]
    lines += ["", "The paper's GPU figures, for when a GPU is lent (RTX 4070 and A100 in the paper):", "", *papers, "",
              "What an H200 measured (2026-11-28) is in docs/performance.md, \"First run on",
              "a GPU\", and docs/device-results.json.", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="applications (default with --all: every one)")
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--size", default="test", choices=("test", "paper"))
    parser.add_argument("--out", default=str(ROOT / "build" / "apps"))
    parser.add_argument("--no-verify", action="store_true", help="skip the interpreter check (paper sizes)")
    parser.add_argument("--fixtures", action="store_true", help="write the test-size dumps to tests/fixtures/apps")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--table", metavar="FILE", help="run every size (test verified, paper built) and write the "
                        "applications table (docs/applications.md) to FILE")
    args = parser.parse_args(argv)
    apps = applications()
    if args.list:
        for name, app in apps.items():
            print(f"{name:14} {app.accelerator:5} {app.description}")
        return 0
    names = args.names or (list(apps) if args.all or args.fixtures else [])
    unknown = [n for n in names if n not in apps]
    if unknown or not names:
        parser.error(f"unknown application(s): {' '.join(unknown)}" if unknown else "name an application or --all")
    if args.fixtures:
        FIXTURES.mkdir(parents=True, exist_ok=True)
        for name in names:
            (FIXTURES / f"{name}.stmt").write_bytes(dump(apps[name], "test"))
            print(f"wrote {FIXTURES / name}.stmt", flush=True)
        return 0
    failed = 0
    if args.table:
        rows: dict[str, dict[str, dict]] = {}
        for name in names:
            for size in ("test", "paper"):
                figures = run_app(apps[name], size, Path(args.out), size == "test")
                rows.setdefault(name, {})[size] = figures
                failed += figures["exit"] != 0
        Path(args.table).write_text(applications_table({n: apps[n] for n in names}, rows))
        print(f"wrote {args.table}")
        return 1 if failed else 0
    for name in names:
        figures = run_app(apps[name], args.size, Path(args.out), not args.no_verify)
        failed += figures["exit"] != 0
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("HL_COLORS", "0")
    sys.exit(main(sys.argv[1:]))
