"""The spare egglog child (select/eqsat.py ``start_spare``): started before
the command line loads, taken by the compile that saturates, stopped when
nothing takes it."""

from __future__ import annotations

import os

import pytest

from hardboiled.cli.direct import _may_saturate
from hardboiled.select import eqsat
from hardboiled.select.options import DEFAULT_MEMORY_MB
from hardboiled.select.rule_files import prestart_rules


@pytest.fixture(autouse=True)
def _no_children_left():
    eqsat.discard_prestarted()
    eqsat._take_spare(-1)
    yield
    eqsat.discard_prestarted()
    eqsat._take_spare(-1)


def test_the_compile_that_saturates_takes_the_spare_and_starts_no_other_child() -> None:
    eqsat.start_spare()
    assert eqsat._spare is not None
    spare = eqsat._spare[0]
    prestart_rules()
    assert eqsat._spare is None and eqsat._warm is not None
    assert eqsat._warm.proc is spare and spare.poll() is None


def test_a_second_start_keeps_the_first_spare() -> None:
    eqsat.start_spare()
    assert eqsat._spare is not None
    first = eqsat._spare[0]
    eqsat.start_spare()
    assert eqsat._spare is not None and eqsat._spare[0] is first


def test_a_compile_at_another_memory_limit_stops_the_spare_and_starts_its_own() -> None:
    eqsat.start_spare()
    assert eqsat._spare is not None
    spare = eqsat._spare[0]
    prestart_rules(DEFAULT_MEMORY_MB // 2)
    assert eqsat._warm is not None and eqsat._warm.proc is not spare
    assert spare.returncode is not None  # stopped and waited for
    assert eqsat._warm.memory_mb == DEFAULT_MEMORY_MB // 2


def test_a_spare_no_compile_took_is_stopped_at_exit() -> None:
    eqsat.start_spare()
    assert eqsat._spare is not None
    spare = eqsat._spare[0]
    eqsat._discard_children()
    assert eqsat._spare is None and spare.returncode is not None


def test_a_spare_inherited_through_a_fork_is_left_to_its_owner() -> None:
    eqsat.start_spare()
    assert eqsat._spare is not None
    spare, owner = eqsat._spare
    eqsat._spare = (spare, owner + 1)  # as a forked worker sees its parent's spare
    assert eqsat._take_spare(DEFAULT_MEMORY_MB) is None
    assert spare.poll() is None and spare.stdin is not None and spare.stdin.closed
    spare.kill()
    spare.wait()


@pytest.mark.parametrize(("argv", "expected"), [
    (["compile", "in.log"], True),
    (["compile", "in.log", "--no-cache", "-o", "out.stmt"], True),
    (["compile", "--help"], False),
    (["compile", "in.log", "-h"], False),
    (["compile", "in.log", "--egglog-memory", "512"], False),
    (["compile", "in.log", "--egglog-memory=512"], False),
    (["parse", "in.log"], False),
    ([], False),
])
def test_only_a_compile_at_the_default_memory_limit_starts_a_spare(argv: list[str], expected: bool) -> None:
    assert _may_saturate(argv) is expected


def test_the_spare_is_this_processs_child() -> None:
    eqsat.start_spare()
    assert eqsat._spare is not None
    assert eqsat._spare[1] == os.getpid()
