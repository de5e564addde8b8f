#!/usr/bin/env python3
"""Seeded variants of the applications (tools/gen_app_variants.py): how many
lower, verify and build, for a seed of your choice.

    .venv/bin/python bench/app_variants.py --seed 2 --count 24

Dumps the variants with Halide 21 into build/app-variants-SEED/, compiles
each with every accumulator in WMMA memory, --verify (on the application's
own verification inputs where it has them), --emit cuda and a PTX build,
and prints one line per variant and the totals. A verification that finds
no difference but proves nothing about some elements (accepted with
--accept-unproven for DCT denoise, whose application says why) is counted
apart from one that proves every element.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import gen_app_variants as gav  # noqa: E402


def compile_variant(stmt: Path, entry: dict, out: Path) -> dict:
    """One variant through hardboiled: its exit status and what it says."""
    import numpy as np

    command = [str(ROOT / ".venv" / "bin" / "hardboiled"), "compile", str(stmt), "--verify", "--no-cache",
               "--emit", "cuda", "-o", str(out / f"{stmt.stem}.cu"), "--build", str(out / f"{stmt.stem}.ptx")]
    command += [arg for acc in entry["accumulators"] for arg in ("--store-in", f"{acc}={entry['memory']}")]
    for name, array in gav.verification_inputs(stmt.stem).items():
        path = out / f"{stmt.stem}.{name}.npy"
        np.save(path, array)
        command += ["--input", f"{name}={path}"]
    if entry["app"] == "dct_denoise":
        command.append("--accept-unproven")  # apps/dct_denoise.py says why; counted apart below
    result = subprocess.run(command, capture_output=True, text=True)
    lowered = [line for line in result.stderr.splitlines() if "lowered" in line]
    return dict(exit=result.returncode, unproven="unproven elements accepted" in result.stderr,
                built=(out / f"{stmt.stem}.ptx").exists(),
                summary=(lowered[-1] if lowered else result.stderr.strip()[-300:]))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--count", type=int, default=24)
    args = parser.parse_args(argv)
    out = ROOT / "build" / f"app-variants-{args.seed}"
    subprocess.run([sys.executable, str(ROOT / "tools" / "gen_app_variants.py"), "--seed", str(args.seed),
                    "--count", str(args.count), "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    manifest = json.loads((out / "MANIFEST.json").read_text())["variants"]
    outcomes: Counter[str] = Counter()
    for name, entry in manifest.items():
        if "halide_error" in entry:
            outcome, detail = "halide refused", entry["halide_error"][:100]
        else:
            result = compile_variant(out / f"{name}.stmt", entry, out)
            outcome = {0: "verified", 1: "missed", 5: "MISMATCH"}.get(result["exit"], f"exit {result['exit']}")
            if result["exit"] == 0 and result["unproven"]:
                outcome = "equal, some elements unproven (accepted)"
            if result["exit"] == 0:
                outcome += ", built" if result["built"] else ", NOT BUILT"
            detail = result["summary"][:160]
        outcomes[outcome] += 1
        print(f"{name:42s} {outcome:38s} {detail}", flush=True)
    print(f"seed {args.seed}: " + ", ".join(f"{n} {o}" for o, n in outcomes.most_common()))
    return 1 if outcomes["MISMATCH"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
