#!/usr/bin/env python3
"""A seeded sweep of schedules: every choice drawn independently, dumped by Halide 21.

tools/gen_sweep.py lists its variants: a base schedule changed in one or two
dimensions. Here each variant draws every dimension on its own from a seed
(the operand types, both operand layouts, the operand order, the tile shape,
K with or without a remainder, the reduction chunk, tiles per accumulator,
the initial value, the epilogue, loop order, unrolling, symbolic sizes, a
batch dimension, parallel loops, the operand expression (negated, scaled,
zero points, a boundary condition), a transposed accumulator, partial tiles
at the output's edges and their tail strategy), so that the variants are
combinations nobody wrote down, the way property-based testing draws
programs. The same builders as gen_sweep.py turn a drawn spec into a Halide
pipeline and its schedule.

Usage (from the repository root, with the venv that has halide==21.0.0):

    .venv/bin/python tools/gen_random_sweep.py --seed 3 --count 40 --out build/random-3
    .venv/bin/python tools/gen_random_sweep.py --seed 3 --count 40 --list

Variant i of seed s is drawn from its own generator (seeded with "s-i"), so
a variant does not change when the count does. The output directory gets
NAME.stmt (Halide's "Lowering after vectorizing:" body, byte-exact) and
MANIFEST.json (the seed, each variant's spec, or Halide's refusal). Where
Halide's own assertions require more of an input than the drawn shape gives
it (a GuardWithIf consumer whose producer computes whole tiles), the
variant is dumped again with its inputs padded to that region, as a user
pads them; the manifest records it as ``padded``.
tests/fixtures/random_sweep/ is the seed the test suite runs;
bench/random_sweep.py compiles, verifies, emits and builds any seed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_fixtures as gf  # noqa: E402
import gen_sweep as gs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "tests" / "fixtures" / "random_sweep"
KEEP_BASE = 0.55
"""Each dimension keeps the base schedule's value with this probability and
otherwise draws uniformly among the others: a little under half of the
dimensions of a variant (about 9 of AMX's 21) differ from the base, so
that every pair of dimensions meets often and most variants cross several
of them at once."""

DRAWN_OPERAND_FORMS = ("plain", "neg", "scale", "zero_point", "boundary")
"""gen_sweep.OPERAND_FORMS as first drawn: a zero point's form is a draw of its own."""
ZERO_POINTS = gs.ZERO_POINT_FORMS

ODD_K = (7, 9, 10, 14, 27, 68, 100)
"""Reductions in no whole VNNI groups (4 int8 or 2 bf16 values): a 3 x 3
colour matrix (9), odd filter taps, a K one group past a tile's width."""
ODD_K_SHARE = 0.12
"""The share of AMX variants whose K is one of ODD_K."""

AMX_SPACE = {
    "types": ("bf16", "i8*i8", "u8*i8", "i8*u8", "u8*u8"),
    "a": ("row", "col"),
    "b": ("std", "nk", "vnni"),
    "order": ("ab", "ba"),
    "M": (16, 4, 8, 32),
    "N": (16, 4, 8, 32),
    "K": (64, 32, 128, 256, 48, 96, 80, 40, 24),
    "chunk": (None, "2x", "half"),
    "tiles": ((1, 1), (1, 2), (1, 4)),
    "init": ("zero", "cbuf", "bias_col", "bias_row", "const"),
    "epilogue": ("none", "relu", "scale", "bias", "cast", "sigmoid", "silu"),
    "loops": ("k_inner", "k_outer", "swap_tiles"),
    "unroll": ("tiles", "none", "k"),
    "sizes": ("const", "symbolic"),
    "batch": (False, True),
    "parallel": (False, True),
    "form": ("tiled", "single", "two_acc"),
    "operand": DRAWN_OPERAND_FORMS,
    "acc_layout": ("yx", "xy"),
    "rem": (0, 8, 4),
    "tail": ("auto", "guard", "shift"),
    "zero_point": ZERO_POINTS,
}
WMMA_SPACE = {
    "types": ("f16>f32", "bf16>f32", "f16>f16", "i8>i32", "u8>i32", "f64>f64", "tf32>f32"),
    "a": ("row", "col"),
    "b": ("row", "col"),
    "order": ("ab", "ba"),
    "shape": ((16, 16), (32, 8), (8, 32)),
    "K": (64, 16, 32, 128, 48, 80, 40, 24),
    "chunk": (16, 8, 32, 64),
    "tiles": ((1, 1), (1, 2), (2, 1), (2, 2)),
    "init": ("zero", "cbuf", "bias_col", "bias_row", "const"),
    "epilogue": ("none", "relu", "scale", "bias", "cast", "sigmoid", "silu"),
    "sizes": ("const", "symbolic", "output"),
    "batch": (False, True),
    "widen": (None, "i16"),
    "operand": DRAWN_OPERAND_FORMS,
    "acc_layout": ("xy", "yx"),
    "n": (64, 128, 48, 40, 80),
    "tail": ("auto", "guard", "shift"),
    "zero_point": ZERO_POINTS,
}


def _zero_point_form(s: dict) -> dict:
    """The operand form a zero point draw picks (constants, run-time Params
    on both operands, or A's alone); the zero_point dimension is drawn last,
    so adding it left every earlier draw of every seed as it was."""
    form = s.pop("zero_point")
    if s["operand"] == "zero_point":
        s["operand"] = form
    return s


def _pick(rng: random.Random, values: tuple) -> object:
    if len(values) == 1 or rng.random() < KEEP_BASE:
        return values[0]
    return rng.choice(values[1:])


def draw(seed: int, index: int) -> dict:
    """The spec of variant `index` of `seed`: every dimension drawn on its own,
    then made consistent (choices one makes meaningless return to the base)."""
    rng = random.Random(f"{seed}-{index}")
    accelerator = "amx" if rng.random() < 0.5 else "wmma"
    space = AMX_SPACE if accelerator == "amx" else WMMA_SPACE
    drawn = {key: _pick(rng, values) for key, values in space.items()}
    if accelerator == "amx":
        # Drawn after every other dimension, so that adding it left their
        # draws as they were: a K in no whole VNNI groups, now and then.
        odd, k = rng.random() < ODD_K_SHARE, rng.choice(ODD_K)
        if odd:
            drawn["K"] = k
    return _amx_spec(drawn) if accelerator == "amx" else _wmma_spec(drawn)


def _amx_spec(d: dict) -> dict:
    s = _zero_point_form(dict(gs.AMX_BASE, **d))
    integer = s["types"] != "bf16"
    pair = 4 if integer else 2
    if s["b"] == "vnni" and s["K"] % pair:
        s["b"] = "std"  # a VNNI-packed B holds whole pairs (quads) of K
    if s["operand"] in gs.ZERO_POINT_FORMS and not integer:
        s["operand"] = "plain"
    if s["form"] == "single":  # one tile, everything vectorized: no loops to schedule
        for key in ("tiles", "loops", "unroll", "parallel", "rem", "tail"):
            s[key] = gs.AMX_BASE[key]
    if s["form"] == "two_acc":
        s["operand"] = "plain"  # the second accumulator reads the plain product
    if s["tiles"] == (1, 1) and s["loops"] == "swap_tiles":
        s["loops"] = "k_inner"
    return s


def _wmma_spec(d: dict) -> dict:
    M, N = d.pop("shape")
    s = _zero_point_form(dict(gs.WMMA_BASE, **d, M=M, N=N))
    if s["types"] == "f64>f64":
        s.update(M=8, N=8, tiles=(1, 1), chunk=min(s["chunk"], 4) if s["chunk"] < 16 else 4)
    if s["types"] == "tf32>f32" and s["chunk"] == 16:
        s["chunk"] = 8
    if s["widen"] and s["types"] not in ("i8>i32", "u8>i32"):
        s["widen"] = None
    if s["operand"] in gs.ZERO_POINT_FORMS and s["types"] not in ("i8>i32", "u8>i32"):
        s["operand"] = "plain"
    if s["sizes"] == "output":
        s["n"] = gs.WMMA_BASE["n"]  # the extent is a run-time value
    while s["n"] < max(s["M"] * s["tiles"][0], s["N"] * s["tiles"][1]):
        s["n"] *= 2  # an output narrower than one block: Halide's own bounds check fails at run time
    return s


def name_of(seed: int, index: int, spec: dict) -> str:
    return f"{spec['acc']}-s{seed}-{index:04d}"


def variants(seed: int, count: int) -> dict[str, dict]:
    out = {}
    for index in range(count):
        spec = draw(seed, index)
        out[name_of(seed, index, spec)] = spec
    return out


def child(name: str, out_path: str) -> None:
    """Lower variant NAME, or NAME@A=48x32,B=... with its inputs padded."""
    name = gs.take_padding(name)
    _acc, seed, index = name.split("-")
    gs.lower_spec(draw(int(seed[1:]), int(index)), out_path)


def generate(name: str, spec: dict, out_dir: Path) -> dict:
    """The manifest entry of one variant, writing its dump into out_dir."""
    cuda = spec["acc"] == "wmma"
    entry: dict = dict(spec={k: list(v) if isinstance(v, tuple) else v for k, v in spec.items()})
    path = out_dir / f"{name}.stmt"
    try:
        error = gf.dump_vectorizing_stage(name, cuda, __file__, path)
        padding = gs.input_padding(path.read_bytes()) if error is None else ""
        if padding:  # the inputs as drawn are smaller than the schedule reads
            entry["padded"] = padding
            error = gf.dump_vectorizing_stage(f"{name}@{padding}", cuda, __file__, path)
    except RuntimeError as e:  # the child timed out
        error = str(e)
    if error is not None:
        path.unlink(missing_ok=True)
        entry["halide_error"] = error
    return entry


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--out", type=Path, default=None, help=f"default: {COMMITTED.relative_to(ROOT)}")
    parser.add_argument("--list", action="store_true", help="print the drawn specs, dump nothing")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    drawn = variants(args.seed, args.count)
    if args.list:
        for name, spec in drawn.items():
            base = gs.AMX_BASE if spec["acc"] == "amx" else gs.WMMA_BASE
            print(name, {k: v for k, v in spec.items() if base.get(k) != v})
        return 0
    out_dir = args.out or COMMITTED
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob("*.stmt"):
        stale.unlink()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        entries = dict(zip(drawn, pool.map(generate, drawn, drawn.values(), [out_dir] * len(drawn))))
    for name, entry in entries.items():
        print(f"{name:20s} {entry.get('halide_error', 'ok')[:100]}", flush=True)
    manifest = dict(seed=args.seed, count=args.count, variants=entries)
    (out_dir / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    refused = sum("halide_error" in e for e in entries.values())
    print(f"{len(entries) - refused} dumped, {refused} refused by Halide", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
