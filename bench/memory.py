#!/usr/bin/env python3
"""Memory per input byte (issue 18, item 9): peak memory of whole
``hardboiled`` processes, less that of the same command on the small dump
the large input was made from, divided by the input's size.

Inputs, all from real Halide dumps:

* **string literal**: the vectorizing stage of
  tests/fixtures/halide/cpu_strings_and_types with one string literal of
  its assertions made 4 MB long (the review: 845 B per byte, from the
  lexer's regular expression);
* **debug log**: the matmul's whole HL_DEBUG_CODEGEN=2 log with its stages
  repeated to 50 MB, reading the vectorizing stage;
* **unrolled conv1d**: apps/conv1d with 512, 1,024 and 4,096 taps, one
  statement per chunk of 8 taps (bench/compile_time.py makes these dumps
  with Halide, and keeps them in bench/results/compile_time_dumps);
* **every fixture**: each committed dump, one process each; the largest
  figure is shown.

Each is measured for ``parse`` and for ``compile`` (the whole pipeline:
selection, legalization and the IR written). The goal is under 10 B per
input byte.

    .venv/bin/python bench/memory.py [--tree DIR] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from compile_time import MATMUL_LOG, dump, hardboiled, measure, outcome  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
STRINGS = FIXTURES / "halide" / "cpu_strings_and_types" / "vectorizing.stmt"
GOAL_BYTES_PER_BYTE = 10.0


def string_literal_dump(directory: Path, megabytes: int = 4) -> Path:
    text = STRINGS.read_text()
    literal = '"Input buffer A"'
    assert literal in text
    path = directory / "long_string.stmt"
    path.write_text(text.replace(literal, '"' + "x" * (megabytes << 20) + '"', 1))
    return path


def repeated_log(directory: Path, megabytes: int = 50) -> Path:
    log = MATMUL_LOG.read_text()
    head, marker, rest = log.partition("Lowering after vectorizing:")
    first_stage = head.index("Lowering after ")
    prefix, stages = head[:first_stage], head[first_stage:]
    path = directory / "huge.log"
    path.write_text(prefix + stages * max(1, (megabytes << 20) // len(stages)) + marker + rest)
    return path


def per_byte(tree: Path, command: str, large: Path, small: Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """Peak memory of ``hardboiled COMMAND large`` less that of the same on
    ``small``, per byte of ``large``."""
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, path in (("large", large), ("small", small)):
            args = [command, str(path), *extra, "-o", f"{tmp}/out"]
            if command == "compile":
                args += ["--no-cache", "-q"]
            runs[label] = measure(*hardboiled(tree, *args))
    big, base = runs["large"], runs["small"]
    size = large.stat().st_size
    ok = big["code"] == 0 and base["code"] == 0
    return {"input": large.name, "command": command, "mb": size / 1e6, "peak_mib": big["peak_mib"],
            "base_mib": base["peak_mib"], "seconds": big["seconds"],
            "bytes_per_byte": (big["peak_mib"] - base["peak_mib"]) * (1 << 20) / size if ok else None,
            "outcome": outcome(big) if big["code"] else outcome(base)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--quick", action="store_true", help="leave out the conv1d dumps Halide has to make")
    args = parser.parse_args()
    tree = args.tree.resolve()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        strings = string_literal_dump(directory)
        log = repeated_log(directory)
        for command in ("parse", "compile"):
            rows.append(per_byte(tree, command, strings, STRINGS))
            rows.append(per_byte(tree, command, log, MATMUL_LOG))
        if not args.quick:
            small = dump("conv1d-unrolled-k64")
            for taps in (512, 1024, 4096):
                large = dump(f"conv1d-unrolled-k{taps}")
                rows.append(per_byte(tree, "parse", large, small))
                rows.append(per_byte(tree, "compile", large, small, ("--store-in", "conv=WMMAAccumulator")))
    print(f"Memory per input byte (peak less the same command's on the small dump; goal < {GOAL_BYTES_PER_BYTE:g})")
    print(f"  {'input':<34} {'command':<8} {'MB':>7} {'peak MiB':>9} {'base MiB':>9} {'s':>7} {'B/byte':>7}")
    for row in rows:
        figure = "-" if row["bytes_per_byte"] is None else f"{row['bytes_per_byte']:.1f}"
        print(f"  {row['input']:<34} {row['command']:<8} {row['mb']:>7.2f} {row['peak_mib']:>9.1f} "
              f"{row['base_mib']:>9.1f} {row['seconds']:>7.2f} {figure:>7} {row['outcome']}")
    worst = max((r["bytes_per_byte"] for r in rows if r["bytes_per_byte"] is not None), default=None)
    print(f"  worst: {worst:.1f} B per input byte" if worst is not None else "  no figure")
    return 0 if worst is not None and worst < GOAL_BYTES_PER_BYTE and all(r["outcome"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
