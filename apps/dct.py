"""Blocked 2-D DCT of an image (paper Sec. 7.2), indexed by image coordinates.

Each 16 x 16 block is transformed as D^T B D: first down the columns,
cols(x, y) = sum_r D(r, y % 16) * I(x, 16 (y / 16) + r), then along the rows,
dct(x, y) = sum_r cols(16 (x / 16) + r, y) * D(r, x % 16). Halide flattens the
block structure into the image's 2-D index; both passes are 16x16x16
products on Tensor Cores with f32 accumulators, computed at root on the GPU.
"""

from apps.common import App, accumulator, dense, f16, f32, hl, vars_


def pipeline(size: int):
    h = hl()
    image = h.ImageParam(h.Float(16), 2, "image")
    coefficients = h.ImageParam(h.Float(16), 2, "D")
    x, y, xo, yo, xi, yi = vars_("x y xo yo xi yi")
    r = h.RDom([(0, 16)], "r")
    cols, rows_f16, dct = h.Func("cols"), h.Func("cols_f16"), h.Func("dct")
    cols[x, y] = f32(0)
    cols[x, y] += f32(coefficients[r.x, y % 16]) * f32(image[x, (y // 16) * 16 + r.x])
    rows_f16[x, y] = f16(cols[x, y])
    dct[x, y] = f32(0)
    dct[x, y] += f32(rows_f16[(x // 16) * 16 + r.x, y]) * f32(coefficients[r.x, x % 16])
    dense(image, size, size)
    dense(coefficients, 16, 16)
    out = dct.in_()
    dense(out.output_buffer(), size, size)
    for consumer, acc in ((rows_f16, cols), (out, dct)):
        consumer.compute_root().tile(x, y, xo, yo, xi, yi, 16, 16).gpu_blocks(xo, yo).vectorize(xi).vectorize(yi)
        accumulator(acc).compute_at(consumer, xo).vectorize(x, 16).vectorize(y, 16)
        acc.update().reorder(r.x, x, y).atomic().vectorize(r.x).vectorize(x, 16).vectorize(y, 16)
    return [out], [image, coefficients]


APP = App(
    "dct", "wmma", ("cols", "dct"),
    "blocked 16x16 2-D DCT in image coordinates (a flattened block index): two products per block",
    pipeline,
    sizes={"test": dict(size=64), "paper": dict(size=2048)},
)
