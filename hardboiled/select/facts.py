"""Hardware facts for the rules: the tables of ``hardboiled.targets``
written as egglog facts (the relations are declared in rules/supporting.egg)."""

from __future__ import annotations

from hardboiled import ir
from hardboiled.targets.amx import AMX_TILE, AMXTile
from hardboiled.targets.wmma import WMMA_TENSOR_CORE, WMMATensorCore

_TYPE_CODES = {
    ir.TypeCode.INT: "IntT",
    ir.TypeCode.UINT: "UIntT",
    ir.TypeCode.FLOAT: "FloatT",
    ir.TypeCode.BFLOAT: "BFloatT",
    ir.TypeCode.HANDLE: "HandleT",
}


def egglog_type_code(code: ir.TypeCode) -> str:
    return _TYPE_CODES[code]


def egglog_binop(op: ir.BinOp) -> str:
    """The BinOp constructor of rules/definition.egg for ``op``."""
    return {ir.BinOp.ADD: "Add", ir.BinOp.SUB: "Sub", ir.BinOp.MUL: "Mul", ir.BinOp.DIV: "Div",
            ir.BinOp.MOD: "Mod", ir.BinOp.MIN: "Min", ir.BinOp.MAX: "Max", ir.BinOp.EQ: "EQ",
            ir.BinOp.NE: "NE", ir.BinOp.LT: "LT", ir.BinOp.LE: "LE", ir.BinOp.GT: "GT",
            ir.BinOp.GE: "GE", ir.BinOp.AND: "And", ir.BinOp.OR: "Or"}[op]


def amx_facts(tile: AMXTile = AMX_TILE) -> str:
    """The facts the AMX rules query (declared in rules/supporting.egg)."""
    lines = [";; generated from hardboiled/targets/amx.py"]
    for element in tile.elements:
        t, acc = element.type, element.accumulator
        lines.append(
            f"(amx-element ({egglog_type_code(t.code)}) {t.bits} {t.bytes} {element.k_pack} "
            f"({egglog_type_code(acc.code)}))"
        )
    lines.append(f"(amx-limits {tile.max_rows} {tile.max_colbytes})")
    return "\n".join(lines) + "\n"


def wmma_facts(core: WMMATensorCore = WMMA_TENSOR_CORE) -> str:
    """The facts the WMMA rules query (declared in rules/supporting.egg)."""
    lines = [";; generated from hardboiled/targets/wmma.py"]
    for shape in core.shapes:
        lines.append(f"(wmma-shape {shape.m} {shape.n} {shape.k})")
    for element in core.elements:
        t = element.type
        for acc in element.accumulators:
            lines.append(
                f"(wmma-element ({egglog_type_code(t.code)}) {t.bits} ({egglog_type_code(acc.code)}) {acc.bits})"
            )
    window = core.window_shape
    lines.append(f"(wmma-window-shape {window.m} {window.n} {window.k})")
    for op in core.elementwise:
        lines.append(f"(wmma-elementwise ({egglog_binop(op)}))")
    return "\n".join(lines) + "\n"
