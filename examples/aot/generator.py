"""A Halide generator: 1-D convolution of bf16 image rows, f32 out.

    output(x, y) = sum over r < TAPS of f32(kernel(r)) * f32(image(x + r, y))

Built twice by the example's Makefile (or CMake):

* ``tensorize=false``: Halide's own schedule, compiled ahead of time by
  Halide (``-e static_library,h``): the reference;
* ``tensorize=true``: the schedule of the paper's AMX convolution. The
  accumulator ``conv`` holds 16 x 16 f32 tiles; stock Halide has no
  AMXTile schedule it can lower for this, so the schedule keeps ``conv`` in
  Register memory and hardboiled is told ``--store-in conv=AMXTile``.
  Halide lowers it (``-e stmt`` with HL_DEBUG_CODEGEN=2), and hardboiled
  selects AMX tile instructions from the IR Halide printed after
  vectorizing.

Both take the same buffers, in the order declared here: image, kernel,
then output. Their shapes are fixed (WIDTH x ROWS outputs, TAPS taps),
dense, as AMX tiles need constant strides.
"""

import halide as hl

WIDTH, ROWS, TAPS = 64, 32, 64


def _dense(buffer, *extents):
    stride = 1
    for d, extent in enumerate(extents):
        buffer.dim(d).set_min(0).set_extent(extent).set_stride(stride)
        stride *= extent


@hl.generator(name="conv1d")
class Conv1D(hl.Generator):
    tensorize = hl.GeneratorParam(False)

    image = hl.InputBuffer(hl.BFloat(16), 2)
    kernel = hl.InputBuffer(hl.BFloat(16), 1)
    output = hl.OutputBuffer(hl.Float(32), 2)

    def generate(self):
        x, y, xi, yi = hl.Var("x"), hl.Var("y"), hl.Var("xi"), hl.Var("yi")
        r = hl.RDom([(0, TAPS)], "r")
        conv = hl.Func("conv")
        conv[x, y] = hl.f32(0)
        conv[x, y] += hl.f32(self.kernel[r.x]) * hl.f32(self.image[x + r.x, y])
        self.output[x, y] = conv[x, y]
        _dense(self.image, WIDTH + TAPS, ROWS)
        _dense(self.kernel, TAPS)
        _dense(self.output.output_buffer(), WIDTH, ROWS)
        self.output.bound(x, 0, WIDTH).bound(y, 0, ROWS)
        if not self.tensorize:
            # Halide's own CPU schedule: rows in parallel, 8 outputs per vector.
            self.output.parallel(y).vectorize(x, 8)
            conv.compute_at(self.output, y).vectorize(x, 8)
            conv.update().vectorize(x, 8)
            return
        # 16 x 16 output tiles; per tile, 16-tap chunks of the reduction, each
        # one tile product (what hardboiled selects).
        rro, rri = hl.RVar("rro"), hl.RVar("rri")
        self.output.split(x, x, xi, 16).split(y, y, yi, 16).reorder(xi, yi, x, y).vectorize(xi).vectorize(yi)
        conv.store_in(hl.MemoryType.Register).compute_at(self.output, x).vectorize(x, 16).vectorize(y, 16)
        conv.update().split(r.x, rro, rri, 16).reorder(rri, x, y, rro).atomic() \
            .vectorize(rri).vectorize(x, 16).vectorize(y, 16)


if __name__ == "__main__":
    hl.main()
