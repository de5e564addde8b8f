"""AMX legality checks against the table in hardboiled/targets/amx.py.

Invariant established (or a ``LegalizationError``, a selection miss): every
tile operation fits a tile register, every AMX buffer is indexed by whole
tiles, and the accumulators plus two operand tiles fit in the tile
registers.
"""

from __future__ import annotations

from hardboiled import ir
from hardboiled.ir.printer import print_ir
from hardboiled.legalize.amx_plan import operand_registers, register_count, tile_constant
from hardboiled.legalize.common import legal_error
from hardboiled.select.extract import ACCELERATOR_MEMORY, accelerator_allocations
from hardboiled.targets.amx import AMX_TILE, AMXTile, amx_intrinsic


def check_amx_program(stmt: ir.Stmt) -> ir.Stmt:
    """Check every buffer in AMX tile memory of ``stmt``; return it unchanged."""
    buffers = {name: alloc for name, alloc in accelerator_allocations(stmt, {}).items()
               if ACCELERATOR_MEMORY[alloc.memory_type] == "AMX"}
    check_amx(stmt, buffers, AMX_TILE)
    return stmt


def check_amx(stmt: ir.Stmt, amx_buffers: dict[str, ir.Allocate], tile: AMXTile = AMX_TILE) -> None:
    for node in ir.calls(stmt):
        intrinsic = amx_intrinsic(node)
        if intrinsic is not None and intrinsic.writes_tile:
            rows = tile_constant(intrinsic.argument(node, "rows"))
            colbytes = tile_constant(intrinsic.argument(node, "colbytes"))
            if rows is None or colbytes is None:
                raise legal_error(f"{print_ir(node)[:200]}: a tile's rows and bytes per row must be constants "
                                  "(the tile configuration is fixed before the tile is used)")
            if not (0 < rows <= tile.max_rows and 0 < colbytes <= tile.max_colbytes):
                raise legal_error(
                    f"{node.name} of {rows} rows x {colbytes} bytes does not fit an AMX tile "
                    f"({tile.max_rows} rows x {tile.max_colbytes} bytes)"
                )
    for name, alloc in amx_buffers.items():
        elements = alloc.constant_elements
        if elements is None:
            raise legal_error(f"AMX buffer '{name}' has a symbolic size; tile registers are fixed")
        _check_tile_indexing(stmt, name, alloc, tile)
    # buffers not live at once share registers (amx_plan.buffer_registers)
    accumulator_tiles = register_count(stmt, set(amx_buffers))
    # Each tile_matmul also needs its A and B operands in registers.
    operands = operand_registers(stmt)
    if accumulator_tiles + operands > tile.registers:
        raise legal_error(
            f"the AMX buffers need {accumulator_tiles} tile registers, plus {operands} for matmul operands; "
            f"AMX has {tile.registers}"
        )


def _check_tile_indexing(stmt: ir.Stmt, name: str, alloc: ir.Allocate, tile: AMXTile) -> None:
    capacity = tile.tile_bytes // alloc.type.bytes
    for node in ir.walk(stmt):
        if isinstance(node, (ir.Load, ir.Store)) and node.name == name:
            index = node.index
            lanes = index.type.lanes
            ok = (
                isinstance(index, ir.Ramp) and lanes <= capacity
                and isinstance(index.base, ir.IntImm) and index.base.value % lanes == 0
                and isinstance(index.stride, ir.IntImm) and index.stride.value == 1
            )
            if not ok:
                raise legal_error(
                    f"AMX buffer '{name}' is accessed at {print_ir(index)}, which is not a whole tile "
                    f"(expected ramp(L*i, 1, L) with L <= {capacity})"
                )
