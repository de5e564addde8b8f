"""Non-integer resize with a Lanczos-3 kernel (paper Sec. 7.2), separable, whole pipeline.

Each output row y reads a window of `span` input rows starting at begin(y).
As in the artifact, every group of 16 output rows shares one begin, so the
kernel is block-sparse: per 16 x 16 output tile the vertical pass is a
product of a 16 x span block of kernel weights with span input rows (f16
accumulators), and the horizontal pass the same along x. The weights are
computed and normalized by CUDA stages computed at root.
"""

import math

from apps.common import App, accumulator, cuda_only, dense, f16, f32, hl, rvars, vars_

RADIUS = 3.0
TILE = 16


def _begin_of(out: float, scale: float, radius: float) -> int:
    return math.ceil((out + 0.5) / scale - 0.5 - radius)


def _span(scale: float) -> int:
    radius = RADIUS / min(scale, 1.0)
    extra = _begin_of(TILE, scale, radius) - _begin_of(0, scale, radius)
    taps = math.ceil(2 * radius) + 1 + extra
    return (taps + TILE - 1) // TILE * TILE


def pipeline(size: int, out_size: int, schedule: str = "tensor"):
    h = hl()
    scale = out_size / size
    radius = RADIUS / min(scale, 1.0)
    kernel_scaling = min(scale, 1.0)
    span = _span(scale)
    inp = h.ImageParam(h.Float(16), 2, "input")
    x, y, k, xo, yo, xi, yi, yii, z = vars_("x y k xo yo xi yi yii z")
    r = h.RDom([(0, span)], "r")
    ro, ri = rvars("ro ri")

    def lanczos(v):
        v = v + f32(1e-6)  # sinc(0) = 1 without a division by zero
        pv = f32(math.pi) * v
        return h.select(h.abs(v) < f32(RADIUS), h.sin(pv) * h.sin(pv / f32(RADIUS)) * f32(RADIUS) / (pv * pv),
                        f32(0))

    def weights(name):
        begin, unnormalized, total, normalized = (h.Func(f"{name}_{s}") for s in
                                                  ("begin", "unnormalized", "sum", "kernel"))
        source = (f32(x) + f32(0.5)) / f32(scale) - f32(0.5)
        # begin(t): the first input row of the tile t of 16 outputs, so that
        # Halide sees one begin per tile (a scalar base) in the products
        group = f32(x * TILE)
        begin[x] = h.clamp(h.i32(h.ceil((group + f32(0.5)) / f32(scale) - f32(0.5) - f32(radius))), 0, size - span)
        unnormalized[x, k] = lanczos((f32(k + begin[x // TILE]) - source) * f32(kernel_scaling))
        total[x] = f32(0)
        total[x] += unnormalized[x, r.x]
        normalized[x, k] = f16(unnormalized[x, k] / total[x])
        begin.compute_root().gpu_tile(x, xi, 8)
        unnormalized.compute_root().gpu_tile(x, k, xi, yi, TILE, TILE)
        total.compute_root().gpu_tile(x, xi, TILE)
        return begin, normalized

    begin_y, kernel_y = weights("y")
    begin_x, kernel_x = weights("x")
    resized_y, resized_x, output = h.Func("resized_y"), h.Func("resized_x"), h.Func("output")
    resized_y[x, y] = f16(0)
    resized_y[x, y] += kernel_y[y, r.x] * inp[x, begin_y[y // TILE] + r.x]
    resized_x[x, y] = f16(0)
    resized_x[x, y] += kernel_x[x, r.x] * resized_y[begin_x[x // TILE] + r.x, y]
    output[x, y] = h.clamp(resized_x[x, y], f16(0), f16(1))
    dense(inp, size, size)
    dense(output.output_buffer(), out_size, out_size)
    if schedule == "cuda":
        # Both passes at root on the GPU, the first one pixel per thread
        # (its taps innermost), the second in registers per output pixel.
        kernel_y.compute_root().gpu_tile(x, k, xi, yi, TILE, TILE)
        kernel_x.compute_root().gpu_tile(x, k, xi, yi, TILE, TILE)
        # (threads past the edge idle: a rounded-up tile would read past
        # the input where it is narrower than a tile, the test size's)
        guard = h.TailStrategy.GuardWithIf
        resized_y.compute_root().gpu_tile(x, y, xo, yo, xi, yi, 32, 8, guard)
        resized_y.update().reorder(r.x, x, y).gpu_tile(x, y, xo, yo, xi, yi, 32, 8, guard)
        cuda_only(output, (x, y), [resized_x], [(resized_x, r.x)])
        return [output], [inp]
    # kernel(y, k) stored k innermost: each tile's weights are a row-major A
    kernel_y.compute_root().reorder_storage(k, x).gpu_tile(x, k, xi, yi, TILE, TILE)
    kernel_x.compute_root().gpu_tile(x, k, xi, yi, TILE, TILE)
    pass_y = resized_y.in_()
    pass_y.compute_root().bound(x, 0, size).bound(y, 0, out_size) \
        .tile(x, y, xo, yo, xi, yi, TILE, TILE).gpu_blocks(xo, yo).vectorize(xi).vectorize(yi)
    # The second pass as in the artifact: its result in shared memory per
    # 16 x 16 output tile (resized_x.in()), the clamp to [0, 1] by the warp's
    # 32 lanes, each taking 8 of the tile's pixels (the schedule's own
    # gpu_lanes).
    pass_x = resized_x.in_()
    output.tile(x, y, xo, yo, xi, yi, TILE, TILE).gpu_blocks(xo, yo) \
        .split(yi, yi, yii, 2).fuse(xi, yii, z).gpu_lanes(z).unroll(yi)
    pass_x.compute_at(output, xo).vectorize(x, TILE).vectorize(y, TILE)
    for acc, at in ((resized_y, pass_y), (resized_x, output)):
        accumulator(acc).compute_at(at, xo).vectorize(x, TILE).vectorize(y, TILE)
        acc.update().split(r.x, ro, ri, TILE).reorder(ri, x, y, ro).atomic() \
            .vectorize(ri).vectorize(x, TILE).vectorize(y, TILE)
    return [output], [inp]


APP = App(
    "resize", "wmma", ("resized_y", "resized_x"),
    "Lanczos-3 downscaling (0.75; 0.8 at test size), separable, block-sparse: 16x16 f16 products, both passes",
    pipeline,
    sizes={"test": dict(size=40, out_size=32), "paper": dict(size=2048, out_size=1536)},
    paper="RTX 4070: 1.47x over Halide CUDA",
    cuda_baseline=True,
)
APP_UP = App(
    "resize_up", "wmma", ("resized_y", "resized_x"),
    "Lanczos-3 upscaling by 1.5, separable, block-sparse kernel",
    pipeline,
    sizes={"test": dict(size=32, out_size=48), "paper": dict(size=1024, out_size=1536)},
    cuda_baseline=True,
)
