"""Every Halide operation of the table, against Halide 21's JIT.

tools/operation_cases.py builds one pipeline with an output per operation
and input type (173 of them), realizes it with the JIT on seeded random
inputs and writes what Halide printed for it ("Lowering after
vectorizing:"), into tests/fixtures/operations (``make
operation-fixtures``; cuda/ holds the same as GPU stages). Here the
interpreter runs that stage on the same inputs:
integers must be equal; floats equal to a few units in the last place
(the C library's transcendental functions are not correctly rounded, and
fast_inverse is a 12-bit approximation on the hardware). The C emitter
then writes every call of the stage (tests/ir/test_operations.py compiles
each entry)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.ir import operations
from hardboiled.support.deep import call_deep
from hardboiled.verify.interp import BufferT, Interpreter

from ..conftest import ROOT

N = 64
_ULPS = {"float16": 1, "float32": 4, "float64": 4}
_WIDER = {"pow": 8}
"""Halide's own pow_f32 (not the C library's powf) is a few more units off."""
_APPROXIMATE = {"fast_inverse": 2.0 ** -11, "fast_inverse_sqrt": 2.0 ** -11}
"""Relative error of the hardware's approximations (rcpps, rsqrtps: 12 bits)."""


OPERATIONS = ROOT / "tests" / "fixtures" / "operations"


@pytest.fixture(scope="module")
def cases() -> Path:
    return OPERATIONS / "host"


def test_the_fixtures_hold_every_case_of_the_tool_that_writes_them() -> None:
    """tests/fixtures/operations is current: every operation and type of
    tools/operation_cases.py's table, each output with its inputs' values
    and the JIT's results (``make operation-fixtures`` after a change)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import operation_cases as tool
    expected = {f"o_{case}_{type_name}": {"case": case, "type": type_name}
                for case, (types, _) in tool.CASES.items() for type_name in types}
    for target in ("host", "cuda"):
        assert json.loads((OPERATIONS / target / "cases.json").read_text()) == expected, target
        assert "Lowering after" not in (OPERATIONS / target / "vectorizing.stmt").read_text()[:200]
    arrays = {path.stem for path in (OPERATIONS / "host").glob("*.npy")}
    inputs = {f"{role}_{t}" for role in "abc" for t in tool.INT_TYPES + tool.FLOAT_TYPES}
    assert arrays == set(expected) | inputs


def _buffers(out: Path, meta: dict[str, dict[str, str]]) -> dict[str, BufferT]:
    """The JIT's inputs, and zeroed outputs."""
    buffers = {}
    for path in sorted(out.glob("*.npy")):
        data = np.load(path)
        name = path.stem
        if name in meta:
            data = np.zeros_like(data)
        element = {np.dtype(ml_dtypes.bfloat16): ir.BFloat(16)}.get(data.dtype) or _halide_type(data.dtype)
        buffers[name] = BufferT(name, element, data, (0,), (N,), (1,))
    return buffers


def _run(out: Path) -> tuple[dict[str, dict[str, str]], dict[str, np.ndarray], ir.Stmt]:
    meta = json.loads((out / "cases.json").read_text())
    stmt = parse_input((out / "vectorizing.stmt").read_text(), "vectorizing.stmt").ir
    assert isinstance(stmt, ir.Stmt)
    buffers = _buffers(out, meta)
    call_deep(Interpreter(buffers=buffers).run, stmt)  # 173 outputs: a deep block
    return meta, {name: buffers[name].data for name in meta}, stmt


def _halide_type(dtype: np.dtype) -> ir.Type:
    kind = {"u": ir.TypeCode.UINT, "i": ir.TypeCode.INT, "f": ir.TypeCode.FLOAT}[dtype.kind]
    return ir.Type(kind, dtype.itemsize * 8, 1)


def _agree(expected: np.ndarray, actual: np.ndarray, case: str, type_name: str) -> bool:
    if expected.dtype.kind in "iu":
        return bool(np.array_equal(expected, actual))
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    same = (e == a) | (np.isnan(e) & np.isnan(a))
    if case in _APPROXIMATE:
        with np.errstate(all="ignore"):
            same |= np.abs(e - a) <= _APPROXIMATE[case] * np.abs(e)
    else:
        with np.errstate(all="ignore"):
            spacing = np.abs(np.spacing(expected)).astype(np.float64)
        with np.errstate(all="ignore"):
            same |= np.abs(e - a) <= _WIDER.get(case, _ULPS[str(expected.dtype)]) * spacing
    return bool(np.all(same))


@pytest.mark.slow
def test_the_interpreter_computes_every_operation_as_halide_does(cases: Path) -> None:
    meta, computed, _ = _run(cases)
    wrong = [name for name, case in meta.items()
             if not _agree(np.load(cases / f"{name}.npy"), computed[name], case["case"], case["type"])]
    assert len(meta) >= 170
    assert wrong == []


@pytest.mark.slow
def test_the_generated_c_computes_every_operation_as_halide_does(cases: Path, tmp_path: Path) -> None:
    """Every call Halide printed is in the table; the C written for the whole
    stage, built (gcc -O0: one function of 26,000 lines) and run on the
    same inputs, agrees with the JIT as the interpreter does."""
    import shutil

    from hardboiled.codegen.abi import kernel_signature
    from hardboiled.codegen.c import generate_c
    from hardboiled.codegen.toolchain import compile_c, find_compiler
    from hardboiled.verify.run import run_isolated

    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    meta, _, stmt = _run(cases)
    called = {n.name for n in ir.walk(stmt) if isinstance(n, ir.Call)}
    unknown = sorted(name for name in called if operations.find(name) is None
                     and not name.startswith(("halide_error_", "_halide_buffer")))
    assert unknown == []
    library = tmp_path / "ops.so"
    compile_c(call_deep(generate_c, stmt, "ops"), library, shared=True, compiler=find_compiler("gcc"),
              extra=("-O0",))
    buffers = _buffers(cases, meta)
    assert run_isolated("raw", library, "ops", kernel_signature(stmt), buffers) == 0
    wrong = [name for name, case in meta.items()
             if not _agree(np.load(cases / f"{name}.npy"), buffers[name].data, case["case"], case["type"])]
    assert wrong == []


@pytest.mark.slow
def test_the_generated_cuda_of_every_operation_builds(tmp_path: Path) -> None:
    """The same operations as GPU stages (Halide's CUDA target): every call
    Halide printed is in the table, and the kernels hardboiled writes for
    them compile with nvcc (run where a GPU is lent: bench/device.py)."""
    import shutil

    from hardboiled.codegen.cuda import generate_cuda
    from hardboiled.codegen.toolchain import compile_cuda

    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc")
    out = OPERATIONS / "cuda"
    stmt = parse_input((out / "vectorizing.stmt").read_text(), "vectorizing.stmt").ir
    assert isinstance(stmt, ir.Stmt)
    called = {n.name for n in ir.walk(stmt) if isinstance(n, ir.Call)}
    assert not [n for n in called if operations.find(n) is None and not n.startswith(("halide_error_", "_halide"))]
    source = call_deep(generate_cuda, stmt, "ops")
    assert source.count("__global__ void") >= 170
    compile_cuda(source, tmp_path / "ops.ptx")
