"""C code generation for (tensorized) Halide IR.

The generated source is self-contained: a function

    int NAME_raw(T0 *X, int32_t X_min0, int32_t X_extent0, int32_t X_stride0, ...);

with a pointer plus min, extent and stride per dimension for every pipeline
buffer (in the order ``kernel_signature`` returns), returning 0 or the
negative number of the first of the pipeline's checks that failed; and
Halide's AOT entry point ``int NAME(struct halide_buffer_t *X, ...)`` over it
(see hardboiled/codegen/abi.py).

* Scalars are C scalars; a vector is a local array filled lane by lane
  (plain loops: clear, deterministic, and GCC/Clang vectorize them).
* float16 and bfloat16 values live in ``float`` variables rounded to their
  precision after every operation, and in memory as 16-bit patterns.
* Integer division and modulo follow Halide (Euclidean), casts wrap.
* AMX: every whole tile of an AMX buffer is a tile register; the others
  hold loaded operand tiles, pooled by shape, and a tile still held from the
  previous tile statement is not loaded again; one palette-1 configuration
  at entry sets each register's rows and bytes per row; tile_* calls become the C intrinsics that
  hardboiled/targets/amx.py names (``_tile_zero``, ``_tile_loadd``, the dot
  product of the operand types, ``_tile_dpbf16ps`` / ``_tile_dpb[su][su]d``,
  and ``_tile_stored``).
  hb_amx.h maps them to the instructions (as <immintrin.h> does) or to the
  portable emulation.

Each block carries the IR statement it came from as a comment.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from hardboiled import ir
from hardboiled.codegen.abi import DEFAULT_ENTRY_POINT, RAW_STATUS, KernelArgument
from hardboiled.codegen.c_family import CFamilyEmitter
from hardboiled.codegen.c_text import (
    C_HEADERS,
    GeneratedCode,
    codegen_error,
    helper_functions,
    include_lines,
    int_constant,
    storage_type,
)
from hardboiled.codegen.copies import PermutedCopy, match_permuted_copy
from hardboiled.legalize.amx_plan import buffer_registers, operand_shapes
from hardboiled.support.package_files import read_package_text
from hardboiled.targets.amx import AMX_INTRINSIC, AMX_TILE, AMXOp, amx_intrinsic

Shape = tuple[int, int]
"""A tile register's configuration: rows, and bytes per row."""


@dataclass
class _TileRegisters:
    """Which AMX tile register holds what, and each register's shape.

    Every whole tile of an AMX buffer (an accumulator, or an operand the
    schedule keeps in AMXTile) owns a register. The others form one pool
    per operand shape for the tiles that matmuls load; a load whose tile a
    register of the pool still holds, from earlier in the same run of tile
    statements, is not repeated (``held``)."""

    by_tile: dict[tuple[str, int], int] = field(default_factory=dict)
    shapes: dict[int, Shape] = field(default_factory=dict)
    operand_pools: dict[Shape, list[int]] = field(default_factory=dict)
    held: dict[int, ir.Call] = field(default_factory=dict)
    """Pool register -> the tile_load whose tile it holds right now."""
    recent: list[int] = field(default_factory=list)
    """Pool registers, least recently used first."""

    def register(self, buffer: str, tile: int) -> int:
        key = (buffer, tile)
        if key not in self.by_tile:
            self.by_tile[key] = max(self.by_tile.values(), default=-1) + 1
        return self.by_tile[key]

    def shape(self, register: int, rows: int, colbytes: int) -> None:
        previous = self.shapes.setdefault(register, (rows, colbytes))
        if previous != (rows, colbytes):
            raise codegen_error(f"tile register {register} is used with two shapes: {previous} and {(rows, colbytes)}")

    def forget(self) -> None:
        """Code that is not a tile statement runs next: it may write what
        a held tile was loaded from, or run more than once."""
        self.held.clear()

    def operand(self, load: ir.Call, shape: Shape, keep: int | None) -> tuple[int, bool]:
        """The pool register for ``load`` and whether it must be loaded:
        the register already holding it, else the least recently used one
        other than ``keep`` (the matmul's other operand)."""
        pool = self.operand_pools[shape]
        register = next((r for r in pool if self.held.get(r) == load), None)
        fresh = register is None
        if register is None:
            register = next(r for r in self.recent if r in pool and r != keep)
            self.held[register] = load
        self.recent.remove(register)
        self.recent.append(register)
        return register, fresh


class CGenerator(CFamilyEmitter):
    """C with AMX intrinsics: the shared emitter plus AMX tile registers."""

    def __init__(self, stmt: ir.Stmt, function: str = DEFAULT_ENTRY_POINT,
                 arguments: list[KernelArgument] | None = None):
        super().__init__(stmt, function, arguments)
        self.amx_buffers = {n.name: n for n in ir.walk(stmt)
                            if isinstance(n, ir.Allocate) and n.memory_type == "AMXTile"}
        self.tiles = _TileRegisters()

    def preamble(self) -> str:
        # The body is written by now: the AMX runtime goes in only when the
        # body uses it, and then whole, so that the file compiles alone.
        body = "\n".join(self.lines)
        runtime = amx_runtime_source() if re.search(r"\b(_tile_\w+|hb_amx_\w+|hb_vnni_\w+)\(", body) else ""
        return include_lines(C_HEADERS) + runtime + "\n" + helper_functions()

    def _uses_tiles(self) -> bool:
        return bool(self.tiles.shapes)

    def stmt_(self, s: ir.Stmt) -> None:
        # Held operand tiles survive only from one tile statement to the next.
        tile_statement = isinstance(s, ir.Store) and s.name in self.amx_buffers
        if not tile_statement:
            self.tiles.forget()
        super().stmt_(s)
        if not tile_statement:
            self.tiles.forget()

    def prepare(self) -> None:
        self._plan_tiles()

    def open_body(self) -> None:
        if self._uses_tiles():
            self._tile_setup()

    def close_body(self) -> None:
        if self._uses_tiles():
            self.emit("_tile_release();")

    def release_on_return(self) -> str:
        return "_tile_release(); " if self._uses_tiles() else ""

    # ------------------------------------------------------------ AMX plan
    def _plan_tiles(self) -> None:
        """One tile register per whole tile of every AMX buffer while it is
        allocated (amx_plan.buffer_registers); the rest hold the operands
        matmuls load, pooled by shape."""
        self.tiles.by_tile.update(buffer_registers(self.stmt, set(self.amx_buffers)))
        for node in ir.walk(self.stmt):
            if isinstance(node, ir.Store) and node.name in self.amx_buffers:
                reg = self.tiles.register(node.name, self._tile_index(node.name, node.index))
                value = node.value
                intrinsic = amx_intrinsic(value)
                if isinstance(value, ir.Call) and intrinsic is not None and intrinsic.writes_tile:
                    self.tiles.shape(reg, int_constant(intrinsic.argument(value, "rows")),
                                     int_constant(intrinsic.argument(value, "colbytes")))
        for (name, tile), reg in self.tiles.by_tile.items():
            if reg not in self.tiles.shapes:
                raise codegen_error(f"cannot tell the shape of the tile at element {tile} of AMX buffer '{name}'")
        self._plan_operand_pools()

    def _plan_operand_pools(self) -> None:
        """Each operand shape gets a register (two where one matmul loads
        both operands in it); the free registers left go round the shapes,
        so that more loaded tiles stay held."""
        needed = operand_shapes(self.stmt)  # as legalization counted them
        first_free = len(set(self.tiles.by_tile.values()))
        count = first_free + sum(needed.values())
        if count > AMX_TILE.registers:
            raise codegen_error(f"the kernel needs {count} AMX tile registers; AMX has {AMX_TILE.registers}")
        pools: dict[Shape, list[int]] = {shape: [] for shape in needed}
        shapes = [shape for shape, n in needed.items() for _ in range(n)]
        spare = list(needed) * AMX_TILE.registers
        for reg, shape in zip(range(first_free, AMX_TILE.registers), shapes + spare):
            pools[shape].append(reg)
            self.tiles.shape(reg, *shape)
        self.tiles.operand_pools = pools
        self.tiles.recent = [reg for pool in pools.values() for reg in pool]

    def _tile_index(self, name: str, index: ir.Expr) -> int:
        """The first element of the whole tile ``index`` reads or writes (a
        tile of L elements starts at a multiple of L, as legalization
        checks: tiles of fewer rows than 16 pack closer than a register's
        1 KiB), which names the tile."""
        if not (isinstance(index, ir.Ramp) and isinstance(index.base, ir.IntImm)
                and index.base.value % index.lanes == 0):
            raise codegen_error(f"AMX buffer '{name}' is accessed at an index that is not a whole tile")
        return index.base.value

    def _tile_setup(self) -> None:
        self.emit("/* AMX palette 1: rows and bytes per row of each tile register. */")
        self.emit("unsigned char hb_tile_config[64] = {0};")
        self.emit("hb_tile_config[0] = 1;")
        for reg, (rows, colbytes) in sorted(self.tiles.shapes.items()):
            self.emit(f"hb_tile_config[{16 + 2 * reg}] = {colbytes & 0xFF}; "
                      f"hb_tile_config[{17 + 2 * reg}] = {colbytes >> 8}; hb_tile_config[{48 + reg}] = {rows};")
        self.emit(f"if (hb_amx_enable() != 0) return {RAW_STATUS['amx_unavailable']}; /* no AMX tiles granted */")
        self.emit("_tile_loadconfig(hb_tile_config);")

    # ------------------------------------------------------------ AMX statements
    def visit_allocate(self, s: ir.Allocate) -> None:
        if s.name in self.amx_buffers:
            self.comment(s)
            self.emit(f"/* {s.name} lives in AMX tile registers */")
            self.stmt_(s.body)
            return
        super().visit_allocate(s)

    def visit_evaluate(self, s: ir.Evaluate) -> None:
        value = s.value
        if isinstance(value, ir.Call) and _amx_op(value) is AMXOp.STORE:
            self.comment(s)
            rows, colbytes, buf, offset, stride, tile = value.args
            assert isinstance(tile, ir.Load)
            reg = self.tiles.by_tile[(tile.name, self._tile_index(tile.name, tile.index))]
            self.emit(f"{AMX_INTRINSIC[AMXOp.STORE].c_name}({reg}, (char *){self.expr(buf)} + ({self.expr(offset)}), "
                      f"{self.expr(stride)});")
            return
        super().visit_evaluate(s)

    def visit_store(self, s: ir.Store) -> None:
        if s.name in self.amx_buffers:
            self.comment(s)
            self._tile_store_into_register(s)
            return
        copy = match_permuted_copy(s, self.element_types)
        if copy is not None:
            self.comment(s)
            self._permuted_copy(copy)
            return
        super().visit_store(s)

    def _permuted_copy(self, copy: PermutedCopy) -> None:
        """Storage words copied by loops over the source block's rows and
        columns (codegen/copies.py): an operand repacked into VNNI order
        this way is a few vector permutes per row pair."""
        storage = storage_type(self.element_types[copy.destination])
        to, source, row_stride, column_stride = (self.temp() for _ in range(4))
        self.emit("{")
        self.indent += 1
        self.emit(f"{storage} *{to} = {self.cname(copy.destination)} + ({self.expr(copy.to)});")
        self.emit(f"const {storage} *{source} = {self.cname(copy.source)} + ({self.expr(copy.from_)});")
        self.emit(f"const int32_t {row_stride} = {self.expr(copy.row_stride)}, "
                  f"{column_stride} = {self.expr(copy.column_stride)};")
        group = copy.vnni_group
        packer = _VNNI_PACKERS.get((group, storage))
        if packer is not None and copy.column_stride == ir.IntImm(1):
            self.emit(f"{packer}({to}, {source}, {copy.rows}, {copy.columns}, {row_stride});")
        elif group is not None:
            self.emit(f"for (int r = 0; r < {copy.rows // group}; r++) for (int c = 0; c < {copy.columns}; c++) "
                      f"for (int p = 0; p < {group}; p++)")
            self.emit(f"  {to}[(r * {copy.columns} + c) * {group} + p] = "
                      f"{source}[(r * {group} + p) * {row_stride} + c * {column_stride}];")
        else:
            table = self.temp()
            lanes = ", ".join(str(i) for i in copy.permutation)
            self.emit(f"static const int32_t {table}[{len(copy.permutation)}] = {{{lanes}}};")
            self.emit(f"for (int i = 0; i < {len(copy.permutation)}; i++) {to}[i] = "
                      f"{source}[({table}[i] / {copy.columns}) * {row_stride} + ({table}[i] % {copy.columns}) * "
                      f"{column_stride}];")
        self.indent -= 1
        self.emit("}")

    def visit_load(self, e: ir.Load) -> str:
        if e.name in self.amx_buffers:
            raise codegen_error(f"AMX buffer '{e.name}' is read outside a tile operation")
        return super().visit_load(e)

    def _tile_store_into_register(self, s: ir.Store) -> None:
        reg = self.tiles.by_tile[(s.name, self._tile_index(s.name, s.index))]
        value = s.value
        if not isinstance(value, ir.Call):
            raise codegen_error(f"AMX buffer '{s.name}' is written with something that is not a tile operation")
        op = _amx_op(value)
        if op is AMXOp.ZERO:
            self.emit(f"{AMX_INTRINSIC[AMXOp.ZERO].c_name}({reg});")
        elif op is AMXOp.LOAD:
            self.emit(self._tile_loadd(reg, value))
        elif op is AMXOp.MATMUL:
            self._accumulator_start(s, reg, _MATMUL.argument(value, "acc"))
            a, b = _MATMUL.argument(value, "a"), _MATMUL.argument(value, "b")
            a_reg = self._operand(a, keep=None)
            b_reg = self._operand(b, keep=a_reg)
            self.emit(f"{_dot_product(a.type, b.type)}({reg}, {a_reg}, {b_reg});")
        else:
            raise codegen_error(f"AMX buffer '{s.name}' is written by '{value.name}'")

    def _accumulator_start(self, s: ir.Store, reg: int, acc: ir.Expr) -> None:
        """Put the matmul's C in its destination register: nothing when C
        is that tile already; a zero or a load for a fresh product (an
        update that does more with its product than accumulate it,
        select/isolate.py)."""
        if isinstance(acc, ir.Load) and acc.name == s.name \
                and self._tile_index(acc.name, acc.index) == self._tile_index(s.name, s.index):
            return
        op = _amx_op(acc) if isinstance(acc, ir.Call) else None
        if op is AMXOp.ZERO:
            self.emit(f"{AMX_INTRINSIC[AMXOp.ZERO].c_name}({reg});")
        elif op is AMXOp.LOAD:
            assert isinstance(acc, ir.Call)
            self.emit(self._tile_loadd(reg, acc))
        else:
            raise codegen_error(f"a matmul into AMX buffer '{s.name}' accumulates onto another tile, which AMX "
                                "cannot copy between registers")

    def _operand(self, operand: ir.Expr, keep: int | None) -> int:
        if isinstance(operand, ir.Load) and operand.name in self.amx_buffers:
            return self.tiles.by_tile[(operand.name, self._tile_index(operand.name, operand.index))]
        assert isinstance(operand, ir.Call) and _amx_op(operand) is AMXOp.LOAD
        reg, fresh = self.tiles.operand(operand, _load_shape(operand), keep)
        if fresh:
            self.emit(self._tile_loadd(reg, operand))
        else:
            self.emit(f"/* tile register {reg} still holds this operand */")
        return reg

    def _tile_loadd(self, reg: int, call: ir.Call) -> str:
        # The barrier keeps the C stores that filled the buffer before the
        # load (the _tile_loadd of <immintrin.h>, which hb_amx.h uses where
        # the code includes that header first, has no memory clobber).
        _, _, buf, offset, stride = call.args
        return (f"hb_amx_barrier(); {AMX_INTRINSIC[AMXOp.LOAD].c_name}({reg}, "
                f"(const char *){self.expr(buf)} + ({self.expr(offset)}), {self.expr(stride)});")


_MATMUL = AMX_INTRINSIC[AMXOp.MATMUL]

_VNNI_PACKERS: dict[tuple[int | None, str], str] = {
    (2, "uint16_t"): "hb_vnni_pack16", (4, "int8_t"): "hb_vnni_pack8", (4, "uint8_t"): "hb_vnni_pack8",
}
"""hb_amx.h's vectorized repack for (rows interleaved, storage type), used
when the columns are adjacent."""


def _load_shape(load: ir.Call) -> Shape:
    return int_constant(load.args[0]), int_constant(load.args[1])


def _amx_op(e: ir.Expr | ir.Stmt) -> AMXOp | None:
    intrinsic = amx_intrinsic(e)
    return intrinsic.op if intrinsic is not None else None


def _dot_product(a: ir.Type, b: ir.Type) -> str:
    """The C intrinsic of the table's dot product for these operand types."""
    instruction = AMX_TILE.dot_product(a, b)
    if instruction is None:
        raise codegen_error(f"no AMX instruction multiplies {a.element()} by {b.element()}")
    return instruction.c_name


AMX_RUNTIME_BEGIN = "/* ---- hardboiled's AMX runtime (hb_amx.h and hb_amx_emulation.h), inlined ---- */"
"""The first line of the runtime inlined into generated C."""
AMX_RUNTIME_END = "/* ---- end of the AMX runtime ---- */"
"""The line after the runtime inlined into generated C: the generated code
follows it (the runtime's macros name the tile operations too)."""


def split_amx_runtime(source: str) -> tuple[str, str]:
    """Generated C as (the inlined AMX runtime with its end marker, the
    generated code after it); the first is empty when there is no runtime.
    The runtime's macros name the tile operations too: whatever looks for
    or rewrites the generated calls reads only the second part."""
    runtime, marker, generated = source.rpartition(AMX_RUNTIME_END)
    return runtime + marker, generated


@functools.cache
def amx_runtime_source() -> str:
    """hb_amx.h with the emulation it includes, as one block of C: what the
    generated C needs besides the C library (compile it with
    -mamx-tile -mamx-bf16 -mamx-int8, or -DHB_AMX_EMULATE)."""
    emulation = read_package_text("codegen", "runtime", "hb_amx_emulation.h")
    header = read_package_text("codegen", "runtime", "hb_amx.h")
    assert '#include "hb_amx_emulation.h"' in header
    return (AMX_RUNTIME_BEGIN + "\n"
            + header.replace('#include "hb_amx_emulation.h"', emulation)
            + AMX_RUNTIME_END + "\n")


def generate_c(stmt: ir.Stmt, function: str = DEFAULT_ENTRY_POINT,
               arguments: list[KernelArgument] | None = None) -> str:
    return CGenerator(stmt, function, arguments).generate()


def generate_c_code(stmt: ir.Stmt, function: str = DEFAULT_ENTRY_POINT,
                    arguments: list[KernelArgument] | None = None) -> GeneratedCode:
    """The source and the header that declares its functions, from one
    walk of ``stmt``."""
    generator = CGenerator(stmt, function, arguments)
    return GeneratedCode(generator.generate(), generator.header())
