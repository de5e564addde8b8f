"""Staging WMMA operands through shared memory (paper, Sec. 5).

Invariant established: every ``load_matrix_sync`` and ``store_matrix_sync``
reads or writes an address that is provably 32-byte aligned, with a
leading dimension that is a positive constant multiple of 16 bytes;
operands that cannot be proven so go through a dense ``GPUShared`` buffer.
"""

from __future__ import annotations

import math

from hardboiled import ir
from hardboiled.ir.buffers import discover_buffers
from hardboiled.ir.visitor import map_stmt, with_exprs
from hardboiled.select.extract import ACCELERATOR_MEMORY, accelerator_allocations
from hardboiled.targets.wmma import WMMA_TENSOR_CORE, Layout, WMMAIntrinsic, WMMAOp, WMMATensorCore, wmma_intrinsic


def known_multiple(e: ir.Expr) -> int:
    """A number that ``e`` is provably a multiple of (0: ``e`` is zero).

    Enough to see that ``(ko*64 + bx)*16`` is a multiple of 16 and that a
    symbolic row stride proves nothing."""
    if isinstance(e, (ir.IntImm, ir.UIntImm)):
        return abs(e.value)
    if isinstance(e, ir.Cast) and not e.type.is_float and not e.value.type.is_float and e.type.bits > 1:
        return known_multiple(e.value)
    if isinstance(e, ir.Binary) and e.op in (ir.BinOp.ADD, ir.BinOp.SUB):
        return math.gcd(known_multiple(e.a), known_multiple(e.b))
    if isinstance(e, ir.Binary) and e.op is ir.BinOp.MUL:
        return known_multiple(e.a) * known_multiple(e.b)
    return 1




def _aligned(elements: ir.Expr, element_bytes: int, alignment: int) -> bool:
    multiple = known_multiple(elements)
    return multiple == 0 or (multiple * element_bytes) % alignment == 0


def _leading_dimension_ok(ldm: ir.Expr, element_bytes: int) -> bool:
    """A positive constant multiple of 16 bytes. load_matrix_sync takes an
    unsigned leading dimension, so a symbolic one (whose sign nothing
    proves), a negative one (rows read backwards) and zero (a bias row
    repeated down the tile) are staged as a dense matrix instead."""
    alignment = WMMA_TENSOR_CORE.leading_dimension_alignment
    return isinstance(ldm, ir.IntImm) and ldm.value > 0 and (ldm.value * element_bytes) % alignment == 0


def _memory_operation(e: ir.Expr) -> WMMAIntrinsic | None:
    """The wmma.load or wmma.store.d that ``e`` calls (the operations that
    take an address); None for anything else."""
    intrinsic = wmma_intrinsic(e)
    return intrinsic if intrinsic is not None and intrinsic.op in (WMMAOp.LOAD, WMMAOp.STORE) else None


def _matrix_index(offset: ir.Expr, ldm: ir.Expr, rows: int, cols: int, layout: Layout) -> ir.Expr:
    """The vector index of a rows x cols matrix at offset/ldm, in the order
    its layout keeps it (so that a dense copy has leading dimension
    ``cols`` for row-major and ``rows`` for column-major)."""
    inner, outer = (cols, rows) if layout is Layout.ROW else (rows, cols)
    return ir.Ramp(ir.Ramp(offset, ir.IntImm(1), inner), ir.Broadcast(ldm, inner), outer)


def uses_wmma_memory(stmt: ir.Stmt) -> bool:
    """Whether any allocation of ``stmt`` is in Tensor Core memory: the WMMA
    passes have nothing to do otherwise."""
    return any(ACCELERATOR_MEMORY[alloc.memory_type] == "WMMA" for alloc in accelerator_allocations(stmt, {}).values())


def buffer_element_types(stmt: ir.Stmt) -> dict[str, ir.Type]:
    """The element type of every pipeline buffer and allocation of ``stmt``."""
    types = {name: spec.type for name, spec in discover_buffers(stmt).items() if spec.type is not None}
    types.update({n.name: n.type.element() for n in ir.walk(stmt) if isinstance(n, ir.Allocate)})
    return types


def stage_unaligned_operands(stmt: ir.Stmt, element_types: dict[str, ir.Type],
                             core: WMMATensorCore = WMMA_TENSOR_CORE) -> ir.Stmt:
    """Route every WMMA load or store whose address or leading dimension is
    not provably aligned through a dense buffer in shared memory.

    load_matrix_sync and store_matrix_sync fault on a misaligned address.
    An offset such as ``x + r`` (a convolution window) or a symbolic row
    stride proves nothing, so the matrix is copied to (or from) a
    ``GPUShared`` buffer that is aligned by construction."""
    counter = [0]

    def visit(node: ir.Stmt) -> ir.Stmt | None:
        if not isinstance(node, (ir.Store, ir.Evaluate)):
            return None
        calls = [c for c in ir.calls(node) if _memory_operation(c) is not None]
        staged: list[tuple[str, ir.Type, int]] = []
        before: list[ir.Stmt] = []
        after: list[ir.Stmt] = []
        replacements: dict[int, ir.Expr] = {}
        for call in calls:
            intrinsic = _memory_operation(call)
            assert intrinsic is not None
            store = intrinsic.op is WMMAOp.STORE
            pointer, offset, ldm = (call.args[0], call.args[2], call.args[3]) if store else call.args
            assert isinstance(pointer, ir.Variable)
            element = (call.args[1].type if store else call.type).element()
            if _aligned(offset, element.bytes, core.pointer_alignment) and _leading_dimension_ok(ldm, element.bytes):
                continue
            (rows, cols), layout = intrinsic.extent, intrinsic.layout
            assert layout is not None
            stage = f"{pointer.name}{ir.WMMA_STAGE}{counter[0]}"
            counter[0] += 1
            lanes = rows * cols
            # The stage keeps the matrix in its layout's order, each row (or
            # column) padded to the leading-dimension alignment: 8 int8
            # columns still need a 16-byte leading dimension.
            inner, outer = (cols, rows) if layout is Layout.ROW else (rows, cols)
            pad = core.leading_dimension_alignment // math.gcd(core.leading_dimension_alignment, element.bytes)
            padded = -(-inner // pad) * pad
            staged.append((stage, element, padded * outer))
            dense = (ir.Ramp(ir.IntImm(0), ir.IntImm(1), lanes) if padded == inner
                     else _matrix_index(ir.IntImm(0), ir.IntImm(padded), rows, cols, layout))
            source = _matrix_index(offset, ldm, rows, cols, layout)
            dense_ldm = ir.IntImm(padded)
            stage_pointer = ir.Variable(stage, ir.handle_type())
            memory_type = element_types.get(pointer.name, element).with_lanes(lanes)
            if store:
                after.append(ir.Store(pointer.name, ir.Load(stage, dense, memory_type), source))
                replacements[id(call)] = ir.Call(call.name, (stage_pointer, call.args[1], ir.IntImm(0), dense_ldm),
                                                 call.type)
            else:
                before.append(ir.Store(stage, ir.Load(pointer.name, source, memory_type), dense))
                replacements[id(call)] = ir.Call(call.name, (stage_pointer, ir.IntImm(0), dense_ldm), call.type)
        if not staged:
            return None
        rewritten = with_exprs(node, lambda e: replacements.get(id(e)))
        result = ir.make_block([*before, rewritten, *after])
        for stage, element, lanes in reversed(staged):
            result = ir.Allocate(stage, element, "GPUShared", (ir.IntImm(lanes),), result)
        return result

    return map_stmt(stmt, visit)
