#!/usr/bin/env python3
"""Whether this tree's outputs are byte for byte another tree's: the
rewritten IR and the C or CUDA of every variant of the listed sweep
(tests/fixtures/sweep) and of the seeded sample (tests/fixtures/random_sweep),
and the AMX final stmts of the compile-time dumps, compiled by each tree
(``--allow-fallback``, no cache) from this checkout's inputs.

Each tree runs as its own code: ``python -m hardboiled`` started in the
tree's directory (the current directory comes first on ``sys.path``, before
PYTHONPATH, so a command started here would run this tree whatever
PYTHONPATH says), with the tree's rules.

    git worktree add /tmp/before REV
    .venv/bin/python bench/output_identity.py --tree /tmp/before [--tree-python OTHER_VENV/bin/python]

``--tree-python`` runs the other tree with another interpreter (a virtual
environment with other versions of the dependencies). ``--mask-amx-runtime``
compares C files without the AMX runtime the C generator inlines into them
(codegen/runtime/), for an intended change to those headers, and counts
the files that differ only there.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

AMX = ("--emit", "ir,c")
WMMA = ("--emit", "ir,cuda", "--store-in", "prod=WMMAAccumulator")
GROUPS = {
    "sweep-amx": (sorted(FIXTURES.glob("sweep/amx_*.stmt")), AMX),
    "sweep-wmma": (sorted(FIXTURES.glob("sweep/wmma_*.stmt")), WMMA),
    "sample-amx": (sorted(FIXTURES.glob("random_sweep/amx-*.stmt")), AMX),
    "sample-wmma": (sorted(FIXTURES.glob("random_sweep/wmma-*.stmt")), WMMA),
}


def _compile(tree: Path, out: Path, python: str = sys.executable) -> dict[str, int]:
    """Every group compiled by ``tree`` into ``out``/GROUP; the exit status of each."""
    env = dict(os.environ, PYTHONPATH=str(tree), HARDBOILED_RULES_DIR=str(tree / "rules"), HARDBOILED_NO_SERVER="1")
    statuses = {}
    for group, (inputs, flags) in GROUPS.items():
        if not inputs:
            continue
        (out / group).mkdir(parents=True)
        proc = subprocess.run([python, "-m", "hardboiled", "compile", *map(str, inputs), *flags, "--no-cache",
                               "-q", "-j", "2", "--allow-fallback", "-o", str(out / group)],
                              cwd=tree, env=env, capture_output=True)
        statuses[group] = proc.returncode
    return statuses


_AMX_RUNTIME = re.compile(rb"/\* ---- hardboiled's AMX runtime .*?/\* ---- end of the AMX runtime ---- \*/\n", re.S)
"""The AMX runtime (codegen/runtime/), as the C generator inlines it into a kernel."""


def _without_amx_runtime(path: Path) -> bytes:
    return _AMX_RUNTIME.sub(b"/* (the AMX runtime) */\n", path.read_bytes())


def _differences(a: Path, b: Path, runtime_masked: bool = False) -> list[str]:
    """Files that differ, or that one side has and the other not; with
    ``runtime_masked``, C files are compared without the AMX runtime they
    inline (for an intended change to the runtime headers)."""
    comparison = filecmp.dircmp(a, b)
    found = [f"{a / name}" for name in comparison.left_only + comparison.right_only + comparison.funny_files]
    _, mismatch, errors = filecmp.cmpfiles(a, b, comparison.common_files, shallow=False)
    found += [str(a / name) for name in mismatch + errors
              if not (runtime_masked and name.endswith(".c")
                      and _without_amx_runtime(a / name) == _without_amx_runtime(b / name))]
    for name in comparison.common_dirs:
        found += _differences(a / name, b / name, runtime_masked)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, required=True, help="the other checkout (the baseline)")
    parser.add_argument("--tree-python", default=sys.executable, help="the interpreter that runs the other checkout")
    parser.add_argument("--mask-amx-runtime", action="store_true",
                        help="compare C without the AMX runtime it inlines, and say how many files differ only there")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hb-identity-") as scratch:
        outputs = {label: Path(scratch) / label for label in ("before", "after")}
        # Absolute, as given: the compiles run in the tree's directory, and a
        # resolved path would leave the virtual environment for its base interpreter.
        python = os.path.abspath(args.tree_python)
        statuses = {"before": _compile(args.tree.resolve(), outputs["before"], python),
                    "after": _compile(ROOT, outputs["after"])}
        files = sum(1 for path in outputs["after"].rglob("*") if path.is_file())
        differing = _differences(outputs["before"], outputs["after"], args.mask_amx_runtime)
        print(f"exit statuses: {statuses}")
        print(f"{files} files, {len(differing)} differ")
        if args.mask_amx_runtime:
            in_runtime = len(_differences(outputs["before"], outputs["after"])) - len(differing)
            print(f"  and {in_runtime} C files differ only in the AMX runtime they inline (not counted)")
        for path in differing[:20]:
            print(f"  {path}")
        return 0 if not differing and statuses["before"] == statuses["after"] else 1


if __name__ == "__main__":
    sys.exit(main())
