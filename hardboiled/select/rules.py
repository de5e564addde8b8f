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
    run_egglog_side_by_side,
)
from hardboiled.select.extract import ACCELERATOR_MEMORY, ScopeGroup
from hardboiled.select.facts import amx_facts, wmma_facts
from hardboiled.select.rounds import COMBINATORS
from hardboiled.select.rule_files import RULE_FILE_ACCELERATORS, rule_file_chunks
from hardboiled.select.rule_files import RULE_FILES as RULE_FILES  # re-exported
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
facts stay in one scope (``scope_groups`` in select/extract.py)."""
ITERATIONS_PLACEHOLDER = "@ITERATIONS@"
MAX_ITERATIONS = 1_000_000
"""The most --iterations may ask for: a count egglog reads (a 64-bit
integer) whether or not the program's schedule still runs it."""
ACCELERATORS = frozenset(ACCELERATOR_MEMORY.values())
"""Every accelerator the rules select for: what a program whose stores are
not known (the rules' own tests, ``hardboiled rules``) is given."""


@dataclass(frozen=True, slots=True)
class Schedule:
    """The effective rule schedule, as egglog text."""

    text: str
    source: str
    """Where it came from: "default" or a file name."""
    iterations: int


def rule_chunks(window_shape: WMMAShape | None = None, accelerators: frozenset[str] = ACCELERATORS,
                ) -> list[ProgramChunk]:
    """The rule files, then the hardware facts of ``accelerators`` (facts
    only: they may come after the rules, which fire when the schedule runs;
    the rule files come first, the same for every program, so that a
    prestarted child has run them already)."""
    chunks = rule_file_chunks()
    facts = (amx_facts() if "AMX" in accelerators else "") + \
        (wmma_facts(window_shape=window_shape) if "WMMA" in accelerators else "")
    chunks.append(ProgramChunk("<hardware facts>", facts))
    return chunks


def schedule_for(schedule: Schedule, accelerators: frozenset[str]) -> Schedule:
    """``schedule`` without running the rulesets of the accelerators none of
    the program's stores uses: their rules would look for operands and
    products of that accelerator in every store (a WMMA layout rule matches
    an AMX matmul's loads as readily as a WMMA one's), and no store could
    use what they find; without that accelerator's hardware facts
    (``rule_chunks``) the rest of them cannot match at all. Each run of
    such a ruleset, and each combinator left with nothing to run, is blanked
    where it stands, so that egglog's positions stay those of the file."""
    idle = _rulesets_of({name for name, accelerator in RULE_FILE_ACCELERATORS.items()
                         if accelerator not in accelerators})
    if not idle:
        return schedule
    text = schedule.text
    blanks: list[tuple[int, int]] = []
    for form in _read_forms(text, schedule.source):
        _idle_runs(form, idle, blanks)
    if not blanks:
        return schedule
    characters = list(text)
    for start, end in blanks:
        characters[start:end] = [c if c in "\r\n" else " " for c in characters[start:end]]
    kept = _TRAILING_SPACES.sub("", "".join(characters))  # line endings as the file has them
    left_out = sorted(ACCELERATORS - accelerators)
    newline = "\r\n" if "\r\n" in text else "\n"
    return Schedule(f"{kept}{newline};; not run: the rulesets of {', '.join(left_out)}, whose memory no store uses "
                    f"({', '.join(sorted(idle))}){newline}", schedule.source, schedule.iterations)


_TRAILING_SPACES = re.compile(r"[ \t]+(?=\r?\n|\Z)")


def _idle_runs(form: _Form, idle: frozenset[str], blanks: list[tuple[int, int]]) -> bool:
    """Whether ``form`` runs nothing but ``idle`` rulesets (the ruleset a
    run names; every schedule of a combinator); the spans of its parts that
    do are added to ``blanks`` (the whole form's, where it does)."""
    head = _head(form)
    if not isinstance(form.items, tuple) or (head != "run" and head != "run-schedule" and head not in COMBINATORS):
        return False
    if head == "run":
        idle_form = len(form.items) > 1 and form.items[1].items in idle
    else:
        counts = COMBINATORS.get(head or "", 0)
        schedules = form.items[1 + counts:]
        inner: list[tuple[int, int]] = []
        idle_form = bool(schedules) and all([_idle_runs(s, idle, inner) for s in schedules])
        if not idle_form:
            blanks.extend(inner)
    if idle_form:
        blanks.append((form.offset, form.end))
    return idle_form


def _rulesets_of(files: set[str]) -> frozenset[str]:
    """The rulesets that ``files`` (rule file names) declare."""
    return frozenset(m.group(1) for name in RULE_FILES if name in files for m in _DECLARED_RE.finditer(rule_text(name)))


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
    if count > MAX_ITERATIONS:
        raise InputError(Diagnostic("error", f"--iterations must be at most {MAX_ITERATIONS}, not {count}",
                                    notes=("a schedule repeats until a round changes nothing: "
                                           "the default 20 rounds is more than the fixtures ever need",)))
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
        check_schedule(template, path)
    return Schedule(template.replace(ITERATIONS_PLACEHOLDER, str(count)), source, count)


_TOKEN_RE = re.compile(r"\s+|;[^\n]*|\(|\)|[^\s();]+")
_COUNT_RE = re.compile(r"[0-9]{1,18}")
SCHEDULE_FORMS = ("(run-schedule S...) where S is (run RULESET), (repeat N S...), (saturate S...) or (seq S...); "
                  "(run RULESET N); N is a positive integer or @ITERATIONS@")


@dataclass(frozen=True, slots=True)
class _Form:
    """An s-expression of a schedule file: an atom's text, or a list."""

    items: tuple[_Form, ...] | str
    offset: int
    end: int


def check_schedule(text: str, path: str) -> None:
    """A schedule file is untrusted input (docs/security.md): it may only
    combine the shipped rulesets (``SCHEDULE_FORMS``). Declaring rules,
    ``include``-ing files, or any other egglog command is an input error
    located at the form, before egglog sees anything."""
    known = {m.group(1) for name in RULE_FILES for m in _DECLARED_RE.finditer(rule_text(name))}
    forms = _read_forms(text, path)
    if not forms:
        raise _schedule_error(text, path, 0, "a schedule file must contain a (run-schedule ...) or (run ...) command")
    for form in forms:
        head = _head(form)
        if head == "run-schedule" and isinstance(form.items, tuple) and len(form.items) > 1:
            for schedule in form.items[1:]:
                _check_combinator(schedule, known, text, path)
        elif head == "run":
            _check_run(form, known, text, path, top_level=True)
        else:
            raise _schedule_error(text, path, form.offset, "a schedule file may only run the shipped rulesets",
                                  known)


def _check_combinator(form: _Form, known: set[str], text: str, path: str) -> None:
    head = _head(form)
    if head == "run":
        _check_run(form, known, text, path, top_level=False)
        return
    if head not in COMBINATORS or not isinstance(form.items, tuple):
        raise _schedule_error(text, path, form.offset, "not a schedule: expected run, repeat, saturate or seq",
                              known)
    counts = COMBINATORS[head]
    rest = form.items[1 + counts:]
    for count in form.items[1:1 + counts]:
        _check_count(count, text, path)
    if len(form.items) < 1 + counts or not rest:
        raise _schedule_error(text, path, form.offset, f"({head} ...) needs {'a count and ' if counts else ''}"
                              "at least one schedule", known)
    for schedule in rest:
        _check_combinator(schedule, known, text, path)


def _check_run(form: _Form, known: set[str], text: str, path: str, top_level: bool) -> None:
    assert isinstance(form.items, tuple)
    arguments = form.items[1:]
    if not arguments or len(arguments) > (2 if top_level else 1):
        raise _schedule_error(text, path, form.offset, "expected (run RULESET)" + (" or (run RULESET N)"
                                                                                  if top_level else ""), known)
    ruleset = arguments[0]
    if not isinstance(ruleset.items, str) or ruleset.items not in known:
        shown = ruleset.items if isinstance(ruleset.items, str) else "(...)"
        raise _schedule_error(text, path, ruleset.offset, f"the schedule runs an unknown ruleset '{shown}'", known)
    for count in arguments[1:]:
        _check_count(count, text, path)


def _check_count(form: _Form, text: str, path: str) -> None:
    if form.items == ITERATIONS_PLACEHOLDER or (isinstance(form.items, str) and _COUNT_RE.fullmatch(form.items)
                                                and int(form.items) > 0):
        return
    raise _schedule_error(text, path, form.offset, "expected a count: a positive integer or @ITERATIONS@")


def _head(form: _Form) -> str | None:
    if isinstance(form.items, tuple) and form.items and isinstance(form.items[0].items, str):
        return form.items[0].items
    return None


def _read_forms(text: str, path: str) -> list[_Form]:
    """The top-level forms, with each form's offset in ``text``."""
    stack: list[tuple[int, list[_Form]]] = []
    top: list[_Form] = []
    for match in _TOKEN_RE.finditer(text):
        token = match.group()
        if token[0].isspace() or token[0] == ";":
            continue
        if token == "(":
            stack.append((match.start(), []))
        elif token == ")":
            if not stack:
                raise _schedule_error(text, path, match.start(), "unbalanced ')'")
            start, items = stack.pop()
            (stack[-1][1] if stack else top).append(_Form(tuple(items), start, match.end()))
        elif stack:
            stack[-1][1].append(_Form(token, match.start(), match.end()))
        else:
            raise _schedule_error(text, path, match.start(), f"unexpected '{token}' outside a form")
    if stack:
        raise _schedule_error(text, path, stack[-1][0], "unbalanced '(': the form is not closed")
    return top


def _schedule_error(text: str, path: str, offset: int, message: str, known: set[str] | None = None) -> InputError:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    notes = [f"a schedule file may contain: {SCHEDULE_FORMS}"]
    if known is not None:
        notes.append("rulesets: " + ", ".join(sorted(known)))
    return InputError(Diagnostic("error", message, Location(path, line, column, text.split("\n")[line - 1]),
                                 notes=tuple(notes)))


_DECLARED_RE = re.compile(r"\(ruleset\s+([A-Za-z_][A-Za-z0-9_\-]*)\)")


def program_text(terms: list[str], schedule: Schedule, window_shape: WMMAShape | None = None,
                 groups: list[ScopeGroup] | None = None, accelerators: frozenset[str] = ACCELERATORS) -> str:
    """The whole egglog program, as it runs (``--emit egg``): the rules, then
    each group of stores in a scope of its own. ``accelerators``: those the
    stores use (``saturate``)."""
    parts = [f";;;; {c.filename}\n{c.text}" for c in rule_chunks(window_shape, accelerators)]
    schedule = schedule_for(schedule, accelerators)
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


def side_by_side(scopes: tuple[Scope, ...], jobs: int) -> list[tuple[Scope, ...]]:
    """The scopes in at most ``jobs`` runs of consecutive scopes with about
    as much program text each: what each child saturates."""
    count = max(1, min(jobs, len(scopes)))
    sizes = [sum(len(chunk.text) for chunk in scope.chunks) for scope in scopes]
    total = sum(sizes) or 1
    batches: list[tuple[Scope, ...]] = []
    start = done = 0
    for index, size in enumerate(sizes):
        if len(batches) == count - 1:
            break
        done += size
        # Close the batch here once it holds its share, or where every
        # batch still to come needs one of the scopes left.
        if done * count >= total * (len(batches) + 1) or len(scopes) - index - 1 == count - 1 - len(batches):
            batches.append(scopes[start:index + 1])
            start = index + 1
    batches.append(scopes[start:])
    return [batch for batch in batches if batch]


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
    jobs: int = 1,
    accelerators: frozenset[str] = ACCELERATORS,
) -> EqsatResult:
    """Run the rules on the encoded stores; ``cache`` skips a run whose whole
    program was seen before. ``window_shape``: the fragment shape for
    sliding windows (the cost model's choice for these stores). ``groups``:
    the stores (indices into ``terms``, each extracted from one group)
    saturated in each (push)/(pop) scope; by default one scope holds them
    all. ``jobs``: how many egglog children may saturate the scopes side
    by side. ``accelerators``: those whose memory the stores use; only
    their hardware facts and rulesets take part (``schedule_for``). The
    terms come back in the order of ``terms``."""
    chunks = rule_chunks(window_shape, accelerators)
    schedule = schedule_for(schedule, accelerators)
    groups = groups if groups is not None else [ScopeGroup(tuple(range(len(terms))))]
    scopes = tuple(_scope(terms, group, schedule) for group in groups if group.stores)
    key = _program_key(chunks, scopes) if cache is not None else ""
    if cache is not None and (cached := _cached_result(cache, key)) is not None:
        return cached
    result = _run_scopes(chunks, scopes, [i for group in groups for i in group.stores], schedule,
                         timeout_s, memory_mb, jobs)
    if cache is not None:
        _remember(cache, key, result)
    return result


def _program_key(chunks: list[ProgramChunk], scopes: tuple[Scope, ...]) -> str:
    """The cache key of the whole program: every chunk's text, and what it extracts."""
    return cache_key([c.text for c in chunks] + [c.text for s in scopes for c in s.chunks],
                     [r for s in scopes for r in s.roots])


def _cached_result(cache: ResultCache, key: str) -> EqsatResult | None:
    """The result of a run of the same program before, if the cache has one."""
    entry = cache.get(key, _ENTRY_SHAPE)
    if entry is None:
        return None
    size = entry.get("size")
    return EqsatResult(tuple(entry["terms"]), tuple(entry["costs"]),
                       EgraphSize(**size) if size else None, 0.0, {}, cached=True)


def _remember(cache: ResultCache, key: str, result: EqsatResult) -> None:
    """Keep ``result`` for the next run of the same program (in the shape _ENTRY_SHAPE checks)."""
    size = {"nodes": result.size.nodes, "classes": result.size.classes} if result.size else None
    cache.put(key, {"terms": list(result.terms), "costs": list(result.costs), "size": size})


def _run_scopes(chunks: list[ProgramChunk], scopes: tuple[Scope, ...], order: list[int], schedule: Schedule,
                timeout_s: float, memory_mb: int, jobs: int = 1) -> EqsatResult:
    """Saturate each scope in an egglog child (up to ``jobs`` children side
    by side); the terms come back in term order (``order``: the term of
    each extracted root, in scope order)."""
    try:
        return _in_term_order(run_egglog_side_by_side(chunks, side_by_side(scopes, jobs), timeout_s=timeout_s,
                                                      memory_mb=memory_mb), order)
    except EgglogError as exc:
        location = exc.diagnostic.location
        if schedule.source != "default" and location is not None and location.filename == schedule.source:
            raise InputError(exc.diagnostic) from None  # the user's schedule, not our rules
        raise
