"""A program runs the rulesets and the hardware facts of the accelerators
its stores use, no others (select/rules.py, ``schedule_for`` and
``rule_chunks``): what the rest would find, no store could use."""

from __future__ import annotations

import random
import re

import pytest

from hardboiled.ir.printer import print_ir
from hardboiled.select import rules, selector
from hardboiled.select.rounds import schedule_parts
from hardboiled.select.rule_files import RULE_FILE_ACCELERATORS, rule_text
from hardboiled.select.rules import ACCELERATORS, Schedule, check_schedule, load_schedule, rule_chunks, schedule_for

from ..conftest import FIXTURES, MANIFEST, run_cli
from .test_select import _select, _store_in

_DECLARED = re.compile(r"\(ruleset\s+([A-Za-z0-9_\-]+)\)")
RULESETS = {accelerator: {m.group(1) for name, a in RULE_FILE_ACCELERATORS.items() if a == accelerator
                          for m in _DECLARED.finditer(rule_text(name))} for accelerator in sorted(ACCELERATORS)}
SHARED = ["supporting", "axioms"]
SUBSETS = [frozenset(), frozenset({"AMX"}), frozenset({"WMMA"}), ACCELERATORS]


def _runs(text: str) -> list[str]:
    return re.findall(r"\(run\s+([A-Za-z0-9_\-]+)", text.split(";; not run:")[0])


def _tokens(text: str) -> list[tuple[int, int, str]]:
    """Every token outside comments, with its line and column."""
    found = []
    for number, line in enumerate(text.split("\n"), 1):
        code = line.split(";", 1)[0]
        found += [(number, m.start(), m.group()) for m in re.finditer(r"[()]|[^\s()]+", code)]
    return found


def _idle(accelerators: frozenset[str]) -> set[str]:
    return {r for a, names in RULESETS.items() if a not in accelerators for r in names}


def _check_scoped(original: Schedule, accelerators: frozenset[str]) -> Schedule:
    """What every scoped schedule must be: the original's runs less the idle
    ones, in order; every token kept where it was in the file; no
    combinator left without a schedule; a schedule file that passes the
    check, when it runs anything."""
    scoped = schedule_for(original, accelerators)
    idle = _idle(accelerators)
    assert _runs(scoped.text) == [r for r in _runs(original.text) if r not in idle]
    assert set(_tokens(scoped.text)) <= set(_tokens(original.text))
    assert not re.search(r"\((repeat\s+\S+|saturate|seq|run-schedule)\s*\)", scoped.text)
    if _runs(scoped.text):
        check_schedule(scoped.text, "scoped.egg")
    if not idle & set(_runs(original.text)):
        assert scoped == original
    return scoped


@pytest.mark.parametrize("accelerators", SUBSETS, ids=lambda s: "+".join(sorted(s)) or "none")
def test_the_default_schedule_runs_the_rulesets_of_the_accelerators_in_use(accelerators: frozenset[str]) -> None:
    default = load_schedule(None, None)
    scoped = _check_scoped(default, accelerators)
    assert set(_runs(scoped.text)) == set(SHARED) | {r for a in accelerators for r in RULESETS[a]}
    # The child still runs the repeat round by round, to its fixpoint.
    form = scoped.text[scoped.text.index("(run-schedule"):].split(";; not run")[0]
    parts = schedule_parts(form)
    assert parts is not None and [rounds for _, rounds in parts] == [default.iterations]


def _drawn_schedule(rng: random.Random, depth: int = 0) -> str:
    every = SHARED + sorted(r for names in RULESETS.values() for r in names)
    if depth > 2 or rng.random() < 0.45:
        return f"(run {rng.choice(every)})"
    head = rng.choice(["repeat", "saturate", "seq"])
    count = f" {rng.randint(1, 9)}" if head == "repeat" else ""
    inner = "\n  ".join(_drawn_schedule(rng, depth + 1) for _ in range(rng.randint(1, 4)))
    return f"({head}{count}\n  {inner})"


@pytest.mark.parametrize("seed", range(40))
def test_drawn_schedules_lose_only_the_idle_runs(seed: int) -> None:
    rng = random.Random(seed)
    forms = [f"(run-schedule {_drawn_schedule(rng)} {_drawn_schedule(rng)})" if rng.random() < 0.8
             else f"(run {rng.choice(sorted(RULESETS[rng.choice(sorted(ACCELERATORS))]))} {rng.randint(1, 5)})"
             for _ in range(rng.randint(1, 3))]
    text = ";; drawn\n" + "\n".join(forms) + "\n"
    check_schedule(text, "drawn.egg")
    for accelerators in SUBSETS:
        _check_scoped(Schedule(text, "drawn.egg", 20), accelerators)


def test_a_program_holds_the_facts_of_its_accelerators_alone() -> None:
    for accelerators in SUBSETS:
        facts = rule_chunks(accelerators=accelerators)[-1]
        assert facts.filename == "<hardware facts>"
        assert ("(amx-element" in facts.text) == ("AMX" in accelerators)
        assert ("(wmma-shape" in facts.text) == ("WMMA" in accelerators)
    # The rule files themselves are the same for every program: a prestarted child serves any.
    assert rule_chunks(accelerators=frozenset({"AMX"}))[:-1] == rule_chunks()[:-1]


CASES = ["amx_bf16_matmul_std_tiled", "amx_bf16_vnni_preload_b", "amx_u8i8_matmul_vnni_tiled", "wmma_conv2d",
         "wmma_dct16", "wmma_int8_matmul"]


@pytest.mark.parametrize("case", CASES)
def test_the_other_accelerator_s_rules_change_no_selection(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With every accelerator's rulesets and facts (as before they were
    scoped), each store is selected the same, in a larger e-graph."""
    scoped = _select(case, store_in=_store_in(case))
    used: list[frozenset[str]] = []
    saturate = rules.saturate

    def everything(*args, **kwargs):  # type: ignore[no-untyped-def]
        used.append(kwargs["accelerators"])
        return saturate(*args, **{**kwargs, "accelerators": ACCELERATORS})

    monkeypatch.setattr(selector, "saturate", everything)
    unscoped = _select(case, store_in=_store_in(case))
    assert used and all(u == {MANIFEST[case]["accelerator"].upper()} for u in used)
    assert print_ir(unscoped.stmt) == print_ir(scoped.stmt)
    assert [r.intrinsics for r in unscoped.reports] == [r.intrinsics for r in scoped.reports]
    assert scoped.egraph is not None and unscoped.egraph is not None
    assert scoped.egraph.nodes < unscoped.egraph.nodes


@pytest.mark.parametrize("case", ["amx_bf16_matmul_std_single", "wmma_conv1d"])
def test_emit_egg_shows_the_program_of_one_accelerator(case: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``--emit egg`` is the program as it runs: the facts and the schedule's
    runs of the accelerator the fixture uses, a comment naming what was left out."""
    accelerator = MANIFEST[case]["accelerator"]
    other = "wmma" if accelerator == "amx" else "amx"
    store_in = [f"--store-in={b}={m}" for b, m in _store_in(case).items()]
    result = run_cli("compile", str(FIXTURES / case / "vectorizing.stmt"), *store_in, "--no-cache", "-q",
                     "--emit", "egg", "-o", str(tmp_path / "p.egg"))
    assert result.returncode == 0, result.stderr.decode()
    program = (tmp_path / "p.egg").read_text()
    schedule = program[program.index(";;;; schedule"):]
    assert f"({accelerator}-" in program.split(";;;; <hardware facts>")[1].split(";;;; stores")[0]
    assert f"({other}-" not in program.split(";;;; <hardware facts>")[1].split(";;;; stores")[0]
    assert f"(run {accelerator}-layouts)" in schedule and f"(run {other}-" not in schedule
    assert f";; not run: the rulesets of {other.upper()}" in schedule


def test_a_schedule_file_with_windows_line_endings_keeps_them() -> None:
    text = ";; crlf\r\n(run-schedule\r\n  (run axioms)\r\n  (run wmma-layouts)\r\n  (run amx-layouts))\r\n"
    scoped = schedule_for(Schedule(text, "crlf.egg", 20), frozenset({"AMX"}))
    assert "\n" not in scoped.text.replace("\r\n", "")
    body = scoped.text.split(";; not run")[0]
    assert body.count("\r\n") == text.count("\r\n") + 1  # and one before the closing comment
    assert _runs(scoped.text) == ["axioms", "amx-layouts"] and " \r\n" not in body
