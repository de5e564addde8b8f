"""The kernel ABI: which buffers a generated function takes, in which order
and with which fields. Code generation declares it; verification calls
generated code through it."""

from __future__ import annotations

from dataclasses import dataclass

from hardboiled import ir
from hardboiled.ir.buffers import discover_buffers
from hardboiled.support.diagnostics import Diagnostic, HardboiledError


@dataclass(frozen=True, slots=True)
class KernelArgument:
    buffer: str
    type: ir.Type
    dimensions: int


def kernel_signature(stmt: ir.Stmt) -> list[KernelArgument]:
    """The pipeline buffers the generated function takes, in order."""
    args = []
    for name, spec in sorted(discover_buffers(stmt).items()):
        if spec.type is None or spec.dimensions is None:
            raise HardboiledError(Diagnostic(
                "error", f"cannot tell the type and dimensions of buffer '{name}' from the IR"))
        args.append(KernelArgument(name, spec.type, spec.dimensions))
    return args
