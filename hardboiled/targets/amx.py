"""Intel AMX as data: tile shapes, element packing and register limits.

Every number about AMX lives here; the rules receive them as egglog facts
(``select.facts``), and legalization, the interpreter and the C generator
check against the same table.
"""

from __future__ import annotations

from dataclasses import dataclass

from hardboiled import ir


@dataclass(frozen=True, slots=True)
class AMXElement:
    """An AMX operand element type and how AMX computes with it."""

    type: ir.Type
    k_pack: int
    """Consecutive K values packed in one 4-byte VNNI group (4 / bytes)."""
    accumulator: ir.Type

    def __post_init__(self) -> None:
        assert self.k_pack * self.type.bytes == 4, "a VNNI group is 4 bytes"


@dataclass(frozen=True, slots=True)
class AMXTile:
    """Intel AMX, palette 1 (Sapphire Rapids)."""

    max_rows: int = 16
    max_colbytes: int = 64
    registers: int = 8
    tile_bytes: int = 1024
    elements: tuple[AMXElement, ...] = (
        AMXElement(ir.BFloat(16), 2, ir.Float(32)),  # tdpbf16ps
        AMXElement(ir.Int(8), 4, ir.Int(32)),        # tdpbssd, tdpbsud
        AMXElement(ir.UInt(8), 4, ir.Int(32)),       # tdpbusd, tdpbuud
    )

    def __post_init__(self) -> None:
        assert self.max_rows * self.max_colbytes == self.tile_bytes


AMX_TILE = AMXTile()
