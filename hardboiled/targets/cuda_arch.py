"""The GPU architectures generated CUDA is built for: numbers the command
line needs (``--cuda-arch``'s default and floor) without loading the Tensor
Core tables (hardboiled/targets/wmma.py, which uses them)."""

MIN_SM = 75
"""The oldest architecture CUDA 13 compiles for (Turing)."""
DEFAULT_SM = 80
"""Ampere: every fragment type hardboiled selects (bfloat16 and float64 need it)."""
