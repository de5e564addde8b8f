"""The pipeline's buffers, as a Halide dump declares them.

A lowered pipeline takes each buffer as ``X.buffer`` and checks it at entry:
its element type (``halide_error_bad_type``), dimensions
(``halide_error_bad_dimensions``), the region the program reads or writes
(``halide_error_access_out_of_bounds``) and fields the schedule fixed
(``halide_error_constraint_violated``). Code generation (the kernel's
parameters), legalization (element types) and verification (buffer sizes)
all read this one analysis, and the pipeline's scalar params
(``scalar_params``): a ``Param`` of the pipeline is a name the program reads
and never binds.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from hardboiled.ir import nodes as ir
from hardboiled.ir import operations
from hardboiled.support.memo import by_identity

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
    """The pipeline's buffers and what the dump's checks say about them
    (the caller's own copies)."""
    return {name: dataclasses.replace(spec, required=dict(spec.required), fixed=dict(spec.fixed))
            for name, spec in _discovered_buffers(stmt).items()}


@by_identity(size=8)
def _discovered_buffers(stmt: ir.Stmt) -> dict[str, BufferSpec]:
    """``discover_buffers``' answer, worked out once per program (a
    verification sizes buffers once per layout, code generation and the
    --run harness ask again)."""
    specs = {name: BufferSpec(name) for name in _argument_buffers(stmt)}
    for node in ir.walk(stmt):
        if isinstance(node, ir.AssertStmt) and isinstance(node.message, ir.Call):
            _read_check(node.message, specs)
    return specs


def _argument_buffers(stmt: ir.Stmt) -> list[str]:
    """The buffers the pipeline takes as ``X.buffer`` arguments, in order of
    first use."""
    # A stage computed at root on the GPU gets its own halide_buffer_t
    # (``let pre.buffer = _halide_buffer_init(...)``): an allocation inside
    # the pipeline, not an argument.
    internal = {n.name for n in ir.walk(stmt) if isinstance(n, (ir.LetStmt, ir.Let))}
    names = (node.name[: -len(".buffer")] for node in ir.walk(stmt)
             if isinstance(node, ir.Variable) and node.name.endswith(".buffer") and node.type.is_handle
             and node.name not in internal)
    return list(dict.fromkeys(names))


def _read_check(call: ir.Call, specs: dict[str, BufferSpec]) -> None:
    """Note what one check's error call says about its buffer. Its first
    argument labels it: "Input buffer A", "Output buffer f", or the field
    that a constraint fixes ("A.stride.0")."""
    args = call.args
    label = args[0].value if args and isinstance(args[0], ir.StringImm) else ""
    if call.name == "halide_error_constraint_violated":
        _read_constraint(label, args, specs)
        return
    read = _BUFFER_CHECKS.get(call.name)
    spec = specs.get(label.split(" buffer ", 1)[-1] if " buffer " in label else label)
    if read is not None and spec is not None:
        read(spec, label, args)


def _read_type(spec: BufferSpec, label: str, args: tuple[ir.Expr, ...]) -> None:
    """bad_type(label, actual, expected): an input or output, of the expected packed type."""
    spec.output = label.startswith("Output")
    packed = args[2]
    if isinstance(packed, ir.UIntImm):
        spec.type = ir.type_from_packed_halide_type(packed.value)


def _read_dimensions(spec: BufferSpec, label: str, args: tuple[ir.Expr, ...]) -> None:
    """bad_dimensions(label, actual, expected)."""
    if isinstance(args[2], ir.IntImm):
        spec.dimensions = args[2].value


def _read_required_region(spec: BufferSpec, label: str, args: tuple[ir.Expr, ...]) -> None:
    """access_out_of_bounds(label, dim, min, max, ...): the region of ``dim`` the program touches."""
    dim = args[1]
    if isinstance(dim, ir.IntImm):
        spec.required[dim.value] = (args[2], args[3])


_BUFFER_CHECKS: dict[str, Callable[[BufferSpec, str, tuple[ir.Expr, ...]], None]] = {
    "halide_error_bad_type": _read_type,
    "halide_error_bad_dimensions": _read_dimensions,
    "halide_error_access_out_of_bounds": _read_required_region,
}
"""The checks whose label names a buffer, and what each says about it."""


def _read_constraint(label: str, args: tuple[ir.Expr, ...], specs: dict[str, BufferSpec]) -> None:
    """A field the schedule fixed; the label names the field (``A.extent.0``)."""
    m = _BUFFER_FIELD_RE.match(label)
    if m and m.group(1) in specs and isinstance(args[3], ir.IntImm):
        specs[m.group(1)].fixed[f"{m.group(2)}.{m.group(3)}"] = args[3].value


def bounds_query_value(e: ir.Expr) -> bool | None:
    """Whether a condition built from bounds-query tests is known: generated
    code is never called for a bounds query (a null host pointer), so
    ``_halide_buffer_is_bounds_query`` is false; None when the condition
    depends on anything else."""
    if isinstance(e, ir.Call) and e.name == operations.BUFFER_IS_BOUNDS_QUERY.name:
        return False
    if isinstance(e, ir.Call) and e.name == operations.LIKELY.name:
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


def scalar_params(stmt: ir.Stmt) -> dict[str, ir.Type]:
    """The program's scalar params: names it reads but never binds (a
    ``Param`` of the pipeline), with their types (the caller's own dict)."""
    return dict(_scalar_params(stmt))


@by_identity(size=8)
def _scalar_params(stmt: ir.Stmt) -> dict[str, ir.Type]:
    bound: set[str] = set()
    used: dict[str, ir.Type] = {}
    for node in ir.walk(stmt):
        if isinstance(node, (ir.Let, ir.LetStmt, ir.For, ir.Allocate)):
            bound.add(node.name)
        elif isinstance(node, ir.Variable) and not node.type.is_handle and not node.name.endswith(".buffer"):
            used.setdefault(node.name, node.type.element())
    return {name: t for name, t in sorted(used.items()) if name not in bound}
