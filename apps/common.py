"""What every application generator shares: the App record and Halide helpers.

An application module defines ``APP``: its name, accelerator, which Funcs hold
accumulators (stock Halide has no WMMAAccumulator memory type, so the schedule
says ``store_in(Register)`` and hardboiled is told ``--store-in NAME=...``),
its sizes (``test``: small enough for the reference interpreter; ``paper``:
the paper's problem, or as close as one dump allows) and ``pipeline(**size)``,
which builds the Halide pipeline with the paper's schedule and returns
``(outputs, arguments)``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from gen_fixtures import dense  # noqa: E402,F401 - constant mins, extents, dense strides

CUDA_TARGET = "x86-64-linux-cuda-cuda_capability_80"
AMX_TARGET = "x86-64-linux-avx512_sapphirerapids"


@dataclass(frozen=True)
class App:
    name: str
    accelerator: str  # "wmma" or "amx"
    accumulators: tuple[str, ...]
    description: str
    pipeline: Callable[..., tuple[list[Any], list[Any]]]
    sizes: dict[str, dict[str, int]] = field(default_factory=dict)
    paper: str = ""
    """The paper's figure for this application, for docs/applications.md."""
    verification_inputs: Callable[..., dict[str, Any]] | None = None
    """Inputs of the kind the pipeline really sees, by buffer name (numpy
    arrays), for the sizes' keyword arguments: verification runs on them
    instead of random data where random data proves nothing (a DCT's
    coefficient matrices: random ones make values whose 16-bit rounding
    swamps the output)."""
    unproven: str = ""
    """Why verification proves nothing about some output elements, for an
    application whose run accepts that (--accept-unproven); empty: none may be."""
    cuda_baseline: bool = False
    """Whether ``pipeline(schedule="cuda", **size)`` builds the same algorithm
    with a CUDA-only schedule (no Tensor Cores), the paper's baseline kind
    (bench/device.py times it beside hardboiled's kernel)."""

    @property
    def memory(self) -> str:
        return "WMMAAccumulator" if self.accelerator == "wmma" else "AMXTile"

    @property
    def target(self) -> str:
        return CUDA_TARGET if self.accelerator == "wmma" else AMX_TARGET


def hl():
    import halide  # imported lazily: only the dump child needs libHalide
    return halide


def f16(value):
    return hl().cast(hl().Float(16), value)


def f32(value):
    return hl().cast(hl().Float(32), value)


def vars_(names: str):
    return [hl().Var(n) for n in names.split()]


def rvars(names: str):
    return [hl().RVar(n) for n in names.split()]


def accumulator(func):
    """The Func holds tensor accumulators: Register memory in the dump, which
    hardboiled is told to treat as WMMAAccumulator (or AMXTile)."""
    return func.store_in(hl().MemoryType.Register)


def amx_tile(func):
    return func.store_in(hl().MemoryType(8))  # AMXTile; the Python enum lacks the name


def cuda_only(output, tiled, reductions, unrolled=(), tile=(32, 8)):
    """The baselines' schedule, CUDA without Tensor Cores: the output's two
    ``tiled`` dimensions in blocks of ``tile`` threads (any other dimension
    of the output fused into the grid's third axis), each thread computing
    its element with the ``reductions``' accumulators in registers, and
    each of ``unrolled`` (a reduction's (Func, RVar)) unrolled by 4. Threads
    past the output's edge do nothing (GuardWithIf): the default tail would
    shift the last tile inwards, before the buffer's start where the
    output is smaller than a tile (the applications' test sizes).

    It is the schedule a Halide user writes first for a GPU, not one an
    autoscheduler tuned: docs/performance.md says what that means for the
    speedups measured against it."""
    h = hl()
    x, y = tiled
    rest = [v for v in output.args() if v.name() not in (x.name(), y.name())]
    bx, by, bz, tx, ty, tz = vars_("bx by bz tx ty tz")
    if rest:
        z = rest[0]
        for v in rest[1:]:
            fused = h.Var(f"{z.name()}_{v.name()}")
            output.fuse(z, v, fused)
            z = fused
        output.gpu_tile(x, y, z, bx, by, bz, tx, ty, tz, tile[0], tile[1], 1, h.TailStrategy.GuardWithIf)
    else:
        output.gpu_tile(x, y, bx, by, tx, ty, tile[0], tile[1], h.TailStrategy.GuardWithIf)
    for func in reductions:
        func.compute_at(output, tx)
    for func, rvar in unrolled:
        func.update().unroll(rvar, 4, h.TailStrategy.GuardWithIf)
    return output
