"""Equality saturation: assemble the egglog program and run it.

The program is the rule files (in the paper's four categories), the
hardware facts, one ``(let $sN ...)`` per selected store, and the rule
schedule; ``eqsat`` runs it in a child process and extracts every
``$sN``.
"""

from __future__ import annotations

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
    run_egglog,
)
from hardboiled.select.facts import amx_facts, wmma_facts
from hardboiled.select.rule_files import RULE_FILES as RULE_FILES  # re-exported
from hardboiled.select.rule_files import rule_file_chunks
from hardboiled.select.rule_files import rule_text as rule_text
from hardboiled.support.cache import ResultCache, cache_key
from hardboiled.support.diagnostics import Diagnostic, InputError, Location
from hardboiled.targets.wmma import WMMAShape

DEFAULT_ITERATIONS = 20
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


def program_text(terms: list[str], schedule: Schedule, window_shape: WMMAShape | None = None) -> str:
    """The whole egglog program, as it runs (``--emit egg``)."""
    parts = [f";;;; {c.filename}\n{c.text}" for c in rule_chunks(window_shape)]
    parts.append(_inputs_text(terms))
    parts.append(f";;;; schedule ({schedule.source})\n{schedule.text}")
    parts.append("".join(f"(extract $s{i})\n" for i in range(len(terms))))
    return "\n".join(parts)


def _inputs_text(terms: list[str]) -> str:
    return "".join(f"(let $s{i} {term})\n" for i, term in enumerate(terms))


def saturate(
    terms: list[str],
    schedule: Schedule,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_mb: int = DEFAULT_MEMORY_MB,
    cache: ResultCache | None = None,
    window_shape: WMMAShape | None = None,
) -> EqsatResult:
    """Run the rules on the encoded stores; ``cache`` skips a run whose whole
    program was seen before. ``window_shape``: the fragment shape for
    sliding windows (the cost model's choice for these stores)."""
    chunks = rule_chunks(window_shape)
    chunks.append(ProgramChunk("<selected stores>", _inputs_text(terms)))
    chunks.append(ProgramChunk(schedule.source, schedule.text))
    roots = [f"$s{i}" for i in range(len(terms))]
    key = cache_key([c.text for c in chunks], roots) if cache is not None else ""
    if cache is not None and (entry := cache.get(key)) is not None:
        size = entry.get("size")
        return EqsatResult(tuple(entry["terms"]), tuple(entry["costs"]),
                           EgraphSize(**size) if size else None, 0.0, {}, cached=True)
    try:
        result = run_egglog(chunks, roots, timeout_s=timeout_s, memory_mb=memory_mb)
    except EgglogError as exc:
        location = exc.diagnostic.location
        if schedule.source != "default" and location is not None and location.filename == schedule.source:
            raise InputError(exc.diagnostic) from None  # the user's schedule, not our rules
        raise
    if cache is not None:
        size = {"nodes": result.size.nodes, "classes": result.size.classes} if result.size else None
        cache.put(key, {"terms": list(result.terms), "costs": list(result.costs), "size": size})
    return result
