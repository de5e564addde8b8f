"""Instruction counts of the PTX nvcc makes of generated CUDA (static
counts, not executions), and nvcc itself where it is installed."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

PTX_COUNT_NAMES = ("mma", "wmma_load_a", "wmma_load_b", "wmma_load_c", "wmma_store_d",
                   "bar_sync", "bar_warp_sync", "st_shared", "ld_shared")


def _ptx_category(opcode: str) -> str | None:
    parts = opcode.split(".")
    if opcode.startswith("wmma.mma") or parts[0] == "mma":
        return "mma"
    if opcode.startswith("wmma.load.") and len(parts) > 2 and parts[2] in "abc":
        return f"wmma_load_{parts[2]}"
    if opcode.startswith("wmma.store.d"):
        return "wmma_store_d"
    if parts[:3] == ["bar", "warp", "sync"]:
        return "bar_warp_sync"
    if parts[0] in ("bar", "barrier") and "sync" in parts:
        return "bar_sync"
    if parts[0] in ("st", "ld") and any(part.startswith("shared") for part in parts[1:]):
        return f"{parts[0]}_shared"
    return None


def ptx_counts(ptx_text: str) -> dict[str, int]:
    """Instructions in the PTX text (static, not executed): Tensor-Core
    multiplies (``wmma.mma``/``mma``), fragment loads and stores, block and
    warp barriers, and shared-memory stores and loads."""
    counts = dict.fromkeys(PTX_COUNT_NAMES, 0)
    for line in ptx_text.splitlines():
        code = line.split("//", 1)[0].strip()
        code = re.sub(r"^@!?%\w+\s+", "", code)
        if not code or code.startswith((".", "{", "}")) or code.endswith(":"):
            continue
        category = _ptx_category(code.split()[0].rstrip(";"))
        if category is not None:
            counts[category] += 1
    return counts


def nvcc_available() -> bool:
    return shutil.which(os.environ.get("NVCC") or "nvcc") is not None


def generate_ptx(cuda_source: str, extra: tuple[str, ...] = ()) -> str | None:
    """nvcc's PTX for ``cuda_source`` (through hardboiled's toolchain, with
    ``extra`` flags such as the pipeline's GENERATED_CUDA_FLAGS), or None
    without nvcc."""
    if not nvcc_available():
        return None
    from hardboiled.codegen.toolchain import compile_cuda
    with tempfile.TemporaryDirectory(prefix="hardboiled-wmma-figures-") as tmp:
        return compile_cuda(cuda_source, Path(tmp) / "kernel.ptx", kind="ptx", extra=extra).read_text()
