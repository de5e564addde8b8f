#!/usr/bin/env python3
"""Generate the Halide IR fixtures in tests/fixtures/halide/ with the `halide` package.

Usage (from the repository root, with the venv that has halide==21.0.0):

    .venv/bin/python tools/gen_fixtures.py            # regenerate every case
    .venv/bin/python tools/gen_fixtures.py CASE ...   # regenerate only these cases
    .venv/bin/python tools/gen_fixtures.py --list     # list the cases

Each case is a small function that builds a pipeline and its schedule in the style of
the HardBoiled paper (accumulator Func stored in accelerator memory, computed at the
consumer wrapper, init vectorized, update `atomic()` and vectorized over the reduction
split and both output dims, wrapper vectorized). Halide writes its per-pass debug dump
from native code to fd 2, so the script re-runs itself as a child
(`gen_fixtures.py --child CASE OUT`) with HL_DEBUG_CODEGEN=2 and HL_COLORS=0 and reads
the child's stderr. The child calls `compile_to_lowered_stmt(OUT, ...)` with an explicit
target. Per case, tests/fixtures/halide/<case>/ receives:

* vectorizing.stmt: the body of "Lowering after vectorizing:", byte-exact, no header;
* lowered.stmt (CPU cases): the file written by compile_to_lowered_stmt, byte-exact;
* extracting_tile_operations.stmt (AMX cases, when printed): upstream Halide's own AMX
  pass output. It is known to be wrong for a standard-layout B; kept as evidence;
* debug.log (the two single-tile bf16 AMX cases): the child's whole stderr. It is
  byte-exact except for one line: Halide prints `dir_rmdir: /tmp/<random>` for a mkdtemp
  directory, and the random name is replaced by XXXXXX so that reruns are identical.
  The child runs in a scratch directory and is given the relative path `lowered.stmt`,
  so the `Module.compile(): stmt lowered.stmt` line does not depend on the checkout.

CUDA lowering can be very slow (NVPTX codegen of scalarized vectors), so for CUDA cases
the child is killed as soon as the vectorizing stage has been printed. Every child has
a timeout. MANIFEST.json records target, accelerator, accumulator, types, layout, etc.
The Halide output is deterministic: regenerating gives byte-identical files.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from hardboiled.frontend.stages import stage_body_line_count  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "halide"
AMX_TARGET = "x86-64-linux-avx512_sapphirerapids"
CUDA_TARGET = "x86-64-linux-cuda-cuda_capability_80"
CPU_TARGET = "x86-64-linux-avx2"
CPU_TIMEOUT_S = 180
CUDA_TIMEOUT_S = 300
HEADER = re.compile(rb"^Lowering after (.*?):?( \(unchanged\))?$")
DEBUG_LOG_CASES = {"amx_bf16_matmul_std_single", "amx_bf16_matmul_vnni_single",
                   "cpu_guarded_vectorize", "cpu_async_producers", "cpu_parallel_closure",
                   "cpu_bf16_literals", "cpu_hoisted_storage", "cpu_prefetch", "cpu_strided_interleave",
                   "cpu_extern_stage", "cpu_atomic_mutex", "cpu_strings_and_types"}

CASES = {}  # name -> dict(build=..., target=..., manifest metadata)


def case(name, accelerator, accumulator, types, b_layout, strides, description):
    """Register a case builder. The builder returns (output Func, [input params])."""
    def register(build):
        CASES[name] = dict(
            build=build,
            target={"amx": AMX_TARGET, "wmma": CUDA_TARGET, "none": CPU_TARGET}[accelerator],
            accelerator=accelerator, accumulator=accumulator,
            memory_type={"amx": "AMXTile", "wmma": "Register", "none": "n/a"}[accelerator],
            types=types, b_layout=b_layout, strides=strides, description=description)
        return build
    return register


# --------------------------------------------------------------------------- helpers

def _hl():
    import halide  # imported lazily: the parent process never needs libHalide
    return halide


def amx_tile():
    return _hl().MemoryType(8)  # AMXTile in Halide 21; the Python enum lacks the name


def dense(param, *extents):
    """Give an input/output buffer constant mins, extents and dense strides."""
    stride = 1
    for d, e in enumerate(extents):
        param.dim(d).set_bounds(0, e).set_stride(stride)
        stride *= e


def hl_type(name):
    hl = _hl()
    return {"bf16": hl.BFloat(16), "f16": hl.Float(16), "i8": hl.Int(8),
            "u8": hl.UInt(8)}[name]


# ------------------------------------------------------------------ AMX matmuls

def amx_matmul(a_t="bf16", b_t="bf16", vnni=False, M=16, N=16, K=32, tiled=True,
               acc=(1, 1), k_outer=False, preload=None, const=False, specialize=False):
    """mm(y, x) += A(r, x) * B(y, r) (y = column, innermost; x = row) on AMX tiles.

    vnni: B is 3-D B(r % kp, y, r / kp) with kp = 4 / sizeof(elem). acc = (ny, nx)
    16x16 accumulator tiles per mm allocation (tile loops unrolled). k_outer: the
    reduction chunk loop rro is outside the accumulator tile loops. preload: "A" or "B"
    stages that operand via .in_() in AMXTile at the update's rro loop.
    """
    hl = _hl()
    fp = a_t == "bf16"
    kp = 2 if fp else 4  # elements per 32-bit VNNI group
    rk = 32 if fp else 64  # reduction chunk of one tile op (64 bytes per row)
    A = hl.ImageParam(hl_type(a_t), 2, "A")
    B = hl.ImageParam(hl_type(b_t), 3 if vnni else 2, "B")
    x, y = hl.Var("x"), hl.Var("y")
    r = hl.RDom([(0, K)], "r")
    acc_t = hl.f32 if fp else hl.i32
    b = B[r.x % kp, y, r.x // kp] if vnni else B[y, r.x]
    mm = hl.Func("mm")
    mm[y, x] = hl.f32(0) if fp else hl.i32(0)
    mm[y, x] += acc_t(A[r.x, x]) * acc_t(b)
    out = mm.in_()
    out.bound(x, 0, M).bound(y, 0, N)
    if const:
        dense(A, K, M)
        dense(B, *((kp, N, K // kp) if vnni else (N, K)))
        dense(out.output_buffer(), N, M)
    mm.store_in(amx_tile())
    if not tiled:  # the paper's example: one tile, everything vectorized
        mm.compute_at(out, x)
        mm.vectorize(x, M).vectorize(y, N)
        mm.update().atomic().vectorize(x, M).vectorize(y, N).vectorize(r.x, min(rk, K))
        out.vectorize(x, M).vectorize(y, N)
        return out, [A, B]
    ny, nx = acc
    yo, xo, yi, xi, cy, cx = (hl.Var(n) for n in ("yo", "xo", "yi", "xi", "cy", "cx"))
    rro, rri = hl.RVar("rro"), hl.RVar("rri")
    out.tile(y, x, yo, xo, yi, xi, 16 * ny, 16 * nx)
    out.tile(yi, xi, cy, cx, yi, xi, 16, 16).reorder(yi, xi, cy, cx, yo, xo)
    out.vectorize(yi).vectorize(xi).unroll(cy).unroll(cx)
    if specialize:  # a second copy of the loop nest under `if (A.stride.1 == K)`
        out.specialize(A.dim(1).stride() == K)
    mm.compute_at(out, yo)
    mm.tile(y, x, cy, cx, yi, xi, 16, 16).reorder(yi, xi, cy, cx)
    mm.vectorize(yi).vectorize(xi).unroll(cy).unroll(cx)
    upd = mm.update().split(r.x, rro, rri, rk).tile(y, x, cy, cx, yi, xi, 16, 16)
    if k_outer:
        upd.reorder(rri, yi, xi, cy, cx, rro)
    else:
        upd.reorder(rri, yi, xi, rro, cy, cx)
    upd.atomic().vectorize(rri).vectorize(yi).vectorize(xi).unroll(cy).unroll(cx)
    if preload:  # only with ny == 1, so B is one tile and A is nx 16-row tiles
        w = (A if preload == "A" else B).in_()
        w.compute_at(mm, rro).store_in(amx_tile())
        v = w.args()
        if preload == "A":  # A.in()(k, row): one unrolled store per 16-row tile
            t, rows = hl.Var("t"), hl.Var("rows")
            w.split(v[1], t, rows, 16).unroll(t).vectorize(v[0]).vectorize(rows)
        else:
            for d in v:
                w.vectorize(d)
    return out, [A, B]


_SINGLE = ("mm(y,x) += f32(A(r,x))*f32(B({b})) with r in [0,32), 16x16 output bound on "
           "mm.in(); mm in AMXTile computed at mm.in() x; init, update (atomic) and "
           "wrapper vectorized 16x16 (x32 over r): the paper's single-tile example.")
_TILED = ("64x64 output, K=128, {types}, {layout}: mm.in() tiled 16x16 (loops over "
          "tiles), mm in AMXTile computed per tile, update splits r into a serial rro "
          "loop and rri={rk} vectorized innermost with the 16x16 tile, atomic{extra}.")
_CONST = "; A, B and the output have constant bounds and dense constant strides"
_BIG = dict(M=64, N=64, K=128)
# Intel Optimization Reference Manual (20.5.5) MatMul schedules, 32x32 output, K=64.
# Halide's vectorizer only turns an atomic update into a vector_reduce when the
# accumulator index is one dense/strided ramp, so multiple accumulator tiles are
# stacked along rows (16 columns wide): each 16x16 tile is then contiguous in mm.
_ORM = ("Intel ORM MatMul, {what}; bf16 32x32 output, K=64, {layout} B.")
_REF = ("reference: loop over 16x16 output tiles, one AMXTile accumulator per tile, K "
        "loop (rro, rri=32 vectorized) inside")
_REORDER = ("loop reordering: mm holds 2 accumulator tiles (2 row tiles, 16x32 f32 in "
            "AMXTile) and the K-chunk loop rro is outside the unrolled tile loop")
_PRE_A = ("preloading A: as loop reordering, plus A.in() stored in AMXTile computed at "
          "the update's rro loop (two 16x32 A tiles, one unrolled vector store each)")
_PRE_B = ("preloading B: as loop reordering, plus B.in() stored in AMXTile computed at "
          "the update's rro loop (one B tile, reused by both accumulator tiles)")
_SMALL = dict(M=32, N=32, K=64)
_MULTI = dict(_SMALL, acc=(1, 2), k_outer=True)

AMX_CASES = [
    # (name, types, B layout, strides, amx_matmul arguments, description)
    ("amx_bf16_matmul_std_single", "bf16*bf16->f32", "standard", "symbolic",
     dict(tiled=False), _SINGLE.format(b="y,r")),
    ("amx_bf16_matmul_vnni_single", "bf16*bf16->f32", "vnni", "symbolic",
     dict(tiled=False), _SINGLE.format(b="r%2,y,r/2")),
    ("amx_bf16_matmul_std_tiled", "bf16*bf16->f32", "standard", "symbolic", _BIG,
     _TILED.format(types="bf16*bf16->f32", layout="standard B", rk=32, extra="")),
    ("amx_bf16_matmul_vnni_tiled", "bf16*bf16->f32", "vnni", "symbolic", _BIG,
     _TILED.format(types="bf16*bf16->f32", layout="VNNI B(r%2,y,r/2)", rk=32,
                   extra="")),
    ("amx_bf16_matmul_std_tiled_const", "bf16*bf16->f32", "standard", "constant",
     dict(_BIG, const=True),
     _TILED.format(types="bf16*bf16->f32", layout="standard B", rk=32, extra=_CONST)),
    ("amx_bf16_matmul_vnni_tiled_const", "bf16*bf16->f32", "vnni", "constant",
     dict(_BIG, const=True),
     _TILED.format(types="bf16*bf16->f32", layout="VNNI B(r%2,y,r/2)", rk=32, extra=_CONST)),
    ("amx_int8_matmul_vnni_tiled_const", "i8*i8->i32", "vnni", "constant",
     dict(_BIG, const=True),
     _TILED.format(types="i8*i8->i32", layout="VNNI B(r%4,y,r/4)", rk=64, extra=_CONST)),
    ("amx_bf16_matmul_std_8x16", "bf16*bf16->f32", "standard", "symbolic",
     dict(tiled=False, M=8, N=16, K=32),
     "A single 8-row tile (8x16 f32 output, K=32): AMX tiles smaller than 16 rows."),
    ("amx_bf16_matmul_std_specialized", "bf16*bf16->f32", "standard", "symbolic",
     dict(_BIG, specialize=True),
     _TILED.format(types="bf16*bf16->f32", layout="standard B", rk=32,
                   extra="; the output is specialized on A.stride.1 == 128, so the loop nest "
                   "appears twice, in the two branches of an if")),
    ("amx_int8_matmul_std_tiled", "i8*i8->i32", "standard", "symbolic", _BIG,
     _TILED.format(types="i8*i8->i32", layout="standard B", rk=64, extra="")),
]
for _ab in ("i8*i8", "u8*i8", "i8*u8", "u8*u8"):
    _short = "int8" if _ab == "i8*i8" else _ab.replace("*", "")
    AMX_CASES.append((f"amx_{_short}_matmul_vnni_tiled", f"{_ab}->i32", "vnni",
                      "symbolic", _BIG, _TILED.format(types=f"{_ab}->i32", rk=64,
                                                      layout="VNNI B(r%4,y,r/4)",
                                                      extra="")))
for _layout, _short in (("standard", "std"), ("vnni", "vnni")):
    AMX_CASES += [
        (f"amx_bf16_{_short}_ref", "bf16*bf16->f32", _layout, "symbolic", _SMALL,
         _ORM.format(what=_REF, layout=_layout)),
        (f"amx_bf16_{_short}_reorder", "bf16*bf16->f32", _layout, "symbolic", _MULTI,
         _ORM.format(what=_REORDER, layout=_layout)),
        (f"amx_bf16_{_short}_preload_a", "bf16*bf16->f32", _layout, "symbolic",
         dict(_MULTI, preload="A"), _ORM.format(what=_PRE_A, layout=_layout)),
        (f"amx_bf16_{_short}_preload_b", "bf16*bf16->f32", _layout, "symbolic",
         dict(_MULTI, preload="B"), _ORM.format(what=_PRE_B, layout=_layout)),
    ]


def _register_amx(name, types, layout, strides, kwargs, description):
    a_t, b_t = types.split("->")[0].split("*")
    build = lambda: amx_matmul(a_t, b_t, vnni=layout == "vnni", **kwargs)  # noqa: E731
    case(name, "amx", "mm", types, layout, strides, description)(build)


for _entry in AMX_CASES:
    _register_amx(*_entry)


# ------------------------------------------------------------------- WMMA (CUDA)

# ------------------------------------------------------------ parser coverage

@case("cpu_guarded_vectorize", "none", "n/a", "f32", "n/a", "symbolic",
      "No accelerator: a 2-D pipeline with parallel rows, a producer computed at the "
      "consumer's vector loop, GuardWithIf tails (predicated loads and stores), select, "
      "min/max, an extern math call and an int16 cast; exercises the parser on forms "
      "the accelerator cases do not print.")
def cpu_guarded_vectorize():
    hl = _hl()
    A = hl.ImageParam(hl.Float(32), 2, "A")
    x, y = hl.Var("x"), hl.Var("y")
    g, f = hl.Func("g"), hl.Func("f")
    g[x, y] = hl.sqrt(hl.max(A[x, y], 0.0)) * 2.0
    f[x, y] = hl.select(x % 3 == 0, g[x, y] + g[x + 1, y],
                        hl.f32(hl.i16(hl.min(g[x, y], 100.0))))
    f.parallel(y).vectorize(x, 8, hl.TailStrategy.GuardWithIf)
    g.compute_at(f, x).vectorize(x, 8, hl.TailStrategy.GuardWithIf)
    return f, [A]


@case("cpu_async_producers", "none", "n/a", "f32", "n/a", "symbolic",
      "No accelerator: two compute_root producers scheduled async() feeding one "
      "consumer, so the lowering stages print fork with three bodies, acquire and "
      "semaphores; exercises the parser on the asynchronous forms.")
def cpu_async_producers():
    hl = _hl()
    A = hl.ImageParam(hl.Float(32), 1, "A")
    x = hl.Var("x")
    p1, p2, c = hl.Func("p1"), hl.Func("p2"), hl.Func("c")
    p1[x] = A[x] * 2.0
    p2[x] = A[x] + 1.0
    c[x] = p1[x] + p2[x]
    p1.compute_root().async_()
    p2.compute_root().async_()
    return c, [A]


def _coverage(name, description):
    return case(name, "none", "n/a", "mixed", "n/a", "symbolic", description)


@_coverage("cpu_parallel_closure", "A compute_root producer read by a parallel consumer: the "
           "lowered module has an internal closure that reads a buffer the main function allocates.")
def cpu_parallel_closure():
    hl = _hl()
    A = hl.ImageParam(hl.Float(32), 2, "A")
    x, y = hl.Var("x"), hl.Var("y")
    g, f = hl.Func("g"), hl.Func("f")
    g[x, y] = A[x, y] * 3.0
    f[x, y] = g[x, y] - 1.0
    g.compute_root()
    f.parallel(y)
    return f, [A]


@_coverage("cpu_bf16_literals", "bfloat16 arithmetic with literals inside select, vectorized: "
           "0.5h literals must be read as bfloat16 from their context.")
def cpu_bf16_literals():
    hl = _hl()
    A = hl.ImageParam(hl.BFloat(16), 1, "A")
    x = hl.Var("x")
    f = hl.Func("f")
    half = lambda v: hl.cast(hl.BFloat(16), v)  # noqa: E731
    f[x] = hl.select(A[x] < half(1.0), A[x] * half(0.75), half(0.5) - A[x]) + \
        hl.select(x % 3 == 0, half(2.0), half(4.0))
    f.vectorize(x, 8)
    return f, [A]


@_coverage("cpu_hoisted_storage", "A producer computed per row with its storage hoisted to the "
           "root (hoisted_storage blocks in the early stages).")
def cpu_hoisted_storage():
    hl = _hl()
    A = hl.ImageParam(hl.Float(32), 2, "A")
    x, y = hl.Var("x"), hl.Var("y")
    g, f = hl.Func("g"), hl.Func("f")
    g[x, y] = A[x, y] + 2.0
    f[x, y] = g[x, y] * g[x, y + 1]
    g.compute_at(f, y).hoist_storage_root()
    return f, [A]


@_coverage("cpu_prefetch", "An explicit prefetch of the input two rows ahead (prefetch statements).")
def cpu_prefetch():
    hl = _hl()
    A = hl.ImageParam(hl.Float(32), 2, "A")
    x, y = hl.Var("x"), hl.Var("y")
    f = hl.Func("f")
    f[x, y] = A[x, y] * 0.25
    f.prefetch(A, y, y, 2).vectorize(x, 8)
    return f, [A]


@_coverage("cpu_strided_interleave", "Stride-2 and stride-3 vector loads with an unrolled channel "
           "loop (padded allocations when strided loads are staged, interleaves).")
def cpu_strided_interleave():
    hl = _hl()
    A = hl.ImageParam(hl.Float(32), 1, "A")
    x, c = hl.Var("x"), hl.Var("c")
    f, g, out = hl.Func("f"), hl.Func("g"), hl.Func("out")
    f[c, x] = A[2 * x + c] * 0.5
    g[x] = A[3 * x] + A[3 * x + 1]
    out[c, x] = f[c, x] + g[x]
    f.bound(c, 0, 3).reorder(c, x).unroll(c).vectorize(x, 8)
    g.vectorize(x, 8).compute_root()
    out.bound(c, 0, 3).reorder(c, x).unroll(c).vectorize(x, 8)
    f.compute_at(out, x)
    return out, [A]


@_coverage("cpu_extern_stage", "A Func defined by an extern C function, consumed by a Halide Func "
           "(untyped calls to the extern Func before storage flattening).")
def cpu_extern_stage():
    hl = _hl()
    A = hl.ImageParam(hl.Float(32), 1, "A")
    x = hl.Var("x")
    e, out = hl.Func("e"), hl.Func("out")
    e.define_extern("hardboiled_test_extern", [A], hl.Float(32), 1)
    out[x] = e[x] * 2.0
    e.compute_root()
    return out, [A]


@_coverage("cpu_atomic_mutex", "A tuple-valued scatter update made atomic with a mutex and "
           "parallelized (atomic with a mutex, histogram-style stores).")
def cpu_atomic_mutex():
    hl = _hl()
    A = hl.ImageParam(hl.Int(32), 1, "A")
    x = hl.Var("x")
    r = hl.RDom([(0, 64)])
    f, out = hl.Func("f"), hl.Func("out")
    f[x] = hl.Tuple([0, 1])
    bucket = hl.clamp(A[r], 0, 7)
    f[bucket] = hl.Tuple([f[bucket][0] + 1, f[bucket][1] * A[r]])
    f.compute_root().update().atomic(True).parallel(r)
    out[x] = f[x][0] + f[x][1]
    return out, [A]


@_coverage("cpu_strings_and_types", "print_when with a string full of escapes, and uint8, int64 "
           "and float64 inputs mixed with shifts and casts.")
def cpu_strings_and_types():
    hl = _hl()
    A = hl.ImageParam(hl.UInt(8), 1, "A")
    B = hl.ImageParam(hl.Int(64), 1, "B")
    C = hl.ImageParam(hl.Float(64), 1, "C")
    x = hl.Var("x")
    f = hl.Func("f")
    value = hl.f64(A[x]) * C[x] + hl.f64(B[x]) + hl.f64(hl.u16(A[x]) >> 2)
    f[x] = hl.print_when(x == 5, value, "quote \" backslash \\ tab \t newline \n")
    f.vectorize(x, 4)
    return f, [A, B, C]


@_coverage("cpu_math_calls", "The math calls of the paper's applications on vectors: abs of a float "
           "and of a signed integer (an unsigned result), sin_f32, and strict_float (which Halide "
           "lowers to strict_add/strict_mul calls).")
def cpu_math_calls():
    hl = _hl()
    A = hl.ImageParam(hl.Float(32), 1, "A")
    B = hl.ImageParam(hl.Int(16), 1, "B")
    x = hl.Var("x")
    f = hl.Func("f")
    smooth = hl.strict_float(A[x] * 0.5 + A[x + 1] * 0.25)
    f[x] = hl.sin(A[x]) + hl.abs(A[x + 1]) * smooth + hl.f32(hl.abs(B[x] - B[x + 1]))
    f.vectorize(x, 8)
    return f, [A, B]


def wmma_acc(f):
    return f.store_in(_hl().MemoryType.Register)  # stock Halide has no WMMAAccumulator


@case("wmma_f16_matmul", "wmma", "prod", "f16*f16->f32", "standard", "constant",
      "64x64x64 matmul prod(x,y) += f32(A(k,y))*f32(B(x,k)); output = prod.in() tiled "
      "16x16 on gpu_blocks, prod in Register computed per tile, update splits k into a "
      "serial ko loop and vectorized ki=16, atomic, vectorized 16x16x16.")
def wmma_f16_matmul():
    hl = _hl()
    n = 64
    A, B = hl.ImageParam(hl.Float(16), 2, "A"), hl.ImageParam(hl.Float(16), 2, "B")
    x, y, xo, yo, xi, yi = (hl.Var(s) for s in ("x", "y", "xo", "yo", "xi", "yi"))
    k = hl.RDom([(0, n)], "k")
    ko, ki = hl.RVar("ko"), hl.RVar("ki")
    prod = hl.Func("prod")
    prod[x, y] = hl.f32(0)
    prod[x, y] += hl.f32(A[k.x, y]) * hl.f32(B[x, k.x])
    out = prod.in_()
    out.bound(x, 0, n).bound(y, 0, n)
    dense(A, n, n)
    dense(B, n, n)
    dense(out.output_buffer(), n, n)
    out.tile(x, y, xo, yo, xi, yi, 16, 16).vectorize(xi).vectorize(yi).gpu_blocks(xo, yo)
    wmma_acc(prod).compute_at(out, xo).vectorize(x, 16).vectorize(y, 16)
    prod.update().split(k.x, ko, ki, 16).reorder(ki, x, y, ko).atomic() \
        .vectorize(ki).vectorize(x, 16).vectorize(y, 16)
    return out, [A, B]


@case("wmma_scaled_matmul_params", "wmma", "prod", "f16*f16->f32", "standard", "constant",
      "wmma_f16_matmul with scalar Params in the epilogue and the size: out(x, y) = prod(x, y) * gain + "
      "offset, gain a float32 Param, offset an int32 Param, and the output's row count a Param 'rows' "
      "(verification draws values the pipeline's asserts accept, or takes --param).")
def wmma_scaled_matmul_params():
    hl = _hl()
    n = 64
    A, B = hl.ImageParam(hl.Float(16), 2, "A"), hl.ImageParam(hl.Float(16), 2, "B")
    gain, offset, rows = hl.Param(hl.Float(32), "gain"), hl.Param(hl.Int(32), "offset"), hl.Param(hl.Int(32), "rows")
    x, y, xo, yo, xi, yi = (hl.Var(s) for s in ("x", "y", "xo", "yo", "xi", "yi"))
    k = hl.RDom([(0, n)], "k")
    ko, ki = hl.RVar("ko"), hl.RVar("ki")
    prod, out = hl.Func("prod"), hl.Func("out")
    prod[x, y] = hl.f32(0)
    prod[x, y] += hl.f32(A[k.x, y]) * hl.f32(B[x, k.x])
    out[x, y] = prod[x, y] * gain + hl.f32(offset)
    A.dim(0).set_bounds(0, n).set_stride(1)
    A.dim(1).set_stride(n)
    dense(B, n, n)
    out.output_buffer().dim(0).set_bounds(0, n).set_stride(1)
    out.output_buffer().dim(1).set_bounds(0, rows).set_stride(n)
    out.tile(x, y, xo, yo, xi, yi, 16, 16).vectorize(xi).vectorize(yi).gpu_blocks(xo, yo)
    wmma_acc(prod).compute_at(out, xo).vectorize(x, 16).vectorize(y, 16)
    prod.update().split(k.x, ko, ki, 16).reorder(ki, x, y, ko).atomic() \
        .vectorize(ki).vectorize(x, 16).vectorize(y, 16)
    return out, [A, B, gain, offset, rows]


def _wmma_matmul(in_t="f16", acc_t="f32", M=16, N=16, K=16, b_colmajor=False,
                 symbolic=False):
    """wmma_f16_matmul generalized: out tiles of M rows (y) x N columns (x), K chunk.

    acc_t "f16": prod is float16 and the products are not cast. b_colmajor: prod(x,y) +=
    A(k,y)*B(k,x), B's unit-stride dimension is k. symbolic: A and B only get stride 1 in
    dim 0 and constant bounds, so their row stride stays A.stride.1 / B.stride.1.
    """
    hl = _hl()
    n = 64
    A, B = hl.ImageParam(hl_type(in_t), 2, "A"), hl.ImageParam(hl_type(in_t), 2, "B")
    x, y, xo, yo, xi, yi = (hl.Var(s) for s in ("x", "y", "xo", "yo", "xi", "yi"))
    k = hl.RDom([(0, n)], "k")
    ko, ki = hl.RVar("ko"), hl.RVar("ki")
    prod = hl.Func("prod")
    b = B[k.x, x] if b_colmajor else B[x, k.x]
    if acc_t == "f16":
        prod[x, y] = hl.cast(hl.Float(16), 0)
        prod[x, y] += A[k.x, y] * b
    elif acc_t == "i32":
        prod[x, y] = hl.i32(0)
        prod[x, y] += hl.i32(A[k.x, y]) * hl.i32(b)
    else:
        prod[x, y] = hl.f32(0)
        prod[x, y] += hl.f32(A[k.x, y]) * hl.f32(b)
    out = prod.in_()
    out.bound(x, 0, n).bound(y, 0, n)
    for p in (A, B):
        if symbolic:
            p.dim(0).set_bounds(0, n).set_stride(1)
            p.dim(1).set_bounds(0, n)
        else:
            dense(p, n, n)
    dense(out.output_buffer(), n, n)
    out.tile(x, y, xo, yo, xi, yi, N, M).vectorize(xi).vectorize(yi).gpu_blocks(xo, yo)
    wmma_acc(prod).compute_at(out, xo).vectorize(x, N).vectorize(y, M)
    prod.update().split(k.x, ko, ki, K).reorder(ki, x, y, ko).atomic() \
        .vectorize(ki).vectorize(x, N).vectorize(y, M)
    return out, [A, B]


_MATMUL = ("64x64x64 matmul prod(x,y) += {expr}; output = prod.in() tiled {M}x{N} "
           "(rows y x columns x) on gpu_blocks, prod in Register computed per tile, update "
           "splits k into a serial ko loop and vectorized ki={K}, atomic, vectorized "
           "{N}x{M}x{K}{extra}.")
_F32_EXPR = "f32(A(k,y))*f32(B(x,k))"
case("wmma_bf16_matmul", "wmma", "prod", "bf16*bf16->f32", "standard", "constant",
     _MATMUL.format(expr=_F32_EXPR, M=16, N=16, K=16,
                    extra="; A and B are bfloat16"))(
    lambda: _wmma_matmul(in_t="bf16"))
case("wmma_f16acc_matmul", "wmma", "prod", "f16*f16->f16", "standard", "constant",
     _MATMUL.format(expr="A(k,y)*B(x,k)", M=16, N=16, K=16,
                    extra="; the accumulator prod is float16 (no casts)"))(
    lambda: _wmma_matmul(acc_t="f16"))
case("wmma_matmul_m32n8k16", "wmma", "prod", "f16*f16->f32", "standard", "constant",
     _MATMUL.format(expr=_F32_EXPR, M=32, N=8, K=16,
                    extra="; the m32n8k16 WMMA shape"))(
    lambda: _wmma_matmul(M=32, N=8))
case("wmma_matmul_m8n32k16", "wmma", "prod", "f16*f16->f32", "standard", "constant",
     _MATMUL.format(expr=_F32_EXPR, M=8, N=32, K=16,
                    extra="; the m8n32k16 WMMA shape"))(
    lambda: _wmma_matmul(M=8, N=32))
case("wmma_matmul_colmajor_b", "wmma", "prod", "f16*f16->f32", "colmajor", "constant",
     _MATMUL.format(expr="f32(A(k,y))*f32(B(k,x))", M=16, N=16, K=16,
                    extra="; B is read column-major (unit stride along k, not along the "
                    "output column x), no transpose in the schedule"))(
    lambda: _wmma_matmul(b_colmajor=True))
case("wmma_int8_matmul", "wmma", "prod", "i8*i8->i32", "standard", "constant",
     _MATMUL.format(expr="i32(A(k,y))*i32(B(x,k))", M=16, N=16, K=16,
                    extra="; A and B are int8 and prod is int32 (Tensor Core s8 mma)"))(
    lambda: _wmma_matmul(in_t="i8", acc_t="i32"))
case("wmma_uint8_matmul_m32n8k16", "wmma", "prod", "u8*u8->i32", "colmajor", "constant",
     _MATMUL.format(expr="i32(A(k,y))*i32(B(k,x))", M=32, N=8, K=16,
                    extra="; A and B are uint8, B read column-major, prod is int32, the "
                    "m32n8k16 shape"))(
    lambda: _wmma_matmul(in_t="u8", acc_t="i32", M=32, N=8, b_colmajor=True))
case("wmma_f16_matmul_symbolic", "wmma", "prod", "f16*f16->f32", "standard", "symbolic",
     _MATMUL.format(expr=_F32_EXPR, M=16, N=16, K=16,
                    extra="; A and B only have stride 1 in dim 0 and constant bounds, so "
                    "their row strides stay symbolic (A.stride.1, B.stride.1)"))(
    lambda: _wmma_matmul(symbolic=True))


@case("wmma_conv1d", "wmma", "conv", "f16*f16->f32", "n/a", "symbolic",
      "The paper's 1-D convolution conv(x) += f32(K(rx))*f32(I(x+rx)), kernel size 16, "
      "2048 outputs: output split 256 (vectorized, gpu_blocks), conv in Register at the "
      "output block split 256, update split x 256 and rx 8, reorder(rxi, xi, rx, x), "
      "atomic, vectorize xi and rxi.")
def wmma_conv1d():
    hl = _hl()
    K, I = hl.ImageParam(hl.Float(16), 1, "K"), hl.ImageParam(hl.Float(16), 1, "I")
    x, xi = hl.Var("x"), hl.Var("xi")
    rx = hl.RDom([(0, 16)], "rx")
    rxo, rxi = hl.RVar("rxo"), hl.RVar("rxi")
    conv, output = hl.Func("conv"), hl.Func("output")
    conv[x] = hl.f32(0)
    conv[x] += hl.f32(K[rx.x]) * hl.f32(I[x + rx.x])
    output[x] = conv[x]
    output.bound(x, 0, 2048)
    output.split(x, x, xi, 256).vectorize(xi).gpu_blocks(x)
    wmma_acc(conv).compute_at(output, x).split(x, x, xi, 256).vectorize(xi)
    conv.update().split(x, x, xi, 256).split(rx.x, rxo, rxi, 8) \
        .reorder(rxi, xi, rxo, x).atomic().vectorize(xi).vectorize(rxi)
    return output, [K, I]


def _conv2d(stride):
    """conv(x,y) += f32(K(rk.x,rk.y))*f32(I(s*x+rk.x, s*y+rk.y)), 16x16 kernel."""
    hl = _hl()
    K, I = hl.ImageParam(hl.Float(16), 2, "K"), hl.ImageParam(hl.Float(16), 2, "I")
    x, y, xo, yo, xi, yi = (hl.Var(s) for s in ("x", "y", "xo", "yo", "xi", "yi"))
    rk = hl.RDom([(0, 16), (0, 16)], "rk")
    rkxo, rkxi = hl.RVar("rkxo"), hl.RVar("rkxi")
    conv, output = hl.Func("conv"), hl.Func("output")
    conv[x, y] = hl.f32(0)
    conv[x, y] += hl.f32(K[rk.x, rk.y]) * hl.f32(I[stride * x + rk.x, stride * y + rk.y])
    output[x, y] = conv[x, y]
    output.bound(x, 0, 512).bound(y, 0, 4)
    output.tile(x, y, xo, yo, xi, yi, 256, 1).vectorize(xi).gpu_blocks(xo, yo)
    wmma_acc(conv).compute_at(output, xo).vectorize(x, 256)
    conv.update().split(x, x, xi, 256).split(rk.x, rkxo, rkxi, 8) \
        .reorder(rkxi, xi, rkxo, rk.y, x, y).atomic().vectorize(xi).vectorize(rkxi) \
        .unroll(rkxo)
    return output, [K, I]


_CONV2D = ("{what}, 16x16 kernel, 512x4 output: output tiles 256x1 (vectorized, "
           "gpu_blocks), conv in Register per tile, update split rk.x 8 (vectorized with "
           "the 256 outputs, atomic, rkxo unrolled), rk.y left as a serial loop.")
case("wmma_conv2d", "wmma", "conv", "f16*f16->f32", "n/a", "symbolic",
     _CONV2D.format(what="2-D convolution conv(x,y) += f32(K(rk.x,rk.y))*"
                    "f32(I(x+rk.x,y+rk.y)) as a sequence of 1-D convolutions"))(
    lambda: _conv2d(1))
case("wmma_downsample2", "wmma", "conv", "f16*f16->f32", "n/a", "symbolic",
     _CONV2D.format(what="Stride-2 downsample conv(x,y) += f32(K(rk.x,rk.y))*"
                    "f32(I(2x+rk.x,2y+rk.y))"))(lambda: _conv2d(2))


@case("wmma_upsample2", "wmma", "conv", "f16*f16->f32", "n/a", "symbolic",
      "2x upsample as a multiphase filter: kernel_phases(x,y,dx,dy)=K(2x+dx,2y+dy) "
      "(compute_root), conv(x,y,dx,dy) += f32(kernel_phases(rk.x,rk.y,dx,dy))*"
      "f32(I(x+rk.x,y+rk.y)) over an 8x8 rk, reorder_storage(dx,dy,x,y), output(x,y) = "
      "conv(x/2,y/2,x%2,y%2); output tiles 128x2 on gpu_blocks, conv in Register per "
      "tile (64 x 2 x 2), update vectorized over rk.x (8), dx, dy and x (64), atomic.")
def wmma_upsample2():
    hl = _hl()
    K, I = hl.ImageParam(hl.Float(16), 2, "K"), hl.ImageParam(hl.Float(16), 2, "I")
    x, y, dx, dy = hl.Var("x"), hl.Var("y"), hl.Var("dx"), hl.Var("dy")
    xo, yo, xi, yi = hl.Var("xo"), hl.Var("yo"), hl.Var("xi"), hl.Var("yi")
    rk = hl.RDom([(0, 8), (0, 8)], "rk")
    kp, conv, output = hl.Func("kernel_phases"), hl.Func("conv"), hl.Func("output")
    kp[x, y, dx, dy] = K[2 * x + dx, 2 * y + dy]
    conv[x, y, dx, dy] = hl.f32(0)
    conv[x, y, dx, dy] += hl.f32(kp[rk.x, rk.y, dx, dy]) * hl.f32(I[x + rk.x, y + rk.y])
    output[x, y] = conv[x // 2, y // 2, x % 2, y % 2]
    output.bound(x, 0, 256).bound(y, 0, 4)
    kp.compute_root()
    output.tile(x, y, xo, yo, xi, yi, 128, 2).vectorize(xi).vectorize(yi) \
        .gpu_blocks(xo, yo)
    wmma_acc(conv).compute_at(output, xo).reorder_storage(dx, dy, x, y)
    conv.reorder(dx, dy, x, y).vectorize(dx, 2).vectorize(dy, 2).vectorize(x, 64)
    conv.update().reorder(rk.x, dx, dy, x, rk.y, y).atomic().vectorize(rk.x) \
        .vectorize(dx, 2).vectorize(dy, 2).vectorize(x, 64)
    return output, [K, I]


@case("wmma_conv_layer", "wmma", "conv", "f16*f16->f32", "standard", "constant",
      "Conv layer (channels innermost) conv(c,x,y,n) = bias(c) + sum f32(filter(c,rk.y,"
      "rk.z,rk.x))*f32(input(rk.x,x+rk.y,y+rk.z,n)), 3x3, 32->32 channels, 16x16x1 "
      "output, ReLU; output tiles 16(c)x16(x) on gpu_blocks(co,xo,y), conv in Register "
      "per tile, update splits rk.x (input channels) 16, atomic, vectorized 16x16x16.")
def wmma_conv_layer():
    hl = _hl()
    CI, CO, W, H, N = 32, 32, 16, 16, 1
    inp = hl.ImageParam(hl.Float(16), 4, "input")
    flt = hl.ImageParam(hl.Float(16), 4, "filter")
    bias = hl.ImageParam(hl.Float(32), 1, "bias")
    c, x, y, n = hl.Var("c"), hl.Var("x"), hl.Var("y"), hl.Var("n")
    co, ci, xo, xi = hl.Var("co"), hl.Var("ci"), hl.Var("xo"), hl.Var("xi")
    rk = hl.RDom([(0, CI), (0, 3), (0, 3)], "rk")
    rkxo, rkxi = hl.RVar("rkxo"), hl.RVar("rkxi")
    conv, output = hl.Func("conv"), hl.Func("output")
    conv[c, x, y, n] = bias[c]
    conv[c, x, y, n] += hl.f32(flt[c, rk.y, rk.z, rk.x]) * \
        hl.f32(inp[rk.x, x + rk.y, y + rk.z, n])
    output[c, x, y, n] = hl.max(conv[c, x, y, n], hl.f32(0))
    dense(inp, CI, W + 2, H + 2, N)
    dense(flt, CO, 3, 3, CI)
    dense(bias, CO)
    dense(output.output_buffer(), CO, W, H, N)
    output.bound(c, 0, CO).bound(x, 0, W).bound(y, 0, H).bound(n, 0, N)
    output.tile(c, x, co, xo, ci, xi, 16, 16).reorder(ci, xi, co, xo, y, n) \
        .vectorize(ci).vectorize(xi).gpu_blocks(co, xo, y)
    wmma_acc(conv).compute_at(output, co).vectorize(c, 16).vectorize(x, 16)
    conv.update().split(rk.x, rkxo, rkxi, 16) \
        .reorder(rkxi, c, x, rkxo, rk.y, rk.z, y, n).atomic() \
        .vectorize(rkxi).vectorize(c, 16).vectorize(x, 16)
    return output, [inp, flt, bias]


def _dct16(colmajor):
    """Blocked 16x16 DCT down the columns: dct = sum_r D[yi][r] * I[16ty+r][16tx+xi]."""
    hl = _hl()
    D, I = hl.ImageParam(hl.Float(16), 2, "D"), hl.ImageParam(hl.Float(16), 2, "I")
    xi, yi, tx, ty = hl.Var("xi"), hl.Var("yi"), hl.Var("tx"), hl.Var("ty")
    r = hl.RDom([(0, 16)], "r")
    d = D[yi, r.x] if colmajor else D[r.x, yi]
    dct = hl.Func("dct")
    dct[xi, yi, tx, ty] = hl.f32(0)
    dct[xi, yi, tx, ty] += hl.f32(d) * hl.f32(I[16 * tx + xi, 16 * ty + r.x])
    out = dct.in_()
    out.bound(xi, 0, 16).bound(yi, 0, 16).bound(tx, 0, 4).bound(ty, 0, 4)
    dense(D, 16, 16)
    dense(I, 64, 64)
    dense(out.output_buffer(), 16, 16, 4, 4)
    out.vectorize(xi).vectorize(yi).gpu_blocks(tx, ty)
    wmma_acc(dct).compute_at(out, tx).vectorize(xi, 16).vectorize(yi, 16)
    dct.update().reorder(r.x, xi, yi, tx, ty).atomic() \
        .vectorize(r.x, 16).vectorize(xi, 16).vectorize(yi, 16)
    return out, [D, I]


_DCT = ("Blocked 16x16 DCT as a matmul on a 64x64 f16 image: dct(xi,yi,tx,ty) += "
        "f32({d})*f32(I(16tx+xi,16ty+r)); dct.in() vectorized 16x16 per tile on "
        "gpu_blocks(tx,ty), dct in Register per tile, update atomic, vectorized over "
        "r, xi, yi (16 each){extra}.")
case("wmma_dct16", "wmma", "dct", "f16*f16->f32", "standard", "constant",
     _DCT.format(d="D(r,yi)", extra=""))(lambda: _dct16(False))
case("wmma_dct16_colmajor", "wmma", "dct", "f16*f16->f32", "standard", "constant",
     _DCT.format(d="D(yi,r)", extra="; the coefficient matrix D is read column-major "
                 "(unit stride along the output row yi, not along r), no transpose in "
                 "the schedule"))(lambda: _dct16(True))


# ------------------------------------------------------------------ child process

def child(name, out_path):
    hl = _hl()
    spec = CASES[name]
    out, args = spec["build"]()
    try:
        out.compile_to_lowered_stmt(out_path, args, hl.StmtOutputFormat.Text,
                                    hl.Target(spec["target"]))
    except hl.HalideError as e:  # one line the parent can find in stderr
        print("HALIDE_ERROR: " + " ".join(str(e).split()), file=sys.stderr)
        sys.exit(3)


# ----------------------------------------------------------------- parent process

def split_stages(lines):
    """Map stage name -> body bytes (first occurrence) from a list of stderr lines."""
    stages, i = {}, 0
    while i < len(lines):
        m = HEADER.match(lines[i].rstrip(b"\n"))
        i += 1
        if not m or m.group(2):
            continue
        # The body usually ends at the first empty line, but a stored
        # let-expression is followed by an empty line that belongs to the IR;
        # hardboiled's own log reader knows the rule.
        text_lines = [line.decode("utf-8", "replace").rstrip("\n") for line in lines[i:]]
        count = stage_body_line_count(text_lines, 0)
        stages.setdefault(m.group(1).decode(), b"".join(lines[i : i + count]))
        i += count
    return stages


def run_child(name, workdir, stop_after_vectorizing, timeout, script=__file__):
    """Run the child for one case; return (stderr lines, returncode, killed_by_us).

    script: the generator whose `--child NAME OUT` mode builds the case."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HL_")}
    env.update(HL_DEBUG_CODEGEN="2", HL_COLORS="0")
    proc = subprocess.Popen(
        [sys.executable, str(Path(script).resolve()), "--child", name, "lowered.stmt"],
        cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    lines, in_vec, stopped = [], False, False
    try:
        for line in proc.stderr:
            lines.append(line)
            if not stop_after_vectorizing:
                continue
            if line == b"Lowering after vectorizing:\n":
                in_vec = True
            elif in_vec and HEADER.match(line.rstrip(b"\n")):
                # The next stage has started, so the vectorizing body is
                # complete (it may itself contain empty lines).
                proc.kill()
                stopped = True
                break
    finally:
        proc.stderr.close()
        rc = proc.wait()
        timed_out = not timer.is_alive() and not stopped
        timer.cancel()
    if timed_out:
        raise RuntimeError(f"timed out after {timeout} s")
    return lines, rc, stopped


def dump_vectorizing_stage(name, cuda, script, path):
    """Run the child of ``script`` for case ``name`` and write Halide's
    "Lowering after vectorizing:" body to ``path``; return None, or
    Halide's error (nothing written). Raises RuntimeError when the child
    times out."""
    with tempfile.TemporaryDirectory(prefix="hl_child_") as tmp:
        lines, _rc, _stopped = run_child(name, tmp, cuda, CUDA_TIMEOUT_S if cuda else CPU_TIMEOUT_S,
                                         script=script)
    stages = split_stages(lines)
    if "vectorizing" not in stages:
        return error_text(lines)
    path.write_bytes(stages["vectorizing"])
    return None


def error_text(lines):
    for line in reversed(lines):
        if line.startswith(b"HALIDE_ERROR: "):
            return line[len(b"HALIDE_ERROR: "):].decode(errors="replace").strip()
    tail = b"".join(lines[-3:]).decode(errors="replace").strip().splitlines()
    return " | ".join(tail)  # a crash or a Python error: its last lines


def generate(name):
    spec = CASES[name]
    cuda = spec["accelerator"] == "wmma"
    with tempfile.TemporaryDirectory(prefix="gen_fixtures_") as tmp:
        lines, rc, stopped = run_child(name, tmp, cuda,
                                       CUDA_TIMEOUT_S if cuda else CPU_TIMEOUT_S)
        stages = split_stages(lines)
        if "vectorizing" not in stages:
            raise RuntimeError(f"child exited {rc}, no vectorizing stage: "
                               f"{error_text(lines)}")
        error = None
        if not stopped and rc != 0:
            error = error_text(lines)
            # Upstream's own AMX pass (extract_tile_operations, right after "lowering
            # unsafe promises") refuses several valid schedules. The selector's input
            # (vectorizing) exists, so keep the case and record upstream's error.
            upstream_amx = (spec["accelerator"] == "amx"
                            and "lowering unsafe promises" in stages
                            and "extracting tile operations" not in stages)
            if not upstream_amx:
                raise RuntimeError(f"child exited {rc}: {error}")
        files = {"vectorizing.stmt": stages["vectorizing"]}
        if not cuda and error is None:
            files["lowered.stmt"] = (Path(tmp) / "lowered.stmt").read_bytes()
            if "extracting tile operations" in stages:
                files["extracting_tile_operations.stmt"] = \
                    stages["extracting tile operations"]
        if name in DEBUG_LOG_CASES:
            files["debug.log"] = re.sub(rb"(?m)^(dir_rmdir: .*/)[^/\n]+$", rb"\1XXXXXX",
                                        b"".join(lines))
    dest = FIXTURES / name
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for fname, data in files.items():
        (dest / fname).write_bytes(data)
    return sorted(files), error


def manifest_entry(name, files, error):
    spec = CASES[name]
    keys = ("target", "accelerator", "accumulator", "memory_type", "types", "b_layout",
            "strides", "description")
    entry = dict({k: spec[k] for k in keys}, files=files)
    if error:  # lowering stopped in upstream's AMX pass: no lowered.stmt
        entry["upstream_amx_error"] = error
    return entry


def main(argv):
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2])
        return 0
    if argv[:1] == ["--list"]:
        for name in sorted(CASES):
            print(name)
        return 0
    unknown = [a for a in argv if a not in CASES]
    if unknown:
        print(f"unknown case(s): {' '.join(unknown)} (see --list)", file=sys.stderr)
        return 2
    names = argv or sorted(CASES)
    manifest_path = FIXTURES / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest = {k: v for k, v in manifest.items() if k in CASES}
    rows, failed, t_all = [], {}, time.monotonic()
    for name in names:
        t0 = time.monotonic()
        try:
            files, error = generate(name)
        except Exception as e:  # report and go on with the other cases
            failed[name] = str(e)
            manifest.pop(name, None)
            print(f"FAILED {name}: {e}", file=sys.stderr)
            continue
        dt = time.monotonic() - t0
        manifest[name] = manifest_entry(name, files, error)
        sizes = ", ".join(f"{f}={(FIXTURES / name / f).stat().st_size}" for f in files)
        if error:
            sizes += f" [upstream AMX pass failed: {error}]"
        rows.append((name, sizes, dt))
        print(f"{name:36s} {dt:6.1f} s  {sizes}", flush=True)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    print(f"\n{'case':36s} {'seconds':>8s}  files (bytes)")
    for name, sizes, dt in rows:
        print(f"{name:36s} {dt:8.1f}  {sizes}")
    print(f"{len(rows)} generated, {len(failed)} failed, "
          f"{time.monotonic() - t_all:.1f} s total")
    for name, err in failed.items():
        print(f"FAILED {name}: {err}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
