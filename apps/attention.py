"""Attention (paper Sec. 7.3), the whole pipeline: softmax(Q K^T / sqrt(D)) V.

Both products run on Tensor Cores (16x16x16 tiles, f32 accumulators); the
softmax between them is a plain CUDA stage computed at root. Every stage is on
the GPU.
"""

import math

from apps.common import App, accumulator, f16, f32, hl, rvars, vars_


def _dense3(param, d0, d1, d2):
    param.dim(0).set_bounds(0, d0).set_stride(1)
    param.dim(1).set_bounds(0, d1).set_stride(d0)
    param.dim(2).set_bounds(0, d2).set_stride(d0 * d1)


def pipeline(d: int, length: int, heads: int):
    h = hl()
    query = h.ImageParam(h.Float(16), 3, "query")
    key = h.ImageParam(h.Float(16), 3, "key")
    value = h.ImageParam(h.Float(16), 3, "value")
    k, q, n, dd, pos, ki, qi, mmki, mmqi, di, li = vars_("k q n d l ki qi mmki mmqi di li")
    rd = h.RDom([(0, d)], "rd")
    rk = h.RDom([(0, length)], "rk")
    rro, rri = rvars("rro rri")
    scores, scaled, row_max, row_sum = h.Func("scores"), h.Func("scaled_scores"), h.Func("row_max"), h.Func("row_sum")
    exp_scores, prob, weighted, output = h.Func("exp_scores"), h.Func("prob"), h.Func("weighted_sum"), h.Func("output")
    scores[k, q, n] = f32(0)
    scores[k, q, n] += f32(query[rd.x, q, n]) * f32(key[rd.x, k, n])
    scaled[k, q, n] = scores[k, q, n] * f32(1.0 / math.sqrt(d))
    row_max[q, n] = f32(-math.inf)
    row_max[q, n] = h.max(row_max[q, n], scaled[rk.x, q, n])
    exp_scores[k, q, n] = h.exp(scaled[k, q, n] - row_max[q, n])
    row_sum[q, n] = f32(0)
    row_sum[q, n] += exp_scores[rk.x, q, n]
    prob[k, q, n] = f16(exp_scores[k, q, n] / row_sum[q, n])
    weighted[dd, pos, n] = f32(0)
    weighted[dd, pos, n] += f32(prob[rk.x, pos, n]) * f32(value[dd, rk.x, n])
    output[dd, pos, n] = weighted[dd, pos, n]
    for p in (query, key, value):
        _dense3(p, d, length, heads)
    _dense3(output.output_buffer(), d, length, heads)
    # Q K^T: one 16x16 tile of scores per block
    scaled.compute_root().split(q, q, mmqi, 16).split(k, k, mmki, 16).reorder(mmki, mmqi, k, q, n) \
        .gpu_blocks(k, q, n).vectorize(mmki).vectorize(mmqi)
    accumulator(scores).compute_at(scaled, k).vectorize(k, 16).vectorize(q, 16)
    scores.update().split(rd.x, rro, rri, 16).reorder(rri, k, q, rro).atomic() \
        .vectorize(rri).vectorize(k, 16).vectorize(q, 16)
    # softmax: a thread per query row
    for f in (row_max, row_sum):
        f.compute_root().split(q, q, qi, 16).gpu_blocks(q, n).gpu_threads(qi)
        f.update().split(q, q, qi, 16).gpu_blocks(q, n).gpu_threads(qi)
    prob.compute_root().split(q, q, qi, 16).split(k, k, ki, 16).reorder(ki, qi, k, q, n) \
        .gpu_blocks(k, q, n).gpu_threads(ki, qi)
    # P V: one 16x16 tile of the output per block
    output.split(dd, dd, di, 16).split(pos, pos, li, 16).reorder(di, li, dd, pos, n).gpu_blocks(dd, pos, n) \
        .vectorize(di).vectorize(li)
    accumulator(weighted).compute_at(output, dd).vectorize(dd, 16).vectorize(pos, 16)
    weighted.update().split(rk.x, rro, rri, 16).reorder(rri, dd, pos, rro).atomic() \
        .vectorize(rri).vectorize(dd, 16).vectorize(pos, 16)
    return [output], [query, key, value]


APP = App(
    "attention", "wmma", ("scores", "weighted_sum"),
    "attention, whole pipeline: Q K^T and P V on Tensor Cores, softmax on CUDA cores between them",
    pipeline,
    sizes={"test": dict(d=32, length=32, heads=1), "paper": dict(d=64, length=4096, heads=64)},
)
