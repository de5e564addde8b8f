"""Every Halide call hardboiled knows, in one table.

Halide's IR spells many operations as calls: hints that stand for their
first argument (``likely``), math on floats (``sqrt_f32``), bit operations,
the fields of a ``halide_buffer_t`` (``_halide_buffer_get_min``), calls into
Halide's runtime. The reference interpreter, the C and CUDA emitters and the
error model must agree on what each one means, and on which ones exist: an
operation one of them knows and another does not is a program that verifies
and then fails to build, or builds and cannot be verified. So each call is
described once, here, and every consumer reads its entry:

* the interpreter (verify/calls.py) computes ``evaluation``, with the numpy
  function ``numpy`` names where it needs one; the ir package is the bottom
  layer and does not import numpy (the command line's fast paths import it);
* the C emitters (codegen/c_family.py) write ``c``, or the IR the call is
  ``equivalent`` to; the CUDA host wrapper (codegen/cuda.py) writes ``cuda``
  where that differs;
* the error model (verify/error_bound.py) bounds a float call by ``error``.

A consumer with no spelling or rule for an entry refuses the call as it
refuses one the table does not hold. Entries a consumer singles out are
named where they are defined (``LIKELY := Operation(...)``).

Tensor instructions (AMX ``tile_*``, ``wmma.*``) are not here: they are
described by hardboiled/targets/, with their shapes and types.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from hardboiled.support.memo import by_identity

from .nodes import Binary, BinOp, Broadcast, Call, Expr, IntImm, Select


class Kind(enum.Enum):
    """What sort of operation a call is."""

    PASS_THROUGH = "pass-through"
    """A hint or promise for Halide's compiler: its value is its first argument."""
    FLOAT_MATH = "float math"
    """An elementwise function of a float; ``_f32``/``_f64`` is the argument's width."""
    BITWISE = "bitwise"
    """Bit operations and shifts of integers."""
    ARITHMETIC = "arithmetic"
    """Arithmetic Halide writes as a call rather than an operator (abs, widening_mul)."""
    INTRINSIC = "intrinsic"
    """An integer operation Halide's pattern matching writes as a call
    (absd, halving_add, saturating_cast, popcount, ...), defined by exact
    arithmetic: it stands for the IR intrinsics.py builds for it."""
    PREDICATE = "predicate"
    """A test of a float (is_nan_f32): a bool per lane."""
    STRICT_FLOAT = "strict float"
    """What Halide lowers ``strict_float(e)`` to: operators no compiler may
    reassociate or contract (the interpreter never does either; the generated
    C is built with -ffp-contract=off)."""
    RUNTIME_NO_OP = "runtime no-op"
    """A call into Halide's runtime whose effect neither the interpreter nor
    generated code has (printing, sanitizer notes, semaphores of a serial
    run): it evaluates to 0."""
    DEVICE_RUNTIME = "device runtime"
    """Halide's runtime moving buffers between host and GPU. The interpreter
    has one memory, and the CUDA wrapper is given device pointers and
    allocates device memory itself: both answer 0 (success). C for the CPU
    has no device."""
    BUFFER_QUERY = "buffer query"
    """A field of a ``halide_buffer_t`` argument (``X.buffer``)."""
    BUFFER_DESCRIPTION = "buffer description"
    """A ``halide_buffer_t`` the pipeline builds for Halide's runtime to
    describe memory of its own (a GPU stage computed at root, an extern
    stage's argument)."""
    STRUCTURAL = "structural"
    """Control and storage Halide spells as calls: selects, sequencing,
    stack memory, structs."""
    BARRIER = "barrier"
    """A barrier between the GPU threads of a kernel, placed by the GPU
    mapping (legalize/barriers.py): the threads wait for each other and see
    each other's shared-memory writes. Its argument is the memory fence, 2
    for shared memory, as Halide writes ``gpu_thread_barrier``. The
    interpreter runs the threads one after the other, so it waits for nobody
    (0); only kernels hold one, written as ``cuda``."""


class Evaluation(enum.Enum):
    """How the reference interpreter computes a call: named here, mapped to
    numpy code in verify/calls.py (this package does not import numpy).
    Arguments are evaluated first, in order, unless the name says otherwise."""

    FIRST_ARGUMENT = "the first argument's value"
    SECOND_ARGUMENT = "the second argument's value"
    EQUIVALENT_IR = "the IR ``equivalent`` names, evaluated instead of the call"
    FLOAT_FUNCTION = "the numpy function ``numpy`` of the argument in float64, rounded once to the call's type"
    INTEGER_FUNCTION = "the numpy function ``numpy`` of the arguments as they are"
    SHIFT = "the numpy function ``numpy`` of the value and the shift amount converted to the value's type"
    MAGNITUDE = "the magnitude, computed in float64 or int64 and converted to the call's type"
    WIDENING_PRODUCT = "the product of the arguments converted to the call's (wider) type: exact"
    PRODUCT_THEN_SUM = "a * b, then + c, each rounded as the interpreter's operators round"
    ZERO = "an int32 zero"
    ZERO_IGNORING_ARGUMENTS = "zero in every lane of the call's type; the arguments are not evaluated"
    FALSE = "false (a bool)"
    STRUCT = "the arguments as int64 integers, in order"
    STACK_BYTES = "a new zeroed memory of that many bytes"
    BUFFER_HOST = "the buffer's memory"
    BUFFER_TYPE = "the buffer's element type, packed as halide_type_t"
    BUFFER_DIMENSIONS = "the buffer's number of dimensions"
    BUFFER_MIN = "the min of dimension args[1]"
    BUFFER_EXTENT = "the extent of dimension args[1]"
    BUFFER_STRIDE = "the stride of dimension args[1]"
    BUFFER_DESCRIPTION = "a buffer of the given type and shape over the given host memory"


class Equivalent(enum.Enum):
    """The IR node a call stands for (``equivalent_ir`` builds it): a
    consumer that knows the node needs no rule of its own for the call."""

    FIRST_ARGUMENT = "its first argument"
    OPERATOR = "a Binary of ``operator``"
    SELECT = "a Select of its three arguments"
    SELECTS = "nested Selects: mux(index, v0, ..., vn) is v_k for the first k with index <= k, vn past the end"
    LOWERED = "the plain IR its exact definition is (ir/intrinsics.py builds it)"


class ErrorRule(enum.Enum):
    """How the error model bounds the rounding error of a float call. An
    entry with none raises NoErrorBound there, and verification falls back to
    its global tolerance; integer and handle values never ask, the model
    takes every integer as exact."""

    PASSES_ERROR = "its first argument's error, unchanged (|x| is as far from exact as x)"
    EQUIVALENT = "the bound of the IR it stands for (``equivalent``)"
    SMOOTH = "err(x) * (|f(x)| + 1), plus the unit roundoff of its type times |f(x)|"
    EXPONENTIAL = "exp(x + err(x)) - exp(x) (exp rises and is convex), plus the rounding of exp(x)"
    STEP = "exact, unless x's error may cross a step: then x's error plus one"


@dataclass(frozen=True, slots=True)
class Operation:
    """One Halide call, and what each consumer of the IR does with it."""

    name: str
    """As Halide prints it."""
    kind: Kind
    arity: int | None
    """How many arguments Halide gives it; None: any number (mux, make_struct)."""
    evaluation: Evaluation | None
    """How the interpreter computes it; None: the interpreter refuses it."""
    numpy: str | None = None
    """The numpy function ``evaluation`` applies, by name (``"sqrt"``)."""
    c: str | None = None
    """How the C emitters write it: a ``str.format`` template over the C text
    of the arguments (``{0}``, ``{1}``), each generated when the template
    first names it, so that one it leaves out is not generated; a ``"; "``
    ends a statement emitted before the value. A FLOAT_MATH template is
    applied to each lane; a vector RUNTIME_NO_OP is a vector of zeros; a
    BUFFER_QUERY template is over the buffer instead: ``{buffer}`` (its C
    name), ``{dimension}`` (args[1], a constant), ``{dimensions}``,
    ``{packed_type}``. None (and no ``equivalent``): C refuses the call."""
    cuda: str | None = None
    """The CUDA host wrapper's template where it differs from ``c`` (inside
    a kernel, ``c`` holds); a BARRIER's spelling in a kernel."""
    equivalent: Equivalent | None = None
    """The IR the call stands for, which the C emitters write instead."""
    operator: BinOp | None = None
    """The operator of a STRICT_FLOAT call (``Equivalent.OPERATOR``)."""
    error: ErrorRule | None = None
    """How the error model bounds it; None: it has no rule (see ``ErrorRule``)."""
    typed_as_first: bool = False
    """Where Halide prints it without a type, the call has its first
    argument's type (popcount(x), lerp(a, b, w)); the parser reads it so."""

    def __post_init__(self) -> None:
        needs_numpy = (Evaluation.FLOAT_FUNCTION, Evaluation.INTEGER_FUNCTION, Evaluation.SHIFT)
        assert (self.numpy is not None) == (self.evaluation in needs_numpy), self.name
        assert (self.operator is not None) == (self.equivalent is Equivalent.OPERATOR), self.name
        uses_equivalent = self.evaluation is Evaluation.EQUIVALENT_IR or self.error is ErrorRule.EQUIVALENT
        assert self.equivalent is not None or not uses_equivalent, self.name

    @property
    def in_c(self) -> bool:
        """Whether the C emitters write it (inside CUDA kernels too)."""
        return self.c is not None or self.equivalent is not None


# The rows of one kind share most of their description:


def _hint(name: str, arity: int) -> Operation:
    # The interpreter evaluates every argument (promise_clamped's bounds too)
    # before taking the first; C and the error model look at the first only.
    return Operation(name, Kind.PASS_THROUGH, arity, Evaluation.FIRST_ARGUMENT, equivalent=Equivalent.FIRST_ARGUMENT,
                     error=ErrorRule.PASSES_ERROR)


def _strict(name: str, operator: BinOp) -> Operation:
    return Operation(name, Kind.STRICT_FLOAT, 2, Evaluation.EQUIVALENT_IR, equivalent=Equivalent.OPERATOR,
                     operator=operator, error=ErrorRule.EQUIVALENT)


def _math(name: str, numpy: str, c: str, error: ErrorRule | None, arity: int = 1) -> Operation:
    return Operation(name, Kind.FLOAT_MATH, arity, Evaluation.FLOAT_FUNCTION, numpy=numpy, c=c, error=error)


def _maths(name: str, numpy: str, c: str, error: ErrorRule | None = None, arity: int = 1) -> tuple[Operation, ...]:
    """A math function for float32, float64 and float16 (Halide computes the
    last in float32 and rounds the result): ``c`` names the float version,
    ``cf`` the float64 one with the same arguments."""
    f64 = c.replace("f(", "(", 1)
    return (_math(f"{name}_f32", numpy, c, error, arity), _math(f"{name}_f64", numpy, f64, error, arity),
            _math(f"{name}_f16", numpy, c, error, arity))


def _predicate(name: str, numpy: str, c: str) -> tuple[Operation, ...]:
    return tuple(Operation(f"{name}_{suffix}", Kind.PREDICATE, 1, Evaluation.INTEGER_FUNCTION, numpy=numpy, c=c)
                 for suffix in ("f32", "f64", "f16"))


def _intrinsic(name: str, arity: int) -> Operation:
    return Operation(name, Kind.INTRINSIC, arity, Evaluation.EQUIVALENT_IR, equivalent=Equivalent.LOWERED,
                     error=ErrorRule.EQUIVALENT, typed_as_first=True)


def _no_op(name: str, arity: int, c: str | None = "0") -> Operation:
    return Operation(name, Kind.RUNTIME_NO_OP, arity, Evaluation.ZERO, c=c)


def _device(name: str, arity: int) -> Operation:
    return Operation(name, Kind.DEVICE_RUNTIME, arity, Evaluation.ZERO, cuda="0")


def _query(name: str, arity: int, evaluation: Evaluation, c: str) -> Operation:
    return Operation(name, Kind.BUFFER_QUERY, arity, evaluation, c=c)


def _bitwise(name: str, arity: int, numpy: str, c: str,
             evaluation: Evaluation = Evaluation.INTEGER_FUNCTION) -> Operation:
    return Operation(name, Kind.BITWISE, arity, evaluation, numpy=numpy, c=c, typed_as_first=True)


_SMOOTH, _STEP = ErrorRule.SMOOTH, ErrorRule.STEP
_BUFFER_FLAG = "((uint8_t)0)"
"""A host or device dirty flag, or a bounds query: never set in generated code."""

OPERATIONS: tuple[Operation, ...] = (
    LIKELY := _hint("likely", 1),
    LIKELY_IF_INNERMOST := _hint("likely_if_innermost", 1),
    _hint("promise_clamped", 3),
    _hint("unsafe_promise_clamped", 3),
    # A marker that forbids float rewrites: the interpreter makes none, and C
    # without -ffast-math is strict already.
    _hint("strict_float", 1),
    # The GPU mapping's mark on a stored vector whose lanes the threads of one
    # Halide thread compute and write together (legalize/lane_spreading.py).
    SPREAD_OVER_THREADS := _hint("spread_over_threads", 1),

    _math("sqrt_f32", "sqrt", "sqrtf({0})", None),
    _math("sqrt_f64", "sqrt", "sqrt({0})", None),
    _math("sqrt_f16", "sqrt", "sqrtf({0})", None),
    EXP_F32 := _math("exp_f32", "exp", "expf({0})", ErrorRule.EXPONENTIAL),
    EXP_F64 := _math("exp_f64", "exp", "exp({0})", ErrorRule.EXPONENTIAL),
    _math("log_f32", "log", "logf({0})", None),
    _math("log_f64", "log", "log({0})", None),
    _math("floor_f32", "floor", "floorf({0})", _STEP),
    _math("floor_f64", "floor", "floor({0})", _STEP),
    _math("ceil_f32", "ceil", "ceilf({0})", _STEP),
    _math("ceil_f64", "ceil", "ceil({0})", _STEP),
    _math("round_f32", "rint", "nearbyintf({0})", _STEP),  # to nearest, ties to even
    # Halide 21's own round intrinsic, of any float type (C computes it in double, exactly).
    _math("round", "rint", "nearbyint({0})", _STEP),
    _math("trunc_f32", "trunc", "truncf({0})", _STEP),
    _math("sin_f32", "sin", "sinf({0})", _SMOOTH),
    _math("sin_f64", "sin", "sin({0})", _SMOOTH),
    _math("cos_f32", "cos", "cosf({0})", _SMOOTH),
    _math("cos_f64", "cos", "cos({0})", _SMOOTH),
    _math("tan_f32", "tan", "tanf({0})", None),
    _math("tan_f64", "tan", "tan({0})", None),
    _math("tanh_f32", "tanh", "tanhf({0})", _SMOOTH),
    _math("tanh_f64", "tanh", "tanh({0})", _SMOOTH),

    # Written per lane in the call's C type ({ctype}); a left shift of the
    # unsigned type of its width ({utype}), which C defines for every value.
    _bitwise("bitwise_not", 1, "invert", "(({ctype})~{0})"),
    _bitwise("bitwise_and", 2, "bitwise_and", "(({ctype})({0} & {1}))"),
    _bitwise("bitwise_or", 2, "bitwise_or", "(({ctype})({0} | {1}))"),
    _bitwise("bitwise_xor", 2, "bitwise_xor", "(({ctype})({0} ^ {1}))"),
    SHIFT_LEFT := _bitwise("shift_left", 2, "left_shift", "(({ctype})(({utype}){0} << ({1})))", Evaluation.SHIFT),
    SHIFT_RIGHT := _bitwise("shift_right", 2, "right_shift", "(({ctype})({0} >> ({1})))", Evaluation.SHIFT),

    *(_intrinsic(name, arity) for name, arity in (
        ("absd", 2), ("halving_add", 2), ("rounding_halving_add", 2), ("halving_sub", 2),
        ("saturating_add", 2), ("saturating_sub", 2), ("saturating_cast", 1),
        ("widening_add", 2), ("widening_sub", 2), ("widening_shift_left", 2), ("widening_shift_right", 2),
        ("rounding_shift_right", 2), ("rounding_shift_left", 2),
        ("mul_shift_right", 3), ("rounding_mul_shift_right", 3),
        ("div_round_to_zero", 2), ("mod_round_to_zero", 2),
        ("popcount", 1), ("count_leading_zeros", 1), ("count_trailing_zeros", 1), ("lerp", 3))),

    *_maths("acos", "arccos", "acosf({0})"), *_maths("acosh", "arccosh", "acoshf({0})"),
    *_maths("asin", "arcsin", "asinf({0})"), *_maths("asinh", "arcsinh", "asinhf({0})"),
    *_maths("atan", "arctan", "atanf({0})"), *_maths("atanh", "arctanh", "atanhf({0})"),
    *_maths("sinh", "sinh", "sinhf({0})"), *_maths("cosh", "cosh", "coshf({0})"),
    *_maths("atan2", "arctan2", "atan2f({0}, {1})", arity=2), *_maths("pow", "power", "powf({0}, {1})", arity=2),
    # Approximations on the hardware (rcpps, rsqrtps: 12 bits); exact here.
    _math("fast_inverse_f32", "reciprocal", "(1.0f / {0})", None),
    _math("fast_inverse_sqrt_f32", "rsqrt", "(1.0f / sqrtf({0}))", None),
    *_predicate("is_nan", "isnan", "isnan({0})"), *_predicate("is_inf", "isinf", "isinf({0})"),
    *_predicate("is_finite", "isfinite", "isfinite({0})"),

    # A float's magnitude, or a signed integer's as the unsigned type of its
    # width (abs(INT_MIN) does not overflow); ``c`` is the float's.
    ABS := Operation("abs", Kind.ARITHMETIC, 1, Evaluation.MAGNITUDE, c="fabs({0})", error=ErrorRule.PASSES_ERROR),
    # Halide's late form of a product of narrow integers: exact in the wider type.
    WIDENING_MUL := Operation("widening_mul", Kind.ARITHMETIC, 2, Evaluation.WIDENING_PRODUCT),

    _strict("strict_add", BinOp.ADD),
    _strict("strict_sub", BinOp.SUB),
    _strict("strict_mul", BinOp.MUL),
    _strict("strict_div", BinOp.DIV),
    _strict("strict_min", BinOp.MIN),
    _strict("strict_max", BinOp.MAX),
    _strict("strict_lt", BinOp.LT),
    _strict("strict_le", BinOp.LE),
    _strict("strict_eq", BinOp.EQ),
    # a * b + c; neither C nor the error model has a rule for it.
    Operation("strict_fma", Kind.STRICT_FLOAT, 3, Evaluation.PRODUCT_THEN_SUM),

    # What halide_print prints is no part of the result; its text is not built.
    Operation("halide_print", Kind.RUNTIME_NO_OP, 1, Evaluation.ZERO_IGNORING_ARGUMENTS, c="0"),
    _no_op("halide_msan_annotate_memory_is_initialized", 2),
    _no_op("halide_semaphore_init", 2),
    _no_op("halide_semaphore_release", 2),
    _no_op("halide_semaphore_try_acquire", 2),
    # Only ever an assert's message, which is not evaluated: C has no use for it.
    _no_op("halide_error_buffer_argument_is_null", 1, c=None),

    _device("halide_copy_to_device", 2),
    _device("halide_copy_to_host", 1),
    _device("halide_cuda_device_interface", 0),
    _device("halide_device_malloc", 2),
    _device("halide_device_and_host_malloc", 2),
    _device("halide_device_free", 1),
    _device("halide_device_and_host_free", 1),
    _device("_halide_buffer_set_device_dirty", 2),
    _device("_halide_buffer_set_host_dirty", 2),

    _query("_halide_buffer_get_host", 1, Evaluation.BUFFER_HOST, "((void *){buffer})"),
    _query("_halide_buffer_get_type", 1, Evaluation.BUFFER_TYPE, "((uint32_t){packed_type}u)"),
    _query("_halide_buffer_get_dimensions", 1, Evaluation.BUFFER_DIMENSIONS, "{dimensions}"),
    _query("_halide_buffer_get_min", 2, Evaluation.BUFFER_MIN, "{buffer}_min{dimension}"),
    _query("_halide_buffer_get_extent", 2, Evaluation.BUFFER_EXTENT, "{buffer}_extent{dimension}"),
    _query("_halide_buffer_get_stride", 2, Evaluation.BUFFER_STRIDE, "{buffer}_stride{dimension}"),
    _query("_halide_buffer_get_device_dirty", 1, Evaluation.FALSE, _BUFFER_FLAG),
    _query("_halide_buffer_get_host_dirty", 1, Evaluation.FALSE, _BUFFER_FLAG),
    BUFFER_IS_BOUNDS_QUERY := _query("_halide_buffer_is_bounds_query", 1, Evaluation.FALSE, _BUFFER_FLAG),

    # (dst, dst_shape, host, device, device_interface, type code, bits,
    #  dimensions, shape: make_struct(min, extent, stride, flags per dimension), flags)
    Operation("_halide_buffer_init", Kind.BUFFER_DESCRIPTION, 10, Evaluation.BUFFER_DESCRIPTION),
    # (dst, dst_shape, src): known as a description only: the interpreter does
    # not evaluate it, C refuses it, and the CUDA wrapper drops the let it is in.
    Operation("_halide_buffer_init_from_buffer", Kind.BUFFER_DESCRIPTION, 3, None),

    Operation("if_then_else", Kind.STRUCTURAL, 3, Evaluation.EQUIVALENT_IR, equivalent=Equivalent.SELECT,
              error=ErrorRule.EQUIVALENT),
    Operation("mux", Kind.STRUCTURAL, None, Evaluation.EQUIVALENT_IR, equivalent=Equivalent.SELECTS,
              error=ErrorRule.EQUIVALENT),
    # The first argument is evaluated for its effects (halide_print).
    Operation("return_second", Kind.STRUCTURAL, 2, Evaluation.SECOND_ARGUMENT, c="(void)({0}); {1}"),
    Operation("alloca", Kind.STRUCTURAL, 1, Evaluation.STACK_BYTES, c="alloca({0})"),
    Operation("make_struct", Kind.STRUCTURAL, None, Evaluation.STRUCT),
    Operation("size_of_halide_buffer_t", Kind.STRUCTURAL, 0, Evaluation.ZERO),
    # Frees what a pipeline allocated for the runtime (the CUDA wrapper frees
    # its device memory itself, and drops it).
    REGISTER_DESTRUCTOR := Operation("register_destructor", Kind.STRUCTURAL, 2, Evaluation.ZERO),

    THREAD_BARRIER := Operation("gpu_thread_barrier", Kind.BARRIER, 1, Evaluation.ZERO, cuda="__syncthreads()"),
    WARP_BARRIER := Operation("gpu_warp_barrier", Kind.BARRIER, 1, Evaluation.ZERO, cuda="__syncwarp()"),
)
"""The table, grouped by kind."""


def _other_widths(table: tuple[Operation, ...]) -> tuple[Operation, ...]:
    """The float16 (and float64) version of each float32 math function the
    table lists alone: Halide computes a float16 one in float32 and rounds
    the result, which is the float32 spelling in C and one rounding here."""
    names = {operation.name for operation in table}
    extra = []
    for operation in table:
        if operation.kind is not Kind.FLOAT_MATH or not operation.name.endswith("_f32"):
            continue
        stem = operation.name[:-4]
        if f"{stem}_f16" not in names:
            extra.append(replace(operation, name=f"{stem}_f16"))
        if f"{stem}_f64" not in names and operation.c is not None and not stem.startswith("fast_"):
            extra.append(replace(operation, name=f"{stem}_f64", c=operation.c.replace("f(", "(", 1)))
    return tuple(extra)


OPERATIONS += _other_widths(OPERATIONS)

_BY_NAME = {operation.name: operation for operation in OPERATIONS}
assert len(_BY_NAME) == len(OPERATIONS), "an operation is listed twice"

RUNTIME_PREFIX = "halide_"
"""What the names of Halide's runtime functions begin with: a call of one
in statement position is an effect that generated code, which has no
runtime, leaves out, whether or not the table knows it."""


def find(name: str) -> Operation | None:
    """The entry for the call ``name``; None for a call the table does not
    hold (an extern function, a tensor instruction)."""
    return _BY_NAME.get(name)


@by_identity(size=1 << 12)
def equivalent_ir(call: Call) -> Expr | None:
    """The IR node ``call`` stands for (see ``Equivalent``); None when it
    stands for none. The same node every time it is asked of the same call:
    the interpreter evaluates it at every iteration, and keeps the code it
    made of it by the node's identity (verify/expression_code.py)."""
    operation = find(call.name)
    if operation is None or operation.equivalent is None:
        return None
    if operation.equivalent is Equivalent.LOWERED:
        from .intrinsics import LOWERINGS

        return LOWERINGS[call.name](call)
    args = call.args
    if operation.equivalent is Equivalent.FIRST_ARGUMENT:
        return args[0]
    if operation.equivalent is Equivalent.OPERATOR:
        assert operation.operator is not None
        return Binary(operation.operator, args[0], args[1])
    if operation.equivalent is Equivalent.SELECT:
        return Select(args[0], args[1], args[2])
    return _mux_as_selects(call)


def _mux_as_selects(call: Call) -> Expr:
    """Halide's ``mux(index, v0, ..., vn)`` (the value at ``index``, which is
    clamped to the list) as nested selects: v_k where index <= k first holds."""
    index, *values = call.args
    result = values[-1]
    for k in range(len(values) - 2, -1, -1):
        bound = IntImm(k, index.type.element()) if index.type.lanes == 1 else \
            Broadcast(IntImm(k, index.type.element()), index.type.lanes)
        result = Select(Binary(BinOp.LE, index, bound), values[k], result)
    return result


def of_kind(kind: Kind) -> tuple[Operation, ...]:
    """Every entry of ``kind``, in table order."""
    return tuple(operation for operation in OPERATIONS if operation.kind is kind)


__all__ = ["OPERATIONS", "RUNTIME_PREFIX", "ErrorRule", "Equivalent", "Evaluation", "Kind", "Operation",
           "equivalent_ir", "find", "of_kind"]
