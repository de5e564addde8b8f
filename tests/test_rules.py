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
    """The selector's chunks up to and including ``rule_file``."""
    chunks = rule_chunks()
    last = next(i for i, c in enumerate(chunks) if c.filename == f"rules/{rule_file}")
    # The hardware facts follow supporting.egg, which declares their relations.
    facts = next(i for i, c in enumerate(chunks) if c.filename == "<hardware facts>")
    return chunks[: max(last, facts) + 1] if last >= facts - 1 else chunks[: last + 1]


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
