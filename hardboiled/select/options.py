"""What selection is asked to do: options and limits, in a module of their
own so that the command line can build them (and answer from the cache)
without loading the selector."""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_TIMEOUT_S = 60.0
"""Wall-clock limit of the egglog child process."""
DEFAULT_MEMORY_MB = 4096
"""Address-space limit of the egglog child process."""


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
