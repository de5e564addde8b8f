"""Accumulator tiles beyond AMX's eight registers live in memory.

Every whole tile of an AMX buffer is a tile register for the whole kernel
(codegen/c.py), and each matmul needs its A and B tiles in registers too.
A schedule with more accumulator tiles than that (a 32 x 64 bf16 block in
four 16 x 16 tiles of two accumulators, say) does not fit. Rather than
refuse it, this pass keeps the largest accumulators in memory, in the
buffer's own name moved to the stack, and works on each of their tiles in
one register of its own, loaded and stored around every tile operation::

    allocate mm[float32 * 1024] in Stack
     allocate mm.tile[float32 * 256] in AMXTile
      mm.tile[ramp(0, 1, 256)] = tile_load(16, 64, mm, 1024, 64)
      mm.tile[ramp(0, 1, 256)] = tile_matmul(16, 64, 32, mm.tile[ramp(0, 1, 256)], A, B)
      tile_store(16, 64, mm, 1024, 64, mm.tile[ramp(0, 1, 256)])

A tile is stored in memory as its rows of ``colbytes`` bytes one after the
other: the same elements at the same index as the register held, so every
value is computed as before, in the same order; only where the
accumulator waits between operations changes (and each operation costs a
tile load and store more).

Invariant established: the AMX buffers' tiles plus the operand tiles the
matmuls load fit in the tile registers, or the program is unchanged (and
``check-amx`` says why it does not fit).
"""

from __future__ import annotations

import dataclasses

from hardboiled import ir
from hardboiled.ir.visitor import rewrite
from hardboiled.legalize.amx_plan import buffer_tiles, operand_registers, register_count, tile_constant
from hardboiled.select.extract import ACCELERATOR_MEMORY, accelerator_allocations
from hardboiled.select.reinsert import in_bytes
from hardboiled.targets.amx import AMX_INTRINSIC, AMX_TILE, AMXOp, AMXTile, amx_intrinsic

MEMORY = "Stack"
"""Where an accumulator that does not fit the registers lives."""
TILE = ".tile"
"""Suffix of the register a memory-resident accumulator works in."""

_LOAD, _STORE = AMX_INTRINSIC[AMXOp.LOAD], AMX_INTRINSIC[AMXOp.STORE]


def fit_tile_registers(stmt: ir.Stmt, tile: AMXTile = AMX_TILE) -> ir.Stmt:
    """``stmt`` with the largest AMX accumulators moved to memory until the
    registers suffice (the module's docstring), counted as the C generator
    allocates them (amx_plan.buffer_registers: buffers not live at once
    share registers, and a moved buffer's register is one more buffer)."""
    buffers = {name: alloc for name, alloc in accelerator_allocations(stmt, {}).items()
               if ACCELERATOR_MEMORY[alloc.memory_type] == "AMX" and alloc.constant_elements is not None}
    operands = operand_registers(stmt)

    def fits(program: ir.Stmt, names: set[str]) -> bool:
        return register_count(program, names) + operands <= tile.registers

    if fits(stmt, set(buffers)):
        return stmt
    tiles = {name: buffer_tiles(alloc.body, alloc, tile) for name, alloc in buffers.items()}
    moved: dict[str, tuple[int, int]] = {}
    for name in sorted(tiles, key=lambda n: (-tiles[n], n)):
        shape = _one_tile_shape(stmt, name)
        if shape is None or tiles[name] <= 1:
            continue
        moved[name] = shape
        program = _moved(stmt, moved)
        if fits(program, (set(buffers) - set(moved)) | {f"{n}{TILE}" for n in moved}):
            return program
    return stmt  # too little even so: check-amx explains


def _moved(stmt: ir.Stmt, moved: dict[str, tuple[int, int]]) -> ir.Stmt:
    """``stmt`` with these accumulators (name -> tile shape) in memory."""

    def replace(node: ir.Node) -> ir.Node | None:
        if isinstance(node, ir.Allocate) and node.name in moved:  # the body first: it may hold another
            return _in_memory(dataclasses.replace(node, body=rewrite(node.body, replace)), moved[node.name])
        return None

    result: ir.Stmt = rewrite(stmt, replace)
    return result


def _one_tile_shape(stmt: ir.Stmt, name: str) -> tuple[int, int] | None:
    """The constant (rows, colbytes) every tile operation on ``name`` has,
    if one (a symbolic shape is check-amx's to refuse)."""
    shapes = set()
    for node in ir.walk(stmt):
        if isinstance(node, ir.Store) and node.name == name:
            if not isinstance(node.value, ir.Call) or amx_intrinsic(node.value) is None:
                return None
            rows, colbytes = tile_constant(node.value.args[0]), tile_constant(node.value.args[1])
            if rows is None or colbytes is None:
                return None
            shapes.add((rows, colbytes))
    return next(iter(shapes)) if len(shapes) == 1 else None


def _in_memory(alloc: ir.Allocate, shape: tuple[int, int]) -> ir.Stmt:
    """The allocation of an accumulator moved to memory, each of its tile
    operations done in the register ``NAME.tile``."""
    name, element = alloc.name, alloc.type
    lanes = shape[0] * shape[1] // element.bytes
    rows, colbytes = ir.IntImm(shape[0]), ir.IntImm(shape[1])
    register = f"{name}{TILE}"
    whole = ir.Ramp(ir.IntImm(0), ir.IntImm(1), lanes)
    held = ir.Load(register, whole, element.with_lanes(lanes))
    handle = ir.Variable(name, ir.handle_type())

    def bring(index: ir.Expr) -> ir.Stmt:
        """The tile of ``name`` at ``index`` loaded into the register."""
        return ir.Store(register, ir.Call(_LOAD.name, (rows, colbytes, handle, _byte_offset(index, element),
                                                       colbytes), element.with_lanes(lanes)), whole)

    def put_back(index: ir.Expr) -> ir.Stmt:
        return ir.Evaluate(ir.Call(_STORE.name, (rows, colbytes, handle, _byte_offset(index, element),
                                                 colbytes, held), ir.INT32))

    def reads_tile(e: ir.Expr) -> bool:
        return isinstance(e, ir.Load) and e.name == name

    def replace(node: ir.Node) -> ir.Node | None:
        if isinstance(node, ir.Store) and node.name == name and isinstance(node.value, ir.Call):
            call = node.value
            reads = [arg for arg in call.args if isinstance(arg, ir.Load) and arg.name == name]
            args = tuple(held if reads_tile(arg) else arg for arg in call.args)
            return ir.make_block([*(bring(r.index) for r in reads[:1]),
                                  ir.Store(register, ir.Call(call.name, args, call.type), whole),
                                  put_back(node.index)])
        if isinstance(node, ir.Evaluate) and isinstance(node.value, ir.Call) and amx_intrinsic(node.value) is _STORE:
            store = node.value
            source = _STORE.argument(store, "tile")
            if reads_tile(source):
                assert isinstance(source, ir.Load)
                args = tuple(held if arg is source else arg for arg in store.args)
                return ir.make_block([bring(source.index), ir.Evaluate(ir.Call(store.name, args, store.type))])
        return None

    body = ir.Allocate(register, element, alloc.memory_type, (ir.IntImm(lanes),), rewrite(alloc.body, replace))
    return dataclasses.replace(alloc, memory_type=MEMORY, body=body)


def _byte_offset(index: ir.Expr, element: ir.Type) -> ir.Expr:
    """The byte offset of the tile at ``index`` (a whole tile's ramp)."""
    return in_bytes(index.base if isinstance(index, ir.Ramp) else index, element.bytes)
