"""Explaining a miss: the closest partial match.

When a store that touches accelerator memory cannot be lowered, the
extracted term is egglog's best form of it, with its index expressions
already normalized by the axioms; comparing it with what the rules look
for names the operand, layout, type or index that failed.
"""

from __future__ import annotations

from hardboiled import ir
from hardboiled.ir.printer import print_ir
from hardboiled.select.extract import Encoding, SelectedStore
from hardboiled.select.reinsert import Decoder, strip_markers
from hardboiled.select.terms import parse_term
from hardboiled.targets.amx import AMX_TILE
from hardboiled.targets.wmma import WMMA_TENSOR_CORE


def explain_miss(sel: SelectedStore, term: str, encoding: Encoding) -> str:
    """Say which part of the store kept it from becoming tile operations.

    The extracted term is egglog's best form of the store, with its index
    expressions already normalized by the axioms; comparing it with what the
    rules look for names the operand, layout or index that failed.
    """
    value = _lenient_decode(term, encoding)
    accelerator_buffers = set(encoding.accelerator_buffers)
    if sel.store.name in accelerator_buffers:
        return _explain_accelerator_store(sel, value)
    loads = [n for n in ir.walk(value) if isinstance(n, ir.Load) and n.name in accelerator_buffers]
    if loads and isinstance(value, ir.Load):
        return _explain_copy_out(sel)
    return _explain_read_in_arithmetic(sel, loads)


def _unit(sel: SelectedStore) -> str:
    """What the store's accelerator holds a tile in, as the messages name it."""
    return "WMMA fragment" if sel.accelerator == "WMMA" else "AMX tile"


def _explain_accelerator_store(sel: SelectedStore, value: ir.Expr) -> str:
    """A store into accelerator memory: a statement Halide left scalar, a
    product that does not match, or a value no instruction writes."""
    store = sel.store
    wmma = sel.accelerator == "WMMA"
    unit = _unit(sel)
    if store.value.type.lanes == 1:
        return (f"Halide left this statement of '{store.name}' scalar: a tile operation needs the whole "
                f"{unit} as one vector statement. In the schedule, vectorize the update of '{store.name}' "
                "over the tile's rows and columns; Halide vectorizes an atomic update only when the "
                "accumulator's index is one ramp, so put several tiles of one accumulator one below the "
                "other (split the rows), not side by side")
    reduce = next((n for n in ir.walk(value) if isinstance(n, ir.VectorReduce)), None)
    if reduce is not None:
        return _explain_wmma_matmul(reduce) if wmma else _explain_matmul(reduce)
    if isinstance(value, ir.Broadcast) and isinstance(value.value, (ir.FloatImm, ir.IntImm)):
        return (f"filling a {unit} whose shape nothing fixes: no "
                f"{'mma' if wmma else 'matmul'} writes it")
    if _adds_one_product(store.name, value):
        return (f"it adds one product per element of '{store.name}' (no sum inside the vector): its "
                "reduction is a serial loop around the statement, one rank-1 update per iteration, and a "
                f"{'fragment mma' if wmma else 'tile matmul'} needs the sum in one vector statement. In the "
                f"schedule, vectorize the reduction of '{store.name}' atomically with the tile, e.g. "
                f"{store.name}.update().atomic().vectorize(r.x, K).vectorize(x).vectorize(y)")
    allowed = ("a constant fill or a fragment product C + sum(A * B)" if wmma
               else "zero, a tile product C + sum(A * B), nor a 2-D tile load")
    return (f"the value stored into {sel.accelerator} buffer '{store.name}' is neither {allowed}: "
            f"{print_ir(value)}")


def _adds_one_product(name: str, value: ir.Expr) -> bool:
    """Whether ``value`` is ``name + a * b`` with no reduction: an update
    whose reduction Halide left as a loop around it."""
    if not (isinstance(value, ir.Binary) and value.op is ir.BinOp.ADD):
        return False
    sides = (value.a, value.b)
    accumulator = [s for s in sides if isinstance(s, ir.Load) and s.name == name]
    product = [s for s in sides if isinstance(s, ir.Binary) and s.op is ir.BinOp.MUL]
    return len(accumulator) == 1 and len(product) == 1 and not any(
        isinstance(n, ir.VectorReduce) for n in ir.walk(product[0]))


def _explain_copy_out(sel: SelectedStore) -> str:
    """A store that copies a tile out of accelerator memory: its destination
    is not a layout the store instruction writes."""
    if sel.accelerator == "WMMA":
        return ("store_matrix_sync needs a row-major ramp(ramp(base, 1, N), xN(ldm), M), a column-major "
                "ramp(ramp(base, ldm, N), xN(1), M) or a dense ramp(base, 1, M*N) destination; "
                f"the store index is {print_ir(sel.store.index)}")
    return ("tile_store needs a row-major destination of at most "
            f"{AMX_TILE.max_rows} rows: ramp(ramp(base, 1, N), xN(stride), M); "
            f"the store index is {print_ir(sel.store.index)}")


def _explain_read_in_arithmetic(sel: SelectedStore, loads: list[ir.Load]) -> str:
    """A store that computes with a value in accelerator memory, which only
    the store and multiply instructions can read."""
    only = "store_matrix_sync and mma_sync" if sel.accelerator == "WMMA" else "tile_store and tile_matmul"
    return (f"{sel.accelerator} buffer '{loads[0].name if loads else '?'}' is read inside arithmetic; "
            f"only {only} can read a {_unit(sel)}")


def _product_operands(reduce: ir.VectorReduce) -> tuple[ir.Load, ir.Load] | str:
    """The loads of A and B in sum(A * B), or why there are none."""
    product = reduce.value
    if not (isinstance(product, ir.Binary) and product.op is ir.BinOp.MUL):
        return f"the reduction is not a sum of products: {print_ir(reduce)}"
    loads = []
    for label, operand in (("A", product.a), ("B", product.b)):
        inner = operand.value if isinstance(operand, ir.Cast) else operand
        load = next((n for n in ir.walk(inner) if isinstance(n, ir.Load)), None)
        if load is None:
            return f"operand {label} of the product is not a load: {print_ir(operand)}"
        loads.append(load)
    return loads[0], loads[1]


def _explain_wmma_matmul(reduce: ir.VectorReduce) -> str:
    operands = _product_operands(reduce)
    if isinstance(operands, str):
        return operands
    core = WMMA_TENSOR_CORE
    element = None
    for label, load in zip("AB", operands):
        element = core.element(load.type.element())
        if element is None:
            names = ", ".join(str(e.type) for e in core.elements)
            return (f"hardware limit: operand {label} (a load of '{load.name}') has type {load.type.element()}; "
                    f"Tensor Cores multiply {names}. To use them, cast the operands of the reduction to one of "
                    "these types in the Func's definition")
        if reduce.type.element() not in element.accumulators:
            names = ", ".join(str(t) for t in element.accumulators)
            return (f"{element.type} operands accumulate into {names} on Tensor Cores, "
                    f"not {reduce.type.element()}")
    m_n = reduce.type.lanes
    k = reduce.value.type.lanes // m_n if m_n else 0
    element_shapes = core.shapes_of(element) if element is not None else core.shapes
    shapes = ", ".join(s.name for s in element_shapes)
    # a type with shapes of its own (float32 as tf32 pairs): a tile of
    # another shape is the Tensor Cores' limit, whatever the layout
    only = (f"hardware limit: Tensor Cores multiply {element.type} operands only in {shapes} fragments; "
            if element is not None and element.shapes else "")
    if not any(s.m * s.n == m_n and s.k == k for s in element_shapes):
        return _size_miss(reduce, operands, only, shapes)
    tile = _tile_of(operands[0], m_n)
    if only and tile is not None and not any((s.m, s.n) == tile for s in element_shapes):
        rows, cols = tile
        first = element_shapes[0]
        return (f"{only}this accumulator's tiles are {rows} x {cols}. In the schedule, tile the accumulator "
                f"{first.m} x {first.n} (rows x columns)")
    a, b = operands
    return (
        "no WMMA operand layout matched. After normalization, operand A (a load of "
        f"'{a.name}') has index {print_ir(a.index)}; A must be M x K, row-major "
        "ramp(xN(ramp(base, 1, K)), x(N*K)(ldm), M) or column-major ramp(xN(ramp(base, ldm, K)), "
        f"x(N*K)(1), M). Operand B (a load of '{b.name}') has index {print_ir(b.index)}; B must be "
        "K x N, row-major xM(ramp(ramp(base, ldm, K), xK(1), N)) or column-major "
        f"xM(ramp(ramp(base, 1, K), xK(ldm), N)). Fragment shapes: {shapes}"
    )


def _size_miss(reduce: ir.VectorReduce, loads: tuple[ir.Load, ir.Load], only: str, shapes: str) -> str:
    """A product the size of no fragment: a boundary condition or spaced
    taps that hide a window where the product shows one (not for a type
    whose own shapes are the limit), else the size. ``loads`` are the
    operands' loads (``_product_operands``)."""
    m_n = reduce.type.lanes
    k = reduce.value.type.lanes // m_n
    hidden = None if only else (_bounded_operand(reduce, loads) or _spaced_taps(loads, k))
    if hidden is not None:
        return hidden
    return (f"{only}the product is {m_n} outputs with a reduction of {k}; no WMMA fragment shape ({shapes}) "
            "has that size")


def _bounded_operand(reduce: ir.VectorReduce, loads: tuple[ir.Load, ir.Load]) -> str | None:
    """An operand that reads its buffer through a boundary condition (a
    select, min or max in the product, as constant_exterior and repeat_edge
    inline them): the sliding-window rules make Toeplitz operands of a plain
    window only, so the condition, not the size, is what to change. None for
    a product without one."""
    product = reduce.value
    assert isinstance(product, ir.Binary)
    for label, operand, load in zip("AB", (product.a, product.b), loads):
        # per lane: a scalar min in the window's base address (a tail's clamp) is no boundary condition
        if any(n.type.lanes > 1 and (isinstance(n, ir.Select) or
                                     (isinstance(n, ir.Binary) and n.op.is_function_style))
               for n in ir.walk(operand) if isinstance(n, ir.Expr)):
            return (f"operand {label} reads '{load.name}' through a boundary condition (a select, min or max "
                    "inside the product), which hides the window a convolution's Toeplitz operands are made "
                    "of: they are made of a plain load. In the schedule, compute the bounded input as a Func of "
                    "its own on the GPU, e.g. padded(x, y) = bounded(x, y) with padded.compute_root() and a "
                    "gpu_tile, so that the product reads a plain load of it")
    return None


def _spaced_taps(loads: tuple[ir.Load, ir.Load], k: int) -> str | None:
    """A window of ``k`` taps that lie a constant number of elements apart
    while its outputs are adjacent (ramp(ramp(base, d, K), xK(1), N),
    1 < d < K: a dilated convolution): Toeplitz operands are made of windows
    of adjacent taps. Outputs d apart too are a plain window over
    interleaved data, and a spacing of K or more is more likely a column of
    a 2-D window: neither is claimed. None for a product without one."""
    for label, load in zip("AB", loads):
        index = load.index
        if not (isinstance(index, ir.Ramp) and isinstance(index.base, ir.Ramp) and index.base.lanes == k
                and isinstance(index.stride, ir.Broadcast) and index.stride.value == ir.IntImm(1)):
            continue
        spacing = index.base.stride
        if isinstance(spacing, ir.IntImm) and 1 < spacing.value < k:
            d = spacing.value
            return (f"operand {label} reads '{load.name}' as a window whose taps are {d} elements apart (a "
                    "dilated convolution); a convolution's Toeplitz operands are made of windows of adjacent "
                    f"taps. In the schedule, convolve over adjacent elements with the kernel spread out: a Func "
                    f"of {d} times the taps, select(k % {d} == 0, kernel(k / {d}), 0), computed at root with a "
                    "gpu_tile")
    return None


def _tile_of(a: ir.Load, outputs: int) -> tuple[int, int] | None:
    """Rows and columns of the accumulator tile a product's operand A
    (M x K) implies: its M rows, each broadcast over the N columns, in
    either order; None where its index has neither form."""
    index = a.index
    if isinstance(index, ir.Ramp) and isinstance(index.base, ir.Broadcast):
        rows, cols = index.lanes, index.base.lanes  # ramp(xN(row), stride, M)
    elif isinstance(index, ir.Broadcast) and isinstance(index.value, ir.Ramp):
        rows, cols = outputs // index.lanes, index.lanes  # xN(the M x K block)
    else:
        return None
    return (rows, cols) if rows * cols == outputs else None


def _explain_matmul(reduce: ir.VectorReduce) -> str:
    operands = _product_operands(reduce)
    if isinstance(operands, str):
        return operands
    kinds = {t.type.code for t in AMX_TILE.elements}
    for label, load in zip("AB", operands):
        if load.type.code not in kinds or load.type.bits not in {t.type.bits for t in AMX_TILE.elements}:
            names = ", ".join(str(t.type) for t in AMX_TILE.elements)
            return (f"hardware limit: operand {label} (a load of '{load.name}') has type {load.type.element()}; "
                    f"AMX multiplies {names}. To use it, cast the operands of the reduction to one of these "
                    "types in the Func's definition")
    a_load, b_load = operands
    return (
        "no AMX operand layout matched. After normalization, operand A (a load of "
        f"'{a_load.name}') has index {print_ir(a_load.index)}; A must be an M x K row-major tile, "
        "ramp(xN(ramp(base, 1, K)), x(N*K)(stride), M). Operand B (a load of "
        f"'{b_load.name}') has index {print_ir(b_load.index)}; B must be K x N with unit column "
        "stride, xM(ramp(ramp(base, stride, K), xK(1), N)), or in VNNI order. Tiles hold at most "
        f"{AMX_TILE.max_rows} rows of {AMX_TILE.max_colbytes} bytes"
    )


def _lenient_decode(term: str, encoding: Encoding) -> ir.Expr:
    """Decode the stored value of a term that still contains data-movement
    markers."""
    store = strip_markers(parse_term(term, "Stmt"))
    return Decoder(encoding).expr(store.value)
