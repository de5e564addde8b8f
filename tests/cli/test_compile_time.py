"""Compile time (issue 19), as static facts: what a cache hit loads, that
deep IR meets no recursion limit, and that the egglog child's prelude is the
program's first part. The times themselves are bench/compile_time.py's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hardboiled.select.rule_files import rule_file_chunks
from hardboiled.select.rules import rule_chunks

from ..conftest import FIXTURES, ROOT, run_cli

HEAVY = ("lark", "numpy", "hardboiled.ir.nodes", "hardboiled.frontend.parse", "hardboiled.select.selector",
         "hardboiled.pipeline.passes", "egglog", "_hashlib")
"""Modules a cache hit has no use for (``_hashlib``: OpenSSL, 2.5 to 3.5 ms
to load; the code's digest is CPython's own BLAKE2b)."""


def test_a_cache_hit_loads_no_parser_ir_or_selector(tmp_path: Path) -> None:
    """The whole-file cache answers from the raw bytes: the second run of
    the same compile imports none of the heavy modules, nor OpenSSL."""
    log = FIXTURES / "amx_bf16_matmul_std_single" / "debug.log"
    args = ["compile", str(log), "--cache-dir", str(tmp_path / "cache"), "-q", "-o", str(tmp_path / "out.stmt")]
    assert run_cli(*args).returncode == 0
    first = (tmp_path / "out.stmt").read_bytes()
    probe = ("import sys\nfrom hardboiled.cli import main\n"
             f"sys.argv = ['hardboiled', *{args!r}]\n"
             "try:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code\n"
             f"print(sorted(m for m in sys.modules if m.startswith({HEAVY!r})))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout
    assert (tmp_path / "out.stmt").read_bytes() == first


def test_a_cache_entry_made_by_other_code_is_not_served(tmp_path: Path, monkeypatch) -> None:
    """The key holds a digest of hardboiled's code: a rule file that
    changes (HARDBOILED_RULES_DIR) changes the key."""
    from hardboiled.support import cache, identity

    before = cache.cache_key(["x"], [])
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "extra.egg").write_text("; a different rule set\n")
    monkeypatch.setenv("HARDBOILED_RULES_DIR", str(rules))
    identity.forget()
    try:
        assert cache.cache_key(["x"], []) != before
    finally:
        monkeypatch.delenv("HARDBOILED_RULES_DIR")
        identity.forget()
    assert cache.cache_key(["x"], []) == before


def test_a_rule_edit_that_keeps_size_and_time_changes_the_signature(tmp_path: Path, monkeypatch) -> None:
    """Rules, grammars and headers are read at run time, so the code
    signature (direct mode's records, the compile server's socket) holds
    their bytes: an edit that keeps a file's size and modification time, as
    ``cp -p``, ``rsync -a`` and tar leave it, still names other code."""
    from hardboiled.support import cache, identity

    rules = tmp_path / "rules"
    rules.mkdir()
    rule = rules / "extra.egg"
    rule.write_text("(ruleset one)\n")
    os.utime(rule, (1_000_000_000, 1_000_000_000))
    monkeypatch.setenv("HARDBOILED_RULES_DIR", str(rules))
    try:
        identity.forget()
        signature, key = identity.code_signature(), cache.cache_key(["x"], [])
        rule.write_text("(ruleset two)\n")
        os.utime(rule, (1_000_000_000, 1_000_000_000))
        identity.forget()
        assert identity.code_signature() != signature
        assert cache.cache_key(["x"], []) != key
    finally:
        monkeypatch.delenv("HARDBOILED_RULES_DIR")
        identity.forget()


def test_deep_ir_meets_no_recursion_limit(tmp_path: Path) -> None:
    """5,000 nested lets (Halide nests each around the rest of its block)
    parse, print back byte for byte, and compile to C."""
    depth = 5000
    lets = "".join(f"let v{i} = {i}\n" for i in range(depth))
    text = f"allocate f[int32 * 1]\n{lets}f[0] = v{depth - 1}\nfree f\n"
    source = tmp_path / "deep.stmt"
    source.write_text(text)
    parsed = run_cli("parse", str(source))
    assert parsed.returncode == 0, parsed.stderr[-500:]
    assert parsed.stdout.decode() == text
    compiled = run_cli("compile", str(source), "--emit", "c", "--no-cache", "-q")
    assert compiled.returncode == 0, compiled.stderr[-500:]
    assert f"int32_t v{depth - 1} = ((int32_t){depth - 1});".encode() in compiled.stdout


def test_the_prestarted_prelude_is_the_program_s_first_part() -> None:
    """The child started before the pipeline loads runs the rule files;
    every program the selector assembles starts with exactly those."""
    prelude = rule_file_chunks()
    program = rule_chunks()
    assert program[: len(prelude)] == prelude
    assert [c.filename for c in program[len(prelude):]] == ["<hardware facts>"]


def test_the_deep_stack_falls_back_when_the_process_cannot_map_it(monkeypatch) -> None:
    """A stack the process may not map (as under a tight `ulimit -v`) falls
    back to a smaller one, with a recursion limit to match, and then to the
    calling thread: the compile runs either way, and exceptions come back."""
    import sys
    import threading

    from hardboiled.support import deep

    monkeypatch.setattr(deep, "STACK_BYTES", 1 << 62)  # no process can map it
    name, limit = deep.call_deep(lambda: (threading.current_thread().name, sys.getrecursionlimit()))
    assert name == "hardboiled-compile" and limit >= deep.FALLBACK_STACK_BYTES // deep.FRAME_BYTES
    monkeypatch.setattr(deep, "FALLBACK_STACK_BYTES", 1 << 62)
    assert deep.call_deep(lambda: threading.current_thread().name) == threading.current_thread().name

    def fails() -> None:
        raise KeyError("from the worker")

    try:
        deep.call_deep(fails)
    except KeyError as error:
        assert "from the worker" in str(error)
    else:
        raise AssertionError("the worker's exception was lost")


# ---------------------------------------------------------------- direct mode
def _probe(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``hardboiled ARGS`` in a fresh interpreter, which then prints whether
    click was loaded: the direct answer loads nothing but the standard
    library and hardboiled's support modules."""
    probe = ("import sys\nfrom hardboiled.cli import main\n"
             f"sys.argv = ['hardboiled', *{args!r}]\n"
             "try:\n    main()\nexcept SystemExit as exit:\n    code = exit.code\n"
             "sys.stderr.write('\\nLOADED=%s' % sorted(m for m in sys.modules if m in ('click', 'rich') or "
             f"m.startswith({HEAVY!r})))\n"
             "sys.exit(code)\n")
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd)


def test_a_repeated_compile_is_answered_directly_and_byte_for_byte(tmp_path: Path) -> None:
    """The first run fills the result cache, the second (a hit) records
    what it did, the third replays that record without loading click:
    same output file, same standard output and error, same status."""
    source = tmp_path / "in.log"
    source.write_bytes((FIXTURES / "amx_bf16_matmul_std_single" / "debug.log").read_bytes())
    to_file = ["compile", "in.log", "--cache-dir", "cache", "-o", "out.stmt"]
    to_stdout = ["compile", "in.log", "--cache-dir", "cache", "--emit", "report"]
    for args in (to_file, to_stdout):
        runs = [_probe(args, tmp_path) for _ in range(3)]
        assert [r.returncode for r in runs] == [0, 0, 0], runs[0].stderr
        (hit, hit_err), (direct, direct_err) = (r.stderr.rsplit("\nLOADED=", 1) for r in runs[1:])
        assert "'click'" in hit_err and direct_err == "[]", (hit_err, direct_err)
        assert direct == hit and "cached" in hit  # the summary line, as the hit printed it
        assert runs[2].stdout == runs[1].stdout
    assert (tmp_path / "out.stmt").read_text().startswith("assert(")
    assert len(list((tmp_path / "cache" / "direct").rglob("*.record"))) == 2


_STARTUP_PROBE = "import sys\nprint(' '.join(sorted(sys.modules)))\n"
_REPLAY_MAY_LOAD = {"struct", "_struct", "resource", "errno", "atexit", "__future__", "_sha256", "_sha2", "_blake2"}
"""What a replay may load besides hardboiled's own modules and what Python
loads before any of them (hashlib's OpenSSL, json, pathlib, signal's
enums, contextlib and threading cost a start more than Python's own)."""


def test_a_replay_loads_nothing_python_has_not_loaded_but_a_few_small_modules(tmp_path: Path) -> None:
    source = tmp_path / "in.log"
    source.write_bytes((FIXTURES / "amx_bf16_matmul_std_single" / "debug.log").read_bytes())
    args = ["compile", "in.log", "--cache-dir", "cache", "-q", "-o", "out.stmt"]
    for _ in range(2):
        assert _probe(args, tmp_path).returncode == 0
    startup = set(subprocess.run([sys.executable, "-c", _STARTUP_PROBE], capture_output=True, text=True,
                                 check=True).stdout.split())
    probe = ("import sys\nfrom hardboiled.cli import main\n"
             f"sys.argv = ['hardboiled', *{args!r}]\n"
             "try:\n    main()\nexcept SystemExit as exit:\n    code = exit.code\n"
             "sys.stderr.write('\\nLOADED=%s' % ' '.join(sorted(sys.modules)))\n"
             "sys.exit(code)\n")
    replay = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr
    loaded = set(replay.stderr.rsplit("LOADED=", 1)[1].split())
    assert "hardboiled.cli.direct" in loaded and "click" not in loaded
    extra = {name for name in loaded - startup if not name.startswith("hardboiled")}
    assert extra <= _REPLAY_MAY_LOAD, sorted(extra - _REPLAY_MAY_LOAD)


def test_a_direct_answer_checks_its_inputs_and_rewrites_deleted_outputs(tmp_path: Path) -> None:
    """A changed input is compiled again; a deleted output is written
    again; a record never answers another command line or directory."""
    first = (FIXTURES / "amx_bf16_matmul_std_single" / "debug.log").read_bytes()
    second = (FIXTURES / "amx_bf16_matmul_vnni_single" / "debug.log").read_bytes()
    source, out = tmp_path / "in.log", tmp_path / "out.stmt"
    args = ["compile", "in.log", "--cache-dir", "cache", "-q", "-o", "out.stmt"]
    source.write_bytes(first)
    for _ in range(3):
        assert _probe(args, tmp_path).returncode == 0
    expected_first = out.read_bytes()
    out.unlink()
    replayed = _probe(args, tmp_path)
    assert replayed.stderr.endswith("LOADED=[]") and out.read_bytes() == expected_first
    source.write_bytes(second)
    changed = _probe(args, tmp_path)
    assert changed.returncode == 0 and "'click'" in changed.stderr
    assert out.read_bytes() != expected_first
    (tmp_path / "sub").mkdir()
    elsewhere = _probe([*args[:1], "../in.log", *args[2:4], "-q", "-o", "../out.stmt"], tmp_path / "sub")
    assert elsewhere.returncode == 0 and "'click'" in elsewhere.stderr


def test_the_direct_key_names_every_environment_variable_hardboiled_reads() -> None:
    """A variable that changes what compile does must be in the key
    (cli/direct.py ENVIRONMENT); the Halide bridge's HL_ filter is not the
    command line's."""
    import re

    from hardboiled.cli.direct import ENVIRONMENT

    read = set()
    for path in (ROOT / "hardboiled").rglob("*.py"):
        text = path.read_text()
        read |= set(re.findall(r"(?:environ\.get|getenv|environ)\(?\[?\"([A-Z_][A-Z0-9_]*)\"", text))
    assert read, "no environment read found: the pattern is wrong"
    # HARDBOILED_NO_SERVER says where the command runs (cli/client.py), not what it does.
    assert read - {"HL_", "HARDBOILED_NO_SERVER"} <= set(ENVIRONMENT), read - set(ENVIRONMENT)


def test_a_record_others_could_have_planted_is_not_followed(tmp_path: Path) -> None:
    """A record names files to write: one in a directory that others may
    write is ignored, and so is one that writes where the command line does
    not point (both then compile the ordinary way)."""
    import os

    from hardboiled.support.cache import RecordCache

    (tmp_path / "in.log").write_bytes((FIXTURES / "amx_bf16_matmul_std_single" / "debug.log").read_bytes())
    args = ["compile", "in.log", "--cache-dir", "cache", "-q", "-o", "out.stmt"]
    for _ in range(2):
        assert _probe(args, tmp_path).returncode == 0
    (record,) = (tmp_path / "cache" / "direct").rglob("*.record")
    assert _probe(args, tmp_path).stderr.endswith("LOADED=[]")
    os.chmod(record.parent, 0o777)
    shared = _probe(args, tmp_path)
    assert shared.returncode == 0 and "'click'" in shared.stderr
    os.chmod(record.parent, 0o755)
    records = RecordCache(tmp_path / "cache" / "direct")
    entry = records.get(record.stem)
    assert entry is not None and entry["writes"]
    entry["writes"].append([str(tmp_path.parent / "planted.txt"), "planted", "follow"])
    records.put(record.stem, entry)  # planted by someone who can compute the checksum
    assert records.get(record.stem) == entry
    planted = _probe(args, tmp_path)
    assert planted.returncode == 0 and "'click'" in planted.stderr
    assert not (tmp_path.parent / "planted.txt").exists()


def test_the_directories_checked_are_those_the_record_is_read_through(tmp_path: Path) -> None:
    """A cache directory named through a link and ``..`` is read where the
    file system resolves it: the check of who could have written the
    record walks those directories, not the ones the name spells once its
    ``..`` is taken off by text (a private decoy there must not vouch)."""
    import os
    import shutil

    work, real = tmp_path / "work", tmp_path / "elsewhere" / "deep"
    work.mkdir()
    real.mkdir(parents=True)
    (work / "link").symlink_to(real)
    (work / "in.log").write_bytes((FIXTURES / "amx_bf16_matmul_std_single" / "debug.log").read_bytes())
    args = ["compile", "in.log", "--cache-dir", "link/../c", "-q", "-o", "out.stmt"]
    for _ in range(2):
        assert _probe(args, work).returncode == 0
    (record,) = (tmp_path / "elsewhere" / "c" / "direct").rglob("*.record")
    assert _probe(args, work).stderr.endswith("LOADED=[]")
    shutil.copytree(tmp_path / "elsewhere" / "c", work / "c")  # the decoy: private, where the text points
    os.chmod(record.parent, 0o777)  # the real one: others may write it
    shared = _probe(args, work)
    assert shared.returncode == 0 and "'click'" in shared.stderr


def test_a_sigterm_as_the_command_restores_its_handler_ends_it_as_terminated(monkeypatch) -> None:
    """A SIGTERM whose handler runs in direct mode's finally, before the
    previous handler is back (the work just ended), is exit 143, not a
    traceback; the previous handler is back either way. The signal is
    simulated where the race put it: at the first restore."""
    import _signal
    import signal

    import pytest

    from hardboiled.cli import direct

    real_signal = _signal.signal
    restores = []

    def signal_landing_at_the_restore(signum: int, handler):  # type: ignore[no-untyped-def]
        if handler is not direct._terminate:
            restores.append(handler)
            if len(restores) == 1:
                direct._terminate(signum, None)
        return real_signal(signum, handler)

    def work_done(argv: list[str]) -> None:
        raise SystemExit(0)

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(direct, "_main", work_done)
    monkeypatch.setattr(direct._signal, "signal", signal_landing_at_the_restore)
    with pytest.raises(SystemExit) as info:
        direct.main(["--version"])
    assert info.value.code == 143
    assert restores == [before, signal.SIG_IGN, before] and signal.getsignal(signal.SIGTERM) is before


def test_the_console_script_ends_without_teardown_but_as_an_exit_would() -> None:
    """``run`` (the console script) leaves with ``os._exit``: the other
    threads are joined first, the exit handlers run, everything printed is
    flushed, and the status is ``sys.exit``'s (a message is printed and
    exits 1)."""
    probe = ("import atexit, sys, threading, time\n"
             "from hardboiled.cli import run, _leave\n"
             "atexit.register(lambda: sys.stdout.write('handler ran\\n'))\n"
             "threading.Thread(target=lambda: (time.sleep(0.2), sys.stdout.write('thread joined\\n'))).start()\n"
             "sys.stdout.write('x' * 200000 + '\\n')\n"
             "if sys.argv[1] == 'message':\n    _leave('a message')\n"
             "sys.argv = ['hardboiled', *sys.argv[1:]]\nrun()\n")
    version = subprocess.run([sys.executable, "-c", probe, "--version"], capture_output=True, text=True, cwd=ROOT)
    assert version.returncode == 0, version.stderr
    lines = version.stdout.splitlines()
    assert lines[0] == "x" * 200000 and lines[1].startswith("hardboiled ")
    assert set(lines[2:]) == {"thread joined", "handler ran"}
    missing = subprocess.run([sys.executable, "-c", probe, "compile", "no-such.stmt"], capture_output=True, text=True,
                             cwd=ROOT)
    assert missing.returncode == 2 and "cannot read 'no-such.stmt'" in missing.stderr
    message = subprocess.run([sys.executable, "-c", probe, "message"], capture_output=True, text=True, cwd=ROOT)
    assert message.returncode == 1 and message.stderr == "a message\n"


def test_a_profiler_around_the_command_gets_control_back(tmp_path: Path) -> None:
    """``python -m cProfile -m hardboiled``: the usual exit, so that the
    profile is written."""
    profile = tmp_path / "out.prof"
    proc = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "hardboiled", "--version"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout.startswith("hardboiled "), proc.stderr
    assert profile.stat().st_size > 0


def test_a_server_directory_without_this_build_s_socket_costs_no_socket_or_openssl(tmp_path: Path) -> None:
    """A user who once ran a server keeps its directory; while no server of
    this build listens there (another build's socket, a file of that name
    that is not a socket), the command goes on without loading socket or
    hashlib (8 and 3 ms of every start)."""
    cache = tmp_path / "c"
    (cache / "server").mkdir(parents=True, mode=0o700)
    cache.chmod(0o700)
    (cache / "server" / "0123456789abcdef0123.sock").write_bytes(b"")  # another build's name
    probe = ("import sys\nfrom hardboiled.cli import client\n"
             "directory = client.server_directory()\n"
             "assert client.forward(['--version']) is None\n"
             "open(client.socket_path(directory), 'wb').close()  # this build's name, a plain file\n"
             "assert client.forward(['--version']) is None\n"
             "print(sorted(m for m in ('socket', '_socket', 'hashlib', '_hashlib') if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "HARDBOILED_CACHE_DIR": str(cache),
                               "HARDBOILED_NO_SERVER": "0"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout


def test_a_cold_compile_runs_the_cyclic_collector_at_most_once(tmp_path: Path) -> None:
    """The command collects every 100,000 allocations, not 700: a cold
    compile's objects live until it ends, and the collector's 85 passes
    over them found next to nothing (13 ms). Counted by gc's callbacks,
    around the console script's own entry point."""
    log = FIXTURES / "amx_bf16_matmul_std_single" / "debug.log"
    args = ["compile", str(log), "--no-cache", "-q", "--verify", "-o", str(tmp_path / "out.stmt")]
    probe = ("import gc, os, sys\n"
             "passes = []\n"
             "gc.callbacks.append(lambda phase, info: passes.append(info['generation']) if phase == 'stop' else None)\n"
             "import hardboiled.cli as cli\n"
             "leave = cli._leave\n"
             "def counted(code):\n"
             "    os.write(1, f'{len(passes)} {code}\\n'.encode())\n"
             "    leave(code)\n"
             "cli._leave = counted\n"
             f"sys.argv = ['hardboiled', *{args!r}]\n"
             "cli.run()\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, HARDBOILED_NO_SERVER="1"))
    assert proc.returncode == 0, proc.stderr
    collections, code = proc.stdout.split()
    assert code == "0" and int(collections) <= 1, proc.stdout
