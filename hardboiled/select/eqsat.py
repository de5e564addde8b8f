"""The one module that talks to egglog.

egglog runs in a child process (``python -m hardboiled.select.eqsat_child``), so
that a crash, a runaway saturation or a memory blow-up inside the Rust
library becomes a clean diagnostic instead of a hang or a dead compiler:

* the parent sends a JSON request on the child's stdin: the program as a
  list of named chunks (so egglog's errors name the real rule file), and the
  names of the roots to extract;
* the child runs it with ``egglog.bindings`` and answers with JSON: one
  extracted term per root (as egglog's s-expression text), its cost, and the
  e-graph's size;
* a request may also carry scopes: each runs its own chunks between
  ``(push)`` and ``(pop)``, after the shared ones, and extracts its own
  roots there. Statements saturated in scopes of bounded size cost time
  and memory linear in their number: one e-graph holding them all grows
  the cost of every rule match with the whole program;
* the parent enforces a wall-clock timeout and an address-space cap
  (``RLIMIT_AS``) on the child.

Only the low-level ``egglog.bindings`` API is used (``EGraph``,
``parse_program``, ``run_program``, ``ExtractBest``, ``serialize``), which is
the same in egglog 13.2 and 14.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import re
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hardboiled.select.eqsat_child import write_all
from hardboiled.select.limits import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S
from hardboiled.select.spare import close_pipes, discard_spare, spawn, take_spare
from hardboiled.support import children
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError, InputError, Location
from hardboiled.support.environment import OutOfMemory, classify_fault


class EgglogError(HardboiledError):
    """egglog rejected the program (a bug in a rule file or the encoding)."""

    exit_code = ExitCode.INTERNAL_ERROR


class ResourceLimitError(HardboiledError):
    """egglog ran out of time or memory."""

    exit_code = ExitCode.RESOURCE_LIMIT


@dataclass(frozen=True, slots=True)
class ProgramChunk:
    """A piece of egglog program text and the file name egglog should report."""

    filename: str
    text: str
    users: bool = False
    """The user wrote it (rules from HARDBOILED_RULES_DIR): an error egglog
    finds in it is an input error (exit 2), not a bug in hardboiled."""


@dataclass(frozen=True, slots=True)
class Scope:
    """Chunks run between ``(push)`` and ``(pop)``, after the shared chunks,
    and the roots extracted before the pop."""

    chunks: tuple[ProgramChunk, ...]
    roots: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EgraphSize:
    nodes: int
    classes: int


@dataclass(frozen=True, slots=True)
class EqsatResult:
    terms: tuple[str, ...]
    """One extracted s-expression per requested root, in order (the shared
    roots, then each scope's)."""
    costs: tuple[int, ...]
    size: EgraphSize | None
    """With scopes: the sum over the scopes (each counts the shared part)."""
    seconds: float
    """Wall-clock time of the child, start-up included."""
    run_report: dict[str, Any] = field(default_factory=dict)
    cached: bool = False
    """Taken from the result cache: no egglog run happened."""


class _WarmChild:
    """An egglog child started ahead of time, which has already run the
    first chunks of the program (the rule files) while the parent was still
    parsing and extracting; ``run_egglog`` sends it the rest.

    It is kept after it answers (``keep`` in the request): it runs each
    program's own chunks between ``(push)`` and ``(pop)``, so that the next
    compile in this process (a batch, a ``-j`` worker, the API, the test
    suite) finds the rules run already. ``PR_SET_PDEATHSIG``
    (support/children.py) kills a child when the thread that started it
    ends: one whose thread has ended is not used again, and one that dies
    all the same (its thread ended as the request went out) is replaced by
    a fresh child that runs the whole program."""

    def __init__(self, prelude: list[ProgramChunk], memory_mb: int):
        self.prelude = [(c.filename, c.text) for c in prelude]
        self.memory_mb = memory_mb
        self.owner = os.getpid()
        self.served = 0
        self.idle_since = time.monotonic()
        spare = take_spare(memory_mb)
        if spare is not None:  # started before the command line loaded, by the main thread
            self.proc, self.thread, self.started = spare.proc, spare.thread, spare.started
        else:
            self.proc, self.thread, self.started = spawn(memory_mb), threading.current_thread(), time.perf_counter()
        # More than a pipe's worth of rules: written from a thread, so that
        # the parent goes on while the child starts up and reads them.
        self.writer = threading.Thread(target=self._write, args=(_message(prelude, None, False),), daemon=True)
        try:
            self.writer.start()
        except RuntimeError:  # no memory for the thread's stack: the child must not be left behind
            self.proc.kill()
            _finish(self.proc)
            raise

    def _write(self, data: bytes) -> None:
        try:
            assert self.proc.stdin is not None
            write_all(self.proc.stdin.fileno(), data)  # blocking until run_egglog's exchange
        except (OSError, ValueError):
            pass  # it died: run_egglog reports how

    def serves(self, chunks: list[ProgramChunk], memory_mb: int) -> bool:
        head = [(c.filename, c.text) for c in chunks[: len(self.prelude)]]
        fresh = not self.served or (time.monotonic() - self.idle_since < _REUSE_WITHIN_S and self.thread.is_alive())
        return memory_mb == self.memory_mb and head == self.prelude and fresh and self.proc.poll() is None

    def let_go(self) -> None:
        """In a process that inherited this child through a fork (a ``-j``
        worker of the compile server's worker, cli/server.py): close this
        process's copies of its pipes, so that only its owner holds them
        (the child sees its input end when its owner is done with it), and
        leave it to its owner. Unbuffered
        pipes (select/spare.py, ``spawn``) hold no lock that the fork could have copied held."""
        close_pipes(self.proc)

    def discard(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.writer.join()
        _finish(self.proc)


_REUSE_WITHIN_S = 30.0
"""A kept child idle for longer is not used again: it leaves by itself
after ``eqsat_child.IDLE_EXIT_S``, and must not be found leaving."""


_warm: _WarmChild | None = None


def has_prestarted_child() -> bool:
    """Whether a prestarted or kept child is there (select/spare.py starts
    no spare then)."""
    return _warm is not None


def prestart(prelude: list[ProgramChunk], memory_mb: int = DEFAULT_MEMORY_MB) -> None:
    """Start an egglog child now and have it run ``prelude`` (the rule
    files): the next ``run_egglog`` whose program starts with these chunks
    sends only the rest, and does not wait for the child to start."""
    global _warm
    _let_go_of_inherited()
    if _warm is not None and _warm.serves(prelude, memory_mb):
        return  # started ahead already (the compile server's worker, cli/server.py), or kept from the last run
    discard_prestarted()
    try:
        _warm = _WarmChild(prelude, memory_mb)
    except (OSError, RuntimeError):  # no memory for a child or a thread now: run_egglog starts one (or says why)
        _warm = None


def _let_go_of_inherited() -> None:
    """A prestarted child this process did not start is its parent's."""
    global _warm
    if _warm is not None and _warm.owner != os.getpid():
        _warm.let_go()
        _warm = None


def discard_prestarted() -> None:
    """Stop the prestarted or kept child."""
    global _warm
    _let_go_of_inherited()
    if _warm is not None:
        _warm.discard()
        _warm = None


def _discard_children() -> None:
    """At exit: a spare no compile took, and the prestarted or kept child."""
    try:
        discard_spare()
    except (KeyboardInterrupt, MemoryError):
        pass  # a Ctrl-C, or no memory, as the process leaves: the child dies with it all the same
    discard_prestarted()


atexit.register(_discard_children)


def discard_unused() -> None:
    """Stop a prestarted child that no run used (a compile that did not
    saturate after all); a kept one stays for the next compile."""
    _let_go_of_inherited()
    if _warm is not None and not _warm.served:
        discard_prestarted()


def _finish(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """Close the child's input, read the rest of its output and wait for it."""
    if proc.stdin is not None and not proc.stdin.closed:
        try:
            proc.stdin.close()
        except OSError:
            pass
    out, err = bytearray(), bytearray()
    for stream, into in ((proc.stdout, out), (proc.stderr, err)):
        if stream is not None and not stream.closed:
            while chunk := stream.read(1 << 16):
                into += chunk
            stream.close()
    proc.wait()
    children.untrack(proc)
    return bytes(out), bytes(err)


def _chunks_json(chunks: tuple[ProgramChunk, ...] | list[ProgramChunk]) -> list[dict[str, str]]:
    return [{"filename": c.filename, "text": c.text} for c in chunks]


def _message(chunks: list[ProgramChunk], roots: list[str] | None, measure_size: bool,
             scopes: tuple[Scope, ...] = (), keep: bool = False) -> bytes:
    """One line of the child's input: chunks to run, then (with ``roots``)
    what to extract and the scopes to run; the child answers after a
    message with roots, in one line, and then (with ``keep``) goes back to
    the e-graph it had before that message and waits for the next one."""
    return json.dumps({"chunks": _chunks_json(chunks), "roots": roots, "measure_size": measure_size,
                       "scopes": [{"chunks": _chunks_json(s.chunks), "roots": list(s.roots)} for s in scopes],
                       "keep": keep}).encode() + b"\n"


def _exchange(proc: subprocess.Popen[bytes], message: bytes, deadline: float) -> tuple[bytes | None, bytes]:
    """Send ``message``, and read the answer's line: (the line, or None
    when the child's output ended first; what it wrote to stderr).
    ``subprocess.TimeoutExpired`` at ``deadline`` (``time.monotonic``)."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()
    view = memoryview(message)
    with selectors.DefaultSelector() as selector:
        os.set_blocking(proc.stdin.fileno(), False)
        selector.register(proc.stdin, selectors.EVENT_WRITE)
        selector.register(proc.stdout, selectors.EVENT_READ, out)
        selector.register(proc.stderr, selectors.EVENT_READ, err)
        while b"\n" not in out:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(proc.args, 0)
            for key, _ in selector.select(remaining):
                if key.fileobj is proc.stdin:
                    try:
                        view = view[proc.stdin.write(view) or 0:]
                    except BrokenPipeError:  # it died: its output ends too
                        view = view[:0]
                    if not view:
                        selector.unregister(proc.stdin)
                    continue
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    key.data.extend(chunk)
                elif key.fileobj is proc.stdout:
                    return None, bytes(err)
                else:
                    selector.unregister(key.fileobj)
    line, _, rest = bytes(out).partition(b"\n")
    return (line if not rest else b"", bytes(err))  # more than one answer: malformed


def run_egglog(
    chunks: list[ProgramChunk],
    roots: list[str],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_mb: int = DEFAULT_MEMORY_MB,
    measure_size: bool = True,
    scopes: tuple[Scope, ...] = (),
) -> EqsatResult:
    """Run an egglog program in a child process and extract ``roots``, then
    run each scope (in the prestarted or kept child, when it has run the
    program's first chunks)."""
    global _warm
    _let_go_of_inherited()
    deadline = time.monotonic() + timeout_s  # for the program, also when a kept child must be replaced
    warm, _warm = _warm, None
    if warm is not None and not warm.serves(chunks, memory_mb):
        warm.discard()
        warm = None
    if warm is not None:
        try:
            warm.writer.join()
            start = warm.started if not warm.served else time.perf_counter()
            rest = chunks[len(warm.prelude):]
            answer = _ask(warm.proc, _message(rest, roots, measure_size, scopes, keep=True), deadline, timeout_s,
                          memory_mb, chunks, reused=warm.served > 0)
            if answer is not None and warm.thread.is_alive() and warm.proc.poll() is None and _warm is None:
                warm.served += 1
                warm.idle_since = time.monotonic()
                _warm, warm = warm, None
        finally:
            if warm is not None:  # not kept: gone, failed, interrupted, or another took its place
                warm.discard()
        if answer is not None:
            return _result(answer, time.perf_counter() - start)
        # A kept child that has gone (its thread ended, or killed from outside): a fresh one runs the whole program.
    return _run_fresh(spawn(memory_mb), chunks, roots, measure_size, scopes, deadline, timeout_s, memory_mb)


def _run_fresh(proc: subprocess.Popen[bytes], chunks: list[ProgramChunk], roots: list[str], measure_size: bool,
               scopes: tuple[Scope, ...], deadline: float, timeout_s: float, memory_mb: int) -> EqsatResult:
    """The whole program in ``proc``, a child just started."""
    start = time.perf_counter()
    try:
        answer = _ask(proc, _message(chunks, roots, measure_size, scopes), deadline, timeout_s, memory_mb, chunks)
    finally:
        if proc.poll() is None:
            proc.kill()
        _finish(proc)
    assert answer is not None
    return _result(answer, time.perf_counter() - start)


def run_egglog_side_by_side(chunks: list[ProgramChunk], batches: list[tuple[Scope, ...]], *,
                            timeout_s: float = DEFAULT_TIMEOUT_S,
                            memory_mb: int = DEFAULT_MEMORY_MB) -> EqsatResult:
    """Saturate each batch of scopes at the same time, each in a child of
    its own: the first in the prestarted or kept child (``run_egglog``),
    the others in fresh ones, which declare the shared chunks first. A
    scope runs between ``(push)`` and ``(pop)`` on the shared chunks alone,
    so the child that runs it changes nothing it extracts
    (tests/select/test_side_by_side.py compares). The answer is the one a
    single child running every batch in turn would give: terms and costs
    in batch order, sizes and rounds added up. Each child has the whole
    time and memory limit; where no second child or thread can be started,
    the batches run in one."""
    if len(batches) > 1:
        result = _side_by_side(chunks, batches, timeout_s, memory_mb)
        if result is not None:
            return result
    return run_egglog(chunks, [], timeout_s=timeout_s, memory_mb=memory_mb,
                      scopes=tuple(scope for batch in batches for scope in batch))


def _side_by_side(chunks: list[ProgramChunk], batches: list[tuple[Scope, ...]], timeout_s: float,
                  memory_mb: int) -> EqsatResult | None:
    """The batches in children of their own, at the same time; None where
    a child or a thread cannot be started now (those started are stopped)."""
    deadline = time.monotonic() + timeout_s
    procs: list[subprocess.Popen[bytes]] = []
    outcomes: list[EqsatResult | None] = [None] * (len(batches) - 1)
    # In the order they happened: the first is the one to report (the
    # others may be children it had stopped).
    failures: list[BaseException] = []

    def saturate(index: int) -> None:
        try:
            outcomes[index] = _run_fresh(procs[index], chunks, [], True, batches[index + 1], deadline, timeout_s,
                                         memory_mb)
        except BaseException as exc:  # raised in the calling thread, below
            failures.append(exc)
            _kill(procs)  # the answer is lost already: the others stop too

    started: list[threading.Thread] = []
    try:
        for _ in batches[1:]:
            procs.append(spawn(memory_mb))
        for index in range(len(procs)):
            thread = threading.Thread(target=saturate, args=(index,), name=f"hardboiled-egglog-{index + 1}",
                                      daemon=True)
            thread.start()
            started.append(thread)
    except (OSError, RuntimeError):  # no memory for another child or thread now
        _kill(procs)
        for thread in started:
            thread.join()  # its child reaped by _run_fresh
        for proc in procs[len(started):]:
            _finish(proc)
        return None
    try:
        first = run_egglog(chunks, [], timeout_s=timeout_s, memory_mb=memory_mb, scopes=batches[0])
    except BaseException:  # a limit, an interrupt: the other children must not outlive it
        _kill(procs)
        raise
    finally:
        for thread in started:
            thread.join()
    if failures:
        raise failures[0]
    return _merged([first, *(o for o in outcomes if o is not None)])


def _kill(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()


def _merged(results: list[EqsatResult]) -> EqsatResult:
    """Several children's answers as one child's: in order, sizes and
    counts added up, flags or-ed."""
    report: dict[str, Any] = {}
    for result in results:
        for key, value in result.run_report.items():
            report[key] = (bool(report.get(key)) or value) if isinstance(value, bool) else report.get(key, 0) + value
    sizes = [r.size for r in results]
    size = EgraphSize(sum(s.nodes for s in sizes if s), sum(s.classes for s in sizes if s)) if all(sizes) else None
    return EqsatResult(tuple(t for r in results for t in r.terms), tuple(c for r in results for c in r.costs), size,
                       max(r.seconds for r in results), report)


def _ask(proc: subprocess.Popen[bytes], message: bytes, deadline: float, timeout_s: float, memory_mb: int,
         chunks: list[ProgramChunk], reused: bool = False) -> dict[str, Any] | None:
    """The child's answer to ``message`` (None: a ``reused`` child had
    gone before it answered); a child that does not answer is waited for,
    and its failure raised."""
    try:
        line, stderr = _exchange(proc, message, deadline)
    except BaseException as exc:  # the time limit, or an interrupt: the child must not outlive this
        proc.kill()
        _finish(proc)
        if not isinstance(exc, subprocess.TimeoutExpired):
            raise
        raise ResourceLimitError(
            Diagnostic(
                "error",
                f"equality saturation did not finish within {timeout_s:g} s",
                notes=("raise the limit with --egglog-timeout, or lower --iterations",),
            )
        ) from None
    if line is None:
        rest, more = _finish(proc)
        if reused:
            return None
        raise _child_failure(subprocess.CompletedProcess(proc.args, proc.returncode, rest, stderr + more), memory_mb)
    try:
        answer: dict[str, Any] = json.loads(line)
    except json.JSONDecodeError:
        proc.kill()
        _finish(proc)
        raise EgglogError(Diagnostic("error", "egglog child process answered with malformed output")) from None
    if "fault" in answer:
        _finish(proc)
        fault = answer["fault"]
        raise classify_fault(fault["kind"], fault["message"], "the egglog child process") or \
            EgglogError(Diagnostic("error", f"egglog child process failed: {fault['kind']}: {fault['message']}"))
    if "error" in answer:
        _finish(proc)
        diagnostic = _egglog_diagnostic(answer["error"])
        if any(c.users and c.filename == answer["error"].get("filename") for c in chunks):
            raise InputError(dataclasses.replace(diagnostic, notes=(
                *diagnostic.notes, "this rule file comes from HARDBOILED_RULES_DIR; unset it to use the "
                "installed rules")))
        raise EgglogError(diagnostic)
    return answer


def _result(answer: dict[str, Any], seconds: float) -> EqsatResult:
    size = answer.get("size")
    return EqsatResult(
        terms=tuple(answer["terms"]),
        costs=tuple(answer["costs"]),
        size=EgraphSize(**size) if size else None,
        seconds=seconds,
        run_report=answer.get("report", {}),
    )


def _child_failure(proc: subprocess.CompletedProcess[bytes], memory_mb: int) -> HardboiledError:
    stderr = proc.stderr.decode(errors="replace").strip()
    last = stderr.splitlines()[-1] if stderr else f"exit status {proc.returncode}"
    fault = classify_fault("", stderr, "the egglog child process")
    if isinstance(fault, OutOfMemory) or proc.returncode in (-signal.SIGKILL, -signal.SIGABRT, -signal.SIGSEGV):
        limit = children.effective_memory_mb(memory_mb)
        how = ("raise the limit with --egglog-memory, or lower --iterations" if limit == memory_mb else
               f"hardboiled runs under an address-space limit of {limit} MB (ulimit -v), below the "
               f"{memory_mb} MB --egglog-memory asks for: raise it, or lower --iterations")
        return ResourceLimitError(
            Diagnostic(
                "error",
                f"equality saturation ran out of memory (limit {limit} MB)",
                notes=(f"egglog child: {last}", how),
            )
        )
    return EgglogError(Diagnostic("error", f"egglog child process failed: {last}"))


def _egglog_diagnostic(error: dict[str, Any]) -> Diagnostic:
    message = error["message"]
    filename = error.get("filename")
    text = error.get("text", "")
    lines = text.split("\n")
    if filename is None:
        return Diagnostic("error", f"egglog: {message.strip()}")
    # A message may cite several places ("In 1:1-16 of a.egg: ...\nIn 2:1-16
    # of b.egg: ..."), the first of them in an earlier file: take the last one
    # in the file that failed (egglog names it by its base name).
    places = list(re.finditer(r"^In (\d+):(\d+)-\S*?(?: of ([^:\n]+))?: ", message, re.MULTILINE))
    own = [m for m in places if m.group(3) is None or Path(filename).name == Path(m.group(3)).name]
    if not own:
        # No position (a panic): the file itself is the best location we have.
        return Diagnostic("error", f"egglog: {message.strip()}", Location(filename, 1, 1, lines[0]))
    m = own[-1]
    line, column = int(m.group(1)), int(m.group(2))
    source = lines[line - 1] if 0 < line <= len(lines) else None
    # After the last place: its source snippet, then (on later lines) the
    # message itself; older egglog put the message on the same line.
    snippet, _, rest = message[places[-1].end():].partition("\n")
    detail = rest.strip() or snippet.strip()
    return Diagnostic("error", f"egglog: {detail}", Location(filename, line, column, source))
