"""1-D convolution of image rows on AMX, bf16 in, f32 out (the artifact's AMX schedule).

conv(x, y) += K(r) * I(x + r, y): 16 x 16 output tiles (16 outputs of each
of 16 rows), the reduction in chunks of 16 taps. Each chunk is one tile
product: the image rows' 31 values (zero-padded to 32) times the kernel's
32 x 16 Toeplitz block, which the paper builds on Tensor Cores and
hardboiled builds for AMX too (in VNNI order).
"""

from apps.common import App, amx_tile, dense, f32, hl, rvars, vars_


def pipeline(width: int, rows: int, taps: int):
    h = hl()
    kernel = h.ImageParam(h.BFloat(16), 1, "kernel")
    image = h.ImageParam(h.BFloat(16), 2, "image")
    x, y, xi, yi = vars_("x y xi yi")
    r = h.RDom([(0, taps)], "r")
    rro, rri = rvars("rro rri")
    conv = h.Func("conv")
    conv[x, y] = f32(0)
    conv[x, y] += f32(kernel[r.x]) * f32(image[x + r.x, y])
    out = conv.in_()
    dense(kernel, taps)
    dense(image, width + taps, rows)
    dense(out.output_buffer(), width, rows)
    out.bound(x, 0, width).bound(y, 0, rows)
    out.split(x, x, xi, 16).split(y, y, yi, 16).reorder(xi, yi, x, y).vectorize(xi).vectorize(yi)
    amx_tile(conv).compute_at(out, x).vectorize(x, 16).vectorize(y, 16)
    conv.update().split(r.x, rro, rri, 16).reorder(rri, x, y, rro).atomic() \
        .vectorize(rri).vectorize(x, 16).vectorize(y, 16)
    return [out], [kernel, image]


APP = App(
    "amx_conv1d", "amx", ("conv",),
    "1-D convolution on AMX (bf16): a Toeplitz tile product per 16 taps, 16 x 16 output tiles",
    pipeline,
    sizes={"test": dict(width=64, rows=32, taps=64), "paper": dict(width=4096, rows=256, taps=64)},
)
