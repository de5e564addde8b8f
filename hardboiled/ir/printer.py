"""Writing IR back in Halide's own text format.

This printer is the exact inverse of hardboiled/frontend/parse.py: for any text that
Halide printed, ``print_ir(parse(text)) == text`` byte for byte, and for any
IR, ``parse(print_ir(ir)) == ir`` (within what the text can express: Halide
prints float16 and bfloat16 literals alike, and its float literals carry six
decimals).

It follows Halide 21's IRPrinter conventions:

* one space of indentation per nesting level;
* binary operators are parenthesized unless they sit in a "no-parens"
  position (a statement's value, index or condition, a call or cast
  argument, a load index, ramp and broadcast operands, min/max/select
  arguments);
* a variable, load or call whose type is not int32 gets a ``(type)`` prefix
  unless its name is bound by an enclosing let, loop or allocation.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from hardboiled import ir
from hardboiled.ir.visitor import Visitor

_INDENT = " "


def format_float(value: float, bits: int) -> str:
    """A float literal as Halide prints it: fixed 6 decimals, tiny values in
    scientific notation, a suffix by width (f32 ``f``, 16-bit ``h``)."""
    if value != value:
        text = "-nan" if math.copysign(1.0, value) < 0 else "nan"
    elif value in (float("inf"), float("-inf")):
        text = "inf" if value > 0 else "-inf"
    elif value != 0.0 and abs(value) < 1e-6:
        text = f"{value:e}"
    else:
        text = f"{value:.6f}"
    return text + {64: "", 32: "f", 16: "h"}[bits]


_NEEDS_ESCAPE = re.compile(r'[^\x20-\x7e]|["\\]')
_BYTE_NEEDS_ESCAPE = re.compile(rb'[^\x20-\x7e]|["\\]')


def _escape(value: str) -> str:
    """Halide writes printable ASCII as is and every other byte as \\xHH,
    with C's escapes for quotes, backslashes, tabs and line ends. A long
    literal costs a copy or two, never a list entry per character."""
    if not _NEEDS_ESCAPE.search(value):
        return f'"{value}"'
    data = value.encode("utf-8", errors="surrogateescape")
    escaped = _BYTE_NEEDS_ESCAPE.sub(lambda m: _escape_byte(m.group()[0]), data)
    return '"' + escaped.decode("ascii") + '"'


def _escape_byte(byte: int) -> bytes:
    known = _ESCAPES.get(chr(byte))
    return (known if known is not None else f"\\x{byte:02X}").encode("ascii")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\t": "\\t", "\r": "\\r", "\n": "\\n"}


class Printer(Visitor[None]):
    """Prints statements and expressions; one instance per output."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.indent = 0
        self.known = Counter[str]()
        self._expr_table: dict[type, Callable[[Any], str]] = {
            ir.IntImm: self._int_imm,
            ir.UIntImm: lambda e: f"({e.type}){e.value}",
            ir.FloatImm: lambda e: format_float(e.value, e.type.bits),
            ir.StringImm: lambda e: _escape(e.value),
            ir.Variable: lambda e: self._typed_name(e.name, e.type) + e.name,
            ir.Cast: lambda e: f"{e.type}({self.expr(e.value, False)})",
            ir.Reinterpret: lambda e: f"reinterpret<{e.type}>({self.expr(e.value, False)})",
            ir.Ramp: lambda e: f"ramp({self.expr(e.base, False)}, {self.expr(e.stride, False)}, {e.lanes})",
            ir.Broadcast: lambda e: f"x{e.lanes}({self.expr(e.value, False)})",
            ir.Call: lambda e: self._typed_name(e.name, e.type) + f"{e.name}({self._args(e.args)})",
            ir.Select: lambda e: f"select({self._args((e.condition, e.true_value, e.false_value))})",
            ir.Not: lambda e: "!" + self.expr(e.value, True),
            ir.Shuffle: self._shuffle,
            ir.VectorReduce: lambda e: f"({e.type})vector_reduce_{e.op.value}({self.expr(e.value, False)})",
        }

    # ------------------------------------------------------------ scope
    def _bind(self, name: str) -> None:
        self.known[name] += 1

    def _unbind(self, name: str) -> None:
        self.known[name] -= 1
        if not self.known[name]:
            del self.known[name]

    def _typed_name(self, name: str, t: ir.Type) -> str:
        if t == ir.INT32 or name in self.known:
            return ""
        return str(t) if t.is_handle else f"({t})"

    # ------------------------------------------------------------ expressions
    def expr(self, e: ir.Expr, parens: bool = True) -> str:
        """``parens`` is False in Halide's no-parens positions."""
        if isinstance(e, ir.Binary):
            return self._binary(e, parens)
        if isinstance(e, ir.Load):
            return self._load(e, parens)
        if isinstance(e, ir.Let):
            return self._let(e, parens)
        return self._expr_table[type(e)](e)

    def _int_imm(self, e: ir.IntImm) -> str:
        return str(e.value) if e.type == ir.INT32 else f"({e.type}){e.value}"

    def _args(self, args: tuple[ir.Expr, ...] | list[ir.Expr]) -> str:
        return ", ".join(self.expr(a, False) for a in args)

    def _binary(self, e: ir.Binary, parens: bool) -> str:
        if e.op.is_function_style:
            return f"{e.op.value}({self.expr(e.a, False)}, {self.expr(e.b, False)})"
        sep = e.op.value if e.op in (ir.BinOp.MUL, ir.BinOp.DIV) else f" {e.op.value} "
        text = self.expr(e.a, True) + sep + self.expr(e.b, True)
        return f"({text})" if parens else text

    def _load(self, e: ir.Load, parens: bool) -> str:
        # Unlike variables and calls, a load of an unbound buffer is typed
        # even when its type is int32.
        prefix = "" if e.name in self.known else (str(e.type) if e.type.is_handle else f"({e.type})")
        text = prefix + f"{e.name}[{self.expr(e.index, False)}"
        if e.alignment is not None:
            text += f" aligned({e.alignment[0]}, {e.alignment[1]})"
        text += "]"
        if e.predicate is None:
            return text
        text += " if " + self.expr(e.predicate, True)
        return f"({text})" if parens else text

    def _let(self, e: ir.Let, parens: bool) -> str:
        self._bind(e.name)
        text = f"let {e.name} = {self.expr(e.value, True)} in {self.expr(e.body, True)}"
        self._unbind(e.name)
        return f"({text})" if parens else text

    def _shuffle(self, e: ir.Shuffle) -> str:
        vectors = self._args(e.vectors)
        if e.is_concat():
            return f"concat_vectors({vectors})"
        if e.is_interleave():
            return f"interleave_vectors({vectors})"
        if e.is_extract_element():
            return f"extract_element({vectors}, {e.indices[0]})"
        sliced = e.slice_params()
        if sliced is not None:
            return f"slice_vectors({vectors}, {sliced[0]}, {sliced[1]}, {len(e.indices)})"
        return f"shuffle({vectors}, {', '.join(str(i) for i in e.indices)})"

    # ------------------------------------------------------------ statements
    def line(self, text: str) -> None:
        self.out.append(_INDENT * self.indent + text + "\n")

    def stmt(self, s: ir.Stmt) -> None:
        self.visit(s)

    def _nested(self, header: str, body: ir.Stmt, footer: str = "}", step: int = 1) -> None:
        self.line(header + " {")
        self.indent += step
        self.stmt(body)
        self.indent -= step
        self.line(footer)

    def visit_no_op(self, s: ir.NoOp) -> None:
        pass

    def visit_block(self, s: ir.Block) -> None:
        for child in s.stmts:
            self.stmt(child)

    def visit_let_stmt(self, s: ir.LetStmt) -> None:
        self._bind(s.name)
        self.line(f"let {s.name} = {self.expr(s.value, False)}")
        self.stmt(s.body)
        self._unbind(s.name)

    def visit_assert_stmt(self, s: ir.AssertStmt) -> None:
        self.line(f"assert({self.expr(s.condition, False)}, {self.expr(s.message, False)})")

    def visit_producer_consumer(self, s: ir.ProducerConsumer) -> None:
        self._nested(("produce " if s.is_producer else "consume ") + s.name, s.body)

    def visit_for(self, s: ir.For) -> None:
        device = f"<{s.device_api}>" if s.device_api else ""
        self._bind(s.name)
        header = f"{s.kind.value}{device} ({s.name}, {self.expr(s.min, False)}, {self.expr(s.extent, False)})"
        self._nested(header, s.body)
        self._unbind(s.name)

    def _predicated(self, predicate: ir.Expr | None, text: str) -> None:
        if predicate is None:
            self.line(text)
            return
        self.line(f"predicate ({self.expr(predicate, False)})")
        self.indent += 1
        self.line(text)
        self.indent -= 1

    def visit_store(self, s: ir.Store) -> None:
        index = self.expr(s.index, False)
        if s.alignment is not None:
            index += f" aligned({s.alignment[0]}, {s.alignment[1]})"
        head = f"{s.name}[{index}] ="
        if not isinstance(s.value, ir.Let):
            self._predicated(s.predicate, f"{head} {self.expr(s.value, False)}")
            return
        # Halide breaks a stored let-expression into one `let ... in` per line.
        if s.predicate is not None:
            self.line(f"predicate ({self.expr(s.predicate, False)})")
            self.indent += 1
        self.line(head + " ")
        self.indent += 2
        value: ir.Expr = s.value
        bound: list[str] = []
        while isinstance(value, ir.Let):
            self._bind(value.name)
            bound.append(value.name)
            self.line(f"let {value.name} = {self.expr(value.value, False)} in")
            value = value.body
        self.line(self.expr(value, False))
        self.out.append("\n")  # Halide leaves an empty line after a stored let
        for name in bound:
            self._unbind(name)
        self.indent -= 2 + (1 if s.predicate is not None else 0)

    def visit_provide(self, s: ir.Provide) -> None:
        values = self._args(s.values)
        if len(s.values) > 1:
            values = "{" + values + "}"
        self._predicated(s.predicate, f"{s.name}({self._args(s.args)}) = {values}")

    def visit_prefetch(self, s: ir.Prefetch) -> None:
        bounds = ", ".join(f"[{self.expr(lo, False)}, {self.expr(ext, False)}]" for lo, ext in s.bounds)
        self.line(f"prefetch {s.name}, {self.expr(s.at, False)}, {self.expr(s.from_, False)}, ({bounds})")

    def visit_realize(self, s: ir.Realize) -> None:
        bounds = ", ".join(f"[{self.expr(lo, False)}, {self.expr(ext, False)}]" for lo, ext in s.bounds)
        header = f"realize {s.name}({bounds})"
        if s.memory_type != "Auto":
            header += f" in {s.memory_type}"
        if s.condition is not None:
            header += f" if {self.expr(s.condition, False)}"
        self._bind(s.name)
        self._nested(header, s.body, step=2)
        self._unbind(s.name)

    def visit_allocate(self, s: ir.Allocate) -> None:
        self._bind(s.name)
        text = f"allocate {s.name}[{s.type}"
        if s.padding is None:
            text += "".join(" * " + self.expr(e, True) for e in s.extents) + "]"
        else:
            extents = " * ".join(self.expr(e, True) for e in s.extents)
            text += f" * ({extents} + {self.expr(s.padding, True)})]"
        if s.memory_type != "Auto":
            text += f" in {s.memory_type}"
        if s.condition is not None:
            text += f" if {self.expr(s.condition, False)}"
        self.line(text)
        if s.new_expr is not None:
            self.line(f" custom_new {{ {self.expr(s.new_expr, False)} }}")
        if s.free_function is not None:
            self.line(f" custom_delete {{ {s.free_function}({s.name}); }}")
        self.stmt(s.body)
        self._unbind(s.name)

    def visit_free(self, s: ir.Free) -> None:
        self.line(f"free {s.name}")

    def visit_if_then_else(self, s: ir.IfThenElse) -> None:
        self.line(f"if ({self.expr(s.condition, False)}) {{")
        current: ir.IfThenElse = s
        while True:
            self.indent += 1
            self.stmt(current.then_case)
            self.indent -= 1
            else_case = current.else_case
            if else_case is None:
                self.line("}")
                return
            if isinstance(else_case, ir.IfThenElse):
                self.line(f"}} else if ({self.expr(else_case.condition, False)}) {{")
                current = else_case
                continue
            self.line("} else {")
            self.indent += 1
            self.stmt(else_case)
            self.indent -= 1
            self.line("}")
            return

    def visit_evaluate(self, s: ir.Evaluate) -> None:
        self.line(self.expr(s.value, False))

    def visit_atomic(self, s: ir.Atomic) -> None:
        names = s.producer if s.mutex is None else f"{s.producer}, {s.mutex}"
        # Halide indents the bodies of atomic, realize and hoisted_storage by
        # two levels.
        self._nested(f"atomic ({names})", s.body, step=2)

    def visit_fork(self, s: ir.Fork) -> None:
        # Halide flattens a chain of forks into one `fork {..} {..} {..} `.
        bodies = [s.first]
        rest: ir.Stmt = s.rest
        while isinstance(rest, ir.Fork):
            bodies.append(rest.first)
            rest = rest.rest
        bodies.append(rest)
        self.line("fork {")
        for i, body in enumerate(bodies):
            self.indent += 1
            self.stmt(body)
            self.indent -= 1
            self.line("} {" if i + 1 < len(bodies) else "} ")

    def visit_acquire(self, s: ir.Acquire) -> None:
        self._nested(f"acquire ({self.expr(s.semaphore, False)}, {self.expr(s.count, False)})", s.body)

    def visit_hoisted_storage(self, s: ir.HoistedStorage) -> None:
        self._nested("hoisted_storage" + (f" ({s.name})" if s.name else ""), s.body, step=2)

    # ------------------------------------------------------------ modules
    def module(self, m: ir.Module) -> None:
        self.out.append(f"module name={m.name}, target={m.target}\n")
        for buf in m.buffers:
            body = "{...}" if buf.contents is None else "{\n" + buf.contents + "\x00\n}"
            # Halide leaves an empty line after each buffer.
            self.out.append(f"buffer {buf.name} = {body}\n\n")
        for func in m.functions:
            self.out.append(f"{func.linkage} func {func.name} ({', '.join(func.args)}) {{\n")
            self.stmt(func.body)
            self.out.append("}\n\n\n")


def print_ir(node: ir.Stmt | ir.Expr | ir.Module) -> str:
    """Halide's text for a statement, expression or module."""
    p = Printer()
    if isinstance(node, ir.Module):
        p.module(node)
    elif isinstance(node, ir.Stmt):
        p.stmt(node)
    else:
        return p.expr(node, False)
    return "".join(p.out)
