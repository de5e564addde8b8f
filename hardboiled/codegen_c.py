"""C code generation for (tensorized) Halide IR.

The generated source is one self-contained function,

    int hb_kernel(T0 *X, int32_t X_min0, int32_t X_extent0, int32_t X_stride0, ...);

with a pointer plus min, extent and stride per dimension for every pipeline
buffer (in the order ``kernel_signature`` returns). It returns 0, or the
negative number of the first of the pipeline's checks that failed.

* Scalars are C scalars; a vector is a local array filled lane by lane
  (plain loops: clear, deterministic, and GCC/Clang vectorize them).
* float16 and bfloat16 values live in ``float`` variables rounded to their
  precision after every operation, and in memory as 16-bit patterns.
* Integer division and modulo follow Halide (Euclidean), casts wrap.
* AMX: every whole tile of an AMX buffer is a tile register, operands get
  two more; one palette-1 configuration at entry sets each register's rows
  and bytes per row; tile_* calls become ``_tile_zero``, ``_tile_loadd``,
  ``_tile_dpbf16ps`` / ``_tile_dpb[su][su]d`` and ``_tile_stored``.
  hb_amx.h maps them to <immintrin.h> or to the portable emulation.

Each block carries the IR statement it came from as a comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import ir
from .diagnostics import Diagnostic, HardboiledError
from .hardware import AMX_TILE
from .printer import print_ir
from .verify import discover_buffers


class CodegenError(HardboiledError):
    """IR that the C generator cannot express."""


def _fail(message: str) -> CodegenError:
    return CodegenError(Diagnostic("error", message))


_C_TYPES = {
    (ir.TypeCode.INT, 8): "int8_t", (ir.TypeCode.INT, 16): "int16_t", (ir.TypeCode.INT, 32): "int32_t",
    (ir.TypeCode.INT, 64): "int64_t", (ir.TypeCode.UINT, 1): "uint8_t", (ir.TypeCode.UINT, 8): "uint8_t",
    (ir.TypeCode.UINT, 16): "uint16_t", (ir.TypeCode.UINT, 32): "uint32_t", (ir.TypeCode.UINT, 64): "uint64_t",
    (ir.TypeCode.FLOAT, 32): "float", (ir.TypeCode.FLOAT, 64): "double",
    (ir.TypeCode.FLOAT, 16): "float", (ir.TypeCode.BFLOAT, 16): "float",
}
_STORAGE_TYPES = {(ir.TypeCode.FLOAT, 16): "uint16_t", (ir.TypeCode.BFLOAT, 16): "uint16_t"}


def c_type(t: ir.Type) -> str:
    """The C type of a value of (element) type t."""
    if t.is_handle:
        return "void *"
    return _C_TYPES[(t.code, t.bits)]


def storage_type(t: ir.Type) -> str:
    """The C type of an element of t in memory."""
    return _STORAGE_TYPES.get((t.code, t.bits), c_type(t))


def _is_half(t: ir.Type) -> bool:
    return t.bits == 16 and t.is_float


_PRELUDE = r"""#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <alloca.h>
#include "hb_amx.h"

/* Halide's integer division and modulo: the remainder is never negative. */
static inline int64_t hb_div(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t q = a / b, r = a % b;
  if (r < 0) q += (b > 0) ? -1 : 1;
  return q;
}
static inline int64_t hb_mod(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t r = a % b;
  return r < 0 ? r + (b > 0 ? b : -b) : r;
}
static inline uint64_t hb_udiv(uint64_t a, uint64_t b) { return b ? a / b : 0; }
static inline uint64_t hb_umod(uint64_t a, uint64_t b) { return b ? a % b : 0; }
/* 16-bit floats: float arithmetic, rounded to nearest even after each step. */
static inline uint16_t hb_f32_to_bf16(float f) {
  uint32_t u; memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static inline float hb_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f;
}
static inline float hb_round_bf16(float f) { return hb_bf16_to_f32(hb_f32_to_bf16(f)); }
/* IEEE half precision in portable C (compilers differ on _Float16). */
static inline float hb_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, u;
  float f;
  if (exp == 0) {
    f = (float)mant * 5.9604644775390625e-08f; /* subnormal: mant * 2^-24 */
    memcpy(&u, &f, 4);
    u |= sign;
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  memcpy(&f, &u, 4);
  return f;
}
static inline uint16_t hb_f32_to_f16(float f) {
  uint32_t u; memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);          /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);         /* rounds to infinity */
  if (a < 0x38800000u) {                                           /* subnormal or zero */
    float magnitude; memcpy(&magnitude, &a, 4);
    return (uint16_t)(sign | (uint32_t)nearbyintf(magnitude * 16777216.0f));
  }
  a += 0xfffu + ((a >> 13) & 1u);                                  /* round to nearest even */
  return (uint16_t)(sign | ((a >> 13) - (112u << 10)));
}
static inline float hb_round_f16(float f) { return hb_f16_to_f32(hb_f32_to_f16(f)); }
"""


@dataclass
class _TileRegisters:
    """Which AMX tile register holds what, and each register's shape."""

    by_tile: dict[tuple[str, int], int] = field(default_factory=dict)
    shapes: dict[int, tuple[int, int]] = field(default_factory=dict)
    operand_a: int | None = None
    operand_b: int | None = None

    def register(self, buffer: str, tile: int) -> int:
        key = (buffer, tile)
        if key not in self.by_tile:
            self.by_tile[key] = len(self.by_tile)
        return self.by_tile[key]

    def shape(self, register: int, rows: int, colbytes: int) -> None:
        previous = self.shapes.setdefault(register, (rows, colbytes))
        if previous != (rows, colbytes):
            raise _fail(f"tile register {register} is used with two shapes: {previous} and {(rows, colbytes)}")


@dataclass(frozen=True, slots=True)
class KernelArgument:
    buffer: str
    type: ir.Type
    dimensions: int


def kernel_signature(stmt: ir.Stmt) -> list[KernelArgument]:
    """The pipeline buffers the generated function takes, in order."""
    args = []
    for name, spec in sorted(discover_buffers(stmt).items()):
        if spec.type is None or spec.dimensions is None:
            raise _fail(f"cannot tell the type and dimensions of buffer '{name}' from the IR")
        args.append(KernelArgument(name, spec.type, spec.dimensions))
    return args


class CGenerator:
    """Emits C for one statement (the body of the generated kernel)."""

    def __init__(self, stmt: ir.Stmt, function: str = "hb_kernel",
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
        self.arguments = kernel_signature(stmt) if arguments is None else arguments
        self.buffer_args = {a.buffer: a for a in self.arguments}
        self.amx_buffers = {n.name: n for n in ir.walk(stmt)
                            if isinstance(n, ir.Allocate) and n.memory_type == "AMXTile"}
        self.tiles = _TileRegisters()
        self.element_types: dict[str, ir.Type] = {a.buffer: a.type for a in self.arguments}
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
        self.temps += 1
        return f"t{self.temps}"

    def emit(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def comment(self, node: ir.Stmt) -> None:
        text = print_ir(node).split("\n", 1)[0].strip()
        if len(text) > 150:
            text = text[:147] + "..."
        self.emit("/* " + text.replace("*/", "* /") + " */")

    # ------------------------------------------------------------ the function
    def param(self, buffer: str) -> str:
        """The C parameter holding a pipeline buffer's host pointer."""
        return self.cname(f"{buffer}.host pointer")

    def generate(self) -> str:
        for arg in self.arguments:
            self.param(arg.buffer)
        self._plan_tiles()
        body_start = len(self.lines)
        if self.tiles.by_tile or self.tiles.operand_a is not None:
            self._tile_setup()
        self.stmt_(self.stmt)
        if self.tiles.by_tile or self.tiles.operand_a is not None:
            self.emit("_tile_release();")
        self.emit("return 0;")
        body = self.lines[body_start:]
        params = []
        for arg in self.arguments:
            name = self.param(arg.buffer)
            params.append(f"{storage_type(arg.type)} *{name}")
            for d in range(arg.dimensions):
                params.extend(f"int32_t {name}_{f}{d}" for f in ("min", "extent", "stride"))
        header = [
            "/* Generated by hardboiled from Halide IR. */",
            _PRELUDE,
            f"int {self.function}({', '.join(params)}) {{",
        ]
        return "\n".join(header + body + ["}", ""])

    # ------------------------------------------------------------ AMX plan
    def _plan_tiles(self) -> None:
        for node in ir.walk(self.stmt):
            if isinstance(node, ir.Store) and node.name in self.amx_buffers:
                tile = self._tile_index(node.name, node.index)
                reg = self.tiles.register(node.name, tile)
                value = node.value
                if isinstance(value, ir.Call) and value.name in ("tile_zero", "tile_matmul", "tile_load"):
                    self.tiles.shape(reg, _int(value.args[0]), _int(value.args[1]))
            if isinstance(node, ir.Call) and node.name == "tile_matmul":
                a, b = node.args[4], node.args[5]
                if isinstance(a, ir.Call):
                    self.tiles.operand_a = -1
                if isinstance(b, ir.Call):
                    self.tiles.operand_b = -1
        count = len(self.tiles.by_tile)
        if self.tiles.operand_a == -1:
            self.tiles.operand_a, count = count, count + 1
        if self.tiles.operand_b == -1:
            self.tiles.operand_b, count = count, count + 1
        if count > AMX_TILE.registers:
            raise _fail(f"the kernel needs {count} AMX tile registers; AMX has {AMX_TILE.registers}")
        for node in ir.walk(self.stmt):
            if isinstance(node, ir.Call) and node.name == "tile_matmul":
                for operand, reg in ((node.args[4], self.tiles.operand_a), (node.args[5], self.tiles.operand_b)):
                    if isinstance(operand, ir.Call) and reg is not None:
                        self.tiles.shape(reg, _int(operand.args[0]), _int(operand.args[1]))
        for (name, tile), reg in self.tiles.by_tile.items():
            if reg not in self.tiles.shapes:
                raise _fail(f"cannot tell the shape of tile {tile} of AMX buffer '{name}'")

    def _tile_index(self, name: str, index: ir.Expr) -> int:
        alloc = self.amx_buffers[name]
        lanes = AMX_TILE.tile_bytes // alloc.type.bytes
        if not (isinstance(index, ir.Ramp) and isinstance(index.base, ir.IntImm)
                and index.base.value % lanes == 0):
            raise _fail(f"AMX buffer '{name}' is accessed at an index that is not a whole tile")
        return index.base.value // lanes

    def _tile_setup(self) -> None:
        self.emit("/* AMX palette 1: rows and bytes per row of each tile register. */")
        self.emit("unsigned char hb_tile_config[64] = {0};")
        self.emit("hb_tile_config[0] = 1;")
        for reg, (rows, colbytes) in sorted(self.tiles.shapes.items()):
            self.emit(f"hb_tile_config[{16 + 2 * reg}] = {colbytes & 0xFF}; "
                      f"hb_tile_config[{17 + 2 * reg}] = {colbytes >> 8}; hb_tile_config[{48 + reg}] = {rows};")
        self.emit("if (hb_amx_enable() != 0) return -100000;")
        self.emit("_tile_loadconfig(hb_tile_config);")

    # ------------------------------------------------------------ statements
    def stmt_(self, s: ir.Stmt) -> None:
        getattr(self, "_s_" + type(s).__name__)(s)

    def _block(self, s: ir.Stmt) -> None:
        self.emit("{")
        self.indent += 1
        self.declared.append(set())
        self.stmt_(s)
        self.declared.pop()
        self.indent -= 1
        self.emit("}")

    def _s_Block(self, s: ir.Block) -> None:  # noqa: N802
        for child in s.stmts:
            self.stmt_(child)

    def _s_NoOp(self, s: ir.NoOp) -> None:  # noqa: N802
        pass

    def _s_LetStmt(self, s: ir.LetStmt) -> None:  # noqa: N802
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

    def _s_AssertStmt(self, s: ir.AssertStmt) -> None:  # noqa: N802
        self.asserts += 1
        self.comment(s)
        self.emit(f"if (!({self.expr(s.condition)})) {{ {self._release()}return -{self.asserts}; }}")

    def _release(self) -> str:
        return "_tile_release(); " if self.tiles.by_tile or self.tiles.operand_a is not None else ""

    def _s_ProducerConsumer(self, s: ir.ProducerConsumer) -> None:  # noqa: N802
        self.emit(f"/* {'produce' if s.is_producer else 'consume'} {s.name} */")
        self.stmt_(s.body)

    def _s_For(self, s: ir.For) -> None:  # noqa: N802
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

    def _s_IfThenElse(self, s: ir.IfThenElse) -> None:  # noqa: N802
        known = _bounds_query_value(s.condition)
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

    def _s_Allocate(self, s: ir.Allocate) -> None:  # noqa: N802
        self.comment(s)
        if s.name in self.amx_buffers:
            self.emit(f"/* {s.name} lives in AMX tile registers */")
            self.stmt_(s.body)
            return
        size = self.expr(ir.IntImm(s.type.lanes))
        for extent in s.extents:
            size = f"({size}) * ({self.expr(extent)})"
        name = self.cname(s.name)
        elem = s.type.element()
        self.element_types[s.name] = elem
        self.emit("{")
        self.indent += 1
        self.emit(f"{storage_type(elem)} *{name} = ({storage_type(elem)} *)calloc((size_t)({size}), sizeof({storage_type(elem)}));")
        self.emit(f"if (!{name}) {{ {self._release()}return -200000; }}")
        self.declared.append(set())
        self.stmt_(s.body)
        self.declared.pop()
        self.emit(f"free({name});")
        self.indent -= 1
        self.emit("}")

    def _s_Free(self, s: ir.Free) -> None:  # noqa: N802
        pass

    def _s_Evaluate(self, s: ir.Evaluate) -> None:  # noqa: N802
        value = s.value
        if isinstance(value, ir.Call) and value.name == "tile_store":
            self.comment(s)
            rows, colbytes, buf, offset, stride, tile = value.args
            assert isinstance(tile, ir.Load)
            reg = self.tiles.by_tile[(tile.name, self._tile_index(tile.name, tile.index))]
            self.emit(f"_tile_stored({reg}, (char *){self.expr(buf)} + ({self.expr(offset)}), {self.expr(stride)});")
            return
        if isinstance(value, ir.Call) and value.name.startswith("halide_") or _is_ignorable(value):
            return
        self.emit(f"(void)({self.expr(value)});")

    def _s_Atomic(self, s: ir.Atomic) -> None:  # noqa: N802
        self.stmt_(s.body)

    def _s_Fork(self, s: ir.Fork) -> None:  # noqa: N802
        self.emit("/* fork: run serially */")
        self._block(s.first)
        self._block(s.rest)

    def _s_Acquire(self, s: ir.Acquire) -> None:  # noqa: N802
        self.stmt_(s.body)

    def _s_HoistedStorage(self, s: ir.HoistedStorage) -> None:  # noqa: N802
        self.stmt_(s.body)

    def _s_Prefetch(self, s: ir.Prefetch) -> None:  # noqa: N802
        pass

    def _s_Store(self, s: ir.Store) -> None:  # noqa: N802
        self.comment(s)
        if s.name in self.amx_buffers:
            self._tile_store_into_register(s)
            return
        elem = self.element_types.get(s.name)
        if elem is None:
            raise _fail(f"store to '{s.name}', which is neither a pipeline buffer nor allocated")
        buf = self.cname(s.name)
        value = self.expr(s.value)
        index = self.expr(s.index)
        lanes = s.value.type.lanes
        to_memory = _to_storage(elem)
        if s.predicate is not None:
            mask = self.expr(s.predicate)
            if lanes == 1:
                self.emit(f"if ({mask}) {buf}[{index}] = {to_memory(value)};")
                return
            self.emit(f"for (int i = 0; i < {lanes}; i++) if ({mask}[i]) {buf}[{index}[i]] = {to_memory(value + '[i]')};")
            return
        if lanes == 1:
            self.emit(f"{buf}[{index}] = {to_memory(value)};")
        else:
            self.emit(f"for (int i = 0; i < {lanes}; i++) {buf}[{index}[i]] = {to_memory(value + '[i]')};")

    def _tile_store_into_register(self, s: ir.Store) -> None:
        reg = self.tiles.by_tile[(s.name, self._tile_index(s.name, s.index))]
        value = s.value
        if not isinstance(value, ir.Call):
            raise _fail(f"AMX buffer '{s.name}' is written with something that is not a tile operation")
        if value.name == "tile_zero":
            self.emit(f"_tile_zero({reg});")
        elif value.name == "tile_load":
            self.emit(self._tile_loadd(reg, value))
        elif value.name == "tile_matmul":
            a_reg = self._operand(value.args[4], self.tiles.operand_a)
            b_reg = self._operand(value.args[5], self.tiles.operand_b)
            self.emit(f"{_dot_product(value.args[4].type, value.args[5].type)}({reg}, {a_reg}, {b_reg});")
        else:
            raise _fail(f"AMX buffer '{s.name}' is written by '{value.name}'")

    def _operand(self, operand: ir.Expr, reg: int | None) -> int:
        if isinstance(operand, ir.Load) and operand.name in self.amx_buffers:
            return self.tiles.by_tile[(operand.name, self._tile_index(operand.name, operand.index))]
        assert isinstance(operand, ir.Call) and operand.name == "tile_load" and reg is not None
        self.emit(self._tile_loadd(reg, operand))
        return reg

    def _tile_loadd(self, reg: int, call: ir.Call) -> str:
        _, _, buf, offset, stride = call.args
        return f"_tile_loadd({reg}, (const char *){self.expr(buf)} + ({self.expr(offset)}), {self.expr(stride)});"

    # ------------------------------------------------------------ expressions
    def expr(self, e: ir.Expr) -> str:
        """A C expression for a scalar, or the name of an array for a vector."""
        method = getattr(self, "_e_" + type(e).__name__, None)
        if method is None:
            raise _fail(f"the C generator cannot express {type(e).__name__}: {print_ir(e)}")
        return method(e)

    def _vector(self, t: ir.Type) -> str:
        name = self.temp()
        self.emit(f"{c_type(t.element())} {name}[{t.lanes}];")
        return name

    def _lane(self, e: ir.Expr, text: str, i: str = "i") -> str:
        return f"{text}[{i}]" if e.type.lanes > 1 else text

    def _e_IntImm(self, e: ir.IntImm) -> str:  # noqa: N802
        if e.type.bits == 64:
            return f"INT64_C({e.value})"
        return f"(({c_type(e.type)}){e.value})"

    def _e_UIntImm(self, e: ir.UIntImm) -> str:  # noqa: N802
        if e.type.bits == 64:
            return f"UINT64_C({e.value})"
        return f"(({c_type(e.type)}){e.value}u)"

    def _e_FloatImm(self, e: ir.FloatImm) -> str:  # noqa: N802
        value = e.value
        if value != value:
            return "NAN"
        if value in (float("inf"), float("-inf")):
            return "INFINITY" if value > 0 else "(-INFINITY)"
        text = repr(float(value))
        return f"{text}f" if c_type(e.type) == "float" else text

    def _e_StringImm(self, e: ir.StringImm) -> str:  # noqa: N802
        return '"' + e.value.encode("unicode_escape").decode().replace('"', '\\"') + '"'

    def _e_Variable(self, e: ir.Variable) -> str:  # noqa: N802
        if e.name.endswith(".buffer") and e.name[:-7] in self.buffer_args:
            return f"((void *){self.param(e.name[:-7])})"
        return self.cname(e.name)

    def _e_Cast(self, e: ir.Cast) -> str:  # noqa: N802
        value = self.expr(e.value)
        if e.type.lanes == 1:
            return _cast(e.value.type, e.type, value)
        out = self._vector(e.type)
        self.emit(f"for (int i = 0; i < {e.type.lanes}; i++) {out}[i] = "
                  f"{_cast(e.value.type.element(), e.type.element(), value + '[i]')};")
        return out

    def _e_Reinterpret(self, e: ir.Reinterpret) -> str:  # noqa: N802
        if e.value.type.is_handle and not e.type.is_handle:
            return f"(({c_type(e.type)})(uintptr_t)({self.expr(e.value)}))"
        if e.type.is_handle:
            return f"((void *)(uintptr_t)({self.expr(e.value)}))"
        raise _fail("the C generator only reinterprets handles")

    def _e_Binary(self, e: ir.Binary) -> str:  # noqa: N802
        a, b = self.expr(e.a), self.expr(e.b)
        t = e.a.type
        if e.type.lanes == 1:
            return _binary(e.op, t, a, b)
        out = self._vector(e.type)
        self.emit(f"for (int i = 0; i < {e.type.lanes}; i++) {out}[i] = "
                  f"{_binary(e.op, t.element(), a + '[i]', b + '[i]')};")
        return out

    def _e_Not(self, e: ir.Not) -> str:  # noqa: N802
        v = self.expr(e.value)
        if e.type.lanes == 1:
            return f"(!{v})"
        out = self._vector(e.type)
        self.emit(f"for (int i = 0; i < {e.type.lanes}; i++) {out}[i] = !{v}[i];")
        return out

    def _e_Select(self, e: ir.Select) -> str:  # noqa: N802
        c, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        if e.type.lanes == 1:
            return f"({c} ? {t} : {f})"
        out = self._vector(e.type)
        self.emit(f"for (int i = 0; i < {e.type.lanes}; i++) {out}[i] = "
                  f"{self._lane(e.condition, c)} ? {t}[i] : {f}[i];")
        return out

    def _e_Load(self, e: ir.Load) -> str:  # noqa: N802
        if e.name in self.amx_buffers:
            raise _fail(f"AMX buffer '{e.name}' is read outside a tile operation")
        elem = self.element_types.get(e.name)
        if elem is None:
            raise _fail(f"load from '{e.name}', which is neither a pipeline buffer nor allocated")
        buf = self.cname(e.name)
        index = self.expr(e.index)
        from_memory = _from_storage(elem)
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

    def _e_Ramp(self, e: ir.Ramp) -> str:  # noqa: N802
        base, stride = self.expr(e.base), self.expr(e.stride)
        inner = e.base.type.lanes
        out = self._vector(e.type)
        b = f"{base}[k]" if inner > 1 else base
        s = f"{stride}[k]" if inner > 1 else stride
        self.emit(f"for (int j = 0; j < {e.lanes}; j++) for (int k = 0; k < {inner}; k++) "
                  f"{out}[j * {inner} + k] = ({c_type(e.type.element())})({b} + j * {s});")
        return out

    def _e_Broadcast(self, e: ir.Broadcast) -> str:  # noqa: N802
        value = self.expr(e.value)
        inner = e.value.type.lanes
        out = self._vector(e.type)
        v = f"{value}[k]" if inner > 1 else value
        self.emit(f"for (int j = 0; j < {e.lanes}; j++) for (int k = 0; k < {inner}; k++) "
                  f"{out}[j * {inner} + k] = {v};")
        return out

    def _e_Let(self, e: ir.Let) -> str:  # noqa: N802
        value = self.expr(e.value)
        name = self.cname(e.name)
        if e.value.type.lanes > 1:
            self.emit(f"{c_type(e.value.type.element())} *{name} = {value};")
        else:
            self.emit(f"{c_type(e.value.type)} {name} = {value};")
        return self.expr(e.body)

    def _e_Shuffle(self, e: ir.Shuffle) -> str:  # noqa: N802
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

    def _e_VectorReduce(self, e: ir.VectorReduce) -> str:  # noqa: N802
        value = self.expr(e.value)
        factor = e.value.type.lanes // e.type.lanes
        out = self._vector(e.type)
        elem = e.type.element()
        combine = {
            ir.ReduceOp.ADD: lambda a, b: _binary(ir.BinOp.ADD, elem, a, b),
            ir.ReduceOp.MUL: lambda a, b: _binary(ir.BinOp.MUL, elem, a, b),
            ir.ReduceOp.MIN: lambda a, b: f"({a} < {b} ? {a} : {b})",
            ir.ReduceOp.MAX: lambda a, b: f"({a} > {b} ? {a} : {b})",
            ir.ReduceOp.AND: lambda a, b: f"({a} && {b})",
            ir.ReduceOp.OR: lambda a, b: f"({a} || {b})",
        }.get(e.op)
        if combine is None:
            raise _fail(f"the C generator does not implement vector_reduce_{e.op.value}")
        self.emit(f"for (int o = 0; o < {e.type.lanes}; o++) {{")
        self.emit(f"  {c_type(elem)} acc = {value}[o * {factor}];")
        self.emit(f"  for (int k = 1; k < {factor}; k++) acc = {combine('acc', f'{value}[o * {factor} + k]')};")
        self.emit(f"  {out}[o] = acc;")
        self.emit("}")
        return out if e.type.lanes > 1 else f"{out}[0]"

    def _e_Call(self, e: ir.Call) -> str:  # noqa: N802
        args = e.args
        name = e.name
        if name in ("likely", "likely_if_innermost", "promise_clamped", "unsafe_promise_clamped"):
            return self.expr(args[0])
        if name.startswith("_halide_buffer_"):
            return self._buffer_query(e)
        if name in _MATH_CALLS:
            value = self.expr(args[0])
            if e.type.lanes == 1:
                return f"{_MATH_CALLS[name]}({value})"
            out = self._vector(e.type)
            self.emit(f"for (int i = 0; i < {e.type.lanes}; i++) {out}[i] = {_MATH_CALLS[name]}({value}[i]);")
            return out
        if name == "return_second":
            self.emit(f"(void)({self.expr(args[0])});")
            return self.expr(args[1])
        if name == "if_then_else":
            return self._e_Select(ir.Select(args[0], args[1], args[2]))
        if name == "halide_print" and e.type.lanes > 1:
            out = self._vector(e.type)
            self.emit(f"memset({out}, 0, sizeof({out}));")
            return out
        if name.startswith("halide_semaphore_") or name in ("halide_print", "halide_msan_annotate_memory_is_initialized"):
            return "0"
        if name == "alloca":
            return f"alloca({self.expr(args[0])})"
        if name == "abs" and e.type.lanes == 1:
            value = self.expr(args[0])
            if args[0].type.is_float:
                return f"(({c_type(e.type)})fabs({value}))"
            return f"(({c_type(e.type)})({value} < 0 ? -(uint64_t)({value}) : (uint64_t)({value})))"
        raise _fail(f"the C generator does not know the call '{name}'")

    def _buffer_query(self, e: ir.Call) -> str:
        target = e.args[0]
        if not (isinstance(target, ir.Variable) and target.name.endswith(".buffer")):
            raise _fail(f"{e.name} of something that is not a pipeline buffer")
        buffer = target.name[:-7]
        arg = self.buffer_args.get(buffer)
        if arg is None:
            raise _fail(f"'{buffer}' is not a pipeline buffer")
        name = self.param(buffer)
        field_name = e.name[len("_halide_buffer_get_"):]
        if e.name == "_halide_buffer_get_host":
            return f"((void *){name})"
        if field_name in ("min", "extent", "stride"):
            return f"{name}_{field_name}{_int(e.args[1])}"
        constants = {
            "_halide_buffer_get_dimensions": str(arg.dimensions),
            "_halide_buffer_get_type": f"((uint32_t){_packed(arg.type)}u)",
            "_halide_buffer_get_device_dirty": "((uint8_t)0)",
            "_halide_buffer_get_host_dirty": "((uint8_t)0)",
            "_halide_buffer_is_bounds_query": "((uint8_t)0)",
        }
        if e.name in constants:
            return constants[e.name]
        raise _fail(f"the C generator does not know the call '{e.name}'")


_MATH_CALLS = {"sqrt_f32": "sqrtf", "sqrt_f64": "sqrt", "exp_f32": "expf", "exp_f64": "exp",
               "log_f32": "logf", "log_f64": "log", "floor_f32": "floorf", "floor_f64": "floor",
               "ceil_f32": "ceilf", "ceil_f64": "ceil", "round_f32": "nearbyintf", "trunc_f32": "truncf"}


def _int(e: ir.Expr) -> int:
    if isinstance(e, ir.Cast):
        e = e.value
    if not isinstance(e, ir.IntImm):
        raise _fail(f"expected an integer constant, got {print_ir(e)}")
    return e.value


def _packed(t: ir.Type) -> int:
    code = {ir.TypeCode.INT: 0, ir.TypeCode.UINT: 1, ir.TypeCode.FLOAT: 2, ir.TypeCode.HANDLE: 3,
            ir.TypeCode.BFLOAT: 4}[t.code]
    return code | (t.bits << 8) | (1 << 16)


def _is_ignorable(e: ir.Expr) -> bool:
    return isinstance(e, ir.Call) and e.name.startswith("_halide_buffer_set_")


def _bounds_query_value(e: ir.Expr) -> bool | None:
    """Whether a condition built from bounds-query tests is known: they are
    never bounds queries here."""
    if isinstance(e, ir.Call) and e.name == "_halide_buffer_is_bounds_query":
        return False
    if isinstance(e, ir.Call) and e.name == "likely":
        return _bounds_query_value(e.args[0])
    if isinstance(e, ir.Not):
        inner = _bounds_query_value(e.value)
        return None if inner is None else not inner
    if isinstance(e, ir.Binary) and e.op in (ir.BinOp.OR, ir.BinOp.AND):
        a, b = _bounds_query_value(e.a), _bounds_query_value(e.b)
        if a is None or b is None:
            return None
        return (a or b) if e.op is ir.BinOp.OR else (a and b)
    return None


def _round(t: ir.Type, text: str) -> str:
    if t.code is ir.TypeCode.BFLOAT:
        return f"hb_round_bf16({text})"
    if t.code is ir.TypeCode.FLOAT and t.bits == 16:
        return f"hb_round_f16({text})"
    return text


def _binary(op: ir.BinOp, t: ir.Type, a: str, b: str) -> str:
    ct = c_type(t)
    if op in (ir.BinOp.DIV, ir.BinOp.MOD) and not t.is_float:
        fn = ("hb_udiv" if op is ir.BinOp.DIV else "hb_umod") if t.is_uint else \
             ("hb_div" if op is ir.BinOp.DIV else "hb_mod")
        return f"(({ct}){fn}({a}, {b}))"
    if op is ir.BinOp.MOD:
        floor = "floor" if t.bits == 64 else "floorf"
        return _round(t, f"({a} - {b} * {floor}({a} / {b}))")
    if op is ir.BinOp.MIN:
        return f"({a} < {b} ? {a} : {b})"
    if op is ir.BinOp.MAX:
        return f"({a} > {b} ? {a} : {b})"
    if op.is_comparison or op.is_logical:
        return f"({a} {op.value} {b})"
    if t.is_float:
        return _round(t, f"({ct})({a} {op.value} {b})")
    if t.is_int or t.is_uint:
        # Wrap like Halide: compute unsigned, then narrow.
        unsigned = f"uint{max(t.bits, 32)}_t" if t.bits > 1 else "uint32_t"
        return f"(({ct})(({unsigned}){a} {op.value} ({unsigned}){b}))"
    return f"({a} {op.value} {b})"


def _cast(source: ir.Type, target: ir.Type, text: str) -> str:
    if target.is_handle:
        return f"((void *)({text}))"
    ct = c_type(target)
    if target.is_bool:
        return f"(({ct})(({text}) != 0))"
    if target.is_float:
        return _round(target, f"(({ct})({text}))")
    if source.is_float:
        return f"(({ct})(int64_t)({text}))"
    return f"(({ct})({text}))"


def _to_storage(t: ir.Type):  # type: ignore[no-untyped-def]
    if t.code is ir.TypeCode.BFLOAT:
        return lambda text: f"hb_f32_to_bf16({text})"
    if t.code is ir.TypeCode.FLOAT and t.bits == 16:
        return lambda text: f"hb_f32_to_f16({text})"
    return lambda text: text


def _from_storage(t: ir.Type):  # type: ignore[no-untyped-def]
    if t.code is ir.TypeCode.BFLOAT:
        return lambda text: f"hb_bf16_to_f32({text})"
    if t.code is ir.TypeCode.FLOAT and t.bits == 16:
        return lambda text: f"hb_f16_to_f32({text})"
    return lambda text: text


def _dot_product(a: ir.Type, b: ir.Type) -> str:
    if a.code is ir.TypeCode.BFLOAT:
        return "_tile_dpbf16ps"
    sign = {ir.TypeCode.INT: "s", ir.TypeCode.UINT: "u"}
    return f"_tile_dpb{sign[a.code]}{sign[b.code]}d"


def generate_c(stmt: ir.Stmt, function: str = "hb_kernel") -> str:
    return CGenerator(stmt, function).generate()
