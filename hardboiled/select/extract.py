"""Tile extraction: find the statements that touch accelerator memory and
encode them as egglog terms (paper, Sec. 5).

* An allocation lives in accelerator memory when Halide printed
  ``allocate NAME[...] in AMXTile`` (or ``WMMAAccumulator``), or when the
  user says so with ``--store-in NAME=AMXTile`` or
  ``--store-in NAME=WMMAAccumulator`` (stock Halide has no WMMA memory type
  and prints Register or Stack).
* Only the stores that write such a buffer, or read one, are selected; the
  rest of the program is never sent to egglog.
* Data movement becomes explicit: a store into accelerator memory gets
  ``(Mem2AMX value)``, and a load from it is wrapped in ``(AMX2Mem ...)``
  (``Mem2WMMA``/``WMMA2Mem`` for Tensor Core buffers).
* The encoding is lossless: 64-bit integers, float bit patterns, types with
  lanes; a subexpression the rules never inspect becomes ``(Opaque T id)``
  and is restored from ``Encoding.opaque``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hardboiled import ir
from hardboiled.ir import traversal
from hardboiled.ir.traversal import allocations
from hardboiled.ir.visitor import map_expr
from hardboiled.select.terms import TERMS, Term, binop_name, make, type_code_name

ACCELERATOR_MEMORY = {"AMXTile": "AMX", "WMMAAccumulator": "WMMA"}
"""Memory types the selector targets, and the accelerator each one means."""

SCRATCH_MEMORY = {"AMX": "Stack", "WMMA": "GPUShared"}
"""Where selection keeps ordinary-memory copies of an accelerator's data (a
spilled accumulator, zero-padded operands): on the CPU's stack, or in GPU
shared memory, where a whole warp's load_/store_matrix_sync can reach them."""

DATA_MOVEMENT = {"AMX": ("Mem2AMX", "AMX2Mem"), "WMMA": ("Mem2WMMA", "WMMA2Mem")}
"""Per accelerator: the egglog markers for moving a value in and out."""
MARKERS = frozenset(m for pair in DATA_MOVEMENT.values() for m in pair)


@dataclass(frozen=True, slots=True)
class SelectedStore:
    """A store that reads or writes accelerator memory."""

    position: int
    """Index of the store among all stores, in pre-order."""
    store: ir.Store
    accelerator: str
    buffers: tuple[str, ...]
    """The accelerator buffers it touches."""


@dataclass
class Encoding:
    """The egglog text for the selected stores and what decoding needs."""

    terms: list[str] = field(default_factory=list)
    """One rendered ``Store`` term (hardboiled/select/terms.py) per selected store."""
    opaque: list[ir.Expr] = field(default_factory=list)
    """Side table for (Opaque T id)."""
    accelerator_buffers: dict[str, str] = field(default_factory=dict)
    """Buffer name -> its element type, for the buffers in accelerator memory."""
    accelerators: dict[str, str] = field(default_factory=dict)
    """Buffer name -> the accelerator it belongs to ("AMX" or "WMMA")."""


def accelerators_used(stores: Iterable[SelectedStore], encoding: Encoding) -> frozenset[str]:
    """The accelerators whose memory ``stores`` write or read."""
    return frozenset(encoding.accelerators[name] for s in stores for name in s.buffers)


def accelerator_allocations(stmt: ir.Stmt, overrides: dict[str, str]) -> dict[str, ir.Allocate]:
    """Allocations in accelerator memory, by name."""
    found: dict[str, ir.Allocate] = {}
    for node in allocations(stmt):
        memory = overrides.get(node.name, node.memory_type)
        if memory in ACCELERATOR_MEMORY:
            found[node.name] = node
    return found


def iter_stores(stmt: ir.Stmt) -> Iterator[ir.Store]:
    """Every Store in pre-order: the order that positions refer to."""
    return iter(traversal.stores(stmt))


def loads_of(e: ir.Expr) -> set[str]:
    return {n.name for n in ir.walk(e) if isinstance(n, ir.Load)}


ACCELERATOR_INTRINSICS = ("tile_", "wmma.")
"""Name prefixes of the calls that selection produces."""


def is_lowered(store: ir.Store) -> bool:
    """Already a tile or fragment operation: tensorized output fed back in."""
    return any(isinstance(n, ir.Call) and n.name.startswith(ACCELERATOR_INTRINSICS) for n in ir.walk(store))


def read_outside_intrinsics(node: ir.Node, buffers: set[str], elementwise_allowed: bool = False) -> str | None:
    """An accelerator buffer of ``buffers`` that ``node`` reads other than
    as an argument of a tile or fragment operation, or None: a statement
    that does cannot be emitted, whatever it computes. With
    ``elementwise_allowed`` (a WMMA epilogue computes on the fragment,
    element by element), only a read inside another call (exp in a sigmoid,
    which the rules see as opaque) counts."""
    stack: list[tuple[ir.Node, bool, bool]] = [(node, False, False)]  # (node, an operand, inside a call)
    while stack:
        current, operand, in_call = stack.pop()
        if isinstance(current, ir.Load) and current.name in buffers and not operand and (
                in_call or not elementwise_allowed):
            return current.name
        if isinstance(current, ir.Let) and loads_of(current.value) & buffers:
            # A let of the accumulator (SiLU: x / (1 + exp(-x))) is read where its name is.
            stack.extend([(current.value, operand, in_call), (_inlined(current), operand, in_call)])
            continue
        intrinsic = isinstance(current, ir.Call) and current.name.startswith(ACCELERATOR_INTRINSICS)
        call = in_call or (isinstance(current, ir.Call) and not intrinsic)
        stack.extend((child, intrinsic, call and not intrinsic) for child in ir.children(current))
    return None


def _inlined(let: ir.Let) -> ir.Expr:
    """The body of ``let`` with its value where its name is."""
    return map_expr(let.body, lambda e: let.value if isinstance(e, ir.Variable) and e.name == let.name else None)


def select_stores(stmt: ir.Stmt, allocations: dict[str, ir.Allocate], overrides: dict[str, str]) -> list[SelectedStore]:
    selected = []
    for position, store in enumerate(iter_stores(stmt)):
        if is_lowered(store):
            continue
        touched = ({store.name} | loads_of(store.value) | loads_of(store.index)) & allocations.keys()
        if not touched:
            continue
        memories = {overrides.get(n, allocations[n].memory_type) for n in touched}
        accelerator = ACCELERATOR_MEMORY[sorted(memories)[0]]
        selected.append(SelectedStore(position, store, accelerator, tuple(sorted(touched))))
    return selected


def _shared_facts(store: ir.Store, buffers: set[str], operand_buffers: set[str]) -> tuple[bool, set[str], set[str]]:
    """What ``scope_groups`` needs of a store: whether it accumulates into
    its own tile; the accelerator buffers whose tile shapes it needs (it
    zeroes a tile, or copies one out); the operand buffers whose layout it
    gives or needs."""
    needed: set[str] = set()
    operands: set[str] = {store.name} & operand_buffers
    accumulates = False
    for node in ir.walk(store.value):
        if isinstance(node, ir.Load) and node.name in buffers:
            if node.name == store.name and node.index == store.index:
                accumulates = True
            elif node.name == store.name or store.name not in buffers:
                needed.add(node.name)  # a tile copied out of accelerator memory
            else:
                operands.add(node.name)
    if not accumulates and store.name in buffers:
        needed.add(store.name)
    return accumulates, needed, operands


@dataclass(frozen=True, slots=True)
class ScopeGroup:
    """Stores saturated together in one (push)/(pop) scope."""

    stores: tuple[int, ...]
    """Indices into the selected stores, extracted from this scope."""
    helpers: tuple[int, ...] = ()
    """Stores saturated here too, only for the facts they give the others
    (each is extracted from its own group)."""

    def shifted(self, offset: int) -> ScopeGroup:
        """The same group in a list of stores that has ``offset`` before these."""
        return ScopeGroup(tuple(i + offset for i in self.stores), tuple(i + offset for i in self.helpers))


class _UnionFind:
    """Disjoint sets of store indices (with path halving): the stores that
    must be saturated together."""

    def __init__(self, size: int):
        self.parent = list(range(size))

    def root(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        self.parent[self.root(i)] = self.root(j)

    def sets(self) -> list[list[int]]:
        """Every set, its members ascending, in order of its first member."""
        members: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            members.setdefault(self.root(i), []).append(i)
        return sorted(members.values())


def scope_groups(selected: list[SelectedStore], limit: int) -> list[ScopeGroup]:
    """The selected stores in groups that can be saturated apart, in order,
    each of at most ``limit`` stores unless stores that must stay together
    are more.

    The rules relate two stores only through facts about accelerator memory
    (rules/supporting.egg, rules/amx_layouts.egg):

    * the shape of the tile at an index of a buffer, which a matmul that
      accumulates into it gives, and which zeroing it and copying it out
      need. An accumulating store gives its tile's shape to itself, so
      those into one tile (all the taps of an unrolled convolution) can go
      apart. The other stores of a buffer stay together, with the first
      store accumulating into each of its tiles, as a helper when that
      store lies in another group (an index may be written differently by
      the store that zeroes a tile and the one that copies it out, so
      tiles are told apart by buffer, not by index);
    * the layout in which a buffer of preloaded operands is read, which the
      store filling it needs: the stores filling and reading such a buffer
      stay together.

    The selector checks the claim: when a store misses in a group, every
    store is saturated again in one e-graph (unless the store is predicated,
    which no e-graph holds, or a partial tile at the output's edge:
    selector._one_egraph_may_lower).
    """
    buffers = {name for s in selected for name in s.buffers}
    operand_buffers = _operand_buffers(selected, buffers)
    together = _UnionFind(len(selected))
    owner: dict[object, int] = {}
    first_accumulating: dict[str, dict[ir.Expr, int]] = {}
    """Per buffer, the first store accumulating into each of its tiles: the
    helpers that its other stores get."""
    buffers_needed: list[set[str]] = []
    for i, sel in enumerate(selected):
        accumulates, needed, operands = _shared_facts(sel.store, buffers, operand_buffers)
        if accumulates:
            first_accumulating.setdefault(sel.store.name, {}).setdefault(sel.store.index, i)
        buffers_needed.append(needed)
        for key in [("tiles", name) for name in needed] + [("operand", name) for name in operands]:
            together.union(i, owner.setdefault(key, i))
    return [ScopeGroup(tuple(sorted(stores)), _helpers(stores, buffers_needed, first_accumulating))
            for stores in _packed(together.sets(), limit)]


def _operand_buffers(selected: list[SelectedStore], buffers: set[str]) -> set[str]:
    """Accelerator buffers that a store into accelerator memory reads as an
    operand (not its own accumulator): buffers of preloaded operands."""
    return {n.name for s in selected if s.store.name in buffers for n in ir.walk(s.store.value)
            if isinstance(n, ir.Load) and n.name in buffers and n.name != s.store.name}


def _packed(components: list[list[int]], limit: int) -> list[list[int]]:
    """Consecutive components packed into groups of at most ``limit``
    stores; a component bigger than that is a group of its own."""
    packed: list[list[int]] = []
    for component in components:
        if packed and len(packed[-1]) + len(component) <= limit:
            packed[-1].extend(component)
        else:
            packed.append(list(component))
    return packed


def _helpers(stores: list[int], buffers_needed: list[set[str]],
             first_accumulating: dict[str, dict[ir.Expr, int]]) -> tuple[int, ...]:
    """The first store accumulating into each tile of the buffers whose
    shapes ``stores`` need, where that store is not among them."""
    members = set(stores)
    return tuple(sorted({helper for i in stores for name in buffers_needed[i]
                         for helper in first_accumulating.get(name, {}).values()} - members))


# --------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------


def encode_type(t: ir.Type) -> Term:
    return TERMS.Ty(make(type_code_name(t.code)), t.bits, t.lanes)


def _int64(value: int) -> int:
    """A 64-bit integer as the signed i64 egglog stores (uint64 wraps)."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def float_bits(value: float) -> int:
    return struct.unpack("<q", struct.pack("<d", value))[0]


def bits_float(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<q", bits))[0]


class _Encoder:
    def __init__(self, encoding: Encoding, accelerators: dict[str, str]):
        self.encoding = encoding
        self.accelerators = accelerators
        """Buffer in accelerator memory -> its accelerator."""
        self._table: dict[type, Callable[[Any], Term | None]] = {
            ir.IntImm: lambda e: TERMS.IntImm(encode_type(e.type), _int64(e.value)),
            ir.UIntImm: lambda e: TERMS.IntImm(encode_type(e.type), _int64(e.value)),
            ir.FloatImm: lambda e: TERMS.FloatImm(encode_type(e.type), float_bits(e.value)),
            ir.Variable: lambda e: TERMS.Var(encode_type(e.type), e.name),
            ir.Binary: lambda e: TERMS.Bop(make(binop_name(e.op)), self.expr(e.a), self.expr(e.b)),
            ir.Cast: lambda e: TERMS.Cast(encode_type(e.type), self.expr(e.value)),
            ir.Ramp: lambda e: TERMS.Ramp(self.expr(e.base), self.expr(e.stride), e.lanes),
            ir.Broadcast: lambda e: TERMS.Broadcast(self.expr(e.value), e.lanes),
            ir.Load: self._load,
            ir.VectorReduce: self._vector_reduce,
        }

    def opaque(self, e: ir.Expr) -> Term:
        self.encoding.opaque.append(e)
        return TERMS.Opaque(encode_type(e.type), len(self.encoding.opaque) - 1)

    def expr(self, e: ir.Expr) -> Term:
        encode = self._table.get(type(e))
        term = encode(e) if encode is not None else None
        return term if term is not None else self.opaque(e)

    def _load(self, e: ir.Load) -> Term | None:
        if e.predicate is not None:
            return None
        term = TERMS.Load(encode_type(e.type), e.name, self.expr(e.index))
        accelerator = self.accelerators.get(e.name)
        return make(DATA_MOVEMENT[accelerator][1], term) if accelerator else term

    def _vector_reduce(self, e: ir.VectorReduce) -> Term | None:
        if e.op is not ir.ReduceOp.ADD:
            return None
        return TERMS.VectorReduceAdd(encode_type(e.type), self.expr(e.value))

    def store(self, s: ir.Store) -> Term:
        value = self.expr(s.value)
        accelerator = self.accelerators.get(s.name)
        if accelerator:
            value = make(DATA_MOVEMENT[accelerator][0], value)
        return TERMS.Store(s.name, value, self.expr(s.index))


def encode_stores(selected: list[SelectedStore], allocations: dict[str, ir.Allocate],
                  overrides: dict[str, str]) -> Encoding:
    accelerators = {name: ACCELERATOR_MEMORY[overrides.get(name, a.memory_type)] for name, a in allocations.items()}
    encoding = Encoding(accelerator_buffers={name: str(a.type) for name, a in allocations.items()},
                        accelerators=accelerators)
    encoder = _Encoder(encoding, accelerators)
    encoding.terms = [encoder.store(s.store).render() for s in selected]
    return encoding
