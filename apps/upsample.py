"""2x upsample as a multiphase filter (paper Sec. 7.1).

kernel_phases(x, y, dx, dy) = K(2x + dx, 2y + dy) splits the 16x16 kernel into
four 8x8 phases; conv(x, y, dx, dy) = sum_rk phase(rk) * I(x + rk.x, y + rk.y)
and output(x, y) = conv(x / 2, y / 2, x % 2, y % 2). The accumulator is stored
phases innermost (reorder_storage(dx, dy, x, y)): 64 x-positions x 4 phases =
256 outputs per tile, reduced over 8 taps of a kernel row at a time.
"""

from apps.common import App, accumulator, dense, f32, hl, vars_


def pipeline(width: int, rows: int, taps: int = 16):
    h = hl()
    kernel = h.ImageParam(h.Float(16), 2, "kernel")
    image = h.ImageParam(h.Float(16), 2, "image")
    x, y, dx, dy, bx, by, mmx, mmy, mmxi = vars_("x y dx dy bx by mmx mmy mmxi")
    half = taps // 2
    rk = h.RDom([(0, half), (0, half)], "rk")
    kernel_phases, conv, output = h.Func("kernel_phases"), h.Func("conv"), h.Func("output")
    kernel_phases[x, y, dx, dy] = kernel[2 * x + dx, 2 * y + dy]
    conv[x, y, dx, dy] = f32(0)
    conv[x, y, dx, dy] += f32(kernel_phases[rk.x, rk.y, dx, dy]) * f32(image[x + rk.x, y + rk.y])
    output[x, y] = conv[x // 2, y // 2, x % 2, y % 2]
    dense(kernel, taps, taps)
    dense(image, width // 2 + half, rows // 2 + half)
    dense(output.output_buffer(), width, rows)
    kernel_phases.compute_root().gpu_tile(x, y, mmx, mmy, half, half)
    output.split(y, by, mmy, 2).split(x, bx, mmx, 128).gpu_blocks(bx, by) \
        .reorder(mmx, mmy, bx, by).vectorize(mmx).vectorize(mmy)
    accumulator(conv).compute_at(output, bx).reorder_storage(dx, dy, x, y) \
        .reorder(dx, dy, x, y).vectorize(dx).vectorize(dy).vectorize(x, 64)
    conv.update().reorder(rk.x, dx, dy, x, rk.y, y).atomic() \
        .vectorize(rk.x).vectorize(dx).vectorize(dy).vectorize(x, 64)
    return [output], [kernel, image]


APP = App(
    "upsample", "wmma", ("conv",),
    "2x upsample, multiphase: four 8x8 kernel phases interleaved in the output, 64 x 4 phases x 8 taps",
    pipeline,
    sizes={"test": dict(width=256, rows=4), "paper": dict(width=2048, rows=128)},
)
