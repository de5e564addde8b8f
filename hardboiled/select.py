"""Tensor instruction selection, end to end for one program.

parse result -> tile extraction (extract.py) -> equality saturation
(eqsat.py) -> reinsertion and legalization (legalize.py). A store marked for
an accelerator that the rules cannot lower is a *miss*: an error naming the
store, its buffer and the closest partial match, unless the caller allows
falling back to the original statement.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import ir
from .diagnostics import Diagnostic, ExitCode, HardboiledError, Location
from .cache import ResultCache
from .egglog_bridge import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, EgraphSize
from .eqsat import Schedule, load_schedule, saturate
from .extract import (
    ACCELERATOR_INTRINSICS,
    ACCELERATOR_MEMORY,
    MARKERS,
    Encoding,
    SelectedStore,
    accelerator_allocations,
    encode_stores,
    select_stores,
)
from .hardware import AMX_TILE, WMMA_TENSOR_CORE
from .legalize import (
    Decoder,
    MarkerLeft,
    check_amx,
    enforce_wmma_lanes,
    parse_sexpr,
    place_temporaries,
    push_fragment_allocations,
    reinsert,
    stage_unaligned_operands,
)
from .printer import print_ir


@dataclass(frozen=True, slots=True)
class SelectionOptions:
    store_in: dict[str, str] = field(default_factory=dict)
    """Buffer name -> memory type, overriding what the dump says."""
    schedule_path: str | None = None
    iterations: int | None = None
    allow_fallback: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_mb: int = DEFAULT_MEMORY_MB
    cache_dir: str | None = None
    """Where equality-saturation results are cached; None turns caching off."""


@dataclass(frozen=True, slots=True)
class StoreReport:
    buffer: str
    line: int | None
    accelerator: str
    lowered: bool
    intrinsics: tuple[str, ...]
    explanation: str | None = None


@dataclass(frozen=True, slots=True)
class SelectionResult:
    stmt: ir.Stmt
    reports: tuple[StoreReport, ...]
    schedule: Schedule | None
    egraph: EgraphSize | None
    seconds: float
    """Wall-clock time of equality saturation, child process included."""
    warnings: tuple[Diagnostic, ...] = ()
    """Misses that --allow-fallback turned into warnings."""
    cached: bool = False


class SelectionMiss(HardboiledError):
    """At least one accelerator store could not be lowered."""

    exit_code = ExitCode.SELECTION_MISS

    def __init__(self, diagnostics: list[Diagnostic]):
        super().__init__(diagnostics[0])
        self.diagnostics = diagnostics


def select(
    stmt: ir.Stmt,
    options: SelectionOptions,
    *,
    filename: str = "<string>",
    source: str = "",
    store_lines: tuple[int, ...] = (),
) -> SelectionResult:
    """Lower every store that touches accelerator memory."""
    allocations = accelerator_allocations(stmt, options.store_in)
    _check_store_in(stmt, options.store_in, filename)
    if not allocations:
        return SelectionResult(stmt, (), None, None, 0.0)
    schedule = load_schedule(options.schedule_path, options.iterations)
    selected = select_stores(stmt, allocations, options.store_in)
    lowerable = [s for s in selected if s.store.predicate is None]
    encoding = encode_stores(lowerable, allocations, options.store_in)
    result = None
    start = time.perf_counter()
    if encoding.terms:
        cache = ResultCache(Path(options.cache_dir)) if options.cache_dir else None
        result = saturate(encoding.terms, schedule, timeout_s=options.timeout_s, memory_mb=options.memory_mb,
                          cache=cache)
    seconds = time.perf_counter() - start
    decoder = Decoder(encoding)
    replacements: dict[int, ir.Stmt] = {}
    reports: list[StoreReport] = []
    misses: list[Diagnostic] = []
    terms = dict(zip((s.position for s in lowerable), result.terms if result else ()))
    for sel in selected:
        line = store_lines[sel.position] if sel.position < len(store_lines) else None
        term = terms.get(sel.position)
        explanation = None
        if term is None:
            explanation = "a predicated store cannot become a tile operation"
        else:
            try:
                replacements[sel.position] = decoder.stmt(parse_sexpr(term))
            except MarkerLeft:
                explanation = explain_miss(sel, term, encoding)
        if explanation is None:
            intrinsics = tuple(sorted({n.name for n in ir.walk(replacements[sel.position])
                                       if isinstance(n, ir.Call) and n.name.startswith(ACCELERATOR_INTRINSICS)}))
            reports.append(StoreReport(sel.store.name, line, sel.accelerator, True, intrinsics))
            continue
        reports.append(StoreReport(sel.store.name, line, sel.accelerator, False, (), explanation))
        misses.append(_miss_diagnostic(sel, explanation, filename, source, line, options.allow_fallback))
    if misses and not options.allow_fallback:
        raise SelectionMiss(misses)
    memory = dict(options.store_in)
    if misses:
        reverted = _fall_back(selected, replacements)
        memory.update({name: "Auto" for name in reverted})
        reports = [dataclasses.replace(r, lowered=False, intrinsics=()) if r.buffer in reverted and r.lowered
                   else r for r in reports]
    rewritten = reinsert(stmt, replacements)
    used = {n.name for n in ir.walk(rewritten) if isinstance(n, ir.Variable)}
    temporaries = [t for t in decoder.temporaries.values() if t.name in used]
    rewritten = place_temporaries(rewritten, temporaries)
    rewritten = _apply_memory_overrides(rewritten, memory)
    lowered_buffers = accelerator_allocations(rewritten, {})
    check_amx(rewritten, {name: alloc for name, alloc in lowered_buffers.items()
                          if ACCELERATOR_MEMORY[alloc.memory_type] == "AMX"}, AMX_TILE)
    if any(ACCELERATOR_MEMORY[alloc.memory_type] == "WMMA" for alloc in lowered_buffers.values()):
        rewritten = postprocess_wmma(rewritten)
    return SelectionResult(
        rewritten, tuple(reports), schedule, result.size if result else None, seconds, tuple(misses),
        bool(result and result.cached),
    )


def postprocess_wmma(stmt: ir.Stmt) -> ir.Stmt:
    """The paper's WMMA post-processing: operands that load_matrix_sync
    could not read in place are staged through shared memory, every WMMA
    operation becomes warp-wide, and fragments become per-thread."""
    from .verify import discover_buffers

    element_types = {name: spec.type for name, spec in discover_buffers(stmt).items() if spec.type is not None}
    element_types.update({n.name: n.type.element() for n in ir.walk(stmt) if isinstance(n, ir.Allocate)})
    stmt = stage_unaligned_operands(stmt, element_types)
    stmt = enforce_wmma_lanes(stmt)
    return push_fragment_allocations(stmt)


def _fall_back(selected: list[SelectedStore], replacements: dict[int, ir.Stmt]) -> set[str]:
    """Undo selection for every accelerator buffer with a miss.

    A buffer is all or nothing: if one of its stores stays an ordinary
    store, the buffer cannot live in tile registers, so every store that
    touches it (and, transitively, the buffers those stores touch) is left
    as it was, and the buffer moves back to ordinary memory.
    """
    failed = {b for s in selected if s.position not in replacements for b in s.buffers}
    changed = True
    while changed:
        changed = False
        for sel in selected:
            if sel.position in replacements and failed & set(sel.buffers):
                del replacements[sel.position]
                new = set(sel.buffers) - failed
                failed |= new
                changed = True
    return failed


def _check_store_in(stmt: ir.Stmt, store_in: dict[str, str], filename: str) -> None:
    names = {n.name for n in ir.walk(stmt) if isinstance(n, ir.Allocate)}
    for name, memory in store_in.items():
        if memory not in ACCELERATOR_MEMORY:
            raise HardboiledError(Diagnostic(
                "error", f"--store-in {name}={memory}: not an accelerator memory type",
                notes=("accelerator memory types: " + ", ".join(sorted(ACCELERATOR_MEMORY)),),
            ))
        if name not in names:
            raise HardboiledError(Diagnostic(
                "error", f"--store-in {name}={memory}: the input allocates no buffer named '{name}'",
                Location(filename, 1, 1),
                notes=("allocations in the input: " + (", ".join(sorted(names)) or "none"),),
            ))


def _apply_memory_overrides(stmt: ir.Stmt, store_in: dict[str, str]) -> ir.Stmt:
    if not store_in:
        return stmt
    from .legalize import map_stmt

    def retag(node: ir.Stmt) -> ir.Stmt | None:
        if isinstance(node, ir.Allocate) and node.name in store_in:
            inner = map_stmt(node.body, retag)
            return dataclasses.replace(node, memory_type=store_in[node.name], body=inner)
        return None

    return map_stmt(stmt, retag)


def _miss_diagnostic(sel: SelectedStore, explanation: str, filename: str, source: str,
                     line: int | None, fallback: bool) -> Diagnostic:
    severity = "warning" if fallback else "error"
    location = None
    if line is not None:
        lines = source.split("\n")
        text = lines[line - 1] if 0 < line <= len(lines) else None
        column = len(text) - len(text.lstrip()) + 1 if text else 1
        location = Location(filename, line, column, text)
    accelerator = sel.accelerator
    notes = [explanation]
    if fallback:
        notes.append("--allow-fallback: the store is left as it was")
    return Diagnostic(
        severity,
        f"store to '{sel.store.name}' cannot be lowered to {accelerator} "
        f"{'fragment' if accelerator == 'WMMA' else 'tile'} operations",
        location,
        tuple(notes),
    )


# --------------------------------------------------------------------------
# Explaining a miss: the closest partial match
# --------------------------------------------------------------------------


def explain_miss(sel: SelectedStore, term: str, encoding: Encoding) -> str:
    """Say which part of the store kept it from becoming tile operations.

    The extracted term is egglog's best form of the store, with its index
    expressions already normalized by the axioms; comparing it with what the
    rules look for names the operand, layout or index that failed.
    """
    value = _lenient_decode(parse_sexpr(term), encoding)
    store = sel.store
    wmma = sel.accelerator == "WMMA"
    unit = "WMMA fragment" if wmma else "AMX tile"
    accelerator_buffers = set(encoding.accelerator_buffers)
    if store.name in accelerator_buffers:
        reduce = next((n for n in ir.walk(value) if isinstance(n, ir.VectorReduce)), None)
        if reduce is not None:
            return _explain_wmma_matmul(reduce) if wmma else _explain_matmul(reduce)
        if isinstance(value, ir.Broadcast) and isinstance(value.value, (ir.FloatImm, ir.IntImm)):
            return (f"filling a {unit} whose shape nothing fixes: no "
                    f"{'mma' if wmma else 'matmul'} writes it")
        allowed = ("a constant fill or a fragment product C + sum(A * B)" if wmma
                   else "zero, a tile product C + sum(A * B), nor a 2-D tile load")
        return (f"the value stored into {sel.accelerator} buffer '{store.name}' is neither {allowed}: "
                f"{print_ir(value)}")
    loads = [n for n in ir.walk(value) if isinstance(n, ir.Load) and n.name in accelerator_buffers]
    if loads and isinstance(value, ir.Load):
        if wmma:
            return ("store_matrix_sync needs a row-major ramp(ramp(base, 1, N), xN(ldm), M), a column-major "
                    "ramp(ramp(base, ldm, N), xN(1), M) or a dense ramp(base, 1, M*N) destination; "
                    f"the store index is {print_ir(store.index)}")
        return ("tile_store needs a row-major destination of at most "
                f"{AMX_TILE.max_rows} rows: ramp(ramp(base, 1, N), xN(stride), M); "
                f"the store index is {print_ir(store.index)}")
    only = "store_matrix_sync and mma_sync" if wmma else "tile_store and tile_matmul"
    return (f"{sel.accelerator} buffer '{loads[0].name if loads else '?'}' is read inside arithmetic; "
            f"only {only} can read a {unit}")


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
    for label, load in zip("AB", operands):
        element = core.element(load.type.element())
        if element is None:
            names = ", ".join(str(e.type) for e in core.elements)
            return f"operand {label} (a load of '{load.name}') has type {load.type.element()}; Tensor Cores multiply {names}"
        if reduce.type.element() not in element.accumulators:
            names = ", ".join(str(t) for t in element.accumulators)
            return (f"{element.type} operands accumulate into {names} on Tensor Cores, "
                    f"not {reduce.type.element()}")
    m_n = reduce.type.lanes
    k = reduce.value.type.lanes // m_n if m_n else 0
    shapes = ", ".join(s.name for s in core.shapes)
    if not any(s.m * s.n == m_n and s.k == k for s in core.shapes):
        return (f"the product is {m_n} outputs with a reduction of {k}; no WMMA fragment shape "
                f"({shapes}) has that size")
    a, b = operands
    return (
        "no WMMA operand layout matched. After normalization, operand A (a load of "
        f"'{a.name}') has index {print_ir(a.index)}; A must be M x K, row-major "
        "ramp(xN(ramp(base, 1, K)), x(N*K)(ldm), M) or column-major ramp(xN(ramp(base, ldm, K)), "
        f"x(N*K)(1), M). Operand B (a load of '{b.name}') has index {print_ir(b.index)}; B must be "
        "K x N, row-major xM(ramp(ramp(base, ldm, K), xK(1), N)) or column-major "
        f"xM(ramp(ramp(base, 1, K), xK(ldm), N)). Fragment shapes: {shapes}"
    )


def _explain_matmul(reduce: ir.VectorReduce) -> str:
    operands = _product_operands(reduce)
    if isinstance(operands, str):
        return operands
    kinds = {t.type.code for t in AMX_TILE.elements}
    for label, load in zip("AB", operands):
        if load.type.code not in kinds or load.type.bits not in {t.type.bits for t in AMX_TILE.elements}:
            names = ", ".join(str(t.type) for t in AMX_TILE.elements)
            return f"operand {label} (a load of '{load.name}') has type {load.type.element()}; AMX multiplies {names}"
    a_load, b_load = operands
    return (
        "no AMX operand layout matched. After normalization, operand A (a load of "
        f"'{a_load.name}') has index {print_ir(a_load.index)}; A must be an M x K row-major tile, "
        "ramp(xN(ramp(base, 1, K)), x(N*K)(stride), M). Operand B (a load of "
        f"'{b_load.name}') has index {print_ir(b_load.index)}; B must be K x N with unit column "
        "stride, xM(ramp(ramp(base, stride, K), xK(1), N)), or in VNNI order. Tiles hold at most "
        f"{AMX_TILE.max_rows} rows of {AMX_TILE.max_colbytes} bytes"
    )


def _lenient_decode(node: list, encoding: Encoding) -> ir.Expr:  # type: ignore[type-arg]
    """Decode a term that still contains data-movement markers."""

    def strip(n):  # type: ignore[no-untyped-def]
        if isinstance(n, list):
            if n and n[0] in MARKERS:
                return strip(n[1])
            return [strip(c) for c in n]
        return n

    stripped = strip(node)
    decoder = Decoder(encoding)
    if stripped[0] == "Store":
        return decoder.expr(stripped[2])
    return decoder.expr(stripped[1])
