"""Tensor instruction selection for one statement: tile extraction
(``extract``) -> equality saturation (``rules``, ``eqsat``) -> decoding and
reinsertion (``reinsert``).

A store marked for an accelerator that the rules cannot lower is a *miss*:
an error naming the store, its buffer and the closest partial match
(``explain``), unless the caller allows falling back to the original
statement. The result still needs legalization (hardboiled/legalize): its
temporaries are not placed yet and its memory types not retagged.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

from hardboiled import ir
from hardboiled.select.eqsat import EgraphSize, EqsatResult
from hardboiled.select.explain import explain_miss
from hardboiled.select.extract import (
    ACCELERATOR_INTRINSICS,
    ACCELERATOR_MEMORY,
    Encoding,
    ScopeGroup,
    SelectedStore,
    accelerator_allocations,
    accelerators_used,
    encode_stores,
    iter_stores,
    read_outside_intrinsics,
    scope_groups,
    select_stores,
)
from hardboiled.select.facts import sliding_windows
from hardboiled.select.isolate import demote, isolate_products
from hardboiled.select.lane_order import order_accelerator_lanes
from hardboiled.select.options import SelectionOptions as SelectionOptions  # re-exported
from hardboiled.select.partition import partition_accumulators, uneven_tiles
from hardboiled.select.reinsert import Decoder, MarkerLeft, Temporary, reinsert
from hardboiled.select.revectorize import relayout_blocked_tiles, revectorize_scalar_updates
from hardboiled.select.rules import STATEMENTS_PER_SCOPE, Schedule, load_schedule, saturate
from hardboiled.select.specialize import specialize_edge_tiles
from hardboiled.select.spill import gathers_accelerator, reads_accelerator_in_arithmetic, spill_accelerator_reads
from hardboiled.select.terms import parse_term
from hardboiled.select.unflatten import unflatten_stores
from hardboiled.select.unroll import unroll_tile_loops
from hardboiled.support.cache import ResultCache
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError, Location, statement_location
from hardboiled.targets.wmma import WMMA_TENSOR_CORE


@dataclass(frozen=True, slots=True)
class StoreReport:
    buffer: str
    line: int | None
    accelerator: str
    lowered: bool
    intrinsics: tuple[str, ...]
    explanation: str | None = None
    rewritten: ir.Stmt | None = None
    """What selection put in the store's place (before legalization), for
    the HTML report; not in the JSON one."""


@dataclass(frozen=True, slots=True)
class SelectionResult:
    stmt: ir.Stmt
    reports: tuple[StoreReport, ...]
    schedule: Schedule | None
    """None when the statement has no accelerator memory (nothing to select)."""
    egraph: EgraphSize | None
    seconds: float
    """Wall-clock time of equality saturation, child process included."""
    warnings: tuple[Diagnostic, ...] = ()
    """Misses that --allow-fallback turned into warnings."""
    cached: bool = False
    temporaries: tuple[Temporary, ...] = ()
    """Values that the selected instructions read from memory, still to be
    allocated and filled (legalize/temporaries.py)."""
    memory_types: tuple[tuple[str, str], ...] = ()
    """Buffer -> memory type to retag allocations with: --store-in, and
    Auto for buffers that fell back (legalize/memory.py)."""

    @property
    def has_accelerator_memory(self) -> bool:
        return self.schedule is not None


class SelectionMiss(HardboiledError):
    """At least one accelerator store could not be lowered. ``selection``
    is what selection found for every store, lowered or not, for the
    report of the failed input."""

    exit_code = ExitCode.SELECTION_MISS

    def __init__(self, diagnostics: list[Diagnostic], selection: SelectionResult | None = None):
        super().__init__(diagnostics[0])
        self.diagnostics = diagnostics
        self.selection = selection


def select_instructions(
    stmt: ir.Stmt,
    options: SelectionOptions,
    *,
    filename: str = "<string>",
    source: str = "",
    store_lines: tuple[int, ...] = (),
) -> SelectionResult:
    """Lower every store that touches accelerator memory to tile or fragment
    operations, and put them where the stores were."""
    _check_store_in(stmt, options.store_in, filename)
    return _select(stmt, options, filename, source, store_lines, retry=True)


def _rewrite_for_retry(stmt: ir.Stmt, selected: list[SelectedStore], lowered: dict[int, ir.Stmt],
                       allocations: dict[str, ir.Allocate], options: SelectionOptions,
                       store_lines: tuple[int, ...]) -> tuple[ir.Stmt, tuple[int, ...], set[str]]:
    """The program rewritten so that the missed stores may lower: an
    epilogue that computes with an accumulator reads a copy in memory
    (spill.py), an update that does more with its product than a tile can
    has the product in a tile of its own (isolate.py), and statements bigger
    than one instruction are cut into pieces (partition.py). Returns
    ``stmt`` itself when none applies, and the accumulators now in scratch
    memory."""
    memory = {name: options.store_in.get(name, a.memory_type) for name, a in allocations.items()}
    accelerators = {name: ACCELERATOR_MEMORY[m] for name, m in memory.items()}
    missed = [s for s in selected if s.position not in lowered]
    buffers = set(allocations)
    spillable = {s.position for s in missed
                 if gathers_accelerator(s.store, buffers) or reads_accelerator_in_arithmetic(s.store, buffers)}
    replacements = spill_accelerator_reads(stmt, spillable, accelerators, allocations)
    if replacements:
        store_lines = _lines_after(stmt, replacements, store_lines)
        stmt = reinsert(stmt, replacements)
    # an update that does more with its product than a tile can (scales it):
    # the product in a tile of its own, the accumulator in scratch memory
    missed_stores = {s.store for s in missed}
    isolated = isolate_products(stmt, {p for p, st in enumerate(iter_stores(stmt)) if st in missed_stores},
                                memory, accelerators, allocations)
    if isolated.replacements:
        store_lines = _lines_after(stmt, isolated.replacements, store_lines)
        stmt = demote(reinsert(stmt, isolated.replacements), isolated.demoted)
    cut = {b: accelerators[b] for s in missed for b in s.buffers if b not in isolated.demoted}
    replacements = partition_accumulators(stmt, {**cut, **isolated.products})
    if replacements:
        store_lines = _lines_after(stmt, replacements, store_lines)
        stmt = reinsert(stmt, replacements)
    return stmt, store_lines, set(isolated.demoted)


def _lines_after(stmt: ir.Stmt, replacements: dict[int, ir.Stmt], store_lines: tuple[int, ...]) -> tuple[int, ...]:
    """Source lines of the stores once ``replacements`` are in: the stores
    of a replacement have the line of the store it replaces."""
    lines: list[int] = []
    for position, line in enumerate(store_lines):
        replacement = replacements.get(position)
        lines.extend([line] * (sum(isinstance(n, ir.Store) for n in ir.walk(replacement)) if replacement else 1))
    return tuple(lines)


@dataclass(frozen=True, slots=True)
class _Decoded:
    """One round of saturation and decoding: what each selected store
    became, or why it missed."""

    eqsat: EqsatResult | None
    """None when no store could be encoded (nothing was saturated)."""
    decoder: Decoder
    replacements: dict[int, ir.Stmt]
    """Lowered statement by store position; _fall_back takes entries out."""
    reports: list[StoreReport]
    misses: list[Diagnostic]

    @property
    def egraph(self) -> EgraphSize | None:
        return self.eqsat.size if self.eqsat else None

    @property
    def cached(self) -> bool:
        return bool(self.eqsat and self.eqsat.cached)


def _select(stmt: ir.Stmt, options: SelectionOptions, filename: str, source: str,
            store_lines: tuple[int, ...], retry: bool) -> SelectionResult:
    allocations = accelerator_allocations(stmt, options.store_in)
    if not allocations:
        return SelectionResult(stmt, (), None, None, 0.0)
    stmt, edge_copies, store_lines = specialize_edge_tiles(stmt, set(allocations), store_lines)  # GuardWithIf
    if edge_copies:
        store_in = {**options.store_in, **{new: options.store_in[old] for new, old in edge_copies.items()
                                           if old in options.store_in}}
        options = dataclasses.replace(options, store_in=store_in,
                                      edge_copies=options.edge_copies | frozenset(edge_copies))
        allocations = accelerator_allocations(stmt, options.store_in)
    stmt = unflatten_stores(stmt, allocations)  # the final stmt's concat_vectors and shuffles
    stmt = unroll_tile_loops(stmt, set(allocations))  # a loop variable cannot name a tile register
    stmt = revectorize_scalar_updates(stmt, set(allocations))  # updates Halide left scalar
    stmt = unroll_tile_loops(stmt, set(allocations))  # tile loops around what revectorizing made a vector
    stmt = order_accelerator_lanes(stmt, set(allocations))  # fills and copies of a transposed accumulator
    stmt = relayout_blocked_tiles(stmt, {name for name, a in allocations.items()
                                         if ACCELERATOR_MEMORY[options.store_in.get(name, a.memory_type)] == "AMX"})
    stmt, store_lines = _even_tiles(stmt, allocations, options, store_lines)
    # the passes above may give an accumulator another shape (a relayout of
    # blocked tiles): what follows sizes its buffers by the new one
    allocations = accelerator_allocations(stmt, options.store_in)
    schedule = load_schedule(options.schedule_path, options.iterations)
    selected = select_stores(stmt, allocations, options.store_in)
    lowerable = [s for s in selected if s.store.predicate is None]
    encoding = encode_stores(lowerable, allocations, options.store_in)
    start = time.perf_counter()
    decoded = _saturate_and_decode(selected, lowerable, encoding, schedule, options, filename, source, store_lines)
    seconds = time.perf_counter() - start
    if decoded.misses and retry:
        second = _select_rewritten(stmt, selected, decoded, allocations, options, filename, source, store_lines)
        if second is not None:
            return dataclasses.replace(second, seconds=second.seconds + seconds)
    misses = _root_causes_first(selected, decoded.replacements, decoded.misses, options.verbose)
    if options.edge_copies and not options.verbose:
        misses = _one_warning_per_edge_copy(misses, options.edge_copies)
    if any(m.severity == "error" for m in misses):
        raise SelectionMiss(misses, SelectionResult(stmt, tuple(decoded.reports), schedule, decoded.egraph,
                                                    seconds, cached=decoded.cached))
    return _selection_result(stmt, selected, decoded, misses, schedule, seconds, options)


def _even_tiles(stmt: ir.Stmt, allocations: dict[str, ir.Allocate], options: SelectionOptions,
                store_lines: tuple[int, ...]) -> tuple[ir.Stmt, tuple[int, ...]]:
    """The program with the accumulators whose statements disagree on their
    tiles (``uneven_tiles``) partitioned before selection, so that every
    tile register has one shape."""
    accelerators = {name: ACCELERATOR_MEMORY[options.store_in.get(name, a.memory_type)]
                    for name, a in allocations.items()}
    uneven = uneven_tiles(stmt, set(accelerators))
    replacements = partition_accumulators(stmt, {name: accelerators[name] for name in uneven}) if uneven else {}
    if not replacements:
        return stmt, store_lines
    return reinsert(stmt, replacements), _lines_after(stmt, replacements, store_lines)


def _saturate_and_decode(selected: list[SelectedStore], lowerable: list[SelectedStore], encoding: Encoding,
                         schedule: Schedule, options: SelectionOptions, filename: str, source: str,
                         store_lines: tuple[int, ...]) -> _Decoded:
    """Saturate the lowerable stores in scope groups and decode every
    selected store. Grouping must not cost a store its lowering: after a
    miss in scopes that one e-graph could change, once more with every store
    in one e-graph (scope_groups says why it should not be needed)."""
    groups = scope_groups(lowerable, STATEMENTS_PER_SCOPE)
    result = None
    for attempt in (groups, None) if len(groups) > 1 else (None,):
        if encoding.terms:
            result = _saturate(encoding, lowerable, schedule, options, attempt)
        decoder = Decoder(encoding)
        terms = dict(zip((s.position for s in lowerable), result.terms if result else ()))
        replacements, reports, misses = _decode_selected(selected, terms, decoder, encoding, options,
                                                         filename, source, store_lines)
        decoded = _Decoded(result, decoder, replacements, reports, misses)
        if not _one_egraph_may_lower(selected, lowerable, replacements, options.edge_copies):
            break
    return decoded


def _one_egraph_may_lower(selected: list[SelectedStore], lowerable: list[SelectedStore],
                          replacements: dict[int, ir.Stmt], edge_copies: frozenset[str]) -> bool:
    """Whether a store missed that saturating every store in one e-graph
    could lower: one that was saturated (not predicated), and not a partial
    tile at the output's edge (a GuardWithIf tail's copy, whose miss is a
    warning and expected; in every sweep and seeded sample measured, one
    e-graph lowered no such store that the scope groups had missed, and on
    the slowest it took 4 of the 6 seconds of saturation)."""
    saturated = {s.position for s in lowerable}
    return any(s.position not in replacements and s.position in saturated and not _at_an_edge(s, edge_copies)
               for s in selected)


def _select_rewritten(stmt: ir.Stmt, selected: list[SelectedStore], decoded: _Decoded,
                      allocations: dict[str, ir.Allocate], options: SelectionOptions, filename: str, source: str,
                      store_lines: tuple[int, ...]) -> SelectionResult | None:
    """Selection, once (no further retry), of the program rewritten for the
    misses (_rewrite_for_retry); None when no rewrite applies."""
    rewritten, lines, demoted = _rewrite_for_retry(stmt, selected, decoded.replacements, allocations, options,
                                                   store_lines)
    if rewritten is stmt:
        return None
    if demoted:
        options = dataclasses.replace(options, store_in={n: m for n, m in options.store_in.items() if n not in demoted})
    return _select(rewritten, options, filename, source, lines, retry=False)


def _selection_result(stmt: ir.Stmt, selected: list[SelectedStore], decoded: _Decoded, misses: list[Diagnostic],
                      schedule: Schedule, seconds: float, options: SelectionOptions) -> SelectionResult:
    """The statement with the lowered stores in place. The misses left here
    are warnings (--allow-fallback): their buffers go back to ordinary
    memory, and the stores that touch them stay as they were."""
    memory = dict(options.store_in)
    reports = decoded.reports
    if misses:
        reverted = _fall_back(selected, decoded.replacements)
        memory.update({name: "Auto" for name in reverted})
        reports = [dataclasses.replace(r, lowered=False, intrinsics=(), rewritten=None)
                   if r.buffer in reverted and r.lowered
                   else r for r in reports]
    rewritten = reinsert(stmt, decoded.replacements)
    used = {n.name for n in ir.walk(rewritten) if isinstance(n, ir.Variable)}
    temporaries = tuple(t for t in decoded.decoder.temporaries.values() if t.name in used)
    return SelectionResult(
        rewritten, tuple(reports), schedule, decoded.egraph, seconds, tuple(misses),
        decoded.cached, temporaries, tuple(memory.items()),
    )


def _saturate(encoding: Encoding, lowerable: list[SelectedStore], schedule: Schedule, options: SelectionOptions,
              groups: list[ScopeGroup] | None) -> EqsatResult:
    cache = ResultCache(Path(options.cache_dir)) if options.cache_dir else None
    window_shape = WMMA_TENSOR_CORE.best_window_shape(sliding_windows(s.store for s in lowerable))
    return saturate(encoding.terms, schedule, timeout_s=options.timeout_s, memory_mb=options.memory_mb, cache=cache,
                    window_shape=window_shape, groups=groups, jobs=options.saturation_jobs,
                    accelerators=accelerators_used(lowerable, encoding))


def _decode_selected(selected: list[SelectedStore], terms: dict[int, str], decoder: Decoder, encoding: Encoding,
                     options: SelectionOptions, filename: str, source: str, store_lines: tuple[int, ...],
                     ) -> tuple[dict[int, ir.Stmt], list[StoreReport], list[Diagnostic]]:
    """Each selected store's lowered statement (by position), its report,
    and a diagnostic for each miss."""
    replacements, explanations = _decoded_terms(selected, terms, decoder, encoding)
    # Checked once every store is decoded: the decoder then knows every
    # temporary, and how each buffer the rewrite keeps in another order is
    # laid out.
    temporaries = {t.name: t.value for t in decoder.temporaries.values()}
    for sel in selected:
        if sel.position in replacements and (failure := _failed_check(sel, replacements, temporaries, decoder,
                                                                      options)):
            explanations[sel.position] = failure
    reports: list[StoreReport] = []
    misses: list[Diagnostic] = []
    for sel in selected:
        line = store_lines[sel.position] if sel.position < len(store_lines) else None
        explanation = explanations.get(sel.position)
        if explanation is None:
            intrinsics = tuple(sorted({n.name for n in ir.walk(replacements[sel.position])
                                       if isinstance(n, ir.Call) and n.name.startswith(ACCELERATOR_INTRINSICS)}))
            reports.append(StoreReport(sel.store.name, line, sel.accelerator, True, intrinsics,
                                       rewritten=replacements[sel.position]))
            continue
        reports.append(StoreReport(sel.store.name, line, sel.accelerator, False, (), explanation))
        misses.append(_miss_diagnostic(sel, explanation, filename, source, line, options.allow_fallback,
                                       _at_an_edge(sel, options.edge_copies)))
    return replacements, reports, misses


def _decoded_terms(selected: list[SelectedStore], terms: dict[int, str], decoder: Decoder, encoding: Encoding
                   ) -> tuple[dict[int, ir.Stmt], dict[int, str]]:
    """The statement each store's extracted term decodes to, and why each
    store that has none missed, by position."""
    replacements: dict[int, ir.Stmt] = {}
    explanations: dict[int, str] = {}
    for sel in selected:
        term = terms.get(sel.position)
        if term is None:
            explanations[sel.position] = "a predicated store cannot become a tile operation"
            continue
        try:
            replacement = decoder.stmt(parse_term(term, "Stmt"))
        except MarkerLeft:
            explanations[sel.position] = explain_miss(sel, term, encoding)
            continue
        # A call the rules see as opaque (exp in a sigmoid) hides what it
        # reads: a result that still computes with an accumulator there (or,
        # on AMX, anywhere outside a tile operation) is a miss, which the
        # retry spills (spill.py), not a lowered store.
        unlowered = read_outside_intrinsics(replacement, set(sel.buffers), sel.accelerator == "WMMA")
        if unlowered is not None:
            explanations[sel.position] = (f"it computes with '{unlowered}' (accelerator memory) inside an "
                                          "expression no tile or fragment operation evaluates")
            continue
        replacements[sel.position] = replacement
    return replacements, explanations


def _failed_check(sel: SelectedStore, replacements: dict[int, ir.Stmt], temporaries: dict[str, ir.Expr],
                  decoder: Decoder, options: SelectionOptions) -> str | None:
    """Why the rewrite of ``sel`` fails ``options.rewrite_check`` (then it
    is taken out of ``replacements``), or None."""
    if options.rewrite_check is None:
        return None
    reason = options.rewrite_check(sel.store, replacements[sel.position], temporaries, decoder.layouts)
    if reason is None:
        return None
    del replacements[sel.position]
    return (f"the rewrite selection found does not compute what the store computes ({reason}); it is not "
            "emitted. This is a fault in hardboiled's rules or in egglog, not in the schedule: please "
            "report it with this input")


def _root_causes_first(selected: list[SelectedStore], lowered: dict[int, ir.Stmt], misses: list[Diagnostic],
                       verbose: bool) -> list[Diagnostic]:
    """The misses with their root causes first. A reduction into an
    accumulator that cannot be lowered is the root cause; the other stores
    of that accumulator (its initial value, the store that copies it out)
    then fail only because no matmul fixes the tile's shape. Without
    --verbose those follow-on misses are one note on their root."""
    missed = [s for s in selected if s.position not in lowered]
    assert len(missed) == len(misses)
    roots = {s.position for s in missed if any(isinstance(n, ir.VectorReduce) for n in ir.walk(s.store.value))}
    follow_on = _follow_on_misses(missed, roots)
    if verbose:
        return [m for i, m in enumerate(misses) if i not in follow_on] + [misses[i] for i in follow_on]
    follow_ons = [missed[i] for i in follow_on]
    return [_noting_follow_ons(_shortened(miss), sel, roots, follow_ons)
            for i, (sel, miss) in enumerate(zip(missed, misses)) if i not in follow_on]


def _follow_on_misses(missed: list[SelectedStore], roots: set[int]) -> list[int]:
    """Indices into ``missed`` of the misses that are not root causes but
    touch an accumulator of one."""
    root_buffers = {b for s in missed if s.position in roots for b in s.buffers}
    return [i for i, s in enumerate(missed) if s.position not in roots and set(s.buffers) & root_buffers]


def _noting_follow_ons(miss: Diagnostic, sel: SelectedStore, roots: set[int],
                       follow_ons: list[SelectedStore]) -> Diagnostic:
    """``miss`` with a note counting the follow-on misses it causes, when
    ``sel`` is a root cause of any."""
    if sel.position not in roots:
        return miss
    others = sum(1 for f in follow_ons if set(f.buffers) & set(sel.buffers))
    if not others:
        return miss
    note = (f"{others} other store{'s' if others > 1 else ''} of the same accumulator cannot be "
            "lowered because of this one (--verbose lists them)")
    return dataclasses.replace(miss, notes=(*miss.notes, note))


MAX_NOTE_CHARS = 600
"""A note longer than this is cut (the rest with --verbose): the index
expressions of a big tile print to tens of kilobytes."""


def _shortened(diagnostic: Diagnostic) -> Diagnostic:
    notes = tuple(n if len(n) <= MAX_NOTE_CHARS else n[:MAX_NOTE_CHARS] + " ... (--verbose shows all)"
                  for n in diagnostic.notes)
    return dataclasses.replace(diagnostic, notes=notes)


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


def _edge_copy_of(buffer: str, edge_copies: frozenset[str]) -> str | None:
    """The edge copy that ``buffer`` is, or was made from (its spill)."""
    return next((copy for copy in edge_copies if buffer == copy or buffer.startswith(f"{copy}.")), None)


def _at_an_edge(sel: SelectedStore, edge_copies: frozenset[str]) -> bool:
    return bool(sel.buffers) and all(_edge_copy_of(b, edge_copies) for b in sel.buffers)


def _one_warning_per_edge_copy(misses: list[Diagnostic], edge_copies: frozenset[str]) -> list[Diagnostic]:
    """The first warning of each edge copy, counting the others (the stores
    of its spills and copies say the same)."""
    firsts: dict[str, int] = {}
    others: dict[str, int] = {}
    kept: list[Diagnostic] = []
    for miss in misses:
        copy = _edge_copy_of(miss.message.split("'")[1], edge_copies) if miss.severity == "warning" else None
        if copy is None:
            kept.append(miss)
        elif copy in firsts:
            others[copy] = others.get(copy, 0) + 1
        else:
            firsts[copy] = len(kept)
            kept.append(miss)
    for copy, count in others.items():
        first = kept[firsts[copy]]
        note = f"{count} other stores of '{copy}' stay as they were too (--verbose lists them)"
        kept[firsts[copy]] = dataclasses.replace(first, notes=(*first.notes, note))
    return kept


def _miss_diagnostic(sel: SelectedStore, explanation: str, filename: str, source: str,
                     line: int | None, fallback: bool, at_an_edge: bool = False) -> Diagnostic:
    severity = "warning" if fallback or at_an_edge else "error"
    location = statement_location(filename, source, line)
    accelerator = sel.accelerator
    notes = [explanation]
    if at_an_edge:
        notes.append("a partial tile at the output's edge (the schedule's GuardWithIf tail): it stays in "
                     "ordinary memory, computed as Halide computes it, while the whole tiles use "
                     f"{accelerator}; a tail strategy of ShiftInwards or RoundUp, or an output size that "
                     "is a multiple of the tile, puts every tile on it")
    elif fallback:
        notes.append("--allow-fallback: the store is left as it was")
    return Diagnostic(
        severity,
        f"store to '{sel.store.name}' cannot be lowered to {accelerator} "
        f"{'fragment' if accelerator == 'WMMA' else 'tile'} operations",
        location,
        tuple(notes),
    )
