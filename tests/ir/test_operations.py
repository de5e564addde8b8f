"""The operations table (hardboiled/ir/operations.py) is the single source
of the Halide calls hardboiled knows: every entry is accepted by each
consumer that its entry says handles it (the interpreter, the C emitters, the
CUDA wrapper, the error model) and refused by the others, and no consumer
spells an operation's name itself any more."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hardboiled import ir
from hardboiled.codegen.abi import KernelArgument
from hardboiled.codegen.c import generate_c
from hardboiled.codegen.c_text import CodegenError
from hardboiled.codegen.cuda import generate_cuda
from hardboiled.codegen.toolchain import compile_c
from hardboiled.frontend.parse import parse_input
from hardboiled.ir import operations
from hardboiled.ir.operations import OPERATIONS, ErrorRule, Evaluation, Kind, Operation
from hardboiled.targets.amx import AMX_INTRINSICS
from hardboiled.verify import calls
from hardboiled.verify.error_bound import NoErrorBound, bound_program
from hardboiled.verify.interp import BufferT, Interpreter, InterpreterError, dtype_of

from ..conftest import ROOT

PACKAGE = ROOT / "hardboiled"
F32, F64, F16, I32, BOOL = ir.Float(32), ir.Float(64), ir.Float(16), ir.Int(32), ir.Bool()
HANDLE = ir.handle_type()
BUFFER = ir.Variable("out.buffer", ir.handle_type("struct halide_buffer_t *"))
OUT = KernelArgument("out", F32, 1, output=True)

CONSUMERS = ("verify/interp.py", "verify/calls.py", "verify/values.py", "verify/error_bound.py",
             "codegen/c_family.py", "codegen/c.py", "codegen/cuda.py")
"""The modules that read the table: the interpreter, the C and CUDA emitters, the error model."""

FIXTURES_WITH_CALLS = ("halide/cpu_async_producers/vectorizing.stmt", "apps/rec_filter.stmt",
                       "halide/cpu_math_calls/vectorizing.stmt", "halide/cpu_strings_and_types/vectorizing.stmt",
                       "halide/cpu_guarded_vectorize/vectorizing.stmt", "halide/cpu_extern_stage/vectorizing.stmt")
"""Small real Halide dumps that call most of the table (buffer queries and
descriptions, the device runtime, semaphores, print, mux, math)."""


def _f(value: float, t: ir.Type = F32) -> ir.Expr:
    return ir.FloatImm(value, t)


def _call(name: str, *args: ir.Expr, t: ir.Type = I32) -> ir.Call:
    return ir.Call(name, args, t)


def _buffer_description() -> tuple[ir.Expr, ...]:
    """_halide_buffer_init's arguments: a 1-D float32 buffer of 8 elements
    over 32 bytes of stack."""
    stack = _call("alloca", ir.IntImm(32), t=HANDLE)
    shape = _call("make_struct", ir.IntImm(0), ir.IntImm(8), ir.IntImm(1), ir.IntImm(0), t=HANDLE)
    return (stack, shape, stack, ir.IntImm(0), ir.IntImm(0), ir.IntImm(2), ir.IntImm(32), ir.IntImm(1), shape,
            ir.IntImm(0))


def example(operation: Operation) -> ir.Call:
    """A call of ``operation`` with arguments of the types Halide gives it."""
    width = F64 if operation.name.endswith("_f64") else F32
    arity = 3 if operation.arity is None else operation.arity
    floats = tuple(_f(0.25 * (i + 1), width) for i in range(arity))
    ints = tuple(ir.IntImm(i + 1) for i in range(arity))
    by_evaluation: dict[Evaluation | None, tuple[tuple[ir.Expr, ...], ir.Type]] = {
        Evaluation.FIRST_ARGUMENT: (floats, width),
        Evaluation.SECOND_ARGUMENT: ((ir.IntImm(0), _f(0.5)), F32),
        Evaluation.FLOAT_FUNCTION: (floats, width),
        Evaluation.INTEGER_FUNCTION: ((ir.IntImm(6), ir.IntImm(3))[:arity], I32),
        Evaluation.SHIFT: ((ir.IntImm(6), ir.IntImm(1)), I32),
        Evaluation.MAGNITUDE: ((_f(-0.5),), F32),
        Evaluation.WIDENING_PRODUCT: ((ir.Cast(ir.Int(8), ir.IntImm(-3)), ir.Cast(ir.Int(8), ir.IntImm(100))),
                                      ir.Int(16)),
        Evaluation.PRODUCT_THEN_SUM: (floats, F32),
        Evaluation.ZERO: (ints, I32),
        Evaluation.ZERO_IGNORING_ARGUMENTS: ((ir.StringImm("printed"),), I32),
        Evaluation.FALSE: ((BUFFER,), BOOL),
        Evaluation.STRUCT: (ints, HANDLE),
        Evaluation.STACK_BYTES: ((ir.IntImm(16),), HANDLE),
        Evaluation.BUFFER_HOST: ((BUFFER,), HANDLE),
        Evaluation.BUFFER_TYPE: ((BUFFER,), ir.UInt(32)),
        Evaluation.BUFFER_DIMENSIONS: ((BUFFER,), I32),
        Evaluation.BUFFER_MIN: ((BUFFER, ir.IntImm(0)), I32),
        Evaluation.BUFFER_EXTENT: ((BUFFER, ir.IntImm(0)), I32),
        Evaluation.BUFFER_STRIDE: ((BUFFER, ir.IntImm(0)), I32),
        Evaluation.BUFFER_DESCRIPTION: (_buffer_description(), HANDLE),
        None: (ints, HANDLE),
    }
    if operation.equivalent is operations.Equivalent.OPERATOR:
        assert operation.operator is not None
        return _call(operation.name, _f(0.25), _f(0.75), t=ir.Binary(operation.operator, _f(0), _f(0)).type)
    if operation.equivalent is operations.Equivalent.SELECT:
        return _call(operation.name, ir.Binary(ir.BinOp.LT, ir.IntImm(0), ir.IntImm(1)), _f(0.25), _f(0.75), t=F32)
    if operation.equivalent is operations.Equivalent.SELECTS:
        return _call(operation.name, ir.IntImm(1), _f(0.25), _f(0.5), _f(0.75), t=F32)
    if operation.equivalent is operations.Equivalent.LOWERED:
        return _intrinsic_example(operation)
    if operation.kind is Kind.PREDICATE:
        return _call(operation.name, _f(0.25, F16 if operation.name.endswith("_f16") else width), t=BOOL)
    if operation.name.endswith("_f16"):
        return _call(operation.name, *(_f(0.25 * (i + 1), F16) for i in range(arity)), t=F16)
    args, t = by_evaluation[operation.evaluation]
    return _call(operation.name, *args, t=t)


def _intrinsic_example(operation: Operation) -> ir.Call:
    """An integer intrinsic (ir/intrinsics.py) on int16 values, with the
    result type Halide gives it."""
    def i16(value: int) -> ir.Expr:
        return ir.Cast(ir.Int(16), ir.IntImm(value))

    def u8(value: int) -> ir.Expr:
        return ir.Cast(ir.UInt(8), ir.IntImm(value))

    name = operation.name
    if name.startswith("widening_"):
        return _call(name, i16(300), i16(3), t=I32)
    if name == "absd":
        return _call(name, i16(300), i16(-7), t=ir.UInt(16))
    if name == "saturating_cast":
        return _call(name, i16(300), t=ir.UInt(8))
    if name == "lerp":
        return _call(name, u8(10), u8(200), u8(64), t=ir.UInt(8))
    if operation.arity == 3:
        return _call(name, i16(300), i16(-7), i16(4), t=ir.Int(16))
    return _call(name, *(i16(300), i16(3))[:operation.arity], t=ir.Int(16))


def _ids(operation: Operation) -> str:
    return operation.name


def _output() -> BufferT:
    return BufferT("out", F32, np.zeros(8, dtype=np.float32), (0,), (8,), (1,))


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------


def test_the_table_is_one_entry_per_name_and_holds_no_tensor_instruction() -> None:
    names = [operation.name for operation in OPERATIONS]
    assert len(names) == len(set(names))
    assert all(operations.find(name) is operation for name, operation in zip(names, OPERATIONS))
    tensor = {intrinsic.name for intrinsic in AMX_INTRINSICS}
    assert not tensor & set(names)
    assert not any(name.startswith("wmma.") or ir.is_wmma_call(ir.Call(name, ())) for name in names)
    assert {operation.kind for operation in OPERATIONS} == set(Kind), "a kind with no entry"


def test_importing_the_ir_does_not_load_numpy() -> None:
    # The command line's fast paths import the IR; numpy costs them a tenth of a second.
    code = "import sys, hardboiled.ir, hardboiled.ir.operations; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_declared_arities_are_those_of_real_dumps() -> None:
    for fixture in FIXTURES_WITH_CALLS:
        path = ROOT / "tests" / "fixtures" / fixture
        stmt = parse_input(path.read_text(), str(path)).ir
        assert isinstance(stmt, ir.Stmt)
        for call in ir.calls(stmt):
            operation = operations.find(call.name)
            if operation is not None and operation.arity is not None:
                assert len(call.args) == operation.arity, f"{fixture}: {call.name}"


def test_no_consumer_spells_an_operation_name() -> None:
    """A name (or a name's prefix, the old way of testing families of calls)
    is written in the table only: every other module asks the table."""
    names = {operation.name for operation in OPERATIONS}
    spelled = []
    reductions = {op.value for op in ir.ReduceOp}  # vector_reduce_<op>, not calls of their own
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in (PACKAGE / "ir" / "operations.py", PACKAGE / "ir" / "intrinsics.py"):
            continue  # the table, and the definitions of its intrinsics
        consumer = path.relative_to(PACKAGE).as_posix() in CONSUMERS
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            text = node.value
            if text in reductions:
                continue
            prefix = consumer and len(text) > 3 and text.endswith("_") and any(n.startswith(text) for n in names)
            if text in names or prefix:
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text!r}")
    assert spelled == []


# --------------------------------------------------------------------------
# The interpreter
# --------------------------------------------------------------------------


def test_the_interpreter_has_code_for_every_evaluation_the_table_names() -> None:
    evaluated = {operation.name for operation in OPERATIONS if operation.evaluation is not None}
    assert calls.VALUE_HANDLERS.keys() | calls.EXPRESSION_HANDLERS.keys() == evaluated
    assert not calls.VALUE_HANDLERS.keys() & calls.EXPRESSION_HANDLERS.keys()


@pytest.mark.parametrize("operation", OPERATIONS, ids=_ids)
def test_the_interpreter_evaluates_every_entry_it_is_given(operation: Operation) -> None:
    interpreter = Interpreter(buffers={"out": _output()})
    call = example(operation)
    if operation.evaluation is None:
        with pytest.raises(InterpreterError, match="does not know the call"):
            interpreter.eval(call)
        return
    value = interpreter.eval(call)
    if operation.evaluation is Evaluation.FLOAT_FUNCTION:
        assert value.dtype == dtype_of(call.type)
        if operation.arity == 1 and hasattr(np, operation.numpy or ""):
            with np.errstate(all="ignore"):  # acosh(0.25) is NaN, in both
                expected = getattr(np, operation.numpy or "")(np.float64(0.25)).astype(value.dtype)
            assert value.tobytes() == np.array([expected]).tobytes()


def test_some_values() -> None:
    interpreter = Interpreter(buffers={"out": _output()})

    def value(name: str, *args: ir.Expr, t: ir.Type = F32) -> list[float]:
        return [float(v) for v in interpreter.eval(_call(name, *args, t=t))]

    assert value("strict_fma", _f(2.0), _f(3.0), _f(1.0)) == [7.0]
    assert value("mux", ir.IntImm(5), _f(1.0), _f(2.0), _f(3.0)) == [3.0]  # clamped to the last
    assert value("widening_mul", ir.Cast(ir.Int(8), ir.IntImm(-128)), ir.Cast(ir.Int(8), ir.IntImm(-128)),
                 t=ir.Int(16)) == [16384.0]
    assert value("_halide_buffer_get_extent", BUFFER, ir.IntImm(0), t=I32) == [8.0]
    assert value("abs", ir.Cast(ir.Int(8), ir.IntImm(-128)), t=ir.UInt(8)) == [128.0]
    assert value("shift_left", ir.IntImm(3), ir.IntImm(2), t=I32) == [12.0]


# --------------------------------------------------------------------------
# The C emitters and the CUDA wrapper
# --------------------------------------------------------------------------


def _stores(body: ir.Stmt) -> ir.Stmt:
    """``body`` with the output's host pointer bound, as Halide binds it."""
    return ir.LetStmt("out", _call("_halide_buffer_get_host", BUFFER, t=HANDLE), body)


def _program(value: ir.Expr) -> ir.Stmt:
    """``value`` in a let, then a store to the output."""
    return _stores(ir.LetStmt("v", value, ir.Store("out", _f(0.0), ir.IntImm(0))))


@pytest.mark.parametrize("operation", OPERATIONS, ids=_ids)
def test_the_c_emitter_writes_what_the_table_spells_and_refuses_the_rest(operation: Operation) -> None:
    program = _program(example(operation))
    if operation.in_c:
        assert "v = " in generate_c(program, arguments=[OUT])
    else:
        # A description of a buffer is refused with its own reason.
        with pytest.raises(CodegenError, match="does not know the call|builds a halide_buffer_t"):
            generate_c(program, arguments=[OUT])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("clang") is None, reason="no C compiler")
def test_every_c_spelling_compiles(tmp_path: Path) -> None:
    body: ir.Stmt = ir.Store("out", _f(0.0), ir.IntImm(0))
    for i, operation in enumerate(OPERATIONS):
        if operation.in_c:
            body = ir.LetStmt(f"v{i}", example(operation), body)
    compile_c(generate_c(_stores(body), arguments=[OUT]), tmp_path / "kernel.o", shared=False, amx="emulate")


@pytest.mark.parametrize("operation", [o for o in OPERATIONS if o.kind is Kind.DEVICE_RUNTIME], ids=_ids)
def test_the_cuda_wrapper_answers_the_device_runtime(operation: Operation) -> None:
    assert operation.cuda is not None and not operation.in_c
    assert "v = 0;" in generate_cuda(_program(example(operation)), arguments=[OUT])


# --------------------------------------------------------------------------
# The error model
# --------------------------------------------------------------------------


@pytest.mark.parametrize("operation", [o for o in OPERATIONS if example(o).type.is_float], ids=_ids)
def test_the_error_model_bounds_the_float_calls_it_has_a_rule_for(operation: Operation) -> None:
    store = ir.Store("out", example(operation), ir.IntImm(0))
    if operation.error is None:
        with pytest.raises(NoErrorBound, match="the call"):
            bound_program(store, {"out"}, {"out"})
        return
    bounded = bound_program(store, {"out"}, {"out"})
    out = _output()
    interpreter = Interpreter(buffers={"out": out})
    interpreter.env.values["out"] = out.host
    interpreter.env.values["out.err"] = BufferT("out.err", F64, np.zeros(8), (0,), (8,), (1,)).host
    interpreter.run(bounded)  # the bound is a program the interpreter runs


def test_every_error_rule_is_used_by_a_float_call() -> None:
    rules = {o.error for o in OPERATIONS if example(o).type.is_float}
    assert rules >= set(ErrorRule)
