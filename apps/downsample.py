"""2x downsample (paper Sec. 7.1): output(x, y) = sum_rk K(rk.x, rk.y) * I(2x + rk.x, 2y + rk.y).

A strided Toeplitz product per kernel row: 256 outputs of a row per
accumulator, the whole kernel row vectorized, kernel rows unrolled (the
artifact's schedule, with 16 or 32 taps).
"""

from apps.common import App, accumulator, cuda_only, dense, f32, hl, rvars, vars_


def pipeline(width: int, rows: int, taps: int, schedule: str = "tensor"):
    h = hl()
    kernel = h.ImageParam(h.Float(16), 2, "kernel")
    image = h.ImageParam(h.Float(16), 2, "image")
    x, y, bx, by, mmx, mmy, mmxi = vars_("x y bx by mmx mmy mmxi")
    rk = h.RDom([(0, taps), (0, taps)], "rk")
    rkyo, rkyi = rvars("rkyo rkyi")
    conv, output = h.Func("conv"), h.Func("output")
    conv[x, y] = f32(0)
    conv[x, y] += f32(kernel[rk.x, rk.y]) * f32(image[2 * x + rk.x, 2 * y + rk.y])
    output[x, y] = conv[x, y]
    dense(kernel, taps, taps)
    dense(image, 2 * width + taps, 2 * rows + taps)
    dense(output.output_buffer(), width, rows)
    if schedule == "cuda":
        cuda_only(output, (x, y), [conv], [(conv, rk.x)])
        return [output], [kernel, image]
    output.split(y, by, mmy, 1).split(x, bx, mmx, 256).gpu_blocks(bx, by) \
        .split(mmx, mmx, mmxi, 256).reorder(mmxi, mmy, mmx, bx, by).vectorize(mmxi)
    accumulator(conv).compute_at(output, mmx).split(x, mmx, mmxi, 256).vectorize(mmxi)
    conv.update().split(x, mmx, mmxi, 256).split(rk.y, rkyo, rkyi, 4) \
        .reorder(rk.x, mmxi, rkyi, rkyo, mmx, y) \
        .atomic().vectorize(mmxi).vectorize(rk.x).unroll(rkyi)
    return [output], [kernel, image]


APP = App(
    "downsample", "wmma", ("conv",),
    "2x downsample, 16x16 kernel: strided Toeplitz products, whole kernel rows vectorized",
    pipeline,
    sizes={"test": dict(width=256, rows=2, taps=16), "paper": dict(width=2048, rows=64, taps=16)},
    paper="RTX 4070: 4.6x over Halide CUDA",
    cuda_baseline=True,
)
APP_K32 = App(
    "downsample_k32", "wmma", ("conv",),
    "2x downsample with a 32x32 kernel (32-tap windows)",
    pipeline,
    sizes={"test": dict(width=256, rows=2, taps=32), "paper": dict(width=2048, rows=64, taps=32)},
    paper="RTX 4070: 6.1x over Halide CUDA",
    cuda_baseline=True,
)
