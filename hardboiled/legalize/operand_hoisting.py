"""Hoisting operand copies (VNNI repacks) out of the loops around their uses.

``place_temporaries`` fills a temporary where everything it reads is
bound. For a standard-layout B copied into VNNI order that is inside the
reduction loop, because the panel it copies moves with that loop; and the
same panel is copied again for every output tile that reads it. Here each
such copy leaves its loops one at a time, innermost first:

* a loop whose variable the copy does not read, and inside which nothing
  it reads is written: the copy moves above the loop unchanged;
* a loop whose variable it reads: the copy gains a dimension. A loop with
  the same bounds, placed before the original, fills one copy per
  iteration, and each use reads the copy of its own iteration::

      for (rro, 0, 4) {                        allocate B.amx_vnni.0[bfloat16 * 2048]
        allocate B.amx_vnni.0[bfloat16 * 512]  for (rro, 0, 4) {
        B.amx_vnni.0[ramp(0, 1, 512)] = v        B.amx_vnni.0[ramp(rro*512, 1, 512)] = v
        tile_load(.., B.amx_vnni.0, 0, 64)     }
      }                                        for (rro, 0, 4) {
                                                 tile_load(.., B.amx_vnni.0, rro*1024, 64)
                                               }

The fill loop repeats the original loop's iterations, so it reads exactly
the elements the original fills read, and the same values, since nothing
inside the loop writes them. A repacked operand ends up as one copy of the
part of the operand the loop nest reads, filled once per call instead of
once per reduction step of every output tile.

Invariant established: every operand copy is filled outside every serial
or parallel loop it can leave (no control flow is crossed, nor a GPU loop),
and no copy is larger than ``MAX_HOISTED_BYTES`` when its size is known.
"""

from __future__ import annotations

from collections.abc import Iterable

from hardboiled import ir
from hardboiled.ir.visitor import map_all_exprs, map_stmt
from hardboiled.legalize.temporaries import written_inside
from hardboiled.targets.amx import AMX_INTRINSIC, AMXOp

HOISTED_KIND = ".amx_vnni."
"""The temporaries this pass hoists: operand copies into VNNI order (or
gathers), in which each element of the operand appears once. Toeplitz and
padded windows repeat elements, so one copy per iteration would multiply
their memory; they stay where place_temporaries put them."""

MAX_HOISTED_BYTES = 64 << 20
"""A copy whose size is a known constant stops growing at 64 MiB; one of
symbolic size holds one element per element its fills wrote in the
original loop nest, which bounds its memory by the original's repack work."""

_HOISTABLE_LOOPS = (ir.ForKind.SERIAL, ir.ForKind.UNROLLED, ir.ForKind.PARALLEL)
_TRANSPARENT = (ir.Block, ir.LetStmt, ir.Allocate, ir.ProducerConsumer)
"""Statements between a loop and the copy that run it on every iteration."""

_LOAD = AMX_INTRINSIC[AMXOp.LOAD]


def hoist_operand_copies(stmt: ir.Stmt, temporary_names: Iterable[str]) -> ir.Stmt:
    """``stmt`` with every VNNI operand copy among ``temporary_names`` (and
    the per-branch copies place_temporaries made of them) hoisted as far out
    of its loops as it can go."""
    prefixes = tuple(sorted(n for n in temporary_names if HOISTED_KIND in n))
    names = sorted({n.name for n in ir.walk(stmt) if isinstance(n, ir.Allocate)
                    and any(n.name == p or n.name.startswith(p + ".") for p in prefixes)})
    for name in names:
        while True:
            hoisted = _hoist_once(stmt, name)
            if hoisted is None:
                break
            stmt = hoisted
    return stmt


def _hoist_once(stmt: ir.Stmt, name: str) -> ir.Stmt | None:
    """``stmt`` with the copy ``name`` moved above its innermost enclosing
    loop; None if it cannot move."""
    path = _path_to_allocation(stmt, name)
    if path is None:
        return None
    alloc = path[-1]
    assert isinstance(alloc, ir.Allocate)
    parts = _fill_and_rest(alloc)
    if parts is None:
        return None
    fill, rest = parts
    enclosing = _enclosing_loop(path)
    if enclosing is None:
        return None
    loop, lets = enclosing
    fill = _inline_lets(fill, lets)
    size = _elements(alloc)
    if not _can_leave(loop, lets, name, fill, size):
        return None
    if loop.name in _free_variables(fill):
        widened = _one_copy_per_iteration(loop, alloc, fill, rest, size)
        if widened is None:
            return None
        fill, rest, size = widened
    inner = map_stmt(loop, lambda node: rest if node is alloc else None)
    moved = ir.Allocate(name, alloc.type, alloc.memory_type, (size,), ir.make_block([fill, inner]))
    return map_stmt(stmt, lambda node: moved if node is loop else None)


def _enclosing_loop(path: list[ir.Stmt]) -> tuple[ir.For, list[ir.LetStmt]] | None:
    """The innermost loop around the allocation that ends ``path``, with the
    lets between them (innermost first); None when the nearest statement
    that is not transparent is no loop a copy may leave."""
    position = len(path) - 2
    lets: list[ir.LetStmt] = []
    while position >= 0 and isinstance(path[position], _TRANSPARENT):
        node = path[position]
        if isinstance(node, ir.LetStmt):
            lets.append(node)
        position -= 1
    loop = path[position] if position >= 0 else None
    if not (isinstance(loop, ir.For) and loop.kind in _HOISTABLE_LOOPS and loop.device_api is None):
        return None
    return loop, lets


def _can_leave(loop: ir.For, lets: list[ir.LetStmt], name: str, fill: ir.Stmt, size: ir.Expr) -> bool:
    """Whether the copy ``name`` (filled by ``fill``, its lets inlined) may
    be filled above ``loop``: its size reads nothing bound between the loop
    and the allocation (not even the loop's variable), its fill nothing but
    the loop's variable, and nothing the fill reads is written in the loop."""
    between = {let.name for let in lets} | {loop.name}
    if between & _free_variables(size):
        return False  # the copy's size changes from one iteration to the next
    if between - {loop.name} & _free_variables(fill):
        return False
    reads = {n.name for n in ir.walk(fill) if isinstance(n, ir.Load)}
    return not reads & (written_inside(loop.body) - {name})


def _one_copy_per_iteration(loop: ir.For, alloc: ir.Allocate, fill: ir.Stmt, rest: ir.Stmt,
                            size: ir.Expr) -> tuple[ir.Stmt, ir.Stmt, ir.Expr] | None:
    """For a fill that reads the loop's variable: a loop that fills one copy
    per iteration, the uses shifted to their iteration's copy, and the size
    of all the copies; None if that is too large or a use cannot shift."""
    hoisted_size = _mul(size, loop.extent)
    if _too_large(hoisted_size, alloc.type.bytes):
        return None
    shift = _mul(_sub(ir.Variable(loop.name), loop.min), size)
    shifted_rest = _shift_uses(rest, alloc.name, shift, alloc.type.bytes)
    if shifted_rest is None:
        return None
    fill_loop = ir.For(loop.name, loop.min, loop.extent, ir.ForKind.SERIAL, None,
                       _shift_stores(fill, alloc.name, shift))
    return fill_loop, shifted_rest, hoisted_size


def _path_to_allocation(stmt: ir.Stmt, name: str) -> list[ir.Stmt] | None:
    """Statements from the root down to the allocation of ``name``."""
    stack: list[list[ir.Stmt]] = [[stmt]]
    while stack:
        path = stack.pop()
        node = path[-1]
        if isinstance(node, ir.Allocate) and node.name == name:
            return path
        stack.extend(path + [c] for c in reversed(list(ir.children(node))) if isinstance(c, ir.Stmt))
    return None


def _fill_and_rest(alloc: ir.Allocate) -> tuple[ir.Stmt, ir.Stmt] | None:
    """The statement that fills the copy (it writes nothing else) and the
    statements that only read it."""
    if alloc.condition is not None or alloc.new_expr is not None or not isinstance(alloc.body, ir.Block):
        return None
    fill, rest = alloc.body.stmts[0], ir.make_block(alloc.body.stmts[1:])
    fill_writes = {n.name for n in ir.walk(fill) if isinstance(n, (ir.Store, ir.Allocate))}
    if fill_writes != {alloc.name} or alloc.name in written_inside(rest):
        return None
    return fill, rest


def _inline_lets(fill: ir.Stmt, lets: list[ir.LetStmt]) -> ir.Stmt:
    """``fill`` with the values of the lets it reads (innermost first)
    written in place of their names, so it can move above them."""
    for let in lets:
        if let.name in _free_variables(fill):
            fill = _substitute(fill, let.name, let.value)
    return fill


def _substitute(stmt: ir.Stmt, name: str, value: ir.Expr) -> ir.Stmt:
    return map_all_exprs(stmt, lambda e: value if isinstance(e, ir.Variable) and e.name == name else None)


def _free_variables(node: ir.Node) -> set[str]:
    """Variables ``node`` reads that it does not bind itself."""
    used = {n.name for n in ir.walk(node) if isinstance(n, ir.Variable)}
    bound = {n.name for n in ir.walk(node) if isinstance(n, (ir.For, ir.LetStmt, ir.Let))}
    return used - bound


def _elements(alloc: ir.Allocate) -> ir.Expr:
    size: ir.Expr = ir.IntImm(alloc.type.lanes)
    for extent in alloc.extents:
        size = _mul(size, extent)
    return size


def _too_large(size: ir.Expr, element_bytes: int) -> bool:
    return isinstance(size, ir.IntImm) and size.value * element_bytes > MAX_HOISTED_BYTES


def _shift_stores(fill: ir.Stmt, name: str, shift: ir.Expr) -> ir.Stmt:
    def store(s: ir.Stmt) -> ir.Stmt | None:
        if isinstance(s, ir.Store) and s.name == name:
            return ir.Store(s.name, s.value, _offset_index(s.index, shift), s.predicate)
        return None

    return map_stmt(fill, store)


def _shift_uses(rest: ir.Stmt, name: str, shift: ir.Expr, element_bytes: int) -> ir.Stmt | None:
    """``rest`` with every tile load and load of the copy ``shift``
    elements further on; None if it names the copy any other way."""
    mentions = sum(1 for n in ir.walk(rest) if isinstance(n, ir.Variable) and n.name == name)
    tile_loads = sum(1 for n in ir.calls(rest) if _loads_tile_from(n, name))
    if mentions != tile_loads:
        return None

    def replace(e: ir.Expr) -> ir.Expr | None:
        if isinstance(e, ir.Call) and _loads_tile_from(e, name):
            args = list(e.args)
            position = _LOAD.arguments.index("offset")
            args[position] = _add(args[position], _mul(shift, ir.IntImm(element_bytes)))
            return ir.Call(e.name, tuple(args), e.type)
        if isinstance(e, ir.Load) and e.name == name:
            return ir.Load(e.name, _offset_index(e.index, shift), e.type, e.predicate)
        return None

    return map_all_exprs(rest, replace)


def _loads_tile_from(call: ir.Call, name: str) -> bool:
    if call.name != _LOAD.name:
        return False
    buffer = _LOAD.argument(call, "buffer")
    return isinstance(buffer, ir.Variable) and buffer.name == name


def _offset_index(index: ir.Expr, shift: ir.Expr) -> ir.Expr:
    if index.type.lanes == 1:
        return _add(index, shift)
    if isinstance(index, ir.Ramp) and index.base.type.lanes == 1:
        return ir.Ramp(_add(index.base, shift), index.stride, index.lanes)
    return ir.Binary(ir.BinOp.ADD, index, ir.Broadcast(shift, index.type.lanes))


# Index arithmetic that folds the constants it meets, so a hoisted copy's
# indices read as they would be written by hand (rro*512, not (rro - 0)*512).

def _add(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    if isinstance(a, ir.IntImm) and isinstance(b, ir.IntImm):
        return ir.IntImm(a.value + b.value)
    if isinstance(b, ir.IntImm) and b.value == 0:
        return a
    if isinstance(a, ir.IntImm) and a.value == 0:
        return b
    return ir.Binary(ir.BinOp.ADD, a, b)


def _sub(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    if isinstance(a, ir.IntImm) and isinstance(b, ir.IntImm):
        return ir.IntImm(a.value - b.value)
    if isinstance(b, ir.IntImm) and b.value == 0:
        return a
    return ir.Binary(ir.BinOp.SUB, a, b)


def _mul(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    if isinstance(a, ir.IntImm) and isinstance(b, ir.IntImm):
        return ir.IntImm(a.value * b.value)
    if isinstance(a, ir.IntImm) and a.value == 1:
        return b
    if isinstance(b, ir.IntImm) and b.value == 1:
        return a
    return ir.Binary(ir.BinOp.MUL, a, b)
