"""Each rule file has its own egglog tests (tests/rules/<file>.egg):
``check`` for what must fire and ``(fail (check ...))`` for what must not.

A test file runs after the rule files it builds on, in the order the
selector loads them, so the rules are tested exactly as they run.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

from hardboiled import ir
from hardboiled.select.eqsat import EgglogError, ProgramChunk, run_egglog
from hardboiled.select.facts import amx_facts, wmma_facts
from hardboiled.select.rules import RULE_FILES, load_schedule, rule_chunks
from hardboiled.targets.amx import AMX_TILE, AMXDotProduct, AMXElement

from ..conftest import ROOT

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
    from hardboiled.select.rule_files import prestart_rules

    chunks = rule_chunks()
    probe = ProgramChunk("probe.egg", "(let $x (IntImm (Ty (IntT) 32 1) 1))\n")
    cold = run_egglog([*chunks, probe], ["$x"], measure_size=False)
    prestart_rules()
    warm_child = eqsat._warm
    assert warm_child is not None and warm_child.serves(chunks, eqsat.DEFAULT_MEMORY_MB)
    warm = run_egglog([*chunks, probe], ["$x"], measure_size=False)
    assert eqsat._warm is warm_child and warm_child.served == 1  # kept for the next compile
    eqsat.discard_prestarted()
    assert warm.terms == cold.terms and warm.costs == cold.costs
    eqsat.prestart([probe])  # another prelude: not this program's first chunks
    stale = eqsat._warm
    assert stale is not None and not stale.serves(chunks, eqsat.DEFAULT_MEMORY_MB)
    assert run_egglog([*chunks, probe], ["$x"], measure_size=False).terms == cold.terms
    assert stale.proc.returncode is not None  # killed, not left behind
    prestart_rules()
    unused = eqsat._warm
    prestart_rules()  # a child that serves the same rules is kept (the compile server's worker starts one ahead)
    assert eqsat._warm is unused and unused is not None and unused.proc.poll() is None
    eqsat.discard_prestarted()
    assert unused.proc.returncode is not None and eqsat._warm is None


def test_a_kept_child_answers_each_program_as_a_cold_child_does() -> None:
    """A child this thread started is kept after it answers: the next
    program that starts with the same rules is run in it, between (push)
    and (pop), and nothing of the programs before it is left in its
    e-graph (the size it measures counts every node)."""
    from hardboiled.select import eqsat
    from hardboiled.select.rule_files import prestart_rules

    chunks = rule_chunks()
    i32 = "(Ty (IntT) 32 1)"
    first = ProgramChunk("first.egg", f"(let $x (Bop (Add) (IntImm {i32} 1) (Var {i32} \"a\")))\n"
                                      f"(let $y (Bop (Mul) (IntImm {i32} 3) (Var {i32} \"b\")))\n"
                                      + load_schedule(None, 3).text)
    second = ProgramChunk("second.egg", f"(let $x (IntImm {i32} 7))\n")
    cold = [run_egglog([*chunks, program], ["$x"]) for program in (first, second)]
    eqsat.discard_prestarted()
    prestart_rules()
    child = eqsat._warm
    assert child is not None
    for program, expected in [(first, cold[0]), (second, cold[1]), (first, cold[0]), (second, cold[1])]:
        prestart_rules()  # as each compile does: the kept child serves
        assert eqsat._warm is child
        warm = run_egglog([*chunks, program], ["$x"])
        assert (warm.terms, warm.costs, warm.size) == (expected.terms, expected.costs, expected.size)
    assert child.served == 4 and child.proc.poll() is None
    eqsat.discard_prestarted()
    assert child.proc.returncode is not None


def test_a_kept_child_that_went_away_or_failed_is_replaced() -> None:
    """A kept child killed from outside is not reported as a failure: a
    fresh child runs the program. After an error the child is not kept."""
    import signal

    from hardboiled.select import eqsat
    from hardboiled.select.rule_files import prestart_rules

    chunks = rule_chunks()
    probe = ProgramChunk("probe.egg", "(let $x (IntImm (Ty (IntT) 32 1) 1))\n")
    prestart_rules()
    cold = run_egglog([*chunks, probe], ["$x"], measure_size=False)
    kept = eqsat._warm
    assert kept is not None and kept.served == 1
    kept.proc.send_signal(signal.SIGKILL)
    kept.proc.wait()
    eqsat._warm = kept  # as if it died just after prestart found it alive
    assert run_egglog([*chunks, probe], ["$x"], measure_size=False).terms == cold.terms
    prestart_rules()
    failing = eqsat._warm
    with pytest.raises(EgglogError):
        run_egglog([*chunks, ProgramChunk("wrong.egg", "(check (= 1 2))\n")], [], measure_size=False)
    assert eqsat._warm is None and failing is not None and failing.proc.returncode is not None


def test_a_child_nobody_prestarted_is_waited_for() -> None:
    """A run without a prestarted child (the API's) leaves no process, no
    pipe and no tracked child behind."""
    from hardboiled.select import eqsat
    from hardboiled.support import children

    eqsat.discard_prestarted()
    probe = ProgramChunk("probe.egg", "(let $x (IntImm (Ty (IntT) 32 1) 1))\n")
    run_egglog([*rule_chunks(), probe], ["$x"], measure_size=False)  # anything loaded once is loaded
    descriptors, tracked = len(os.listdir("/proc/self/fd")), set(children._live)
    for _ in range(3):
        run_egglog([*rule_chunks(), probe], ["$x"], measure_size=False)
    assert len(os.listdir("/proc/self/fd")) == descriptors and set(children._live) == tracked


def test_a_kept_child_whose_thread_ended_is_not_used_again() -> None:
    """PR_SET_PDEATHSIG kills a child when the thread that started it ends:
    a batch compiling on one thread keeps its child from input to input,
    and the next compile after that thread is gone starts another."""
    import threading

    from hardboiled.select import eqsat
    from hardboiled.select.rule_files import prestart_rules

    eqsat.discard_prestarted()
    probe = ProgramChunk("probe.egg", "(let $x (IntImm (Ty (IntT) 32 1) 1))\n")
    seen = []

    def batch_in_a_thread() -> None:
        for _ in range(2):
            prestart_rules()
            seen.append(eqsat._warm)
            run_egglog([*rule_chunks(), probe], ["$x"], measure_size=False)

    thread = threading.Thread(target=batch_in_a_thread)
    thread.start()
    thread.join()
    first, second = seen
    assert first is second and first is not None and first.served == 2
    prestart_rules()
    assert eqsat._warm is not first and first.proc.returncode is not None
    assert run_egglog([*rule_chunks(), probe], ["$x"], measure_size=False).terms
    eqsat.discard_prestarted()


# --------------------------------------------------------------------------
# The AMX rules take their hardware numbers from the facts of targets/amx.py
# --------------------------------------------------------------------------

_F64_PRODUCT = """
(let $i32 (Ty (IntT) 32 1))
(let $tile (Ramp (IntImm $i32 0) (IntImm $i32 1) 128))
(let $C (AMX2Mem (Load (Ty (FloatT) 64 128) "dd" $tile)))
(let $A (Load (Ty (BFloatT) 16 4096) "A"
              (Ramp (Broadcast (Ramp (IntImm $i32 0) (IntImm $i32 1) 32) 8) (Broadcast (Var $i32 "sa") 256) 16)))
(let $B (Load (Ty (BFloatT) 16 4096) "B"
              (Broadcast (Ramp (Ramp (IntImm $i32 0) (Var $i32 "sb") 32) (Broadcast (IntImm $i32 1) 32) 8) 16)))
(let $update (Store "dd" (Mem2AMX (Bop (Add) (VectorReduceAdd (Ty (FloatT) 64 128)
               (Bop (Mul) (Cast (Ty (FloatT) 64 4096) $A) (Cast (Ty (FloatT) 64 4096) $B))) $C)) $tile))
(let $zero (Store "dd" (Mem2AMX (Broadcast (FloatImm (Ty (FloatT) 64 1) 0) 128)) $tile))
(run-schedule (repeat 4 (saturate (run supporting)) (run axioms) (run amx-layouts) (run amx-lowering)))
"""
_F64_LOWERED = """
(check (= $update (Store "dd" (TileMatmul (Ty (FloatT) 64 128) 16 64 32 (Load (Ty (FloatT) 64 128) "dd" $tile) a b)
                         $tile)))
(check (= $zero (Store "dd" (TileZero (Ty (FloatT) 64 128) 16 64) $tile)))
"""
_F64_NOT_LOWERED = """
(fail (check (= $update (Store "dd" (TileMatmul t r c k acc a b) $tile))))
(fail (check (= $zero (Store "dd" (TileZero t r c) $tile))))
"""


def _run_with_amx_facts(facts: str, test: str) -> None:
    chunks = [c for c in rule_chunks() if c.filename != "<hardware facts>"]
    chunks.append(ProgramChunk("<hardware facts>", facts + wmma_facts()))
    chunks.append(ProgramChunk("test.egg", test))
    run_egglog(chunks, [], measure_size=False)


def test_the_amx_rules_take_the_accumulator_from_the_target_table() -> None:
    """A table whose bf16 products accumulate into float64 (8-byte
    elements): amx_facts writes it, and the same rules lower a bf16 product
    into a float64 tile of 16 rows of 8 x 8 bytes, and zero it; with the
    real table (float32 accumulators) they lower neither."""
    f64 = dataclasses.replace(
        AMX_TILE,
        elements=tuple(AMXElement(e.type, e.k_pack, ir.Float(64)) if e.type == ir.BFloat(16) else e
                       for e in AMX_TILE.elements),
        dot_products=tuple(AMXDotProduct(d.a, d.b, ir.Float(64), d.c_name) if d.a == ir.BFloat(16) else d
                           for d in AMX_TILE.dot_products),
    )
    assert "(amx-element (BFloatT) 16 2 2 (FloatT) 64 8)" in amx_facts(f64)
    _run_with_amx_facts(amx_facts(f64), _F64_PRODUCT + _F64_LOWERED)
    _run_with_amx_facts(amx_facts(), _F64_PRODUCT + _F64_NOT_LOWERED)


def test_amx_facts_come_from_the_table() -> None:
    """One amx-element fact per element of the table, with its accumulator's
    kind, bits and bytes, and the tile's limits."""
    facts = [line for line in amx_facts().splitlines() if not line.startswith(";")]
    elements = [line for line in facts if line.startswith("(amx-element ")]
    assert len(elements) == len(AMX_TILE.elements)
    for element, line in zip(AMX_TILE.elements, elements, strict=True):
        acc = element.accumulator
        assert line.endswith(f" {acc.bits} {acc.bytes})") and f" {element.k_pack} " in line
    assert f"(amx-limits {AMX_TILE.max_rows} {AMX_TILE.max_colbytes})" in facts


_CODE_NUMBER = re.compile(r"(?<![\w.-])-?\d+(?![\w.])")


@pytest.mark.parametrize("rule_file", ["supporting.egg", "amx_layouts.egg", "amx_lowering.egg"])
def test_the_amx_rules_hold_no_hardware_number(rule_file: str) -> None:
    """Every size of an AMX element, accumulator or tile comes from the
    facts: the code of the files with AMX rules holds only the 0 and 1 of
    identities (a zero, a unit stride, a scalar's lane count) and Halide's
    index type, (Ty (IntT) 32 1), of the offsets and strides they build."""
    code = "\n".join(line.split(";", 1)[0] for line in (ROOT / "rules" / rule_file).read_text().splitlines())
    code = re.sub(r'"[^"]*"', '""', code).replace("(IntImm (Ty (IntT) 32 1) ", "(IntImm INDEX-TYPE ")
    assert set(_CODE_NUMBER.findall(code)) <= {"0", "1"}


def test_a_command_s_batch_declares_the_rules_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command compiles its inputs on one thread (the deep-stack one):
    the egglog child it starts for the first input serves the others."""
    from hardboiled.cli.commands import main
    from hardboiled.select import eqsat

    from ..conftest import FIXTURES

    eqsat.discard_prestarted()
    spawned: list[int] = []
    spawn = eqsat.spawn
    monkeypatch.setattr(eqsat, "spawn", lambda memory_mb: spawned.append(memory_mb) or spawn(memory_mb))
    inputs = [str(FIXTURES / name / "vectorizing.stmt")
              for name in ("amx_bf16_matmul_std_single", "amx_bf16_matmul_vnni_single", "amx_bf16_std_ref")]
    with pytest.raises(SystemExit) as info:
        main.main(["compile", *inputs, "--no-cache", "-q", "-j", "1", "-o", str(tmp_path / "out")])
    eqsat.discard_prestarted()
    assert info.value.code == 0 and len(list((tmp_path / "out").iterdir())) == 3
    assert len(spawned) == 1
