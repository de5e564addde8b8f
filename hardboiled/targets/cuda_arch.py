"""The GPU architectures generated CUDA is built for: numbers the command
line needs (``--cuda-arch``'s default and floor, and reading its value)
without loading the Tensor Core tables (hardboiled/targets/wmma.py, which
uses them) or the toolchain (codegen/toolchain.py, whose imports a cache
hit would pay for: shutil, subprocess, importlib.resources)."""

from __future__ import annotations

MIN_SM = 75
"""The oldest architecture CUDA 13 compiles for (Turing)."""
DEFAULT_SM = 80
"""Ampere: every fragment type hardboiled selects (bfloat16 and float64 need it)."""


def parse_cuda_arch(text: str) -> int:
    """``sm_80``, ``80`` or ``8.0`` to 80; anything older than the oldest
    architecture nvcc 13 and the Tensor Core table accept is a usage error."""
    spelled = text.strip().lower().removeprefix("sm_").replace(".", "")
    if not spelled.isdigit():
        from hardboiled.support.diagnostics import Diagnostic, HardboiledError

        raise HardboiledError(Diagnostic(
            "error", f"{text!r} is not a CUDA architecture",
            notes=("write it as sm_XX, for example sm_80",),
        ))
    sm = int(spelled)
    if sm < MIN_SM:
        from hardboiled.support.diagnostics import Diagnostic, HardboiledError

        raise HardboiledError(Diagnostic(
            "error", f"sm_{sm} is not supported: CUDA 13 and hardboiled need sm_{MIN_SM} or newer",
            notes=("Volta (sm_70, sm_72) was dropped by CUDA 13",),
        ))
    return sm
