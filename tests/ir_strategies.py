"""Hypothesis strategies for random, well-typed Halide IR.

The generators are type directed: ``exprs(scope, t, depth)`` draws an
expression whose type is exactly ``t``. A ``Scope`` tracks what the text
format lets a reader know, so that every generated tree is one that
``parse_text(print_ir(tree))`` should rebuild exactly:

* names bound by ``let`` (statement or expression) and ``for`` carry their
  bound type, and a reference to one must have that type (the printer omits
  the ``(type)`` prefix of bound names); rebinding a name with another type
  (shadowing) is allowed;
* allocations give the element type of loads from them (such loads print no
  type);
* free names (variables, calls, loads of buffers nobody allocated) come from
  pools disjoint from the bound ones and from Halide's keywords;
* a bfloat16 literal prints like a float16 one, so it only appears where the
  parser sees a bfloat16 neighbour: next to a bfloat16 operand of a binary
  operator or select, or as the value stored into a bfloat16 allocation;
* statement sequences are canonical: ``ir.make_block``, with a LetStmt or
  Allocate only last (it scopes over the rest of its block).

Choices are drawn with ``pick`` (an index from a cached integer strategy)
rather than by building a ``sampled_from`` per draw, which keeps generation
fast enough for a few hundred examples in a few seconds. Sizes are bounded:
lanes <= 32, expression depth <= 4, statement depth <= 3, blocks <= 3.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from hypothesis import strategies as st

from hardboiled import ir

T = TypeVar("T")
Draw = Callable[[st.SearchStrategy], object]


def pick(draw: Draw, options: Sequence[T]) -> T:
    """One of options; shrinks towards the first."""
    return options[draw(st.integers(0, len(options) - 1))] if len(options) > 1 else options[0]


def chance(draw: Draw, one_in: int) -> bool:
    return draw(st.integers(0, one_in - 1)) == 0


# --------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------

# Bound by LetStmt / Let / For.
BOUND_NAMES = (
    "x", "y", "t18", "a.s0.x", "f.s0.y.yo", "mm.s1.r$x.rko", ".thread_id_x",
    "buf$1", "input.s0.y", "output.s0.x.xo.block_id_x", "letter", "format",
)
# Never bound; they print with a (type) prefix unless int32.
FREE_NAMES = (
    "v0", "v1", "A.stride.1", "f.extent.0", "g$2.min.0", ".block_id_y", "inner",
    "iffy", "::f_par_for_f_s0_y_yo", "freedom", "ramp_x", "f.device_dirty",
)
# Allocated buffers. Never shadowed by a nested allocation of the same name
# (Halide's allocation names are unique).
ALLOC_NAMES = ("buf0", "mm", "a.0", "conv$1", "mm.amx", "in_tile")
# Buffers stored to, or loaded from with a type prefix, without an allocation.
FREE_BUFFERS = ("A", "B.in", "out$2")
# Calls. None is an intrinsic the parser decodes from call form (ramp, xN,
# casts, min/max/select, shuffles, vector_reduce_*).
CALL_NAMES = (
    "foo", "likely", "sqrt_f32", "halide_error_bad_type", "gpu_thread_barrier",
    "_halide_buffer_get_host", "f$1.call", "widening_mul", "forall",
)
PRODUCER_NAMES = ("f", "mm_global_wrapper$0", "g.s0", "output")

HALIDE_KEYWORDS = frozenset(
    "let in if else for free assert allocate produce consume ramp select min max "
    "predicate aligned atomic fork acquire realize hoisted_storage parallel unrolled "
    "vectorized extern gpu_block gpu_thread gpu_lane custom_new custom_delete module "
    "buffer concat_vectors interleave_vectors slice_vectors extract_element shuffle".split()
)

_POOLS = (BOUND_NAMES, FREE_NAMES, ALLOC_NAMES, FREE_BUFFERS, CALL_NAMES)
assert sum(len(p) for p in _POOLS) == len(set().union(*_POOLS)), "name pools overlap"
assert not HALIDE_KEYWORDS & set().union(*_POOLS)

# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------

BOOL = ir.Bool()
BF16 = ir.BFloat(16)
INT_TYPES = tuple(ir.Int(b) for b in (8, 16, 32, 64)) + tuple(ir.UInt(b) for b in (8, 16, 32, 64))
FLOAT_TYPES = (ir.Float(16), ir.Float(32), ir.Float(64))
NUMERIC = INT_TYPES + FLOAT_TYPES + (BF16,)
ELEMENT_TYPES = NUMERIC + (BOOL,)
# int32 and bool are the most common types in real IR: weight them up.
WEIGHTED_ELEMENTS = (ir.INT32, ir.INT32, BOOL, ir.Float(32)) + ELEMENT_TYPES
HANDLE_TYPES = tuple(
    ir.handle_type(c)
    for c in (
        "void *",
        "struct halide_buffer_t *",
        "halide_task_t",
        "uint8_t *",
        "struct halide_device_interface_t const *",
    )
)
LANES = (2, 3, 4, 8, 16)
MAX_LANES = 32
ALIGNMENTS = (None, None, (4, 0), (8, 2), (16, 0), (256, 0))


def element_type(draw: Draw) -> ir.Type:
    return pick(draw, WEIGHTED_ELEMENTS)


def value_type(draw: Draw, handles: bool = False) -> ir.Type:
    """A scalar or vector type; a handle type too if ``handles``."""
    if handles and chance(draw, 6):
        return pick(draw, HANDLE_TYPES)
    elem = element_type(draw)
    return elem if draw(st.integers(0, 2)) > 0 else elem.with_lanes(pick(draw, LANES))


@st.composite
def value_types(draw) -> ir.Type:
    return value_type(draw)


def divisors(n: int, lo: int = 2) -> list[int]:
    return [d for d in range(lo, n + 1) if n % d == 0]


def _is_bf16(t: ir.Type) -> bool:
    return t.code is ir.TypeCode.BFLOAT


# --------------------------------------------------------------------------
# Scope
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    vars: dict[str, ir.Type] = field(default_factory=dict)
    allocs: dict[str, ir.Type] = field(default_factory=dict)

    def bind(self, name: str, t: ir.Type) -> Scope:
        return Scope({**self.vars, name: t}, self.allocs)

    def allocate(self, name: str, elem: ir.Type) -> Scope:
        return Scope(self.vars, {**self.allocs, name: elem})

    def vars_of(self, t: ir.Type) -> list[str]:
        return [n for n, vt in self.vars.items() if vt == t]

    def buffers_of(self, elem: ir.Type) -> list[str]:
        return [n for n, bt in self.allocs.items() if bt.element() == elem]


EMPTY = Scope()

# --------------------------------------------------------------------------
# Literals
# --------------------------------------------------------------------------


def int_value(draw: Draw, t: ir.Type) -> int:
    if t.is_uint:
        lo, hi = 0, (1 << t.bits) - 1
    else:
        lo, hi = -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    kind = draw(st.integers(0, 3))
    if kind == 3:
        return draw(st.integers(lo, hi))
    if kind == 2:
        return pick(draw, (lo, hi))
    return draw(st.integers(max(lo, -20), min(hi, 300)))


_NICE_FLOATS = (0.0, -0.0, 1.0, 0.5, -2.25, 2.0**30, -(2.0**70), 100000002004087734272.0)
_SPECIAL_FLOATS = (math.inf, -math.inf, math.nan, -math.nan)


def float_value(draw: Draw) -> float:
    """A double whose printed form ("%.6f", or "%e" below 1e-6) reads back
    exactly, or one of the values Halide prints as inf, -inf, nan, -nan."""
    kind = draw(st.integers(0, 5))
    if kind == 5:
        return pick(draw, _SPECIAL_FLOATS)
    if kind == 4:
        mantissa = pick(draw, (1, -1, 2, 5, -7, 9))
        return float(f"{mantissa}e-{draw(st.integers(7, 12))}")
    if kind == 3:
        return pick(draw, _NICE_FLOATS)
    return draw(st.integers(-640, 640)) / 64


def scalar_literal(draw: Draw, t: ir.Type) -> ir.Expr:
    """A literal of scalar type t (not bfloat16: see ``bf16_literal``)."""
    assert t.lanes == 1 and not _is_bf16(t)
    if t.is_uint:
        return ir.UIntImm(int_value(draw, t), t)
    if t.is_int:
        return ir.IntImm(int_value(draw, t), t)
    return ir.FloatImm(float_value(draw), t)


def bf16_literal(draw: Draw, t: ir.Type) -> ir.Expr:
    """A bfloat16 literal of type t, broadcast (maybe twice) if t is a vector."""
    lit: ir.Expr = ir.FloatImm(draw(st.integers(-64, 64)) / 8, BF16)
    if t.lanes > 1:
        inner = pick(draw, divisors(t.lanes, 1)[:-1])  # proper divisors, 1 first
        if inner > 1:
            lit = ir.Broadcast(lit, inner)
        lit = ir.Broadcast(lit, t.lanes // inner)
    return lit


# Every escape the printer knows (\" \\ \t \r \n \xHH) and Latin-1
# characters (one byte each in Halide's std::string).
strings = st.text(
    alphabet=st.one_of(
        st.sampled_from('"\\\n\t\r\x01\x7f\xe9 %:'),
        st.characters(min_codepoint=0, max_codepoint=0xFF),
    ),
    max_size=12,
).map(ir.StringImm)

# --------------------------------------------------------------------------
# Expressions
# --------------------------------------------------------------------------


def leaf(draw: Draw, scope: Scope, t: ir.Type) -> ir.Expr:
    """A depth-0 expression of type t."""
    options = ["free_var"]
    if scope.vars_of(t):
        options = ["bound_var"] * 3 + options
    if t.is_handle:
        options.append("call")
    elif t.lanes == 1:
        options = (["literal"] * 3 if not _is_bf16(t) else ["bf16_cast"]) + options
    else:
        options = ["broadcast", "broadcast"] + options
        if t == ir.Int(32, t.lanes):
            options += ["ramp", "ramp"]
    if not t.is_handle and scope.buffers_of(t.element()):
        options.append("load")
    kind = pick(draw, options)
    if kind == "free_var":
        return ir.Variable(pick(draw, FREE_NAMES), t)
    if kind == "bound_var":
        return ir.Variable(pick(draw, scope.vars_of(t)), t)
    if kind == "call":
        return ir.Call(pick(draw, CALL_NAMES), (), t)
    if kind == "literal":
        return scalar_literal(draw, t)
    if kind == "bf16_cast":
        return ir.Cast(t, scalar_literal(draw, ir.Float(32)))
    if kind == "broadcast":
        return ir.Broadcast(leaf(draw, scope, t.element()), t.lanes)
    if kind == "ramp":
        return ir.Ramp(leaf(draw, scope, ir.INT32), leaf(draw, scope, ir.INT32), t.lanes)
    # A load from an allocation, indexed by a scalar or a ramp.
    name = pick(draw, scope.buffers_of(t.element()))
    if t.lanes == 1:
        index = leaf(draw, scope, ir.INT32)
    else:
        index = ir.Ramp(leaf(draw, scope, ir.INT32), ir.IntImm(draw(st.integers(-2, 4))), t.lanes)
    return ir.Load(name, index, t)


def _reinterpret_sources(t: ir.Type) -> list[ir.Type]:
    """Types of the same total width that t can be reinterpreted from."""
    if t.is_handle:
        return [ir.UInt(64), ir.Int(64)]
    if t.lanes == 1 and t.bits == 64 and not t.is_float:
        candidates = [ir.Int(64), ir.UInt(64), ir.Float(64), *HANDLE_TYPES[:2]]
    else:
        candidates = [u.with_lanes(t.lanes) for u in NUMERIC if u.bits == t.bits]
    return [u for u in candidates if u != t]


def operand_pair(draw: Draw, scope: Scope, t: ir.Type, depth: int) -> tuple[ir.Expr, ir.Expr]:
    """Two expressions of type t; for bfloat16, sometimes one is a literal."""
    a, b = expr(draw, scope, t, depth), expr(draw, scope, t, depth)
    if _is_bf16(t) and draw(st.booleans()):
        lit = bf16_literal(draw, t)
        a, b = (lit, b) if draw(st.booleans()) else (a, lit)
    return a, b


_ARITH = (ir.BinOp.ADD, ir.BinOp.SUB, ir.BinOp.MUL, ir.BinOp.DIV, ir.BinOp.MOD, ir.BinOp.MIN, ir.BinOp.MAX)
_COMPARE = tuple(op for op in ir.BinOp if op.is_comparison)


def expr(draw: Draw, scope: Scope, t: ir.Type, depth: int) -> ir.Expr:
    """An expression of exactly type t."""
    if depth <= 0 or chance(draw, 3):
        return leaf(draw, scope, t)
    d = depth - 1
    lanes = t.lanes
    options = ["leaf", "call", "let", "select"]
    if t.is_handle:
        options.append("reinterpret")
    else:
        options += ["cast", "shuffle"]
        if _reinterpret_sources(t):
            options.append("reinterpret")
        if t.is_bool:
            options += ["compare"] * 3 + ["logical"] * 2 + ["not"]
        else:
            options += ["arith"] * 4
        if lanes > 1:
            options.append("broadcast")
            if t.is_int or (t.is_uint and not t.is_bool):
                options.append("ramp")
        if lanes * 2 <= MAX_LANES:
            options.append("reduce")
        options += ["load", "load"] if scope.buffers_of(t.element()) else ["free_load"]
    kind = pick(draw, options)

    if kind == "leaf":
        return leaf(draw, scope, t)
    if kind == "call":
        args = [expr(draw, scope, value_type(draw), d) for _ in range(draw(st.integers(0, 3)))]
        if chance(draw, 3):
            args.append(draw(strings))
        return ir.Call(pick(draw, CALL_NAMES), tuple(args), t)
    if kind == "let":
        name = pick(draw, BOUND_NAMES)
        u = value_type(draw, handles=True)
        value = expr(draw, scope, u, d)
        return ir.Let(name, value, expr(draw, scope.bind(name, u), t, d))
    if kind == "select":
        cond = expr(draw, scope, ir.Bool(pick(draw, sorted({1, lanes}))), d)
        return ir.Select(cond, *operand_pair(draw, scope, t, d))
    if kind == "reinterpret":
        return ir.Reinterpret(t, expr(draw, scope, pick(draw, _reinterpret_sources(t)), d))
    if kind == "cast":
        return ir.Cast(t, expr(draw, scope, element_type(draw).with_lanes(lanes), d))
    if kind == "arith":
        return ir.Binary(pick(draw, _ARITH), *operand_pair(draw, scope, t, d))
    if kind == "compare":
        op = pick(draw, _COMPARE)
        return ir.Binary(op, *operand_pair(draw, scope, element_type(draw).with_lanes(lanes), d))
    if kind == "logical":
        op = pick(draw, (ir.BinOp.AND, ir.BinOp.OR))
        return ir.Binary(op, expr(draw, scope, t, d), expr(draw, scope, t, d))
    if kind == "not":
        return ir.Not(expr(draw, scope, t, d))
    if kind == "broadcast":
        factor = pick(draw, divisors(lanes))
        return ir.Broadcast(expr(draw, scope, t.with_lanes(lanes // factor), d), factor)
    if kind == "ramp":  # possibly nested: a vector base and stride
        outer = pick(draw, divisors(lanes))
        inner = t.with_lanes(lanes // outer)
        return ir.Ramp(expr(draw, scope, inner, d), expr(draw, scope, inner, d), outer)
    if kind == "reduce":
        factor = pick(draw, [f for f in (2, 3, 4, 8) if lanes * f <= MAX_LANES])
        if t.is_bool:
            ops = [ir.ReduceOp.AND, ir.ReduceOp.OR]
        else:
            ops = [ir.ReduceOp.ADD, ir.ReduceOp.MUL, ir.ReduceOp.MIN, ir.ReduceOp.MAX]
            if not t.is_float:
                ops.append(ir.ReduceOp.SATURATING_ADD)
        value = expr(draw, scope, t.with_lanes(lanes * factor), d)
        return ir.VectorReduce(pick(draw, ops), value, t)
    if kind == "shuffle":
        return shuffle(draw, scope, t, d)
    if kind == "load":
        name = pick(draw, scope.buffers_of(t.element()))
    else:
        # A buffer nobody allocated: Halide prints the load's type, even
        # int32: "(float32x4)A[...]", "(int32)A[...]".
        name = pick(draw, FREE_BUFFERS)
    index = expr(draw, scope, ir.Int(32, lanes), d)
    predicate = expr(draw, scope, ir.Bool(lanes), d) if chance(draw, 3) else None
    return ir.Load(name, index, t, predicate, pick(draw, ALIGNMENTS))


def shuffle(draw: Draw, scope: Scope, t: ir.Type, depth: int) -> ir.Shuffle:
    """A shuffle of type t, of vectors (lanes >= 2) of t's element type."""
    lanes = t.lanes

    def vec(n: int) -> ir.Expr:
        return expr(draw, scope, t.with_lanes(n), depth)

    if lanes == 1:  # extract_element
        n = pick(draw, (2, 4, 8))
        return ir.Shuffle((vec(n),), (draw(st.integers(0, n - 1)),))
    kinds = ["concat", "slice", "generic"]
    if any(lanes // n >= 2 for n in divisors(lanes)):
        kinds.append("interleave")
    kind = pick(draw, kinds)
    if kind == "concat":
        first = pick(draw, [k for k in range(2, lanes + 1) if lanes - k != 1])
        parts = [first] + ([lanes - first] if lanes > first else [])
        return ir.Shuffle(tuple(vec(n) for n in parts), tuple(range(lanes)))
    if kind == "interleave":
        n = pick(draw, [n for n in divisors(lanes) if lanes // n >= 2])
        each = lanes // n
        vectors = tuple(vec(each) for _ in range(n))
        return ir.Shuffle(vectors, tuple((i % n) * each + i // n for i in range(lanes)))
    if kind == "slice":
        stride, begin = draw(st.integers(1, 3)), draw(st.integers(0, 3))
        total = begin + (lanes - 1) * stride + 1 + draw(st.integers(0, 2))
        if total > MAX_LANES:
            stride, begin, total = 1, 0, lanes + 1
        return ir.Shuffle((vec(total),), tuple(begin + i * stride for i in range(lanes)))
    sizes = [pick(draw, (2, 4)) for _ in range(draw(st.integers(1, 2)))]
    vectors = tuple(vec(n) for n in sizes)
    total = sum(sizes)
    return ir.Shuffle(vectors, tuple(draw(st.integers(0, total - 1)) for _ in range(lanes)))


@st.composite
def exprs(draw, scope: Scope, t: ir.Type, depth: int = 2) -> ir.Expr:
    """Strategy: an expression of exactly type t."""
    return expr(draw, scope, t, depth)


# --------------------------------------------------------------------------
# Statements
# --------------------------------------------------------------------------


def store(draw: Draw, scope: Scope, depth: int) -> ir.Store:
    lanes = pick(draw, (1, 1, 2, 4, 8))
    allocated = sorted(scope.allocs)
    free_buffer = not allocated or chance(draw, 4)
    if free_buffer:  # stores do not need the buffer's type
        name = pick(draw, FREE_BUFFERS)
        t = element_type(draw).with_lanes(lanes)
    else:
        name = pick(draw, allocated)
        t = scope.allocs[name].with_lanes(lanes)
    if _is_bf16(t) and not free_buffer and draw(st.booleans()):
        # Legible: the parser knows the allocation is bfloat16.
        value = bf16_literal(draw, t)
    else:
        value = expr(draw, scope, t, depth)
    if lanes > 1 and draw(st.booleans()):
        index: ir.Expr = ir.Ramp(expr(draw, scope, ir.INT32, depth), ir.IntImm(1), lanes)
    else:
        index = expr(draw, scope, ir.Int(32, lanes), depth)
    predicate = expr(draw, scope, ir.Bool(lanes), depth) if chance(draw, 4) else None
    return ir.Store(name, value, index, predicate, pick(draw, ALIGNMENTS))


_SIMPLE = ("store", "evaluate", "assert", "for", "if", "produce", "free", "atomic", "fork", "acquire", "hoisted")
_LEAF_STMTS = ("store", "evaluate", "assert", "free")


def stmt(draw: Draw, scope: Scope, depth: int, ed: int) -> ir.Stmt:
    """One statement that is not a Block, LetStmt or Allocate."""
    kind = pick(draw, _SIMPLE if depth > 0 else _LEAF_STMTS)

    def body(s: Scope = scope) -> ir.Stmt:
        return block(draw, s, depth - 1, ed, allow_empty=True)

    if kind == "store":
        return store(draw, scope, ed)
    if kind == "evaluate":
        return ir.Evaluate(expr(draw, scope, value_type(draw, handles=True), ed))
    if kind == "assert":
        which = draw(st.integers(0, 2))
        if which == 0:
            message: ir.Expr = draw(strings)
        elif which == 1:
            args = [draw(strings) if draw(st.booleans()) else expr(draw, scope, ir.INT32, 1)
                    for _ in range(draw(st.integers(0, 3)))]
            message = ir.Call("halide_error_bad_type", tuple(args))
        else:
            message = expr(draw, scope, ir.INT32, 1)
        return ir.AssertStmt(expr(draw, scope, BOOL, ed), message)
    if kind == "for":
        name = pick(draw, BOUND_NAMES)
        for_kind = pick(draw, list(ir.ForKind))
        device = "CUDA" if for_kind.value.startswith("gpu_") else None
        lo, extent = expr(draw, scope, ir.INT32, ed), expr(draw, scope, ir.INT32, ed)
        return ir.For(name, lo, extent, for_kind, device, body(scope.bind(name, ir.INT32)))
    if kind == "if":
        return if_then_else(draw, scope, depth, ed)
    if kind == "produce":
        return ir.ProducerConsumer(pick(draw, PRODUCER_NAMES), draw(st.booleans()), body())
    if kind == "free":
        return ir.Free(pick(draw, sorted(scope.allocs) or ALLOC_NAMES))
    if kind == "atomic":
        return ir.Atomic(pick(draw, PRODUCER_NAMES), pick(draw, (None, "mutex", "f.mutex$0")), body())
    if kind == "fork":
        return ir.Fork(body(), body())
    if kind == "acquire":
        semaphore = leaf(draw, scope, HANDLE_TYPES[0])
        return ir.Acquire(semaphore, expr(draw, scope, ir.INT32, 1), body())
    return ir.HoistedStorage(pick(draw, (None,) + PRODUCER_NAMES), body())


def if_then_else(draw: Draw, scope: Scope, depth: int, ed: int) -> ir.IfThenElse:
    cond = expr(draw, scope, BOOL, ed)
    then_case = block(draw, scope, depth - 1, ed, allow_empty=True)
    else_kind = pick(draw, ("none", "block", "else_if"))
    else_case: ir.Stmt | None = None
    if else_kind == "block":
        else_case = block(draw, scope, depth - 1, ed, allow_empty=True)
    elif else_kind == "else_if" and depth > 0:
        else_case = if_then_else(draw, scope, depth - 1, ed)
    return ir.IfThenElse(cond, then_case, else_case)


def scoping_stmt(draw: Draw, scope: Scope, depth: int, ed: int) -> ir.Stmt:
    """A LetStmt or Allocate, whose body is the rest of the enclosing block."""
    if draw(st.booleans()):
        name = pick(draw, BOUND_NAMES)
        t = value_type(draw, handles=True)
        value = expr(draw, scope, t, ed)
        return ir.LetStmt(name, value, block(draw, scope.bind(name, t), depth - 1, ed, allow_empty=True))
    unused = [n for n in ALLOC_NAMES if n not in scope.allocs]
    if not unused:
        return stmt(draw, scope, depth, ed)
    name = pick(draw, unused)
    elem = element_type(draw)
    if chance(draw, 6):  # Halide allows vector elements: float32x256
        elem = elem.with_lanes(pick(draw, (4, 256)))
    extents = tuple(expr(draw, scope, ir.INT32, 1) for _ in range(draw(st.integers(0, 3))))
    condition = expr(draw, scope, BOOL, 1) if chance(draw, 3) else None
    memory = pick(draw, ir.MEMORY_TYPES)
    new_expr = free_function = None
    if chance(draw, 6):
        buffer = ir.Variable(name + ".buffer", HANDLE_TYPES[1])
        new_expr = ir.Call("_halide_buffer_get_host", (buffer,), HANDLE_TYPES[0])
        free_function = pick(draw, (None, "halide_device_host_nop_free"))
    inner = block(draw, scope.allocate(name, elem), depth - 1, ed, allow_empty=True)
    return ir.Allocate(name, elem, memory, extents, inner, condition, new_expr, free_function)


def block(draw: Draw, scope: Scope, depth: int, ed: int, allow_empty: bool = False) -> ir.Stmt:
    """A canonical statement sequence: no nested blocks, and a LetStmt or
    Allocate only last."""
    n = draw(st.integers(0 if allow_empty else 1, 3 if depth > 0 else 2))
    items = [stmt(draw, scope, depth, ed) for _ in range(max(n - 1, 0))]
    if n >= 1:
        if depth > 0 and chance(draw, 3):
            items.append(scoping_stmt(draw, scope, depth, ed))
        else:
            items.append(stmt(draw, scope, depth, ed))
    return ir.make_block(items)


@st.composite
def statements(draw, depth: int = 3, expr_depth: int = 2) -> ir.Stmt:
    """Strategy: a top-level statement (never an empty body)."""
    return block(draw, EMPTY, depth, expr_depth)
