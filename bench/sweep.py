"""Selection generality: compile every variant of the schedule sweep.

tests/fixtures/sweep/ holds real Halide dumps of matmul-like pipelines, each a
base schedule changed in one or two dimensions (tools/gen_sweep.py makes them).
Every variant is compiled with verification in the reference interpreter; AMX
variants are also built and run (--run: natively where the CPU has AMX, through
the emulation header elsewhere), WMMA variants built to PTX with nvcc.

Usage:
    .venv/bin/python bench/sweep.py               # the whole sweep, writes docs/coverage.md
    .venv/bin/python bench/sweep.py -k init       # only variants whose name contains "init"
    .venv/bin/python bench/sweep.py --no-build    # verification only (no C run, no nvcc)

Outcomes: lowered (exit 0), limit (a miss explained as a hardware limit),
miss (exit 1), wrong (exit 5), error (exit 70) and other (any other exit).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from _common import ROOT, write_results

SWEEP = ROOT / "tests" / "fixtures" / "sweep"
COVERAGE = ROOT / "docs" / "coverage.md"
OUTCOMES = ("lowered", "limit", "miss", "wrong", "error", "other")
HARDWARE_LIMIT = "hardware limit:"
"""Misses whose first diagnostic starts a note with this are not counted as
selection failures: no instruction of the target can do what the schedule asks."""


def manifest() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = json.loads((SWEEP / "MANIFEST.json").read_text())
    return data


def issue_class(spec: dict[str, Any]) -> str:
    """The class of issue 13's list a variant belongs to (the first that
    applies), or "-" for the dimensions that were already covered."""
    amx = spec["acc"] == "amx"
    if amx:
        big = spec["M"] > 16 or spec["N"] > 16 or spec["chunk"] == "2x"
    else:
        big = spec["chunk"] in (32, 64) or spec["tiles"] != [1, 1]
    checks = [
        ("1 AMX dense single tile", amx and spec["form"] == "single"),
        ("2 AMX initial value", amx and spec["init"] != "zero"),
        ("3 several instructions per statement", big),
        ("4 WMMA types", not amx and spec["types"] not in ("f16>f32", "f16>f16", "bf16>f32")),
        ("5 AMX epilogue", amx and (spec["epilogue"] != "none" or spec["form"] == "two_acc")),
        ("6 AMX operand order B*A", amx and spec["order"] == "ba"),
        ("7 AMX transposed operands", amx and (spec["a"] != "row" or spec["b"] == "nk")),
        ("8 WMMA epilogue, init, widening", not amx and (spec["epilogue"] != "none" or spec["init"] != "zero"
                                                         or spec.get("widen") is not None)),
        ("symbolic sizes", spec["sizes"] != "const"),
    ]
    return next((label for label, applies in checks if applies), "-")


def compile_variant(name: str, build: bool) -> dict[str, Any]:
    """Compile one variant of the listed sweep in this process; return its outcome row."""
    entry = manifest()[name]
    row = compile_dump(SWEEP / f"{name}.stmt", entry["spec"], build)
    return dict(row, dimension=entry["dimension"], issue_class=issue_class(entry["spec"]),
                upstream=entry.get("upstream_amx"))


EDGE_NOTE = "a partial tile at the output's edge"


def lowered_with_edges_in_memory(rows: list[dict[str, Any]]) -> int:
    """The lowered variants whose partial tiles at the output's edge stay in
    ordinary memory (GuardWithIf tails; the whole tiles are tensorized)."""
    return sum(r["outcome"] == "lowered" and r.get("edge_copies_in_memory", 0) > 0 for r in rows)


def compile_dump(path: Path, spec: dict[str, Any], build: bool) -> dict[str, Any]:
    """Compile one sweep dump (its accumulator in the spec's memory) with
    --verify and --emit, and build what it emits; return its outcome row."""
    from hardboiled.pipeline.driver import compile_text
    from hardboiled.pipeline.options import CompileOptions
    from hardboiled.select.selector import SelectionOptions

    wmma = spec["acc"] == "wmma"
    accumulator = "prod" if wmma else "mm"
    store_in = {accumulator: "WMMAAccumulator"} if wmma else {}
    with tempfile.TemporaryDirectory(prefix="sweep_") as tmp:
        options = CompileOptions.from_flags(
            selection=SelectionOptions(store_in=store_in, cache_dir=None),
            emit=("cuda",) if wmma else ("c",), verify=True,
            run=build and not wmma,
            build_path=str(Path(tmp) / "kernel.ptx") if build and wmma else None)
        started = time.perf_counter()
        result = compile_text(path.name, path.read_bytes(), options)
        seconds = time.perf_counter() - started
    first = result.diagnostics[0] if result.diagnostics else None
    message = first.message if first else ""
    notes = list(first.notes) if first else []
    code = result.exit_code
    if code == 0:
        outcome = "lowered"
    elif code == 1:
        outcome = "limit" if any(n.startswith(HARDWARE_LIMIT) for n in notes) or \
            message.startswith(HARDWARE_LIMIT) else "miss"
    else:
        outcome = {5: "wrong", 70: "error"}.get(code, "other")
    # edge copies of an accumulator left in ordinary memory (select/specialize.py): a
    # lowered variant whose partial tiles at the output's edge are not tensorized
    edges = sum(d.severity == "warning" and any(EDGE_NOTE in n for n in d.notes) for d in result.diagnostics)
    return dict(name=path.stem, accelerator="wmma" if wmma else "amx",
                exit=code, outcome=outcome, message=message, notes=notes, seconds=round(seconds, 3),
                edge_copies_in_memory=edges)


def _rate(rows: list[dict[str, Any]]) -> str:
    hit = sum(r["outcome"] == "lowered" for r in rows)
    return f"{hit}/{len(rows)} ({100 * hit / len(rows):.0f}%)" if rows else "-"


def _table(rows: list[dict[str, Any]], key: str) -> list[str]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[row[key]].append(row)
    lines = [f"| {key} | lowered | " + " | ".join(OUTCOMES[1:]) + " |",
             "| --- | --- | " + " | ".join("---" for _ in OUTCOMES[1:]) + " |"]
    for group in sorted(groups):
        counts = Counter(r["outcome"] for r in groups[group])
        lines.append(f"| {group} | {_rate(groups[group])} | "
                     + " | ".join(str(counts[o]) for o in OUTCOMES[1:]) + " |")
    return lines


def coverage_markdown(rows: list[dict[str, Any]], built: bool) -> str:
    amx = [r for r in rows if r["accelerator"] == "amx"]
    wmma = [r for r in rows if r["accelerator"] == "wmma"]
    upstream = Counter((r["upstream"] or "").split(":")[0] for r in amx)
    ours_not_theirs = sum(r["outcome"] == "lowered" and r["upstream"] != "accepted" for r in amx)
    checked = ("AMX variants are built and run on seeded random inputs (natively where "
               "the CPU has AMX, else through the emulation header); WMMA variants are "
               "built to PTX with nvcc." if built else
               "This table was made with --no-build: verification only.")
    out = [
        "# Selection coverage: the schedule sweep",
        "",
        "Written by `bench/sweep.py` from the dumps in `tests/fixtures/sweep/`",
        "(`tools/gen_sweep.py` makes them with the halide 21.0.0 package). Every variant",
        "is a base matmul-like schedule changed in one or two dimensions. Each is",
        "compiled with `--verify` (the rewritten IR against the original in the",
        f"reference interpreter). {checked}",
        "",
        "Outcomes: **lowered** (every accelerator store became tile or fragment",
        "operations and all checks passed), **limit** (a miss that no instruction of",
        "the target can avoid; the diagnostic says which limit), **miss** (a selection",
        "miss, exit 1), **wrong** (verification mismatch, exit 5), **error** (internal",
        "error, exit 70), **other** (any other exit).",
        "",
        f"- All: {_rate(rows)} lowered; AMX {_rate(amx)}, WMMA {_rate(wmma)}.",
        f"- Wrong results: {sum(r['outcome'] == 'wrong' for r in rows)}; internal errors: "
        f"{sum(r['outcome'] == 'error' for r in rows)}.",
        f"- Lowered with the partial tiles at an output's edge left in ordinary memory (GuardWithIf "
        f"tails; the whole tiles are tensorized): "
        f"{lowered_with_edges_in_memory(rows)}.",
        f"- Upstream Halide's own AMX pass (target `x86-64-linux-avx512_sapphirerapids`) "
        f"on the {len(amx)} AMX variants: {upstream['accepted']} accepted, "
        f"{upstream['refused']} refused, {upstream['ignored']} left the accumulator alone. "
        f"hardboiled lowers {ours_not_theirs} variants that upstream does not.",
        "",
        "## By class of issue 13",
        "",
        *_table(rows, "issue_class"),
        "",
        "## By dimension",
        "",
        "### AMX",
        "",
        *_table(amx, "dimension"),
        "",
        "### WMMA",
        "",
        *_table(wmma, "dimension"),
        "",
        "## Every variant that is not lowered",
        "",
        "| variant | outcome | first diagnostic |",
        "| --- | --- | --- |",
    ]
    for row in rows:
        if row["outcome"] != "lowered":
            text = " ".join((row["message"] + " " + " ".join(row["notes"][:1])).split())
            out.append(f"| {row['name']} | {row['outcome']} | {text[:300].replace('|', '/')} |")
    out += ["", "## Every variant", "", "| variant | dimension | outcome | upstream AMX |",
            "| --- | --- | --- | --- |"]
    for row in rows:
        up = (row["upstream"] or "n/a").split(":")[0]
        out.append(f"| {row['name']} | {row['dimension']} | {row['outcome']} | {up} |")
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", dest="pattern", default="", help="only variants whose name contains this")
    parser.add_argument("--no-build", action="store_true", help="verification only")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    names = [n for n in manifest() if args.pattern in n and "halide_error" not in manifest()[n]]
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(compile_variant, names, [not args.no_build] * len(names)))
    elapsed = time.perf_counter() - started
    for row in rows:
        if row["outcome"] != "lowered":
            text = " ".join(row["message"].split())[:150]
            print(f"{row['outcome']:8s} {row['name']:55s} {text}")
    amx = [r for r in rows if r["accelerator"] == "amx"]
    wmma = [r for r in rows if r["accelerator"] == "wmma"]
    counts = Counter(r["outcome"] for r in rows)
    print(f"\n{len(rows)} variants in {elapsed:.0f} s: lowered {_rate(rows)} "
          f"(AMX {_rate(amx)}, WMMA {_rate(wmma)}); "
          + ", ".join(f"{o} {counts[o]}" for o in OUTCOMES[1:]))
    write_results("sweep.json", rows)
    if not args.pattern:
        COVERAGE.write_text(coverage_markdown(rows, built=not args.no_build))
        print(f"wrote {COVERAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
