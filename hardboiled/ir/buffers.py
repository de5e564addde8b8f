"""The pipeline's buffers, as a Halide dump declares them.

A lowered pipeline takes each buffer as ``X.buffer`` and checks it at entry:
its element type (``halide_error_bad_type``), dimensions
(``halide_error_bad_dimensions``), the region the program reads or writes
(``halide_error_access_out_of_bounds``) and fields the schedule fixed
(``halide_error_constraint_violated``). Code generation (the kernel's
parameters), legalization (element types) and verification (buffer sizes)
all read this one analysis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hardboiled.ir import nodes as ir

_BUFFER_FIELD_RE = re.compile(r"(.*)\.(min|extent|stride)\.(\d+)$")


@dataclass
class BufferSpec:
    """One pipeline buffer and what the dump's checks say about it."""

    name: str
    output: bool = False
    type: ir.Type | None = None
    dimensions: int | None = None
    required: dict[int, tuple[ir.Expr, ir.Expr]] = field(default_factory=dict)
    fixed: dict[str, int] = field(default_factory=dict)


def discover_buffers(stmt: ir.Stmt) -> dict[str, BufferSpec]:
    """The pipeline's buffers and what the dump's checks say about them."""
    specs: dict[str, BufferSpec] = {}
    # A stage computed at root on the GPU gets its own halide_buffer_t
    # (``let pre.buffer = _halide_buffer_init(...)``): an allocation inside
    # the pipeline, not an argument.
    internal = {n.name for n in ir.walk(stmt) if isinstance(n, (ir.LetStmt, ir.Let))}
    for node in ir.walk(stmt):
        if (isinstance(node, ir.Variable) and node.name.endswith(".buffer") and node.type.is_handle
                and node.name not in internal):
            name = node.name[: -len(".buffer")]
            specs.setdefault(name, BufferSpec(name))
    for node in ir.walk(stmt):
        if not isinstance(node, ir.AssertStmt) or not isinstance(node.message, ir.Call):
            continue
        call, args = node.message, node.message.args
        label = args[0].value if args and isinstance(args[0], ir.StringImm) else ""
        target = label.split(" buffer ", 1)[-1] if " buffer " in label else label
        spec = specs.get(target)
        if call.name == "halide_error_bad_type" and spec is not None:
            spec.output = label.startswith("Output")
            packed = args[2]
            if isinstance(packed, ir.UIntImm):
                spec.type = ir.type_from_packed_halide_type(packed.value)
        elif call.name == "halide_error_bad_dimensions" and spec is not None:
            if isinstance(args[2], ir.IntImm):
                spec.dimensions = args[2].value
        elif call.name == "halide_error_access_out_of_bounds" and spec is not None:
            dim = args[1]
            if isinstance(dim, ir.IntImm):
                spec.required[dim.value] = (args[2], args[3])
        elif call.name == "halide_error_constraint_violated":
            m = _BUFFER_FIELD_RE.match(label)
            if m and m.group(1) in specs and isinstance(args[3], ir.IntImm):
                specs[m.group(1)].fixed[f"{m.group(2)}.{m.group(3)}"] = args[3].value
    return specs


def bounds_query_value(e: ir.Expr) -> bool | None:
    """Whether a condition built from bounds-query tests is known: generated
    code is never called for a bounds query (a null host pointer), so
    ``_halide_buffer_is_bounds_query`` is false; None when the condition
    depends on anything else."""
    if isinstance(e, ir.Call) and e.name == "_halide_buffer_is_bounds_query":
        return False
    if isinstance(e, ir.Call) and e.name == "likely":
        return bounds_query_value(e.args[0])
    if isinstance(e, ir.Not):
        inner = bounds_query_value(e.value)
        return None if inner is None else not inner
    if isinstance(e, ir.Binary) and e.op in (ir.BinOp.OR, ir.BinOp.AND):
        a, b = bounds_query_value(e.a), bounds_query_value(e.b)
        if a is None or b is None:
            return None
        return (a or b) if e.op is ir.BinOp.OR else (a and b)
    return None
