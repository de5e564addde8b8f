#!/usr/bin/env python3
"""Generate the schedule sweep in tests/fixtures/sweep/ with the `halide` package.

The sweep measures how general instruction selection is: many small variants of
matmul-like pipelines, each differing from a base schedule in one or two dimensions
(operand types, layouts, tile sizes, reduction chunk, accumulator initialization,
epilogue, loop order, unrolling, symbolic sizes, several accumulators, a batch
dimension, parallel loops, operand order). `bench/sweep.py` compiles every variant
and writes the hit rate by class and by dimension to docs/coverage.md.

Usage (from the repository root, with the venv that has halide==21.0.0):

    .venv/bin/python tools/gen_sweep.py              # regenerate every variant
    .venv/bin/python tools/gen_sweep.py NAME ...     # only these variants
    .venv/bin/python tools/gen_sweep.py --list       # list the variants

Per variant, tests/fixtures/sweep/<name>.stmt is Halide's "Lowering after vectorizing:"
body, byte-exact. For AMX variants the child lowers the whole pipeline for a Sapphire
Rapids target, so MANIFEST.json also records whether upstream Halide's own AMX pass
(extract_tile_operations) accepted the variant: "accepted" (it emitted tile_matmul),
"ignored" (it ran but left the accumulator alone) or "refused: <its error>". The child
machinery (a re-run of this script with HL_DEBUG_CODEGEN=2) is shared with
tools/gen_fixtures.py.
"""

import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_fixtures as gf  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SWEEP = ROOT / "tests" / "fixtures" / "sweep"

# ---------------------------------------------------------------- variant space

AMX_BASE = dict(acc="amx", types="bf16", a="row", b="std", order="ab", M=16, N=16,
                K=64, chunk=None, tiles=(1, 1), init="zero", epilogue="none",
                loops="k_inner", unroll="tiles", sizes="const", batch=False,
                parallel=False, form="tiled", operand="plain", acc_layout="yx", tail="auto",
                rem=0)
"""mm(y, x) += A(r, x) * B(y, r): 16x16 output tiles, K = 64 in chunks of one tile op."""

WMMA_BASE = dict(acc="wmma", types="f16>f32", a="row", b="row", order="ab", M=16, N=16,
                 K=64, chunk=16, tiles=(1, 1), init="zero", epilogue="none",
                 sizes="const", batch=False, widen=None, operand="plain", acc_layout="xy",
                 n=64, tail="auto")
"""prod(x, y) += A(k, y) * B(x, k): 16x16 tiles on gpu_blocks, K = 64 in chunks of 16."""

# One dimension at a time away from the base; each value is a dict of overrides.
AMX_AXES = {
    "types": [dict(types=t) for t in ("i8*i8", "u8*i8", "i8*u8", "u8*u8")],
    "b_layout": [dict(b="vnni"), dict(b="nk")],
    "a_layout": [dict(a="col")],
    "order": [dict(order="ba")],
    "tile": [dict(M=8), dict(N=8), dict(M=8, N=8), dict(M=4, N=16), dict(M=16, N=4),
             dict(M=32), dict(N=32), dict(M=32, N=32)],
    "chunk": [dict(chunk="2x"), dict(chunk="half")],
    "K": [dict(K=32), dict(K=128), dict(K=256),
          # K in no whole VNNI groups: padded with zero products (partition.py)
          dict(K=10, types="u8*i8"), dict(K=7), dict(K=68, types="i8*i8"), dict(K=9, types="u8*u8", M=4, N=4)],
    "tiles": [dict(tiles=(1, 2)), dict(tiles=(1, 4)), dict(tiles=(1, 2), loops="k_outer"),
              dict(tiles=(1, 2), N=8), dict(tiles=(1, 4), M=8), dict(tiles=(1, 4), N=8, init="bias_row")],
    "init": [dict(init=i) for i in ("cbuf", "bias_col", "bias_row", "const")],
    "epilogue": [dict(epilogue=e) for e in ("relu", "scale", "bias", "cast", "sigmoid", "silu")],
    "loops": [dict(loops="k_outer"), dict(loops="swap_tiles")],
    "unroll": [dict(unroll="none"), dict(unroll="k"),
               # a loop over the tiles of one accumulator left rolled (unroll.py unrolls it)
               dict(unroll="none", tiles=(1, 2)), dict(unroll="none", tiles=(1, 4), M=8, types="u8*i8"),
               # the tile loop outside the K chunk loop, around an update Halide
               # left scalar: a vector only once revectorized, then unrolled
               dict(unroll="none", tiles=(1, 2), loops="swap_tiles", init="bias_row", types="i8*u8", acc_layout="xy",
                    order="ba", K=256)],
    "sizes": [dict(sizes="symbolic")],
    "batch": [dict(batch=True)],
    "parallel": [dict(parallel=True)],
    "form": [dict(form="single"), dict(form="single", sizes="symbolic")],
    "accumulators": [dict(form="two_acc"),
                     # more accumulator tiles than the eight registers hold with
                     # the operands: the largest live in memory (amx_registers.py)
                     dict(tiles=(1, 4), M=32), dict(form="two_acc", tiles=(1, 4)),
                     dict(form="two_acc", tiles=(1, 4), M=4, types="u8*i8"),
                     # a negated operand isolates each tile's product in a buffer of
                     # its own, one after the other: they share registers (amx_plan.py)
                     dict(types="u8*i8", K=48, chunk="half", tiles=(1, 4), unroll="k", operand="neg")],
    "operand": [dict(operand="neg"), dict(operand="scale"), dict(operand="boundary"),
                dict(operand="zero_point", types="u8*i8", b="vnni"), dict(operand="neg", types="i8*i8"),
                dict(operand="zero_point_param", types="i8*i8", tiles=(1, 2)),
                # zero points on tiles that the selector lays out again (blocked
                # tiles of 8 rows): the isolated products take the new layout
                dict(operand="zero_point_param", types="u8*u8", tiles=(1, 4), M=8, K=10, epilogue="bias",
                     acc_layout="xy"),
                dict(operand="zero_point_a", types="u8*i8", b="vnni", epilogue="relu"),
                # a negated operand that every row shares (a transposed
                # accumulator makes A the B side): the broadcast moves into the
                # negation, whose K is then cut; an int8 one moves out of the sum
                # a boundary condition on a batched operand of symbolic size:
                # the clamped operand is staged (partition.py), and
                # verification sizes A to the region read before the clamp
                dict(operand="boundary", batch=True, sizes="symbolic"),
                dict(operand="boundary", batch=True, sizes="symbolic", a="col", K=128, epilogue="silu"),
                dict(operand="neg", acc_layout="xy", form="single", a="col", chunk="2x"),
                dict(operand="neg", acc_layout="xy", form="single", types="u8*u8", M=32, N=32, K=40),
                # a scaled column-major operand whose K chunk is cut in two: each
                # half reads K as two groups of 16 (lane_slicing.py refines the
                # axis; amx_layouts.egg copies such a B at both levels)
                dict(operand="scale", a="col", b="vnni", N=32, chunk="half", tiles=(1, 2), acc_layout="xy",
                     unroll="none", tail="shift")],
    "acc_layout": [dict(acc_layout="xy"), dict(acc_layout="xy", types="i8*i8"),
                   # an epilogue reading the transposed accumulator: spilled whole, read at its index
                   dict(acc_layout="xy", epilogue="cast", form="single", M=4, order="ba"),
                   dict(acc_layout="xy", epilogue="relu", types="u8*i8"),
                   # tiles side by side, filled and copied out column by column (lane_order.py)
                   dict(acc_layout="xy", tiles=(1, 2), loops="swap_tiles", rem=8),
                   dict(acc_layout="xy", tiles=(1, 4), M=8, types="i8*i8"),
                   # B in VNNI order read as the A side of the transposed product:
                   # its K runs in pairs or quads, gathered into rows (amx_layouts.egg)
                   dict(acc_layout="xy", b="vnni"), dict(acc_layout="xy", b="vnni", types="u8*i8", order="ba"),
                   # a transposed block wider than a tile, stored tile after tile
                   # and then cut into tiles (revectorize.py, partition.py)
                   dict(acc_layout="xy", tiles=(1, 4), M=32, N=8, b="nk", init="const"),
                   dict(acc_layout="xy", tiles=(1, 4), M=8, chunk="2x", loops="k_outer"),
                   # a sigmoid of a transposed int32 accumulator, copied out in
                   # the accumulator's order: verified alike, to the bit
                   dict(acc_layout="xy", types="i8*u8", epilogue="sigmoid", init="const", loops="k_outer", rem=8),
                   # a bias filled one tile of columns at a time into a transposed
                   # accumulator two tiles wide: every statement is cut to the same
                   # tile slots, the column blocks included (partition.py)
                   dict(acc_layout="xy", tiles=(1, 2), init="bias_row", K=64, order="ba", unroll="none"),
                   # the same with column blocks narrower than a tile (8 of 16): the
                   # tiles are as wide as the blocks (partition.py)
                   dict(acc_layout="xy", tiles=(1, 4), M=8, init="bias_col", order="ba", unroll="none"),
                   # C loaded into a transposed accumulator one tile of columns at a
                   # time and updated in place tile by tile, under a SiLU epilogue:
                   # an update of a block is cut along its columns (partition.py)
                   dict(acc_layout="xy", tiles=(1, 4), a="col", order="ba", init="cbuf", epilogue="silu",
                        loops="k_outer"),
                   # GuardWithIf edge copies of two transposed accumulators filled
                   # from C: a copy fills rows 0..15 and updates rows 8..23, which
                   # no one tile height both starts at (partition.py); such a
                   # copy stays in ordinary memory
                   dict(acc_layout="xy", tiles=(1, 4), b="vnni", order="ba", K=80, init="cbuf", form="two_acc",
                        tail="guard", rem=8)],
    "remainder": [dict(rem=8), dict(rem=4, tail="guard"), dict(rem=8, tail="shift"), dict(K=48),
                  # a K remainder (80 = 2 x 32 + 16) under likely(rro <= 1) in a loop of four
                  # tiles: the last chunk's B copy is filled under the `if` that keeps it in bounds
                  dict(K=80, tiles=(1, 4), loops="k_outer", unroll="none", batch=True),
                  dict(K=40, types="u8*i8"), dict(K=24),
                  # a bias filled into an accumulator whose row stride Halide sized
                  # by the GuardWithIf tail: fixed to 16 in the steady version, its
                  # rows are one dense ramp like the update's (specialize.py)
                  dict(rem=4, tail="guard", init="bias_col", order="ba")],
}
# Several accumulator tiles side by side (ny > 1): Halide's vectorizer leaves
# the atomic update scalar when the accumulator index is not one ramp, so
# the dump has no vector statement to select. Kept once, as the miss that
# explains it.
AMX_SCALARIZED = [dict(tiles=(2, 2)), dict(tiles=(2, 1), loops="k_outer")]
# Crosses that users write together (types and layouts with the other dimensions).
AMX_CROSSES = {
    "types": [dict(types="i8*i8", b="vnni"), dict(types="u8*u8", b="vnni")],
    "b_layout": [dict(b="vnni", sizes="symbolic"), dict(b="vnni", M=32, N=32)],
    "tile": [dict(types="i8*i8", b="vnni", M=32), dict(M=32, chunk="2x"),
             dict(M=32, N=32, epilogue="relu"), dict(M=32, N=32, init="cbuf")],
}

WMMA_AXES = {
    "types": [dict(types=t) for t in ("bf16>f32", "f16>f16", "i8>i32", "u8>i32",
                                      "f64>f64", "tf32>f32")],
    "b_layout": [dict(b="col")],
    "a_layout": [dict(a="col")],
    "order": [dict(order="ba")],
    "shape": [dict(M=32, N=8), dict(M=8, N=32)],
    "chunk": [dict(chunk=32), dict(chunk=64), dict(chunk=8)],
    "K": [dict(K=16), dict(K=128)],
    "tiles": [dict(tiles=(1, 2)), dict(tiles=(2, 1)), dict(tiles=(2, 2))],
    "init": [dict(init=i) for i in ("cbuf", "bias_col", "bias_row", "const")],
    "epilogue": [dict(epilogue=e) for e in ("relu", "scale", "bias", "cast", "sigmoid", "silu")],
    "sizes": [dict(sizes="symbolic"), dict(sizes="output")],
    "batch": [dict(batch=True)],
    "widen": [dict(types="i8>i32", widen="i16"),
              # u8 widened to i16, then to i32 (axioms.egg: widening twice is once)
              dict(types="u8>i32", widen="i16", b="col", chunk=8),
              dict(types="u8>i32", widen="i16", a="col", b="col", operand="scale", tiles=(1, 2))],
    "operand": [dict(operand="neg"), dict(operand="scale"), dict(operand="boundary"),
                dict(operand="zero_point", types="i8>i32"), dict(operand="scale", types="i8>i32"),
                dict(operand="zero_point_param", types="u8>i32", tiles=(2, 1)),
                # a scaled product whose reduction is cut into fragment-sized chunks
                dict(operand="scale", chunk=32), dict(operand="scale", chunk=8, K=24, init="bias_col"),
                dict(operand="zero_point_a", types="i8>i32", K=48)],
    "acc_layout": [dict(acc_layout="yx"), dict(acc_layout="yx", types="i8>i32"),
                   dict(acc_layout="yx", epilogue="relu"), dict(acc_layout="yx", epilogue="bias", M=32, N=8),
                   dict(acc_layout="yx", tiles=(2, 2), epilogue="relu", K=16),
                   dict(acc_layout="yx", tiles=(1, 2), types="bf16>f32")],
    "remainder": [dict(n=40), dict(n=48, tail="guard"), dict(n=40, tail="guard", operand="scale"),
                  dict(n=80, tail="shift"), dict(K=48),
                  dict(K=40), dict(K=24, types="i8>i32"),
                  # a reduction longer than a fragment's K but no multiple of it: chunks of 16
                  # and a padded remainder (partition.py)
                  dict(K=40, chunk=64), dict(K=24, chunk=32, M=32, N=8, epilogue="bias"),
                  # a computed operand in a padded chunk, and one gathered by a boundary
                  # condition of a symbolic size: staged in shared memory
                  dict(operand="neg", chunk=8), dict(operand="boundary", sizes="output", tiles=(1, 2))],
}
WMMA_CROSSES = {
    "types": [dict(types="i8>i32", M=32, N=8), dict(types="u8>i32", M=8, N=32),
              dict(types="bf16>f32", b="col"), dict(types="f16>f16", sizes="symbolic"),
              dict(types="i8>i32", b="col", sizes="symbolic"),
              # float32 as high and low tf32 parts (3xTF32): m16n16k8 only,
              # so a 32 x 8 tile is a hardware limit
              dict(types="tf32>f32", tiles=(2, 2), epilogue="relu"),
              dict(types="tf32>f32", init="bias_row", sizes="symbolic", a="col"),
              dict(types="tf32>f32", K=40, chunk=32, epilogue="silu"),
              dict(types="tf32>f32", M=32, N=8)],
    "shape": [dict(M=32, N=8, b="col"), dict(M=8, N=32, sizes="symbolic")],
    "sizes": [dict(sizes="symbolic", b="col"), dict(sizes="symbolic", init="cbuf")],
}
# AMX dimensions crossed with every operand type, WMMA ones with every shape.
AMX_TYPE_CROSS = ("init", "epilogue", "order", "b_layout", "tiles", "sizes", "form")
WMMA_TYPE_CROSS = ("init", "epilogue", "b_layout", "sizes")
WMMA_SHAPE_CROSS = ("init", "epilogue", "b_layout", "a_layout", "sizes", "chunk", "order")


def _name(spec, base):
    parts = [spec["acc"]]
    for key, value in spec.items():
        if key != "acc" and value != base[key]:
            text = "x".join(map(str, value)) if isinstance(value, tuple) else str(value)
            text = text.replace("*", "").replace(">", "to")
            parts.append(f"{key}-{text}" if not isinstance(value, bool) else key)
    return "_".join(parts) if len(parts) > 1 else f"{spec['acc']}_base"


def variants():
    """name -> (dimension, spec), in a fixed order."""
    out = {}

    def add(dimension, base, overrides):
        spec = dict(base, **overrides)
        out.setdefault(_name(spec, base), (dimension, spec))

    _amx_variants(add)
    _wmma_variants(add)
    return out


# Pairs of the dimensions above, for combinations nobody listed: each pair
# of these overrides, merged (the second wins where both set a field).
AMX_PAIRED = [dict(init="cbuf"), dict(init="bias_row"), dict(epilogue="relu"), dict(epilogue="cast"),
              dict(order="ba"), dict(b="nk"), dict(M=32), dict(chunk="2x"), dict(sizes="symbolic"),
              dict(batch=True), dict(tiles=(1, 2), loops="k_outer"), dict(types="u8*i8", b="vnni")]
WMMA_PAIRED = [dict(init="cbuf"), dict(init="bias_row"), dict(epilogue="bias"), dict(epilogue="cast"),
               dict(b="col"), dict(a="col"), dict(chunk=32), dict(tiles=(2, 2)), dict(sizes="output"),
               dict(types="i8>i32"), dict(M=32, N=8), dict(batch=True)]


def _pairs(add, base, overrides):
    for i, first in enumerate(overrides):
        for second in overrides[i + 1:]:
            if set(first) & set(second):
                continue  # the same dimension twice: one would hide the other
            add("pairs", base, dict(first, **second))


def _amx_variants(add):
    add("base", AMX_BASE, {})
    for dim, values in AMX_AXES.items():
        for o in values:
            add(dim, AMX_BASE, o)
    for o in AMX_SCALARIZED:
        add("tiles", AMX_BASE, o)
    for dim, values in AMX_CROSSES.items():
        for o in values:
            add(dim, AMX_BASE, o)
    for types, layout in (("i8*i8", "vnni"), ("u8*i8", "vnni"), ("u8*u8", "std"),
                          ("bf16", "vnni")):
        for dim in AMX_TYPE_CROSS:
            for o in AMX_AXES[dim]:
                add(dim, AMX_BASE, dict(o, types=types, b=o.get("b", layout)))
    _pairs(add, AMX_BASE, AMX_PAIRED)


def _wmma_variants(add):
    add("base", WMMA_BASE, {})
    for dim, values in WMMA_AXES.items():
        for o in values:
            add(dim, WMMA_BASE, o)
    for dim, values in WMMA_CROSSES.items():
        for o in values:
            add(dim, WMMA_BASE, o)
    for types in ("bf16>f32", "i8>i32", "f16>f16"):
        for dim in WMMA_TYPE_CROSS:
            for o in WMMA_AXES[dim]:
                add(dim, WMMA_BASE, dict(o, types=types))
    for shape in (dict(M=32, N=8), dict(M=8, N=32)):
        for dim in WMMA_SHAPE_CROSS:
            for o in WMMA_AXES[dim]:
                add(dim, WMMA_BASE, dict(shape, **o))
    _pairs(add, WMMA_BASE, WMMA_PAIRED)


# ---------------------------------------------------------------- AMX pipelines

def _amx_elem(hl, name):
    return {"bf16": hl.BFloat(16), "i8": hl.Int(8), "u8": hl.UInt(8)}[name]


def _initial_value(hl, s, acc_t, args, col, row, params):
    """The accumulator's pure definition: zero, a C buffer (C += A * B), a
    bias along the columns or down the rows, or a constant."""
    if s["init"] == "cbuf":
        C = hl.ImageParam(acc_t, len(args), "C")
        params.append(C)
        return C[args]
    if s["init"] in ("bias_col", "bias_row"):
        bias = hl.ImageParam(acc_t, 1, "bias")
        params.append(bias)
        return bias[col] if s["init"] == "bias_col" else bias[row]
    return hl.cast(acc_t, 3 if s["init"] == "const" else 0)


def _consumer(hl, s, acc, args, col, narrow_t, params, acc_args=None):
    """The Func that reads the accumulator: a plain copy (acc.in()) or an
    epilogue that computes with it."""
    value = acc[acc_args or args]
    if s["epilogue"] == "none" and (acc_args is None or acc_args is args):
        return acc.in_()
    if s["epilogue"] == "relu":
        value = hl.max(value, 0)
    elif s["epilogue"] == "scale":
        value = value * 3
    elif s["epilogue"] == "bias":
        ebias = hl.ImageParam(acc.type(), 1, "ebias")
        params.append(ebias)
        value = value + ebias[col]
    elif s["epilogue"] == "cast":
        value = hl.cast(narrow_t, value)
    elif s["epilogue"] == "sigmoid":
        value = 1 / (1 + hl.exp(-value))
    elif s["epilogue"] == "silu":
        value = value / (1 + hl.exp(-value))
    out = hl.Func("out")
    out[args] = value
    return out


OPERAND_FORMS = ("plain", "neg", "scale", "zero_point", "boundary", "zero_point_param", "zero_point_a")
"""How the product reads its operands: as loaded; A negated; A times 3; both
minus a zero point ((A - 3) * (B - 5), integers only); A through
BoundaryConditions.constant_exterior (a clamped, selected index); both minus
zero points given at run time (scalar Params za and zb); A alone minus a
run-time zero point (symmetric weights, as quantized layers have)."""

ZERO_POINT_FORMS = ("zero_point", "zero_point_param", "zero_point_a")


def _buffer_params(hl, params):
    """The ImageParams among a pipeline's params (not the scalar zero points)."""
    return [p for p in params if isinstance(p, hl.ImageParam)]


def _source(hl, s, param):
    """The Func or buffer an operand is read from: A behind a boundary
    condition where the spec asks for one."""
    if s["operand"] == "boundary" and param.name() == "A":
        return hl.BoundaryConditions.constant_exterior(param, 0)
    return param


def _product(hl, s, cast, a, b, integer, params):
    """cast(a) * cast(b) (or b * a) after the spec's operand expression."""
    ca, cb = cast(a), cast(b)
    if s["operand"] == "neg":  # negated before the widening: Halide's atomic() cannot
        # prove `acc - a * b` associative, so users negate the narrow operand
        ca = cast(-a) if not integer else cast(-hl.cast(hl.Int(16), a))
    elif s["operand"] == "scale":
        ca = ca * 3
    elif s["operand"] == "zero_point" and integer:
        ca, cb = ca - 3, cb - 5
    elif s["operand"] in ("zero_point_param", "zero_point_a") and integer:
        za = hl.Param(hl.Int(32), "za")
        params.append(za)
        ca = ca - za
        if s["operand"] == "zero_point_param":
            zb = hl.Param(hl.Int(32), "zb")
            params.append(zb)
            cb = cb - zb
    return cb * ca if s["order"] == "ba" else ca * cb


INPUT_PADDING: dict = {}
"""Input name -> the least extent of each dimension. A schedule may read an
input past the output's edge (a producer computed whole tiles under a
GuardWithIf consumer); Halide then asserts a region larger than the drawn
shape, and a user pads the input to it. tools/gen_random_sweep.py reads that
region from a first dump's assertions and sets this in the child."""


def _padded(param, extents):
    least = tuple(INPUT_PADDING.get(param.name(), ())) + (0,) * len(extents)
    return tuple(max(e, p) for e, p in zip(extents, least))


def _dense_input(param, *extents):
    gf.dense(param, *_padded(param, extents))


_REQUIRED = re.compile(rb'halide_error_access_out_of_bounds\("Input buffer (\w+)", (\d+), (-?\d+), (-?\d+),')
_FIXED_EXTENT = re.compile(rb"assert\((\w+)\.extent\.(\d+) == (\d+),")


def input_padding(dump: bytes) -> str:
    """The padding a dump's inputs need ("A=48x32,..."; "" for none): where
    Halide's own assertions require more of an input than its constraints
    give it (the program could never run), the least extents that run."""
    fixed = {(b, int(d)): int(e) for b, d, e in _FIXED_EXTENT.findall(dump)}
    needed: dict[bytes, dict[int, int]] = {}
    for buffer, dim, _low, high in _REQUIRED.findall(dump):
        key = (buffer, int(dim))
        if key in fixed and int(high) + 1 > fixed[key]:
            needed.setdefault(buffer, {})[int(dim)] = int(high) + 1
    items = []
    for buffer, dims in sorted(needed.items()):
        count = 1 + max(d for b, d in fixed if b == buffer)
        extents = [max(dims.get(d, 0), fixed.get((buffer, d), 0)) for d in range(count)]
        items.append(f"{buffer.decode()}=" + "x".join(map(str, extents)))
    return ",".join(items)


def take_padding(name):
    """NAME of NAME@A=48x32,B=...: the child's argument, with the padding set."""
    name, _, padding = name.partition("@")
    for item in filter(None, padding.split(",")):
        buffer, extents = item.split("=")
        INPUT_PADDING[buffer] = tuple(int(e) for e in extents.split("x"))
    return name


def _tail(hl, s):
    return {"auto": hl.TailStrategy.Auto, "guard": hl.TailStrategy.GuardWithIf,
            "shift": hl.TailStrategy.ShiftInwards}[s["tail"]]


def build_amx(s):
    """One AMX variant. Output columns y (innermost), rows x; mm is in AMXTile."""
    hl = gf._hl()
    a_t, b_t = ("bf16", "bf16") if s["types"] == "bf16" else s["types"].split("*")
    fp = a_t == "bf16"
    kp = 2 if fp else 4
    rk = (32 if fp else 64) * {"2x": 2, "half": 0.5}.get(s["chunk"], 1)
    rk = int(rk)
    acc_t = hl.Float(32) if fp else hl.Int(32)
    M, N, K = s["M"], s["N"], s["K"]
    ny, nx = s["tiles"]
    # Two outer tiles each way, so the loops over tiles are real loops.
    rows, cols = (M, N) if s["form"] == "single" else (2 * M * nx, 2 * N * ny)
    rows, cols = rows + s["rem"], cols + s["rem"]  # a partial tile at each edge
    extra = [hl.Var("n")] if s["batch"] else []
    x, y = hl.Var("x"), hl.Var("y")
    nb = len(extra)
    A = hl.ImageParam(_amx_elem(hl, a_t), 2 + nb, "A")
    B = hl.ImageParam(_amx_elem(hl, b_t), (3 if s["b"] == "vnni" else 2) + nb, "B")
    r = hl.RDom([(0, K)], "r")
    sa = _source(hl, s, A)
    a = sa[[x, r.x] + extra] if s["a"] == "col" else sa[[r.x, x] + extra]
    b = {"std": lambda: B[[y, r.x] + extra], "nk": lambda: B[[r.x, y] + extra],
         "vnni": lambda: B[[r.x % kp, y, r.x // kp] + extra]}[s["b"]]()
    params = [A, B]
    zero = hl.cast(acc_t, 0)
    mm = hl.Func("mm")
    args = [y, x] + extra
    # acc_layout "xy": the accumulator transposed, mm(x, y), read back as out(y, x)
    acc_args = [x, y] + extra if s["acc_layout"] == "xy" else args
    mm[acc_args] = _initial_value(hl, s, acc_t, args, y, x, params)
    mm[acc_args] += _product(hl, s, lambda v: hl.cast(acc_t, v), a, b, not fp, params)
    out = _consumer(hl, s, mm, args, y, hl.BFloat(16) if fp else hl.Int(8), params,
                    acc_args)
    if s["form"] == "two_acc":  # two accumulators in AMXTile, summed by the consumer
        mm2 = hl.Func("mm2")
        mm2[acc_args] = zero
        mm2[acc_args] += hl.cast(acc_t, a) * hl.cast(acc_t, b)
        final = hl.Func("out")
        final[args] = mm[acc_args] + mm2[acc_args]
        out = final
    out.bound(x, 0, rows).bound(y, 0, cols)
    if s["batch"]:
        out.bound(extra[0], 0, 2)
    if s["sizes"] == "const":
        a_shape = (rows, K) if s["a"] == "col" else (K, rows)
        b_shape = {"std": (cols, K), "nk": (K, cols), "vnni": (kp, cols, K // kp)}[s["b"]]
        batch = (2,) if s["batch"] else ()
        _dense_input(A, *a_shape, *batch)
        _dense_input(B, *b_shape, *batch)
        gf.dense(out.output_buffer(), cols, rows, *batch)
        for p in _buffer_params(hl, params[2:]):
            if p.dimensions() == 1:  # bias[x] runs down the rows, the others along y
                _dense_input(p, rows if s["init"] == "bias_row" and p.name() == "bias" else cols)
            else:
                _dense_input(p, cols, rows, *batch)
    accs = [mm] + ([mm2] if s["form"] == "two_acc" else [])
    for f in accs:
        f.store_in(gf.amx_tile())
    if s["form"] == "single":  # the paper's example: one tile, everything vectorized
        mm.compute_at(out, x)
        mm.vectorize(x, M).vectorize(y, N)
        mm.update().atomic().vectorize(x, M).vectorize(y, N).vectorize(r.x, min(rk, K))
        out.vectorize(x, M).vectorize(y, N)
        return out, params
    yo, xo, yi, xi, cy, cx = (hl.Var(n) for n in ("yo", "xo", "yi", "xi", "cy", "cx"))
    rro, rri = hl.RVar("rro"), hl.RVar("rri")
    out.tile(y, x, yo, xo, yi, xi, N * ny, M * nx, _tail(hl, s))
    out.tile(yi, xi, cy, cx, yi, xi, N, M).reorder(yi, xi, cy, cx, yo, xo)
    out.vectorize(yi).vectorize(xi).unroll(cy).unroll(cx)
    if s["parallel"]:
        out.parallel(xo)
    for f in accs:
        f.compute_at(out, yo)
        f.tile(y, x, cy, cx, yi, xi, N, M).reorder(yi, xi, cy, cx)
        f.vectorize(yi).vectorize(xi).unroll(cy).unroll(cx)
        upd = f.update().split(r.x, rro, rri, min(rk, K)).tile(y, x, cy, cx, yi, xi, N, M)
        if s["loops"] == "k_outer":
            upd.reorder(rri, yi, xi, cy, cx, rro)
        elif s["loops"] == "swap_tiles":
            upd.reorder(rri, yi, xi, rro, cx, cy)
        else:
            upd.reorder(rri, yi, xi, rro, cy, cx)
        upd.atomic().vectorize(rri).vectorize(yi).vectorize(xi)
        if s["unroll"] == "tiles":
            upd.unroll(cy).unroll(cx)
        elif s["unroll"] == "k":
            upd.unroll(cy).unroll(cx).unroll(rro, 2)
    return out, params


# --------------------------------------------------------------- WMMA pipelines

def _wmma_types(hl, types):
    a, acc = types.split(">")
    elem = {"f16": hl.Float(16), "bf16": hl.BFloat(16), "i8": hl.Int(8), "u8": hl.UInt(8),
            "f64": hl.Float(64), "tf32": hl.Float(32)}[a]
    return elem, {"f32": hl.Float(32), "f16": hl.Float(16), "i32": hl.Int(32),
                  "f64": hl.Float(64)}[acc]


def build_wmma(s):
    """One WMMA variant. Output columns x (innermost), rows y; prod is in Register."""
    hl = gf._hl()
    elem, acc_t = _wmma_types(hl, s["types"])
    if s["types"] == "f64>f64" and (s["M"], s["N"], s["chunk"]) == (16, 16, 16):
        s = dict(s, M=8, N=8, chunk=4)  # the only f64 shape: m8n8k4
    if s["types"] == "tf32>f32" and s["chunk"] == 16:
        s = dict(s, chunk=8)  # tf32 is m16n16k8
    M, N, K, chunk = s["M"], s["N"], s["K"], s["chunk"]
    my, mx = s["tiles"]
    n = s["n"]  # the output's extent: not a multiple of the tile leaves a partial one
    nb = 1 if s["batch"] else 0
    A = hl.ImageParam(elem, 2 + nb, "A")
    B = hl.ImageParam(elem, 2 + nb, "B")
    x, y = hl.Var("x"), hl.Var("y")
    extra = [hl.Var("n")] if s["batch"] else []
    k = hl.RDom([(0, K)], "k")
    sa = _source(hl, s, A)
    a = sa[[y, k.x] + extra] if s["a"] == "col" else sa[[k.x, y] + extra]
    b = B[[k.x, x] + extra] if s["b"] == "col" else B[[x, k.x] + extra]
    params = [A, B]
    cast = (lambda v: v) if elem == acc_t else (lambda v: hl.cast(acc_t, v))
    if s["widen"]:
        cast = lambda v: hl.cast(acc_t, hl.cast(hl.Int(16), v))  # noqa: E731
    args = [x, y] + extra
    # acc_layout "yx": the accumulator transposed, prod(y, x), read back as out(x, y)
    acc_args = [y, x] + extra if s["acc_layout"] == "yx" else args
    prod = hl.Func("prod")
    prod[acc_args] = _initial_value(hl, s, acc_t, args, x, y, params)
    prod[acc_args] += _product(hl, s, cast, a, b, not acc_t.is_float(), params)
    out = _consumer(hl, s, prod, args, x, hl.Float(16) if acc_t.is_float() else hl.Int(8), params,
                    acc_args)
    if s["sizes"] != "output":  # "output": the output's size is known only at run time
        out.bound(x, 0, n).bound(y, 0, n)
    if s["batch"]:
        out.bound(extra[0], 0, 2)
    batch = (2,) if s["batch"] else ()
    for p in (A, B):  # dimension 0 is k for a row-major A and a column-major B
        shape = (K, n) if (p is A and s["a"] == "row") or (p is B and s["b"] == "col") \
            else (n, K)
        if s["sizes"] == "symbolic":
            shape = _padded(p, shape)
            p.dim(0).set_bounds(0, shape[0]).set_stride(1)
            p.dim(1).set_bounds(0, shape[1])
        elif s["sizes"] == "output":
            p.dim(0).set_stride(1)
        else:
            _dense_input(p, *shape, *batch)
    for p in _buffer_params(hl, params[2:]):
        if p.dimensions() == 1:
            _dense_input(p, n)
        elif s["sizes"] == "symbolic":
            rows_cols = _padded(p, (n, n))
            p.dim(0).set_bounds(0, rows_cols[0]).set_stride(1)
            p.dim(1).set_bounds(0, rows_cols[1])
        else:
            _dense_input(p, n, n, *batch)
    if s["sizes"] != "output":
        gf.dense(out.output_buffer(), n, n, *batch)
    xo, yo, xi, yi = (hl.Var(v) for v in ("xo", "yo", "xi", "yi"))
    ko, ki = hl.RVar("ko"), hl.RVar("ki")
    out.tile(x, y, xo, yo, xi, yi, N * mx, M * my, _tail(hl, s)).vectorize(xi).vectorize(yi)
    if s["batch"]:
        out.gpu_blocks(xo, yo, extra[0])
    else:
        out.gpu_blocks(xo, yo)
    gf.wmma_acc(prod).compute_at(out, xo).vectorize(x, N * mx).vectorize(y, M * my)
    prod.update().split(k.x, ko, ki, min(chunk, K)).reorder(ki, x, y, ko).atomic() \
        .vectorize(ki).vectorize(x, N * mx).vectorize(y, M * my)
    return out, params


# ---------------------------------------------------------------- child / parent

def child(name, out_path):
    _dimension, spec = variants()[take_padding(name)]
    lower_spec(spec, out_path)


def lower_spec(spec, out_path):
    """In the child: build the spec's pipeline and lower it for its target
    (Halide prints the stages to stderr); exit 3 with Halide's error."""
    hl = gf._hl()
    out, params = (build_amx if spec["acc"] == "amx" else build_wmma)(spec)
    target = gf.AMX_TARGET if spec["acc"] == "amx" else gf.CUDA_TARGET
    if spec["types"] in ("f64>f64", "tf32>f32"):
        target = target.replace("cuda_capability_80", "cuda_capability_86")
    try:
        out.compile_to_lowered_stmt(out_path, params, hl.StmtOutputFormat.Text,
                                    hl.Target(target))
    except hl.HalideError as e:
        print("HALIDE_ERROR: " + " ".join(str(e).split()), file=sys.stderr)
        sys.exit(3)


def generate(name):
    """Return the manifest entry of one variant, writing its dump."""
    import tempfile
    dimension, spec = variants()[name]
    cuda = spec["acc"] == "wmma"
    entry = dict(dimension=dimension, spec={k: list(v) if isinstance(v, tuple) else v
                                            for k, v in spec.items()})
    padding = ""
    for _attempt in range(2):  # again with padded inputs where the schedule reads more
        with tempfile.TemporaryDirectory(prefix="gen_sweep_") as tmp:
            lines, rc, stopped = gf.run_child(f"{name}@{padding}" if padding else name, tmp, cuda,
                                              gf.CUDA_TIMEOUT_S if cuda else gf.CPU_TIMEOUT_S,
                                              script=__file__)
        stages = gf.split_stages(lines)
        if padding or "vectorizing" not in stages:
            break
        padding = input_padding(stages["vectorizing"])
        if not padding:
            break
        entry["padded"] = padding
    if "vectorizing" not in stages:
        entry["halide_error"] = gf.error_text(lines)
        return entry
    (SWEEP / f"{name}.stmt").write_bytes(stages["vectorizing"])
    if not cuda:
        extracted = stages.get("extracting tile operations", b"")
        if rc != 0 and not extracted:
            entry["upstream_amx"] = "refused: " + gf.error_text(lines)[:160]
        elif b"tile_matmul" in extracted:
            entry["upstream_amx"] = "accepted"
        else:
            entry["upstream_amx"] = "ignored"
    return entry


def main(argv):
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2])
        return 0
    all_variants = variants()
    if argv[:1] == ["--list"]:
        for name, (dimension, _spec) in all_variants.items():
            print(f"{dimension:14s} {name}")
        print(f"{len(all_variants)} variants", file=sys.stderr)
        return 0
    names = argv or list(all_variants)
    unknown = [n for n in names if n not in all_variants]
    if unknown:
        print(f"unknown variant(s): {' '.join(unknown)} (see --list)", file=sys.stderr)
        return 2
    SWEEP.mkdir(parents=True, exist_ok=True)
    manifest_path = SWEEP / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest = {k: v for k, v in manifest.items() if k in all_variants}
    if not argv:  # a full run: drop dumps of variants that no longer exist
        for stale in SWEEP.glob("*.stmt"):
            if stale.stem not in all_variants:
                stale.unlink()
    with ThreadPoolExecutor(max_workers=2) as pool:
        for name, entry in zip(names, pool.map(generate, names)):
            manifest[name] = entry
            status = entry.get("halide_error", entry.get("upstream_amx", "ok"))
            print(f"{name:60s} {status[:70]}", flush=True)
    manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    failed = [n for n in names if "halide_error" in manifest[n]]
    print(f"{len(names) - len(failed)} generated, {len(failed)} rejected by Halide")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
