"""Verification's inputs: the buffers a program runs on (sized by the
checks Halide put in the dump, or --param; laid out in one of the
``SHAPES``; filled with seeded random data or --input arrays) and the
values of its scalar params (--param, or drawn among those its asserts
accept). compare.py runs the programs on them and compares."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from hardboiled import ir
from hardboiled.ir.buffers import BufferSpec, discover_buffers, scalar_params
from hardboiled.support.diagnostics import Diagnostic, HardboiledError
from hardboiled.support.memo import by_identity
from hardboiled.verify.interp import BufferT, Interpreter, InterpreterError, dtype_of

DEFAULT_OUTPUT_EXTENTS = (19, 64, 256)
"""Sizes tried, in order, for an output dimension that nothing else fixes:
an odd one first (it exercises tail handling), then sizes that satisfy the
asserts of schedules with large tiles (ShiftInwards needs an output at
least one tile wide)."""
"""Extent of an output dimension that neither the dump nor --param bounds
(odd, so that vector tails run)."""


@dataclass(frozen=True, slots=True)
class Shape:
    """How verification lays out the buffer fields the program leaves free
    (neither its asserts nor --param fix them): where outputs start, the
    padding after each row of every buffer, and which dimension is
    innermost. A rewrite that mishandles a min or a stride computes
    something else on one of them."""

    name: str
    output_min: int = 0
    input_margin: int = 0
    """Elements an input holds before (and after) the region the program
    requires, where its min is free: the input starts earlier than it is read."""
    outer_margins_only: bool = False
    """The margin in dimensions 1 and up only, so that rows keep the length
    a branch specialized for dense rows (stride.1 == 128) tests for."""
    row_padding: int = 0
    innermost_last: bool = False
    """Dimension 0 outermost, the last dimension innermost."""


SHAPES = (
    Shape("dense from 0"),
    Shape("mins shifted by 3, rows padded by 5", output_min=3, input_margin=3, row_padding=5),
    # Dense where the program fixes the innermost stride: a branch it
    # specializes for dense rows then runs with mins shifted too.
    Shape("dimensions in reverse order, outer mins shifted by 2", output_min=2, input_margin=2,
          outer_margins_only=True, innermost_last=True),
)
"""The layouts ``verify`` runs, in order; one the program's own asserts
refuse is skipped (and said to be)."""


def _random_data(t: ir.Type, size: int, rng: np.random.Generator) -> np.ndarray:
    dtype = dtype_of(t)
    if t.is_float:
        values = rng.standard_normal(size)
        return values.astype(np.float64).astype(dtype)
    if t.is_bool:
        return rng.integers(0, 2, size).astype(np.bool_)
    # Every value of 8- and 16-bit types (so signedness and wrap-around
    # mistakes show); wider integers stay where index arithmetic is sane.
    info = np.iinfo(dtype)
    low, high = (info.min, info.max) if t.bits <= 16 else (max(info.min, -(1 << 20)), min(info.max, 1 << 20))
    return rng.integers(low, high, size, endpoint=True, dtype=np.int64 if t.is_int else np.uint64).astype(dtype)


def make_buffers(stmt: ir.Stmt, params: dict[str, int], seed: int,
                 default_extent: int = DEFAULT_OUTPUT_EXTENTS[0],
                 defaulted: list[str] | None = None,
                 inputs: Mapping[str, np.ndarray] | None = None,
                 shape: Shape = SHAPES[0],
                 scalars: Mapping[str, int] | None = None) -> tuple[dict[str, BufferT], set[str]]:
    """Random input and output buffers sized by the dump's bounds checks.
    Output dimensions that nothing fixes get ``default_extent``; their
    fields are appended to ``defaulted``. ``inputs`` gives some input
    buffers' contents instead (numpy order: the last axis is Halide's
    dimension 0), which also fixes their extents."""
    specs = discover_buffers(stmt)
    _check_params(params, specs, scalar_params(stmt))
    inputs = dict(inputs or {})
    _check_inputs(inputs, specs)
    lets = _let_values(stmt)
    known = {**params, **(scalars or {})}  # a size may be a scalar param (an extent n)
    for name, array in inputs.items():
        for d, extent in enumerate(reversed(array.shape)):
            known[f"{name}.extent.{d}"] = extent
            known.setdefault(f"{name}.min.{d}", 0)
    sizing = _Sizing(known, lets, default_extent, defaulted, shape)
    buffers: dict[str, BufferT] = {}
    rng = np.random.default_rng(seed)
    # Outputs first: the regions inputs must cover depend on them.
    for spec in sorted(specs.values(), key=lambda s: (not s.output, s.name)):
        element_type, dimensions = _type_and_dimensions(spec)
        layout = sizing.layout(spec, dimensions)
        data = _random_data(element_type, layout.size, rng)
        if spec.name in inputs:
            data = _placed(inputs[spec.name], element_type, layout)
        buffers[spec.name] = BufferT(spec.name, element_type, data, layout.mins, layout.extents, layout.strides)
    outputs = {s.name for s in specs.values() if s.output}
    return buffers, outputs


@by_identity(size=8)
def _let_values(stmt: ir.Stmt) -> dict[str, ir.Expr]:
    """The value of each LetStmt of the program, by name (the last one
    bound), once per program: buffers are sized once per layout."""
    return {n.name: n.value for n in ir.walk(stmt) if isinstance(n, ir.LetStmt)}


def _check_inputs(inputs: dict[str, np.ndarray], specs: dict[str, BufferSpec]) -> None:
    """Given contents must name an input buffer of the program and have its
    dimensions and kind of element (floats for floats, integers for integers)."""
    for name, array in sorted(inputs.items()):
        spec = specs.get(name)
        if spec is None or spec.output:
            known = ", ".join(sorted(s.name for s in specs.values() if not s.output)) or "none"
            raise HardboiledError(Diagnostic("error", f"--input {name}: the program has no input buffer '{name}'",
                                             notes=(f"input buffers: {known}",)))
        element_type, dimensions = _type_and_dimensions(spec)
        if array.ndim != dimensions:
            raise HardboiledError(Diagnostic(
                "error", f"--input {name}: {array.ndim} dimensions, but '{name}' has {dimensions}",
                notes=("numpy order: shape (rows, columns) is Halide's (extent.1, extent.0)",)))
        same_kind = array.dtype == dtype_of(element_type) or (
            array.dtype.kind == "f" if element_type.is_float else array.dtype.kind in "iu")
        if not same_kind:
            raise HardboiledError(Diagnostic(
                "error", f"--input {name}: {array.dtype} elements for a buffer of {element_type}"))


def _placed(array: np.ndarray, t: ir.Type, layout: _Layout) -> np.ndarray:
    """``array`` (numpy order) laid out as the buffer's storage."""
    data = np.zeros(layout.size, dtype=dtype_of(t))
    halide_order = np.ascontiguousarray(array).transpose(tuple(reversed(range(array.ndim))))
    offsets = np.zeros(halide_order.shape, dtype=np.int64)
    for d, stride in enumerate(layout.strides):
        shape = [1] * array.ndim
        shape[d] = halide_order.shape[d]
        offsets = offsets + np.arange(halide_order.shape[d]).reshape(shape) * stride
    data[offsets.reshape(-1)] = halide_order.reshape(-1).astype(dtype_of(t))
    return data


def _type_and_dimensions(spec: BufferSpec) -> tuple[ir.Type, int]:
    """The buffer's element type and dimensions, without which it cannot be made."""
    if spec.type is None or spec.dimensions is None:
        raise HardboiledError(Diagnostic(
            "error", f"cannot tell the type and dimensions of buffer '{spec.name}' from the dump",
            notes=("verification needs the pipeline's argument checks: use the vectorizing stage of an "
                   "HL_DEBUG_CODEGEN log or a stmt that contains them",),
        ))
    return spec.type, spec.dimensions


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where a buffer's elements lie: per dimension, its first coordinate,
    its extent and its stride in elements."""

    mins: tuple[int, ...]
    extents: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def size(self) -> int:
        """Elements from the first one addressed to the last."""
        return 1 + sum((e - 1) * s for e, s in zip(self.extents, self.strides))


@dataclass
class _Sizing:
    """Sizes the buffers one after another. Each sized buffer's fields join
    ``known`` (which starts as the --param values), where the regions of
    the buffers after it are evaluated."""

    known: dict[str, int]
    lets: dict[str, ir.Expr]
    """The program's let-bound names, which required regions may use."""
    default_extent: int
    defaulted: list[str] | None
    shape: Shape = SHAPES[0]

    def layout(self, spec: BufferSpec, dimensions: int) -> _Layout:
        """The layout of ``spec``, now known for the buffers after it."""
        bounds = [self._bounds(spec, d) for d in range(dimensions)]
        extents = tuple(extent for _, extent in bounds)
        layout = _Layout(tuple(lo for lo, _ in bounds), extents, self._strides(spec, extents))
        if layout.size > MAX_BUFFER_ELEMENTS:
            raise HardboiledError(Diagnostic(
                "error",
                f"buffer '{spec.name}' would hold {layout.size} elements: too large for the reference interpreter",
                notes=(f"extents {list(layout.extents)}, strides {list(layout.strides)}; "
                       f"the limit is {MAX_BUFFER_ELEMENTS}",
                       "pass smaller --param extents"),
            ))
        for d in range(dimensions):
            self.known[f"{spec.name}.min.{d}"], self.known[f"{spec.name}.extent.{d}"] = layout.mins[d], extents[d]
            self.known[f"{spec.name}.stride.{d}"] = layout.strides[d]
        return layout

    def _bounds(self, spec: BufferSpec, d: int) -> tuple[int, int]:
        """Dimension ``d``'s min and extent: from --param or the dump's
        constraints, an output's own default size, or the region the
        program's checks require."""
        lo = _param(self.known, spec, f"min.{d}")
        ext = _param(self.known, spec, f"extent.{d}")
        if spec.output and _needs_own_size(spec, d, self.known):
            lo, ext = self._own_size(spec, d, lo, ext)
        if (lo is None or ext is None) and d in spec.required:
            try:
                lo, ext = self._required_region(spec, d, lo, ext)
            except HardboiledError:
                # An input read only within its own bounds (a boundary
                # condition clamps to them): any size will do.
                if spec.output or not self._depends_on_itself(spec, d):
                    raise
                lo, ext = self._unclamped_region(spec, d, lo, ext) or self._own_size(spec, d, lo, ext)
        if lo is None or ext is None:
            raise HardboiledError(Diagnostic(
                "error", f"the dump does not bound dimension {d} of buffer '{spec.name}'",
                notes=(f"pass --param {spec.name}.extent.{d}=N (and .min.{d}) to size it",),
            ))
        return lo, max(ext, 1)

    def _depends_on_itself(self, spec: BufferSpec, d: int) -> bool:
        """Whether the region required of dimension ``d`` depends on the
        buffer's own unknown fields, through the program's lets too."""
        pending = [n.name for e in spec.required[d] for n in ir.walk(e) if isinstance(n, ir.Variable)]
        seen: set[str] = set()
        while pending:
            name = pending.pop()
            if name in seen or name in self.known:
                continue
            seen.add(name)
            if name in self.lets:
                pending.extend(n.name for n in ir.walk(self.lets[name]) if isinstance(n, ir.Variable))
            elif name.startswith(spec.name + "."):
                return True
        return False

    def _unclamped_region(self, spec: BufferSpec, d: int, lo: int | None,
                          ext: int | None) -> tuple[int, int] | None:
        """For an input read within its own bounds (a boundary condition
        clamps to them), the region the program reads before the clamp:
        its required region were the buffer unbounded, less one element at
        each end of a dimension three or more long. Data there is what the
        program multiplies (a buffer placed beside that region gives an
        output of the exterior value alone, which proves nothing), and the
        ends it lacks exercise the clamp. None if that region is no
        reasonable size or ``lo`` or ``ext`` is given."""
        if lo is not None or ext is not None:
            return None
        # the buffer's own bounds huge where nothing else fixes them
        known = {f"{spec.name}.min.{d}": -_UNBOUNDED, f"{spec.name}.extent.{d}": 2 * _UNBOUNDED, **self.known}
        try:
            first = _evaluate(spec.required[d][0], known, spec.name, self.lets)
            last = _evaluate(spec.required[d][1], known, spec.name, self.lets)
        except HardboiledError:
            return None
        if not (-_UNBOUNDED // 2 < first <= last < _UNBOUNDED // 2):
            return None
        return (first + 1, last - first - 1) if last - first >= 2 else (first, last - first + 1)

    def _own_size(self, spec: BufferSpec, d: int, lo: int | None, ext: int | None) -> tuple[int, int]:
        """A dimension that nothing but its own size bounds starts at the
        shape's output min and has the default extent, which ``defaulted``
        records."""
        if ext is None:
            ext = self.default_extent
            if self.defaulted is not None:
                self.defaulted.append(f"{spec.name}.extent.{d}")
        return (self.shape.output_min if lo is None else lo), ext

    def _required_region(self, spec: BufferSpec, d: int, lo: int | None, ext: int | None) -> tuple[int, int]:
        """The bounds not known yet, from the region the program requires."""
        lo_req = _evaluate(spec.required[d][0], self.known, spec.name, self.lets)
        hi_req = _evaluate(spec.required[d][1], self.known, spec.name, self.lets)
        margin = self.shape.input_margin if lo is None and ext is None and not spec.output else 0
        if self.shape.outer_margins_only and d == 0:
            margin = 0
        lo = lo_req - margin if lo is None else lo
        return lo, (hi_req + margin - lo + 1 if ext is None else ext)

    def _strides(self, spec: BufferSpec, extents: tuple[int, ...]) -> tuple[int, ...]:
        """Given strides, and for the rest the shape's: dense after the
        largest so far (padded by ``row_padding`` past the innermost
        dimension), dimension 0 innermost or outermost."""
        strides: dict[int, int] = {}
        step = 1
        order = range(len(extents) - 1, -1, -1) if self.shape.innermost_last else range(len(extents))
        if self.shape.innermost_last:
            # Free dimensions go outside the ones the program fixes (a
            # stride.0 == 1 keeps dimension 0 innermost), never across them.
            fixed = [(s, extents[d]) for d in order if (s := _param(self.known, spec, f"stride.{d}"))]
            step = max([1, *(s * e for s, e in fixed)])
        for position, d in enumerate(order):
            stride = _param(self.known, spec, f"stride.{d}")
            if stride is not None and stride <= 0:
                raise HardboiledError(Diagnostic(
                    "error", f"{spec.name}.stride.{d} = {stride}: verification needs positive strides",
                ))
            if stride is None:
                stride = step + (self.shape.row_padding if position == 1 else 0)
            strides[d] = stride
            step = max(step, stride * extents[d])
        return tuple(strides[d] for d in range(len(extents)))


_UNBOUNDED = 1 << 20
"""The half-width of the bounds a clamped input is given to find the
region its program reads before clamping."""

PARAM_FIELDS = ("min", "extent", "stride")
MAX_BUFFER_ELEMENTS = 1 << 26
"""Interpreting Halide IR in numpy is for tiles, not for whole images."""
INT32_RANGE = (-(1 << 31), (1 << 31) - 1)


def _check_params(params: dict[str, int], specs: dict[str, BufferSpec], scalars: Mapping[str, ir.Type]) -> None:
    """A --param that names no buffer field (nor scalar param) of this
    program is a typo: ignoring it would verify something other than what
    the user asked for."""
    for name, value in sorted(params.items()):
        buffer, _, rest = name.rpartition(".")
        buffer, _, fieldname = buffer.rpartition(".")
        spec = specs.get(buffer)
        fields = f"{buffer or 'NAME'}.min.D, .extent.D or .stride.D"
        if spec is None or fieldname not in PARAM_FIELDS or not rest.isdigit():
            known = ", ".join(sorted(specs)) or "none"
            raise HardboiledError(Diagnostic(
                "error", f"--param {name}: no such buffer field or param in this program",
                notes=(f"write {fields}; buffers: {known}; params: {', '.join(scalars) or 'none'}",),
            ))
        if spec.dimensions is not None and int(rest) >= spec.dimensions:
            raise HardboiledError(Diagnostic(
                "error", f"--param {name}: buffer '{buffer}' has {spec.dimensions} dimensions",
            ))
        if not INT32_RANGE[0] <= value <= INT32_RANGE[1]:
            raise HardboiledError(Diagnostic("error", f"--param {name}={value}: Halide buffer fields are int32"))


def _needs_own_size(spec: BufferSpec, d: int, known: dict[str, int]) -> bool:
    """A dimension whose required region is stated in terms of the buffer's
    own (unknown) size, or not at all."""
    if d not in spec.required:
        return True
    names = {n.name for e in spec.required[d] for n in ir.walk(e) if isinstance(n, ir.Variable)}
    return any(name not in known and name.startswith(spec.name + ".") for name in names)


def _param(known: dict[str, int], spec: BufferSpec, fieldname: str) -> int | None:
    value = known.get(f"{spec.name}.{fieldname}")
    return value if value is not None else spec.fixed.get(fieldname)


def _evaluate(e: ir.Expr, known: dict[str, int], buffer: str, lets: dict[str, ir.Expr] | None = None) -> int:
    """Evaluate a bound, resolving the program's let-bound names it uses."""
    env: dict[str, int] = dict(known)
    lets = lets or {}
    for name in _needed_lets(e, lets):
        try:
            env[name] = _evaluate(lets[name], env, buffer, lets)
        except HardboiledError:
            break
    interp = Interpreter({k: v for k, v in env.items()})
    try:
        return int(np.asarray(interp.eval(e)).reshape(-1)[0])
    except InterpreterError as exc:
        raise HardboiledError(Diagnostic(
            "error", f"cannot size buffer '{buffer}': {exc.diagnostic.message}",
        )) from None


def _needed_lets(e: ir.Expr, lets: dict[str, ir.Expr]) -> list[str]:
    return [n.name for n in ir.walk(e) if isinstance(n, ir.Variable) and n.name in lets]


SCALAR_DRAWS = 24
"""Draws of a program's unspecified scalar params before giving up."""


def split_params(params: Mapping[str, float], scalars: dict[str, ir.Type]
                  ) -> tuple[dict[str, int], dict[str, float]]:
    """--param values: buffer fields (whole numbers) and scalar params."""
    fields: dict[str, int] = {}
    given: dict[str, float] = {}
    for name, value in params.items():
        if name in scalars:
            t = scalars[name]
            if not t.is_float and value != int(value):
                raise HardboiledError(Diagnostic("error", f"--param {name}={value}: '{name}' is an {t} param"))
            given[name] = value if t.is_float else int(value)
        else:
            if value != int(value):
                raise HardboiledError(Diagnostic("error", f"--param {name}={value}: buffer fields are integers"))
            fields[name] = int(value)
    return fields, given


def scalar_draws(scalars: dict[str, ir.Type], given: dict[str, float], seed: int) -> Iterator[dict[str, float]]:
    """Values for every scalar param: the given ones, and draws for the rest
    (small positive integers first, as sizes and counts are; any float)."""
    rng = np.random.default_rng([seed, 7])
    missing = [name for name in scalars if name not in given]
    for attempt in range(SCALAR_DRAWS if missing else 1):
        draw: dict[str, float] = dict(given)
        for name in missing:
            t = scalars[name]
            if t.is_float:
                draw[name] = float(np.round(rng.standard_normal() * 2, 3))
            elif t.is_bool:
                draw[name] = int(rng.integers(0, 2))
            else:
                high = 16 if attempt < SCALAR_DRAWS // 2 else 256
                draw[name] = int(rng.integers(0 if t.is_uint else -high // 8, high))
        yield draw
