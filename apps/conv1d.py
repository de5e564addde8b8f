"""1-D convolution of every image row (paper Sec. 7.1): output(x, y) = sum_rk K(rk) * I(x + rk, y).

Tiling "256x1": 256 consecutive outputs of a row share one accumulator; the
reduction runs in chunks of 8 taps, each a product of 32 overlapping 16-input
windows with a 16x8 Toeplitz matrix of the taps (m32n8k16). Two rows are
unrolled per block, as in the artifact. Tiling "8x32": 8 outputs from each of
32 rows.
"""

from apps.common import App, accumulator, cuda_only, dense, f32, hl, rvars, vars_


def pipeline(width: int, rows: int, taps: int, tiling: str = "256x1", unroll_taps: bool = False,
             schedule: str = "tensor"):
    """``unroll_taps``: the 8-tap chunk loop unrolled (one tensor statement
    per chunk; bench/compile_time.py scales it)."""
    h = hl()
    kernel = h.ImageParam(h.Float(16), 1, "kernel")
    image = h.ImageParam(h.Float(16), 2, "image")
    x, y, bx, by, mmx, mmy, mmxi, mmyi = vars_("x y bx by mmx mmy mmxi mmyi")
    rk = h.RDom([(0, taps)], "rk")
    rkxo, rkxi = rvars("rkxo rkxi")
    conv, output = h.Func("conv"), h.Func("output")
    conv[x, y] = f32(0)
    conv[x, y] += f32(kernel[rk.x]) * f32(image[x + rk.x, y])
    output[x, y] = conv[x, y]
    dense(kernel, taps)
    dense(image, width + taps, rows)
    dense(output.output_buffer(), width, rows)
    if schedule == "cuda":
        cuda_only(output, (x, y), [conv], [(conv, rk.x)])
        return [output], [kernel, image]
    if tiling == "256x1":
        output.split(y, by, mmy, 2).split(x, bx, mmx, 256).gpu_blocks(bx, by) \
            .split(mmy, mmy, mmyi, 2).split(mmx, mmx, mmxi, 256) \
            .reorder(mmxi, mmyi, mmx, mmy, bx, by).vectorize(mmxi).unroll(mmyi)
        accumulator(conv).compute_at(output, mmx) \
            .split(y, mmy, mmyi, 1).split(x, mmx, mmxi, 256).reorder(mmxi, mmyi, mmx, mmy) \
            .unroll(mmx).unroll(mmy).vectorize(mmxi)
        update = conv.update().split(y, mmy, mmyi, 1).split(x, mmx, mmxi, 256) \
            .split(rk.x, rkxo, rkxi, 8).reorder(rkxi, mmxi, mmyi, mmx, mmy, rkxo) \
            .unroll(mmx).unroll(mmy).atomic().vectorize(mmxi).vectorize(rkxi)
        if unroll_taps:
            update.unroll(rkxo)
    else:  # 8x32
        output.split(y, by, mmy, 32).split(x, bx, mmx, 8).gpu_blocks(bx, by) \
            .reorder(mmx, mmy, bx, by).vectorize(mmx).vectorize(mmy)
        accumulator(conv).compute_at(output, bx).vectorize(x, 8).vectorize(y, 32)
        conv.update().split(x, bx, mmxi, 8).split(y, by, mmyi, 32) \
            .split(rk.x, rkxo, rkxi, 8).reorder(rkxi, mmxi, mmyi, bx, by, rkxo) \
            .atomic().vectorize(rkxi).vectorize(mmxi).vectorize(mmyi)
    return [output], [kernel, image]


APP = App(
    "conv1d", "wmma", ("conv",),
    "1-D convolution of each image row, f16 in, f32 out; 256 outputs x 8 taps per step (Toeplitz)",
    pipeline,
    sizes={"test": dict(width=512, rows=4, taps=16), "paper": dict(width=4096, rows=64, taps=128)},
    paper="RTX 4070: 2.3x over Halide CUDA",
    cuda_baseline=True,
)

APP_8X32 = App(
    "conv1d_8x32", "wmma", ("conv",),
    "1-D convolution, 8x32 output tiles: 8 outputs from each of 32 rows per step",
    lambda **size: pipeline(tiling="8x32", **size),
    sizes={"test": dict(width=64, rows=64, taps=16), "paper": dict(width=1024, rows=256, taps=32)},
    cuda_baseline=True,
)
