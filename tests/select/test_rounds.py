"""A schedule's repeat runs round by round and stops at its fixpoint
(hardboiled/select/rounds.py, select/eqsat_child.py's ``_run_form``): the
e-graph it leaves, and so every extracted term, is the one egglog's own
``(repeat N ...)`` leaves, in fewer rounds."""

from __future__ import annotations

import random

import pytest

from hardboiled.select.eqsat import ProgramChunk, Scope, run_egglog
from hardboiled.select.rounds import schedule_parts
from hardboiled.select.rules import load_schedule


def test_the_default_schedule_is_one_repeat_read_in_place() -> None:
    schedule = load_schedule(None, 17).text
    start = schedule.index("(run-schedule")
    form = "\n" * 3 + schedule[start:]
    ((part, rounds),) = schedule_parts(form)  # type: ignore[misc]
    assert rounds == 17
    assert len(part) == len(form) and part.count("\n") == form.count("\n")  # egglog's positions stay
    assert "repeat" not in part and part.strip().startswith("(run-schedule")
    assert "(run amx-lowering)" in part


def test_each_part_of_a_schedule_runs_in_turn() -> None:
    form = "(run-schedule (run a) (repeat 3 (run b) (run c)) ; a comment\n (saturate (run d)))"
    parts = schedule_parts(form)
    assert parts is not None
    assert [rounds for _, rounds in parts] == [1, 3, 1]
    assert [" ".join(part.split()) for part, _ in parts] == [
        "(run-schedule (run a) )", "(run-schedule (run b) (run c) )", "(run-schedule (saturate (run d)))"]


@pytest.mark.parametrize("form", [
    "(rule ((= a b)) ((union a b)))", "(run-schedule", "(run-schedule)", '(run-schedule (run "a"))',
    "(run-schedule (run a)) (run b)",
    # not plain: the whole schedule runs as written
    "(run-schedule (repeat x (run a)))", "(run-schedule (repeat 2))", "(run-schedule (repeat \u00b2 (run a)))",
    "(run-schedule (repeat \u0663 (run a)))", "(run-schedule (repeat 3 (run a :until (stop)) (run c)))",
    "(run-schedule (let-scheduler bo (back-off)) (repeat 3 (run-with bo grow)))",
    "(run-schedule (repeat 3 (run a 2)))", "(run-schedule (repeat 3 (frobnicate (run a))))",
])
def test_any_other_form_is_left_to_egglog(form: str) -> None:
    assert schedule_parts(form) is None


_UNTIL = """
(relation p (i64)) (relation q (i64)) (relation stop ())
(p 1) (stop) (ruleset a) (ruleset c)
(rule ((p x)) ((q x)) :ruleset a)
(rule ((stop)) ((delete (stop))) :ruleset c)
(run-schedule (repeat 3 (run a :until (stop)) (run c)))
(check (q 1))
"""


def test_a_schedule_that_reads_the_whole_database_runs_all_its_rounds() -> None:
    """A round that only deletes reports no update, yet ``:until`` then
    reads a different database: such a schedule is egglog's to run (found
    by review)."""
    result = run_egglog([ProgramChunk("until.egg", _UNTIL)], [], measure_size=False)
    assert "rounds" not in result.run_report


_CHAIN = """
(datatype N (Num i64) (Done))
(ruleset grow)
(rule ((= x (Num n)) (< n LIMIT)) ((union x (Num (+ n 1)))) :ruleset grow)
(rule ((= x (Num LIMIT))) ((union x (Done))) :ruleset grow)
(let $x (Num 0))
"""


@pytest.mark.parametrize("seed", range(6))
def test_a_repeat_that_reaches_its_fixpoint_stops_there_with_egglogs_result(seed: int) -> None:
    """A chain that grows one link per round, and ends in a cheaper term
    once it is LIMIT long: a repeat of more rounds stops a round or two
    after that, and what it extracts is what egglog's own repeat extracts
    (here in a form this does not read, inside a ``seq``)."""
    rng = random.Random(seed)
    limit, repeat = rng.randrange(1, 12), rng.randrange(1, 25)
    program = ProgramChunk("chain.egg", _CHAIN.replace("LIMIT", str(limit)))
    ours = run_egglog([program, ProgramChunk("s.egg", f"(run-schedule (repeat {repeat} (run grow)))")], ["$x"],
                      measure_size=False)
    theirs = run_egglog([program, ProgramChunk("s.egg", f"(run-schedule (seq (repeat {repeat} (run grow))))")],
                        ["$x"], measure_size=False)
    assert ours.terms == theirs.terms and ours.costs == theirs.costs
    assert (ours.terms == ("(Done)",)) == (repeat > limit)
    assert min(repeat, limit + 1) <= ours.run_report["rounds"] <= min(repeat, limit + 2)
    assert theirs.run_report["rounds"] == 1  # egglog ran all its rounds itself


def test_iterations_past_the_limit_are_an_input_error() -> None:
    """egglog reads the count as a 64-bit integer, whether or not the
    program's schedule still runs it (an idle accelerator's run is blanked)."""
    import pytest

    from hardboiled.select.rules import MAX_ITERATIONS, load_schedule
    from hardboiled.support.diagnostics import InputError

    assert load_schedule(None, MAX_ITERATIONS).iterations == MAX_ITERATIONS
    with pytest.raises(InputError) as info:
        load_schedule(None, 10**20)
    assert "at most 1000000" in info.value.diagnostic.message



_SHARED = ProgramChunk("shared.egg", "(datatype E (Num i64) (Pair E E))\n(let $big (Pair (Num 1) (Pair (Num 2) (Num 3))))\n")
_MERGING = Scope((ProgramChunk("merge.egg", "(union $big (Num 7))\n"),), ("$big",))
_PLAIN = Scope((ProgramChunk("plain.egg", "(let $pair (Pair $big $big))\n"),), ("$big",))
_WHOLE, _SMALL = "(Pair (Num 1) (Pair (Num 2) (Num 3)))", "(Num 7)"


@pytest.mark.parametrize("kept", [False, True])
def test_no_scope_sees_what_an_earlier_one_added_and_a_kept_child_forgets_the_last(kept: bool) -> None:
    """Scopes run one after the other on the shared chunks; the last runs
    without a push of its own (eqsat_child._answer): nothing reads the
    e-graph after it but a kept child's next request, which starts from the
    shared chunks again."""
    from hardboiled.select import eqsat

    chunks = [_SHARED]
    if kept:
        eqsat.prestart(chunks)
    try:
        first = run_egglog(chunks, ["$big"], scopes=(_MERGING, _PLAIN, _MERGING))
        assert list(first.terms) == [_WHOLE, _SMALL, _WHOLE, _SMALL]
        again = run_egglog(chunks, ["$big"], scopes=(_PLAIN,))
        assert list(again.terms) == [_WHOLE, _WHOLE]
        if kept:  # the kept child answered both
            assert eqsat._warm is not None and eqsat._warm.served == 2
    finally:
        eqsat.discard_prestarted()
