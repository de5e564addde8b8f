"""Every expression gets its Halide type, lanes included."""

from __future__ import annotations

from hardboiled import ir
from hardboiled.frontend.parse import parse_input, parse_text
from hardboiled.ir.printer import print_ir

from ..conftest import FIXTURES


def _stores(stmt: ir.Stmt, buffer: str) -> list[ir.Store]:
    return [n for n in ir.walk(stmt) if isinstance(n, ir.Store) and n.name == buffer]


def _loads(node: ir.Node, buffer: str) -> list[ir.Load]:
    return [n for n in ir.walk(node) if isinstance(n, ir.Load) and n.name == buffer]


def test_bf16_matmul_types_from_type_asserts_and_allocations() -> None:
    text = (FIXTURES / "amx_bf16_matmul_std_single" / "vectorizing.stmt").read_text()
    stmt = parse_text(text)
    update = _stores(stmt, "mm")[1]
    value = update.value
    assert isinstance(value, ir.Binary) and value.op is ir.BinOp.ADD
    reduce = value.a
    assert isinstance(reduce, ir.VectorReduce) and reduce.type == ir.Float(32, 256)
    (a_load,) = _loads(reduce, "A")
    (b_load,) = _loads(reduce, "B")
    # A and B are bfloat16 inputs (A.type == 69636), read as full tiles.
    assert a_load.type == ir.BFloat(16, 8192)
    assert b_load.type == ir.BFloat(16, 512)
    assert reduce.value.type == ir.Float(32, 8192)
    # The accumulator's type comes from `allocate mm[float32 * 16 * 16]`.
    (acc,) = _loads(value.b, "mm")
    assert acc.type == ir.Float(32, 256)
    # Nested ramps: ramp(ramp(b, s, 32), x32(1), 16) has 512 lanes.
    assert b_load.index.type == ir.Int(32, 512)


def test_int8_matmul_types() -> None:
    stmt = parse_text((FIXTURES / "amx_u8i8_matmul_vnni_tiled" / "vectorizing.stmt").read_text())
    loads = [n for n in ir.walk(stmt) if isinstance(n, ir.Load) and n.name in ("A", "B")]
    assert {n.name: n.type.element() for n in loads} == {"A": ir.UInt(8), "B": ir.Int(8)}


def test_allocation_with_vector_element_type() -> None:
    stmt = parse_input((FIXTURES / "amx_bf16_matmul_std_single" / "extracting_tile_operations.stmt").read_text()).ir
    alloc = next(n for n in ir.walk(stmt) if isinstance(n, ir.Allocate))
    assert alloc.type == ir.Float(32, 256) and alloc.memory_type == "AMXTile"
    calls = {n.name: n for n in ir.walk(stmt) if isinstance(n, ir.Call)}
    assert calls["tile_load"].type == ir.BFloat(16, 512)
    assert calls["tile_matmul"].type == ir.Float(32, 256)
    assert calls["tile_store"].type == ir.INT32


def test_wmma_dump_types_and_gpu_loops() -> None:
    stmt = parse_text((FIXTURES / "wmma_f16_matmul" / "vectorizing.stmt").read_text())
    loops = [n for n in ir.walk(stmt) if isinstance(n, ir.For)]
    kinds = {(n.kind, n.device_api) for n in loops}
    assert (ir.ForKind.GPU_BLOCK, "CUDA") in kinds
    alloc = next(n for n in ir.walk(stmt) if isinstance(n, ir.Allocate) and n.name == "prod")
    assert alloc.memory_type == "Register" and alloc.type == ir.Float(32)
    reduce = next(n for n in ir.walk(stmt) if isinstance(n, ir.VectorReduce))
    f16 = {n.type.element() for n in ir.walk(reduce) if isinstance(n, ir.Load)}
    assert f16 == {ir.Float(16)}


def test_bfloat16_literal_resolved_from_its_operand() -> None:
    text = (
        "allocate a[bfloat16 * 8]\n"
        "a[ramp(0, 1, 8)] = a[ramp(0, 1, 8)]*x8(0.250000h)\n"
        "a[0] = 0.500000h\n"
        "let h = float32(0.500000h)\n"
    )
    stmt = parse_text(text)
    stores = _stores(stmt, "a")
    product = stores[0].value
    assert isinstance(product, ir.Binary)
    assert product.b == ir.Broadcast(ir.FloatImm(0.25, ir.BFloat(16)), 8)
    assert stores[1].value == ir.FloatImm(0.5, ir.BFloat(16))
    let = next(n for n in ir.walk(stmt) if isinstance(n, ir.LetStmt))
    assert isinstance(let.value, ir.Cast) and let.value.value == ir.FloatImm(0.5, ir.Float(16))
    assert print_ir(stmt) == text


def test_literal_forms() -> None:
    text = (
        "f((int16)-32768, (uint64)18446744073709551615, 1.000000e-08f, -0.000000f, 0.100000, "
        "inff, nanh, \"a\\\"b\\n\\x01\", (uint1)1, -7)\n"
    )
    stmt = parse_text(text)
    assert isinstance(stmt, ir.Evaluate) and isinstance(stmt.value, ir.Call)
    args = stmt.value.args
    assert args[0] == ir.IntImm(-32768, ir.Int(16))
    assert args[1] == ir.UIntImm(2**64 - 1, ir.UInt(64))
    assert args[2] == ir.FloatImm(1e-08, ir.Float(32))
    assert args[3] == ir.FloatImm(-0.0, ir.Float(32)) and args[3] != ir.FloatImm(0.0, ir.Float(32))
    assert args[4].type == ir.Float(64)
    assert args[6] == ir.FloatImm(float("nan"), ir.Float(16))
    assert args[7] == ir.StringImm('a"b\n\x01')
    assert args[8].type == ir.Bool()
    assert args[9] == ir.IntImm(-7)
    assert print_ir(stmt) == text


def test_vector_and_shuffle_forms() -> None:
    text = (
        "allocate v[int32 * 16]\n"
        "v[ramp(0, 1, 8)] = concat_vectors(v[ramp(0, 1, 4)], v[ramp(4, 1, 4)])\n"
        "v[ramp(0, 1, 8)] = interleave_vectors(v[ramp(0, 1, 4)], v[ramp(4, 1, 4)])\n"
        "v[ramp(0, 1, 4)] = slice_vectors(v[ramp(0, 1, 8)], 1, 2, 4)\n"
        "v[0] = extract_element(v[ramp(0, 1, 8)], 3)\n"
        "v[ramp(0, 1, 3)] = shuffle(v[ramp(0, 1, 8)], 7, 0, 3)\n"
        "v[ramp(0, 1, 2)] = (int32x2)vector_reduce_max(v[ramp(0, 1, 8)])\n"
        "v[ramp(ramp(0, 1, 2), x2(4), 2) aligned(4, 0)] = x2(ramp(0, 2, 2))\n"
    )
    stmt = parse_text(text)
    shuffles = [n for n in ir.walk(stmt) if isinstance(n, ir.Shuffle)]
    assert [s.indices for s in shuffles] == [
        tuple(range(8)), (0, 4, 1, 5, 2, 6, 3, 7), (1, 3, 5, 7), (3,), (7, 0, 3),
    ]
    assert print_ir(stmt) == text


def test_let_expression_and_predicated_load() -> None:
    text = (
        "allocate g[float32 * 16]\n"
        "g[ramp(0, 1, 8)] = (g[ramp(0, 1, 8)] if (x8(t) < ramp(0, 1, 8))) + x8(let u = (t + 1) in float32(u))\n"
        "predicate (x8(t) < ramp(0, 1, 8))\n"
        " g[ramp(8, 1, 8)] = g[ramp(0, 1, 8)] if (x8(t) < ramp(0, 1, 8))\n"
    )
    stmt = parse_text(text)
    load = next(n for n in ir.walk(stmt) if isinstance(n, ir.Load) and n.predicate is not None)
    assert load.predicate is not None and load.predicate.type == ir.Bool(8)
    assert print_ir(stmt) == text


def test_integer_constants_wrap_into_their_type() -> None:
    """A pass that folds constants of a huge extent (16 x 2^31) makes a
    constant its type cannot hold: it wraps, as the program's own
    arithmetic does, instead of failing later (the fuzzer: exit 70)."""
    from hardboiled import ir

    assert ir.IntImm(34359738352).value == -16
    assert ir.IntImm((1 << 31) - 1).value == (1 << 31) - 1 and ir.IntImm(-(1 << 31)).value == -(1 << 31)
    assert ir.IntImm(1 << 31).value == -(1 << 31)
    assert ir.IntImm(1 << 63, ir.Int(64)).value == -(1 << 63)
    assert ir.IntImm(200, ir.Int(8)).value == -56
    assert ir.UIntImm(256, ir.UInt(8)).value == 0 and ir.UIntImm(-1, ir.UInt(16)).value == 65535
    assert ir.IntImm(34359738352) == ir.IntImm(-16)
