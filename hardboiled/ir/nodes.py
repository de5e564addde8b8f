"""The Halide IR, as frozen dataclasses: the vocabulary that every module of
hardboiled imports, as ``from hardboiled import ir`` or
``from hardboiled.ir import nodes as ir``.

This is the centre of hardboiled: the parser builds it, every pass reads and
rewrites it, and the printer writes it back in Halide's own text format.
This module gathers the parts, which live by concern in

* ``types``: ``Type``, its codes and constructors (``Int(32)``), type names;
* ``enums``: the enumerations Halide prints (``BinOp``, ``ForKind``, ...);
* ``exprs``: ``Expr`` and the expression nodes;
* ``stmts``: ``Stmt``, the statement nodes, ``make_block`` and ``Module``;
* ``traversal``: ``children``, ``walk`` and the queries built on them.

Design rules:

* Nodes are immutable and compared structurally, so ``parse(print(ir)) == ir``
  is a meaningful test and nodes can be hashed, cached and deduplicated.
* Every expression has a Halide type, lanes included. Leaves (literals,
  variables, loads, calls, casts, reductions) store it; compound nodes derive
  it from their operands, so an inconsistent type cannot be constructed.
* Statement sequences are ``Block`` nodes holding two or more statements that
  are not themselves blocks. ``LetStmt`` and ``Allocate`` scope over "the rest
  of the block", exactly as Halide prints them.
"""

from __future__ import annotations

from hardboiled.ir.enums import *  # noqa: F403 - re-exported: the IR's vocabulary
from hardboiled.ir.exprs import *  # noqa: F403
from hardboiled.ir.stmts import *  # noqa: F403
from hardboiled.ir.traversal import *  # noqa: F403
from hardboiled.ir.types import *  # noqa: F403
