"""2x upsample as a multiphase filter (paper Sec. 7.1).

kernel_phases(x, y, dx, dy) = K(2x + dx, 2y + dy) splits the 16x16 kernel into
four 8x8 phases; conv(x, y, dx, dy) = sum_rk phase(rk) * I(x + rk.x, y + rk.y)
and output(x, y) = conv(x / 2, y / 2, x % 2, y % 2). The accumulator is stored
phases innermost (reorder_storage(dx, dy, x, y)): 64 x-positions x 4 phases =
256 outputs per tile, reduced over 8 taps of a kernel row at a time.
"""

from apps.common import App, accumulator, cuda_only, dense, f32, hl, vars_


class Algorithm:
    """The multiphase upsample's Funcs, inputs and variables for a taps x
    taps kernel over a width x rows output, before any schedule
    (tools/gen_app_variants.py schedules it other ways)."""

    def __init__(self, width: int, rows: int, taps: int):
        h = hl()
        self.kernel = h.ImageParam(h.Float(16), 2, "kernel")
        self.image = h.ImageParam(h.Float(16), 2, "image")
        x, y, dx, dy = self.x, self.y, self.dx, self.dy = vars_("x y dx dy")
        self.half = half = taps // 2
        self.rk = rk = h.RDom([(0, half), (0, half)], "rk")
        self.phases, self.conv, self.output = h.Func("kernel_phases"), h.Func("conv"), h.Func("output")
        self.phases[x, y, dx, dy] = self.kernel[2 * x + dx, 2 * y + dy]
        self.conv[x, y, dx, dy] = f32(0)
        self.conv[x, y, dx, dy] += f32(self.phases[rk.x, rk.y, dx, dy]) * f32(self.image[x + rk.x, y + rk.y])
        self.output[x, y] = self.conv[x // 2, y // 2, x % 2, y % 2]
        dense(self.kernel, taps, taps)
        dense(self.image, width // 2 + half, rows // 2 + half)
        dense(self.output.output_buffer(), width, rows)


def pipeline(width: int, rows: int, taps: int = 16, schedule: str = "tensor"):
    a = Algorithm(width, rows, taps)
    x, y, dx, dy, rk = a.x, a.y, a.dx, a.dy, a.rk
    if schedule == "cuda":  # each output pixel its own phase's taps
        cuda_only(a.output, (x, y), [a.conv], [(a.conv, rk.x)])
        return [a.output], [a.kernel, a.image]
    bx, by, mmx, mmy = vars_("bx by mmx mmy")
    a.phases.compute_root().gpu_tile(x, y, mmx, mmy, a.half, a.half)
    a.output.split(y, by, mmy, 2).split(x, bx, mmx, 128).gpu_blocks(bx, by) \
        .reorder(mmx, mmy, bx, by).vectorize(mmx).vectorize(mmy)
    accumulator(a.conv).compute_at(a.output, bx).reorder_storage(dx, dy, x, y) \
        .reorder(dx, dy, x, y).vectorize(dx).vectorize(dy).vectorize(x, 64)
    a.conv.update().reorder(rk.x, dx, dy, x, rk.y, y).atomic() \
        .vectorize(rk.x).vectorize(dx).vectorize(dy).vectorize(x, 64)
    return [a.output], [a.kernel, a.image]


APP = App(
    "upsample", "wmma", ("conv",),
    "2x upsample, multiphase: four 8x8 kernel phases interleaved in the output, 64 x 4 phases x 8 taps",
    pipeline,
    sizes={"test": dict(width=256, rows=4), "paper": dict(width=2048, rows=128)},
    paper="RTX 4070: 1.4x over Halide CUDA (k = 16)",
    cuda_baseline=True,
)
