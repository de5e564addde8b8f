"""Fuzzing hardboiled (issue 18): inputs drawn four ways, run through
``parse``, ``compile`` and ``compile --verify`` in a worker process, and
their outcomes counted by exit status.

The inputs, all reproducible from a seed:

* **grammar**: strings drawn from grammars/halide_ir.lark by hypothesis
  (``hypothesis.extra.lark``), derandomized from the seed;
* **bytes**: real Halide dumps (tests/fixtures) with bytes flipped, ranges
  deleted or repeated, and Halide tokens spliced in;
* **semantic**: real dumps with well-formed changes: numbers replaced by
  extreme ones, element types swapped, lane counts changed;
* **structural** (a quarter of the inputs): real dumps cut short at a line
  (or mid-line), with two statements swapped or one moved into another
  block, a name renamed everywhere or at one place, a scalar type replaced
  everywhere (lanes kept), or an allocation's, a loop's or an assert's
  number made 0, 1, -1 or huge; named "structural-KIND".

The goal is that no input ends in exit 70 (an internal error), a signal or
a timeout: every bad input is a diagnostic with a documented exit status.
The worker runs each input the way the command line does (``compile_text``
on a deep stack), so a crash kills only the worker, which is restarted
and the crash counted. bench/fuzz.py runs 10,000 inputs;
tests/cli/test_hardening.py a seeded sample of 500.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import select
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("parse", "compile", "verify")
MAX_CORPUS_BYTES = 20_000
"""Dumps larger than this are left out of the corpus: a fuzz input should
take milliseconds, not seconds."""


def corpus() -> list[bytes]:
    """Real Halide dumps: the fixtures' vectorizing stages and the sweep."""
    paths = sorted(ROOT.glob("tests/fixtures/halide/*/vectorizing.stmt")) + sorted(
        ROOT.glob("tests/fixtures/sweep/*.stmt"))
    return [data for path in paths if len(data := path.read_bytes()) <= MAX_CORPUS_BYTES]


# ------------------------------------------------------------------ inputs
_TOKENS = [b"(", b")", b"[", b"]", b"ramp(", b"x16(", b"let ", b"for (", b"allocate ", b"in AMXTile", b"in WMMAAccumulator",
           b"vector_reduce_add(", b"(int64)", b"(uint8)", b"bfloat16", b"float32x256", b"4294967296", b"-0", b"\n",
           b"{", b"}", b" = ", b"select(", b"\"", b"\\", b"\xff", b"\x00", b"9" * 50, b"x0(", b"ramp(0, 0, 0)"]


def byte_mutations(rng: random.Random, sources: list[bytes], count: int) -> Iterator[bytes]:
    for _ in range(count):
        data = bytearray(rng.choice(sources))
        for _ in range(rng.randint(1, 4)):
            if not data:
                break
            where = rng.randrange(len(data))
            action = rng.randrange(4)
            if action == 0:
                data[where] ^= 1 << rng.randrange(8)
            elif action == 1:
                del data[where:where + rng.randint(1, 64)]
            elif action == 2:
                chunk = data[where:where + rng.randint(1, 64)]
                data[where:where] = chunk * rng.randint(1, 8)
            else:
                data[where:where] = rng.choice(_TOKENS)
        yield bytes(data)


_NUMBER = re.compile(rb"(?<![A-Za-z_.$])-?\d+(?![\w.])")
_TYPE = re.compile(rb"\b(u?int|b?float)(8|16|32|64)\b")
_LANES = re.compile(rb"\b(x|float32x|int32x|uint8x|int8x|bfloat16x|float16x)(\d+)\b")
_EXTREMES = [b"0", b"-1", b"1", b"2147483647", b"2147483648", b"-2147483649", b"9223372036854775808",
             b"4294967295", b"65536", b"123456789012345678901234567890", b"7" * 5000]


def semantic_mutations(rng: random.Random, sources: list[bytes], count: int) -> Iterator[bytes]:
    for _ in range(count):
        data = rng.choice(sources)
        for _ in range(rng.randint(1, 3)):
            kind = rng.randrange(3)
            pattern = (_NUMBER, _TYPE, _LANES)[kind]
            matches = list(pattern.finditer(data))
            if not matches:
                continue
            m = rng.choice(matches)
            if kind == 0:
                new = rng.choice(_EXTREMES)
            elif kind == 1:
                new = rng.choice([b"int", b"uint", b"float", b"bfloat"]) + rng.choice([b"8", b"16", b"32", b"64"])
            else:
                new = m.group(1) + str(rng.choice([0, 1, 2, 3, 7, 8, 16, 4096, 65536, 2 ** 31])).encode()
            data = data[:m.start()] + new + data[m.end():]
        yield data


SAVED_GRAMMAR_STRINGS = (ROOT / "tests" / "fixtures" / "fuzz", ROOT / "bench" / "results" / "fuzz_grammar")
"""Where drawn grammar strings are kept, by seed and count: hypothesis takes
about 0.3 s to draw one. The test sample's are committed (``python -m
tests.fuzzing SEED COUNT`` writes them); bench/fuzz.py's are kept in
bench/results."""


def grammar_strings(seed: int, count: int) -> list[bytes]:
    """Strings of the IR grammar, drawn by hypothesis from the seed (or
    read back from where an earlier draw saved them)."""
    name = f"grammar-seed{seed}-{count}.json"
    for directory in SAVED_GRAMMAR_STRINGS:
        if (directory / name).exists():
            return [base64.b64decode(text) for text in json.loads((directory / name).read_text())]
    drawn = _draw_grammar_strings(seed, count)
    SAVED_GRAMMAR_STRINGS[1].mkdir(parents=True, exist_ok=True)
    (SAVED_GRAMMAR_STRINGS[1] / name).write_text(json.dumps([base64.b64encode(d).decode() for d in drawn]))
    return drawn


def _draw_grammar_strings(seed: int, count: int) -> list[bytes]:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis.extra.lark import from_lark
    from lark import Lark

    grammar = (ROOT / "grammars" / "halide_ir.lark").read_text()
    drawn: list[bytes] = []

    @hypothesis_seed(seed)
    @settings(max_examples=count, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(from_lark(Lark(grammar, parser="lalr", lexer="contextual", maybe_placeholders=True)))
    def draw(text: str) -> None:
        drawn.append(text.encode("utf-8", "surrogatepass"))

    draw()
    return drawn[:count]


# Structural mutations: real dumps cut short, with statements swapped or
# moved, names renamed, scalar types changed everywhere, and extents made
# zero or huge. They work on lines and names, not on bytes, so the text
# stays close to what Halide prints and reaches past the parser.
STRUCTURAL_KINDS = ("truncate", "swap", "rename", "type", "extent")
_IDENTIFIER = re.compile(r"(?<![\w.$])[A-Za-z_][\w.$]*")
_DEFINED = re.compile(r"\b(?:let|allocate|produce|consume)\s+([A-Za-z_][\w.$]*)|\bfor \(([A-Za-z_][\w.$]*),"
                      r"|(?<![\w.$])([A-Za-z_][\w.$]*)\[")
_SCALAR_TYPE = re.compile(r"(?<![\w.$])(u?int|b?float)(1|8|16|32|64)(?=x\d+(?![\w.$])|(?![\w.$]))")
_SCALAR_TYPES = ("int8", "int16", "int32", "int64", "uint1", "uint8", "uint16", "uint32", "uint64", "float16",
                 "bfloat16", "float32", "float64")
_ALLOCATE = re.compile(r"\ballocate [^\[\n]*\[[^\]\n]*\]")
_FOR = re.compile(r"\bfor \(")
_LITERAL = re.compile(r"(?<![\w.$])-?\d+(?![\w.])")
_EXTENT_VALUES = ("0", "1", "-1", "2147483647", "-2147483648", "65536")
_NEW_NAMES = ("t", "x", "f.s0.x.xo", "a$1.b.c", "let", "for", "float32", "ramp", "in", "n" * 300)


def structural_mutations(rng: random.Random, sources: list[bytes], count: int) -> Iterator[tuple[str, bytes]]:
    """(kinds, data): a dump with one mutation of STRUCTURAL_KINDS applied
    (a quarter of the time two), the kinds joined by "+"."""
    for _ in range(count):
        text = rng.choice(sources).decode("utf-8", "surrogateescape")
        kinds: list[str] = []
        for _ in range(2 if rng.random() < 0.25 else 1):
            for kind in rng.sample(STRUCTURAL_KINDS, len(STRUCTURAL_KINDS)):
                mutated = _STRUCTURAL[kind](rng, text)
                if mutated is not None and mutated != text:
                    text = mutated
                    kinds.append(kind)
                    break
        yield "+".join(kinds), text.encode("utf-8", "surrogateescape")


def _truncate(rng: random.Random, text: str) -> str | None:
    lines = text.splitlines(keepends=True)
    if not lines:
        return None
    cut = rng.randrange(len(lines))
    kept = "".join(lines[:cut])
    if rng.random() < 0.3:  # mid-line
        kept += lines[cut][:rng.randrange(len(lines[cut]))]
    return kept


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _swap(rng: random.Random, text: str) -> str | None:
    """Two lines of the same indentation swapped (statements mostly, block
    headers sometimes), or a statement moved into another block."""
    lines = text.splitlines()
    statements = [i for i, line in enumerate(lines) if line.strip() and not line.strip().startswith("}")
                  and (not line.rstrip().endswith("{") or rng.random() < 0.2)]
    if len(statements) < 2:
        return None
    i = rng.choice(statements)
    if rng.random() < 0.6:
        same = [j for j in statements if j != i and _indent(lines[j]) == _indent(lines[i])]
        if not same:
            return None
        j = rng.choice(same)
        lines[i], lines[j] = lines[j], lines[i]
    else:
        line = lines.pop(i).strip()
        j = rng.randrange(len(lines) + 1)
        before = lines[j - 1] if j > 0 else ""
        depth = _indent(before) + (1 if before.rstrip().endswith("{") else 0)
        lines.insert(j, " " * depth + line)
    return "\n".join(lines) + "\n"


def _rename(rng: random.Random, text: str) -> str | None:
    """One name (a buffer, a loop variable, a let) renamed everywhere, with
    the names it prefixes (``A`` and ``A.min.0``) or alone, or at one
    occurrence only."""
    defined = sorted({next(g for g in m.groups() if g) for m in _DEFINED.finditer(text)})
    if rng.random() < 0.2:
        defined = sorted({m.group(0) for m in _IDENTIFIER.finditer(text)})
    if not defined:
        return None
    name = rng.choice(defined)
    choice = rng.randrange(3)
    if choice == 0:
        new = f"{name}_renamed"
    elif choice == 1:
        new = rng.choice(defined)  # a clash with another name
    else:
        new = rng.choice(_NEW_NAMES)
    family = rng.random() < 0.4
    pattern = re.compile(r"(?<![\w.$])" + re.escape(name) + (r"(?=\.[\w$]|(?![\w.$]))" if family else r"(?![\w.$])"))
    if rng.random() < 0.7:
        return pattern.sub(lambda _: new, text)
    occurrences = list(pattern.finditer(text))
    if not occurrences:
        return None
    m = rng.choice(occurrences)
    return text[:m.start()] + new + text[m.end():]


def _retype(rng: random.Random, text: str) -> str | None:
    """One scalar type replaced everywhere, lane counts kept
    (``float32x256`` to ``float16x256``)."""
    present = sorted({m.group(1) + m.group(2) for m in _SCALAR_TYPE.finditer(text)})
    if not present:
        return None
    old = rng.choice(present)
    new = rng.choice([t for t in _SCALAR_TYPES if t != old])
    return _SCALAR_TYPE.sub(lambda m: new if m.group(1) + m.group(2) == old else m.group(0), text)


def _extent_value(rng: random.Random) -> str:
    if rng.random() < 0.7:
        return rng.choice(_EXTENT_VALUES)
    return str(rng.choice([1, -1]) * rng.randint(2 ** 16, 2 ** rng.choice([31, 32, 40, 63, 64, 100])))


def _extent(rng: random.Random, text: str) -> str | None:
    """A number in an allocation's extents, a loop's min or extent, or an
    integer literal in an assert made 0, 1, -1, huge or negative."""
    spans: list[tuple[int, int]] = []
    place = rng.randrange(3)
    if place == 0:
        for m in _ALLOCATE.finditer(text):
            inside = m.group(0)
            star = inside.find("*")
            if star >= 0:
                spans += [(m.start() + n.start(), m.start() + n.end()) for n in _LITERAL.finditer(inside, star)]
    elif place == 1:
        for m in _FOR.finditer(text):
            arguments = _top_level_arguments(text, m.end())
            if len(arguments) == 3:
                spans.append(arguments[2] if rng.random() < 0.75 else arguments[1])
    else:
        for line in re.finditer(r"(?m)^\s*assert\(.*$", text):
            spans += [(line.start() + n.start(), line.start() + n.end()) for n in _LITERAL.finditer(line.group(0))]
    if not spans:
        return None
    start, end = rng.choice(spans)
    return text[:start] + _extent_value(rng) + text[end:]


def _top_level_arguments(text: str, start: int) -> list[tuple[int, int]]:
    """The spans of the comma-separated arguments from ``start`` to the
    parenthesis that closes them (on the same line), spaces left out."""
    spans: list[tuple[int, int]] = []
    depth, begin = 0, start
    for i in range(start, len(text)):
        c = text[i]
        if c == "\n":
            return []
        if c in "([":
            depth += 1
        elif c in ")]" and depth:
            depth -= 1
        elif c in ",)" and not depth:
            piece = text[begin:i]
            spans.append((begin + len(piece) - len(piece.lstrip()), i))
            if c == ")":
                return spans
            begin = i + 1
    return []


_STRUCTURAL = {"truncate": _truncate, "swap": _swap, "rename": _rename, "type": _retype, "extent": _extent}


@dataclass(frozen=True)
class FuzzInput:
    strategy: str
    """"grammar", "bytes", "semantic", or "structural-KIND" (KIND one of
    STRUCTURAL_KINDS, or two joined by "+")."""
    target: str
    data: bytes


STRUCTURAL_SHARE = 4
"""One input in 4 is a structural mutation; the rest are shared by the
other three strategies."""


def inputs(seed: int, count: int) -> list[FuzzInput]:
    """``count`` inputs: a quarter structural mutations, the rest a third
    from each of the other strategies, each run through one target in turn
    (parse, compile, verify).

    The other strategies' inputs are those that the seed drew before the
    structural ones came in (a third each of ``count``): each keeps the
    first of its draws, with the same targets, and the structural ones come
    from a random.Random of their own."""
    rng = random.Random(seed)
    sources = corpus()
    third = count // 3
    drawn = [("grammar", d) for d in grammar_strings(seed, third)]
    drawn += [("bytes", d) for d in byte_mutations(rng, sources, third)]
    drawn += [("semantic", d) for d in semantic_mutations(rng, sources, count - len(drawn))]
    earlier = [FuzzInput(strategy, TARGETS[i % len(TARGETS)], data) for i, (strategy, data) in enumerate(drawn)]
    structural = count // STRUCTURAL_SHARE
    rest = count - structural
    shares = {"grammar": rest // 3, "bytes": rest // 3, "semantic": rest - 2 * (rest // 3)}
    kept: list[FuzzInput] = []
    for strategy, share in shares.items():
        kept += [item for item in earlier if item.strategy == strategy][:share]
    structural_rng = random.Random(f"structural-{seed}")
    kept += [FuzzInput(f"structural-{kinds}", TARGETS[i % len(TARGETS)], data)
             for i, (kinds, data) in enumerate(structural_mutations(structural_rng, sources, structural))]
    return kept[:count]


# ------------------------------------------------------------------ running
@dataclass
class Outcomes:
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(target, outcome) -> inputs; an outcome is "exit N", "signal N" or "timeout"."""
    failures: list[tuple[FuzzInput, str, str]] = field(default_factory=list)
    """Inputs that ended in exit 70, a signal or a timeout, with what was said."""

    def bad(self) -> int:
        return len(self.failures)


def run(fuzz_inputs: list[FuzzInput], timeout_s: float = 30.0, tree: Path = ROOT) -> Outcomes:
    """Run every input in a worker process (restarted after a crash or a
    timeout) and count the outcomes."""
    outcomes = Outcomes()
    worker: subprocess.Popen[bytes] | None = None
    try:
        for item in fuzz_inputs:
            if worker is None or worker.poll() is not None:
                worker = _start_worker(tree)
            outcome, said = _ask(worker, item, timeout_s)
            if outcome in ("timeout",) or outcome.startswith("signal"):
                worker.kill()
                worker.wait()
                worker = None
            outcomes.counts[(item.target, outcome)] += 1
            if outcome in ("exit 70", "timeout") or outcome.startswith("signal"):
                outcomes.failures.append((item, outcome, said))
    finally:
        if worker is not None:
            worker.kill()
            worker.wait()
    return outcomes


def _start_worker(tree: Path) -> subprocess.Popen[bytes]:
    # This file runs as a script, so that --tree may name a checkout
    # older than it; hardboiled comes from the tree.
    env = dict(os.environ, PYTHONPATH=str(tree))
    # -P: the directory of this file (tests/, whose packages mirror
    # hardboiled's and hold a select/ that would hide the standard
    # library's select) is not put first on sys.path.
    return subprocess.Popen([sys.executable, "-P", __file__, "worker"], cwd=tree, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)


def _ask(worker: subprocess.Popen[bytes], item: FuzzInput, timeout_s: float) -> tuple[str, str]:
    assert worker.stdin is not None and worker.stdout is not None
    request = {"target": item.target, "data": base64.b64encode(item.data).decode()}
    try:
        worker.stdin.write(json.dumps(request).encode() + b"\n")
        worker.stdin.flush()
    except BrokenPipeError:
        pass
    deadline = time.monotonic() + timeout_s
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout", ""
        ready, _, _ = select.select([worker.stdout], [], [], left)
        if not ready:
            continue
        chunk = os.read(worker.stdout.fileno(), 1 << 16)
        if not chunk:
            code = worker.wait()
            return (f"signal {-code}" if code < 0 else f"worker exit {code}"), ""
        line += chunk
    answer = json.loads(line)
    return f"exit {answer['code']}", answer.get("said", "")


def worker() -> None:
    """Answer requests on standard input, one JSON line each."""
    from hardboiled.pipeline.driver import compile_text
    from hardboiled.pipeline.options import CompileOptions
    from hardboiled.select.options import SelectionOptions

    selection = SelectionOptions(timeout_s=10.0)
    options = {"compile": CompileOptions.from_flags(selection=selection),
               "verify": CompileOptions.from_flags(selection=selection, verify=True)}
    for line in sys.stdin:
        request = json.loads(line)
        data = base64.b64decode(request["data"])
        if request["target"] == "parse":
            code, said = _parse(data)
        else:
            result = compile_text("fuzz.stmt", data, options[request["target"]])
            code = result.exit_code
            said = result.diagnostics[0].message if result.diagnostics else ""
        sys.stdout.write(json.dumps({"code": code, "said": said[:500]}) + "\n")
        sys.stdout.flush()


def _parse(data: bytes) -> tuple[int, str]:
    """What ``hardboiled parse`` does with ``data``: its exit status."""
    from hardboiled.frontend.parse import parse_input
    from hardboiled.frontend.stages import decode_input
    from hardboiled.ir.printer import print_ir
    from hardboiled.support.deep import call_deep
    from hardboiled.support.diagnostics import HardboiledError

    def parse_and_print() -> None:
        print_ir(parse_input(decode_input(data, "fuzz.stmt"), "fuzz.stmt").ir)

    try:
        call_deep(parse_and_print)
    except HardboiledError as exc:
        return int(exc.exit_code), exc.diagnostic.message
    except Exception as exc:  # what the command line reports as an internal error
        return 70, f"{type(exc).__name__}: {exc}"
    return 0, ""


if __name__ == "__main__" and sys.argv[1:] == ["worker"]:
    worker()
elif __name__ == "__main__":  # python -m tests.fuzzing SEED COUNT: save the grammar strings of inputs(SEED, COUNT)
    seed, count = int(sys.argv[1]), int(sys.argv[2])
    strings = _draw_grammar_strings(seed, count // 3)
    SAVED_GRAMMAR_STRINGS[0].mkdir(parents=True, exist_ok=True)
    target = SAVED_GRAMMAR_STRINGS[0] / f"grammar-seed{seed}-{count // 3}.json"
    target.write_text(json.dumps([base64.b64encode(d).decode() for d in strings], indent=0) + "\n")
    print(f"wrote {len(strings)} strings to {target}")
