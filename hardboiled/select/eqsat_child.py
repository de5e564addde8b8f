"""The egglog child process (``python -m hardboiled.select.eqsat_child``):
the other half of select/eqsat.py, which starts it, talks to it and
enforces its limits (see there for the protocol).

It runs the requests' chunks with ``egglog.bindings``, a schedule's repeat
to its fixpoint (select/rounds.py), and answers with the extracted terms.
It imports nothing but the standard library's light modules, the bindings
and rounds.py: a child starts for every compile that is not a server's or
a kept one's, and select/eqsat.py's own imports (dataclasses, subprocess,
threading, the diagnostics) took it 40 ms before the bindings.
"""

from __future__ import annotations

import json
import os
import sys

from hardboiled.select.rounds import schedule_parts

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

IDLE_EXIT_S = 60.0
"""A kept child with no request for this long exits (its parent may
never compile again, and it holds the rules' e-graph)."""


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
            for name in sorted(os.listdir(location)):
                if name.startswith("bindings.") and name.endswith((".so", ".pyd")):
                    candidate = os.path.join(location, name)
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
        write_all(stdout, json.dumps(answer).encode() + b"\n")
        idle[0] = IDLE_EXIT_S
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


def write_all(fd: int, data: bytes) -> None:
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
    scopes = request.get("scopes", [])
    for position, scope in enumerate(scopes):
        # The last scope runs on the shared e-graph itself: nothing after it
        # reads that e-graph again (a kept child pops the whole request
        # after answering), and a push copies every table, the rules'
        # included (2.6 ms of a 26 ms request for the AMX matmul, its pop 3.4).
        last = position == len(scopes) - 1
        if not last:
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
        if not last:
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
        write_all(sys.stdout.fileno(), json.dumps(answer).encode() + b"\n")
    # Skip interpreter teardown: freeing a large e-graph can take longer than
    # building it, and the answer is already out.
    os._exit(0)


if __name__ == "__main__":
    main()
