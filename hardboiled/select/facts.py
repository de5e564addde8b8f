"""Hardware facts for the rules: the tables of ``hardboiled.targets``
written as egglog facts (the relations are declared in rules/supporting.egg;
the TypeCode and BinOp constructor names come from the term schema,
hardboiled/select/terms.py)."""

from __future__ import annotations

from hardboiled.select.terms import binop_name, type_code_name
from hardboiled.targets.amx import AMX_TILE, AMXTile
from hardboiled.targets.wmma import WMMA_TENSOR_CORE, WMMATensorCore


def amx_facts(tile: AMXTile = AMX_TILE) -> str:
    """The facts the AMX rules query (declared in rules/supporting.egg)."""
    lines = [";; generated from hardboiled/targets/amx.py"]
    for element in tile.elements:
        t, acc = element.type, element.accumulator
        lines.append(
            f"(amx-element ({type_code_name(t.code)}) {t.bits} {t.bytes} {element.k_pack} "
            f"({type_code_name(acc.code)}))"
        )
    lines.append(f"(amx-limits {tile.max_rows} {tile.max_colbytes})")
    return "\n".join(lines) + "\n"


def wmma_facts(core: WMMATensorCore = WMMA_TENSOR_CORE) -> str:
    """The facts the WMMA rules query (declared in rules/supporting.egg)."""
    lines = [";; generated from hardboiled/targets/wmma.py"]
    for element in core.elements:
        t = element.type
        for shape in core.shapes_of(element):
            lines.append(f"(wmma-shape ({type_code_name(t.code)}) {t.bits} {shape.m} {shape.n} {shape.k})")
        for acc in element.accumulators:
            lines.append(
                f"(wmma-element ({type_code_name(t.code)}) {t.bits} ({type_code_name(acc.code)}) {acc.bits})"
            )
    window = core.window_shape
    lines.append(f"(wmma-window-shape {window.m} {window.n} {window.k})")
    phased = core.phased_window_shape
    lines.append(f"(wmma-phased-window-shape {phased.m} {phased.n} {phased.k})")
    for op in core.elementwise:
        lines.append(f"(wmma-elementwise ({binop_name(op)}))")
    return "\n".join(lines) + "\n"
