"""The IR at the centre of hardboiled: nodes and types (``nodes``, which
gathers ``types``, ``enums``, ``exprs``, ``stmts`` and ``traversal``), the
visitor and rewriter every pass uses (``visitor``), the invariants checked
after each pass (``invariants``), the pipeline buffers a dump declares
(``buffers``), the printer, the exact inverse of the parser
(``printer``), and the table of every Halide call hardboiled knows
(``operations``, imported by its consumers as ``hardboiled.ir.operations``).

``from hardboiled import ir`` gives the node classes as ``ir.Store``,
``ir.Ramp`` and so on.
"""

from .nodes import *  # noqa: F403 - the node classes are the package's vocabulary
