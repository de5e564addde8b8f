"""Each rule file has its own egglog tests (tests/rules/<file>.egg):
``check`` for what must fire and ``(fail (check ...))`` for what must not.

A test file runs after the rule files it builds on, in the order the
selector loads them, so the rules are tested exactly as they run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hardboiled.select.eqsat import EgglogError, ProgramChunk, run_egglog
from hardboiled.select.rules import RULE_FILES, rule_chunks

from .conftest import ROOT

TESTS = ROOT / "tests" / "rules"


def _chunks_through(rule_file: str) -> list[ProgramChunk]:
    """The selector's rule files up to and including ``rule_file``, then
    the hardware facts (which follow the rules in the selector's program),
    once supporting.egg has declared their relations."""
    chunks = rule_chunks()
    last = next(i for i, c in enumerate(chunks) if c.filename == f"rules/{rule_file}")
    supporting = next(i for i, c in enumerate(chunks) if c.filename == "rules/supporting.egg")
    facts = next(c for c in chunks if c.filename == "<hardware facts>")
    return [*chunks[: last + 1], facts] if last >= supporting else chunks[: last + 1]


@pytest.mark.parametrize("rule_file", RULE_FILES)
def test_rule_file_has_tests(rule_file: str) -> None:
    assert (TESTS / rule_file).is_file(), f"tests/rules/{rule_file} is missing"


@pytest.mark.parametrize("rule_file", RULE_FILES)
def test_rule_file_checks(rule_file: str) -> None:
    test = TESTS / rule_file
    text = test.read_text()
    assert "(check" in text and "(fail (check" in text, "both kinds of check are required"
    chunks = _chunks_through(rule_file)
    chunks.append(ProgramChunk(f"tests/rules/{rule_file}", text))
    run_egglog(chunks, [], measure_size=False)


def test_a_failing_check_is_reported_with_its_location(tmp_path: Path) -> None:
    chunks = _chunks_through("axioms.egg")
    chunks.append(ProgramChunk("wrong.egg", "(let $x (IntImm (Ty (IntT) 32 1) 1))\n(check (= $x (IntImm (Ty (IntT) 32 1) 2)))\n"))
    with pytest.raises(EgglogError) as info:
        run_egglog(chunks, [], measure_size=False)
    diagnostic = info.value.diagnostic
    assert diagnostic.location is not None and diagnostic.location.filename == "wrong.egg"
    assert diagnostic.location.line == 2
    assert "Check failed" in diagnostic.message


def test_a_prestarted_child_runs_the_rest_of_the_program_and_a_stale_one_is_replaced() -> None:
    """The egglog child started early on the rule files (compile_text does
    it before loading the pipeline) answers exactly as a cold one; a child
    prestarted on other chunks is killed and a fresh one runs the whole
    program; one nobody used is stopped."""
    from hardboiled.select import eqsat
    from hardboiled.select.rule_files import prestart_rules, rule_file_chunks

    chunks = rule_chunks()
    probe = ProgramChunk("probe.egg", "(let $x (IntImm (Ty (IntT) 32 1) 1))\n")
    cold = run_egglog([*chunks, probe], ["$x"], measure_size=False)
    prestart_rules()
    warm_child = eqsat._warm
    assert warm_child is not None and warm_child.serves(chunks, eqsat.DEFAULT_MEMORY_MB)
    warm = run_egglog([*chunks, probe], ["$x"], measure_size=False)
    assert eqsat._warm is None and warm_child.proc.returncode == 0
    assert warm.terms == cold.terms and warm.costs == cold.costs
    eqsat.prestart(rule_file_chunks()[:1])  # another prelude: not this program's first chunks
    stale = eqsat._warm
    assert stale is not None and not stale.serves([probe], eqsat.DEFAULT_MEMORY_MB)
    assert run_egglog([*chunks, probe], ["$x"], measure_size=False).terms == cold.terms
    assert stale.proc.returncode is not None  # killed, not left behind
    prestart_rules()
    unused = eqsat._warm
    eqsat.discard_prestarted()
    assert unused is not None and unused.proc.returncode is not None and eqsat._warm is None
