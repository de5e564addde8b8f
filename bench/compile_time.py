#!/usr/bin/env python3
"""Compile time (issue 19): P1, P2 and P3 side by side, and parsing speed.

* **P2**, a whole compile of the paper's single-tile bf16 AMX matmul
  (tests/fixtures/halide/amx_bf16_matmul_std_single/debug.log), against
  Halide 21 lowering the same pipeline (``compile_to_lowered_stmt``), both
  as whole processes; and the same compile answered by the cache.
  **P2s** is the same through a compile server (``hardboiled server
  start``, cli/server.py) that the measured processes hand their command to.
* **P1**, selection for conv1d against HardBoiled's own egglog programs for
  conv1d (upstream egglog's tests/hardboiled_conv1d_{32,128}.egg, shipped
  in bench/data/hardboiled_egglog with their licence): whole processes
  (theirs: start Python, import egglog, parse and run the program; ours:
  ``hardboiled compile``), and piecewise (theirs: parsing and running the
  program; ours: the select and legalization passes of ``--timing``, for
  the apps/conv1d pipeline with as many taps).
* **P3**, scaling: conv1d with 16 to 512 taps in its loop form (one tensor
  statement per 8-tap chunk inside a loop) and unrolled (one statement per
  chunk), wall time and peak memory of the whole compile, with the slope of
  log(time) against log(size) fitted over the sizes that finished.
* **A batch**: one command compiling a dozen AMX fixtures, and the same
  verified and run as C: seconds per input (the egglog child kept from
  input to input, and the original's interpretation shared by --verify and
  --run).
* **Tails**: the slowest variants of the listed sweep (GuardWithIf tails),
  each compiled alone.
* **Parsing**: MB/s of ``hardboiled parse`` on a large statement, and one
  stage read out of a 50 MB debug log.
* **Build**: P2 compiled and built into a shared library with gcc
  (``--build k.so``), natively (``--amx native``, where the CPU has AMX:
  elsewhere the kernel is still built, only never run) and under the
  emulation, against the same compile without the build: the build's
  seconds (hb_amx.h's native path parsed <immintrin.h> until the eleventh
  round, 0.22 s of gcc's 0.32 s).
* **Imports**: what each dependency a compile loads costs to import in a
  fresh process, beside what it needs loaded first (ml_dtypes beside
  numpy), so that a new release that is slow to import shows here (ml_dtypes
  0.7.0 took 0.46 s, a cold compile 0.64 s instead of 0.19 s).

The dumps come from Halide (the halide package, a dev dependency) and are
kept in bench/results/compile_time_dumps. ``--tree DIR`` measures another
checkout of hardboiled (``git worktree add /tmp/before REV``) with this
script's inputs, for before/after figures.

    .venv/bin/python bench/compile_time.py [--tree DIR] [--repeat N]
        [--parts imports,p1,p2,p2s,build,batch,tails,p3,p3j,parse] [--loop-taps 16,...] [--unrolled-taps 64,...,4096]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
RESULTS = ROOT / "bench" / "results"
DUMPS = RESULTS / "compile_time_dumps"
UPSTREAM = ROOT / "bench" / "data" / "hardboiled_egglog"
MATMUL_LOG = ROOT / "tests" / "fixtures" / "halide" / "amx_bf16_matmul_std_single" / "debug.log"
CONV1D_SIZE = dict(width=512, rows=4)
LOOP_TAPS = (16, 32, 64, 128, 256, 512)
UNROLLED_TAPS = (64, 128, 256, 512, 1024, 2048, 4096)
"""Up to 1,026 tensor statements (two rows per chunk of 8 taps)."""
TIMEOUT_S = 300.0

_MEASURED = (
    "import resource, subprocess, sys, time\n"
    "start = time.perf_counter()\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "seconds = time.perf_counter() - start\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "sys.stderr.write('\\nHB_MEASURED=%.6f,%d' % (seconds, peak))\n"
    "sys.exit(code)\n"
)
"""Runs the command and reports its own wall time and peak memory (the
wrapper's start-up is not counted)."""


# ------------------------------------------------------------------ processes
_NEUTRAL_DIR = tempfile.mkdtemp(prefix="hb-bench-cwd-")
"""Where measured processes run: ``python -m`` and ``-c`` put the working
directory first on sys.path, and this checkout's would shadow --tree's."""


def measure(command: list[str], env: dict[str, str] | None = None,
            timeout: float | None = None) -> dict[str, Any]:
    """Run ``command``; its wall time, peak memory (with its children),
    exit status and standard error."""
    timeout = TIMEOUT_S if timeout is None else timeout
    # A session of its own: a timeout kills the wrapper, the compile and its
    # egglog child, which would otherwise go on loading the machine.
    proc = subprocess.Popen([sys.executable, "-c", _MEASURED, *command], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=_NEUTRAL_DIR, start_new_session=True)
    try:
        _, stderr_text = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"seconds": timeout, "peak_mib": None, "code": "timeout", "stderr": ""}
    stderr, _, figures = stderr_text.rpartition("HB_MEASURED=")
    seconds, _, peak = figures.partition(",")
    return {"seconds": float(seconds), "peak_mib": int(peak) / 1024,
            "code": proc.returncode, "stderr": stderr}


def median_run(command: list[str], repeat: int, env: dict[str, str] | None = None) -> dict[str, Any]:
    runs = [measure(command, env) for _ in range(repeat)]
    failed = [r for r in runs if r["code"] != 0]
    if failed:
        return failed[0]
    best = dict(runs[0])
    best["seconds"] = statistics.median(r["seconds"] for r in runs)
    return best


CONSOLE_SCRIPT = "import sys\nfrom hardboiled.cli import run\nsys.argv[0] = 'hardboiled'\nsys.exit(run())\n"
"""What the installed ``hardboiled`` script runs (pip writes it so), for a
checkout that has no script of its own. Not ``python -m hardboiled``:
runpy's imports cost that 4 ms a start that the command does not pay
(the figures before the twelfth round were measured with ``-m``)."""


def hardboiled(tree: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """A whole ``hardboiled`` process running the checkout ``tree``, started
    as its console script starts it."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    return [sys.executable, "-c", CONSOLE_SCRIPT, *args], env


def outcome(run: dict[str, Any]) -> str:
    if run["code"] == 0:
        return "ok"
    if run["code"] == "timeout":
        return "timeout"
    text = run["stderr"]
    for marker in ("RecursionError", "MemoryError", "resource limit", "internal error"):
        if marker in text:
            return marker
    return f"exit {run['code']}"


# ------------------------------------------------------------------ Halide dumps
def _pipeline(key: str) -> tuple[Any, list[Any], str]:
    """The pipeline a dump key names, its arguments and its target."""
    from apps.common import AMX_TARGET, CUDA_TARGET

    if key == "matmul":
        import gen_fixtures

        out, args = gen_fixtures.CASES["amx_bf16_matmul_std_single"]["build"]()
        return out, args, AMX_TARGET
    if key == "conv2d_k32-paper":
        from apps.conv2d import APP_K32

        outputs, args = APP_K32.pipeline(**APP_K32.sizes["paper"])
        return outputs[0], args, CUDA_TARGET
    match = re.fullmatch(r"conv1d(-unrolled)?-k(\d+)", key)
    assert match, key
    from apps.conv1d import pipeline

    outputs, args = pipeline(taps=int(match.group(2)), unroll_taps=bool(match.group(1)), **CONV1D_SIZE)
    return outputs[0], args, CUDA_TARGET


def child(key: str, out_path: str) -> None:
    """In a child: lower the pipeline (the passes go to standard error)."""
    import halide as hl

    out, args, target = _pipeline(key)
    out.compile_to_lowered_stmt(out_path, args, hl.StmtOutputFormat.Text, hl.Target(target))


def dump(key: str) -> Path:
    """Halide's vectorizing stage for a key, made once and kept."""
    import gen_fixtures as gf

    path = DUMPS / f"{key}.stmt"
    if not path.exists():
        DUMPS.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            lines, code, _ = gf.run_child(key, tmp, True, TIMEOUT_S, script=__file__)
        stages = gf.split_stages(lines)
        if "vectorizing" not in stages:
            raise SystemExit(f"{key}: Halide failed (exit {code}): {gf.error_text(lines)}")
        path.write_bytes(stages["vectorizing"])
    return path


def halide_lowering() -> None:
    """In a child: build and lower the matmul, nothing printed (P2's baseline)."""
    import halide as hl

    out, args, target = _pipeline("matmul")
    with tempfile.TemporaryDirectory() as tmp:
        out.compile_to_lowered_stmt(str(Path(tmp) / "out.stmt"), args, hl.StmtOutputFormat.Text, hl.Target(target))


def egglog_program(path: str) -> None:
    """In a child: parse and run an egglog program; print the seconds."""
    from egglog.bindings import EGraph

    start = time.perf_counter()
    egraph = EGraph()
    egraph.run_program(*egraph.parse_program(Path(path).read_text()))
    print(f"HB_SECONDS={time.perf_counter() - start:.6f}")


# ------------------------------------------------------------------ the figures
def selection_seconds(stderr: str) -> float:
    """The select and legalization passes of a --timing report."""
    passes = dict((name, float(seconds)) for seconds, name in
                  re.findall(r"^\s+(\d+\.\d+) \(\s*[\d.]+%\)\s+(\S+)$", stderr, re.M))
    skip = {"parse", "report", "Total", "emit-egg", "verify", "emit-c", "emit-cuda", "build-c", "build-cuda", "run-c"}
    return sum(seconds for name, seconds in passes.items() if name not in skip)


def p2(tree: Path, repeat: int) -> dict[str, Any]:
    halide = median_run([sys.executable, __file__, "--halide-lowering"], repeat)
    with tempfile.TemporaryDirectory() as tmp:
        command, env = hardboiled(tree, "compile", str(MATMUL_LOG), "--no-cache", "-q", "-o", f"{tmp}/out.stmt")
        cold = median_run(command, repeat, env)
        cached, env = hardboiled(tree, "compile", str(MATMUL_LOG), "--cache-dir", f"{tmp}/cache", "-q", "-o",
                                 f"{tmp}/out.stmt")
        measure(cached, env)  # fills the cache
        # A whole-file hit: each run another command line (another output
        # name), which direct mode has no record of.
        hits = [measure([*cached[:-1], f"{tmp}/out{i}.stmt"], env)["seconds"] for i in range(repeat)]
        measure(cached, env)  # a hit, which leaves a direct-mode record (where the tree has one)
        direct = median_run(cached, repeat, env)
    hit = statistics.median(hits)
    return {"halide_s": halide["seconds"], "compile_s": cold["seconds"], "cache_hit_s": hit,
            "direct_s": direct["seconds"], "compile_ratio": cold["seconds"] / halide["seconds"],
            "cache_ratio": hit / halide["seconds"], "direct_ratio": direct["seconds"] / halide["seconds"]}


def build(tree: Path, repeat: int) -> dict[str, Any]:
    """P2's compile with ``--build`` to a shared library (gcc), natively and
    emulated, and without: the medians, and the build's part of each."""
    with tempfile.TemporaryDirectory() as tmp:
        plain, env = hardboiled(tree, "compile", str(MATMUL_LOG), "--no-cache", "-q", "--emit", "c",
                                "-o", f"{tmp}/k.c")
        env["CC"] = "gcc"
        figures: dict[str, Any] = {"compile_s": median_run(plain, repeat, env)["seconds"]}
        for mode in ("native", "emulate"):
            run = median_run([*plain, "--build", f"{tmp}/k.so", "--amx", mode], repeat, env)
            figures[f"{mode}_s"] = run["seconds"]
            figures[f"{mode}_outcome"] = outcome(run)
            figures[f"{mode}_build_s"] = run["seconds"] - figures["compile_s"]
    return figures


def p2_server(tree: Path, repeat: int, halide_s: float) -> dict[str, Any]:
    """P2 again, through a compile server (``hardboiled server start``):
    a cold compile once the server's waiting worker has its egglog child
    ready (after a pause), the same back to back, a whole-file cache hit
    and a direct-mode hit. A tree without the server says so.

    A process started after a pause is slower on a virtual machine (here
    ``python -c pass`` took 34 ms after two idle seconds, 13 ms back to
    back; Halide's lowering 163 against 129 ms): the compile after a pause
    is held against Halide's lowering after the same pause, run in turn
    with it; the rest against ``halide_s``, back to back as they are."""
    # A short directory: a Unix socket's path is at most 107 bytes.
    with tempfile.TemporaryDirectory(prefix="hbb-") as tmp:
        env = dict(os.environ, PYTHONPATH=str(tree), HARDBOILED_CACHE_DIR=f"{tmp}/c", HARDBOILED_NO_SERVER="0")
        server = [sys.executable, "-m", "hardboiled", "server"]
        started = subprocess.run([*server, "start"], env=env, cwd=_NEUTRAL_DIR, capture_output=True, text=True)
        if started.returncode != 0:
            return {"server": f"none (exit {started.returncode})"}
        try:
            cold, env = hardboiled(tree, "compile", str(MATMUL_LOG), "--no-cache", "-q", "-o", f"{tmp}/out.stmt")
            env.update(HARDBOILED_CACHE_DIR=f"{tmp}/c", HARDBOILED_NO_SERVER="0")
            rested, halide_rested = [], []
            for _ in range(repeat):
                time.sleep(3)  # the next worker starts its egglog child on the rule files meanwhile
                rested.append(measure(cold, env)["seconds"])
                time.sleep(3)
                halide_rested.append(measure([sys.executable, __file__, "--halide-lowering"])["seconds"])
            back_to_back = median_run(cold, repeat, env)["seconds"]
            cached = [*cold[:-4], "--cache-dir", f"{tmp}/cache", "-q", "-o", f"{tmp}/out.stmt"]
            measure(cached, env)
            hits = [measure([*cached[:-1], f"{tmp}/out{i}.stmt"], env)["seconds"] for i in range(repeat)]
            measure(cached, env)
            direct = median_run(cached, repeat, env)["seconds"]
        finally:
            subprocess.run([*server, "stop"], env=env, cwd=_NEUTRAL_DIR, capture_output=True)
    figures = {"compile_s": statistics.median(rested), "back_to_back_s": back_to_back,
               "cache_hit_s": statistics.median(hits), "direct_s": direct}
    ratios = {k.replace("_s", "_ratio"): v / halide_s for k, v in figures.items()}
    halide_rested_s = statistics.median(halide_rested)
    ratios["compile_ratio"] = figures["compile_s"] / halide_rested_s
    return {"server": "running", "halide_rested_s": halide_rested_s, **figures, **ratios}


BATCH_INPUTS = 12
"""How many AMX fixtures the batch figures compile in one command."""


def batch(tree: Path, repeat: int) -> dict[str, Any]:
    """One command compiling ``BATCH_INPUTS`` AMX fixtures (``-j 1``, no
    cache): the rewritten IR alone, then verified and run as C (which
    interprets each original program); seconds per input."""
    inputs = sorted(ROOT.glob("tests/fixtures/halide/amx_*/vectorizing.stmt"))[:BATCH_INPUTS]
    figures: dict[str, Any] = {"inputs": len(inputs)}
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in (("compile", ()), ("verify_run", ("--verify", "--run", "--emit", "c"))):
            command, env = hardboiled(tree, "compile", *map(str, inputs), "--no-cache", "-q", "-j", "1",
                                      *extra, "-o", f"{tmp}/{name}")
            run = median_run(command, repeat, env)
            figures[f"{name}_s"] = run["seconds"] / len(inputs)
            figures[f"{name}_outcome"] = outcome(run)
    return figures


TAIL_VARIANTS = (
    "amx_b-vnni_order-ba_K-80_tiles-1x4_init-cbuf_form-two_acc_acc_layout-xy_tail-guard_rem-8",
    "amx_order-ba_init-bias_col_tail-guard_rem-4",
    "amx_tail-guard_rem-4",
    "amx_a-col_order-ba_tiles-1x4_init-cbuf_epilogue-silu_loops-k_outer_acc_layout-xy",
)
"""The slowest variants of the listed sweep (bench/results/sweep.json):
GuardWithIf tails, whose edge tiles selection specializes, spills and
splits temporaries for, and a K-outer loop order."""


def tails(tree: Path, repeat: int) -> list[dict[str, Any]]:
    """Each of TAIL_VARIANTS compiled alone, whole processes (no cache,
    ``--allow-fallback``: its edge stores stay as Halide wrote them)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in TAIL_VARIANTS:
            command, env = hardboiled(tree, "compile", str(ROOT / "tests" / "fixtures" / "sweep" / f"{name}.stmt"),
                                      "--no-cache", "-q", "--allow-fallback", "-o", f"{tmp}/o.stmt")
            run = median_run(command, repeat, env)
            rows.append({"variant": name, "seconds": run["seconds"], "outcome": outcome(run)})
    return rows


def p1(tree: Path, repeat: int) -> list[dict[str, Any]]:
    rows = []
    for taps in (32, 128):
        program = UPSTREAM / f"hardboiled_conv1d_{taps}.egg"
        theirs = median_run([sys.executable, __file__, "--egglog-program", str(program)], max(1, repeat // 2))
        inside = re.search(r"HB_SECONDS=([\d.]+)", subprocess.run(
            [sys.executable, __file__, "--egglog-program", str(program)], capture_output=True, text=True,
            cwd=_NEUTRAL_DIR).stdout)
        with tempfile.TemporaryDirectory() as tmp:
            command, env = hardboiled(tree, "compile", str(dump(f"conv1d-k{taps}")), "--store-in",
                                      "conv=WMMAAccumulator", "--no-cache", "--timing", "-q", "-o", f"{tmp}/o.stmt")
            ours = median_run(command, repeat, env)
        ours_piece = selection_seconds(ours["stderr"])
        theirs_piece = float(inside.group(1)) if inside else math.nan
        rows.append({"taps": taps, "theirs_s": theirs["seconds"], "theirs_mib": theirs["peak_mib"],
                     "ours_s": ours["seconds"], "ours_mib": ours["peak_mib"],
                     "whole_ratio": ours["seconds"] / theirs["seconds"],
                     "theirs_piece_s": theirs_piece, "ours_piece_s": ours_piece,
                     "piece_ratio": ours_piece / theirs_piece})
    return rows


def _slope(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(seconds) on log(size); None when the
    sizes do not vary (the loop form has the same statements at every k)."""
    if len({x for x, _ in points}) < 2:
        return None
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def p3(tree: Path, loop_taps: tuple[int, ...] = LOOP_TAPS, unrolled_taps: tuple[int, ...] = UNROLLED_TAPS
       ) -> dict[str, Any]:
    curves = {}
    for form, taps_list in (("conv1d, loop form", loop_taps), ("conv1d, unrolled", unrolled_taps)):
        rows = []
        for taps in taps_list:
            key = f"conv1d-k{taps}" if "loop" in form else f"conv1d-unrolled-k{taps}"
            source = dump(key)
            statements = sum(1 for line in source.read_text().splitlines() if re.match(r"\s*conv\[", line))
            with tempfile.TemporaryDirectory() as tmp:
                command, env = hardboiled(tree, "compile", str(source), "--store-in", "conv=WMMAAccumulator",
                                          "--no-cache", "-q", "--emit", "cuda", "-o", f"{tmp}/o.cu")
                run = measure(command, env)
            rows.append({"taps": taps, "statements": statements, "seconds": run["seconds"],
                         "peak_mib": run["peak_mib"], "outcome": outcome(run)})
        finished = [(r["statements"], r["seconds"]) for r in rows if r["outcome"] == "ok"]
        curves[form] = {"rows": rows, "slope": _slope(finished)}
    source = dump("conv2d_k32-paper")
    with tempfile.TemporaryDirectory() as tmp:
        command, env = hardboiled(tree, "compile", str(source), "--store-in", "conv=WMMAAccumulator", "--no-cache",
                                  "-q", "--emit", "cuda", "-o", f"{tmp}/o.cu")
        run = measure(command, env)
    curves["conv2d_k32 (paper size)"] = {"rows": [{"taps": 32, "statements": sum(
        1 for line in source.read_text().splitlines() if re.match(r"\s*conv\[", line)), "seconds": run["seconds"],
        "peak_mib": run["peak_mib"], "outcome": outcome(run)}], "slope": None}
    return curves


def p3_side_by_side(tree: Path, taps: int) -> dict[str, Any]:
    """The largest unrolled conv1d again with ``-j 0`` (one job per core):
    one input, its scopes saturated side by side where the tree can."""
    source = dump(f"conv1d-unrolled-k{taps}")
    with tempfile.TemporaryDirectory() as tmp:
        command, env = hardboiled(tree, "compile", str(source), "--store-in", "conv=WMMAAccumulator", "--no-cache",
                                  "-q", "-j", "0", "--emit", "cuda", "-o", f"{tmp}/o.cu")
        run = measure(command, env)
    return {"taps": taps, "jobs": os.cpu_count(), "seconds": run["seconds"], "peak_mib": run["peak_mib"],
            "outcome": outcome(run)}


_PARSE_ALL = (
    "import sys, time\n"
    "from hardboiled.frontend.parse import parse_input\n"
    "texts = [open(path).read() for path in sys.argv[1:]]\n"
    "start = time.perf_counter()\n"
    "for text in texts:\n"
    "    parse_input(text)\n"
    "print('HB_SECONDS=%.6f' % (time.perf_counter() - start))\n"
)


IMPORTS = (
    ("numpy", ()), ("ml_dtypes", ("numpy",)), ("click", ()), ("rich.console", ()), ("lark", ()),
    ("egglog.bindings", ("hardboiled.select.eqsat_child",)), ("hardboiled.cli.commands", ("click",)),
    ("hardboiled.verify.rewrite_check", ("hardboiled.cli.commands",)),
)
"""Each module a compile may load (lark only where the fast reader hands
it a text, rich only on a terminal; egglog's bindings in the egglog child,
loaded as select/eqsat_child.py loads them, without egglog's own package),
with the modules imported before it is timed."""

_IMPORT_ONE = (
    "import sys, time\n"
    "module, before = sys.argv[1], sys.argv[2:]\n"
    "for name in before:\n"
    "    __import__(name)\n"
    "start = time.perf_counter()\n"
    "if module == 'egglog.bindings':\n"
    "    from hardboiled.select.eqsat_child import _load_bindings\n"
    "    _load_bindings()\n"
    "else:\n"
    "    __import__(module)\n"
    "print('HB_SECONDS=%.6f' % (time.perf_counter() - start))\n"
)


def imports(tree: Path, repeat: int) -> list[dict[str, Any]]:
    """Median seconds to import each of ``IMPORTS`` in a fresh process of
    ``tree`` (with this interpreter's packages)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    rows = []
    for module, before in IMPORTS:
        times = []
        for _ in range(repeat):
            proc = subprocess.run([sys.executable, "-c", _IMPORT_ONE, module, *before], capture_output=True,
                                  text=True, env=env, timeout=TIMEOUT_S, cwd=_NEUTRAL_DIR)
            match = re.search(r"HB_SECONDS=([\d.]+)", proc.stdout)
            if proc.returncode != 0 or match is None:
                raise SystemExit(f"importing {module} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
            times.append(float(match.group(1)))
        rows.append({"module": module, "after": list(before), "seconds": statistics.median(times)})
    return rows


def _print_imports(rows: list[dict[str, Any]]) -> None:
    from importlib.metadata import version

    print("\nImports, each in a fresh process (ms)")
    for r in rows:
        top = r["module"].split(".")[0]
        release = "" if top == "hardboiled" else f" {version(top)}"
        after = f" (after {', '.join(r['after'])})" if r["after"] else ""
        print(f"  {r['seconds'] * 1000:7.1f}  {r['module']}{release}{after}")


def real_dumps() -> tuple[list[Path], float]:
    """Every real dump at hand (the fixtures, and this benchmark's), and
    their megabytes."""
    dumps = sorted({*ROOT.glob("tests/fixtures/**/*.stmt"), *DUMPS.glob("*.stmt")})
    return dumps, sum(path.stat().st_size for path in dumps) / 1e6


def parse_seconds(tree: Path, dumps: list[Path]) -> tuple[float, int]:
    """Seconds to parse ``dumps`` in one process of ``tree`` (start-up not
    counted), and the process's exit status."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.run([sys.executable, "-c", _PARSE_ALL, *map(str, dumps)], capture_output=True, text=True,
                          env=env, timeout=TIMEOUT_S, cwd=_NEUTRAL_DIR)
    match = re.search(r"HB_SECONDS=([\d.]+)", proc.stdout)
    return (float(match.group(1)) if match else math.nan), proc.returncode


def parsing(tree: Path) -> dict[str, Any]:
    """MB/s of parsing every real dump at hand (the fixtures, and this
    benchmark's), in one process, start-up not counted; and one stage read
    out of a 50 MB debug log (the stages before it repeated), as a whole
    ``hardboiled parse`` process."""
    dumps, mb = real_dumps()
    seconds, returncode = parse_seconds(tree, dumps)
    with tempfile.TemporaryDirectory() as tmp:
        log = MATMUL_LOG.read_text()
        head, marker, rest = log.partition("Lowering after vectorizing:")
        first_stage = head.index("Lowering after ")
        prefix, stages = head[:first_stage], head[first_stage:]
        copies = max(1, (50 << 20) // len(stages))
        huge = Path(tmp) / "huge.log"
        huge.write_text(prefix + stages * copies + marker + rest)
        stage = measure(*hardboiled(tree, "parse", str(huge), "--stage", "vectorizing", "-o", f"{tmp}/v.stmt"))
        return {"files": len(dumps), "stmt_mb": mb, "parse_s": seconds, "mb_per_s": mb / seconds,
                "parse_outcome": "ok" if returncode == 0 else f"exit {returncode}",
                "log_mb": huge.stat().st_size / 1e6, "stage_s": stage["seconds"], "stage_outcome": outcome(stage)}


# ------------------------------------------------------------------ report
def _fmt(value: Any, unit: str = "", digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}{unit}" if isinstance(value, float) else f"{value}{unit}"


def _p2_parts(tree: Path, parts: set[str], args: argparse.Namespace, figures: dict[str, Any]) -> None:
    """P2, through a server (p2s), and built (build)."""
    if "p2" in parts:
        f = figures["p2"] = p2(tree, args.repeat)
        print("\nP2  whole compile of the AMX matmul dump, whole processes")
        print(f"  Halide's lowering {_fmt(f['halide_s'], ' s', 3)}; hardboiled compile {_fmt(f['compile_s'], ' s', 3)} "
              f"({_fmt(f['compile_ratio'], 'x')})")
        print(f"  cache hit {_fmt(f['cache_hit_s'], ' s', 3)} ({_fmt(f['cache_ratio'], 'x')}); the same command "
              f"line again (direct mode) {_fmt(f['direct_s'], ' s', 3)} ({_fmt(f['direct_ratio'], 'x')})")
    if "p2s" in parts:
        halide_s = figures["p2"]["halide_s"] if "p2" in figures else \
            median_run([sys.executable, __file__, "--halide-lowering"], args.repeat)["seconds"]
        f = figures["p2s"] = p2_server(tree, args.repeat, halide_s)
        print(f"\nP2  through a compile server ({f['server']}), against Halide's lowering {_fmt(halide_s, ' s', 3)} "
              f"({_fmt(f.get('halide_rested_s'), ' s', 3)} after the same pause as the compile's)")
        if f["server"] == "running":
            print(f"  compile after a pause {_fmt(f['compile_s'], ' s', 3)} ({_fmt(f['compile_ratio'], 'x')}), "
                  f"back to back "
                  f"{_fmt(f['back_to_back_s'], ' s', 3)} ({_fmt(f['back_to_back_ratio'], 'x')}); cache hit "
                  f"{_fmt(f['cache_hit_s'], ' s', 3)} ({_fmt(f['cache_hit_ratio'], 'x')}); direct mode "
                  f"{_fmt(f['direct_s'], ' s', 3)} ({_fmt(f['direct_ratio'], 'x')})")
    if "build" in parts:
        _print_build(figures.setdefault("build", build(tree, args.repeat)))


def _print_build(f: dict[str, Any]) -> None:
    print("\nBuild: P2 compiled to C and built into a shared library with gcc (--build), whole processes")
    print(f"  without the build {_fmt(f['compile_s'], ' s', 3)}; native AMX {_fmt(f['native_s'], ' s', 3)} "
          f"(the build {_fmt(f['native_build_s'], ' s', 3)}) {f['native_outcome']}; emulated "
          f"{_fmt(f['emulate_s'], ' s', 3)} (the build {_fmt(f['emulate_build_s'], ' s', 3)}) "
          f"{f['emulate_outcome']}")


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(int(taps) for taps in text.split(",") if taps)


def _scaling(tree: Path, parts: set[str], args: argparse.Namespace, figures: dict[str, Any]) -> None:
    """P3, and P3's largest unrolled size with -j 0."""
    if "p3" in parts:
        curves = figures["p3"] = p3(tree, _sizes(args.loop_taps), _sizes(args.unrolled_taps))
        print("\nP3  conv1d scaling, whole compile (--emit cuda)")
        for form, curve in curves.items():
            print(f"  {form} (slope of log time on log statements: {_fmt(curve['slope'])})")
            for r in curve["rows"]:
                print(f"    k={r['taps']:<4} {r['statements']:>4} statements  {_fmt(r['seconds'], ' s'):>9}  "
                      f"{_fmt(r['peak_mib'], ' MiB', 0):>9}  {r['outcome']}")
    if "p3j" in parts:
        f = figures["p3j"] = p3_side_by_side(tree, max(_sizes(args.unrolled_taps)))
        print(f"\nP3  conv1d unrolled, k={f['taps']}, with -j 0 ({f['jobs']} jobs): {_fmt(f['seconds'], ' s')}  "
              f"{_fmt(f['peak_mib'], ' MiB', 0)}  {f['outcome']}")


def main() -> int:
    global TIMEOUT_S
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the hardboiled checkout to measure")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure; medians are reported")
    parser.add_argument("--parts", default="imports,p2,p2s,build,batch,tails,p1,p3,p3j,parse")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--loop-taps", default=",".join(map(str, LOOP_TAPS)),
                        help="P3's conv1d loop-form sizes (taps), comma-separated")
    parser.add_argument("--unrolled-taps", default=",".join(map(str, UNROLLED_TAPS)),
                        help="P3's unrolled conv1d sizes (taps; 4096 is 1,026 statements), comma-separated")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per measured process")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--halide-lowering", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--egglog-program", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0
    if args.halide_lowering:
        halide_lowering()
        return 0
    if args.egglog_program:
        egglog_program(args.egglog_program)
        return 0
    TIMEOUT_S = args.timeout
    parts = set(args.parts.split(","))
    tree = args.tree.resolve()
    bytecode = any((tree / "hardboiled" / "__pycache__").glob("*.pyc"))
    probe = subprocess.run([sys.executable, "-c", "import hardboiled; print(hardboiled.__file__)"], cwd=_NEUTRAL_DIR,
                           env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True, text=True).stdout.strip()
    assert probe.startswith(str(tree)), f"measured processes would import {probe}, not {tree}"
    print(f"tree: {tree} (bytecode {'present' if bytecode else 'absent'}); {os.cpu_count()} cores; "
          f"medians of {args.repeat}")
    figures: dict[str, Any] = {"tree": str(tree), "bytecode": bytecode}
    if "imports" in parts:
        figures["imports"] = imports(tree, args.repeat)
        _print_imports(figures["imports"])
    _p2_parts(tree, parts, args, figures)
    if "batch" in parts:
        f = figures["batch"] = batch(tree, args.repeat)
        print(f"\nA batch: {f['inputs']} AMX fixtures in one command (-j 1, --no-cache), seconds per input")
        print(f"  compile {_fmt(f['compile_s'], ' s', 3)} {f['compile_outcome']}; --verify --run "
              f"{_fmt(f['verify_run_s'], ' s', 3)} {f['verify_run_outcome']}")
    if "tails" in parts:
        rows = figures["tails"] = tails(tree, args.repeat)
        print("\nThe slowest variants of the listed sweep, whole processes")
        for r in rows:
            print(f"  {_fmt(r['seconds'], ' s', 2):>8} {r['outcome']:<4} {r['variant']}")
    if "p1" in parts:
        rows = figures["p1"] = p1(tree, args.repeat)
        print("\nP1  conv1d selection against HardBoiled's egglog programs")
        print("  taps   theirs s   MiB    ours s   MiB   whole   | theirs run s  ours select s  piecewise")
        for r in rows:
            print(f"  {r['taps']:>4} {_fmt(r['theirs_s'], '', 3):>9} {_fmt(r['theirs_mib'], '', 0):>6} "
                  f"{_fmt(r['ours_s'], '', 3):>8} {_fmt(r['ours_mib'], '', 0):>5} "
                  f"{_fmt(r['whole_ratio'], 'x', 3):>7}   | "
                  f"{_fmt(r['theirs_piece_s'], '', 3):>12} {_fmt(r['ours_piece_s'], '', 3):>14} "
                  f"{_fmt(r['piece_ratio'], 'x', 3):>9}")
    _scaling(tree, parts, args, figures)
    if "parse" in parts:
        f = figures["parse"] = parsing(tree)
        print("\nParsing")
        print(f"  {f['files']} real dumps, {f['stmt_mb']:.1f} MB: {_fmt(f['parse_s'], ' s')} "
              f"({_fmt(f['mb_per_s'], ' MB/s')}) {f['parse_outcome']}")
        print(f"  vectorizing stage of a {f['log_mb']:.0f} MB log: {_fmt(f['stage_s'], ' s')} {f['stage_outcome']}")
    if args.json:
        import json

        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
