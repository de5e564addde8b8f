"""The egglog term language, written once.

The sorts and constructors that the instruction selector reasons about are
declared here as data (``SCHEMA``), and everything that depends on them is
derived from it:

* the egglog declarations: ``rules/definition.egg`` holds nothing but the
  datatype declarations, so the whole file is generated from the schema
  (``python -m hardboiled.select.terms`` or ``make terms``);
  tests/select/test_terms.py fails if the committed file drifts. Regenerating the
  whole file, rather than a part of it or a new ``terms.egg``, keeps the rule
  file list, its egglog tests (tests/rules/definition.egg) and the program
  egglog runs exactly as they were;
* building terms: ``TERMS.IntImm(type, value)`` checks the number and the
  sorts of the fields and ``Term.render()`` writes the egglog text
  (extract.py, hardboiled/select/facts.py);
* reading terms back: ``parse_term`` turns egglog's extracted s-expression
  into ``Term`` objects, checking constructor names, arity and sorts in one
  place; the decoder (reinsert.py) reads fields by name (``term.rows``);
* the name tables: ``type_code_name``/``type_code_of`` and
  ``binop_name``/``binop_of`` translate between the IR's enums and the
  nullary constructors of ``TypeCode`` and ``BinOp``.

Constructors named here are the only ones the encoder can write and the
decoder can read; adding one means adding it to ``SCHEMA`` (and its meaning
to reinsert.py).
"""

from __future__ import annotations

import enum
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from hardboiled import ir
from hardboiled.support.package_files import package_path
from hardboiled.targets.wmma import Layout, MatrixUse

I64 = "i64"
STRING = "String"
PRIMITIVE_SORTS = (I64, STRING)
"""egglog's built-in sorts that fields use; every other field sort is one of
the schema's datatypes."""

GENERATED_FILE = "definition.egg"
"""The rule file (in rules/, shipped as hardboiled.rules) that is generated."""
REGENERATE_COMMAND = "python -m hardboiled.select.terms"


# --------------------------------------------------------------------------
# The schema's structure
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    sort: str
    """``i64``, ``String`` or the name of a sort of the schema."""


@dataclass(frozen=True, slots=True)
class Constructor:
    name: str
    fields: tuple[Field, ...] = ()
    cost: int | None = None
    """egglog's ``:cost``; None keeps egglog's default of 1."""
    note: str = ""
    """Said after the field names in the generated declaration."""
    comment: tuple[str, ...] = ()
    """Comment lines written above the constructor."""
    meaning: enum.Enum | None = None
    """For the nullary constructors that stand for a member of an enum of
    the IR or the targets (TypeCode, BinOp, MatrixUse, Major): that member."""

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)


@dataclass(frozen=True, slots=True)
class Sort:
    name: str
    constructors: tuple[Constructor, ...]
    comment: tuple[str, ...] = ()
    """Comment lines written above the sort's declaration."""


@dataclass(frozen=True, slots=True)
class Datatypes:
    """One declaration: a single ``datatype``, or a ``datatype*`` group of
    mutually recursive sorts."""

    sorts: tuple[Sort, ...]
    comment: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Schema:
    header: tuple[str, ...]
    """The generated file's opening comment (``;;;;`` lines)."""
    declarations: tuple[Datatypes, ...]


def _f(spec: str) -> tuple[Field, ...]:
    """Fields from ``"name:Sort name:Sort ..."`` (the schema's shorthand)."""
    return tuple(Field(*item.split(":")) for item in spec.split())


def _enum_sort(name: str, members: dict[str, enum.Enum], comment: tuple[str, ...] = ()) -> Sort:
    return Sort(name, tuple(Constructor(c, meaning=m) for c, m in members.items()), comment)


# --------------------------------------------------------------------------
# The schema
# --------------------------------------------------------------------------

_DATA_MOVEMENT_COST = 100000
"""Moving data between memory and an accelerator (paper, Sec. 3.2): so
expensive that extraction keeps a marker only when nothing lowers it."""
_VECTOR_COST = 100
"""Ramps and broadcasts: dearer than the tile operations that absorb them."""

SCHEMA = Schema(
    header=(
        "hardboiled: the IR subset that the instruction selector reasons about.",
        "",
        "The tile extractor (hardboiled/select/extract.py) encodes Halide IR in these",
        "constructors; anything the rules never inspect becomes (Opaque T id) and",
        "is restored from a side table, so the encoding is lossless. Both",
        "accelerators share the Halide part (types, arithmetic, loads, vectors);",
        "each has its own data-movement markers and instructions.",
    ),
    declarations=(
        Datatypes((_enum_sort("TypeCode", {
            "IntT": ir.TypeCode.INT, "UIntT": ir.TypeCode.UINT, "FloatT": ir.TypeCode.FLOAT,
            "BFloatT": ir.TypeCode.BFLOAT, "HandleT": ir.TypeCode.HANDLE}),)),
        Datatypes((Sort("Type", (Constructor("Ty", _f("code:TypeCode bits:i64 lanes:i64")),)),)),
        Datatypes((_enum_sort("BinOp", {
            "Add": ir.BinOp.ADD, "Sub": ir.BinOp.SUB, "Mul": ir.BinOp.MUL, "Div": ir.BinOp.DIV,
            "Mod": ir.BinOp.MOD, "Min": ir.BinOp.MIN, "Max": ir.BinOp.MAX, "EQ": ir.BinOp.EQ,
            "NE": ir.BinOp.NE, "LT": ir.BinOp.LT, "LE": ir.BinOp.LE, "GT": ir.BinOp.GT,
            "GE": ir.BinOp.GE, "And": ir.BinOp.AND, "Or": ir.BinOp.OR}),)),
        Datatypes(
            (_enum_sort("MatrixUse", {"MatrixA": MatrixUse.A, "MatrixB": MatrixUse.B, "Accumulator": MatrixUse.C}),),
            comment=("WMMA fragments: which operand a fragment holds, and how its matrix is laid",
                     "out in memory (the leading dimension runs along rows or columns)."),
        ),
        Datatypes((_enum_sort("Major", {"Row": Layout.ROW, "Col": Layout.COL}),)),
        Datatypes(
            (
                Sort("Expr", (
                    Constructor("IntImm", _f("type:Type value:i64"),
                                note="a 64-bit value (the bit pattern for uint64)"),
                    Constructor("FloatImm", _f("type:Type bits:i64"), note="IEEE-754 bits of the double"),
                    Constructor("Var", _f("type:Type name:String")),
                    Constructor("Opaque", _f("type:Type id:i64"), note="restored from the side table"),
                    Constructor("Bop", _f("op:BinOp a:Expr b:Expr")),
                    Constructor("Cast", _f("type:Type value:Expr")),
                    Constructor("Load", _f("type:Type buffer:String index:Expr")),
                    Constructor("Ramp", _f("base:Expr stride:Expr lanes:i64"), cost=_VECTOR_COST),
                    Constructor("Broadcast", _f("value:Expr lanes:i64"), cost=_VECTOR_COST),
                    Constructor("VectorReduceAdd", _f("type:Type value:Expr")),
                    Constructor("Mem2AMX", _f("value:Expr"), cost=_DATA_MOVEMENT_COST, comment=(
                        "data movement between memory and the accelerator (paper, Sec. 3.2):",
                        "prohibitively expensive, so extraction keeps them only on a miss")),
                    Constructor("AMX2Mem", _f("value:Expr"), cost=_DATA_MOVEMENT_COST),
                    Constructor("TileZero", _f("type:Type rows:i64 colbytes:i64"), comment=(
                        "AMX tile operations. Offsets and strides are in elements of the",
                        "buffer; legalization turns them into the bytes the intrinsics take.")),
                    Constructor("TileLoad", _f("type:Type rows:i64 colbytes:i64 buffer:Buf offset:Expr stride:Expr")),
                    Constructor("TileMatmul", _f("type:Type rows:i64 colbytes:i64 k:i64 acc:Expr a:Expr b:Expr")),
                    Constructor("TileStore",
                                _f("rows:i64 colbytes:i64 buffer:String offset:Expr stride:Expr tile:Expr")),
                    Constructor("VNNIInterleave", _f("k_pack:i64 rows:i64 cols:i64 matrix:Expr"), comment=(
                        "a K x N row-major matrix (K = rows, N = cols) regrouped into AMX's",
                        "VNNI order: (K / k_pack) rows of N groups of k_pack consecutive K-elements")),
                    Constructor("Mem2WMMA", _f("value:Expr"), cost=_DATA_MOVEMENT_COST, comment=(
                        "the same for Tensor Cores: a value moved into or out of fragments",)),
                    Constructor("WMMA2Mem", _f("value:Expr"), cost=_DATA_MOVEMENT_COST),
                    Constructor("FragFill", _f("type:Type m:i64 n:i64 k:i64 value:Expr"), comment=(
                        "WMMA fragment operations (nvcuda::wmma), on whole m x n x k fragments.",
                        "Offsets and leading dimensions are in elements of the buffer.")),
                    Constructor("FragLoad", _f("use:MatrixUse layout:Major type:Type m:i64 n:i64 k:i64 "
                                               "buffer:Buf offset:Expr ldm:Expr")),
                    Constructor("FragMma", _f("a_layout:Major b_layout:Major type:Type m:i64 n:i64 k:i64 "
                                              "a:Expr b:Expr c:Expr"), note="type is D's"),
                    Constructor("FragStore", _f("layout:Major m:i64 n:i64 k:i64 buffer:String offset:Expr "
                                                "ldm:Expr fragment:Expr")),
                    Constructor("WindowMatrix", _f("type:Type kernel:String kbase:Expr taps:i64 stride:i64 "
                                                   "rows:i64 cols:i64 shift:i64 lo:i64 hi:i64 phases:i64 "
                                                   "phase_stride:i64"), comment=(
                        "rows x cols block of the Toeplitz matrix of a convolution kernel:",
                        "with u = shift + t, j = phases * x + p, element (t, j) is",
                        "kernel[kbase + phase_stride * p + u - stride * x] where lo <= u < hi",
                        "and 0 <= u - stride * x < taps, else zero (materialized after extraction)")),
                    Constructor("PaddedRows", _f("type:Type input:String base:Expr ldm:Expr rows:i64 "
                                                 "width:i64 cols:i64"), comment=(
                        "rows x cols matrix whose element (i, t) is input[base + ldm * i + t]",
                        "for t < width, else zero (a window shorter than a fragment's K)",)),
                )),
                Sort("Buf", (Constructor("Named", _f("name:String")), Constructor("Temp", _f("value:Expr")))),
            ),
            comment=("A buffer an AMX tile or a WMMA fragment is loaded from: a named Halide buffer, or a",
                     "temporary that holds the given value (materialized after extraction)."),
        ),
        Datatypes(
            (Sort("TileLayout", (Constructor("RowMajor"),
                                 Constructor("Interleaved", _f("k_pack:i64 rows:i64 cols:i64")))),),
            comment=("How a tile held in an AMX buffer is laid out there: rows of 64 bytes as",
                     "the buffer stores them, or a K x N standard-layout block (K = rows,",
                     "N = cols) that the tile holds in VNNI order (interleaved by k_pack)."),
        ),
        Datatypes((Sort("Stmt", (Constructor("Store", _f("buffer:String value:Expr index:Expr")),
                                 Constructor("Evaluate", _f("value:Expr")))),)),
    ),
)

SORTS: dict[str, Sort] = {s.name: s for d in SCHEMA.declarations for s in d.sorts}
CONSTRUCTORS: dict[str, Constructor] = {c.name: c for s in SORTS.values() for c in s.constructors}
SORT_OF: dict[str, str] = {c.name: s.name for s in SORTS.values() for c in s.constructors}
"""Constructor name -> the sort it builds."""


# --------------------------------------------------------------------------
# Name tables
# --------------------------------------------------------------------------

_NAME_OF_MEANING: dict[enum.Enum, str] = {
    c.meaning: c.name for c in CONSTRUCTORS.values() if c.meaning is not None
}


def type_code_name(code: ir.TypeCode) -> str:
    """The TypeCode constructor for ``code`` (``IntT`` for int)."""
    return _NAME_OF_MEANING[code]


def type_code_of(name: str) -> ir.TypeCode:
    return _meaning(name, "TypeCode", ir.TypeCode)


def binop_name(op: ir.BinOp) -> str:
    """The BinOp constructor for ``op`` (``Add`` for +)."""
    return _NAME_OF_MEANING[op]


def binop_of(name: str) -> ir.BinOp:
    return _meaning(name, "BinOp", ir.BinOp)


def _meaning(name: str, sort: str, kind: type[enum.Enum]) -> Any:
    constructor = CONSTRUCTORS.get(name)
    if constructor is None or SORT_OF[name] != sort or not isinstance(constructor.meaning, kind):
        raise TermError(f"{name} is not a {sort} constructor")
    return constructor.meaning


# --------------------------------------------------------------------------
# Terms
# --------------------------------------------------------------------------


class TermError(ValueError):
    """A term that the schema does not allow: an unknown constructor, the
    wrong number of fields, or a field of the wrong sort."""


Value = Union["Term", int, str]

_FIELD_POSITIONS: dict[str, tuple[Constructor, dict[str, int]]] = {}
"""Each constructor's field positions by name, made on the first read of a
field (decoding reads fields in its innermost loops)."""


@dataclass(frozen=True, slots=True)
class Term:
    """A constructor applied to its fields; fields are read by name
    (``term.rows``), as the schema names them."""

    constructor: Constructor
    args: tuple[Value, ...]

    @property
    def sort(self) -> str:
        return SORT_OF[self.constructor.name]

    @property
    def meaning(self) -> Any:
        """The enum member a nullary constructor stands for (``Row`` is
        ``Layout.ROW``)."""
        if self.constructor.meaning is None:
            raise TermError(f"{self.constructor.name} stands for no enum member")
        return self.constructor.meaning

    def __getattr__(self, name: str) -> Any:
        # Only reached when ``name`` is not an attribute of Term itself.
        # Typed Any: the schema checked the field's sort when the term was
        # built or parsed, which a static type cannot express per field.
        constructor = self.constructor
        positions = _FIELD_POSITIONS.get(constructor.name)
        if positions is None or positions[0] is not constructor:
            positions = _FIELD_POSITIONS[constructor.name] = (
                constructor, {field: i for i, field in enumerate(constructor.field_names)})
        try:
            return self.args[positions[1][name]]
        except KeyError:
            raise AttributeError(f"{self.constructor.name} has no field '{name}' "
                                 f"(fields: {', '.join(self.constructor.field_names) or 'none'})") from None

    def render(self) -> str:
        """The egglog text of the term."""
        parts: list[str] = []
        self._render_into(parts)
        return "".join(parts)

    def _render_into(self, parts: list[str]) -> None:
        parts.append("(" + self.constructor.name)
        for arg in self.args:
            parts.append(" ")
            if isinstance(arg, Term):
                arg._render_into(parts)
            elif isinstance(arg, str):
                parts.append(_string_literal(arg))
            else:
                parts.append(str(arg))
        parts.append(")")


_TERM_ATTRIBUTES = frozenset(dir(Term))
for _constructor in CONSTRUCTORS.values():
    assert not _TERM_ATTRIBUTES & set(_constructor.field_names), f"{_constructor.name}: a field shadows Term"


def _string_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def make(name: str, *args: Value) -> Term:
    """``name`` applied to ``args``, checked against the schema."""
    constructor = CONSTRUCTORS.get(name)
    if constructor is None:
        raise TermError(f"unknown constructor {name}")
    if len(args) != len(constructor.fields):
        raise TermError(f"{name} takes {len(constructor.fields)} fields "
                        f"({' '.join(constructor.field_names)}), not {len(args)}")
    for field, arg in zip(constructor.fields, args):
        _check_sort(name, field, arg)
    return Term(constructor, args)


def _check_sort(name: str, field: Field, arg: Value) -> None:
    if field.sort == I64:
        ok = isinstance(arg, int) and not isinstance(arg, bool)
    elif field.sort == STRING:
        ok = isinstance(arg, str)
    else:
        ok = isinstance(arg, Term) and arg.sort == field.sort
    if not ok:
        got = arg.constructor.name if isinstance(arg, Term) else repr(arg)
        raise TermError(f"field {field.name} of {name} must be a {field.sort}, not {got}")


class _Builders:
    """``TERMS.Name(*fields)``: the checked constructors, by name."""

    def __getattr__(self, name: str) -> Any:
        if name not in CONSTRUCTORS:
            raise AttributeError(f"unknown constructor {name}")
        return lambda *args: make(name, *args)


TERMS = _Builders()


# --------------------------------------------------------------------------
# Reading egglog's s-expressions
# --------------------------------------------------------------------------

_TOKEN_RE = re.compile(r'\s*(?:(\()|(\))|"((?:\\.|[^"\\])*)"|([^\s()"]+))')
_INT_RE = re.compile(r"-?\d+")


class _StringAtom(str):
    """A string literal in an s-expression (as opposed to a symbol)."""


def parse_sexpr(text: str) -> Any:
    """Nested lists of symbols, ints and string literals."""
    stack: list[list[Any]] = [[]]
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip():
                raise TermError(f"bad s-expression at {pos}: {text[pos:pos + 40]!r}")
            break
        pos = m.end()
        if m.group(1):
            stack.append([])
        elif m.group(2):
            if len(stack) == 1:
                raise TermError(f"unbalanced ')' at {m.start(2)}")
            done = stack.pop()
            stack[-1].append(done)
        elif m.group(3) is not None:
            stack[-1].append(_StringAtom(re.sub(r"\\(.)", r"\1", m.group(3))))
        else:
            atom = m.group(4)
            stack[-1].append(int(atom) if _INT_RE.fullmatch(atom) else atom)
    if len(stack) != 1 or len(stack[0]) != 1:
        raise TermError("expected exactly one complete s-expression")
    return stack[0][0]


def parse_term(text: str, sort: str | None = None) -> Term:
    """egglog's text of a term (of ``sort``, if given) as a checked Term."""
    return term_of(parse_sexpr(text), sort)


def term_of(node: Any, sort: str | None = None) -> Term:
    if not isinstance(node, list) or not node or not isinstance(node[0], str) or isinstance(node[0], _StringAtom):
        raise TermError(f"expected a constructor application, not {node!r}")
    name = node[0]
    constructor = CONSTRUCTORS.get(name)
    if constructor is None:
        raise TermError(f"unknown constructor {name}")
    if sort is not None and SORT_OF[name] != sort:
        raise TermError(f"expected a {sort}, not {name} (a {SORT_OF[name]})")
    args = node[1:]
    if len(args) != len(constructor.fields):
        raise TermError(f"{name} takes {len(constructor.fields)} fields "
                        f"({' '.join(constructor.field_names)}), not {len(args)}")
    return Term(constructor, tuple(_field_value(name, f, a) for f, a in zip(constructor.fields, args)))


def _field_value(name: str, field: Field, node: Any) -> Value:
    if field.sort == I64 and isinstance(node, int):
        return node
    if field.sort == STRING and isinstance(node, _StringAtom):
        return str(node)
    if field.sort not in PRIMITIVE_SORTS:
        return term_of(node, field.sort)
    raise TermError(f"field {field.name} of {name} must be a {field.sort}, not {node!r}")


# --------------------------------------------------------------------------
# The generated declarations
# --------------------------------------------------------------------------

_NOTE_COLUMN = 50
"""Where the trailing comments of constructors start, when they fit."""


def declarations_text(schema: Schema = SCHEMA) -> str:
    """rules/definition.egg, as generated from ``schema``."""
    lines = [f";;;; {line}".rstrip() for line in schema.header]
    lines += [";;;;", f";;;; GENERATED from hardboiled/select/terms.py by `{REGENERATE_COMMAND}`",
              ";;;; (or `make terms`); edit the schema there, not this file."]
    for declaration in schema.declarations:
        lines.append("")
        lines += [f";; {line}".rstrip() for line in declaration.comment]
        lines += _declaration_lines(declaration)
    return "\n".join(lines) + "\n"


def _declaration_lines(declaration: Datatypes) -> list[str]:
    if len(declaration.sorts) == 1:
        sort = declaration.sorts[0]
        if all(not c.fields and not c.comment for c in sort.constructors) and not sort.comment:
            return [f"(datatype {sort.name} " + " ".join(f"({c.name})" for c in sort.constructors) + ")"]
        return [f"(datatype {sort.name}"] + _constructor_lines(sort, "  ", closing=")")
    lines = ["(datatype*"]
    for sort in declaration.sorts:
        last = sort is declaration.sorts[-1]
        lines += [f"  ;; {line}".rstrip() for line in sort.comment]
        lines += [f"  ({sort.name}"] + _constructor_lines(sort, "    ", closing="))" if last else ")")
    return lines


def _constructor_lines(sort: Sort, indent: str, closing: str) -> list[str]:
    """One line per constructor; ``closing`` ends the enclosing forms after
    the last one."""
    lines = []
    for c in sort.constructors:
        lines += [f"{indent};; {line}".rstrip() for line in c.comment]
        code = f"{indent}({' '.join([c.name] + [f.sort for f in c.fields])}"
        code += f" :cost {c.cost})" if c.cost is not None else ")"
        if c is sort.constructors[-1]:
            code += closing
        note = " ".join(c.field_names) + (f" -- {c.note}" if c.note else "")
        lines.append(f"{code.ljust(_NOTE_COLUMN - 1)} ; {note}" if note else code)
    return lines


def _generated_path() -> Path:
    return Path(package_path("rules", GENERATED_FILE))


def main(argv: list[str]) -> int:
    """Rewrite rules/definition.egg from the schema; ``--check`` only says
    whether it is up to date (exit 1 if not)."""
    path = _generated_path()
    text = declarations_text()
    if "--check" in argv:
        current = path.read_text() if path.exists() else ""
        if current != text:
            print(f"{path} is out of date: run `{REGENERATE_COMMAND}`", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
