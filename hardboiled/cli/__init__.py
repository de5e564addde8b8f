"""The ``hardboiled`` command, the compile driver and its pass pipeline."""

from .main import main

__all__ = ["main"]
