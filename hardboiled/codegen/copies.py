"""Stores that only move data: recognized so that they compile to copy loops.

The shared emitter builds every vector as an array, lane by lane: a VNNI
repack of a 32x16 bf16 panel would fill an index array, gather into floats,
permute through a table and round back to bf16 on the way out. A store whose
value is a permutation of one load of the same element type moves bits and
nothing else; ``match_permuted_copy`` describes it as a 2-D source block (rows
of columns at two strides) and a permutation, and the emitter writes it as
loops over rows and columns that copy storage words, with no conversion and
no temporary arrays. Compilers vectorize those loops (the VNNI interleave
becomes unpack/permute instructions).
"""

from __future__ import annotations

from dataclasses import dataclass

from hardboiled import ir


@dataclass(frozen=True, slots=True)
class PermutedCopy:
    """``destination[to + i] = source[from + column(p) * column_stride + row(p) * row_stride]``
    with ``p = permutation[i]``, ``column(p) = p % columns``, ``row(p) = p // columns``."""

    destination: str
    to: ir.Expr
    source: str
    from_: ir.Expr
    columns: int
    rows: int
    column_stride: ir.Expr
    row_stride: ir.Expr
    permutation: tuple[int, ...]

    @property
    def vnni_group(self) -> int | None:
        """k when the permutation interleaves each k consecutive rows column
        by column (the VNNI layout, k = 4 / element bytes); 1 for a plain
        copy; None for any other permutation."""
        for group in (1, 2, 4):
            if self.rows % group == 0 and self.permutation == vnni_permutation(self.rows, self.columns, group):
                return group
        return None


def vnni_permutation(rows: int, columns: int, group: int) -> tuple[int, ...]:
    """The lanes (row * columns + column) of a rows x columns block, in the
    order that interleaves each ``group`` consecutive rows column by column."""
    return tuple((r * group + p) * columns + c
                 for r in range(rows // group) for c in range(columns) for p in range(group))


def match_permuted_copy(store: ir.Store, element_types: dict[str, ir.Type]) -> PermutedCopy | None:
    """``store`` as a permuted copy, or None if it computes anything, is
    predicated, or converts between element types."""
    index, value = store.index, store.value
    if store.predicate is not None or value.type.lanes == 1:
        return None
    if not (isinstance(index, ir.Ramp) and index.base.type.lanes == 1
            and isinstance(index.stride, ir.IntImm) and index.stride.value == 1):
        return None
    permutation: tuple[int, ...] = tuple(range(value.type.lanes))
    if isinstance(value, ir.Shuffle):
        if len(value.vectors) != 1:
            return None
        permutation, value = value.indices, value.vectors[0]
    if not isinstance(value, ir.Load) or value.predicate is not None:
        return None
    if element_types.get(value.name) != element_types.get(store.name) or store.name not in element_types:
        return None
    block = _block_of(value.index)
    if block is None:
        return None
    from_, column_stride, columns, row_stride, rows = block
    return PermutedCopy(store.name, index.base, value.name, from_, columns, rows,
                        column_stride, row_stride, permutation)


def _block_of(index: ir.Expr) -> tuple[ir.Expr, ir.Expr, int, ir.Expr, int] | None:
    """(start, column stride, columns, row stride, rows) of a load index that
    is a ramp, or a ramp of ramps (rows of columns)."""
    if not isinstance(index, ir.Ramp):
        return None
    if index.base.type.lanes == 1:
        return index.base, index.stride, index.lanes, ir.IntImm(0), 1
    inner, stride = index.base, index.stride
    if not (isinstance(inner, ir.Ramp) and inner.base.type.lanes == 1 and isinstance(stride, ir.Broadcast)
            and stride.value.type.lanes == 1):
        return None
    return inner.base, inner.stride, inner.lanes, stride.value, index.lanes
