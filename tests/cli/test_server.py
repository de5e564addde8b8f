"""The compile server (cli/server.py, cli/client.py): a command it runs
reads, writes, prints and exits exactly as it does alone; signals reach
it; a server of other code, or in a directory others could write, is
never asked."""

from __future__ import annotations

import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import FIXTURES, HARDBOILED, ROOT

pytestmark = pytest.mark.slow

LOG = FIXTURES / "amx_bf16_matmul_std_single" / "debug.log"
STMT = FIXTURES / "amx_bf16_matmul_std_single" / "vectorizing.stmt"


@pytest.fixture
def cache_dir() -> Iterator[Path]:
    """A cache directory of its own, with a short path: a Unix socket's
    path is at most 107 bytes, and pytest's tmp_path can be longer."""
    directory = Path(tempfile.mkdtemp(prefix="hbs-"))
    try:
        yield directory
    finally:
        run(directory, "server", "stop")
        shutil.rmtree(directory, ignore_errors=True)


def run(cache: Path, *args: str, server: bool = True, stdin: bytes = b"", cwd: Path | None = None,
        env: dict[str, str] | None = None, preexec_fn=None) -> subprocess.CompletedProcess[bytes]:
    full_env = dict(os.environ, HARDBOILED_CACHE_DIR=str(cache), HARDBOILED_NO_SERVER="0" if server else "1")
    full_env.update(env or {})
    return subprocess.run([str(HARDBOILED), *args], input=stdin, capture_output=True, env=full_env,
                          cwd=cwd or ROOT, timeout=300, preexec_fn=preexec_fn)


_READ_SYSCALL = {"x86_64": 0, "aarch64": 63, "riscv64": 63}.get(platform.machine())
"""read(2)'s number on this machine, as /proc/PID/task/TID/syscall shows it."""


def wait_until_its_input_is_read(proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    """Until a process whose standard input is ``proc``'s pipe (the command,
    or the server's worker it handed the pipe to) is blocked reading it: one
    of its threads is in read(0, ...), as Linux's /proc/PID/task/TID/syscall
    shows. Where /proc cannot show it (another architecture, no /proc, a
    syscall file this user may not read: Yama's ptrace scope, the worker not
    being a child of the test), a second's wait, as these tests had."""
    assert proc.stdin is not None
    pipe = f"pipe:[{os.fstat(proc.stdin.fileno()).st_ino}]"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = _reading(pipe)
        if found is None:
            time.sleep(1.0)
            return
        if found:
            return
        time.sleep(0.02)
    pytest.fail(f"no process read the command's standard input within {timeout_s} s")


def _reading(pipe: str) -> bool | None:
    """Whether a thread of a process whose fd 0 is ``pipe`` is in
    read(0, ...); None where /proc cannot tell."""
    if _READ_SYSCALL is None:
        return None
    try:
        pids = [pid for pid in os.listdir("/proc") if pid.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            if os.readlink(f"/proc/{pid}/fd/0") != pipe:
                continue
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:  # gone, or not ours to look at
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/syscall") as handle:
                    if handle.read().startswith(f"{_READ_SYSCALL} 0x0 "):
                        return True
            except PermissionError:
                return None
            except OSError:  # the thread or the process ended
                continue
    return False


def untimed(stderr: bytes) -> bytes:
    """The summary line's seconds are the only part that may differ."""
    return re.sub(rb"; \d+\.\d+ s$", b"; T s", stderr, flags=re.M)


def served(cache: Path, what: str = "served") -> int:
    """How many commands the server for this build was handed (status's
    answer), or handed back (``what="refused"``)."""
    from hardboiled.cli import client

    old = os.environ.get("HARDBOILED_CACHE_DIR")
    os.environ["HARDBOILED_CACHE_DIR"] = str(cache)
    try:
        status = client.status(client.socket_path(client.server_directory()))
    finally:
        if old is None:
            del os.environ["HARDBOILED_CACHE_DIR"]
        else:
            os.environ["HARDBOILED_CACHE_DIR"] = old
    assert status is not None, "no server answers"
    return int(status[what])


def running(cache: Path) -> int:
    """How many commands the server's workers are running."""
    return served(cache, "running")


def start(cache: Path) -> None:
    started = run(cache, "server", "start")
    assert started.returncode == 0, started.stderr
    assert b"server started: pid " in started.stdout


def test_start_status_and_stop(cache_dir: Path) -> None:
    assert run(cache_dir, "server", "status").returncode == 1
    start(cache_dir)
    again = run(cache_dir, "server", "start")
    assert again.returncode == 0 and b"already running" in again.stdout
    status = run(cache_dir, "server", "status")
    assert status.returncode == 0 and b"server running: pid " in status.stdout
    stopped = run(cache_dir, "server", "stop")
    assert stopped.returncode == 0 and b"server stopped: pid " in stopped.stdout
    assert run(cache_dir, "server", "status").returncode == 1
    assert b"no server was running" in run(cache_dir, "server", "stop").stdout


def test_a_command_it_runs_prints_writes_and_exits_as_it_would_alone(cache_dir: Path, tmp_path: Path) -> None:
    start(cache_dir)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(LOG, work / "matmul.log")
    commands: list[tuple[tuple[str, ...], bytes]] = [
        (("compile", "matmul.log", "--no-cache", "-o", "out.c", "--emit", "c"), b""),  # relative paths: the cwd
        (("compile", "matmul.log", "--no-cache", "-q"), b""),                                  # to standard output
        (("compile", "-", "--no-cache", "-q"), STMT.read_bytes()),                            # from standard input
        (("compile", "missing.log"), b""),                                                    # exit 2, a diagnostic
        (("parse", "-"), b"let x = 1\n"),                                                     # exit 2 at line 1
        (("compile", "matmul.log", "--bogus-option"), b""),                                   # click's usage error
        (("--version",), b""),
        (("compile", "matmul.log", str(STMT), "--no-cache", "-j", "2", "-o", "batch/"), b""),  # a process pool
    ]
    before = served(cache_dir)
    written = []

    def outputs() -> dict[str, tuple[bytes, int]]:
        """What the command wrote below its directory, with each file's
        mode, removed for the next."""
        found = {str(p.relative_to(work)): (p.read_bytes(), p.stat().st_mode) for p in sorted(work.rglob("*"))
                 if p.is_file() and p.name != "matmul.log"}
        for p in sorted(work.iterdir()):
            if p.is_dir():
                shutil.rmtree(p)
            elif p.name != "matmul.log":
                p.unlink()
        return found

    def private() -> None:
        os.umask(0o077)  # the files a command writes take its umask

    for args, stdin in commands:
        alone = run(cache_dir, *args, server=False, stdin=stdin, cwd=work, preexec_fn=private)
        alone_files = outputs()
        through = run(cache_dir, *args, stdin=stdin, cwd=work, preexec_fn=private)
        through_files = outputs()
        assert (through.returncode, through.stdout, untimed(through.stderr)) == (
            alone.returncode, alone.stdout, untimed(alone.stderr)), args
        assert through_files == alone_files, args
        written.append(sorted(through_files))
    assert served(cache_dir) == before + len(commands)
    assert written[0] == ["out.c", "out.h"]  # the first command's outputs, in its directory
    assert written[-1] == ["batch/matmul.stmt", "batch/vectorizing.stmt"]


def _as_in_a_terminal() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


def _signal_state() -> str:
    """This thread's blocked and ignored signals (/proc), for a failure's message."""
    status = Path(f"/proc/self/task/{threading.get_native_id()}/status").read_text()
    return " ".join(line for line in status.splitlines() if line.startswith(("SigBlk", "SigIgn")))


def test_a_repeated_compile_is_answered_by_its_record_before_the_server_is_asked(cache_dir: Path,
                                                                                 tmp_path: Path) -> None:
    """A record answers in the command's own process in less time than the
    server's socket takes: the server is handed the first two runs (the
    compile, then the whole-file cache's answer, which records), not the
    third, whose output, printing and status are the second's."""
    start(cache_dir)
    shutil.copy(LOG, tmp_path / "matmul.log")
    args = ("compile", "matmul.log", "--cache-dir", str(cache_dir / "results"), "-o", "out.stmt")
    before = served(cache_dir)
    runs = []
    for _ in range(3):
        runs.append(run(cache_dir, *args, cwd=tmp_path))
        runs[-1] = (runs[-1], (tmp_path / "out.stmt").read_bytes(), served(cache_dir) - before)
    assert [r.returncode for r, _, _ in runs] == [0, 0, 0], runs[0][0].stderr
    assert [count for _, _, count in runs] == [1, 2, 2]
    (_, second, _), (third_run, third, _) = runs[1], runs[2]
    assert third == second and third_run.stdout == runs[1][0].stdout and third_run.stderr == runs[1][0].stderr


def test_signals_sent_to_the_command_reach_the_worker(cache_dir: Path) -> None:
    """``parse -`` waits on an open pipe: SIGTERM and SIGINT sent to the
    command end it through the server as they end it alone (143, 130; a
    read of standard input in progress ends when the input closes), and
    SIGHUP, which hardboiled does not catch, kills both by that signal."""
    start(cache_dir)

    def interrupted(signum: int, server: bool) -> tuple[int, bytes]:
        env = dict(os.environ, HARDBOILED_CACHE_DIR=str(cache_dir), HARDBOILED_NO_SERVER="0" if server else "1")
        before = served(cache_dir)
        # A shell's background job (the suite run with `&`) starts with
        # SIGINT ignored, and one under nohup with SIGHUP ignored, which the
        # command then keeps, as it should; these signals reach a command
        # run in a terminal, which this one is: at their defaults, and not
        # blocked, whatever the runner's.
        proc = subprocess.Popen([str(HARDBOILED), "parse", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, preexec_fn=_as_in_a_terminal)
        deadline = time.monotonic() + 30
        while server and served(cache_dir) == before and time.monotonic() < deadline:
            time.sleep(0.05)
        wait_until_its_input_is_read(proc)  # the command (its worker) is reading its standard input
        proc.send_signal(signum)
        time.sleep(1.0)  # the signal has landed
        _, stderr = proc.communicate(timeout=60)
        return proc.returncode, stderr

    for signum, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, -signal.SIGHUP)):
        alone, through = interrupted(signum, False), interrupted(signum, True)
        assert through == alone and alone[0] == code, (through, alone, _signal_state())
        assert b"Traceback" not in through[1]


def test_a_signal_the_command_was_started_ignoring_is_ignored_through_the_server(cache_dir: Path) -> None:
    """nohup: SIGHUP ignored from the start stays ignored, and the command
    goes on to read its input and print it, as it does alone."""
    start(cache_dir)

    def nohup() -> None:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    results = []
    for server in (False, True):
        env = dict(os.environ, HARDBOILED_CACHE_DIR=str(cache_dir), HARDBOILED_NO_SERVER="0" if server else "1")
        proc = subprocess.Popen([str(HARDBOILED), "parse", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, preexec_fn=nohup)
        wait_until_its_input_is_read(proc)  # past the start, where the signal's disposition is kept
        proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        stdout, stderr = proc.communicate(STMT.read_bytes(), timeout=60)
        results.append((proc.returncode, stdout, stderr))
    assert results[0] == results[1]
    assert results[0][0] == 0 and results[0][1] == STMT.read_bytes()


def test_a_server_of_other_code_or_in_a_directory_others_can_write_is_not_asked(cache_dir: Path,
                                                                               tmp_path: Path) -> None:
    start(cache_dir)
    before = served(cache_dir)
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    (rules / "axioms.egg").write_text((rules / "axioms.egg").read_text() + "\n; another build\n")
    other = run(cache_dir, "compile", str(LOG), "--no-cache", "-q", env={"HARDBOILED_RULES_DIR": str(rules)})
    assert other.returncode == 0, other.stderr
    assert served(cache_dir) == before  # its code signature names another socket

    (cache_dir / "server").chmod(0o777)
    try:
        assert run(cache_dir, "--version").returncode == 0
        assert served(cache_dir) == before
        refused = run(cache_dir, "server", "start")
        assert refused.returncode == 2 and b"writable by other users" in refused.stderr
    finally:
        (cache_dir / "server").chmod(0o700)


def test_a_command_under_other_resource_limits_runs_by_itself(cache_dir: Path) -> None:
    """A worker cannot take on the command's limits (it cannot raise its
    own, and an address-space limit would count all the server loaded): it
    hands the command back, and the command runs as it would alone."""
    import resource

    start(cache_dir)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)

    def fewer_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 512) - 1, hard))

    before = served(cache_dir, "refused")
    args = ("compile", str(LOG), "--no-cache", "-q")
    alone = run(cache_dir, *args, server=False, preexec_fn=fewer_files)
    limited = run(cache_dir, *args, preexec_fn=fewer_files)
    assert (limited.returncode, limited.stdout, limited.stderr) == (alone.returncode, alone.stdout, alone.stderr)
    assert alone.returncode == 0 and alone.stdout
    deadline = time.monotonic() + 30
    while served(cache_dir, "refused") == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert served(cache_dir, "refused") == before + 1


def test_a_command_whose_client_is_killed_ends_without_writing(cache_dir: Path, tmp_path: Path) -> None:
    """SIGKILL cannot be passed on: the worker sees its client's connection
    end and ends as a terminated command does, leaving no output."""
    start(cache_dir)
    env = dict(os.environ, HARDBOILED_CACHE_DIR=str(cache_dir), HARDBOILED_NO_SERVER="0")
    before = served(cache_dir)
    out = tmp_path / "out.stmt"
    proc = subprocess.Popen([str(HARDBOILED), "compile", "-", "--no-cache", "-o", str(out)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 30
    while served(cache_dir) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.wait(timeout=30)
    assert proc.stdin is not None
    try:
        proc.stdin.write(STMT.read_bytes())  # what the worker would have compiled, had it gone on
        proc.stdin.close()
    except BrokenPipeError:
        pass  # the worker has already ended, and with it the pipe's last reader
    deadline = time.monotonic() + 30
    while running(cache_dir) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running(cache_dir) == 0
    assert not out.exists()
    assert proc.stderr is not None and proc.stderr.read() == b""  # nor a word where it printed


def test_a_worker_finds_its_client_gone_before_it_commits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread that waits for the client's connection to end may not run
    before the compile commits (a loaded machine): the commit's own check
    ends the command where the connection has ended, and only there."""
    import socket

    from hardboiled.cli import server

    ended: list[bool] = []
    monkeypatch.setattr(server, "_end_as_terminated", lambda: ended.append(True))
    worker, client = socket.socketpair()
    server._end_if_the_client_is_gone(worker)
    assert ended == []  # connected, silent: the command goes on
    client.close()
    server._end_if_the_client_is_gone(worker)
    assert ended == [True]
    worker.close()


def test_a_command_with_a_closed_standard_descriptor_runs_by_itself(cache_dir: Path) -> None:
    """A closed standard input would be the socket's descriptor, handed to
    the worker as its input: such a command runs here, and says so."""
    start(cache_dir)
    before = served(cache_dir)
    results = []
    for server in (False, True):
        env = dict(os.environ, HARDBOILED_CACHE_DIR=str(cache_dir), HARDBOILED_NO_SERVER="0" if server else "1")
        proc = subprocess.run([str(HARDBOILED), "parse", "-"], capture_output=True, env=env, timeout=60,
                              preexec_fn=lambda: os.close(0))
        results.append((proc.returncode, proc.stdout, proc.stderr))
    assert results[0] == results[1]
    assert results[0][0] == 2 and b"cannot read standard input: it is closed" in results[0][2]
    assert served(cache_dir) == before


def test_a_command_handed_to_the_server_loads_no_socket_signal_or_enum_module(cache_dir: Path) -> None:
    """The command's own process only passes its invocation on: it talks
    through ``_socket`` and ``_signal``, not the modules that wrap them in
    enums (``socket`` alone took as long as Python's start)."""
    start(cache_dir)
    before = served(cache_dir)
    script = ("import sys\n"
              "from hardboiled.cli.client import forward\n"
              "before = set(sys.modules)\n"
              "status = forward(['--version'])\n"
              "print(status, sorted(m for m in ('socket', 'signal', 'enum', 'selectors', 'array') "
              "if m in set(sys.modules) - before))\n")
    env = dict(os.environ, HARDBOILED_CACHE_DIR=str(cache_dir), HARDBOILED_NO_SERVER="0")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "0 []"
    assert served(cache_dir) == before + 1


def test_a_compile_in_a_worker_loads_no_module_and_makes_no_scanner_the_server_could_have() -> None:
    """What a compile would load or make on first use, the server has
    before it forks its workers: each worker is a fresh copy, and would
    otherwise pay for it in every command (the scanner was 4 ms of each,
    numpy.random 16 ms of a --verify)."""
    script = ("import sys\n"
              "from hardboiled.cli import direct, server\n"
              "from hardboiled.frontend.descent import scanner\n"
              "server.preload()\n"
              "loaded, made = set(sys.modules), scanner.cache_info().misses\n"
              "try:\n"
              f"    direct.main(['compile', {str(LOG)!r}, '--no-cache', '-q', '--verify', '-o', sys.argv[1]])\n"
              "except SystemExit as exit:\n"
              "    assert not exit.code, exit.code\n"
              "print(sorted(set(sys.modules) - loaded), scanner.cache_info().misses - made)\n")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, HARDBOILED_NO_SERVER="1")
        proc = subprocess.run([sys.executable, "-c", script, f"{tmp}/out.stmt"], capture_output=True, text=True,
                              env=env, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[] 0"
