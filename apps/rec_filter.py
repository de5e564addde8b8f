"""A second-order recursive (IIR) filter (paper Sec. 7.2): y[i] = x[i] + a1 y[i-1] + a2 y[i-2].

As in the paper, the recursion is dilated by 8: doubling the step three times
turns it into y[i] = (k * x)[i] + b1 y[i-8] + b2 y[i-16], where k is a 16-tap
FIR kernel. The FIR part, the bulk of the work, is a Toeplitz product on
Tensor Cores (256 outputs x 8 taps per step, twice); the dilated recursion
runs on CUDA cores, eight independent chains per channel. The taps are a
host stage (computed at root on the CPU, beside the GPU stages). Unlike the
artifact, the signal is not cut into tiles with a boundary fix-up: each
channel is one tile.
"""

from apps.common import App, accumulator, dense, f16, f32, hl, vars_


def dilated_filter(a1: float, a2: float, dilation: int = 8):
    """(FIR taps, b1, b2): y = k * x + b1 y[. - dilation] + b2 y[. - 2 dilation]."""
    taps = [1.0]
    step = 1
    while step < dilation:
        # (1 - a1 z^-s - a2 z^-2s)(1 + a1 z^-s - a2 z^-2s) = 1 - (a1^2 + 2 a2) z^-2s + a2^2 z^-4s
        widened = [0.0] * (len(taps) + 2 * step)
        for i, t in enumerate(taps):
            widened[i] += t
            widened[i + step] += a1 * t
            widened[i + 2 * step] -= a2 * t
        taps = widened
        a1, a2 = a1 * a1 + 2 * a2, -a2 * a2
        step *= 2
    return taps + [0.0] * (2 * dilation - len(taps)), a1, a2


def pipeline(samples: int, channels: int, a1: float = 1.8, a2: float = -0.9):
    h = hl()
    dilation = 8
    fir, b1, b2 = dilated_filter(a1, a2, dilation)
    taps = len(fir)
    signal = h.ImageParam(h.Float(16), 2, "signal")
    i, n, t, io, ii = vars_("i n t io ii")
    r = h.RDom([(0, taps)], "r")
    kernel, padded, convolved, recursive, output, fir_part = (h.Func(s) for s in
                                                          ("kernel", "padded", "convolved", "recursive", "output",
                                                           "fir_part"))
    # kernel(t): the FIR taps reversed, so that convolved is a correlation
    kernel[t] = f16(h.mux(t, [fir[taps - 1 - j] for j in range(taps)]))
    padded[i, n] = h.select(i >= 0, signal[h.max(i, 0), n], f16(0))
    convolved[i, n] = f32(0)
    convolved[i, n] += f32(kernel[r.x]) * f32(padded[i - (taps - 1) + r.x, n])
    # recursive(ii, io, n) is y[8 io + ii]: the chain ii is a pure variable,
    # so its eight chains may run in parallel
    rr = h.RDom([(0, samples // dilation)], "rr")
    recursive[ii, io, n] = f32(0)
    step = convolved[rr.x * dilation + ii, n]
    recursive[ii, rr.x, n] = (step
                              + h.select(rr.x >= 1, f32(b1) * recursive[ii, h.max(rr.x - 1, 0), n], f32(0))
                              + h.select(rr.x >= 2, f32(b2) * recursive[ii, h.max(rr.x - 2, 0), n], f32(0)))
    output[i, n] = f16(recursive[i % dilation, i // dilation, n])
    # A second output: the FIR part alone (the Tensor Core stage), which
    # verification bounds tightly; the recursion amplifies rounding
    # differences geometrically in the worst case.
    fir_part[i, n] = convolved[i, n]
    dense(signal, samples, channels)
    dense(output.output_buffer(), samples, channels)
    dense(fir_part.output_buffer(), samples, channels)
    kernel.compute_root()  # on the host
    conv_out = convolved.in_()
    conv_out.compute_root().split(i, io, ii, 256).gpu_blocks(io, n).vectorize(ii)
    # the zero-padded window of the signal a block reads, in shared memory
    padded.compute_at(conv_out, io).vectorize(i, 8)
    accumulator(convolved).compute_at(conv_out, io).vectorize(i, 256)
    convolved.update().atomic().vectorize(r.x, 8).vectorize(i, 256)
    recursive.compute_root().gpu_blocks(n).gpu_threads(ii)
    recursive.update().gpu_blocks(n).gpu_threads(ii)  # a thread per chain, serial along it
    for out in (output, fir_part):
        out.compute_root().split(i, io, ii, 256).gpu_blocks(io, n).gpu_threads(ii)
    return [output, fir_part], [signal]


APP = App(
    "rec_filter", "wmma", ("convolved",),
    "2nd-order recursive filter dilated by 8: 16-tap FIR on Tensor Cores, recursion on CUDA cores, 2 outputs",
    pipeline,
    unproven=("the recursion y[i] = x[i] + b1 y[i-8] + b2 y[i-16]: its worst-case error bound grows as "
              "(|b1| + |b2|)^(i/8), past the output's range after a few hundred samples, although the filter "
              "is stable; the FIR part (the Tensor Core stage, output fir_part) is proven"),
    sizes={"test": dict(samples=512, channels=2), "paper": dict(samples=1 << 21, channels=2)},
)
