"""The spare egglog child (select/spare.py ``start_spare``): started before
the command line loads, taken by the compile that saturates, stopped when
nothing takes it."""

from __future__ import annotations

import os
import subprocess
import threading

import pytest

from hardboiled.cli.direct import _may_saturate
from hardboiled.select import eqsat
from hardboiled.select import spare as spares
from hardboiled.select.options import DEFAULT_MEMORY_MB
from hardboiled.select.rule_files import prestart_rules, rule_file_chunks
from hardboiled.support import children


@pytest.fixture(autouse=True)
def _no_children_left():
    eqsat.discard_prestarted()
    spares.discard_spare()
    yield
    eqsat.discard_prestarted()
    spares.discard_spare()


def _started_spare() -> spares.Spare:
    """Start the spare as ``direct.main`` does; it must be there."""
    spares.start_spare()
    assert spares._spare is not None
    return spares._spare


def test_the_compile_that_saturates_takes_the_spare_and_starts_no_other_child() -> None:
    spare = _started_spare()
    prestart_rules()
    assert spares._spare is None and eqsat._warm is not None
    assert eqsat._warm.proc is spare.proc and spare.proc.poll() is None
    # The thread PR_SET_PDEATHSIG ties it to, and its start, are the spare's.
    assert eqsat._warm.thread is threading.main_thread() and eqsat._warm.started == spare.started


def test_a_spare_is_started_only_on_the_main_thread() -> None:
    """A thread's spare would die with that thread, under another thread's
    compile."""
    thread = threading.Thread(target=spares.start_spare)
    thread.start()
    thread.join()
    assert spares._spare is None


def test_a_compile_on_another_thread_takes_the_main_threads_spare_and_keeps_it() -> None:
    spare = _started_spare().proc
    thread = threading.Thread(target=prestart_rules)
    thread.start()
    thread.join()
    assert eqsat._warm is not None and eqsat._warm.proc is spare
    assert eqsat._warm.serves(rule_file_chunks(), DEFAULT_MEMORY_MB)  # its thread, the main one, lives on


def test_a_second_start_keeps_the_first_spare() -> None:
    first = _started_spare().proc
    spares.start_spare()
    assert spares._spare is not None and spares._spare.proc is first


def test_a_compile_at_another_memory_limit_stops_the_spare_and_starts_its_own() -> None:
    spare = _started_spare().proc
    prestart_rules(DEFAULT_MEMORY_MB // 2)
    assert eqsat._warm is not None and eqsat._warm.proc is not spare
    assert spare.returncode is not None  # stopped and waited for
    assert eqsat._warm.memory_mb == DEFAULT_MEMORY_MB // 2


def test_a_spare_no_compile_took_is_stopped_at_exit() -> None:
    spare = _started_spare().proc
    eqsat._discard_children()
    assert spares._spare is None and spare.returncode is not None
    assert spare not in children._live


def test_a_command_that_does_not_saturate_stops_its_spare_when_it_ends(tmp_path, monkeypatch) -> None:
    """A usage error (here: no such input) ends the command with the spare unused."""
    from hardboiled.cli import direct

    started = []
    real_start = spares.start_spare

    def recording_start() -> None:
        real_start()
        started.append(spares._spare)

    monkeypatch.setattr(spares, "start_spare", recording_start)
    with pytest.raises(SystemExit) as exit:
        direct.main(["compile", str(tmp_path / "missing.stmt"), "--no-cache", "-q"])
    assert exit.value.code != 0
    assert started and started[0] is not None
    assert spares._spare is None and started[0].proc.returncode is not None


def test_a_spare_that_cannot_be_started_costs_nothing_but_the_try(monkeypatch) -> None:
    """A failure to start it (here: the preexec step raises, as a child out of
    memory between fork and exec would) is no error: prestart starts a child."""
    def failing_spawn(memory_mb: int):
        raise subprocess.SubprocessError("Exception occurred in preexec_fn.")

    monkeypatch.setattr(spares, "spawn", failing_spawn)
    spares.start_spare()
    assert spares._spare is None


def test_a_spare_inherited_through_a_fork_is_left_to_its_owner() -> None:
    started = _started_spare()
    spare = started.proc
    started.owner += 1  # as a forked worker sees its parent's spare
    assert spares.take_spare(DEFAULT_MEMORY_MB) is None
    assert spare.poll() is None and spare.stdin is not None and spare.stdin.closed
    assert spare not in children._live  # an interrupt in the worker leaves it to its owner
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
    spare = _started_spare()
    assert spare.owner == os.getpid() and spare.proc in children._live


def test_the_spare_starts_before_the_selector_s_modules_load() -> None:
    """What the command imports before it starts the spare is the standard
    library's subprocess and ctypes and a few small modules of ours, not
    eqsat.py's (a static figure: which modules, not how long)."""
    import sys

    probe = (
        "import sys, subprocess\n"
        "from hardboiled.select import spare\n"
        "started = []\n"
        "real = spare.spawn\n"
        "spare.spawn = lambda mb: started.append(sorted(m for m in sys.modules if m.startswith('hardboiled.')"
        " or m in ('dataclasses', 'typing', 'pathlib', 'json'))) or real(mb)\n"
        "spare.start_spare()\n"
        "spare.discard_spare()\n"
        "print(started)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    loaded = eval(result.stdout)[0]  # noqa: S307 - our own probe's list of names
    assert "hardboiled.select.eqsat" not in loaded
    assert not {"dataclasses", "typing", "pathlib", "json"} & set(loaded), loaded
