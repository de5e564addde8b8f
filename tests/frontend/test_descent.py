"""The recursive-descent reader (hardboiled/frontend/descent.py) against
Lark's LALR parser of the grammar: on every input it reads, the same tree,
every token at the same line, column and offset; on the others it gives up
(``Unhandled``) and Lark reads them. The inputs are every real dump in the
fixtures, random IR as the printer prints it, and text made to trip a
reader that decides too early (keywords as names, contextual terminals)."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from lark import Token as LarkToken
from lark import Tree as LarkTree
from lark.exceptions import UnexpectedInput

from hardboiled import ir
from hardboiled.frontend.descent import Unhandled, parse_tree
from hardboiled.frontend.grammar import SCANNER_TABLE, halide_parser, scanner_table_text, stored_scanner_table
from hardboiled.frontend.regex_forms import first_characters
from hardboiled.frontend.scanning import INT_RUN_PATTERN, Scanner, split_runs
from hardboiled.frontend.stages import is_debug_log, select_stage
from hardboiled.frontend.syntax_tree import Token, Tree, expanded
from hardboiled.ir.printer import print_ir
from hardboiled.support.deep import call_deep

from .. import ir_strategies as irs
from ..conftest import ROOT

_TOKEN_FIELDS = ("type", "line", "column", "start_pos", "end_line", "end_column", "end_pos")
_SLOW_DIRECTORIES = {"final", "sweep", "operations"}
"""Megabytes of fixtures: read in the full suite only."""


def _difference(mine: object, lark: object, path: str = "") -> str | None:
    """Where two trees differ (tokens by text and position), or None."""
    if isinstance(lark, LarkTree):
        children = expanded(mine.children) if isinstance(mine, Tree) else []  # a run of literals: its trees
        if not isinstance(mine, Tree) or mine.data != lark.data or len(children) != len(lark.children):
            return f"{path}: {mine!s:.60} is not {lark.data} with {len(lark.children)} children"
        for i, (a, b) in enumerate(zip(children, lark.children)):
            found = _difference(a, b, f"{path}/{lark.data}[{i}]")
            if found:
                return found
        return None
    if isinstance(lark, LarkToken):
        if not isinstance(mine, Token) or str.__str__(mine) != str.__str__(lark):
            return f"{path}: token {str.__str__(lark)!r} read as {mine!s:.60}"
        for field in _TOKEN_FIELDS:
            if getattr(mine, field) != getattr(lark, field):
                return f"{path}: {field} of {str.__str__(lark)!r} is {getattr(mine, field)}, not {getattr(lark, field)}"
        return None
    return None if mine is lark else f"{path}: {mine!r:.40} is not {lark!r:.40}"


def _check(text: str) -> bool:
    """The reader agrees with Lark on ``text``; True if it read it."""
    try:
        lark = halide_parser().parse(text)
    except UnexpectedInput:
        lark = None
    try:
        mine = parse_tree(text)
    except Unhandled:
        return False
    assert lark is not None, "the reader accepted text that the grammar rejects"
    difference = _difference(mine, lark)
    assert difference is None, difference
    return True


_SWEEP_STRIDE = 8
"""The schedule sweep's 438 dumps vary one choice at a time: every 8th of
them is read (the mutation test below draws variety of its own)."""


def _dumps() -> list[object]:
    fixtures = ROOT / "tests" / "fixtures"
    paths = sorted(fixtures.glob("*/**/*.stmt"))
    sweep = [path for path in paths if path.relative_to(fixtures).parts[0] == "sweep"]
    paths = [path for path in paths if path not in sweep or sweep.index(path) % _SWEEP_STRIDE == 0]
    return [pytest.param(path, id=str(path.relative_to(fixtures)),
                         marks=[pytest.mark.slow] if path.relative_to(fixtures).parts[0] in _SLOW_DIRECTORIES else [])
            for path in paths]


_UNREAD_FORMS = ("fork {", "atomic (", "acquire (", "hoisted_storage", "realize ", "prefetch ", "predicate (")


@pytest.mark.parametrize("path", _dumps())
def test_reads_every_real_dump_as_lark_does(path: Path) -> None:
    text = path.read_text()
    if is_debug_log(text):
        text = select_stage(text, str(path), "vectorizing")[0]
    read = call_deep(_check, text)  # as a compile reads: on the deep stack (a block of 173 outputs nests deep)
    # It reads all of Halide's usual output; what it leaves to Lark is one
    # of the rarer statements.
    assert read or any(form in text for form in _UNREAD_FORMS), "the reader gave up on an ordinary dump"


@pytest.mark.parametrize(
    "source",
    [
        "let in = 1\nfree free\n",  # keywords as names: Lark's lexer decides
        "allocate a[float32 * (n*2) * 4] in Register if (uint1)1\na[0] = 1.000000f\n",
        "allocate a[float32 * (n * 2 + 3)]\n",  # padded extents
        "for (x, 0, extern) {\n a[x] = parallel(x)\n}\n",
        "f((halide_task_t)::g, inff, -inff, nanh, (void *)x, reinterpret<(void *)>((uint64)0))\n",
        "a[0] = (b[1]) if c\n",  # a parenthesized load is no predicated load
        "a[0] = (int32)b[1] if c\n",
        "a[0] = b[1] if c + 1\n",
        "a[0] = x + b[1] if c\n",  # a syntax error
        "let x = a + 1 in x*2\n",  # a let expression evaluated as a statement
        "let x = b[0] if c in x\n",
        "let x = (b[0] if c) in x\n",
        "x[0] =\n let a = 1 in\n let b = let c = 2 in c in\n a + b\n",
        "x[0] =\n let a = 1 in\n let b = 2 in x\n",
        "f(x) = 1\n",  # a provide is Lark's
        "predicate (c)\n a[0] = 1\n",
        "if (a) {\n} else if (b) {\n c[0] = 1\n} else {\n}\n",
        "for<CUDA> (x, 0, 4) {\n a[x] = (a<b>c)\n}\n",
        "a[0] = x -1\n",
        "a[0] = f()\nassert(x, halide_error(\"a \\\"b\\\"\"))\n",
        "allocate A[(void *) * 4]\n custom_new { (void *)g(A.buffer) }\n custom_delete { h(A); }\n",
        "module name=m, target=x86-64\nbuffer b = {...}\nexternal func f (a, b) {\n free x\n}\n",
        "a[0] = 1\n\n\n   \n",
        "a[0] = 1 @\n",
        "\n",
    ],
)
def test_decides_as_larks_contextual_lexer(source: str) -> None:
    _check(source)


_NINE = "1, 2, 3, 4, 5, 6, 7, 8, 9"


@pytest.mark.parametrize(("source", "read"), [
    (f"a[0] = f(v, {_NINE})\n", True),  # the run is the last argument
    (f"a[0] = f(v, {_NINE}, x)\n", True),  # an argument follows it
    (f"a[0] = f(v, {_NINE}, 9.5)\n", True),
    (f"a[0] = f(v, {_NINE}.5)\n", True),  # the last literal is a float's start: the run ends before it
    (f"a[0] = f({_NINE})\n", True),  # it starts a call's arguments
    (f"a[0] = f(v, {_NINE} + x)\n", True),  # its last literal starts an expression
    (f"a[0] = f(v, 1, 2, 3, 4, 5, 6, 7, 12345678901, {_NINE})\n", True),  # a literal too long for an IntRun
    (f"a[0] = f(v, (int32){_NINE})\n", True),  # after a type prefix
    (f"a[0] = f(v, -{_NINE.replace(', ', ', -')})\n", True),
    (f"a[0] = f(v, {_NINE}, )\n", False),  # a comma too many: Lark's syntax error
    (f"a[0] = {_NINE}\n", False),
    (f"for (x, {_NINE}) {{\n}}\n", False),
])
def test_a_run_of_integer_literals_reads_as_lark_reads_its_tokens(source: str, read: bool) -> None:
    """The scanner's run of integers is one token; the reader takes it as
    one argument where it stands alone, and splits it into the grammar's
    tokens wherever else it is: the same tree as Lark's either way."""
    assert _check(source) is read


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(irs.statements())
def test_reads_random_ir_as_lark_does(stmt: object) -> None:
    _check(print_ir(stmt))  # type: ignore[arg-type]


_MUTATIONS = ("let ", " in ", "if ", "(", ")", "[", "]", " * ", "*", "\n", " = ", "free ", "for (", "<CUDA>",
              "(int32)", " aligned(8, 0)", "x", "1", "-1", "1.5f", "inf", '"s"', "!", "{", "}", ",",
              "predicate (", "else ")


@pytest.mark.parametrize("seed", range(4))
def test_agrees_with_lark_on_mutated_dumps(seed: int) -> None:
    """Real dumps with a piece inserted, some characters cut or a line
    dropped, drawn from a seed: what the reader reads, Lark reads the same
    (and accepts); the rest it leaves to Lark, with no other error."""
    rng = random.Random(seed)
    dumps = sorted((ROOT / "tests" / "fixtures" / "halide").glob("*/vectorizing.stmt"))
    for _ in range(60):
        lines = rng.choice(dumps).read_text().split("\n")
        k = rng.randrange(len(lines))
        cut = rng.randrange(len(lines[k]) + 1)
        draw = rng.random()
        if draw < 0.4:
            lines[k] = lines[k][:cut] + rng.choice(_MUTATIONS) + lines[k][cut:]
        elif draw < 0.7:
            lines[k] = lines[k][:cut] + lines[k][cut + rng.randrange(1, 6):]
        else:
            del lines[k]
        _check("\n".join(lines).rstrip("\n") + "\n")


def test_reads_ordinary_statements_without_loading_lark() -> None:
    code = ("import sys\n"
            "from hardboiled.frontend.parse import parse_input\n"
            f"parse_input(open({str(_MATMUL)!r}).read())\n"
            "print(sorted(m for m in sys.modules if m == 'lark' or m.startswith('lark.')))\n")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_the_shipped_scanner_table_is_the_grammars() -> None:
    shipped = (ROOT / "grammars" / SCANNER_TABLE).read_text()
    assert shipped == scanner_table_text(), "run: make scanner"


_MATMUL = ROOT / "tests" / "fixtures" / "halide" / "amx_bf16_matmul_std_single" / "debug.log"


def test_reads_text_nested_deeper_than_the_recursion_limit_without_lark() -> None:
    """A caller on an ordinary stack (the default 1,000 frames) still gets
    the fast reader for deeply parenthesized text: it is read again on the
    compile's deep stack, not left to Lark."""
    depth = 400
    code = ("import gc, sys\n"
            "from hardboiled.frontend.parse import parse_input\n"
            f"text = 'f(' + '(' * {depth} + 'x' + ' + 1)' * {depth} + ')\\n'\n"
            "parsed = parse_input(text)\n"
            "print(gc.isenabled(), sorted(m for m in sys.modules if m == 'lark' or m.startswith('lark.')))\n")
    printed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert printed.strip() == "True []"


def test_a_long_text_is_read_once_on_the_deep_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read from an ordinary stack, a text longer than ``_READ_DEEP_FROM``
    goes to the deep stack at once (a failed first try on the caller's stack
    would cost as much as the read); a short one is read where it is."""
    from hardboiled.frontend import parse
    from hardboiled.support.deep import on_deep_stack

    reads: list[bool] = []
    read = parse._read

    def counted(*args: object) -> object:
        reads.append(on_deep_stack())
        return read(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(parse, "_read", counted)
    line = "x[ramp(0, 1, 8)] = x8(1)\n"
    parse.parse_input(line * (parse._READ_DEEP_FROM // len(line) + 1))
    parse.parse_input(line)
    assert reads == [True, False]


def test_the_collector_is_back_on_after_a_syntax_error() -> None:
    import gc

    from hardboiled.frontend.parse import parse_input
    from hardboiled.support.diagnostics import InputError

    assert gc.isenabled()
    with pytest.raises(InputError):
        parse_input("x = = 1\n")
    assert gc.isenabled()


@pytest.mark.parametrize(("regex", "may"), [
    (r"\ \*\ ", True), (r"[A-Za-z_][A-Za-z0-9_]*", False), (r"(\r?\n[\t \f]*)+", False), (r"-?\d+", False),
    (r"a?\s", True), (r"(?= )x", False), (r"[^x]", True), (r"x*", True), (r"(?:foo|\sbar)", True),
    (r"\w+", False), (r"\S", False), (r"\s", True), (r"[^ ]", True), (r"[\t-\r]", True), (r"[a-z\d]", False),
])
def test_which_terminals_may_start_with_a_space(regex: str, may: bool) -> None:
    """The scanner skips a run of spaces at once except before these
    (frontend/lexer.py); a wrong "no" would change what it reads."""
    assert bool(first_characters(regex, frozenset(" \t\f"))) is may


def test_which_terminals_may_start_with_other_characters() -> None:
    """The classes are tested on the characters asked about, not assumed
    to be about spaces."""
    def may(regex: str, character: str) -> bool:
        return bool(first_characters(regex, frozenset(character)))

    assert may(r"\d+", "7") and may(r"\w", "_") and not may(r"\D", "7")
    assert may(r"[\d]", "\u0663") and not may(r"\s", "x")


@pytest.mark.parametrize("spaces", [1, 2, 40, 5000])
def test_a_run_of_spaces_is_skipped_at_once_as_larks_lexer_skips_it(spaces: int) -> None:
    """The scanner skips a run of spaces in one step (a lazy skip of runs
    tried every way of cutting one where no terminal follows: 2**40 here),
    and reads `` * `` only where it starts the run, as Lark's lexer does."""
    gap = " " * spaces
    assert _check(f"allocate a[int32 * 16 * 4]\nfor (x, 0,{gap}4) {{\n a[x]{gap}={gap}x{gap}+ 1\n}}\nfree a\n")
    # A spaced `*` after a longer run is no extent separator for Lark: the
    # reader must not read it as one (it leaves such text to Lark).
    _check(f"allocate a[int32{gap}* 16]\nfree a\n")
    assert not _check(f"f(x{gap}`)\n")  # no terminal after the run: Lark's syntax error


def test_deep_text_is_left_to_lark_where_no_deep_stack_can_be_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a tight ``ulimit -v`` no deep thread starts and the retry runs
    where it was called: the fast reader runs out of stack again, and Lark
    reads the text, as before the retry existed (found by review)."""
    import hardboiled.support.deep as deep
    from hardboiled.frontend.parse import parse_input

    def no_thread(run: object, limit: dict[str, int]) -> None:
        limit["frames"] = sys.getrecursionlimit()

    monkeypatch.setattr(deep, "_start", no_thread)
    depth = 300
    parsed = parse_input("a[0] = f(" + "(" * depth + "x" + " + 1)" * depth + ")\n")
    assert parsed.kind == "stmt"



def _scanner_without_runs() -> Scanner:
    """The reader's scanner without its runs of integer literals: the
    grammar's scanner table alone."""
    table = stored_scanner_table()
    assert table is not None
    return Scanner(table, with_runs=False)


def _tokens_or_unhandled(text: str, scanner: Scanner) -> object:
    try:
        return split_runs(*scanner.scan(text))
    except Unhandled:
        return "unhandled"


@pytest.mark.parametrize("seed", range(2))
def test_runs_of_integer_literals_scan_into_the_grammars_tokens(seed: int) -> None:
    """The reader matches ``1, 2, 3`` at once and splits it into the tokens,
    at the offsets, that the grammar's scanner gives one by one; on text
    drawn from a seed out of what could make a run end early, start
    elsewhere or read otherwise (dots, exponents, minus signs, quotes,
    letters, the allocation's `` * ``), with the scanner's pattern as it
    starts and as it is once dispatched. The real dumps' runs are checked
    against Lark's tokens by test_reads_every_real_dump_as_lark_does."""
    plain = _scanner_without_runs()
    rng = random.Random(seed)
    pieces = ["1", "23", "-4", "0", ", ", ",", " ", ".", ".5", "e3", "f", "x", '"', " * ", "(", ")", "\n  ",
              "inf", "-", "7, 8, 9", "1, 2, 3, 4, 5, 6, 7", "10, 11, 12, 13, 14, 15, 16, 17, -18", "\t", "\f", "\r",
              ",\t", "\u0661\u0662", "\u00a0"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(3000)]
    table = stored_scanner_table()
    assert table is not None
    for with_runs in (Scanner(table, dispatch_from=1 << 62), Scanner(table, dispatch_from=0)):
        for text in texts:
            assert _tokens_or_unhandled(text, with_runs) == _tokens_or_unhandled(text, plain), text
    assert sum(re.search(INT_RUN_PATTERN, text) is not None for text in texts) > 500


def _built(tree: object, text: str) -> str:
    """What the tree builder makes of ``tree``: the IR printed, or the
    error's message."""
    from hardboiled.frontend.statements import TreeBuilder
    from hardboiled.support.diagnostics import InputError

    builder = TreeBuilder("<test>", text, 0, {"v": ir.parse_type_name("float32"), "w": ir.parse_type_name("float32")})
    try:
        return print_ir(builder.build(tree))  # type: ignore[arg-type]
    except InputError as error:
        return f"error: {error.diagnostic.message}"


@pytest.mark.parametrize("call", [
    "shuffle(v[ramp(0, 1, 16)], {run})",  # the indices, read at once
    "shuffle(v[ramp(0, 1, 8)], w[ramp(0, 1, 8)], {run})",
    "shuffle(v[ramp(0, 1, 16)], 1234567890, {run})",  # a literal too long for the run, then the run
    "shuffle(v[ramp(0, 1, 16)], {run}, 3)",
    "shuffle(v[ramp(0, 1, 16)], {run}, v[ramp(0, 1, 16)], {run})",  # a run that is not the indices
    "shuffle(5, {run})",  # only literals: the first is the vector
    "shuffle(v[ramp(0, 1, 4)], {run})",  # an index out of range
    "(float32x16)shuffle(v[ramp(0, 1, 16)], {run})",  # a typed call is a call
    "make_struct(v[0], {run})",
])
@pytest.mark.parametrize("count", [7, 8, 16])
def test_a_run_of_integer_arguments_builds_as_its_literals_do(call: str, count: int) -> None:
    """The reader keeps eight or more integer arguments in a row as one
    ``IntRun``; the builder makes of it what it makes of Lark's tree of the
    same text, one literal at a time: the same IR, or the same error."""
    from hardboiled.frontend.syntax_tree import IntRun

    run = ", ".join(str((i * 5) % 16) for i in range(count))
    text = f"x[ramp(0, 1, 16)] = {call.format(run=run)}\n"
    mine = parse_tree(text)
    runs = [c for node in _trees(mine) for c in node.children if isinstance(c, IntRun)]
    assert runs or count < 8
    assert _built(mine, text) == _built(halide_parser().parse(text), text)


def _trees(tree: Tree) -> list[Tree]:
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, Tree):
            found.append(node)
            stack.extend(node.children)
    return found
