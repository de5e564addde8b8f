#!/usr/bin/env python3
"""Verification at the paper's sizes (issue "Proofs that hold", item 10):
each application's rewrite checked in the reference interpreter, at the
problem size the paper measured, in under 60 s.

    .venv/bin/python bench/verify_paper.py                    # every application
    .venv/bin/python bench/verify_paper.py gemm conv1d        # some
    .venv/bin/python bench/verify_paper.py --baseline REV     # and the tree at REV, same run

For each application: Halide's dump at the paper's size (build/apps/NAME-paper/,
written by ``apps/run.py NAME --size paper``, made here if missing), tensorized
without verification, then timed: ``verify()`` as ``compile --verify`` calls it
(every buffer layout, both programs and the error bounds, the application's
own inputs where it has them). Each application runs in a child process
with a wall-clock limit (--limit, seconds), so one that runs past it is
reported as such and the others still run. ``--baseline REV`` runs the same
children on a git worktree of REV too, one application after the other
(same machine, same run), for a before/after table.

Writes bench/results/verify_paper.json and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = Path(os.environ.get("HB_TREE", HERE.parent))
"""The checkout whose hardboiled a child measures (the baseline's worktree, or this one)."""
if TREE != HERE.parent:
    # The editable install's import hook maps hardboiled (and its grammars
    # and rules) to this checkout before sys.path is looked at: the
    # baseline's child points it at the worktree instead.
    for module in list(sys.modules.values()):
        mapping = getattr(module, "MAPPING", None)
        if getattr(module, "__name__", "").startswith("__editable__") and isinstance(mapping, dict):
            for package, path in mapping.items():
                mapping[package] = path.replace(str(HERE.parent), str(TREE), 1)
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(TREE))

TARGET_S = 60.0


def child(name: str) -> dict:
    """In the child: tensorize the paper-size dump of ``name`` and time its verification."""
    import hardboiled
    from apps.run import applications, dump
    from hardboiled.frontend.parse import parse_input
    from hardboiled.support.deep import call_deep
    from hardboiled.verify.compare import verify

    app = applications()[name]
    stmt_path = HERE.parent / "build" / "apps" / f"{name}-paper" / "vectorizing.stmt"
    if not stmt_path.exists():
        stmt_path.parent.mkdir(parents=True, exist_ok=True)
        stmt_path.write_bytes(dump(app, "paper"))
    text = stmt_path.read_text()
    original = parse_input(text).ir
    result = hardboiled.compile(text, store_in={acc: app.memory for acc in app.accumulators})
    inputs = app.verification_inputs(**app.sizes["paper"]) if app.verification_inputs else None
    started = time.perf_counter()
    try:
        check = call_deep(verify, original, result.program, inputs=inputs, timeout_s=3600.0)
    except Exception as exc:  # noqa: BLE001 - the table says what stopped it
        message = getattr(getattr(exc, "diagnostic", None), "message", None) or str(exc)
        return dict(name=name, outcome=f"error: {message}", seconds=round(time.perf_counter() - started, 1))
    seconds = time.perf_counter() - started
    outcome = "equal" if check.ok and not check.unproven else (
        f"unproven ({check.unproven} elements)" if check.ok else "MISMATCH")
    return dict(name=name, outcome=outcome, seconds=round(seconds, 1), layouts=list(check.shapes),
                tree=str(Path(hardboiled.__file__).parent.parent))


def measure(name: str, tree: Path, limit: float) -> dict:
    env = {**os.environ, "HB_TREE": str(tree), "PYTHONPATH": str(tree)}
    python = HERE.parent / ".venv" / "bin" / "python"
    started = time.perf_counter()
    try:
        done = subprocess.run([str(python), __file__, "--child", name], capture_output=True, text=True,
                              timeout=limit + 120, env=env, cwd=tree)  # + tensorizing, outside the limit
    except subprocess.TimeoutExpired:
        return dict(name=name, outcome=f"over {limit:g} s", seconds=None)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return dict(name=name, outcome=f"error: {tail}", seconds=round(time.perf_counter() - started, 1))
    figures = json.loads(lines[-1])
    if figures["seconds"] is not None and figures["seconds"] > limit:
        figures["outcome"] += f" (over {limit:g} s)"
    return figures


def worktree(rev: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix="hb_baseline_"))
    subprocess.run(["git", "-C", str(HERE.parent), "worktree", "add", "--detach", str(path), rev],
                   check=True, capture_output=True)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("apps", nargs="*", help="application names (default: every one)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--limit", type=float, default=300.0, help="seconds one verification may take (default 300)")
    ap.add_argument("--baseline", metavar="REV", help="also measure the tree at this git revision")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child)), flush=True)
        return 0
    from apps.run import applications

    names = args.apps or sorted(applications())
    trees = {"after": HERE.parent}
    if args.baseline:
        trees = {"before": worktree(args.baseline), **trees}
    rows: dict[str, dict[str, dict]] = {}
    try:
        for name in names:
            for label, tree in trees.items():
                rows.setdefault(name, {})[label] = figures = measure(name, tree, args.limit)
                print(f"{name:16s} {label:6s} {figures['outcome']:32s} {figures['seconds']} s", flush=True)
    finally:
        if args.baseline:
            subprocess.run(["git", "-C", str(HERE.parent), "worktree", "remove", "--force", str(trees["before"])],
                           capture_output=True)
    results = {"target_s": TARGET_S, "limit_s": args.limit, "baseline": args.baseline, "apps": rows}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "verify_paper.json").write_text(json.dumps(results, indent=2) + "\n")
    print("\n| application | " + " | ".join(f"{label} (s)" for label in trees) + " | outcome |")
    print("|---|" + "---|" * len(trees) + "---|")
    for name, by_tree in rows.items():
        cells = [str(by_tree[label]["seconds"] if by_tree[label]["seconds"] is not None
                     else by_tree[label]["outcome"]) for label in trees]
        print(f"| {name} | " + " | ".join(cells) + f" | {by_tree['after']['outcome']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
