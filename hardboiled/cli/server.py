"""The compile server: hardboiled loaded once, a forked worker per command.

``hardboiled server start`` runs ``python -m hardboiled.cli.server`` in a
session of its own. It imports every module a command can need (numpy
too), then listens on a Unix socket in a private directory (cli/client.py
names it by hardboiled's code signature, egglog's build and Python's
version). It keeps one **worker** forked ahead: a copy of the loaded
server that has already started its egglog child on the rule files
(select/eqsat.py's ``prestart``), which costs a command about 0.7 s of
its time on its own. For each command a client sends, the server hands the
waiting worker the request and the client's descriptors (the connection,
standard input, output and error), forks the next worker, and goes back
to listening. The worker tells the client its process id (so that the
client can pass signals on), takes the client's working directory,
environment and umask, runs the command exactly as ``hardboiled`` would
(cli/direct.py) and sends its exit status; where a signal ends a worker,
the server sends the signal's number, and the client ends by the same
signal.

The server itself is single-threaded and never compiles: a fork copies
nothing half-done, and what a command caches (the code signature, say)
dies with its worker. Only the user who started it may connect (the
peer's credentials are checked on every connection). It ends on
``hardboiled server stop``, on SIGTERM, when its socket is removed or
replaced, when hardboiled's code or egglog changes (no client would ask it
again), and after ``--idle-timeout`` seconds without a command.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import marshal
import os
import pkgutil
import select
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from typing import Any

from hardboiled.cli import client

_REFUSED = 75
"""A worker's exit status when it handed a command back (other limits)."""
_MAX_REQUEST = 16 << 20
_NOT_PRELOADED = ("hardboiled.__main__", "hardboiled.halide", "hardboiled.cli.manpage", "hardboiled.cli.server")
"""Modules a command never imports (the Halide bridge loads halide) or
that run on import."""


# --------------------------------------------------------------------------
# Serving
# --------------------------------------------------------------------------


def preload() -> None:
    """Import what any command can import, numpy as the command loads it,
    and make what every compile makes on first use: a worker is a fresh
    fork, and would make it again for each command."""
    from hardboiled.support.environment import load_numpy

    load_numpy()
    for module in pkgutil.walk_packages(sys.modules["hardboiled"].__path__, "hardboiled."):
        if not module.name.startswith(_NOT_PRELOADED):
            importlib.import_module(module.name)
    for name in _LOADED_ON_USE:
        importlib.import_module(name)
    from hardboiled.frontend.descent import scanner

    scanner()


_LOADED_ON_USE = ("difflib", "numpy.random")
"""Modules a compile imports only where it uses them: click's parser
loads difflib at every short option (``-o``), which it first tries as a
long one, whose miss it words with close matches; ``--verify`` draws its
inputs with numpy.random (16 ms)."""


class _Stop(Exception):
    pass


class _Server:
    """The listening socket, the worker forked ahead for the next command,
    and the workers running commands (each with its client's connection)."""

    def __init__(self, path: str, idle_timeout_s: float):
        self.path = path
        self.idle_timeout_s = idle_timeout_s
        self.started = self.last_used = self.checked = time.monotonic()
        self.listener = _listen(path)
        self.identity = os.stat(path).st_ino
        self.spare: tuple[int, socket.socket] | None = None
        self.running: dict[int, socket.socket] = {}
        self.served = 0
        self.refused = 0

    def serve(self) -> None:
        while True:
            self._reap()
            if self.spare is None:
                self.spare = self._fork_worker()
            ready, _, _ = select.select([self.listener], [], [], 1.0)
            if not ready:
                if time.monotonic() - self.last_used > self.idle_timeout_s or not self.still_ours() or self.stale():
                    return
                continue
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            self.last_used = time.monotonic()
            try:
                self._answer(conn)
            except OSError:  # one client's trouble (it went away): the server goes on
                conn.close()

    def close(self) -> None:
        self.listener.close()
        if self.spare is not None:
            self.spare[1].close()  # it reads the end of its socket and exits
        for conn in self.running.values():
            conn.close()
        if self.still_ours():
            os.unlink(self.path)

    def stale(self) -> bool:
        """Whether hardboiled's code (or egglog) changed since the server
        started, so that no client will ask it again: looked at every 10 s,
        and nothing of it kept (a worker must work out its own)."""
        if time.monotonic() - self.checked < 10:
            return False
        self.checked = time.monotonic()
        from hardboiled.support import identity

        identity.forget()
        try:
            return client.socket_path(os.path.dirname(self.path)) != self.path
        finally:
            identity.forget()

    def still_ours(self) -> bool:
        try:
            return os.stat(self.path).st_ino == self.identity
        except OSError:
            return False

    def _fork_worker(self) -> tuple[int, socket.socket]:
        """A worker that waits for its command with everything loaded and
        an egglog child already running the rule files."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            ours.close()
            self.listener.close()
            for conn in self.running.values():
                conn.close()
            _work(theirs)  # never returns
        theirs.close()
        return pid, ours

    def _reap(self) -> None:
        """Collect ended workers. One that a signal ended told its client
        nothing: the server tells it (-N for signal N)."""
        while True:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.spare is not None and pid == self.spare[0]:
                self.spare[1].close()
                self.spare = None
            conn = self.running.pop(pid, None)
            if conn is None:
                continue
            if os.WIFEXITED(wait_status) and os.WEXITSTATUS(wait_status) == _REFUSED:
                self.refused += 1
            with conn:
                if os.WIFSIGNALED(wait_status):
                    try:
                        conn.sendall(client.STATUS_FRAME.pack(b"X", -os.WTERMSIG(wait_status)))
                    except OSError:
                        pass  # the client is gone

    def _answer(self, conn: socket.socket) -> None:
        credentials = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        if struct.unpack("3i", credentials)[1] != os.getuid():
            conn.close()
            return  # only the user who started the server
        conn.settimeout(10)
        try:
            request, fds = _receive(conn)
        except (OSError, ValueError):
            conn.close()
            return
        try:
            if request.get("control") is not None:
                with conn:
                    self._control(conn, request["control"])
                return
            if len(fds) != 3 or self.spare is None:
                conn.close()
                return
            pid, channel = self.spare
            self.spare = None
            with channel:
                try:
                    client.send_request(channel, request, [conn.fileno(), *fds])
                except OSError:
                    conn.close()  # the spare died: the client runs the command itself
                    return
            self.running[pid] = conn  # until the worker ends (_reap)
            self.served += 1
        finally:
            for fd in fds:
                os.close(fd)

    def _control(self, conn: socket.socket, command: str) -> None:
        answer = {"pid": os.getpid(), "socket": self.path, "uptime_s": round(time.monotonic() - self.started, 1),
                  "idle_timeout_s": self.idle_timeout_s, "running": len(self.running), "served": self.served,
                  "refused": self.refused}
        payload = marshal.dumps(answer)
        try:
            conn.sendall(client.REQUEST_HEADER.pack(len(payload)) + payload)
        except OSError:
            pass  # the asker is gone
        if command == "stop":
            raise _Stop()


def serve(path: str, idle_timeout_s: float) -> None:
    from hardboiled.cli import collect_less_often

    collect_less_often()  # a command's thresholds, which the workers inherit
    preload()

    def stop(signum: int, frame: object) -> None:
        raise _Stop()

    signal.signal(signal.SIGTERM, stop)
    server = _Server(path, idle_timeout_s)
    try:
        server.serve()
    except _Stop:
        pass
    finally:
        server.close()


def _listen(path: str) -> socket.socket:
    if os.path.lexists(path):
        os.unlink(path)  # no server answered on it (start asked first): a dead server's
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_mask = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(old_mask)
    listener.listen(64)
    return listener


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """A request (cli/client.py's send_request) and the descriptors it carried."""
    fds: list[int] = []
    data, ancillary, _, _ = conn.recvmsg(client.REQUEST_HEADER.size, socket.CMSG_SPACE(4 * 4))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            fds.extend(struct.unpack(f"{usable // 4}i", payload[:usable]))
    try:
        if not data:
            raise ValueError("no request")
        rest = client.receive_exactly(conn, client.REQUEST_HEADER.size - len(data))
        size = client.REQUEST_HEADER.unpack(data + (rest or b""))[0]
        if size > _MAX_REQUEST:
            raise ValueError("request too large")
        body = client.receive_exactly(conn, size)
        try:
            request = marshal.loads(body) if body is not None else None
        except (EOFError, TypeError) as exc:
            raise ValueError("malformed request") from exc
        if not isinstance(request, dict):
            raise ValueError("malformed request")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return request, fds


def _work(channel: socket.socket) -> None:
    """A worker: start an egglog child on the rule files, wait for a
    command, become the client's command (descriptors, directory,
    environment, umask), run it, tell the client its status and exit."""
    code = 1
    conn: socket.socket | None = None
    try:
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from hardboiled.select import eqsat
        from hardboiled.select.rule_files import prestart_rules
        from hardboiled.support import identity

        prestart_rules()
        identity.code_signature(), identity.code_identity(), identity.egglog_identity()  # as the command will ask
        # Everything loaded so far out of the collector's sight: a
        # collection of the oldest generation in the command would walk
        # every object the server loaded (numpy, the pipeline), 10 ms or
        # more, and copy each page it touches out of the memory the fork
        # shares. What is frozen is never collected: the worker ends after
        # its one command.
        gc.freeze()
        try:
            request, fds = _receive(channel)
        except (OSError, ValueError):
            os._exit(0)  # the server stopped
        conn = socket.socket(fileno=fds[0])
        conn.setblocking(True)  # the server's timeout made the shared descriptor non-blocking
        if request.get("limits") != client.resource_limits():
            conn.sendall(client.PID_FRAME.pack(b"R", 0))  # not under the command's limits: it runs by itself
            conn.close()
            os._exit(_REFUSED)
        conn.sendall(client.PID_FRAME.pack(b"P", os.getpid()))
        if eqsat._warm is not None:
            eqsat._warm.started = time.perf_counter()  # its time counts from the command, as a child's would
        _become_the_command(request, fds[1:])
        if identity.code_signature() != request.get("code_signature"):
            identity.forget()  # other rules (HARDBOILED_RULES_DIR), or code changed since the fork: ask again
        finished = threading.Event()
        threading.Thread(target=_end_with_the_client, args=(conn, finished), daemon=True).start()
        from hardboiled.support import fileio

        fileio.before_commit.append(lambda: _end_if_the_client_is_gone(conn))
        code = _run(list(request["argv"]))
        finished.set()
    except BaseException:  # in the server's own code: Python's report and status
        traceback.print_exc()
        sys.stderr.flush()
    finally:
        if conn is not None:
            try:
                conn.sendall(client.STATUS_FRAME.pack(b"X", code))
            except OSError:
                pass  # the client is gone
        os._exit(code)


def _become_the_command(request: dict[str, Any], fds: list[int]) -> None:
    """The client's standard descriptors, directory, environment, umask and
    program name."""
    from hardboiled.support import fileio

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    fileio.adopt_umask(int(request["umask"]))
    _open_standard_streams(request.get("encodings") or ["utf-8"] * 3)
    sys.modules["__main__"].__package__ = request.get("main_package")
    sys.argv = [str(request.get("argv0") or "hardboiled"), *request["argv"]]
    for signum in request.get("ignored_signals") or ():
        signal.signal(signum, signal.SIG_IGN)  # as the command was started (nohup, say)


def _end_with_the_client(conn: socket.socket, finished: threading.Event) -> None:
    """The client sends nothing after its request: the end of its
    connection means it is gone (SIGKILL, say), and the command ends as a
    terminated one does (exit 143, nothing half-written), not writing
    outputs that nobody waits for."""
    try:
        while conn.recv(1):
            pass
    except OSError:
        pass
    if not finished.is_set():
        _end_as_terminated()


def _end_if_the_client_is_gone(conn: socket.socket) -> None:
    """Before the command commits an output: what ``_end_with_the_client``
    does, where the client's connection has ended already (that thread may
    not have run yet)."""
    try:
        gone = not conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return  # nothing to read: the client is there
    except OSError:
        gone = True
    if gone:
        _end_as_terminated()


def _end_as_terminated() -> None:
    """End the command as a terminated one ends (exit 143, nothing
    half-written), saying nothing more where it printed. The signal's
    handler runs on the main thread, the compile on another, which could
    commit in between: no transaction commits from here on."""
    from hardboiled.support.fileio import hold_commits

    quiet = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(quiet, fd)  # a killed command says nothing more where it printed
    hold_commits()
    os.kill(os.getpid(), signal.SIGTERM)


def _open_standard_streams(encodings: list[str]) -> None:
    """Streams on the client's descriptors, buffered as Python buffers a
    command's own: standard error by line, standard output by line only on
    a terminal."""
    stdin = open(0, encoding=encodings[0], closefd=False)
    stdout = open(1, "w", buffering=1 if os.isatty(1) else -1, encoding=encodings[1], closefd=False)
    stderr = open(2, "w", buffering=1, encoding=encodings[2], errors="backslashreplace", closefd=False)
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr


def _run(argv: list[str]) -> int:
    """The command, as the ``hardboiled`` entry point runs it: its exit
    status, after its exit handlers ran and its output was flushed."""
    from hardboiled.cli import direct, exit_status, interrupted

    try:
        direct.main(argv)
        code = 0
    except SystemExit as exit:
        code = exit_status(exit.code)
    except KeyboardInterrupt:  # before the command line took charge of it (a record replayed)
        code = interrupted()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code


def main() -> None:
    serve(sys.argv[1], float(sys.argv[2]))


if __name__ == "__main__":
    main()
