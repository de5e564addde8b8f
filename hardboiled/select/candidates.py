"""Which Funcs could be tensorized, for a run that has nothing marked.

A dump with no store in accelerator memory is not an error: most of a
pipeline runs on ordinary hardware. But a user who ran ``compile`` on it
expected something, so the run names the stores that look like a tensor
contraction (a ``vector_reduce_add`` over products, what Halide's
vectorizer makes of ``f(x, y) += a(k, y) * b(x, k)`` with the reduction
vectorized) and the ``--store-in`` flag that would mark each one's Func.
"""

from __future__ import annotations

from dataclasses import dataclass

from hardboiled import ir
from hardboiled.select.extract import ACCELERATOR_INTRINSICS, ACCELERATOR_MEMORY, iter_stores
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError, statement_location

_MEMORY_FOR = {accelerator: memory for memory, accelerator in ACCELERATOR_MEMORY.items()}


@dataclass(frozen=True, slots=True)
class Candidate:
    func: str
    """The Func (buffer) the store writes."""
    line: int | None
    """The first such store's line in the input."""
    memory: str
    """The accelerator memory to mark it with: AMXTile on a CPU, WMMAAccumulator on a GPU."""

    @property
    def flag(self) -> str:
        return f"--store-in {self.func}={self.memory}"

    def to_json(self) -> dict[str, object]:
        return {"func": self.func, "line": self.line, "memory": self.memory, "flag": self.flag}


def tile_operations(stmt: ir.Stmt) -> int:
    """How many AMX tile or WMMA fragment operations ``stmt`` already
    calls: Halide's own AMX stage ("extracting tile operations"), or
    hardboiled's output read again, is tensorized already."""
    return sum(1 for n in ir.walk(stmt) if isinstance(n, ir.Call) and n.name.startswith(ACCELERATOR_INTRINSICS))


def _is_product(e: ir.Expr) -> bool:
    while isinstance(e, ir.Cast):
        e = e.value
    return isinstance(e, ir.Binary) and e.op is ir.BinOp.MUL


def _reduces_products(e: ir.Expr) -> bool:
    return any(isinstance(n, ir.VectorReduce) and n.op is ir.ReduceOp.ADD and _is_product(n.value)
               for n in ir.walk(e))


def find_candidates(stmt: ir.Stmt, store_lines: tuple[int, ...] = ()) -> list[Candidate]:
    """One candidate per Func with a store of a ``vector_reduce_add`` over
    products, in program order."""
    memory = _MEMORY_FOR["WMMA" if ir.has_gpu_loops(stmt) else "AMX"]
    found: dict[str, Candidate] = {}
    for position, store in enumerate(iter_stores(stmt)):
        if store.name not in found and _reduces_products(store.value):
            line = store_lines[position] if position < len(store_lines) else None
            found[store.name] = Candidate(store.name, line, memory)
    return list(found.values())


class NothingMarked(HardboiledError):
    """--require, and no store is in accelerator memory: the summary, then
    one note per candidate."""

    exit_code = ExitCode.SELECTION_MISS

    def __init__(self, diagnostics: list[Diagnostic]):
        super().__init__(diagnostics[0])
        self.diagnostics = diagnostics


_HALIDE_MEMORY_TYPES = {
    "AMXTile": "Halide 21's own AMXTile memory type (C++ MemoryType::AMXTile; Python hl.MemoryType(8), the "
               "enum lacks the name) makes Halide lower the tiles itself, which it does for a plain matrix "
               "product only",
    "WMMAAccumulator": "Halide 21 has no memory type for Tensor Core accumulators: the flag is the way to mark one",
}
"""What Halide 21 itself offers for each accelerator memory (its Python
bindings name neither), for the hint."""


def candidate_diagnostics(candidates: list[Candidate], filename: str, source: str,
                          severity: str) -> list[Diagnostic]:
    """One diagnostic per candidate, at its store, in schedule terms: the
    flag that marks it here, and the schedule call that marks it in Halide."""
    return [
        Diagnostic(
            severity,
            f"'{c.func}' stores a vector_reduce_add of products, but is not in accelerator memory: "
            "nothing is tensorized",
            statement_location(filename, source, c.line),
            (f"mark it here with {c.flag}; in the schedule, keep it in registers "
             f"({c.func}.store_in(MemoryType::Register), Python hl.MemoryType.Register) and pass that flag",
             _HALIDE_MEMORY_TYPES[c.memory]),
        )
        for c in candidates
    ]


def nothing_marked(candidates: list[Candidate], filename: str, source: str) -> NothingMarked:
    """The error of --require when nothing is in accelerator memory."""
    summary = Diagnostic(
        "error",
        "--require: no store is in accelerator memory (AMXTile or WMMAAccumulator), so nothing was tensorized",
        None,
        (f"{len(candidates)} candidate Func{'s' if len(candidates) != 1 else ''} below" if candidates else
         "no store reduces products with vector_reduce_add: is this the vectorizing stage, with the "
         "reduction vectorized (--stage)?",),
    )
    return NothingMarked([summary, *candidate_diagnostics(candidates, filename, source, "note")])


GPU_KERNELS_SUFFIX = "_gpu_source_kernels"
"""Halide's name for the buffer of compiled device code in a lowered module
(``cuda_gpu_source_kernels``: PTX)."""


def compiled_gpu_kernels(program: ir.Stmt | ir.Module) -> list[str]:
    """The buffers of a final stmt that hold GPU code Halide compiled already."""
    if not isinstance(program, ir.Module):
        return []
    return [b.name for b in program.buffers if b.name.endswith(GPU_KERNELS_SUFFIX)]


def gpu_kernels_compiled(kernels: list[str], filename: str, source: str, severity: str) -> Diagnostic:
    """Why a GPU pipeline's final stmt has nothing for Tensor Cores: its
    device loops are PTX text now, not IR."""
    line = next((i + 1 for i, text in enumerate(source.split("\n")) if text.startswith(f"buffer {kernels[0]} ")),
                None)
    return Diagnostic(
        severity,
        f"this is the final stmt of a GPU pipeline: Halide has compiled its GPU loops to device code "
        f"(buffer {kernels[0]}), so the stores Tensor Cores would run are not in it",
        statement_location(filename, source, line),
        ("select from the debug log instead: run the pipeline with HL_DEBUG_CODEGEN=2 and give hardboiled the "
         "log, with --store-in NAME=WMMAAccumulator; it reads the vectorizing stage, and --stage 'final "
         "simplification' reads the last stage that still has the GPU loops",),
    )
