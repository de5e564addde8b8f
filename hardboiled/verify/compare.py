"""Translation validation: run the original and the rewritten IR on the same
random inputs and compare every output buffer.

Buffers are the pipeline's ``X.buffer`` arguments. Their element types,
dimensions and the region the program touches come from the checks Halide
put in the dump (type asserts, ``halide_error_access_out_of_bounds``,
``halide_error_constraint_violated``); ``--param`` fixes any extent, min or
stride the dump leaves symbolic. Inputs are seeded random data (inputs.py
makes them); the seed is reported so that a mismatch can be replayed.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hardboiled import ir
from hardboiled.ir.buffers import scalar_params
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError
from hardboiled.support.memo import by_identity
from hardboiled.verify.divergence import Divergence, divergence
from hardboiled.verify.error_bound import ERROR, NoErrorBound, bound_program
from hardboiled.verify.inputs import (
    DEFAULT_OUTPUT_EXTENTS,
    SHAPES,
    Shape,
    make_buffers,
    scalar_draws,
    split_params,
)
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


class _SizesRefused(HardboiledError):
    """The original program refuses every output size tried."""


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
    scalars: tuple[tuple[str, float], ...] = ()
    """The values the program's scalar params had (given or drawn)."""

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
        scalars = f" (params {', '.join(f'{n}={v:.6g}' for n, v in self.scalars)})" if self.scalars else ""
        return f"verify (seed {self.seed}): " + "; ".join(parts) + shapes + scalars


ORIGINAL, REWRITTEN = 1, 2
"""Which program a run is, in the garbage its unwritten memory holds: the
two programs get different garbage, so that a program that reads memory
it never wrote (an accumulator nobody zeroed) computes something else."""


def poison_seed(seed: int, program: int) -> int:
    return 2 * seed + program


def run_program(stmt: ir.Stmt, buffers: dict[str, BufferT], poison: int | None = None,
                undefined_reads: list[str] | None = None,
                scalars: Mapping[str, np.ndarray] | None = None) -> dict[str, BufferT]:
    """``stmt`` run on a copy of ``buffers`` (and the values of its scalar
    params); with ``poison``, its own allocations start as garbage from
    that seed, and the reads of memory it had not written are appended to
    ``undefined_reads``."""
    state = copy.deepcopy(buffers)
    interpreter = Interpreter(params=dict(scalars or {}), buffers=state, poison_seed=poison)
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
                 outputs: set[str], poison: int | None = None,
                 scalars: Mapping[str, np.ndarray] | None = None) -> dict[str, np.ndarray] | None:
    """Per element of each float output, a bound on how far the original's
    value is from the exact one where the rewritten program computes it
    another way (error_bound.py); None where the error model does not cover
    the program."""
    if not any(buffers[name].type.is_float for name in outputs):
        return {}
    try:
        bounded = _bounded_run(original, buffers, outputs, poison, scalars or {}, divergence(original, rewritten))
    except ProgramAssertFailed:
        return None
    return None if bounded is None else bounded[1]


def _run_bounded(original: ir.Stmt, buffers: dict[str, BufferT], outputs: set[str], poison: int,
                 scalars: Mapping[str, np.ndarray], differing: Divergence,
                 ) -> tuple[dict[str, BufferT], dict[str, np.ndarray] | None]:
    """The original run once as its bound program (error_bound.py: the same
    stores, and X.err beside them), which computes what the original does
    and ``error_bounds``' answer together: (the buffers after the run, the
    bounds). Where the model does not cover the program, or its bound
    program cannot run, the original runs alone and the bounds are None."""
    bounded = _bounded_run(original, buffers, outputs, poison, scalars, differing)
    if bounded is None:
        return run_program(original, buffers, poison, scalars=scalars), None
    return bounded


@by_identity(size=4, trees=2)
def _bound_program(original: ir.Stmt, differing: Divergence, floats: frozenset[str]) -> ir.Stmt | None:
    """``bound_program``, or None where the model does not cover the
    program: made once for every layout a verification runs (the same
    program object each time, whose loops' facts the interpreter keeps)."""
    try:
        return bound_program(original, set(floats), differing)
    except NoErrorBound:
        return None


def _bounded_run(original: ir.Stmt, buffers: dict[str, BufferT], outputs: set[str], poison: int | None,
                 scalars: Mapping[str, np.ndarray], differing: Divergence,
                 ) -> tuple[dict[str, BufferT], dict[str, np.ndarray]] | None:
    """The bound program run on a copy of ``buffers``: (the buffers after
    it, each float output's X.err), or None where the model does not cover
    the program or the bound program cannot run. The original's own
    refusal of the buffers (an assert) and the interpreter's limit raise."""
    floats = frozenset(name for name in outputs if buffers[name].type.is_float)
    program = _bound_program(original, differing, floats) if floats else original
    if program is None:
        return None
    extra = {name + ERROR: Pointer(np.zeros(buffers[name].data.size, np.float64), 0, name + ERROR)
             for name in floats}
    state = copy.deepcopy(buffers)
    try:
        Interpreter(params={**scalars, **extra}, buffers=state, poison_seed=poison).run(program)
    except (ProgramAssertFailed, ResourceLimitError):
        raise
    except InterpreterError:
        return None
    return state, {name: extra[name + ERROR].array for name in floats}


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


@dataclass(frozen=True)
class OriginalRun:
    """What the original program ran on and computed: its buffers (inputs
    and outputs as they were before the run), which are outputs, their
    contents after it, and the values its scalar params had."""

    buffers: dict[str, BufferT]
    outputs: set[str]
    expected: dict[str, BufferT]
    scalars: dict[str, np.ndarray]
    bounds: dict[str, np.ndarray] | None = None
    """``error_bounds``' answer, when the run that computed ``expected``
    was the bound program (``bounded``)."""
    bounded: bool = False


def run_original(original: ir.Stmt, params: Mapping[str, float], seed: int,
                 inputs: Mapping[str, np.ndarray] | None = None, shape: Shape = SHAPES[0],
                 ) -> tuple[dict[str, BufferT], set[str], dict[str, BufferT]]:
    """``run_original_program``'s buffers, outputs and expected contents."""
    run = run_original_program(original, params, seed, inputs, shape)
    return run.buffers, run.outputs, run.expected


def run_original_program(original: ir.Stmt, params: Mapping[str, float], seed: int,
                         inputs: Mapping[str, np.ndarray] | None = None, shape: Shape = SHAPES[0],
                         differing: Divergence | None = None) -> OriginalRun:
    """The original program run on random buffers. Its scalar params take
    their --param values; those not given are drawn (``SCALAR_DRAWS`` tries
    from the seed) until the program passes its own asserts with them.
    With ``differing`` (the buffers a rewrite computes another way), the
    run also bounds the original's error (``error_bounds``, in the same run)."""
    scalars = scalar_params(original)
    fields, given = split_params(params, scalars)
    failure: ProgramAssertFailed | _SizesRefused | None = None
    for draw in scalar_draws(scalars, given, seed):
        try:
            values = {name: np.array([value], dtype=dtype_of(scalars[name])) for name, value in draw.items()}
            return _run_with_sizes(original, {**fields, **draw}, seed, inputs, shape, values, differing)
        except (ProgramAssertFailed, _SizesRefused) as exc:
            if len(draw) == len(given):  # nothing drawn: no other values to try
                raise
            failure = exc
    assert failure is not None
    drawn = sorted(set(scalars) - set(given))
    raise HardboiledError(Diagnostic(
        "error", f"the original program fails its own checks with every value tried for {', '.join(drawn)}: "
        f"{failure.diagnostic.message}",
        notes=(f"pass the values it needs with --param, e.g. --param {drawn[0]}=VALUE",),
    ))


def _run_with_sizes(original: ir.Stmt, params: dict[str, float], seed: int,
                    inputs: Mapping[str, np.ndarray] | None, shape: Shape,
                    scalars: dict[str, np.ndarray], differing: Divergence | None) -> OriginalRun:
    """The original run once buffers are sized: output sizes the dump leaves
    open are chosen so that its asserts hold (a 32-row tile needs 32 rows);
    when none of the defaults does, the error names the --param to pass."""
    fields = {name: int(value) for name, value in params.items() if name not in scalars}
    integers = {name: int(value.item()) for name, value in scalars.items() if not value.dtype.kind == "f"}
    for extent in DEFAULT_OUTPUT_EXTENTS:
        defaulted: list[str] = []
        buffers, outputs = make_buffers(original, fields, seed, extent, defaulted, inputs, shape, integers)
        if not outputs:
            raise HardboiledError(Diagnostic("error", "the original program has no output buffer to compare"))
        try:
            if differing is None:
                expected = run_program(original, buffers, poison_seed(seed, ORIGINAL), scalars=scalars)
                return OriginalRun(buffers, outputs, expected, scalars)
            expected, bounds = _run_bounded(original, buffers, outputs, poison_seed(seed, ORIGINAL), scalars,
                                            differing)
            return OriginalRun(buffers, outputs, expected, scalars, bounds, bounded=True)
        except ProgramAssertFailed as exc:
            if not defaulted:
                raise ProgramAssertFailed(dataclasses.replace(
                    exc.diagnostic, message="the original program fails its own checks on the sizes the dump "
                    f"fixes: {exc.diagnostic.message.removeprefix('assertion failed in the program: ')}",
                    notes=(*exc.diagnostic.notes, "its checks may contradict each other: a buffer constrained "
                           "smaller than the region the schedule reads (a GuardWithIf or RoundUp tail past a "
                           "bound() input?) fails the same way in Halide"))) from None
            failure = exc
    sizes = ", ".join(f"{name}={DEFAULT_OUTPUT_EXTENTS[-1]}" for name in defaulted)
    raise _SizesRefused(Diagnostic(
        "error", f"the original program fails its own checks on every size tried: {failure.diagnostic.message}",
        notes=(f"the dump does not fix {', '.join(defaulted)}; tried extents "
               f"{', '.join(map(str, DEFAULT_OUTPUT_EXTENTS))} (last: {sizes})",
               "pass sizes that satisfy the pipeline's asserts with --param, e.g. --param "
               f"{defaulted[0]}=N"),
    ))


_last_runs: tuple[tuple[tuple[object, ...], OriginalRun], ...] = ()
"""The last runs of ``original_run_for`` (one per shape of a
verification): their keys (the objects themselves, so that no other
object can take their ids) and the runs."""


def original_run_for(original: ir.Stmt, differing: Divergence, params: Mapping[str, float], seed: int,
                     inputs: Mapping[str, np.ndarray] | None, shape: Shape = SHAPES[0]) -> OriginalRun:
    """``run_original_program`` bounding the error where ``differing``
    says, run once for the same question: a compile verifies, then runs the
    generated C (verify/run.py) and compares it with the same run of the
    original. The interpreter is deterministic (same program, buffers and
    seed, same answer), and the consumers copy what they change."""
    global _last_runs
    key = (original, inputs, differing, tuple(sorted(params.items())), seed, shape)
    for last, run in _last_runs:
        if last[0] is original and last[1] is inputs and last[2:] == key[2:]:
            return run
    run = run_original_program(original, params, seed, inputs, shape, differing)
    _last_runs = (*_last_runs[1 - len(SHAPES):], (key, run))
    return run


def verify(original: ir.Stmt, rewritten: ir.Stmt, *, seed: int = DEFAULT_SEED,
           params: Mapping[str, float] | None = None, timeout_s: float = INTERPRETER_TIMEOUT_S,
           inputs: Mapping[str, np.ndarray] | None = None,
           shapes: tuple[Shape, ...] = SHAPES) -> VerificationResult:
    """Run both programs on the same random inputs (``inputs`` gives some of
    them instead) laid out in each of ``shapes`` the original's asserts
    accept, within ``timeout_s`` in all, and compare their outputs: the
    first result that is not equal, or the last one, naming the shapes run."""
    ran: list[str] = []
    result: VerificationResult | None = None
    refusal: ProgramAssertFailed | HardboiledError | None = None
    differing = divergence(original, rewritten)
    with time_limit(timeout_s):
        for shape in shapes:
            try:
                run = original_run_for(original, differing, params or {}, seed, inputs, shape)
            except (ProgramAssertFailed, HardboiledError) as exc:
                if shape is shapes[0] or isinstance(exc, ResourceLimitError):
                    raise
                refusal = exc  # the program's asserts refuse this layout: the others still run
                continue
            ran.append(shape.name)
            result = dataclasses.replace(_compared(original, rewritten, seed, run), shapes=tuple(ran))
            if not result.ok:
                return result
    assert result is not None, refusal
    return result


def _compared(original: ir.Stmt, rewritten: ir.Stmt, seed: int, run: OriginalRun) -> VerificationResult:
    """The rewritten program run where the original ran and compared with
    what the original computed there."""
    undefined: list[str] = []
    try:
        actual = run_program(rewritten, run.buffers, poison_seed(seed, REWRITTEN), undefined, run.scalars)
    except ResourceLimitError:
        raise  # the interpreter's limit, not a wrong result
    except InterpreterError as exc:
        return VerificationResult(seed, (), exc.diagnostic.message)
    bounds = run.bounds if run.bounded else error_bounds(original, rewritten, run.buffers, run.outputs,
                                                         poison_seed(seed, ORIGINAL), run.scalars)
    return VerificationResult(seed, compare_outputs(run.buffers, run.outputs, run.expected, actual, bounds),
                              undefined_reads=tuple(undefined), scalars=tuple(sorted(
                                  (name, value.item()) for name, value in run.scalars.items())))


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
