"""The C-family emitter that the C (AMX) and CUDA (WMMA) backends share.

``CFamilyEmitter`` turns one statement into the body of a C function:

* scalars are C scalars; a vector is a local array filled lane by lane
  (plain loops: clear, deterministic, and GCC/Clang vectorize them);
* float16 and bfloat16 values live in ``float`` variables rounded to their
  precision after every operation, and in memory as 16-bit patterns;
* integer division and modulo follow Halide (Euclidean), casts wrap;
* each block carries the IR statement it came from as a comment;
* a Halide call is written as ir/operations.py spells it, or as the IR it
  stands for; one the table has no C spelling for is refused.

A backend subclasses it and fills the hooks (``preamble``, ``prepare``,
``open_body``, ``close_body``, ``release_on_return``, and the entry
points' ``linkage`` and extra parameters) and overrides the statements it
lowers differently. How values are spelled is codegen/c_text.py's, the
functions the source defines and its header codegen/entry_points.py's:
both backends use them, and neither reaches into the other.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, cast

from hardboiled import ir
from hardboiled.codegen.abi import (
    DEFAULT_ENTRY_POINT,
    RAW_STATUS,
    KernelArgument,
    halide_error_code,
    kernel_signature,
)
from hardboiled.codegen.c_text import (
    C_HEADERS,
    GENERATED_BANNER,
    OPERANDS_USED_TWICE,
    VECTOR_STACK_BYTES,
    binary_expr,
    c_size,
    c_type,
    cast_expr,
    codegen_error,
    from_storage,
    half_bits,
    helper_functions,
    include_lines,
    storage_type,
    to_storage,
)
from hardboiled.codegen.call_spelling import CallSpelling
from hardboiled.codegen.entry_points import EntryPoints
from hardboiled.ir import operations
from hardboiled.ir.buffers import bounds_query_value
from hardboiled.ir.operations import Kind
from hardboiled.ir.printer import print_ir
from hardboiled.ir.visitor import Visitor


class CFamilyEmitter(EntryPoints, CallSpelling, Visitor[Any]):
    """Emits C for one statement (the body of the generated function)."""

    def __init__(self, stmt: ir.Stmt, function: str = DEFAULT_ENTRY_POINT,
                 arguments: list[KernelArgument] | None = None):
        """``arguments``: the function's buffer parameters (default: every
        pipeline buffer of ``stmt``, in ``kernel_signature`` order)."""
        self.stmt = stmt
        self.function = function
        self.lines: list[str] = []
        self.indent = 1
        self.names: dict[str, str] = {}
        self.used: set[str] = set()
        self.temps = 0
        self.asserts = 0
        self.assertion_codes: list[int] = []
        """The halide_error_code_t of each assertion, in order (-N is the N-th)."""
        self.arguments = kernel_signature(stmt) if arguments is None else arguments
        self.buffer_args = {a.buffer: a for a in self.arguments if not a.scalar}
        self.element_types: dict[str, ir.Type] = {a.buffer: a.type for a in self.arguments if not a.scalar}
        self.scratch_bytes = 0
        """Bytes of ``hb_scratch`` the vector values larger than
        ``VECTOR_STACK_BYTES`` take (``vectors_on_heap``)."""
        self.declared: list[set[str]] = [set()]
        """C names declared in each open block (for lets)."""

    # ------------------------------------------------------------ naming
    def cname(self, name: str) -> str:
        existing = self.names.get(name)
        if existing is not None:
            return existing
        base = re.sub(r"[^A-Za-z0-9_]", "_", name)
        if not base or base[0].isdigit():
            base = "v_" + base
        candidate, n = base, 1
        while candidate in self.used:
            n += 1
            candidate = f"{base}_{n}"
        self.used.add(candidate)
        self.names[name] = candidate
        return candidate

    def temp(self) -> str:
        # Halide's own lets are often named t<N> too (after CSE): the two
        # kinds of name share one namespace.
        self.temps += 1
        while f"t{self.temps}" in self.used:
            self.temps += 1
        name = f"t{self.temps}"
        self.used.add(name)
        return name

    def emit(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def comment(self, node: ir.Stmt) -> None:
        # Only the statement's own first line: printing what it holds too
        # would cost the whole subtree at every level (quadratic, and as
        # deep as the program).
        own: Any = node
        shallow = dataclasses.replace(own, **{f.name: ir.NoOp() for f in dataclasses.fields(own)
                                              if isinstance(getattr(own, f.name), ir.Stmt)})
        text = print_ir(shallow).split("\n", 1)[0].strip()
        if len(text) > 150:
            text = text[:147] + "..."
        self.emit("/* " + text.replace("*/", "* /") + " */")

    # ------------------------------------------------------------ the function
    def generate(self) -> str:
        for arg in self.arguments:
            self.argument_name(arg)
        self.prepare()
        body_start = len(self.lines)
        self.refuse_buffers_too_large()
        self.open_body()
        self.stmt_(self.stmt)
        self.close_body()
        self.emit("return 0;")
        body = self.lines[body_start:]
        header = [GENERATED_BANNER, self.preamble()]
        if not self.scratch_bytes:
            header.append(f"{self.linkage}{self.raw_declaration()} {{")
            return "\n".join(header + body + ["}", "", self.halide_entry_point()])
        # Large vector values live in hb_scratch: the body becomes a function
        # of its own, so that the block is freed on each of its returns.
        parameters = self.raw_parameters()
        inner = f"hb_{self.function}_body"
        header.append(f"static int {inner}({', '.join([*parameters, 'char *hb_scratch'])}) {{")
        names = [parameter.rsplit(" ", 1)[-1].lstrip("*") for parameter in parameters]
        wrapper = [f"{self.linkage}{self.raw_declaration()} {{",
                   f"  /* {self.scratch_bytes} bytes of vector values larger than {VECTOR_STACK_BYTES} bytes */",
                   f"  char *hb_scratch = (char *)malloc({self.scratch_bytes});",
                   f"  if (!hb_scratch) return {RAW_STATUS['out_of_memory']};",
                   f"  int status = {inner}({', '.join([*names, 'hb_scratch'])});",
                   "  free(hb_scratch);", "  return status;", "}"]
        return "\n".join(header + body + ["}", "", *wrapper, "", self.halide_entry_point()])

    # ------------------------------------------------------------ backend hooks
    vectors_on_heap = True
    """Large vector values in the entry point's heap scratch (host code);
    a device kernel keeps its own in local memory."""

    def preamble(self) -> str:
        """Everything before the function: includes, helpers, kernels."""
        return include_lines(C_HEADERS) + "\n" + helper_functions()

    def prepare(self) -> None:
        """Plan what the body needs before any statement is emitted."""

    def open_body(self) -> None:
        """Lines at the start of the function body."""

    def close_body(self) -> None:
        """Lines before the function's final ``return 0``."""

    def release_on_return(self) -> str:
        """C statements that must run before any early return."""
        return ""

    # ------------------------------------------------------------ statements
    def stmt_(self, s: ir.Stmt) -> None:
        self.visit(s)

    def _block(self, s: ir.Stmt) -> None:
        self.emit("{")
        self.indent += 1
        self.declared.append(set())
        self.stmt_(s)
        self.declared.pop()
        self.indent -= 1
        self.emit("}")

    def visit_block(self, s: ir.Block) -> None:
        for child in s.stmts:
            self.stmt_(child)

    def visit_no_op(self, s: ir.NoOp) -> None:
        pass

    def visit_let_stmt(self, s: ir.LetStmt) -> None:
        if describes_halide_buffer(s):
            raise codegen_error(f"the pipeline builds a halide_buffer_t ('{s.name}') to call an extern stage: "
                                "generated code has no buffer objects to pass")
        # A let covers the rest of its block, which is the rest of the C
        # block: declare it in place (Halide names are unique by this stage;
        # a repeated one gets a block of its own).
        self.comment(s)
        value = self.expr(s.value)
        name = self.cname(s.name)
        nested = name in self.declared[-1]
        if nested:
            self.emit("{")
            self.indent += 1
            self.declared.append(set())
        self.declared[-1].add(name)
        if s.value.type.lanes > 1:
            self.emit(f"{c_type(s.value.type.element())} *{name} = {value};")
        elif s.value.type.is_handle and s.name in self.element_types:
            # A buffer's host pointer: typed, so that loads index elements.
            ctype = storage_type(self.element_types[s.name])
            self.emit(f"{ctype} *{name} = ({ctype} *){value};")
            self.emit(f"(void){name};")
        else:
            self.emit(f"{c_type(s.value.type)} {name} = {value};")
            self.emit(f"(void){name};")
        self.stmt_(s.body)
        if nested:
            self.declared.pop()
            self.indent -= 1
            self.emit("}")

    def visit_assert_stmt(self, s: ir.AssertStmt) -> None:
        self.asserts += 1
        message = s.message.name if isinstance(s.message, ir.Call) else ""
        self.assertion_codes.append(halide_error_code(message))
        self.comment(s)
        self.emit(f"if (!({self.expr(s.condition)})) {{ {self.release_on_return()}return -{self.asserts}; }}")

    def visit_producer_consumer(self, s: ir.ProducerConsumer) -> None:
        self.emit(f"/* {'produce' if s.is_producer else 'consume'} {s.name} */")
        self.stmt_(s.body)

    def visit_for(self, s: ir.For) -> None:
        self.comment(s)
        lo, extent = self.expr(s.min), self.expr(s.extent)
        name = self.cname(s.name)
        self.emit("{")
        self.indent += 1
        self.emit(f"int32_t {name}_lo = {lo}, {name}_end = {name}_lo + {extent};")
        self.emit(f"for (int32_t {name} = {name}_lo; {name} < {name}_end; {name}++) {{")
        self.indent += 1
        self.declared.append(set())
        self.stmt_(s.body)
        self.declared.pop()
        self.indent -= 1
        self.emit("}")
        self.indent -= 1
        self.emit("}")

    def visit_if_then_else(self, s: ir.IfThenElse) -> None:
        known = bounds_query_value(s.condition)
        if known is not None:
            self.emit(f"/* bounds query branch: always {'taken' if known else 'skipped'} here */")
            branch = s.then_case if known else s.else_case
            if branch is not None:
                self._block(branch)
            return
        self.comment(s)
        self.emit(f"if ({self.expr(s.condition)})")
        self._block(s.then_case)
        if s.else_case is not None:
            self.emit("else")
            self._block(s.else_case)

    def visit_allocate(self, s: ir.Allocate) -> None:
        self.comment(s)
        name = self.cname(s.name)
        elem = s.type.element()
        self.element_types[s.name] = elem
        self.emit("{")
        self.indent += 1
        self.acquire_memory(name, storage_type(elem), self._allocation_elements(s))
        self.declared.append(set())
        self.stmt_(s.body)
        self.declared.pop()
        self.release_memory(name)
        self.indent -= 1
        self.emit("}")

    def _allocation_elements(self, s: ir.Allocate) -> str:
        """How many elements ``s`` allocates, as C: a constant, checked here,
        or a variable computed in 64 bits and checked at run time (which
        returns the status for an allocation too large)."""
        unit = self.allocation_unit_bytes(max(1, s.type.bits // 8))
        factors = [ir.IntImm(s.type.lanes), *s.extents]
        if all(isinstance(f, ir.IntImm) for f in factors):
            constant = 1
            for factor in factors:
                constant *= cast(ir.IntImm, factor).value
            if constant < 0 or constant * unit > 2**31 - 1:
                limit = "2^31 - 1 bytes, Halide's limit" if unit > 1 else "2^31 - 1 elements, int32 indexing's limit"
                raise codegen_error(f"allocation '{s.name}' of {constant} elements passes {limit}")
            return str(max(1, constant))  # calloc(0) may answer NULL, which reads as a failure
        terms = self.temp()
        elements = self.temp()
        self.emit(f"const int64_t {terms}[] = {{{', '.join(f'(int64_t)({self.expr(f)})' for f in factors)}}};")
        self.emit(f"int64_t {elements} = hb_allocation_elements({unit}, {len(factors)}, {terms});")
        self.emit(f"if ({elements} < 0) {{ {self.release_on_return()}return "
                  f"{RAW_STATUS['buffer_allocation_too_large']}; }}")
        return elements

    def allocation_unit_bytes(self, element_bytes: int) -> int:
        """What an allocation's size is held to 2^31 - 1 of, in bytes: its
        elements' bytes for host memory (Halide refuses a larger heap
        allocation); a backend whose allocations live elsewhere overrides it."""
        return element_bytes

    def acquire_memory(self, name: str, storage: str, size: str) -> None:
        """Declare ``name`` as ``size`` elements of ``storage`` (zeroed host memory here)."""
        self.emit(f"{storage} *{name} = ({storage} *)calloc((size_t)({size}), sizeof({storage}));")
        self.emit(f"if (!{name}) {{ {self.release_on_return()}return {RAW_STATUS['out_of_memory']}; }}")

    def release_memory(self, name: str) -> None:
        self.emit(f"free({name});")

    def visit_free(self, s: ir.Free) -> None:
        pass

    def visit_evaluate(self, s: ir.Evaluate) -> None:
        value = s.value
        if isinstance(value, ir.Call) and value.name.startswith(operations.RUNTIME_PREFIX) or is_ignorable(value):
            return
        self.emit(f"(void)({self.expr(value)});")

    def visit_atomic(self, s: ir.Atomic) -> None:
        self.stmt_(s.body)

    def visit_fork(self, s: ir.Fork) -> None:
        self.emit("/* fork: run serially */")
        self._block(s.first)
        self._block(s.rest)

    def visit_acquire(self, s: ir.Acquire) -> None:
        self.stmt_(s.body)

    def visit_hoisted_storage(self, s: ir.HoistedStorage) -> None:
        self.stmt_(s.body)

    def visit_prefetch(self, s: ir.Prefetch) -> None:
        pass

    def visit_store(self, s: ir.Store) -> None:
        self.comment(s)
        elem = self.element_types.get(s.name)
        if elem is None:
            raise codegen_error(f"store to '{s.name}', which is neither a pipeline buffer nor allocated")
        buf = self.cname(s.name)
        if s.predicate is None and s.value.type == elem and self._moves_bits(s.value, elem):
            # a copy of one element moves its bits: a 16-bit float is not converted to float and back
            self.emit(f"{buf}[{self.expr(s.index)}] = {self._bits(s.value)};")
            return
        value = self.expr(s.value)
        index = self.expr(s.index)
        lanes = s.value.type.lanes
        to_memory = to_storage(elem)
        if s.predicate is not None:
            mask = self.expr(s.predicate)
            if lanes == 1:
                self.emit(f"if ({mask}) {buf}[{index}] = {to_memory(value)};")
                return
            self.emit(f"for (int i = 0; i < {lanes}; i++) "
                      f"if ({mask}[i]) {buf}[{index}[i]] = {to_memory(value + '[i]')};")
            return
        if lanes == 1:
            self.emit(f"{buf}[{index}] = {to_memory(value)};")
        else:
            self.emit(f"for (int i = 0; i < {lanes}; i++) {buf}[{index}[i]] = {to_memory(value + '[i]')};")

    def _moves_bits(self, e: ir.Expr, elem: ir.Type) -> bool:
        """Whether the scalar ``e`` of type ``elem`` only moves data: a load
        from a buffer of that type, a float16 constant, a select of such (a
        zero-stuffed or padded copy), or a call that stands for one
        (``likely``, by the operations table)."""
        if isinstance(e, ir.Load):
            return e.predicate is None and e.type == elem and self.element_types.get(e.name) == elem
        if isinstance(e, ir.FloatImm):
            return elem == ir.Float(16) and half_bits(e.value) is not None
        if isinstance(e, ir.Select):
            return self._moves_bits(e.true_value, elem) and self._moves_bits(e.false_value, elem)
        if isinstance(e, ir.Call):  # a hint such as likely(...) stands for its argument
            same = operations.equivalent_ir(e)
            return same is not None and same.type == elem and self._moves_bits(same, elem)
        return False

    def _bits(self, e: ir.Expr) -> str:
        """``e`` (``_moves_bits``) in its storage type."""
        if isinstance(e, ir.Load):
            return f"{self.cname(e.name)}[{self.expr(e.index)}]"
        if isinstance(e, ir.FloatImm):
            return str(half_bits(e.value))
        if isinstance(e, ir.Call):
            same = operations.equivalent_ir(e)
            assert same is not None
            return self._bits(same)
        assert isinstance(e, ir.Select)
        return f"({self.expr(e.condition)} ? {self._bits(e.true_value)} : {self._bits(e.false_value)})"

    # ------------------------------------------------------------ expressions
    def expr(self, e: ir.Expr) -> str:
        """A C expression for a scalar, or the name of an array for a vector."""
        text: str = self.visit(e)
        return text

    def visit_default(self, node: Any) -> Any:
        if isinstance(node, ir.Expr):
            raise codegen_error(f"the C generator cannot express {type(node).__name__}: {print_ir(node)}")
        raise codegen_error(f"the C generator cannot express {type(node).__name__} statements")

    def _vector(self, t: ir.Type) -> str:
        name = self.temp()
        element = c_type(t.element())
        size = t.lanes * c_size(t.element())
        if self.vectors_on_heap and size > VECTOR_STACK_BYTES:
            # Each declaration gets its own place: a loop reuses it from one
            # iteration to the next, as it would a local array.
            self.emit(f"{element} *{name} = ({element} *)(hb_scratch + {self.scratch_bytes});")
            self.scratch_bytes += -(-size // 64) * 64
        else:
            self.emit(f"{element} {name}[{t.lanes}];")
        return name

    def _named(self, text: str, t: ir.Type) -> str:
        """``text``, or a temporary holding it when it holds a conditional
        (another min, max or select): written twice at every level, nested
        ones would grow exponentially; anything else only grows linearly."""
        if "?" not in text:
            return text
        name = self.temp()
        self.emit(f"{c_type(t)} {name} = {text};")
        return name

    def _lane(self, e: ir.Expr, text: str, i: str = "i") -> str:
        return f"{text}[{i}]" if e.type.lanes > 1 else text

    def visit_int_imm(self, e: ir.IntImm) -> str:
        if e.type.bits == 64:
            return f"INT64_C({e.value})"
        return f"(({c_type(e.type)}){e.value})"

    def visit_uint_imm(self, e: ir.UIntImm) -> str:
        if e.type.bits == 64:
            return f"UINT64_C({e.value})"
        return f"(({c_type(e.type)}){e.value}u)"

    def visit_float_imm(self, e: ir.FloatImm) -> str:
        value = e.value
        if value != value:
            return "NAN"
        if value in (float("inf"), float("-inf")):
            return "INFINITY" if value > 0 else "(-INFINITY)"
        text = repr(float(value))
        return f"{text}f" if c_type(e.type) == "float" else text

    def visit_string_imm(self, e: ir.StringImm) -> str:
        return '"' + e.value.encode("unicode_escape").decode().replace('"', '\\"') + '"'

    def visit_variable(self, e: ir.Variable) -> str:
        if e.name.endswith(".buffer") and e.name[:-7] in self.buffer_args:
            return f"((void *){self.param(e.name[:-7])})"
        return self.cname(e.name)

    def visit_cast(self, e: ir.Cast) -> str:
        value = self.expr(e.value)
        if e.type.lanes == 1:
            return cast_expr(e.value.type, e.type, value)
        out = self._vector(e.type)
        self.emit(f"for (int i = 0; i < {e.type.lanes}; i++) {out}[i] = "
                  f"{cast_expr(e.value.type.element(), e.type.element(), value + '[i]')};")
        return out

    def visit_reinterpret(self, e: ir.Reinterpret) -> str:
        if e.value.type.is_handle and not e.type.is_handle:
            return f"(({c_type(e.type)})(uintptr_t)({self.expr(e.value)}))"
        if e.type.is_handle:
            return f"((void *)(uintptr_t)({self.expr(e.value)}))"
        raise codegen_error("the C generator only reinterprets handles")

    def visit_binary(self, e: ir.Binary) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        t = e.a.type
        if e.type.lanes == 1:
            if e.op in OPERANDS_USED_TWICE and (e.op is not ir.BinOp.MOD or t.is_float):
                # min, max and a float mod name each operand twice: nested
                # ones (a clamp chain) would double the text at each level.
                a, b = self._named(a, t), self._named(b, t)
            return binary_expr(e.op, t, a, b)
        out = self._vector(e.type)
        self.emit(f"for (int i = 0; i < {e.type.lanes}; i++) {out}[i] = "
                  f"{binary_expr(e.op, t.element(), a + '[i]', b + '[i]')};")
        return out

    def visit_not(self, e: ir.Not) -> str:
        v = self.expr(e.value)
        if e.type.lanes == 1:
            return f"(!{v})"
        out = self._vector(e.type)
        self.emit(f"for (int i = 0; i < {e.type.lanes}; i++) {out}[i] = !{v}[i];")
        return out

    def visit_select(self, e: ir.Select) -> str:
        c, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        if e.type.lanes == 1:
            return f"({c} ? {t} : {f})"
        out = self._vector(e.type)
        self.emit(f"for (int i = 0; i < {e.type.lanes}; i++) {out}[i] = "
                  f"{self._lane(e.condition, c)} ? {t}[i] : {f}[i];")
        return out

    def visit_load(self, e: ir.Load) -> str:
        elem = self.element_types.get(e.name)
        if elem is None:
            raise codegen_error(f"load from '{e.name}', which is neither a pipeline buffer nor allocated")
        buf = self.cname(e.name)
        index = self.expr(e.index)
        from_memory = from_storage(elem)
        lanes = e.type.lanes
        if lanes == 1 and e.predicate is None:
            return from_memory(f"{buf}[{index}]")
        out = self._vector(e.type)
        if e.predicate is None:
            self.emit(f"for (int i = 0; i < {lanes}; i++) {out}[i] = {from_memory(f'{buf}[{index}[i]]')};")
        else:
            mask = self.expr(e.predicate)
            lane_index = f"{index}[i]" if lanes > 1 else index
            self.emit(f"for (int i = 0; i < {lanes}; i++) {out}[i] = "
                      f"{self._lane(e.predicate, mask)} ? {from_memory(f'{buf}[{lane_index}]')} : 0;")
        return out if lanes > 1 else f"{out}[0]"

    def visit_ramp(self, e: ir.Ramp) -> str:
        base, stride = self.expr(e.base), self.expr(e.stride)
        inner = e.base.type.lanes
        out = self._vector(e.type)
        b = f"{base}[k]" if inner > 1 else base
        s = f"{stride}[k]" if inner > 1 else stride
        self.emit(f"for (int j = 0; j < {e.lanes}; j++) for (int k = 0; k < {inner}; k++) "
                  f"{out}[j * {inner} + k] = ({c_type(e.type.element())})({b} + j * {s});")
        return out

    def visit_broadcast(self, e: ir.Broadcast) -> str:
        value = self.expr(e.value)
        inner = e.value.type.lanes
        out = self._vector(e.type)
        v = f"{value}[k]" if inner > 1 else value
        self.emit(f"for (int j = 0; j < {e.lanes}; j++) for (int k = 0; k < {inner}; k++) "
                  f"{out}[j * {inner} + k] = {v};")
        return out

    def visit_let(self, e: ir.Let) -> str:
        value = self.expr(e.value)
        name = self.cname(e.name)
        if e.value.type.lanes > 1:
            self.emit(f"{c_type(e.value.type.element())} *{name} = {value};")
        else:
            self.emit(f"{c_type(e.value.type)} {name} = {value};")
        return self.expr(e.body)

    def visit_shuffle(self, e: ir.Shuffle) -> str:
        parts = [(self.expr(v), v.type.lanes) for v in e.vectors]
        total = sum(lanes for _, lanes in parts)
        joined = self._vector(e.vectors[0].type.with_lanes(total))
        offset = 0
        for text, lanes in parts:
            if lanes == 1:
                self.emit(f"{joined}[{offset}] = {text};")
            else:
                self.emit(f"memcpy({joined} + {offset}, {text}, sizeof({joined}[0]) * {lanes});")
            offset += lanes
        table = self.temp()
        indices = ", ".join(str(i) for i in e.indices)
        self.emit(f"static const int32_t {table}[{len(e.indices)}] = {{{indices}}};")
        if e.type.lanes == 1:
            return f"{joined}[{table}[0]]"
        out = self._vector(e.type)
        self.emit(f"for (int i = 0; i < {len(e.indices)}; i++) {out}[i] = {joined}[{table}[i]];")
        return out

    def visit_vector_reduce(self, e: ir.VectorReduce) -> str:
        value = self.expr(e.value)
        factor = e.value.type.lanes // e.type.lanes
        out = self._vector(e.type)
        elem = e.type.element()
        combine = {
            ir.ReduceOp.ADD: lambda a, b: binary_expr(ir.BinOp.ADD, elem, a, b),
            ir.ReduceOp.MUL: lambda a, b: binary_expr(ir.BinOp.MUL, elem, a, b),
            ir.ReduceOp.MIN: lambda a, b: f"({a} < {b} ? {a} : {b})",
            ir.ReduceOp.MAX: lambda a, b: f"({a} > {b} ? {a} : {b})",
            ir.ReduceOp.AND: lambda a, b: f"({a} && {b})",
            ir.ReduceOp.OR: lambda a, b: f"({a} || {b})",
        }.get(e.op)
        if combine is None:
            raise codegen_error(f"the C generator does not implement vector_reduce_{e.op.value}")
        self.emit(f"for (int o = 0; o < {e.type.lanes}; o++) {{")
        self.emit(f"  {c_type(elem)} acc = {value}[o * {factor}];")
        self.emit(f"  for (int k = 1; k < {factor}; k++) acc = {combine('acc', f'{value}[o * {factor} + k]')};")
        self.emit(f"  {out}[o] = acc;")
        self.emit("}")
        return out if e.type.lanes > 1 else f"{out}[0]"

def describes_halide_buffer(s: ir.LetStmt) -> bool:
    """``let X.buffer = _halide_buffer_init(...)``: a buffer the pipeline
    allocates itself, described for Halide's runtime (a GPU stage computed at
    root, or an extern stage's argument)."""
    return any(_is_call_of_kind(n, Kind.BUFFER_DESCRIPTION) for n in ir.walk(s.value))


def _is_call_of_kind(e: ir.Node, kind: Kind) -> bool:
    operation = operations.find(e.name) if isinstance(e, ir.Call) else None
    return operation is not None and operation.kind is kind


def is_ignorable(e: ir.Expr) -> bool:
    """A statement's call that generated code leaves out: a host/device
    transfer or dirty flag (the CUDA wrapper is given device pointers)."""
    return _is_call_of_kind(e, Kind.DEVICE_RUNTIME)
