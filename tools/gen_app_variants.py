#!/usr/bin/env python3
"""Seeded variants of the paper's applications with schedules of their own,
dumped by real Halide 21 into tests/fixtures/app_variants/.

apps/ holds each application with the paper's schedule. Schedules users
write differ: more rows per block, other tap counts and widths, tiles kept
side by side in one accumulator, sizes rounded up. Each variant here draws
those choices independently from a seed, so that the set is generated, not
listed, and a seed not developed against measures what is mechanism:

* upsample (2x, multiphase): rows of the accumulator per block (unrolled),
  taps, image width, output rows;
* dct_denoise: tiles per block, how each transform's result is stored
  (tile after tile, or a block's tiles side by side, so that the next
  transform reads its operand with a leading dimension of 16 times the
  tiles), the tail strategy of the block split, the number of tiles.

Usage (from the repository root):

    .venv/bin/python tools/gen_app_variants.py --seed 1 --count 12   # the committed set
    .venv/bin/python tools/gen_app_variants.py --seed 2 --count 12 --out build/variants-2
    .venv/bin/python tools/gen_app_variants.py --list --seed 1 --count 12

Each variant is a name that spells its choices (upsample-r10-t16-w256-h20);
MANIFEST.json records the seed, the choices, the accumulators and the
--store-in memory. tests/apps/test_app_variants.py lowers and verifies every
committed one; bench/app_variants.py does the same for any seed.
"""

from __future__ import annotations

import json
import random
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
import gen_fixtures as gf  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "app_variants"
CUDA_TARGET = "x86-64-linux-cuda-cuda_capability_80"
TAIL_STRATEGIES = ("ShiftInwards", "RoundUp", "GuardWithIf")


# ------------------------------------------------------------------- choices
def draw_upsample(rng: random.Random) -> str:
    rows = rng.choice((1, 2, 3, 4, 5, 6, 8, 10, 12))
    taps = rng.choice((8, 16, 32))
    width = 128 * rng.choice((1, 2, 3))
    return f"upsample-r{rows}-t{taps}-w{width}-h{2 * rows * rng.choice((1, 2))}"


def draw_dct_denoise(rng: random.Random) -> str:
    per_block = rng.choice((1, 2, 3, 4))
    storage = rng.choice(("tiles", "rows")) if per_block > 1 else "tiles"
    tail = rng.choice(TAIL_STRATEGIES)
    tiles = rng.choice((2, 3, 4, 5))
    return f"dct_denoise-p{per_block}-{storage}-{tail}-n{tiles}"


DRAWS = {"upsample": draw_upsample, "dct_denoise": draw_dct_denoise}


def variants(seed: int, count: int) -> list[str]:
    """``count`` distinct variants drawn from ``seed`` (applications in turn)."""
    rng = random.Random(seed)
    found: list[str] = []
    apps = sorted(DRAWS)
    attempts = 0
    while len(found) < count and attempts < 100 * count:
        name = DRAWS[apps[attempts % len(apps)]](rng)
        attempts += 1
        if name not in found:
            found.append(name)
    return found


def choices(name: str) -> tuple[str, dict[str, object]]:
    """The application and the choices a variant's name spells."""
    app, _, rest = name.partition("-")
    if app == "upsample":
        m = re.fullmatch(r"r(\d+)-t(\d+)-w(\d+)-h(\d+)", rest)
        assert m, name
        return app, dict(rows=int(m[1]), taps=int(m[2]), width=int(m[3]), height=int(m[4]))
    m = re.fullmatch(r"p(\d+)-(tiles|rows)-(\w+)-n(\d+)", rest)
    assert m and app == "dct_denoise", name
    return app, dict(per_block=int(m[1]), side_by_side=m[2] == "rows", tail=m[3], tiles=int(m[4]))


def accumulators(app: str) -> tuple[str, ...]:
    return ("conv",) if app == "upsample" else ("dct_rows", "dct_cols", "idct_rows", "idct_cols")


# ------------------------------------------------------------------- pipelines
def upsample(rows: int, taps: int, width: int, height: int):
    """apps/upsample.py's algorithm; ``rows`` accumulator rows per block
    (unrolled), each read back by its own copy-out."""
    from apps.common import accumulator, vars_
    from apps.upsample import Algorithm

    a = Algorithm(width, height, taps)
    x, y, dx, dy, rk = a.x, a.y, a.dx, a.dy, a.rk
    bx, by, mmx, mmy, yo = vars_("bx by mmx mmy yo")
    a.phases.compute_root().gpu_tile(x, y, mmx, mmy, a.half, a.half)
    a.output.split(y, by, yo, 2 * rows).split(yo, yo, mmy, 2).split(x, bx, mmx, 128).gpu_blocks(bx, by) \
        .reorder(mmx, mmy, yo, bx, by).vectorize(mmx).vectorize(mmy).unroll(yo)
    accumulator(a.conv).compute_at(a.output, bx).reorder_storage(dx, dy, x, y) \
        .reorder(dx, dy, x, y).vectorize(dx).vectorize(dy).vectorize(x, 64).unroll(y)
    a.conv.update().reorder(rk.x, dx, dy, x, y, rk.y).atomic() \
        .vectorize(rk.x).vectorize(dx).vectorize(dy).vectorize(x, 64).unroll(y)
    return a.output, [a.kernel, a.image]


def dct_denoise(per_block: int, side_by_side: bool, tail: str, tiles: int):
    """apps/dct_denoise.py's algorithm; ``per_block`` tiles per GPU block,
    split with ``tail``; with ``side_by_side`` each transform's result keeps
    a block's tiles side by side (row yi of every tile, then row yi + 1), so
    that the next transform loads them with a leading dimension of
    16 * per_block."""
    import halide as hl

    from apps.common import accumulator, dense
    from apps.dct_denoise import Algorithm

    a = Algorithm()
    xi, yi, x, y, r = a.xi, a.yi, a.x, a.y, a.r
    xo = hl.Var("xo")
    dense(a.inp, input_side(tiles), input_side(tiles))
    dense(a.dct_m, a.size, a.size)
    dense(a.idct_m, a.size, a.size)
    dense(a.output.output_buffer(), 8 * tiles, 8 * tiles)
    strategy = getattr(hl.TailStrategy, tail)
    for t in a.transforms:
        wrapper = t.in_().compute_root()
        if side_by_side:
            wrapper.reorder_storage(xi, x, yi, y)
        wrapper.split(x, xo, x, per_block, strategy).reorder(xi, yi, x, xo, y).gpu_blocks(xo, y).unroll(x) \
            .vectorize(xi, 16).vectorize(yi, 16)
        accumulator(t).compute_at(wrapper, x).vectorize(xi, 16).vectorize(yi, 16)
        t.update().reorder(r.x, xi, yi, x, y).atomic().vectorize(r.x, 16).vectorize(xi, 16).vectorize(yi, 16)
    a.schedule_thresholding_and_output()
    return a.output, [a.inp, a.dct_m, a.idct_m]


PIPELINES = {"upsample": upsample, "dct_denoise": dct_denoise}


def input_side(tiles: int) -> int:
    """The dct_denoise variants' image side: room for a block of tiles
    shifted or rounded past the last one."""
    return 8 * tiles + 48


def verification_inputs(name: str) -> dict:
    """What a variant's pipeline really transforms, by buffer name (numpy
    order), where random data proves nothing: the DCT denoise's windowed DCT
    and inverse and an image in [0, 1]. Empty for the others."""
    app, spec = choices(name)
    if app != "dct_denoise":
        return {}
    import numpy as np

    from apps.dct_denoise import dct_matrices

    dct, idct = dct_matrices()
    side = input_side(int(spec["tiles"]))
    return {"DCT": dct, "IDCT": idct, "input": np.random.default_rng(0).random((side, side)).astype(np.float16)}


# ------------------------------------------------------------------- dumping
def child(name: str, out_path: str) -> None:
    import halide as hl

    app, spec = choices(name)
    output, arguments = PIPELINES[app](**spec)
    try:
        output.compile_to_lowered_stmt(out_path, arguments, hl.StmtOutputFormat.Text, hl.Target(CUDA_TARGET))
    except hl.HalideError as e:
        print("HALIDE_ERROR: " + " ".join(str(e).split()), file=sys.stderr)
        sys.exit(3)


def generate(name: str, out: Path) -> dict[str, object]:
    app, spec = choices(name)
    entry: dict[str, object] = dict(app=app, choices=spec, accumulators=list(accumulators(app)),
                                    memory="WMMAAccumulator")
    error = gf.dump_vectorizing_stage(name, True, __file__, out / f"{name}.stmt")
    if error is not None:
        entry["halide_error"] = error
    return entry


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2])
        return 0
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=12)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    names = variants(args.seed, args.count)
    if args.list:
        print("\n".join(names))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for stale in args.out.glob("*.stmt"):
        stale.unlink()
    with ThreadPoolExecutor(max_workers=2) as pool:
        entries = dict(zip(names, pool.map(lambda n: generate(n, args.out), names)))
    for name, entry in entries.items():
        print(f"{name:45s} {entry.get('halide_error', 'ok')[:80]}", flush=True)
    manifest = {"seed": args.seed, "count": args.count, "variants": entries}
    (args.out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
