"""Fuzzing hardboiled (issue 18): inputs drawn three ways, run through
``parse``, ``compile`` and ``compile --verify`` in a worker process, and
their outcomes counted by exit status.

The inputs, all reproducible from a seed:

* **grammar**: strings drawn from grammars/halide_ir.lark by hypothesis
  (``hypothesis.extra.lark``), derandomized from the seed;
* **bytes**: real Halide dumps (tests/fixtures) with bytes flipped, ranges
  deleted or repeated, and Halide tokens spliced in;
* **semantic**: real dumps with well-formed changes: numbers replaced by
  extreme ones, element types swapped, lane counts changed.

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


@dataclass(frozen=True)
class FuzzInput:
    strategy: str
    target: str
    data: bytes


def inputs(seed: int, count: int) -> list[FuzzInput]:
    """``count`` inputs: a third from each strategy, each run through one
    target in turn (parse, compile, verify)."""
    rng = random.Random(seed)
    sources = corpus()
    third = count // 3
    drawn = [("grammar", d) for d in grammar_strings(seed, third)]
    drawn += [("bytes", d) for d in byte_mutations(rng, sources, third)]
    drawn += [("semantic", d) for d in semantic_mutations(rng, sources, count - len(drawn))]
    drawn = drawn[:count]
    return [FuzzInput(strategy, TARGETS[i % len(TARGETS)], data) for i, (strategy, data) in enumerate(drawn)]


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
