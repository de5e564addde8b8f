#!/usr/bin/env python3
"""Kernel times of several bench/device.py runs side by side (before and
after a change, each library run in turn in one device call):

    python3 bench/device_compare.py --json out.json before1/ after1/ before2/ after2/

Each argument is a run's --out folder (or its device-results.json); a
column per run, a row per kernel, the time in microseconds with "!" where
the kernel's output did not match. Needs nothing but Python.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def load(path: Path) -> dict[str, dict]:
    file = path / "device-results.json" if path.is_dir() else path
    return {k["name"]: k for k in json.loads(file.read_text())["kernels"]}


def cell(kernel: dict | None) -> str:
    if kernel is None or kernel.get("time_us") is None:
        return "-"
    matches = kernel.get("matches_reference", kernel.get("matches_baseline", True))
    return f"{kernel['time_us']:.1f}{'' if matches is not False else '!'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, help="write the table here too")
    args = parser.parse_args()
    runs = [load(path) for path in args.runs]
    names = list(dict.fromkeys(name for run in runs for name in run))
    labels = [path.name or str(path) for path in args.runs]
    width = max(len(n) for n in names) + 2
    print("kernel".ljust(width) + "".join(label.rjust(14) for label in labels) + "      baseline")
    table = {}
    for name in names:
        kernels = [run.get(name) for run in runs]
        baseline = next((k["baseline_time_us"] for k in kernels if k and k.get("baseline_time_us")), None)
        print(name.ljust(width) + "".join(cell(k).rjust(14) for k in kernels)
              + (f"{baseline:14.1f}" if baseline else "             -"))
        table[name] = {"times_us": [k.get("time_us") if k else None for k in kernels], "baseline_us": baseline}
    if args.json:
        args.json.write_text(json.dumps({"runs": labels, "kernels": table}, indent=1) + "\n")


if __name__ == "__main__":
    main()
