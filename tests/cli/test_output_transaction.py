"""Issue 33, items 4-6: a run's outputs are one transaction. Names that
hardboiled chooses never write through a link planted there; something
other than a file in the way is an error, not a hang; an output that
cannot be written, or a signal, leaves every output as it was and no
temporary file behind."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from hardboiled.support import fileio

from ..conftest import CACHE_DIR, FIXTURES, HARDBOILED, run_cli

SOURCE = FIXTURES / "amx_bf16_matmul_std_tiled" / "vectorizing.stmt"


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob(".*.tmp"))


def test_the_header_beside_a_named_output_replaces_a_planted_link(tmp_path: Path) -> None:
    """``-o shared/k.c`` names k.c; k.h is hardboiled's name, so a link
    planted there is replaced, and what it points to is left alone."""
    shared = tmp_path / "shared"
    shared.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    (shared / "k.h").symlink_to(victim)
    result = run_cli("compile", str(SOURCE), "--emit", "c", "-o", str(shared / "k.c"), "-q", "--no-cache")
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "mine\n"
    assert not (shared / "k.h").is_symlink() and "#ifndef" in (shared / "k.h").read_text()


def test_the_api_replaces_a_planted_link_and_writes_all_or_nothing(tmp_path: Path) -> None:
    import hardboiled

    result = hardboiled.compile(SOURCE)
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / f"{result.name}.h").symlink_to(victim)
    written = result.write(out)
    assert victim.read_text() == "mine\n" and not written["h"].is_symlink()
    # A directory in the way of one output: a CompileError, and nothing
    # else is written.
    other = tmp_path / "other"
    (other / f"{result.name}.h").mkdir(parents=True)
    with pytest.raises(hardboiled.CompileError) as raised:
        result.write(other)
    assert raised.value.exit_code == 2 and "a directory is in the way" in str(raised.value)
    assert sorted(p.name for p in other.iterdir()) == [f"{result.name}.h"]


def test_a_fifo_in_the_output_directory_is_an_error_not_a_hang(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "vectorizing.c")
    start = time.monotonic()
    result = run_cli("compile", str(SOURCE), "--emit", "c,ir", "-o", str(out), "-q", "--no-cache")
    assert time.monotonic() - start < 60
    assert result.returncode == 2
    assert "something other than a file or a link is in the way (a FIFO); remove it" in result.stderr.decode()
    assert sorted(p.name for p in out.iterdir()) == ["vectorizing.c"]  # neither .stmt nor .h written


def test_a_fifo_the_user_names_is_written_when_read_and_an_error_when_not(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = run_cli("compile", str(SOURCE), "-o", str(fifo), "-q", "--no-cache")
    assert result.returncode == 2 and "a FIFO with no reader" in result.stderr.decode()
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    time.sleep(0.2)
    result = run_cli("compile", str(SOURCE), "-o", str(fifo), "-q", "--no-cache")
    out, _ = reader.communicate(timeout=60)
    assert result.returncode == 0 and b"tile_matmul" in out


def test_an_output_that_cannot_be_written_leaves_the_others_unchanged(tmp_path: Path) -> None:
    """The issue: a directory in the way of one output gave exit 2 with the
    other outputs already written."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "vectorizing.stmt").write_text("old\n")
    (out / "vectorizing.h").mkdir()
    result = run_cli("compile", str(SOURCE), "--emit", "c,ir", "-o", str(out), "-q", "--no-cache",
                     "--report-file", str(tmp_path / "report.json"))
    assert result.returncode == 2
    assert "vectorizing.h': a directory is in the way" in result.stderr.decode()
    assert (out / "vectorizing.stmt").read_text() == "old\n"
    assert not (out / "vectorizing.c").exists() and not (tmp_path / "report.json").exists()
    assert _leftovers(tmp_path) == []


def test_a_transaction_after_hold_commits_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fileio, "_commits_held", False)
    (tmp_path / "a").write_text("old a\n")
    outputs = fileio.OutputTransaction()
    outputs.add(str(tmp_path / "a"), "new a\n")
    outputs.add(str(tmp_path / "b"), "new b\n")
    assert len(_leftovers(tmp_path)) == 2
    fileio.hold_commits()
    with pytest.raises(fileio.CommitsHeld):
        outputs.commit()
    assert (tmp_path / "a").read_text() == "old a\n" and not (tmp_path / "b").exists()
    assert _leftovers(tmp_path) == []
    fileio.release_commits()  # the stopped compile has unwound: a process that goes on writes again
    fileio.write_output(str(tmp_path / "a"), "new a\n")
    assert (tmp_path / "a").read_text() == "new a\n"


def test_a_check_before_commit_that_holds_commits_writes_nothing(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The compile server's worker checks for its client before each commit
    (cli/server.py): a client found gone stops this commit already."""
    monkeypatch.setattr(fileio, "_commits_held", False)
    checked: list[bool] = []
    monkeypatch.setattr(fileio, "before_commit", [lambda: checked.append(True) or fileio.hold_commits()])
    outputs = fileio.OutputTransaction()
    outputs.add(str(tmp_path / "a"), "new a\n")
    with pytest.raises(fileio.CommitsHeld):
        outputs.commit()
    assert checked == [True] and not (tmp_path / "a").exists() and _leftovers(tmp_path) == []
    fileio.release_commits()


@pytest.mark.slow
def test_sigterm_while_many_outputs_are_written_leaves_all_old_or_all_new(tmp_path: Path) -> None:
    """The issue: SIGTERM during writing left 1-66 of 110 files replaced
    and empty temporaries. Fifty inputs (one stem each: .c, .h, .stmt),
    terminated at spread moments of the writing: every time, either every
    output is the new one or every output is the old one, and no
    temporary file is left."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    for i in range(50):
        shutil.copy(SOURCE, inputs / f"k{i:02d}.stmt")
    out = tmp_path / "out"
    command = [str(HARDBOILED), "compile", "--emit", "c,ir", "-o", str(out), "-q", "-j", "1",
               "--cache-dir", str(tmp_path / "cache"), *sorted(map(str, inputs.iterdir()))]
    env = dict(os.environ, HARDBOILED_CACHE_DIR=CACHE_DIR)
    assert subprocess.run(command, env=env, capture_output=True, timeout=300).returncode == 0
    outcomes = set()
    for trial in range(8):
        for f in out.iterdir():
            f.write_text("old\n")
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.05 + 0.1 * trial)  # a cached run: its outputs are written within the first second
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
        old = sum(f.read_text() == "old\n" for f in out.iterdir())
        assert old in (0, 150), (trial, proc.returncode, old, stderr.decode()[-500:])
        assert proc.returncode in (0, 143, -15), stderr  # -15: before the handler was installed
        assert _leftovers(out) == [], (trial, proc.returncode, old, stderr.decode()[-800:])
        outcomes.add(old)
    assert 150 in outcomes  # at least one signal arrived before the commit


@pytest.mark.slow
def test_sigterm_at_any_moment_of_a_cached_compile_ends_it_without_a_traceback(tmp_path: Path) -> None:
    """A SIGTERM at a moment drawn from a seed, from start-up (before the
    handler is installed) to the interpreter's shutdown (after it is
    restored): the process ends as SIGTERM ends it, exit 143 or done,
    never with a traceback. Two races did print one: a signal while the
    start-up loaded, and one between opening a cache entry and handing its
    descriptor to a file object (the close that followed failed with EBADF
    in place of the signal's exception)."""
    command = [str(HARDBOILED), "compile", str(SOURCE), "--emit", "c,ir", "-o", str(tmp_path / "out"), "-q",
               "--cache-dir", str(tmp_path / "cache")]
    assert subprocess.run(command, capture_output=True, timeout=300).returncode == 0
    rng = random.Random(35)
    for _ in range(40):
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.0, 0.2))
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode in (0, 143, -15) and b"Traceback" not in stderr, (proc.returncode, stderr[-1500:])
