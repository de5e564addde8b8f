"""The one module that talks to egglog.

egglog runs in a child process (``python -m hardboiled.select.eqsat``), so
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
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hardboiled.select.options import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S
from hardboiled.select.rounds import schedule_parts
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
        self.started = time.perf_counter()
        self.owner = os.getpid()
        self.thread = threading.current_thread()
        self.served = 0
        self.idle_since = time.monotonic()
        self.proc = _spawn(memory_mb)
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
            _write_all(self.proc.stdin.fileno(), data)  # blocking until run_egglog's exchange
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
        pipes (_spawn) hold no lock that the fork could have copied held."""
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    def discard(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.writer.join()
        _finish(self.proc)


_REUSE_WITHIN_S = 30.0
"""A kept child idle for longer is not used again: it leaves by itself
after ``_IDLE_EXIT_S``, and must not be found leaving."""
_IDLE_EXIT_S = 60.0
"""A kept child with no request for this long exits (its parent may
never compile again, and it holds the rules' e-graph)."""

_warm: _WarmChild | None = None


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


atexit.register(discard_prestarted)


def discard_unused() -> None:
    """Stop a prestarted child that no run used (a compile that did not
    saturate after all); a kept one stays for the next compile."""
    _let_go_of_inherited()
    if _warm is not None and not _warm.served:
        discard_prestarted()


def _spawn(memory_mb: int) -> subprocess.Popen[bytes]:
    """The child: killed with its parent, tracked until it is waited for
    (support/children.py)."""
    return children.track(subprocess.Popen([sys.executable, "-m", "hardboiled.select.eqsat"], bufsize=0,
                                           stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           preexec_fn=children.preexec(children.memory_limit(memory_mb))))


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
    start = time.perf_counter()
    proc = _spawn(memory_mb)
    try:
        answer = _ask(proc, _message(chunks, roots, measure_size, scopes), deadline, timeout_s, memory_mb, chunks)
    finally:
        if proc.poll() is None:
            proc.kill()
        _finish(proc)
    assert answer is not None
    return _result(answer, time.perf_counter() - start)


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


# --------------------------------------------------------------------------
# The child process
# --------------------------------------------------------------------------


def _load_bindings() -> Any:
    """``egglog.bindings`` without running ``egglog/__init__.py``.

    The package's high-level API takes ~0.35 s to import; the compiled
    bindings alone load in milliseconds, and they are all we use.
    """
    import importlib.util

    try:
        spec = importlib.util.find_spec("egglog")
        locations = list(spec.submodule_search_locations or []) if spec else []
        for location in locations:
            for candidate in sorted(Path(location).glob("bindings.*")):
                if candidate.suffix in (".so", ".pyd"):
                    module_spec = importlib.util.spec_from_file_location("egglog.bindings", candidate)
                    if module_spec is None or module_spec.loader is None:
                        continue
                    module = importlib.util.module_from_spec(module_spec)
                    module_spec.loader.exec_module(module)
                    return module
    except Exception:  # fall back to the regular import below
        pass
    from egglog import bindings

    return bindings


def _count(egraph: Any) -> dict[str, int]:
    graph = json.loads(egraph.serialize([]).to_json())
    nodes = [n for n in graph["nodes"].values() if n["eclass"].split("-")[0] not in _PRIMITIVE_SORTS]
    return {"nodes": len(nodes), "classes": len({n["eclass"] for n in nodes})}


_PRIMITIVE_SORTS = frozenset({"i64", "f64", "String", "bool", "Unit", "BigInt", "BigRat"})


def _top_level_forms(text: str) -> list[str]:
    """The program's top-level forms, each padded with the newlines and
    spaces that put it where it is in ``text``, so that egglog's positions
    stay those of the file.

    egglog's Python bindings give every parsed node a span that holds its own
    copy of the whole text it was parsed from: parsing a program in one piece
    costs nodes x length, gigabytes for a few hundred stores. A form parsed on
    its own carries only itself and a few padding bytes per line before it.
    Anything the splitter cannot make sense of (unbalanced parentheses) is
    left to egglog, in one piece, so that it reports the error.
    """
    forms: list[str] = []
    depth, start, line, line_start, i, n = 0, 0, 1, 0, 0, len(text)
    start_line, start_column = 1, 0
    while i < n:
        c = text[i]
        if c == ";":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c == "\n":
            line, line_start = line + 1, i + 1
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\":
                    i += 1
                elif text[i] == "\n":
                    line, line_start = line + 1, i + 1
                i += 1
        elif c == "(":
            if depth == 0:
                start, start_line, start_column = i, line, i - line_start
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                forms.append("\n" * (start_line - 1) + " " * start_column + text[start:i + 1])
            elif depth < 0:
                return [text]
        i += 1
    if depth != 0 or not forms:
        return [text]
    return forms


def _serve(stdin: int, stdout: int) -> dict[str, Any] | None:
    """Run each message's chunks in one e-graph, and answer each message
    that names roots, in a line of its own. After a request with ``keep``,
    go back to the e-graph before it and wait for the next; otherwise (or
    after an error) return: the last answer, for ``main`` to write."""
    b = _load_bindings()
    egraph = b.EGraph()
    push, pop = (egraph.parse_program(text, filename="<request>") for text in ("(push)", "(pop)"))
    idle: list[float | None] = [None]  # no limit until the first answer (_lines)
    for line in _lines(stdin, idle):
        request = json.loads(line)
        if request.get("roots") is None:
            error = _run_chunks(b, egraph, request["chunks"], {})
            if error is not None:
                return error
            continue
        keep = bool(request.get("keep"))
        if keep:
            egraph.run_program(*push)
        report: dict[str, Any] = {}
        answer = _run_chunks(b, egraph, request["chunks"], report) or _answer(b, egraph, request, report)
        if not keep or "error" in answer:
            return answer
        _write_all(stdout, json.dumps(answer).encode() + b"\n")
        idle[0] = _IDLE_EXIT_S
        egraph.run_program(*pop)
    return None


def _lines(fd: int, idle_s: list[float | None]) -> Any:
    """The lines of ``fd``, until it ends or stays silent between lines for
    ``idle_s[0]`` seconds (None: for ever; a prestarted child waits for its
    first request however long its parent takes to parse)."""
    import select

    pending = b""
    while True:
        while b"\n" in pending:
            line, _, pending = pending.partition(b"\n")
            yield line
        if not pending and not select.select([fd], [], [], idle_s[0])[0]:
            return
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return
        pending += chunk


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _run_chunks(b: Any, egraph: Any, chunks: list[dict[str, str]], report: dict[str, Any]) -> dict[str, Any] | None:
    """Run the chunks; an error answer, or None."""
    for chunk in chunks:
        try:
            outputs = []
            for form in _top_level_forms(chunk["text"]):
                outputs += _run_form(b, egraph, form, chunk["filename"], report)
        except b.EggSmolError as exc:
            return {"error": {"message": str(exc), "filename": chunk["filename"], "text": chunk["text"]}}
        except BaseException as exc:  # a Rust panic: pyo3's PanicException is a BaseException
            if type(exc).__name__ != "PanicException":
                raise
            message = f"egglog panicked while running this file: {str(exc).splitlines()[0]}"
            return {"error": {"message": message, "filename": chunk["filename"], "text": chunk["text"]}}
        for output in outputs:
            if isinstance(output, b.RunScheduleOutput):
                report["updated"] = report.get("updated", False) or bool(output.report.updated)
    return None


def _run_form(b: Any, egraph: Any, form: str, filename: str, report: dict[str, Any]) -> list[Any]:
    """Run one top-level form; a schedule's repeat stops at the round that
    changes nothing (select/rounds.py). ``report["rounds"]`` counts the
    rounds the schedules ran."""
    parts = schedule_parts(form)
    if parts is None:
        return list(egraph.run_program(*egraph.parse_program(form, filename=filename)))
    outputs: list[Any] = []
    for part, rounds in parts:
        commands = egraph.parse_program(part, filename=filename)
        for _ in range(rounds):
            output = egraph.run_program(*commands)
            outputs += output
            report["rounds"] = report.get("rounds", 0) + 1
            if not any(isinstance(o, b.RunScheduleOutput) and o.report.updated for o in output):
                break
    return outputs


def _answer(b: Any, egraph: Any, request: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    """Extract the shared roots, then run and extract each scope."""
    answer = _extract(b, egraph, request["roots"])
    if "error" in answer:
        return answer
    sizes = []
    if request.get("measure_size") and (request["roots"] or not request.get("scopes")):
        sizes.append(_count(egraph))
    push, pop = (egraph.parse_program(text, filename="<scope>") for text in ("(push)", "(pop)"))
    for scope in request.get("scopes", []):
        egraph.run_program(*push)
        error = _run_chunks(b, egraph, scope["chunks"], report)
        if error is not None:
            return error
        extracted = _extract(b, egraph, scope["roots"])
        if "error" in extracted:
            return extracted
        answer["terms"] += extracted["terms"]
        answer["costs"] += extracted["costs"]
        if request.get("measure_size"):
            sizes.append(_count(egraph))
        egraph.run_program(*pop)
    answer["report"] = report
    if sizes:
        answer["size"] = {key: sum(size[key] for size in sizes) for key in ("nodes", "classes")}
    return answer


def _extract(b: Any, egraph: Any, roots: list[str]) -> dict[str, Any]:
    terms: list[str] = []
    costs: list[int] = []
    for root in roots:
        try:
            (output,) = egraph.run_program(*egraph.parse_program(f"(extract {root})", filename="<extract>"))
        except b.EggSmolError as exc:
            return {"error": {"message": str(exc)}}
        terms.append(output.termdag.to_string(output.term))
        costs.append(int(output.cost))
    return {"terms": terms, "costs": costs}


def main() -> int:
    try:
        answer = _serve(sys.stdin.fileno(), sys.stdout.fileno())
    except (ImportError, MemoryError) as exc:  # the machine's fault: the parent says so (support/environment.py)
        answer = {"fault": {"kind": type(exc).__name__, "message": str(exc)}}
    if answer is not None:
        _write_all(sys.stdout.fileno(), json.dumps(answer).encode() + b"\n")
    # Skip interpreter teardown: freeing a large e-graph can take longer than
    # building it, and the answer is already out.
    os._exit(0)


if __name__ == "__main__":
    main()
