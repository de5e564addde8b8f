"""Equality saturation: assemble the egglog program and run it.

The program is the rule files (in the paper's four categories), the
hardware facts, one ``(let $sN ...)`` per selected store, and the rule
schedule; ``egglog_bridge`` runs it in a child process and extracts every
``$sN``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .diagnostics import Diagnostic, InputError, Location
from .cache import ResultCache, cache_key
from .egglog_bridge import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, EgraphSize, EqsatResult, ProgramChunk, run_egglog
from .hardware import amx_facts

RULE_FILES = (
    "definition.egg",    # sorts and constructors
    "supporting.egg",    # supporting: shapes and hardware facts
    "axioms.egg",        # axiomatic: vector-index and arithmetic identities
    "amx_layouts.egg",   # application-specific: operand layouts
    "amx_lowering.egg",  # lowering: tile instructions
)
DEFAULT_ITERATIONS = 20
ITERATIONS_PLACEHOLDER = "@ITERATIONS@"


@dataclass(frozen=True, slots=True)
class Schedule:
    """The effective rule schedule, as egglog text."""

    text: str
    source: str
    """Where it came from: "default" or a file name."""
    iterations: int


def rule_text(name: str) -> str:
    return resources.files("hardboiled.rules").joinpath(name).read_text()


def rule_chunks() -> list[ProgramChunk]:
    chunks = [ProgramChunk(f"rules/{name}", rule_text(name)) for name in RULE_FILES[:2]]
    chunks.append(ProgramChunk("<hardware facts>", amx_facts()))
    chunks.extend(ProgramChunk(f"rules/{name}", rule_text(name)) for name in RULE_FILES[2:])
    return chunks


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
            template, source = Path(path).read_text(), path
        except OSError as exc:
            raise InputError(
                Diagnostic("error", f"cannot read schedule '{path}': {exc.strerror}", Location(path, 1, 1))
            ) from None
        if "run-schedule" not in template and "(run " not in template:
            raise InputError(
                Diagnostic("error", "a schedule file must contain a (run-schedule ...) or (run ...) command",
                           Location(path, 1, 1, template.split("\n", 1)[0]))
            )
    return Schedule(template.replace(ITERATIONS_PLACEHOLDER, str(count)), source, count)


def program_text(terms: list[str], schedule: Schedule) -> str:
    """The whole egglog program, as it runs (``--emit egg``)."""
    parts = [f";;;; {c.filename}\n{c.text}" for c in rule_chunks()]
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
) -> EqsatResult:
    """Run the rules on the encoded stores; ``cache`` skips a run whose whole
    program was seen before."""
    chunks = rule_chunks()
    chunks.append(ProgramChunk("<selected stores>", _inputs_text(terms)))
    chunks.append(ProgramChunk("<schedule>", schedule.text))
    roots = [f"$s{i}" for i in range(len(terms))]
    key = cache_key([(c.filename, c.text) for c in chunks], roots) if cache is not None else ""
    if cache is not None and (entry := cache.get(key)) is not None:
        size = entry.get("size")
        return EqsatResult(tuple(entry["terms"]), tuple(entry["costs"]),
                           EgraphSize(**size) if size else None, 0.0, {}, cached=True)
    result = run_egglog(chunks, roots, timeout_s=timeout_s, memory_mb=memory_mb)
    if cache is not None:
        size = {"nodes": result.size.nodes, "classes": result.size.classes} if result.size else None
        cache.put(key, {"terms": list(result.terms), "costs": list(result.costs), "size": size})
    return result
