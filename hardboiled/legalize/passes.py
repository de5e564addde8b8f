"""The legalization passes, in order, and ``tensorize``.

Each pass takes one statement that selection produced (with its
``SelectionResult``) and returns it rewritten; each module of this package
states the invariant its pass establishes. ``LEGALIZATION`` makes what
selection produced executable on the accelerator; ``GPU_MAPPING`` then
decides, for any program with GPU loops, how its kernels' work and
barriers fall on the GPU threads (the decisions the CUDA generator prints,
and any other GPU backend would). The pipeline (hardboiled/pipeline/passes.py)
runs every pass as a named pass of its own; ``tensorize`` runs selection
and all of them on a bare statement, for library use, tests and
benchmarks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hardboiled import ir
from hardboiled.select.options import SelectionOptions
from hardboiled.select.selector import SelectionResult, select_instructions


@dataclass(frozen=True, slots=True)
class StmtPass:
    """A pass over one statement that selection produced."""

    name: str
    summary: str
    apply: Callable[[ir.Stmt, SelectionResult], ir.Stmt]
    accelerator_only: bool = True
    """Runs only on programs with accelerator memory (a no-op elsewhere)."""


def _place_temporaries(stmt: ir.Stmt, selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.temporaries import place_temporaries

    return place_temporaries(stmt, list(selection.temporaries))


def _hoist_operand_copies(stmt: ir.Stmt, selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.operand_hoisting import hoist_operand_copies

    return hoist_operand_copies(stmt, [t.name for t in selection.temporaries])


def _retag_memory(stmt: ir.Stmt, selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.memory import apply_memory_overrides

    return apply_memory_overrides(stmt, dict(selection.memory_types))


def _fit_tile_registers(stmt: ir.Stmt, _selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.amx_registers import fit_tile_registers

    return fit_tile_registers(stmt)


def _check_amx(stmt: ir.Stmt, _selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.amx_checks import check_amx_program

    return check_amx_program(stmt)


def _stage_wmma_operands(stmt: ir.Stmt, _selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.wmma_staging import buffer_element_types, stage_unaligned_operands, uses_wmma_memory

    return stage_unaligned_operands(stmt, buffer_element_types(stmt)) if uses_wmma_memory(stmt) else stmt


def _wmma_lanes(stmt: ir.Stmt, _selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.wmma_lanes import enforce_wmma_lanes
    from hardboiled.legalize.wmma_staging import uses_wmma_memory

    return enforce_wmma_lanes(stmt) if uses_wmma_memory(stmt) else stmt


def _wmma_fragments(stmt: ir.Stmt, _selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.wmma_fragments import push_fragment_allocations
    from hardboiled.legalize.wmma_staging import uses_wmma_memory

    return push_fragment_allocations(stmt) if uses_wmma_memory(stmt) else stmt


LEGALIZATION: tuple[StmtPass, ...] = (
    StmtPass("place-temporaries", "allocate and fill the operand temporaries selection introduced",
             _place_temporaries),
    StmtPass("hoist-operand-copies", "fill each VNNI operand copy once, outside the loops that read it",
             _hoist_operand_copies),
    StmtPass("retag-memory", "move buffers to the memory --store-in names (Auto after a fallback)", _retag_memory),
    StmtPass("fit-tile-registers", "keep the AMX accumulators that overflow the tile registers in memory, "
             "loaded into a register around each tile operation", _fit_tile_registers),
    StmtPass("check-amx", "tile shapes, whole-tile indexing and tile-register pressure", _check_amx),
    StmtPass("stage-wmma-operands", "copy operands not provably aligned through shared memory",
             _stage_wmma_operands),
    StmtPass("wmma-lanes", "run every WMMA operation in a 32-lane warp loop", _wmma_lanes),
    StmtPass("wmma-fragments", "make fragment allocations per-thread", _wmma_fragments),
)


def _reuse_operand_fragments(stmt: ir.Stmt, _selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.fragment_reuse import reuse_operand_fragments

    return reuse_operand_fragments(stmt) if ir.has_gpu_loops(stmt) else stmt


def _spread_lanes(stmt: ir.Stmt, _selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.lane_spreading import spread_lanes

    return spread_lanes(stmt) if ir.has_gpu_loops(stmt) else stmt


def _place_barriers(stmt: ir.Stmt, _selection: SelectionResult) -> ir.Stmt:
    from hardboiled.legalize.barriers import place_barriers

    return place_barriers(stmt) if ir.has_gpu_loops(stmt) else stmt


GPU_MAPPING: tuple[StmtPass, ...] = (
    StmtPass("reuse-operand-fragments", "load each A and B fragment once per stretch of WMMA statements",
             _reuse_operand_fragments, accelerator_only=False),
    StmtPass("spread-lanes", "spread independent vector stores over the threads that run them", _spread_lanes,
             accelerator_only=False),
    StmtPass("place-barriers", "barriers between the threads of a kernel, shared by rows of fills",
             _place_barriers, accelerator_only=False),
)

PASSES = LEGALIZATION + GPU_MAPPING
"""Every pass after selection, in order."""

_NO_SELECTION: Any = None
"""The GPU mapping passes read nothing of selection's result."""


def legalize(stmt: ir.Stmt, selection: SelectionResult, steps: tuple[StmtPass, ...] = PASSES) -> ir.Stmt:
    """``stmt`` (what ``selection`` produced) through the passes after
    selection; those for accelerators leave a program without accelerator
    memory unchanged."""
    for step in steps:
        if selection.has_accelerator_memory or not step.accelerator_only:
            stmt = step.apply(stmt, selection)
    return stmt


def map_to_gpu(stmt: ir.Stmt) -> ir.Stmt:
    """The GPU mapping passes alone, on a program with GPU loops that did
    not come through ``tensorize`` (hand-written kernels, in tests): what
    the CUDA generator prints must have been through them."""
    for step in GPU_MAPPING:
        stmt = step.apply(stmt, _NO_SELECTION)
    return stmt


def tensorize(stmt: ir.Stmt, options: SelectionOptions, *, filename: str = "<string>", source: str = "",
              store_lines: tuple[int, ...] = ()) -> SelectionResult:
    """Selection and legalization of one statement: the result's ``stmt``
    is executable IR."""
    selection = select_instructions(stmt, options, filename=filename, source=source, store_lines=store_lines)
    return dataclasses.replace(selection, stmt=legalize(selection.stmt, selection))
