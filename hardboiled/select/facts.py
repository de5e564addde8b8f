"""Hardware facts for the rules: the tables of ``hardboiled.targets``
written as egglog facts (the relations are declared in rules/supporting.egg;
the TypeCode and BinOp constructor names come from the term schema,
hardboiled/select/terms.py)."""

from __future__ import annotations

from collections.abc import Iterable

from hardboiled import ir
from hardboiled.select.terms import binop_name, type_code_name
from hardboiled.targets.amx import AMX_TILE, AMXTile
from hardboiled.targets.wmma import WMMA_TENSOR_CORE, WMMAShape, WMMATensorCore


def amx_facts(tile: AMXTile = AMX_TILE) -> str:
    """The facts the AMX rules query (declared in rules/supporting.egg): one
    ``amx-element`` row per operand element type, with the accumulator it
    multiplies into (its type code, bits and bytes: the rules take every
    accumulator size from here), and the tile's limits."""
    lines = [";; generated from hardboiled/targets/amx.py"]
    for element in tile.elements:
        t, acc = element.type, element.accumulator
        lines.append(
            f"(amx-element ({type_code_name(t.code)}) {t.bits} {t.bytes} {element.k_pack} "
            f"({type_code_name(acc.code)}) {acc.bits} {acc.bytes})"
        )
    lines.append(f"(amx-limits {tile.max_rows} {tile.max_colbytes})")
    return "\n".join(lines) + "\n"


def sliding_windows(stores: Iterable[ir.Stmt]) -> list[tuple[int, int, int]]:
    """(stride, taps, outputs) of every sliding window the stores read, as
    Halide vectorizes one (rules/wmma_layouts.egg): a load of
    ``ramp(ramp(base, 1, R), broadcast(S, R), X)``, X outputs S inputs
    apart, each reading R consecutive inputs, with overlapping windows
    (S < R). Windows over several image rows fix their own shape and are
    not counted."""
    found = []
    for store in stores:
        for node in ir.walk(store):
            if not (isinstance(node, ir.Load) and isinstance(node.index, ir.Ramp)):
                continue
            window, inner = node.index, node.index.base
            if (isinstance(inner, ir.Ramp) and inner.stride == ir.IntImm(1, inner.stride.type)
                    and isinstance(window.stride, ir.Broadcast) and isinstance(window.stride.value, ir.IntImm)
                    and 0 < window.stride.value.value < inner.lanes):
                found.append((window.stride.value.value, inner.lanes, window.lanes))
    return found


def wmma_facts(core: WMMATensorCore = WMMA_TENSOR_CORE, window_shape: WMMAShape | None = None) -> str:
    """The facts the WMMA rules query (declared in rules/supporting.egg).
    ``window_shape``: the shape the cost model chose for the program's
    sliding windows (``WMMATensorCore.best_window_shape``)."""
    lines = [";; generated from hardboiled/targets/wmma.py"]
    for element in core.elements:
        t = element.type
        for shape in core.shapes_of(element):
            lines.append(f"(wmma-shape ({type_code_name(t.code)}) {t.bits} {shape.m} {shape.n} {shape.k})")
        for acc in element.accumulators:
            lines.append(
                f"(wmma-element ({type_code_name(t.code)}) {t.bits} ({type_code_name(acc.code)}) {acc.bits})"
            )
    window = window_shape or core.window_shape
    lines.append(f"(wmma-window-shape {window.m} {window.n} {window.k})")
    phased = core.phased_window_shape
    lines.append(f"(wmma-phased-window-shape {phased.m} {phased.n} {phased.k})")
    for op in core.elementwise:
        lines.append(f"(wmma-elementwise ({binop_name(op)}))")
    return "\n".join(lines) + "\n"
