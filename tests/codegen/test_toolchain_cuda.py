"""The nvcc driver: architecture choice, PTX and cubin output, and nvcc's
failures as clean diagnostics.

These machines have nvcc but no GPU, so everything here is compile-only. The
kernels are written by the test from the Tensor Core table in
hardboiled/targets/wmma.py (every fragment shape, element type and A/B layout
the table lists), so the table itself is checked against what nvcc accepts.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hardboiled import ir
from hardboiled.codegen.cuda_kernel import memory_element
from hardboiled.codegen.toolchain import ToolchainError, compile_cuda
from hardboiled.support.diagnostics import ExitCode, HardboiledError
from hardboiled.targets import wmma
from hardboiled.targets.cuda_arch import parse_cuda_arch

TC = wmma.WMMA_TENSOR_CORE

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this machine")


def _wmma_kernel(element: wmma.WMMAElement, accumulator: ir.Type, shape: wmma.WMMAShape,
                 a_layout: str, b_layout: str) -> str:
    """One warp: C = A * B for a single fragment, with the given layouts."""
    acc = _CUDA_ACCUMULATORS[wmma.wmma_type_suffix(accumulator)]
    memory = memory_element(element.type, wmma.MatrixUse.A)  # float for tf32 fragments
    lda = shape.k if a_layout == "row_major" else shape.m
    ldb = shape.n if b_layout == "row_major" else shape.k
    return f"""#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;
extern "C" __global__ void kernel(const {memory} *a, const {memory} *b, {acc} *c) {{
    wmma::fragment<wmma::matrix_a, {shape.m}, {shape.n}, {shape.k}, {element.cuda_type}, wmma::{a_layout}> fa;
    wmma::fragment<wmma::matrix_b, {shape.m}, {shape.n}, {shape.k}, {element.cuda_type}, wmma::{b_layout}> fb;
    wmma::fragment<wmma::accumulator, {shape.m}, {shape.n}, {shape.k}, {acc}> fc;
    wmma::fill_fragment(fc, 0);
    wmma::load_matrix_sync(fa, a, {lda});
    wmma::load_matrix_sync(fb, b, {ldb});
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, {shape.n}, wmma::mem_row_major);
}}
"""


_CUDA_ACCUMULATORS = {"f32": "float", "f16": "__half", "s32": "int", "f64": "double"}


def _combinations():
    for element in TC.elements:
        for accumulator in element.accumulators:
            for shape in TC.shapes_of(element):
                yield element, accumulator, shape


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("a_layout,b_layout", [("row_major", "row_major"), ("col_major", "col_major")])
def test_every_tabulated_wmma_form_compiles_to_tensor_core_ptx(tmp_path: Path, a_layout: str, b_layout: str) -> None:
    # One translation unit per layout pair holding every (element, accumulator,
    # shape) keeps this to two nvcc runs.
    kernels = []
    expected = []
    for i, (element, accumulator, shape) in enumerate(_combinations()):
        kernels.append(_wmma_kernel(element, accumulator, shape, a_layout, b_layout)
                       .replace("void kernel(", f"void kernel{i}(")
                       .split("using namespace nvcuda;\n", 1)[1])
        a, b = a_layout.removesuffix("_major"), b_layout.removesuffix("_major")
        d_type = wmma.wmma_type_suffix(accumulator)
        expected.append(f"wmma.mma.sync.aligned.{a}.{b}.{shape.name}.")
        expected.append(f"{shape.name}.{d_type}")
    header = "#include <mma.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\nusing namespace nvcuda;\n"
    out = compile_cuda(header + "".join(kernels), tmp_path / "wmma.ptx", kind="ptx",
                       sm=max(e.min_sm for e in TC.elements))
    ptx = out.read_text()
    assert ".target sm_80" in ptx
    for needle in expected:
        assert needle in ptx, needle
    assert ptx.count("wmma.mma.sync") == len(list(_combinations()))
    # Loads and stores are the Tensor Core forms too, not scalar code.
    assert f"wmma.load.a.sync.aligned.{a_layout.removesuffix('_major')}" in ptx
    assert "wmma.store.d.sync.aligned.row" in ptx


@pytest.mark.slow
@needs_nvcc
def test_cubin_output_is_an_elf_object(tmp_path: Path) -> None:
    element = TC.element(ir.Float(16))
    assert element is not None
    out = compile_cuda(_wmma_kernel(element, ir.Float(32), TC.shapes[0], "row_major", "col_major"),
                       tmp_path / "k.cubin", kind="cubin", sm=75)
    assert out.read_bytes()[:4] == b"\x7fELF"


@pytest.mark.slow
@needs_nvcc
def test_bf16_below_its_minimum_architecture_is_a_clean_toolchain_error(tmp_path: Path) -> None:
    element = TC.element(ir.BFloat(16))
    assert element is not None and element.min_sm == 80
    out = tmp_path / "k.ptx"
    with pytest.raises(ToolchainError) as caught:
        compile_cuda(_wmma_kernel(element, ir.Float(32), TC.shapes[0], "row_major", "row_major"), out, sm=75)
    diagnostic = caught.value.diagnostic
    assert caught.value.exit_code == ExitCode.TOOLCHAIN_FAILURE
    assert diagnostic.message.startswith("nvcc failed to compile the generated CUDA")
    assert any("error" in note for note in diagnostic.notes)
    assert not out.exists()


@pytest.mark.slow
@needs_nvcc
def test_a_syntax_error_carries_nvccs_message_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "k.ptx"
    with pytest.raises(ToolchainError) as caught:
        compile_cuda("__global__ void kernel() { this is not cuda; }\n", out)
    assert any("kernel.cu(1)" in note for note in caught.value.diagnostic.notes)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@needs_nvcc
def test_an_nvcc_that_crashes_is_retried_with_its_front_end_at_o1(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """nvcc 13.0's cicc segfaulted at -O3 on a generated kernel of 300 loops
    (random sweep seed 8128, wmma-s8128-0010) and compiles it at -O1: the
    build retries once so, and says so in a warning. Here an nvcc that
    crashes unless given -Xcicc stands in for it."""
    fake = tmp_path / "nvcc"
    fake.write_text(f"#!/bin/sh\ncase \"$*\" in *-Xcicc*) exec {shutil.which('nvcc')} \"$@\";; esac\n"
                    "echo 'Segmentation fault' >&2\nexit 139\n")
    fake.chmod(0o755)
    monkeypatch.setenv("NVCC", str(fake))
    said: list[str] = []
    out = compile_cuda("__global__ void kernel(float *x) { x[0] = 1.0f; }\n", tmp_path / "k.ptx", warn=said.append)
    assert ".entry" in out.read_text()
    assert said == ["nvcc crashed on the generated CUDA (Segmentation fault); it compiled with -Xcicc -O1 "
                    "(its device front end at -O1)"]
    fake.write_text("#!/bin/sh\necho 'Segmentation fault' >&2\nexit 139\n")
    with pytest.raises(ToolchainError) as caught:
        compile_cuda("", tmp_path / "k2.ptx", warn=said.append)
    assert "exit status 139" in caught.value.diagnostic.message and len(said) == 1


def test_missing_nvcc_is_a_toolchain_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NVCC", str(tmp_path / "no-such-nvcc"))
    with pytest.raises(ToolchainError) as caught:
        compile_cuda("", tmp_path / "k.ptx")
    assert "no CUDA compiler found" in caught.value.diagnostic.message


@pytest.mark.parametrize("text,sm", [("sm_80", 80), ("86", 86), ("8.9", 89), ("SM_75", 75), ("sm_120", 120)])
def test_cuda_architectures_are_accepted_from_sm_75(text: str, sm: int) -> None:
    assert parse_cuda_arch(text) == sm


@pytest.mark.parametrize("text,why", [("sm_70", "sm_75 or newer"), ("sm_72", "sm_75 or newer"),
                                      ("compute_80", "not a CUDA architecture"), ("", "not a CUDA architecture")])
def test_older_or_malformed_architectures_are_usage_errors(text: str, why: str) -> None:
    with pytest.raises(HardboiledError) as caught:
        parse_cuda_arch(text)
    assert caught.value.exit_code == ExitCode.INPUT_ERROR
    assert why in caught.value.diagnostic.message
