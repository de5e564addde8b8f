"""The AMX tile-register plan, counted once for legalization and the C
generator: every whole tile of an AMX buffer is a register while the
buffer is allocated (``buffer_registers``), and the matmuls' loaded A and
B tiles take registers pooled by shape (``operand_shapes``).
``fit-tile-registers`` (amx_registers.py) and ``check-amx``
(amx_checks.py) count with these; codegen/c.py allocates by them.

Buffers whose allocations do not nest are never live at once (the
products an update isolates, one after the other, or the edge copies of
an accumulator): their tiles share registers where the shapes agree, since
a register's shape is configured once for the whole kernel.
"""

from __future__ import annotations

from collections import Counter

from hardboiled import ir
from hardboiled.ir.traversal import children
from hardboiled.targets.amx import AMX_INTRINSIC, AMX_TILE, AMXOp, AMXTile, amx_intrinsic

_LOAD, _MATMUL = AMX_INTRINSIC[AMXOp.LOAD], AMX_INTRINSIC[AMXOp.MATMUL]

Shape = tuple[int, int]
"""A tile register's (rows, bytes per row)."""


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


def buffer_registers(stmt: ir.Stmt, buffers: set[str]) -> dict[tuple[str, int], int]:
    """The register of each whole tile (buffer, first element) that the
    statements write in these AMX buffers: a tile takes a register when its
    buffer is allocated and gives it back at the end of the allocation,
    for a later tile of the same shape. A buffer allocated more than once,
    or a tile whose shape no write fixes, keeps its registers for the
    whole kernel."""
    allocated = Counter(n.name for n in ir.walk(stmt) if isinstance(n, ir.Allocate) and n.name in buffers)
    plan: dict[tuple[str, int], int] = {}
    free: dict[Shape, list[int]] = {}

    def take(shape: Shape | None) -> int:
        pool = free.get(shape, []) if shape is not None else []
        return pool.pop() if pool else len(set(plan.values()))

    def visit(node: ir.Stmt) -> None:
        if not (isinstance(node, ir.Allocate) and node.name in buffers):
            for child in children(node):
                if isinstance(child, ir.Stmt):  # allocations are statements, and no expression holds one
                    visit(child)
            return
        taken: list[tuple[Shape | None, int]] = []
        for tile, shape in _written_tiles(node.body, node.name).items():
            key = (node.name, tile)
            if key not in plan:
                plan[key] = take(shape)
                taken.append((shape if allocated[node.name] == 1 else None, plan[key]))
        visit(node.body)
        for shape, register in taken:
            if shape is not None:
                free.setdefault(shape, []).append(register)

    visit(stmt)
    return plan


def register_count(stmt: ir.Stmt, buffers: set[str]) -> int:
    """How many registers the AMX buffers' tiles take (``buffer_registers``)."""
    return len(set(buffer_registers(stmt, buffers).values()))


def _written_tiles(body: ir.Stmt, name: str) -> dict[int, Shape | None]:
    """The whole tiles of ``name`` that ``body`` writes, by first element,
    with the shape the tile operations writing each give it (None where
    none does or two disagree)."""
    tiles: dict[int, Shape | None] = {}
    for node in ir.walk(body):
        if not (isinstance(node, ir.Store) and node.name == name and isinstance(node.index, ir.Ramp)
                and isinstance(node.index.base, ir.IntImm)):
            continue
        call = node.value
        intrinsic = amx_intrinsic(call) if isinstance(call, ir.Call) else None
        shape = None
        if isinstance(call, ir.Call) and intrinsic is not None and intrinsic.writes_tile:
            rows = tile_constant(intrinsic.argument(call, "rows"))
            colbytes = tile_constant(intrinsic.argument(call, "colbytes"))
            shape = (rows, colbytes) if rows is not None and colbytes is not None else None
        base = node.index.base.value
        tiles[base] = shape if tiles.get(base, shape) == shape else None
    return tiles

