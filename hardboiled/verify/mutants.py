"""Mutants of tensorized programs: small wrong changes of the kinds a
faulty rule, decoder or legalization pass would make, for measuring what
verification catches (bench/mutation.py; tests/verify/test_mutation.py
runs a sample).

Each operator changes one place of a program that selection and
legalization produced:

* ``operand offset``: a fragment or tile load or store one element further on;
* ``leading dimension``: its leading dimension (row stride) one step wider;
* ``operand swap``: A and B of an mma or tile product exchanged;
* ``no zeroing``: an accumulator's fill or tile_zero removed;
* ``wrong tile``: an accumulation that reads its C from another tile;
* ``shuffle lane``: two lanes of an operand copy (a VNNI interleave, a
  Toeplitz block, padded rows) exchanged;
* ``signedness``: int8 operands read as uint8, or the other way round;
* ``reduction bound``: the loop over K one iteration short;
* ``min ignored``: a buffer's min left out of a fragment or tile address.

Operators only make changes that are wrong for some inputs (a lane swap
never exchanges two equal lanes); a mutant that still survives
verification is listed by the harness, with why it is equivalent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from hardboiled import ir
from hardboiled.ir.visitor import rewrite
from hardboiled.targets.amx import AMXOp, amx_intrinsic
from hardboiled.targets.wmma import WMMAIntrinsic, WMMAOp, wmma_intrinsic


@dataclass(frozen=True)
class Mutant:
    operator: str
    where: str
    """The mutated node as printed, shortened."""
    program: ir.Stmt


def mutants(program: ir.Stmt) -> Iterator[Mutant]:
    """Every mutant of ``program``, operator by operator, in program order."""
    from hardboiled.ir.printer import print_ir

    for name, operator in OPERATORS:
        for target, replacement in operator(program):
            shown = print_ir(target) if isinstance(target, ir.Expr) else type(target).__name__
            yield Mutant(name, shown if len(shown) <= 100 else shown[:97] + "...", _replaced(program, target,
                                                                                              replacement))


def _replaced(program: ir.Stmt, target: Any, replacement: Any) -> ir.Stmt:
    result: ir.Stmt = rewrite(program, lambda node: replacement if node is target else None)
    return result


def _calls(program: ir.Stmt) -> Iterator[ir.Call]:
    seen: set[int] = set()
    for node in ir.walk(program):
        if isinstance(node, ir.Call) and id(node) not in seen:
            seen.add(id(node))
            yield node


def _plus(e: ir.Expr, amount: int) -> ir.Expr:
    return ir.Binary(ir.BinOp.ADD, e, ir.IntImm(amount, e.type))


def _with_arg(call: ir.Call, position: int, value: ir.Expr) -> ir.Call:
    return dataclasses.replace(call, args=tuple(value if i == position else a for i, a in enumerate(call.args)))


def _memory_argument(call: ir.Call, which: str) -> tuple[int, int] | None:
    """(position, step) of a fragment or tile memory operation's offset or
    stride argument: one element, or (strides) one alignment unit."""
    wmma = wmma_intrinsic(call)
    if wmma is not None and wmma.op in (WMMAOp.LOAD, WMMAOp.STORE):
        base = 1 if wmma.op is WMMAOp.LOAD else 2
        return (base, 1) if which == "offset" else (base + 1, 8)
    amx = amx_intrinsic(call)
    if amx is not None and amx.op in (AMXOp.LOAD, AMXOp.STORE):
        return amx.arguments.index(which), 4 if which == "offset" else 64
    return None


def _offsets(program: ir.Stmt) -> Iterator[tuple[Any, Any]]:
    for call in _calls(program):
        if (found := _memory_argument(call, "offset")) is not None:
            position, step = found
            yield call, _with_arg(call, position, _plus(call.args[position], step))


def _leading_dimensions(program: ir.Stmt) -> Iterator[tuple[Any, Any]]:
    for call in _calls(program):
        if (found := _memory_argument(call, "stride")) is not None:
            position, step = found
            yield call, _with_arg(call, position, _plus(call.args[position], step))


def _products(program: ir.Stmt) -> Iterator[tuple[ir.Call, int, int]]:
    """Each mma or tile product with the positions of its A and B."""
    for call in _calls(program):
        wmma = wmma_intrinsic(call)
        if wmma is not None and wmma.op is WMMAOp.MMA:
            yield call, 0, 1
        amx = amx_intrinsic(call)
        if amx is not None and amx.op is AMXOp.MATMUL:
            yield call, amx.arguments.index("a"), amx.arguments.index("b")


def _swaps(program: ir.Stmt) -> Iterator[tuple[Any, Any]]:
    for call, a, b in _products(program):
        args = list(call.args)
        args[a], args[b] = args[b], args[a]
        yield call, dataclasses.replace(call, args=tuple(args))


def _zeroing(program: ir.Stmt) -> Iterator[tuple[Any, Any]]:
    for node in ir.walk(program):
        if isinstance(node, ir.Store) and isinstance(node.value, ir.Call):
            amx, wmma = amx_intrinsic(node.value), wmma_intrinsic(node.value)
            if (amx is not None and amx.op is AMXOp.ZERO) or (wmma is not None and wmma.op is WMMAOp.FILL):
                yield node, ir.Evaluate(ir.IntImm(0))


def _wrong_tiles(program: ir.Stmt) -> Iterator[tuple[Any, Any]]:
    """An accumulation whose C is a load of its accumulator at another of
    the tiles the program stores that accumulator at."""
    tiles: dict[str, list[ir.Expr]] = {}
    for node in ir.walk(program):
        if isinstance(node, ir.Store) and isinstance(node.value, ir.Call) \
                and node.index not in tiles.get(node.name, []):
            tiles.setdefault(node.name, []).append(node.index)
    for call, _a, _b in _products(program):
        amx = amx_intrinsic(call)
        c = amx.argument(call, "acc") if amx is not None else call.args[-1]
        if isinstance(c, ir.Load):
            others = [index for index in tiles.get(c.name, []) if index != c.index and index.type == c.index.type]
            if others:
                yield c, dataclasses.replace(c, index=others[0])


def _shuffle_lanes(program: ir.Stmt) -> Iterator[tuple[Any, Any]]:
    """Two lanes of an operand copy exchanged: the first lane and the first
    one that reads another source lane."""
    for node in ir.walk(program):
        if isinstance(node, ir.Shuffle) and len(set(node.indices)) > 1:
            indices = list(node.indices)
            j = next(k for k, index in enumerate(indices) if index != indices[0])
            indices[0], indices[j] = indices[j], indices[0]
            yield node, dataclasses.replace(node, indices=tuple(indices))


_FLIPPED_SIGN = {ir.Int(8): ir.UInt(8), ir.UInt(8): ir.Int(8)}


def _signedness(program: ir.Stmt) -> Iterator[tuple[Any, Any]]:
    """An int8 product's operands read with the other signedness: both of a
    Tensor Core mma (which takes two of one kind), A of an AMX product."""
    for call, a, b in _products(program):
        operands = [call.args[a], call.args[b]] if wmma_intrinsic(call) is not None else [call.args[a]]
        if not all(isinstance(o, ir.Call) and o.type.element() in _FLIPPED_SIGN for o in operands):
            continue
        flipped = {id(o): _flipped(o) for o in operands if isinstance(o, ir.Call)}
        yield call, dataclasses.replace(call, args=tuple(flipped.get(id(arg), arg) for arg in call.args))


def _flipped(load: ir.Call) -> ir.Call:
    """A fragment or tile load of int8 as uint8, or the other way round."""
    t = _FLIPPED_SIGN[load.type.element()].with_lanes(load.type.lanes)
    wmma = wmma_intrinsic(load)
    if wmma is not None and wmma.layout is not None:
        return ir.Call(WMMAIntrinsic.load(wmma.moved_matrix, wmma.layout, wmma.shape, t).name, load.args, t)
    return dataclasses.replace(load, type=t)


def _reduction_bounds(program: ir.Stmt) -> Iterator[tuple[Any, Any]]:
    """A serial loop whose body accumulates with tile or fragment products,
    one iteration short."""
    for node in ir.walk(program):
        if isinstance(node, ir.For) and node.kind is ir.ForKind.SERIAL \
                and any(isinstance(n, ir.Call) for n, _, _ in _products(node.body)) \
                and not (isinstance(node.extent, ir.IntImm) and node.extent.value <= 1):
            yield node, dataclasses.replace(node, extent=_plus(node.extent, -1))


def _mins(program: ir.Stmt) -> Iterator[tuple[Any, Any]]:
    """A buffer's min (X.min.D) left out of a fragment or tile address,
    where the program leaves it free (its asserts fix none to 0)."""
    from hardboiled.ir.buffers import discover_buffers

    fixed = {f"{spec.name}.{field}" for spec in discover_buffers(program).values() for field in spec.fixed}
    for call in _calls(program):
        found = _memory_argument(call, "offset")
        if found is None:
            continue
        position = found[0]
        mins = [n for n in ir.walk(call.args[position])
                if isinstance(n, ir.Variable) and ".min." in n.name and n.name not in fixed]
        if mins:
            target = mins[0]

            def zero(node: Any, target: ir.Variable = target) -> Any:
                return ir.IntImm(0, target.type) if node is target else None

            yield call, _with_arg(call, position, rewrite(call.args[position], zero))


OPERATORS: tuple[tuple[str, Callable[[ir.Stmt], Iterator[tuple[Any, Any]]]], ...] = (
    ("operand offset", _offsets),
    ("leading dimension", _leading_dimensions),
    ("operand swap", _swaps),
    ("no zeroing", _zeroing),
    ("wrong tile", _wrong_tiles),
    ("shuffle lane", _shuffle_lanes),
    ("signedness", _signedness),
    ("reduction bound", _reduction_bounds),
    ("min ignored", _mins),
)
