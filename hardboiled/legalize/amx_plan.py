"""The AMX tile-register plan, counted once for legalization and the C
generator: every whole tile of an AMX buffer is a register for the whole
kernel (``buffer_tiles``), and the matmuls' loaded A and B tiles take
registers pooled by shape (``operand_shapes``). ``fit-tile-registers``
(amx_registers.py) and ``check-amx`` (amx_checks.py) count with these;
codegen/c.py allocates by them.
"""

from __future__ import annotations

from hardboiled import ir
from hardboiled.targets.amx import AMX_INTRINSIC, AMX_TILE, AMXOp, AMXTile, amx_intrinsic

_LOAD, _MATMUL = AMX_INTRINSIC[AMXOp.LOAD], AMX_INTRINSIC[AMXOp.MATMUL]


def buffer_tiles(stmt: ir.Stmt, alloc: ir.Allocate, tile: AMXTile = AMX_TILE) -> int:
    """The tile registers an AMX buffer takes: one per whole tile its
    statements write (tiles of fewer than 16 rows pack closer than a
    register's 1 KiB), at least as many as its bytes fill."""
    elements = alloc.constant_elements or 0
    written = {node.index.base for node in ir.walk(stmt) if isinstance(node, ir.Store) and node.name == alloc.name
               and isinstance(node.index, ir.Ramp)}
    return max(1, len(written), -(-(elements * alloc.type.bytes) // tile.tile_bytes))


def tile_constant(e: ir.Expr) -> int | None:
    """An integer constant, also as Halide's own AMX stage writes one: a
    cast of a literal, such as ``int16(16)``."""
    while isinstance(e, ir.Cast) and (e.type.is_int or e.type.is_uint):
        e = e.value
    return e.value if isinstance(e, (ir.IntImm, ir.UIntImm)) else None


def operand_shapes(stmt: ir.Stmt) -> dict[tuple[int, int], int]:
    """The registers the matmuls' loaded A and B tiles take, by (rows,
    colbytes): one per shape, two where one matmul loads both operands in
    that shape. The C generator pools its operand registers so."""
    needed: dict[tuple[int, int], int] = {}
    for call in ir.calls(stmt):
        intrinsic = amx_intrinsic(call)
        if intrinsic is None or intrinsic.op is not AMXOp.MATMUL:
            continue
        loaded = [(tile_constant(op.args[0]), tile_constant(op.args[1]))
                  for op in (_MATMUL.argument(call, "a"), _MATMUL.argument(call, "b"))
                  if isinstance(op, ir.Call) and amx_intrinsic(op) is _LOAD]
        for rows, colbytes in loaded:
            if rows is not None and colbytes is not None:  # else check-amx refuses the shape
                shape = (rows, colbytes)
                needed[shape] = max(needed.get(shape, 1), loaded.count(shape))
    return needed


def operand_registers(stmt: ir.Stmt) -> int:
    """The registers the matmuls' operand tiles take (``operand_shapes``)."""
    return sum(operand_shapes(stmt).values()) or 2
