"""The ``hardboiled`` command (the pass pipeline it runs is hardboiled/pipeline/).

``main`` is the command's entry point (cli/direct.py): a repeated compile is
answered from its record before click loads, anything else goes to the
command line (cli/commands.py)."""

from hardboiled.cli.direct import main

__all__ = ["main"]
