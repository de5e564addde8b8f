"""What selection is asked to do: options and limits, in a module of their
own so that the command line can build them (and answer from the cache)
without loading the selector."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hardboiled.select.limits import DEFAULT_MEMORY_MB as DEFAULT_MEMORY_MB  # re-exported
from hardboiled.select.limits import DEFAULT_TIMEOUT_S as DEFAULT_TIMEOUT_S

if TYPE_CHECKING:
    from hardboiled import ir
    from hardboiled.targets.amx import VNNILayout


RewriteCheck = Callable[["ir.Stmt", "ir.Stmt", Mapping[str, "ir.Expr"], Mapping[str, "VNNILayout"]], "str | None"]
"""Checks one selected rewrite against the store it replaces: (the store,
its replacement, the temporaries the replacement reads by name and value,
the AMX buffers the rewrite keeps in VNNI order) -> why they differ, or
None. The pipeline passes the interpreter's (verify/rewrite_check.py);
selection knows nothing of how it is done."""


@dataclass(frozen=True, slots=True)
class SelectionOptions:
    store_in: dict[str, str] = field(default_factory=dict)
    """Buffer name -> memory type, overriding what the dump says."""
    schedule_path: str | None = None
    iterations: int | None = None
    allow_fallback: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_mb: int = DEFAULT_MEMORY_MB
    cache_dir: str | None = None
    """Where equality-saturation results are cached; None turns caching off."""
    verbose: bool = False
    """Report every missed store in full; by default only the root causes,
    with long expressions shortened."""
    require: bool = False
    """--require: no store in accelerator memory is a miss (exit 1)."""
    edge_copies: frozenset[str] = frozenset()
    """Set by selection itself: the copies of an accumulator that hold the
    partial tiles at an output's edge (select/specialize.py). A store of
    one that cannot be lowered is a warning, and the copy stays in
    ordinary memory, computed as Halide computes it."""
    saturation_jobs: int = 1
    """How many egglog children may saturate an input's scopes side by
    side (``-j`` with one input): each declares the rules, then runs its
    share of the scopes; what they extract is what one child would."""
    rewrite_check: RewriteCheck | None = None
    """Run on every store selection lowers, before it is put in the
    program: a rewrite that fails it is a miss, never emitted."""
