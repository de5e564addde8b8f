"""How the C-family emitter writes a Halide call: the IR the call stands
for, or its spelling in the operations table (ir/operations.py), lane by
lane for an elementwise one, with the C type of its lanes where the
spelling asks for it. ``CallSpelling`` is that part of ``CFamilyEmitter``
(codegen/c_family.py); it reads the emitter's expressions, statements,
vectors and pipeline buffers."""

from __future__ import annotations

from collections.abc import Callable
from string import Formatter
from typing import Any, cast

from hardboiled import ir
from hardboiled.codegen.abi import KernelArgument
from hardboiled.codegen.c_text import c_type, codegen_error, int_constant, packed_type, round_to
from hardboiled.ir import operations
from hardboiled.ir.operations import Kind


class CallSpelling:
    """The calls of a C-family emitter."""

    buffer_args: dict[str, KernelArgument]

    def expr(self, e: ir.Expr) -> str:
        raise NotImplementedError  # the emitter's

    def emit(self, text: str) -> None:
        raise NotImplementedError  # the emitter's

    def param(self, buffer: str) -> str:
        raise NotImplementedError  # the entry points'

    def _vector(self, t: ir.Type) -> str:
        raise NotImplementedError  # the emitter's

    def visit_call(self, e: ir.Call) -> str:
        """A call of ir/operations.py: the IR it stands for, or its C spelling."""
        operation = operations.find(e.name)
        if operation is None or not operation.in_c:
            raise codegen_error(f"the C generator does not know the call '{e.name}'")
        equivalent = operations.equivalent_ir(e)
        if equivalent is not None:
            return self.expr(equivalent)
        assert operation.c is not None
        if operation.kind is Kind.BUFFER_QUERY:
            return self._buffer_query(e, operation.c)
        if operation is operations.ABS:
            return self._abs(e, operation.c)
        if operation.kind in _ELEMENTWISE:
            return self._call_per_lane(e, operation.c)
        if operation.kind is Kind.RUNTIME_NO_OP and e.type.lanes > 1:
            out = self._vector(e.type)
            self.emit(f"memset({out}, 0, sizeof({out}));")
            return out
        return self.spell(operation.c, e.args)

    def _call_per_lane(self, e: ir.Call, template: str) -> str:
        """A call applied lane by lane (math, bit operations, predicates):
        the template over each lane of its arguments, a 16-bit float result
        rounded to its precision as every operation's is."""
        def lane(texts: list[str]) -> str:
            value = _FORMATTER.vformat(template, texts, _type_fields(e))
            return round_to(e.type.element(), value) if e.type.is_float and e.type.bits == 16 else value

        args = [self.expr(a) for a in e.args]
        if e.type.lanes == 1:
            return lane(args)
        out = self._vector(e.type)
        indexed = [f"{text}[i]" if arg.type.lanes > 1 else text for text, arg in zip(args, e.args)]
        self.emit(f"for (int i = 0; i < {e.type.lanes}; i++) {out}[i] = {lane(indexed)};")
        return out

    def spell(self, template: str, args: tuple[ir.Expr, ...]) -> str:
        """``template``, an operations table spelling, over the C text of
        ``args`` (``{0}``, ``{1}``): each argument is generated when the
        template first names it, so one it leaves out is never generated
        (halide_print's text). A ``"; "`` ends a statement, emitted before
        the value (return_second keeps its first argument for its effects)."""
        texts = cast(Any, _OnDemand(lambda index: self.expr(args[index])))
        *statements, value = template.split("; ")
        for statement in statements:
            self.emit(_FORMATTER.vformat(statement, texts, {}) + ";")
        return _FORMATTER.vformat(value, texts, {})

    def _abs(self, e: ir.Call, float_spelling: str) -> str:
        """Halide's abs: a float's magnitude (``float_spelling``), or a signed
        integer's as the unsigned type of its width (abs(INT_MIN) does not
        overflow)."""
        source = e.args[0]
        value = self.expr(source)
        element = c_type(e.type.element())

        def of(x: str) -> str:
            if source.type.is_float:
                return f"(({element}){float_spelling.format(x)})"
            return f"(({element})({x} < 0 ? -(uint64_t)({x}) : (uint64_t)({x})))"

        if e.type.lanes == 1:
            return of(value)
        out = self._vector(e.type)
        self.emit(f"for (int i = 0; i < {e.type.lanes}; i++) {out}[i] = {of(f'{value}[i]')};")
        return out

    def _buffer_query(self, e: ir.Call, template: str) -> str:
        """A field of a pipeline buffer argument, as ``template`` spells it
        (see ``operations.Operation.c``)."""
        target = e.args[0]
        if not (isinstance(target, ir.Variable) and target.name.endswith(".buffer")):
            raise codegen_error(f"{e.name} of something that is not a pipeline buffer")
        buffer = target.name[:-7]
        arg = self.buffer_args.get(buffer)
        if arg is None:
            raise codegen_error(f"'{buffer}' is not a pipeline buffer")
        fields: dict[str, Callable[[], object]] = {
            "buffer": lambda: self.param(buffer),
            "dimension": lambda: int_constant(e.args[1]),  # a constant only where the template needs one
            "dimensions": lambda: arg.dimensions,
            "packed_type": lambda: packed_type(arg.type),
        }
        return template.format_map(_OnDemand(lambda name: fields[name]()))


_FORMATTER = Formatter()
_ELEMENTWISE = frozenset({Kind.FLOAT_MATH, Kind.BITWISE, Kind.PREDICATE})
"""Calls written lane by lane from a template per lane."""


def _type_fields(e: ir.Call) -> dict[str, object]:
    """What a per-lane template may name besides its arguments: the C type
    of the call's lanes ({ctype}), the unsigned type of that width
    ({utype}), and its bits."""
    element = e.type.element()
    return {"ctype": c_type(element), "utype": c_type(ir.Type(ir.TypeCode.UINT, max(8, element.bits), 1)),
            "bits": element.bits}
"""Formats the table's templates over arguments generated on demand."""


class _OnDemand:
    """What ``str.format`` reads a template's fields from: each one is
    computed when the template first names it, and once."""

    def __init__(self, compute: Callable[[Any], object]):
        self.compute = compute
        self.known: dict[Any, object] = {}

    def __getitem__(self, key: Any) -> object:
        if key not in self.known:
            self.known[key] = self.compute(key)
        return self.known[key]
