"""The kernel ABI: which buffers a generated function takes, in which order
and with which fields. Code generation declares it; verification calls
generated code through it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

from hardboiled import ir
from hardboiled.ir.buffers import discover_buffers
from hardboiled.support.diagnostics import Diagnostic, HardboiledError


@dataclass(frozen=True, slots=True)
class KernelArgument:
    buffer: str
    type: ir.Type
    dimensions: int
    output: bool = False
    """Whether the pipeline writes it (the dump's checks say so)."""


def kernel_signature(stmt: ir.Stmt) -> list[KernelArgument]:
    """The pipeline buffers the generated function takes, in order."""
    args = []
    for name, spec in sorted(discover_buffers(stmt).items()):
        if spec.type is None or spec.dimensions is None:
            raise HardboiledError(Diagnostic(
                "error", f"cannot tell the type and dimensions of buffer '{name}' from the IR"))
        args.append(KernelArgument(name, spec.type, spec.dimensions, spec.output))
    return args


DEFAULT_ENTRY_POINT = "hb_kernel"
"""The entry point of code generated from standard input, or from a name
with no letter or digit in it."""

C_KEYWORDS = frozenset((
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while "
    "_Bool _Complex _Imaginary alignas alignof bool class constexpr delete explicit false friend mutable namespace "
    "new nullptr operator private protected public template this throw true try typeid typename using virtual"
).split())
"""C and C++ keywords: an entry point may not be one (the .cu is C++)."""

STANDARD_INPUT_NAMES = ("-", "<stdin>")


HELPER_PREFIX = "hb_"
"""The generated code's own helpers and runtime are named hb_*: an entry
point may not be (hb_div would clash with Halide's division helper), except
the default one."""
ESCAPE_PREFIX = "k_"
"""Put in front of an input's stem that cannot be a function name as it is."""


def is_entry_point_name(name: str) -> bool:
    """A name C and C++ accept for the generated function, that clashes with
    nothing the generated code defines (nor with a program's main)."""
    return (re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) is not None and name not in C_KEYWORDS
            and name != "main" and (name == DEFAULT_ENTRY_POINT or not name.startswith(HELPER_PREFIX)))


def entry_point_name(filename: str) -> str:
    """The default entry point for an input: its stem (every suffix off),
    made a C identifier. ``conv-layer.debug.log`` gives ``conv_layer``,
    ``3x3.stmt`` ``k_3x3``, ``int.stmt`` ``k_int``."""
    if filename in STANDARD_INPUT_NAMES:
        return DEFAULT_ENTRY_POINT
    stem = PurePath(filename).name.split(".", 1)[0]
    name = re.sub(r"[^A-Za-z0-9_]", "_", stem).strip("_")
    if not name:
        return DEFAULT_ENTRY_POINT
    return name if is_entry_point_name(name) else ESCAPE_PREFIX + name
