"""What one compile is asked to do (``CompileOptions``), in a module of its
own: the command line builds it, and the driver answers from the cache,
without loading the pass pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hardboiled.select.options import SelectionOptions
from hardboiled.targets.cuda_arch import DEFAULT_SM

if TYPE_CHECKING:
    from hardboiled import ir


@dataclass(frozen=True)
class CompileOptions:
    stage: str | None = None
    buffer_types: dict[str, ir.Type] = field(default_factory=dict)
    selection: SelectionOptions = field(default_factory=SelectionOptions)
    emit: tuple[str, ...] = ("ir",)
    require: bool = False
    """--require: no store in accelerator memory is a miss (exit 1)."""
    verify: bool = False
    run: bool = False
    seed: int = 0
    params: dict[str, int] = field(default_factory=dict)
    verify_timeout_s: float | None = None
    """--verify-timeout: the interpreter's limit per verification (None:
    verify/interp.py INTERPRETER_TIMEOUT_S)."""
    cc: str | None = None
    amx: str = "auto"
    build_path: str | None = None
    cuda_arch: int = DEFAULT_SM
    name: str | None = None
    """The generated function's name (--name); None: from the input's name."""
    include_dirs: tuple[str, ...] = ()
    """-I/--include-dir: header directories for the C compiler and nvcc."""
    args: tuple[str, ...] | None = None
    """--args: the buffers in Halide's argument order (None: from a lowered
    module's signature, else inputs then outputs by name)."""

    @property
    def include_flags(self) -> tuple[str, ...]:
        return tuple(flag for directory in self.include_dirs for flag in ("-I", directory))
    print_before: tuple[str, ...] = ()
    """Pass names (or "all") to print the program before."""
    print_after: tuple[str, ...] = ()
    timing: bool = False
    verify_ir: bool = False
    """Check the IR invariants after every IR pass."""

    @property
    def cuda_build(self) -> bool:
        return bool(self.build_path) and Path(self.build_path or "").suffix in CUDA_BUILD_SUFFIXES

    @property
    def c_build(self) -> bool:
        return bool(self.build_path) and not self.cuda_build

    @property
    def instrumented(self) -> bool:
        """Asks for checks or output that only a real run of the passes
        produces (so the whole-file cache may not answer)."""
        return bool(self.print_before or self.print_after or self.timing or self.verify_ir)


CODE = "code"
"""The emit kind the Python API asks for: C for a CPU program, CUDA for a
GPU one (emit-c and emit-cuda each skip the other kind of program)."""

CUDA_BUILD_SUFFIXES = {".ptx": "ptx", ".cubin": "cubin"}
"""--build FILE with these suffixes compiles the generated CUDA with nvcc;
any other FILE is an object file (a shared library for .so), made by nvcc
for a GPU program and by the C compiler for a CPU one."""
