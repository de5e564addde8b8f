"""The ``hardboiled`` command, the compile driver and its pass pipeline."""

from .commands import main

__all__ = ["main"]
