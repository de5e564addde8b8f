#!/usr/bin/env python3
"""1-D convolutions whose window the sliding-window rules cannot read as
written, each beside the schedule that lowers, dumped by real Halide 21
into tests/fixtures/windows/ (Halide's vectorizing stage,
HL_DEBUG_CODEGEN=2). 256 outputs per row and block on Tensor Cores, the
taps in chunks of 8:

* conv1d_bounded_inline: conv(x, y) = sum_k K(k) * bounded(x + k - taps/2, y)
  with bounded = constant_exterior(image, 0) inlined into the product, so
  each operand is a select around a clamped load: a miss, which must say
  that the boundary condition hides the window and what to change;
* conv1d_bounded_at_root: the same with the bounded image computed at root,
  a GPU stage of its own, so that the product reads a plain window: lowers;
* conv1d_dilated_inline: conv(x, y) = sum_k K(k) * image(x + 2k, y), taps
  two elements apart: a miss, which must say so and what to change;
* conv1d_dilated_stuffed: the same as a convolution of twice the taps with
  a kernel that has zeros between its taps, computed at root: lowers.

    .venv/bin/python tools/gen_window_fixtures.py      # rewrites the fixtures (make fixtures)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
import gen_fixtures as gf  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "windows"
TARGET = "x86-64-linux-cuda-cuda_capability_80"
WIDTH, ROWS, TAPS = 256, 2, 24
DILATION, DILATED_TAPS = 2, 16


def _schedule(output, conv, k) -> None:
    """256 outputs of a row per block and accumulator, the taps in chunks of 8."""
    import halide as hl

    x, y, bx, by, mx, my, mxi = (hl.Var(n) for n in "x y bx by mx my mxi".split())
    ko, ki = hl.RVar("ko"), hl.RVar("ki")
    output.split(y, by, my, 1).split(x, bx, mx, 256).gpu_blocks(bx, by) \
        .split(mx, mx, mxi, 256).reorder(mxi, my, mx, bx, by).vectorize(mxi)
    conv.store_in(hl.MemoryType.Register).compute_at(output, mx).split(x, mx, mxi, 256).vectorize(mxi)
    conv.update().split(x, mx, mxi, 256).split(k.x, ko, ki, 8) \
        .reorder(ki, mxi, ko, mx, y).atomic().vectorize(mxi).vectorize(ki).unroll(ko)


def bounded(at_root: bool):
    import halide as hl

    kernel = hl.ImageParam(hl.Float(16), 1, "kernel")
    image = hl.ImageParam(hl.Float(16), 2, "image")
    x, y, xo, xi = (hl.Var(n) for n in "x y xo xi".split())
    k = hl.RDom([(0, TAPS)], "k")
    inside = hl.BoundaryConditions.constant_exterior(image, 0, [(0, WIDTH), (0, ROWS)])
    padded = hl.Func("padded")
    padded[x, y] = inside[x, y]
    conv, output = hl.Func("conv"), hl.Func("output")
    conv[x, y] = hl.f32(0)
    conv[x, y] += hl.f32(kernel[k.x]) * hl.f32(padded[x + k.x - TAPS // 2, y])
    output[x, y] = conv[x, y]
    gf.dense(kernel, TAPS)
    gf.dense(image, WIDTH, ROWS)
    gf.dense(output.output_buffer(), WIDTH, ROWS)
    if at_root:
        padded.compute_root().split(x, xo, xi, 32).gpu_blocks(xo, y).gpu_threads(xi)
    _schedule(output, conv, k)
    return output, [kernel, image]


def dilated(stuffed: bool):
    import halide as hl

    kernel = hl.ImageParam(hl.Float(16), 1, "kernel")
    image = hl.ImageParam(hl.Float(16), 2, "image")
    x, y, xo, xi = (hl.Var(n) for n in "x y xo xi".split())
    conv, output = hl.Func("conv"), hl.Func("output")
    conv[x, y] = hl.f32(0)
    if stuffed:  # twice the taps, every other one zero
        spread = hl.Func("kernel_spread")
        spread[x] = hl.select(x % DILATION == 0, kernel[hl.clamp(x // DILATION, 0, DILATED_TAPS - 1)],
                              hl.cast(hl.Float(16), 0))
        spread.compute_root().split(x, xo, xi, DILATION * DILATED_TAPS).gpu_blocks(xo).gpu_threads(xi)
        k = hl.RDom([(0, DILATION * DILATED_TAPS)], "k")
        conv[x, y] += hl.f32(spread[k.x]) * hl.f32(image[x + k.x, y])
    else:
        k = hl.RDom([(0, DILATED_TAPS)], "k")
        conv[x, y] += hl.f32(kernel[k.x]) * hl.f32(image[x + DILATION * k.x, y])
    output[x, y] = conv[x, y]
    gf.dense(kernel, DILATED_TAPS)
    gf.dense(image, WIDTH + DILATION * DILATED_TAPS, ROWS)
    gf.dense(output.output_buffer(), WIDTH, ROWS)
    _schedule(output, conv, k)
    return output, [kernel, image]


CASES = {"conv1d_bounded_inline": lambda: bounded(False), "conv1d_bounded_at_root": lambda: bounded(True),
         "conv1d_dilated_inline": lambda: dilated(False), "conv1d_dilated_stuffed": lambda: dilated(True)}


def child(name: str, out_path: str) -> None:
    import halide as hl

    output, arguments = CASES[name]()
    output.compile_to_lowered_stmt(out_path, arguments, hl.StmtOutputFormat.Text, hl.Target(TARGET))


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name in CASES:
        with tempfile.TemporaryDirectory(prefix="hb_window_") as tmp:
            lines, rc, _ = gf.run_child(name, tmp, True, 300, script=__file__)
        stages = gf.split_stages(lines)
        if "vectorizing" not in stages:
            raise SystemExit(f"{name}: Halide failed (exit {rc}): {gf.error_text(lines)}")
        (OUT / f"{name}.stmt").write_bytes(stages["vectorizing"])
        print(f"{name}: {len(stages['vectorizing'])} bytes")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main())
