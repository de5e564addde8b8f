"""What generated AMX code does when it runs, counted on any CPU.

The speed of AMX code hangs on a few figures that need no AMX to measure
(docs/performance.md):

* tile instructions per call, counted by running the generated C under
  hardboiled's emulation with a counter in front of each intrinsic
  (``count_tile_operations``): a tile loaded twice shows as more loads per
  ``tile_matmul``;
* operand copying (VNNI repacks) per call, and how much of it runs inside
  the loops that multiply tiles, read from the rewritten IR
  (``operand_copy_work``): a repack left in the reduction loop shows there.

Both are asserted in tests and printed by bench/amx_speed.py. Running the
kernel needs inputs, which are verification's business: the caller hands
``count_tile_operations`` a function that runs it.
"""

from __future__ import annotations

import ctypes
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hardboiled import ir
from hardboiled.codegen.c import split_amx_runtime
from hardboiled.codegen.toolchain import compile_c, find_compiler
from hardboiled.legalize.operand_hoisting import HOISTED_KIND
from hardboiled.support.diagnostics import Diagnostic, HardboiledError
from hardboiled.targets.amx import AMX_INTRINSIC, AMX_TILE, AMXOp

_DOT_PRODUCTS = tuple(d.c_name for d in AMX_TILE.dot_products)
_COUNTERS = {"_tile_loadd": "tile_loads", "_tile_stored": "tile_stores",
             **{name: "dot_products" for name in _DOT_PRODUCTS}}


def _counting_prelude() -> str:
    """C placed before the generated source: hb_amx.h (emulated), the
    exported counters, and one function per counted intrinsic that counts."""
    lines = ['#include "hb_amx.h"']
    lines += [f"long hb_counted_{counter};" for counter in sorted(set(_COUNTERS.values()))]
    for intrinsic, counter in _COUNTERS.items():
        lines.append(f"static void hb_counting{intrinsic}(void) {{ hb_counted_{counter}++; }}")
    lines.append("")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class TileCounts:
    tile_loads: int
    dot_products: int
    tile_stores: int

    @property
    def loads_per_matmul(self) -> float:
        return self.tile_loads / self.dot_products if self.dot_products else 0.0


def count_tile_operations(source: str, calls: Callable[[Path], Iterator[int]]) -> TileCounts:
    """Build ``source`` (generated C) under the emulation with a counter in
    front of each tile intrinsic, and count the tile loads, dot products
    and tile stores one call of the kernel executes. ``calls(library)``
    calls the built kernel on inputs of its choosing (the verifier's, in
    the tests and bench/amx_speed.py), yielding its status after each call;
    the counts are those of the first call that returns 0."""
    counted = _with_counters(source)
    with tempfile.TemporaryDirectory(prefix="hardboiled-count-") as tmp:
        library = Path(tmp) / "kernel.so"
        compile_c(counted, library, shared=True, amx="emulate", compiler=find_compiler(None))
        lib = ctypes.CDLL(str(library))
        counters = {name: ctypes.c_long.in_dll(lib, f"hb_counted_{name}")
                    for name in ("tile_loads", "dot_products", "tile_stores")}
        statuses = calls(library)
        while True:
            for counter in counters.values():
                counter.value = 0
            status = next(statuses, None)
            if status is None:
                break
            if status == 0:
                return TileCounts(**{name: c.value for name, c in counters.items()})
    raise HardboiledError(Diagnostic("error", "the kernel failed its own checks on every size tried"))


def _with_counters(source: str) -> str:
    """``source`` with every counted intrinsic call counted: the call
    ``_tile_loadd(...)`` becomes ``hb_counting_tile_loadd(), _tile_loadd(...)``."""
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in _COUNTERS) + r")\(")
    runtime, generated = split_amx_runtime(source)
    counted = pattern.sub(lambda m: f"hb_counting{m.group(1)}(), {m.group(1)}(", generated)
    return _counting_prelude() + runtime + counted


@dataclass(frozen=True, slots=True)
class CopyWork:
    """Elements written into operand copies per call."""

    total: int
    in_matmul_loops: int
    """Of those, written inside a loop whose body also runs a tile_matmul."""


def operand_copy_work(rewritten: ir.Stmt) -> CopyWork:
    """Elements the fills of the VNNI operand copies write per call,
    counting every enclosing loop's trip count (loops of symbolic extent
    count once)."""
    total = inside = 0
    stack: list[tuple[ir.Node, int, bool]] = [(rewritten, 1, False)]
    while stack:
        node, trips, in_matmul_loop = stack.pop()
        if isinstance(node, ir.Store) and HOISTED_KIND in node.name:
            written = node.value.type.lanes * trips
            total += written
            inside += written if in_matmul_loop else 0
            continue
        if isinstance(node, ir.For):
            extent = node.extent.value if isinstance(node.extent, ir.IntImm) else 1
            runs_matmul = any(c.name == AMX_INTRINSIC[AMXOp.MATMUL].name for c in ir.calls(node.body))
            stack.append((node.body, trips * extent, in_matmul_loop or runs_matmul))
            continue
        stack.extend((c, trips, in_matmul_loop) for c in ir.children(node) if isinstance(c, ir.Stmt))
    return CopyWork(total, inside)
