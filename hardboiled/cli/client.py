"""The ``hardboiled`` command's side of the compile server (cli/server.py).

A compile spends most of its time, when the result cache cannot answer,
starting up: Python, then the modules of the pipeline and numpy, then the
egglog child with its rule files. A server started once
(``hardboiled server start``) keeps all of that loaded, as Bazel's and
Gradle's daemons do. While one runs for this user and this build of
hardboiled, every ``hardboiled`` command hands its whole invocation to it:
the arguments, the working directory, the environment, the umask and its
own standard input, output and error (the descriptors themselves, passed
over a Unix socket), and exits with the status the server's worker ended
with. So a run through the server reads, writes, prints, colours and
exits exactly as it would have alone; signals sent to the command
(Ctrl-C, SIGTERM) go on to the worker.

Nothing here loads more than the standard library's light modules and
support/identity.py: the socket is ``_socket``'s and the signals
``_signal``'s, the C modules that ``socket`` and ``signal`` wrap in enums
(``socket`` alone, with ``enum`` and ``selectors``, took 9 ms, as long as
Python's own start). The socket is named by hardboiled's code signature: a
server of other code (an edit, a new egglog) is never asked. Anything that
goes wrong before a worker takes the command (no server, a stale socket, a
directory others can write, resource limits the worker does not run under)
leaves the command to run by itself, as it would without a server.
``HARDBOILED_NO_SERVER=1`` does that on purpose.
"""

from __future__ import annotations

import marshal
import os
import stat
import struct
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (20 ms at every start)
if TYPE_CHECKING:
    import signal as _signal
    import socket
    from typing import Any
else:
    import _signal  # signal's own functions, without its enums (the type checker reads them as signal's)

SERVER_DIRECTORY = "server"
"""The sockets live in this subdirectory of the default cache directory."""

PID_FRAME = struct.Struct("!cq")
"""The server's first answer: b"P" and the worker's process id."""
STATUS_FRAME = struct.Struct("!ci")
"""The last: b"X" and the worker's exit status (-N when signal N ended it)."""
REQUEST_HEADER = struct.Struct("!I")
"""A request's length, before the request (marshalled)."""
DEFAULT_IDLE_TIMEOUT_S = 3 * 3600


def server_directory() -> str:
    from hardboiled.support.identity import default_cache_dir

    return os.path.join(default_cache_dir(), SERVER_DIRECTORY)


def socket_path(directory: str) -> str:
    """The socket of the server for this build: hardboiled's code (by
    signature), egglog's build and the Python running it."""
    from hardboiled.support.digest import hex_digest  # not hashlib: OpenSSL costs 5 ms to load
    from hardboiled.support.identity import code_signature, egglog_identity

    identity = hex_digest(f"{code_signature()}\0{egglog_identity()}\0{sys.version}".encode())
    return os.path.join(directory, f"{identity[:20]}.sock")


LIMITED_RESOURCES = ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE",
                     "RLIMIT_NPROC", "RLIMIT_CORE", "RLIMIT_MEMLOCK")
"""The limits (``ulimit``) a command runs under: a worker runs a command
only under the same ones (it cannot raise its own, and an address-space
limit counts everything the server loaded), else the command runs here."""


def resource_limits() -> dict[str, list[int]]:
    import resource

    return {name: list(resource.getrlimit(getattr(resource, name)))
            for name in LIMITED_RESOURCES if hasattr(resource, name)}


def _standard_descriptors_open() -> bool:
    """A closed standard input, output or error would be the socket's
    descriptor (the lowest free one), handed to the worker as its own: such
    a command runs here."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            return False
    return True


def _code_signature() -> str:
    from hardboiled.support.identity import code_signature

    return code_signature()  # worked out already, for the socket's name


def connect(path: str) -> socket.socket | None:
    """A connection to the server at ``path``, or None: a Unix socket path
    is at most 107 bytes, and a socket no server listens on refuses. The
    connection is a ``_socket.socket``, which has every method used here
    (``socket.socket`` adds enums and ``with``)."""
    if len(os.fsencode(path)) > 100:
        return None
    try:
        if not stat.S_ISSOCK(os.stat(path).st_mode):
            return None
    except OSError:
        return None  # no server for this build (the directory holds other builds' sockets, or none)
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock  # type: ignore[return-value]  # the methods of socket.socket used here are _socket's


def send_request(sock: socket.socket, request: dict[str, object], fds: list[int]) -> None:
    """A length-prefixed request; the descriptors ride on its first byte.
    marshal, not JSON: it costs no import (json loads re), and both ends
    are the same Python (the socket's name says which)."""
    import _socket

    payload = marshal.dumps(request)
    data = REQUEST_HEADER.pack(len(payload)) + payload
    ancillary = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))] if fds else []
    sent = sock.sendmsg([data], ancillary)
    if sent < len(data):  # not otherwise: the server may have answered and closed already
        sock.sendall(data[sent:])


def receive_exactly(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def forward(argv: list[str]) -> int | None:
    """Run ``argv`` on the compile server and return its exit status; None
    when there is no server to run it (the caller runs it itself)."""
    if os.environ.get("HARDBOILED_NO_SERVER") == "1" or argv[:1] == ["server"]:
        return None
    directory = server_directory()
    if not os.path.isdir(directory):  # the common case, checked before anything is hashed
        return None
    from hardboiled.support.identity import path_problem

    if path_problem(directory) is not None:  # another user could have put a socket there
        return None
    if not _standard_descriptors_open():
        return None
    sock = connect(socket_path(directory))
    if sock is None:
        return None
    try:
        try:
            cwd = os.getcwd()
        except OSError:
            return None  # a deleted working directory: the command says so itself
        mask = os.umask(0o022)
        os.umask(mask)
        main_module = sys.modules.get("__main__")
        request = {"argv": argv, "argv0": sys.argv[0] if sys.argv else "hardboiled",
                   "main_package": getattr(main_module, "__package__", None),  # how click names the program
                   "cwd": cwd, "env": dict(os.environ), "umask": mask, "code_signature": _code_signature(),
                   "limits": resource_limits(),
                   "encodings": [getattr(stream, "encoding", None) or "utf-8"
                                 for stream in (sys.stdin, sys.stdout, sys.stderr)]}
        with _SignalsPassedOn() as signals:
            request["ignored_signals"] = signals.ignored
            try:
                send_request(sock, request, [0, 1, 2])
                answer = receive_exactly(sock, PID_FRAME.size)
            except OSError:
                answer = None
            if answer is None or answer[:1] != b"P":
                return None  # refused before it ran (b"R": other resource limits): the command runs here
            signals.worker = PID_FRAME.unpack(answer)[1]
            status = _status(sock)
    finally:
        sock.close()
    if status < 0:  # a signal ended the worker: it ends the command too, as it would have here
        if -status != _signal.SIGKILL:  # SIGKILL (the OOM killer's) has no handler to reset
            _signal.signal(-status, _signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        return 128 - status
    return status


class _SignalsPassedOn:
    """While the server runs the command, the signals that would have ended
    it go to its worker (one that comes before the worker is known waits
    for it, or, if the command runs here after all, is raised here again);
    a stop from the terminal (Ctrl-Z) stops the worker, then the command,
    and the command's continuing continues the worker. A signal the
    command was started ignoring (nohup, a script's background job) is
    left alone, and the worker ignores it too."""

    def __init__(self) -> None:
        self._worker: int | None = None
        self.pending: list[int] = []

    @property
    def worker(self) -> int | None:
        return self._worker

    @worker.setter
    def worker(self, pid: int) -> None:
        self._worker = pid
        for signum in self.pending:
            self._send(signum)

    def _send(self, signum: int) -> None:
        if self._worker is None:
            return
        try:
            os.kill(self._worker, signum)
        except OSError:
            pass  # it has just ended: its status is on its way

    def _pass_on(self, signum: int, frame: object) -> None:
        if self._worker is None:
            self.pending.append(signum)
        else:
            self._send(signum)

    def _stop(self, signum: int, frame: object) -> None:
        # SIGSTOP: the server's session has no terminal, and the kernel
        # drops a terminal stop sent into a process group no shell watches.
        self._send(_signal.SIGSTOP)
        _signal.signal(_signal.SIGTSTP, _signal.SIG_DFL)
        os.kill(os.getpid(), _signal.SIGTSTP)  # stops here, until SIGCONT
        _signal.signal(_signal.SIGTSTP, self._stop)

    def __enter__(self) -> _SignalsPassedOn:
        handlers = {_signal.SIGINT: self._pass_on, _signal.SIGTERM: self._pass_on, _signal.SIGHUP: self._pass_on,
                    _signal.SIGTSTP: self._stop, _signal.SIGCONT: self._pass_on}
        self.ignored = [int(signum) for signum in handlers if _signal.getsignal(signum) == _signal.SIG_IGN]
        self.previous = {signum: _signal.signal(signum, handler) for signum, handler in handlers.items()
                         if signum not in self.ignored}
        return self

    def __exit__(self, *exc: object) -> None:
        for number, handler in self.previous.items():
            _signal.signal(number, handler)
        if self._worker is None:
            for signum in self.pending:
                os.kill(os.getpid(), signum)


def _status(sock: socket.socket) -> int:
    """The worker's exit status, once it has ended."""
    try:
        answer = receive_exactly(sock, STATUS_FRAME.size)
    except OSError:
        answer = None
    if answer is None:
        sys.stderr.write("hardboiled: error: the compile server ended this run without an answer; "
                         "run the command again with HARDBOILED_NO_SERVER=1, and stop the server "
                         "(hardboiled server stop)\n")
        return 70  # ExitCode.INTERNAL_ERROR (support/diagnostics.py, not loaded here)
    return STATUS_FRAME.unpack(answer)[1]


# --------------------------------------------------------------------------
# Managing the server (the ``hardboiled server`` commands)
# --------------------------------------------------------------------------


def start(idle_timeout_s: float) -> tuple[bool, dict[str, Any]]:
    """Start a server for this build unless one runs: (started, its status)."""
    import subprocess
    import time

    from hardboiled.support.identity import path_problem

    directory = server_directory()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    problem = path_problem(directory)
    if problem is not None:
        raise OSError(f"'{directory}' {problem}")
    path = socket_path(directory)
    running = status(path)
    if running is not None:
        return False, running
    if len(os.fsencode(path)) > 100:
        raise OSError(f"the socket path '{path}' is too long for a Unix socket; set HARDBOILED_CACHE_DIR "
                      "to a shorter directory")
    log = os.open(os.path.join(directory, "server.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        subprocess.Popen([sys.executable, "-m", "hardboiled.cli.server", path, str(idle_timeout_s)],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                         close_fds=True, cwd="/")
    finally:
        os.close(log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        running = status(path)
        if running is not None:
            return True, running
        time.sleep(0.05)
    raise OSError(f"the server did not answer within 60 s; see {os.path.join(directory, 'server.log')}")


def status(path: str) -> dict[str, Any] | None:
    """What the server at ``path`` says of itself, or None when none answers."""
    return _control(path, "status")


def stop_all() -> list[dict[str, Any]]:
    """Stop every server of this user (of any build); what each said."""
    directory = server_directory()
    try:
        names = sorted(name for name in os.listdir(directory) if name.endswith(".sock"))
    except OSError:
        return []
    stopped = []
    for name in names:
        answer = _control(os.path.join(directory, name), "stop")
        if answer is not None:
            stopped.append(answer)
    return stopped


def _control(path: str, command: str) -> dict[str, Any] | None:
    sock = connect(path)
    if sock is None:
        return None
    try:
        sock.settimeout(10)
        try:
            send_request(sock, {"control": command}, [])
            header = receive_exactly(sock, REQUEST_HEADER.size)
            if header is None:
                return None
            body = receive_exactly(sock, REQUEST_HEADER.unpack(header)[0])
            answer = marshal.loads(body) if body is not None else None
        except (OSError, ValueError, EOFError, TypeError):
            return None
    finally:
        sock.close()
    return answer if isinstance(answer, dict) else None
