"""The static figures of generated Tensor-Core code: what one thread block
of a kernel executes (``BlockCounts``, ``KernelFigures``) and what an
application's kernels execute over the blocks they launch
(``ApplicationFigures``). measure/kernel_work.py reads them from the IR
the CUDA generator prints, measure/cuda_source.py from the CUDA itself.

Standard library only (bench/wmma_static.py loads this package by path)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

WARP_SIZE = 32

@dataclass
class BlockCounts:
    """Dynamic counts of one thread block (for a kernel) or of every block an
    application launches (for an application). All are executions, not
    source lines; wmma operations count once per warp."""

    mma: int = 0
    mma_macs: int = 0
    operand_loads: int = 0
    distinct_operand_loads: int = 0
    accumulator_loads: int = 0
    shared_fragment_loads: int = 0
    shared_fragment_load_bytes: int = 0
    fragment_fills: int = 0
    fragment_stores: int = 0
    shared_fragment_stores: int = 0
    shared_fragment_store_bytes: int = 0
    output_fragments: int = 0
    output_elements: int = 0
    syncthreads: int = 0
    syncwarps: int = 0
    shared_write_elements: int = 0
    shared_write_bytes: int = 0
    shared_read_elements: int = 0
    shared_read_bytes: int = 0
    nontensor_executions: int = 0
    nontensor_thread_executions: int = 0
    mma_by_shape: dict[str, int] = field(default_factory=dict)

    @property
    def lane_utilization(self) -> float | None:
        """Busy lanes over issued lanes in non-tensor statements (1.0: all 32 busy)."""
        if not self.nontensor_executions:
            return None
        return self.nontensor_thread_executions / (WARP_SIZE * self.nontensor_executions)

    def per_output_fragment(self, name: str) -> float | None:
        value = getattr(self, name)
        return value / self.output_fragments if self.output_fragments else None

    @property
    def macs_per_output_element(self) -> float | None:
        return self.mma_macs / self.output_elements if self.output_elements else None

    def add(self, other: BlockCounts, weight: int = 1) -> None:
        for counted in fields(BlockCounts):
            if counted.name == "mma_by_shape":
                continue
            setattr(self, counted.name, getattr(self, counted.name) + weight * getattr(other, counted.name))
        for shape, count in other.mma_by_shape.items():
            self.mma_by_shape[shape] = self.mma_by_shape.get(shape, 0) + weight * count

    def derived(self) -> dict[str, float | None]:
        """The per-output-fragment figures bench/wmma_static.py prints."""
        return {
            "mma_per_fragment": self.per_output_fragment("mma"),
            "macs_per_output_element": self.macs_per_output_element,
            "operand_loads_per_fragment": self.per_output_fragment("operand_loads"),
            "distinct_operand_loads_per_fragment": self.per_output_fragment("distinct_operand_loads"),
            "shared_write_bytes_per_fragment": self.per_output_fragment("shared_write_bytes"),
            "shared_read_bytes_per_fragment": self.per_output_fragment("shared_read_bytes"),
            "syncthreads_per_fragment": self.per_output_fragment("syncthreads"),
            "syncwarps_per_fragment": self.per_output_fragment("syncwarps"),
            "lane_utilization": self.lane_utilization,
        }


@dataclass(kw_only=True)
class KernelFigures(BlockCounts):
    """One kernel's counts for one thread block, and what was assumed."""

    name: str
    block: tuple[int, int, int]
    grids: list[tuple[int | None, int | None, int | None]] = field(default_factory=list)
    symbolic_trips: bool = False
    notes: list[str] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)

    @property
    def grid(self) -> tuple[int | None, int | None, int | None] | None:
        """The grid of its (first) launch, when launched."""
        return self.grids[0] if self.grids else None

    @property
    def blocks_launched(self) -> int | None:
        """Blocks over all its launches, when every grid entry is a constant."""
        if not self.grids:
            return None
        total = 0
        for grid in self.grids:
            if any(extent is None for extent in grid):
                return None
            total += math.prod(extent for extent in grid if extent is not None)
        return total

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(lane_utilization=self.lane_utilization, blocks_launched=self.blocks_launched,
                    derived=self.derived())
        return data


@dataclass
class ApplicationFigures:
    """An application's kernels and their counts summed over the blocks launched."""

    name: str
    kernels: list[KernelFigures]
    totals: BlockCounts
    grid_known: bool
    ptx: dict[str, int] | None = None

    @property
    def wmma_kernels(self) -> int:
        return sum(1 for kernel in self.kernels if kernel.mma)

    @property
    def symbolic_trips(self) -> bool:
        return any(kernel.symbolic_trips for kernel in self.kernels)

    @property
    def unparsed(self) -> list[str]:
        return [f"{kernel.name}: {entry}" for kernel in self.kernels for entry in kernel.unparsed]

    def to_json(self) -> dict[str, Any]:
        totals = asdict(self.totals)
        totals["lane_utilization"] = self.totals.lane_utilization
        return {
            "name": self.name, "grid_known": self.grid_known, "symbolic_trips": self.symbolic_trips,
            "totals": totals, "derived": self.totals.derived(), "ptx": self.ptx,
            "kernels": [kernel.to_json() for kernel in self.kernels],
        }


def application_figures(name: str, kernels: list[KernelFigures],
                        ptx: dict[str, int] | None = None) -> ApplicationFigures:
    """Sum ``kernels`` over the blocks they launch (once each when a grid is not constant)."""
    totals = BlockCounts()
    grid_known = True
    for kernel in kernels:
        blocks = kernel.blocks_launched
        grid_known = grid_known and blocks is not None
        totals.add(kernel, 1 if blocks is None else blocks)
    return ApplicationFigures(name, kernels, totals, grid_known, ptx)
