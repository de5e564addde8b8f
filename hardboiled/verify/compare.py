"""Translation validation: run the original and the rewritten IR on the same
random inputs and compare every output buffer.

Buffers are the pipeline's ``X.buffer`` arguments. Their element types,
dimensions and the region the program touches come from the checks Halide
put in the dump (type asserts, ``halide_error_access_out_of_bounds``,
``halide_error_constraint_violated``); ``--param`` fixes any extent, min or
stride the dump leaves symbolic. Inputs are seeded random data; the seed is
reported so that a mismatch can be replayed.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hardboiled import ir
from hardboiled.ir.buffers import BufferSpec, discover_buffers
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError
from hardboiled.verify.error_bound import ERROR, NoErrorBound, bound_program, differing_buffers
from hardboiled.verify.interp import (
    INTERPRETER_TIMEOUT_S,
    BufferT,
    Interpreter,
    InterpreterError,
    Pointer,
    ProgramAssertFailed,
    ResourceLimitError,
    dtype_of,
    time_limit,
)

DEFAULT_SEED = 0
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
    row_padding: int = 0
    innermost_last: bool = False
    """Dimension 0 outermost, the last dimension innermost."""


SHAPES = (
    Shape("dense from 0"),
    Shape("mins 3, rows padded by 5", output_min=3, row_padding=5),
    Shape("dimensions in reverse order", innermost_last=True),
)
"""The layouts ``verify`` runs, in order; one the program's own asserts
refuse is skipped (and said to be)."""


class VerificationMismatch(HardboiledError):
    exit_code = ExitCode.VERIFICATION_MISMATCH


class VerificationUnproven(HardboiledError):
    exit_code = ExitCode.VERIFICATION_UNPROVEN


@dataclass(frozen=True, slots=True)
class BufferComparison:
    name: str
    elements: int
    max_abs_error: float
    max_rel_error: float
    tolerance: float
    first_mismatch: int | None
    """Flat element index of the first value outside the tolerance."""
    expected: float | None = None
    actual: float | None = None
    coordinates: tuple[int, ...] | None = None
    """The first mismatch as buffer coordinates (x, y, ...)."""
    per_element: bool = False
    """Whether the tolerance is the error bound of each element (else one
    for the whole buffer)."""
    tolerance_there: float | None = None
    """The tolerance at the first mismatch."""
    unproven: int = 0
    """Elements whose error bound is infinite or wider than the output's
    range: any value there would have passed, so equal proves nothing."""


@dataclass(frozen=True, slots=True)
class VerificationResult:
    seed: int
    outputs: tuple[BufferComparison, ...]
    error: str | None = None
    """Why the rewritten program could not run to the end (it is wrong)."""
    undefined_reads: tuple[str, ...] = ()
    """Memory of its own the rewritten program read before writing it
    ('NAME element I'): it holds garbage that differs between the two runs."""
    shapes: tuple[str, ...] = ()
    """The buffer layouts both programs ran on (``SHAPES``), the last the
    one this result is of; one the program's asserts refused is absent."""

    @property
    def ok(self) -> bool:
        return self.error is None and all(c.first_mismatch is None for c in self.outputs)

    @property
    def unproven(self) -> int:
        """Output elements where the comparison proves nothing."""
        return sum(c.unproven for c in self.outputs)

    def summary(self) -> str:
        if self.error is not None:
            return f"verify (seed {self.seed}): the rewritten program fails: {self.error}"
        parts = []
        for c in self.outputs:
            where = c.coordinates if c.coordinates is not None else c.first_mismatch
            shown = list(where) if isinstance(where, tuple) else where
            status = "equal" if c.first_mismatch is None else f"MISMATCH at {c.name}{shown}"
            parts.append(
                f"{c.name}: {status} ({c.elements} elements, max abs error {c.max_abs_error:.3g}, "
                f"max rel error {c.max_rel_error:.3g}, "
                f"tolerance {'per element, up to ' if c.per_element else ''}{c.tolerance:.3g}"
                + (f"; {c.unproven} unproven: their bounds are wider than the output's range" if c.unproven
                   else "") + ")"
            )
        shapes = f" (buffer layouts: {', '.join(self.shapes)})" if len(self.shapes) > 1 else ""
        return f"verify (seed {self.seed}): " + "; ".join(parts) + shapes


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
                 shape: Shape = SHAPES[0]) -> tuple[dict[str, BufferT], set[str]]:
    """Random input and output buffers sized by the dump's bounds checks.
    Output dimensions that nothing fixes get ``default_extent``; their
    fields are appended to ``defaulted``. ``inputs`` gives some input
    buffers' contents instead (numpy order: the last axis is Halide's
    dimension 0), which also fixes their extents."""
    specs = discover_buffers(stmt)
    _check_params(params, specs)
    inputs = dict(inputs or {})
    _check_inputs(inputs, specs)
    lets = {n.name: n.value for n in ir.walk(stmt) if isinstance(n, ir.LetStmt)}
    known = dict(params)
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
            lo, ext = self._required_region(spec, d, lo, ext)
        if lo is None or ext is None:
            raise HardboiledError(Diagnostic(
                "error", f"the dump does not bound dimension {d} of buffer '{spec.name}'",
                notes=(f"pass --param {spec.name}.extent.{d}=N (and .min.{d}) to size it",),
            ))
        return lo, max(ext, 1)

    def _own_size(self, spec: BufferSpec, d: int, lo: int | None, ext: int | None) -> tuple[int, int]:
        """An output dimension that nothing sizes starts at the shape's
        output min and has the default extent, which ``defaulted`` records."""
        if ext is None:
            ext = self.default_extent
            if self.defaulted is not None:
                self.defaulted.append(f"{spec.name}.extent.{d}")
        return (self.shape.output_min if lo is None else lo), ext

    def _required_region(self, spec: BufferSpec, d: int, lo: int | None, ext: int | None) -> tuple[int, int]:
        """The bounds not known yet, from the region the program requires."""
        lo_req = _evaluate(spec.required[d][0], self.known, spec.name, self.lets)
        hi_req = _evaluate(spec.required[d][1], self.known, spec.name, self.lets)
        lo = lo_req if lo is None else lo
        return lo, (hi_req - lo + 1 if ext is None else ext)

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


PARAM_FIELDS = ("min", "extent", "stride")
MAX_BUFFER_ELEMENTS = 1 << 26
"""Interpreting Halide IR in numpy is for tiles, not for whole images."""
INT32_RANGE = (-(1 << 31), (1 << 31) - 1)


def _check_params(params: dict[str, int], specs: dict[str, BufferSpec]) -> None:
    """A --param that names no buffer field of this program is a typo: ignoring
    it would verify something other than what the user asked for."""
    for name, value in sorted(params.items()):
        buffer, _, rest = name.rpartition(".")
        buffer, _, fieldname = buffer.rpartition(".")
        spec = specs.get(buffer)
        fields = f"{buffer or 'NAME'}.min.D, .extent.D or .stride.D"
        if spec is None or fieldname not in PARAM_FIELDS or not rest.isdigit():
            known = ", ".join(sorted(specs)) or "none"
            raise HardboiledError(Diagnostic(
                "error", f"--param {name}: no such buffer field in this program",
                notes=(f"write {fields}; buffers: {known}",),
            ))
        if spec.dimensions is not None and int(rest) >= spec.dimensions:
            raise HardboiledError(Diagnostic(
                "error", f"--param {name}: buffer '{buffer}' has {spec.dimensions} dimensions",
            ))
        if not INT32_RANGE[0] <= value <= INT32_RANGE[1]:
            raise HardboiledError(Diagnostic("error", f"--param {name}={value}: Halide buffer fields are int32"))


def _needs_own_size(spec: BufferSpec, d: int, known: dict[str, int]) -> bool:
    """An output dimension whose required region is stated in terms of the
    output's own (unknown) size, or not at all."""
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


ORIGINAL, REWRITTEN = 1, 2
"""Which program a run is, in the garbage its unwritten memory holds: the
two programs get different garbage, so that a program that reads memory
it never wrote (an accumulator nobody zeroed) computes something else."""


def poison_seed(seed: int, program: int) -> int:
    return 2 * seed + program


def run_program(stmt: ir.Stmt, buffers: dict[str, BufferT], poison: int | None = None,
                undefined_reads: list[str] | None = None) -> dict[str, BufferT]:
    """``stmt`` run on a copy of ``buffers``; with ``poison``, its own
    allocations start as garbage from that seed, and the reads of memory it
    had not written are appended to ``undefined_reads``."""
    state = copy.deepcopy(buffers)
    interpreter = Interpreter(buffers=state, poison_seed=poison)
    interpreter.run(stmt)
    if undefined_reads is not None:
        undefined_reads.extend(interpreter.undefined_reads)
    return state


def tolerance(t: ir.Type, reference: np.ndarray) -> float:
    """How far a rewritten result may be from the original's when the
    error model (error_bound.py) cannot bound it per element.

    Integers must match exactly. Floats are sums of products accumulated in
    float32 (bf16/f16 inputs) or in the output type, in whatever order the
    accelerator adds them: allow 1e-4 of the largest magnitude for float32
    and wider, 1e-2 for 16-bit results.
    """
    if not t.is_float:
        return 0.0
    # Infinities and NaNs in the reference must be matched exactly (compare
    # does that); letting them into the scale would make the tolerance
    # infinite or NaN and accept anything.
    magnitudes = np.abs(reference.astype(np.float64))
    magnitudes = magnitudes[np.isfinite(magnitudes)]
    scale = float(magnitudes.max()) if magnitudes.size else 0.0
    relative = 1e-2 if t.bits == 16 else 1e-4
    return relative * max(scale, 1.0)


def error_bounds(original: ir.Stmt, rewritten: ir.Stmt, buffers: dict[str, BufferT],
                 outputs: set[str], poison: int | None = None) -> dict[str, np.ndarray] | None:
    """Per element of each float output, a bound on how far the original's
    value is from the exact one where the rewritten program computes it
    another way (error_bound.py); None where the error model does not cover
    the program."""
    floats = {name for name in outputs if buffers[name].type.is_float}
    if not floats:
        return {}
    try:
        program = bound_program(original, floats, differing_buffers(original, rewritten))
    except NoErrorBound:
        return None
    extra = {name + ERROR: Pointer(np.zeros(buffers[name].data.size, np.float64), 0, name + ERROR)
             for name in floats}
    try:
        Interpreter(params=dict(extra), buffers=copy.deepcopy(buffers), poison_seed=poison).run(program)
    except ResourceLimitError:
        raise
    except InterpreterError:
        return None
    return {name: extra[name + ERROR].array for name in floats}


def compare(name: str, t: ir.Type, expected: np.ndarray, actual: np.ndarray,
            error_bound: np.ndarray | None = None) -> BufferComparison:
    """Compare an output; with ``error_bound`` (per element, from the
    original), two programs within it of the exact result may differ by
    twice it; without, by the global ``tolerance``."""
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    same = (e == a) | (np.isnan(e) & np.isnan(a))  # equal infinities too
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(e - a))
    diff = np.where(np.isnan(diff), np.inf, diff)  # NaN against a number
    per_element = error_bound is not None and t.is_float
    unproven = 0
    tol: np.ndarray | float
    if per_element:
        assert error_bound is not None
        tol = np.where(np.isnan(error_bound), np.inf, 2.0 * error_bound)
        # A bound wider than every value the output holds (or infinite)
        # says nothing about the element: any value would pass (a geometric
        # recurrence, heavy cancellation, a -1e30 mask kept in the sum).
        finite = np.abs(e[np.isfinite(e)])
        unproven = int(np.count_nonzero(~(tol <= (finite.max() if finite.size else 0.0))))
    else:
        tol = tolerance(t, expected)
    bad = np.nonzero(diff > tol)[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.abs(e) > 0, diff / np.abs(e), np.where(diff > 0, np.inf, 0.0))
    first = int(bad[0]) if bad.size else None
    tolerances = np.broadcast_to(np.asarray(tol, dtype=np.float64), e.shape)
    return BufferComparison(
        name, int(e.size), float(diff.max()) if diff.size else 0.0, float(rel.max()) if rel.size else 0.0,
        float(tolerances.max()) if tolerances.size else 0.0, first,
        float(e[first]) if first is not None else None, float(a[first]) if first is not None else None,
        per_element=per_element, tolerance_there=float(tolerances[first]) if first is not None else None,
        unproven=unproven,
    )


def compare_outputs(buffers: dict[str, BufferT], outputs: set[str], expected: dict[str, BufferT],
                    actual: dict[str, BufferT], bounds: dict[str, np.ndarray] | None) -> tuple[BufferComparison, ...]:
    comparisons = []
    for name in sorted(outputs):
        c = compare(name, buffers[name].type, expected[name].data, actual[name].data,
                    None if bounds is None else bounds.get(name))
        if c.first_mismatch is not None:
            c = dataclasses.replace(c, coordinates=_coordinates(buffers[name], c.first_mismatch))
        comparisons.append(c)
    return tuple(comparisons)


def run_original(original: ir.Stmt, params: dict[str, int], seed: int,
                 inputs: Mapping[str, np.ndarray] | None = None, shape: Shape = SHAPES[0],
                 ) -> tuple[dict[str, BufferT], set[str], dict[str, BufferT]]:
    """Buffers on which the original program runs, its outputs, and what it
    computes. Output sizes the dump leaves open are chosen so that the
    program's own asserts hold (a 32-row tile needs 32 rows); when none of
    the defaults does, the error names the --param to pass."""
    for extent in DEFAULT_OUTPUT_EXTENTS:
        defaulted: list[str] = []
        buffers, outputs = make_buffers(original, params, seed, extent, defaulted, inputs, shape)
        if not outputs:
            raise HardboiledError(Diagnostic("error", "the original program has no output buffer to compare"))
        try:
            return buffers, outputs, run_program(original, buffers, poison_seed(seed, ORIGINAL))
        except ProgramAssertFailed as exc:
            if not defaulted:
                raise
            failure = exc
    sizes = ", ".join(f"{name}={DEFAULT_OUTPUT_EXTENTS[-1]}" for name in defaulted)
    raise HardboiledError(Diagnostic(
        "error", f"the original program fails its own checks on every size tried: {failure.diagnostic.message}",
        notes=(f"the dump does not fix {', '.join(defaulted)}; tried extents "
               f"{', '.join(map(str, DEFAULT_OUTPUT_EXTENTS))} (last: {sizes})",
               "pass sizes that satisfy the pipeline's asserts with --param, e.g. --param "
               f"{defaulted[0]}=N"),
    ))


def verify(original: ir.Stmt, rewritten: ir.Stmt, *, seed: int = DEFAULT_SEED,
           params: dict[str, int] | None = None, timeout_s: float = INTERPRETER_TIMEOUT_S,
           inputs: Mapping[str, np.ndarray] | None = None,
           shapes: tuple[Shape, ...] = SHAPES) -> VerificationResult:
    """Run both programs on the same random inputs (``inputs`` gives some of
    them instead) laid out in each of ``shapes`` the original's asserts
    accept, within ``timeout_s`` in all, and compare their outputs: the
    first result that is not equal, or the last one, naming the shapes run."""
    ran: list[str] = []
    result: VerificationResult | None = None
    refusal: ProgramAssertFailed | HardboiledError | None = None
    with time_limit(timeout_s):
        for shape in shapes:
            try:
                buffers, outputs, expected = run_original(original, params or {}, seed, inputs, shape)
            except (ProgramAssertFailed, HardboiledError) as exc:
                if shape is shapes[0] or isinstance(exc, ResourceLimitError):
                    raise
                refusal = exc  # the program's asserts refuse this layout: the others still run
                continue
            ran.append(shape.name)
            result = dataclasses.replace(_compared(original, rewritten, seed, buffers, outputs, expected),
                                         shapes=tuple(ran))
            if not result.ok:
                return result
    assert result is not None, refusal
    return result


def _compared(original: ir.Stmt, rewritten: ir.Stmt, seed: int, buffers: dict[str, BufferT], outputs: set[str],
              expected: dict[str, BufferT]) -> VerificationResult:
    """The rewritten program run on ``buffers`` and compared with what the
    original computed there."""
    undefined: list[str] = []
    try:
        actual = run_program(rewritten, buffers, poison_seed(seed, REWRITTEN), undefined)
    except ResourceLimitError:
        raise  # the interpreter's limit, not a wrong result
    except InterpreterError as exc:
        return VerificationResult(seed, (), exc.diagnostic.message)
    bounds = error_bounds(original, rewritten, buffers, outputs, poison_seed(seed, ORIGINAL))
    return VerificationResult(seed, compare_outputs(buffers, outputs, expected, actual, bounds),
                              undefined_reads=tuple(undefined))


def _coordinates(buf: BufferT, flat: int) -> tuple[int, ...] | None:
    if any(s <= 0 for s in buf.strides):
        return None
    coords = [0] * len(buf.strides)
    rest = flat
    for d in sorted(range(len(buf.strides)), key=lambda d: -buf.strides[d]):
        coords[d], rest = divmod(rest, buf.strides[d])
    return tuple(m + c for m, c in zip(buf.mins, coords))


def checked(result: VerificationResult, accept_unproven: bool = False) -> str:
    """The result's summary, if it proves the programs equal (or the caller
    accepts unproven elements); otherwise the error to raise: a mismatch
    (exit 5), or elements nothing was proven about (exit 7)."""
    if not result.ok:
        raise mismatch_error(result)
    if result.unproven and not accept_unproven:
        raise VerificationUnproven(Diagnostic(
            "error", f"verification proves nothing about {result.unproven} output elements: their error bounds "
            "are wider than the output's range, so any value there would have passed",
            notes=(result.summary(),
                   "the bound grows with the rounding the original program does (16-bit accumulations, "
                   "cancellation, a recurrence) on the random inputs; inputs of the kind the pipeline "
                   "really sees tighten it",
                   "--accept-unproven accepts the result as it is"),
        ))
    return result.summary() + (" (unproven elements accepted)" if result.unproven else "")


def mismatch_error(result: VerificationResult) -> VerificationMismatch:
    notes = [result.summary()]
    for c in result.outputs:
        if c.first_mismatch is not None:
            where = list(c.coordinates) if c.coordinates is not None else f"element {c.first_mismatch}"
            notes.append(f"{c.name}{where}: expected {c.expected!r}, got {c.actual!r} "
                         f"(tolerance there {c.tolerance_there:.3g})")
    if len(result.shapes) > 1:
        notes.append(f"in the buffer layout '{result.shapes[-1]}' (the program's free mins and strides laid out "
                     "so); the layouts before it agreed")
    if result.undefined_reads:
        notes.append("the rewritten program reads memory of its own before writing it, which holds garbage: "
                     + ", ".join(result.undefined_reads[:4]))
    notes.append(f"replay with --seed {result.seed}")
    return VerificationMismatch(Diagnostic(
        "error", "the rewritten program computes different results from the original", notes=tuple(notes),
    ))
