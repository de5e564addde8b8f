"""One input on its way through the passes: ``Compilation``.

The passes (pipeline/passes.py) read and update it; the driver
(pipeline/driver.py) and the Python API (hardboiled/api.py) read what it
holds at the end, or when a pass failed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hardboiled import ir
from hardboiled.support.diagnostics import Diagnostic, HardboiledError

if TYPE_CHECKING:
    from hardboiled.codegen.abi import KernelArgument
    from hardboiled.select.candidates import Candidate
    from hardboiled.select.selector import SelectionResult


@dataclass(frozen=True, slots=True)
class KernelInterface:
    """The generated function: its name, its parameters in Halide's order,
    and that order when the caller or a lowered module gave it."""

    name: str
    arguments: list[KernelArgument]
    order: tuple[str, ...] | None


@dataclass
class Compilation:
    """One input on its way through the passes."""

    name: str
    data: bytes
    text: str = ""
    program: ir.Stmt | ir.Module | None = None
    original: ir.Stmt | ir.Module | None = None
    stage: str | None = None
    store_lines: tuple[int, ...] = ()
    selections: list[SelectionResult] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    """With nothing in accelerator memory: the Funcs that could be."""
    already_lowered: int = 0
    """With nothing in accelerator memory: the tile or fragment operations
    the input calls already (Halide's own AMX stage)."""
    kernel: KernelInterface | None = None
    """The generated function, once C or CUDA is generated."""
    c_source: str | None = None
    cuda_source: str | None = None
    header: str | None = None
    """The declaration of the generated C or CUDA function, for callers."""
    outputs: dict[str, str] = field(default_factory=dict)
    """Outputs that passes produce as they go (the egglog program, the HTML
    report)."""
    report: dict[str, Any] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    """Lines for the human summary (verification, build)."""
    instrumentation: list[str] = field(default_factory=list)
    """--print-before/--print-after dumps and the --timing report, in order."""
    after_passes: list[tuple[str, ir.Stmt | ir.Module]] = field(default_factory=list)
    """With --verify, the program after each pass that rewrote it, so that a
    mismatch can name the first pass whose output computes something else."""


def bodies(program: ir.Stmt | ir.Module) -> list[ir.Stmt]:
    """The statements selection works on: the program, or each function
    of a lowered module."""
    return [f.body for f in program.functions] if isinstance(program, ir.Module) else [program]


def with_bodies(program: ir.Stmt | ir.Module, new_bodies: list[ir.Stmt]) -> ir.Stmt | ir.Module:
    if isinstance(program, ir.Module):
        functions = tuple(dataclasses.replace(f, body=b) for f, b in zip(program.functions, new_bodies))
        return dataclasses.replace(program, functions=functions)
    return new_bodies[0]


def single(program: ir.Stmt | ir.Module | None, what: str) -> ir.Stmt:
    """The one statement code generation and verification work on: the
    program, or the body of a lowered module's only function."""
    if isinstance(program, ir.Module) and len(program.functions) == 1:
        return program.functions[0].body
    if isinstance(program, ir.Module) or program is None:
        raise HardboiledError(Diagnostic(
            "error", f"{what} takes a single statement; this module has {len(program.functions) if program else 0} "
            "functions (Halide's closures for parallel loops or async producers)",
            notes=("use the debug log's vectorizing stage or a stmt file",),
        ))
    return program
