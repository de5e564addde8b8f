"""A convolution layer (paper Sec. 7.3): channels innermost, 3x3 filter, bias, ReLU.

conv(c, x, y, n) = bias(c) + sum f32(filter(c, rk.y, rk.z, rk.x)) * f32(input(rk.x, x + rk.y, y + rk.z, n)).
The artifact's schedule: 16 (output channels) x 16 (x) accumulator tiles,
4 x-groups x 4 rows of them per block, input channels in chunks of 16; each
(kx, ky) of the filter is a serial step. C16 and C32 input channels.
"""

from apps.common import App, accumulator, cuda_only, dense, f32, hl, rvars, vars_


def pipeline(channels: int, width: int, height: int, batch: int, tile_w: int = 64, tile_h: int = 4,
             schedule: str = "tensor"):
    h = hl()
    inp = h.ImageParam(h.Float(16), 4, "input")
    flt = h.ImageParam(h.Float(16), 4, "filter")
    bias = h.ImageParam(h.Float(32), 1, "bias")
    c, x, y, n, co, ci, xi, xii, yi = vars_("c x y n co ci xi xii yi")
    rk = h.RDom([(0, channels), (0, 3), (0, 3)], "rk")
    rkxo, rkxi = rvars("rkxo rkxi")
    conv, output = h.Func("conv"), h.Func("output")
    conv[c, x, y, n] = bias[c]
    conv[c, x, y, n] += f32(flt[c, rk.y, rk.z, rk.x]) * f32(inp[rk.x, x + rk.y, y + rk.z, n])
    output[c, x, y, n] = h.max(conv[c, x, y, n], f32(0))
    dense(inp, channels, width + 2, height + 2, batch)
    dense(flt, channels, 3, 3, channels)
    dense(bias, channels)
    dense(output.output_buffer(), channels, width, height, batch)
    if schedule == "cuda":
        cuda_only(output, (c, x), [conv], [(conv, rk.x)], tile=(16, 16))  # 16 channels at the least
        return [output], [inp, flt, bias]
    groups_x, groups_y = tile_w // 16, tile_h
    output.split(y, y, yi, tile_h).split(x, x, xi, tile_w).split(xi, xi, xii, 16).split(c, co, ci, 16) \
        .reorder(ci, xii, xi, yi, co, x, y, n).gpu_blocks(x, y, n) \
        .vectorize(ci).vectorize(xii).unroll(xi, groups_x).unroll(yi, groups_y).unroll(co)
    accumulator(conv).compute_at(output, co).split(x, x, xi, 16).vectorize(c).vectorize(xi) \
        .unroll(x, groups_x).unroll(y, groups_y)
    conv.update().split(x, x, xi, 16).split(rk.x, rkxo, rkxi, 16) \
        .reorder(rkxi, c, xi, x, y, rkxo, rk.y, rk.z).atomic() \
        .vectorize(c).vectorize(xi).vectorize(rkxi).unroll(x, groups_x).unroll(y, groups_y)
    return [output], [inp, flt, bias]


APP = App(
    "conv_layer", "wmma", ("conv",),
    "conv layer C16: 3x3 filter, bias, ReLU, 16x16 tiles, 4x4 tiles per block",
    pipeline,
    sizes={"test": dict(channels=16, width=64, height=4, batch=1),
           "paper": dict(channels=16, width=64, height=64, batch=16)},
    cuda_baseline=True,
)
APP_C32 = App(
    "conv_layer_c32", "wmma", ("conv",),
    "conv layer C32: two 16-channel chunks of input and output channels",
    pipeline,
    sizes={"test": dict(channels=32, width=64, height=4, batch=1),
           "paper": dict(channels=32, width=64, height=64, batch=16)},
    cuda_baseline=True,
)
