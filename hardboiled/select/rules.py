"""Equality saturation: assemble the egglog program and run it.

The program is the rule files (in the paper's four categories), the
hardware facts, one ``(let $sN ...)`` per selected store, and the rule
schedule; ``eqsat`` runs it in a child process and extracts every
``$sN``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

from hardboiled.select.eqsat import (
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT_S,
    EgglogError,
    EgraphSize,
    EqsatResult,
    ProgramChunk,
    Scope,
    run_egglog,
)
from hardboiled.select.extract import ScopeGroup
from hardboiled.select.facts import amx_facts, wmma_facts
from hardboiled.select.rule_files import RULE_FILES as RULE_FILES  # re-exported
from hardboiled.select.rule_files import rule_file_chunks
from hardboiled.select.rule_files import rule_text as rule_text
from hardboiled.support.cache import ResultCache, cache_key
from hardboiled.support.diagnostics import Diagnostic, InputError, Location
from hardboiled.targets.wmma import WMMAShape

DEFAULT_ITERATIONS = 20
STATEMENTS_PER_SCOPE = 32
"""Stores saturated together, between (push) and (pop), in one egglog
child. Each rule match scans the whole e-graph, so one e-graph of every
store makes time grow faster than their number (conv1d unrolled, 258
stores: 6.6 s in one e-graph, 2.4 s in scopes of 32). Stores that share
facts stay in one scope (``scopes`` in select/selector.py)."""
ITERATIONS_PLACEHOLDER = "@ITERATIONS@"


@dataclass(frozen=True, slots=True)
class Schedule:
    """The effective rule schedule, as egglog text."""

    text: str
    source: str
    """Where it came from: "default" or a file name."""
    iterations: int


def rule_chunks(window_shape: WMMAShape | None = None) -> list[ProgramChunk]:
    """The rule files, then the hardware facts (facts only: they may come
    after the rules, which fire when the schedule runs; the rule files come
    first so that a prestarted child has run them already)."""
    chunks = rule_file_chunks()
    chunks.append(ProgramChunk("<hardware facts>", amx_facts() + wmma_facts(window_shape=window_shape)))
    return chunks


_RULE_RE = re.compile(r"^\((rule|rewrite|birewrite)\b")
_RULESET_RE = re.compile(r":ruleset\s+([A-Za-z0-9_\-]+)")


def rules_by_ruleset(text: str) -> dict[str, int]:
    """How many rules a rule file puts in each ruleset (top-level forms)."""
    counts: dict[str, int] = {}
    depth, form = 0, []
    for line in text.split("\n"):
        code = line.split(";", 1)[0]
        if depth == 0 and not code.strip():
            continue
        form.append(code)
        depth += code.count("(") - code.count(")")
        if depth <= 0:
            joined = " ".join(form).strip()
            form, depth = [], 0
            if _RULE_RE.match(joined):
                m = _RULESET_RE.search(joined)
                name = m.group(1) if m else "(default)"
                counts[name] = counts.get(name, 0) + 1
    return counts


def load_schedule(path: str | None, iterations: int | None) -> Schedule:
    """The default schedule, or the one in ``path``; ``iterations`` fills
    ``@ITERATIONS@`` in either."""
    count = DEFAULT_ITERATIONS if iterations is None else iterations
    if count < 1:
        raise InputError(Diagnostic("error", f"--iterations must be at least 1, not {count}"))
    if path is None:
        template, source = rule_text("schedules/default.egg"), "default"
    else:
        try:
            template, source = Path(path).read_text(encoding="utf-8"), path
        except OSError as exc:
            raise InputError(
                Diagnostic("error", f"cannot read schedule '{path}': {exc.strerror}", Location(path, 1, 1))
            ) from None
        except UnicodeDecodeError as exc:
            raise InputError(
                Diagnostic("error", f"schedule '{path}' is not UTF-8 text (byte {exc.start})", Location(path, 1, 1))
            ) from None
        if "run-schedule" not in template and "(run " not in template:
            raise InputError(
                Diagnostic("error", "a schedule file must contain a (run-schedule ...) or (run ...) command",
                           Location(path, 1, 1, template.split("\n", 1)[0]))
            )
        _check_rulesets(template, path)
    return Schedule(template.replace(ITERATIONS_PLACEHOLDER, str(count)), source, count)


_RUN_RE = re.compile(r"\(run\s+([A-Za-z_][A-Za-z0-9_\-]*)")
_DECLARED_RE = re.compile(r"\(ruleset\s+([A-Za-z_][A-Za-z0-9_\-]*)\)")


def _check_rulesets(schedule: str, path: str) -> None:
    """A schedule may only run rulesets that exist (egglog would panic)."""
    known = {m.group(1) for name in RULE_FILES for m in _DECLARED_RE.finditer(rule_text(name))}
    known |= {m.group(1) for m in _DECLARED_RE.finditer(schedule)}
    for m in _RUN_RE.finditer(schedule):
        if m.group(1) not in known:
            line = schedule.count("\n", 0, m.start(1)) + 1
            column = m.start(1) - (schedule.rfind("\n", 0, m.start(1)) + 1) + 1
            raise InputError(Diagnostic(
                "error", f"the schedule runs an unknown ruleset '{m.group(1)}'",
                Location(path, line, column, schedule.split("\n")[line - 1]),
                notes=("rulesets: " + ", ".join(sorted(known)),),
            ))


def program_text(terms: list[str], schedule: Schedule, window_shape: WMMAShape | None = None,
                 groups: list[ScopeGroup] | None = None) -> str:
    """The whole egglog program, as it runs (``--emit egg``): the rules, then
    each group of stores in a scope of its own."""
    parts = [f";;;; {c.filename}\n{c.text}" for c in rule_chunks(window_shape)]
    for group in groups if groups is not None else [ScopeGroup(tuple(range(len(terms))))]:
        scope = _scope(terms, group, schedule)
        helpers = f" (helpers {', '.join(map(str, group.helpers))})" if group.helpers else ""
        parts.append(f";;;; stores {', '.join(map(str, group.stores))}{helpers}\n(push)\n{scope.chunks[0].text}")
        parts.append(f";;;; schedule ({schedule.source})\n{schedule.text}")
        parts.append("".join(f"(extract {root})\n" for root in scope.roots) + "(pop)\n")
    return "\n".join(parts)




def _scope(terms: list[str], group: ScopeGroup, schedule: Schedule) -> Scope:
    """The stores of ``group`` (``$sI`` for term I) and its helpers, and the
    schedule, run in a (push)/(pop) scope of their own."""
    inputs = "".join(f"(let $s{i} {terms[i]})\n" for i in group.stores)
    inputs += "".join(f"(let $helper{i} {terms[i]})\n" for i in group.helpers)
    return Scope((ProgramChunk("<selected stores>", inputs), ProgramChunk(schedule.source, schedule.text)),
                 tuple(f"$s{i}" for i in group.stores))


def _in_term_order(result: EqsatResult, order: list[int]) -> EqsatResult:
    """Put back in term order what came back in scope order."""
    terms, costs = [""] * len(order), [0] * len(order)
    for position, index in enumerate(order):
        terms[index], costs[index] = result.terms[position], result.costs[position]
    return dataclasses.replace(result, terms=tuple(terms), costs=tuple(costs))


_ENTRY_SHAPE = {"terms": [str], "costs": [int], "size": (None, {"nodes": int, "classes": int})}
"""What a saturation cache entry must look like to be served."""


def saturate(
    terms: list[str],
    schedule: Schedule,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_mb: int = DEFAULT_MEMORY_MB,
    cache: ResultCache | None = None,
    window_shape: WMMAShape | None = None,
    groups: list[ScopeGroup] | None = None,
) -> EqsatResult:
    """Run the rules on the encoded stores; ``cache`` skips a run whose whole
    program was seen before. ``window_shape``: the fragment shape for
    sliding windows (the cost model's choice for these stores). ``groups``:
    the stores (indices into ``terms``, each extracted from one group)
    saturated in each (push)/(pop) scope; by default one scope holds them
    all. The terms come back in the order of ``terms``."""
    chunks = rule_chunks(window_shape)
    groups = groups if groups is not None else [ScopeGroup(tuple(range(len(terms))))]
    scopes = tuple(_scope(terms, group, schedule) for group in groups if group.stores)
    key = (cache_key([c.text for c in chunks] + [c.text for s in scopes for c in s.chunks],
                     [r for s in scopes for r in s.roots]) if cache is not None else "")
    if cache is not None and (entry := cache.get(key, _ENTRY_SHAPE)) is not None:
        size = entry.get("size")
        return EqsatResult(tuple(entry["terms"]), tuple(entry["costs"]),
                           EgraphSize(**size) if size else None, 0.0, {}, cached=True)
    try:
        result = _in_term_order(run_egglog(chunks, [], timeout_s=timeout_s, memory_mb=memory_mb, scopes=scopes),
                                [i for group in groups for i in group.stores])
    except EgglogError as exc:
        location = exc.diagnostic.location
        if schedule.source != "default" and location is not None and location.filename == schedule.source:
            raise InputError(exc.diagnostic) from None  # the user's schedule, not our rules
        raise
    if cache is not None:
        size = {"nodes": result.size.nodes, "classes": result.size.classes} if result.size else None
        cache.put(key, {"terms": list(result.terms), "costs": list(result.costs), "size": size})
    return result
