"""GEMM (paper Sec. 7.3): output(x, y) = sum_k A(k, y) * B(x, k), f16 in, f32 out.

The artifact's schedule: 64x64 output blocks, each 4x4 accumulator tiles of
16x16, the reduction in chunks of 16 with four chunks unrolled.
"""

from apps.common import App, accumulator, cuda_only, dense, f32, hl, rvars, vars_


def pipeline(n: int, block: int = 64, schedule: str = "tensor"):
    if schedule == "cuda":
        return pipeline_wide(n, schedule)  # the same product, as a plain 2-D accumulator
    h = hl()
    mat_a = h.ImageParam(h.Float(16), 2, "matA")
    mat_b = h.ImageParam(h.Float(16), 2, "matB")
    x, y, xi, yi, tx, ty, mmxi, mmyi = vars_("x y xi yi tx ty mmxi mmyi")
    k = h.RDom([(0, n)], "k")
    rro, rri, rroo = rvars("rro rri rroo")
    prod, output = h.Func("prod"), h.Func("output")
    # The accumulator is indexed by tile: prod(xi, yi, tx, ty) is output
    # element (16 tx + xi, 16 ty + yi). Stock Halide vectorizes an atomic
    # update only over dense storage, so each 16x16 tile must be contiguous
    # (the fork's WMMAAccumulator memory type arranged that itself).
    prod[xi, yi, tx, ty] = f32(0)
    prod[xi, yi, tx, ty] += f32(mat_a[k.x, 16 * ty + yi]) * f32(mat_b[16 * tx + xi, k.x])
    output[x, y] = prod[x % 16, y % 16, x // 16, y // 16]
    dense(mat_a, n, n)
    dense(mat_b, n, n)
    dense(output.output_buffer(), n, n)
    tiles = block // 16
    output.split(x, x, xi, block).split(xi, xi, mmxi, 16).split(y, y, yi, block).split(yi, yi, mmyi, 16) \
        .gpu_blocks(x, y).reorder(mmxi, mmyi, xi, yi, x, y).unroll(xi).unroll(yi) \
        .vectorize(mmxi).vectorize(mmyi)
    accumulator(prod).compute_at(output, x).vectorize(xi, 16).vectorize(yi, 16) \
        .unroll(tx, tiles).unroll(ty, tiles)
    prod.update().split(k.x, rro, rri, 16).split(rro, rro, rroo, 4) \
        .reorder(rri, xi, yi, tx, ty, rroo, rro).unroll(rroo).unroll(tx, tiles).unroll(ty, tiles) \
        .atomic().vectorize(rri).vectorize(xi, 16).vectorize(yi, 16)
    return [output], [mat_a, mat_b]


APP = App(
    "gemm", "wmma", ("prod",),
    "f16 GEMM, f32 accumulators, 64x64 blocks of 4x4 tiles, k in chunks of 16 unrolled 4",
    pipeline,
    sizes={"test": dict(n=128), "paper": dict(n=1024)},
    paper="A100: 66 us at 1024^2, 1.5x off cuBLASLt",
    cuda_baseline=True,
)


def pipeline_wide(n: int, schedule: str = "tensor"):
    """The artifact's accumulator, prod(x, y) over a 64 x 64 block, with each
    update statement 64 columns wide and 16 rows high: four 16 x 16 fragments
    side by side in one statement, which selection cuts into four."""
    h = hl()
    mat_a = h.ImageParam(h.Float(16), 2, "matA")
    mat_b = h.ImageParam(h.Float(16), 2, "matB")
    x, y, xi, yi, yii = vars_("x y xi yi yii")
    k = h.RDom([(0, n)], "k")
    rro, rri = rvars("rro rri")
    prod, output = h.Func("prod"), h.Func("output")
    prod[x, y] = f32(0)
    prod[x, y] += f32(mat_a[k.x, y]) * f32(mat_b[x, k.x])
    output[x, y] = prod[x, y]
    dense(mat_a, n, n)
    dense(mat_b, n, n)
    dense(output.output_buffer(), n, n)
    if schedule == "cuda":
        cuda_only(output, (x, y), [prod], [(prod, k.x)])
        return [output], [mat_a, mat_b]
    output.tile(x, y, xi, yi, 64, 64).split(yi, yi, yii, 16).reorder(xi, yii, yi, x, y).gpu_blocks(x, y) \
        .vectorize(xi).vectorize(yii).unroll(yi)
    accumulator(prod).compute_at(output, x).split(y, y, yii, 16).vectorize(x, 64).vectorize(yii).unroll(y)
    prod.update().split(y, y, yii, 16).split(k.x, rro, rri, 16).reorder(rri, x, yii, y, rro).unroll(y) \
        .atomic().vectorize(rri).vectorize(x, 64).vectorize(yii)
    return [output], [mat_a, mat_b]


APP_WIDE = App(
    "gemm_wide", "wmma", ("prod",),
    "f16 GEMM, 64x64 blocks as the artifact stores them: each statement four 16x16 fragments side by side",
    pipeline_wide,
    sizes={"test": dict(n=128), "paper": dict(n=1024)},
    cuda_baseline=True,
)
