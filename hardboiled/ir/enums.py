"""The enumerations that Halide prints: binary operators (``BinOp``),
vector reductions (``ReduceOp``), loop kinds (``ForKind``), and the device
APIs and memory types an IR may name."""

from __future__ import annotations

import enum


class BinOp(enum.Enum):
    """Binary operators; the value is how Halide prints the infix form."""

    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    MOD = "%"
    MIN = "min"
    MAX = "max"
    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    AND = "&&"
    OR = "||"

    @property
    def is_comparison(self) -> bool:
        return self in _COMPARISONS

    @property
    def is_logical(self) -> bool:
        return self in (BinOp.AND, BinOp.OR)

    @property
    def is_function_style(self) -> bool:
        return self in (BinOp.MIN, BinOp.MAX)


_COMPARISONS = frozenset({BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE})


class ReduceOp(enum.Enum):
    ADD = "add"
    SATURATING_ADD = "saturating_add"
    MUL = "mul"
    MIN = "min"
    MAX = "max"
    AND = "and"
    OR = "or"


class ForKind(enum.Enum):
    SERIAL = "for"
    PARALLEL = "parallel"
    UNROLLED = "unrolled"
    VECTORIZED = "vectorized"
    EXTERN = "extern"
    GPU_BLOCK = "gpu_block"
    GPU_THREAD = "gpu_thread"
    GPU_LANE = "gpu_lane"


DEVICE_APIS = (
    "Default_GPU",
    "CUDA",
    "OpenCL",
    "Metal",
    "Hexagon",
    "HexagonDma",
    "D3D12Compute",
    "Vulkan",
    "WebGPU",
)

# Halide 21's MemoryType names, plus the accelerator memories of the
# HardBoiled fork (WMMA*) that stock Halide does not have.
MEMORY_TYPES = (
    "Auto",
    "Heap",
    "Stack",
    "Register",
    "GPUShared",
    "GPUTexture",
    "LockedCache",
    "VTCM",
    "AMXTile",
    "WMMAAccumulator",
    "WMMAA",
    "WMMAB",
)

WMMA_STAGE = ".wmma_stage."
"""Infix of the buffers that legalization adds to stage a WMMA operand
through shared memory (``A.wmma_stage.0``); the interpreter and the CUDA
generator recognize the copies into and out of them."""
