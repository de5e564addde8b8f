"""2-D convolution (paper Sec. 7.1): output(x, y) = sum_rk K(rk.x, rk.y) * I(x + rk.x, y + rk.y).

Each kernel row is a 1-D convolution (a Toeplitz product); rk.y stays a loop.
Tiling "256x1": 256 consecutive outputs of a row per accumulator, reduction
chunks of 8 taps, every chunk and kernel row unrolled (the artifact's
schedule). Tiling "8x32": 8 outputs from each of 32 rows.
"""

from apps.common import App, accumulator, cuda_only, dense, f32, hl, rvars, vars_


def pipeline(width: int, rows: int, taps: int, tiling: str = "256x1", stride: int = 1,
             schedule: str = "tensor"):
    h = hl()
    kernel = h.ImageParam(h.Float(16), 2, "kernel")
    image = h.ImageParam(h.Float(16), 2, "image")
    x, y, bx, by, mmx, mmy, mmxi, mmyi = vars_("x y bx by mmx mmy mmxi mmyi")
    rk = h.RDom([(0, taps), (0, taps)], "rk")
    rkxo, rkxi, rkyo, rkyi = rvars("rkxo rkxi rkyo rkyi")
    conv, output = h.Func("conv"), h.Func("output")
    conv[x, y] = f32(0)
    conv[x, y] += f32(kernel[rk.x, rk.y]) * f32(image[stride * x + rk.x, stride * y + rk.y])
    output[x, y] = conv[x, y]
    dense(kernel, taps, taps)
    dense(image, stride * width + taps, stride * rows + taps)
    dense(output.output_buffer(), width, rows)
    if schedule == "cuda":
        cuda_only(output, (x, y), [conv], [(conv, rk.x)])
        return [output], [kernel, image]
    if tiling == "256x1":
        output.split(y, by, mmy, 1).split(x, bx, mmx, 256).gpu_blocks(bx, by) \
            .split(mmx, mmx, mmxi, 256).reorder(mmxi, mmy, mmx, bx, by).vectorize(mmxi)
        accumulator(conv).compute_at(output, mmx).split(x, mmx, mmxi, 256).vectorize(mmxi)
        conv.update().split(x, mmx, mmxi, 256) \
            .split(rk.x, rkxo, rkxi, 8).split(rk.y, rkyo, rkyi, 1) \
            .reorder(rkxi, mmxi, rkyi, rkxo, rkyo, mmx, y) \
            .atomic().vectorize(mmxi).vectorize(rkxi).unroll(rkyi).unroll(rkxo)
    else:  # 8x32
        output.split(y, by, mmy, 32).split(x, bx, mmx, 8).gpu_blocks(bx, by) \
            .reorder(mmx, mmy, bx, by).vectorize(mmx).vectorize(mmy)
        accumulator(conv).compute_at(output, bx).vectorize(x, 8).vectorize(y, 32)
        conv.update().split(x, bx, mmxi, 8).split(y, by, mmyi, 32) \
            .split(rk.x, rkxo, rkxi, 8).reorder(rkxi, mmxi, mmyi, bx, by, rkxo, rk.y) \
            .atomic().vectorize(rkxi).vectorize(mmxi).vectorize(mmyi).unroll(rkxo)
    return [output], [kernel, image]


APP = App(
    "conv2d", "wmma", ("conv",),
    "2-D convolution, 16x16 kernel, 256x1 output tiles, a Toeplitz product per kernel row and 8 taps",
    pipeline,
    sizes={"test": dict(width=512, rows=2, taps=16), "paper": dict(width=2048, rows=64, taps=16)},
    paper="RTX 4070: 3.1x over Halide CUDA",
    cuda_baseline=True,
)
APP_K32 = App(
    "conv2d_k32", "wmma", ("conv",),
    "2-D convolution with a 32x32 kernel (32-tap windows), 256x1 output tiles",
    lambda **size: pipeline(**size),
    sizes={"test": dict(width=256, rows=2, taps=32), "paper": dict(width=2048, rows=64, taps=32)},
    paper="RTX 4070: 2.4x over Halide CUDA",
    cuda_baseline=True,
)
APP_8X32 = App(
    "conv2d_8x32", "wmma", ("conv",),
    "2-D convolution, 16x16 kernel, 8x32 output tiles (8 outputs from each of 32 rows)",
    lambda **size: pipeline(tiling="8x32", **size),
    sizes={"test": dict(width=16, rows=64, taps=16), "paper": dict(width=1024, rows=256, taps=16)},
    cuda_baseline=True,
)
