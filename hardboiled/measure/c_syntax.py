"""Reading the C that hardboiled generates: integer expressions evaluated
per thread, and the pieces of statements (brackets, declarators,
assignments) that the CUDA reader (measure/cuda_source.py) takes apart.

Standard library only: bench/wmma_static.py loads this package by path to
read an older checkout's output with this checkout's reader."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import CodeType

ELEMENT_BYTES = {
    "uint16_t": 2, "int16_t": 2, "__half": 2, "half": 2, "__nv_bfloat16": 2, "short": 2, "unsigned short": 2,
    "float": 4, "int32_t": 4, "uint32_t": 4, "int": 4, "unsigned": 4, "unsigned int": 4,
    "signed char": 1, "unsigned char": 1, "char": 1, "int8_t": 1, "uint8_t": 1, "bool": 1,
    "double": 8, "int64_t": 8, "uint64_t": 8, "long long": 8, "unsigned long long": 8,
}
"""Bytes of an element of each C type the generated code declares."""

_SCALAR_TYPES = {"int", "char", "short", "long", "float", "double", "bool", "half", "__half", "__nv_bfloat16",
                 "unsigned", "signed", "size_t", "dim3", "void"}

_C_CAST = re.compile(
    r"\(\s*(?:const\s+)?(?:(?:unsigned|signed)\s+)?"
    r"(?:int|char|short|long\s+long|long|unsigned|signed|bool|size_t|u?int(?:8|16|32|64)_t)\s*\)")
_CUDA_BUILTIN = re.compile(r"\b(threadIdx|blockDim|blockIdx|gridDim)\.([xyz])\b")
_INTEGER_SUFFIX = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b")
_ALLOWED_NODES = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Constant, ast.Name, ast.Load,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Mod, ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor,
    ast.USub, ast.UAdd, ast.Not, ast.Invert, ast.And, ast.Or,
    ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
)


def _c_div(a: int, b: int) -> int:
    """C's integer division, which truncates toward zero."""
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def _c_mod(a: int, b: int) -> int:
    return a - b * _c_div(a, b)


def _c_shift_left(a: int, b: int) -> int:
    """A left shift, refusing shifts wider than 64 bits (Python's integers
    would grow without bound where C's wrap)."""
    if not 0 <= b <= 64:
        raise OverflowError(f"shift by {b}")
    return a << b


_EVAL_GLOBALS = {"__builtins__": {}, "_c_div": _c_div, "_c_mod": _c_mod, "_c_shift_left": _c_shift_left}


class _CSemantics(ast.NodeTransformer):
    """Python's / and % differ from C's on integers, and its << does not
    wrap: route them through helpers with C's meaning."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        helper = {ast.Div: "_c_div", ast.Mod: "_c_mod", ast.LShift: "_c_shift_left"}.get(type(node.op))
        if helper is None:
            return node
        return ast.copy_location(ast.Call(ast.Name(helper, ast.Load()), [node.left, node.right], []), node)


@dataclass(frozen=True)
class CExpression:
    """An integer C expression, checked to hold only arithmetic, comparisons
    and names, compiled once so that it can be evaluated for each thread."""

    text: str
    code: CodeType


def compile_c_expression(text: str) -> CExpression | None:
    """``text`` as an evaluable integer expression, or None when it holds
    anything else (calls, floats, member access other than the CUDA index
    built-ins, the conditional operator)."""
    python = _C_CAST.sub(" ", text)
    python = _CUDA_BUILTIN.sub(r"\1_\2", python)
    python = _INTEGER_SUFFIX.sub(r"\1", python)
    python = python.replace("&&", " and ").replace("||", " or ")
    python = re.sub(r"!(?!=)", " not ", python)
    python = re.sub(r"\btrue\b", "1", re.sub(r"\bfalse\b", "0", python))
    try:
        tree = ast.parse(python.strip(), mode="eval")
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            return None
        if isinstance(node, ast.Constant) and type(node.value) is not int:
            return None
    tree = ast.fix_missing_locations(_CSemantics().visit(tree))
    return CExpression(text, compile(tree, "<c expression>", "eval"))


def evaluate(expression: CExpression, names: Mapping[str, int]) -> int | None:
    """The expression's value with ``names`` bound (``threadIdx.x`` is
    ``threadIdx_x``), or None when a name is unbound or it divides by zero."""
    try:
        return int(eval(expression.code, _EVAL_GLOBALS, names))  # checked: arithmetic on names only
    except (NameError, KeyError, ZeroDivisionError, ValueError, TypeError, OverflowError, RecursionError):
        return None


def evaluate_c_integer(text: str, names: Mapping[str, int] | None = None) -> int | None:
    """``text``'s value as a C integer expression, or None."""
    expression = compile_c_expression(text)
    return None if expression is None else evaluate(expression, names or {})


# --- text helpers ------------------------------------------------------------

_LITERAL_OR_COMMENT = re.compile(r'("(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')|(/\*.*?\*/|//[^\n]*)', re.S)
IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
_POINTER_CAST = re.compile(r"\(\s*(?:const\s+)?[\w:]+(?:\s+[\w:]+)*\s*\*+\s*\)")


def blank_comments(text: str) -> str:
    """Comments, and ``#pragma`` lines (hints to the compiler, such as the
    generator's ``#pragma unroll``, not code), replaced by spaces, keeping
    every offset and line break."""
    def blank(match: re.Match[str]) -> str:
        return match.group(0) if match.group(2) is None else re.sub(r"[^\n]", " ", match.group(0))
    return _PRAGMA.sub(lambda match: " " * len(match.group(0)), _LITERAL_OR_COMMENT.sub(blank, text))


_PRAGMA = re.compile(r"^[ \t]*#[ \t]*pragma\b[^\n]*", re.M)


def split_top_level(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` characters outside brackets."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [part.strip() for part in parts]


def matching_bracket(text: str, open_index: int) -> int:
    """The index of the bracket closing the one at ``open_index``, or -1."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    opener, closer, depth = text[open_index], pairs[text[open_index]], 0
    for index in range(open_index, len(text)):
        if text[index] == opener:
            depth += 1
        elif text[index] == closer:
            depth -= 1
            if depth == 0:
                return index
    return -1


def base_identifier(expression: str) -> str | None:
    """The variable a pointer or element expression starts from:
    ``(const __half *)image_stage + 16`` gives ``image_stage``."""
    stripped = _POINTER_CAST.sub(" ", expression)
    match = re.match(r"[\s(*&]*([A-Za-z_]\w*)", stripped)
    return match.group(1) if match else None


def without_spaces(text: str) -> str:
    return re.sub(r"\s+", "", text)


# --- declarations and assignments ----------------------------------------------

def trip_count(start: int, end: int, step: int, operator: str) -> int | None:
    if operator == "<":
        return max(0, -(-(end - start) // step))
    if operator == "<=":
        return max(0, (end - start) // step + 1)
    return (end - start) // step if end >= start and (end - start) % step == 0 else None


def is_type_name(word: str) -> bool:
    return word in _SCALAR_TYPES or word in ELEMENT_BYTES or word.endswith("_t")


def parse_declarator(text: str) -> tuple[str, bool, str | None]:
    """(name, whether a pointer, initializer or None) of ``*name[4] = init``."""
    name_part, equals, init = text.partition("=")
    name = re.search(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*$", name_part)
    return (name.group(1) if name else name_part.strip(), "*" in name_part, init.strip() if equals else None)


def bounds_loop(initialized: list[tuple[str, str]], header: str) -> bool:
    """Whether a ``for`` header reads every name a declaration sets (``V_lo``, ``V_end``)."""
    return header.startswith("for") and all(re.search(rf"\b{name}\b", header) for name, _ in initialized)


def assignment(text: str) -> tuple[str, str, str] | None:
    """(target, operator, value) of an assignment statement such as ``a[i] += b``."""
    depth = 0
    for index, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "=" and depth == 0:
            before, after = text[:index], text[index + 1:index + 2]
            if after == "=" or before.endswith("=") or (before.endswith(("<", ">", "!"))
                                                        and not before.endswith(("<<", ">>"))):
                continue  # a comparison
            compound = re.search(r"(?:<<|>>|[-+*/%&|^])$", before)
            operator = (compound.group(0) if compound else "") + "="
            target = before[:compound.start()] if compound else before
            return target.strip(), operator, text[index + 1:]
    return None


# --- pieces of a body -----------------------------------------------------------

@dataclass(frozen=True)
class Piece:
    """A brace opening a block (with its header), a closing brace, or a statement."""

    kind: str  # "open", "close" or "statement"
    text: str
    line: int


class _Nesting:
    """Bracket depth while scanning a body: where a brace or a semicolon
    ends a piece, and where it belongs to an initializer (``= {1, 2}``)."""

    def __init__(self) -> None:
        self.depth = 0
        self.initializer = 0

    def ends_piece(self, char: str, last_visible: str) -> bool:
        """Follow ``char``; whether it is a brace or semicolon at the top
        level, outside every initializer."""
        if char in "([":
            self.depth += 1
        elif char in ")]":
            self.depth -= 1
        elif self.depth:
            return False
        elif char == "{" and (self.initializer or last_visible == "="):
            self.initializer += 1
        elif char == "}" and self.initializer:
            self.initializer -= 1
        else:
            return char in "{};" and not self.initializer
        return False


def _ended(char: str, text: str, start_line: int, line: int) -> Iterator[Piece]:
    """The pieces that a top-level brace or semicolon ends."""
    if char == "{":
        yield Piece("open", text, start_line)
    elif text:
        yield Piece("statement", text, start_line)
    if char == "}":
        yield Piece("close", "", line)


def pieces(body: str, first_line: int) -> Iterator[Piece]:
    """Split a kernel body at top-level braces and semicolons; braces of an
    initializer (``= {1, 2}``) stay in their statement."""
    buffer: list[str] = []
    nesting = _Nesting()
    line = start_line = first_line
    last_visible = ""  # the buffer's last non-blank character
    for char in body:
        if char == "\n":
            line += 1
        if not last_visible:
            start_line = line
        if nesting.ends_piece(char, last_visible):
            yield from _ended(char, " ".join("".join(buffer).split()), start_line, line)
            buffer, last_visible = [], ""
            continue
        buffer.append(char)
        if not char.isspace():
            last_visible = char
    if last_visible:
        yield Piece("statement", " ".join("".join(buffer).split()), start_line)
