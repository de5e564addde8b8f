"""The Python API (issue 17): hardboiled.compile, hardboiled.halide.tensorize,
and docs/api.md, whose examples run here."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

import hardboiled
from hardboiled.frontend.stages import select_stage
from hardboiled.halide import lowering_log, tensorize
from hardboiled.support.diagnostics import ExitCode

from ..conftest import ROOT

sys.path.insert(0, str(ROOT))
from apps.amx_conv1d import APP as AMX_CONV1D  # noqa: E402
from apps.common import AMX_TARGET, CUDA_TARGET  # noqa: E402
from apps.conv1d import APP as WMMA_CONV1D  # noqa: E402

APPS = ROOT / "tests" / "fixtures" / "apps"


@pytest.mark.slow
def test_the_examples_in_docs_api_md_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), re.S)
    assert len(blocks) >= 5
    namespace: dict[str, object] = {}
    for number, block in enumerate(blocks):
        exec(compile(block, f"docs/api.md, python block {number + 1}", "exec"), namespace)


def test_sources_as_paths_text_and_bytes() -> None:
    path = APPS / "amx_conv1d.stmt"
    by_path = hardboiled.compile(path)
    by_name = hardboiled.compile(str(path))
    by_text = hardboiled.compile(path.read_text(), name="amx_conv1d")
    by_bytes = hardboiled.compile(path.read_bytes(), name="amx_conv1d")
    assert by_path.c == by_name.c == by_text.c == by_bytes.c
    assert hardboiled.compile(path.read_text()).name == "hb_kernel"  # text has no file name
    assert by_path.source == by_path.c and by_path.program is not None
    assert by_path.ir.startswith(("assert", "let", "produce")) or "\n" in by_path.ir


def test_targets_and_their_errors() -> None:
    gpu = APPS / "conv1d.stmt"
    store_in = {"conv": "WMMAAccumulator"}
    assert hardboiled.compile(gpu, store_in=store_in, target="wmma").cuda is not None
    with pytest.raises(hardboiled.CompileError, match="this program has GPU loops") as error:
        hardboiled.compile(gpu, store_in=store_in, target="amx")
    assert error.value.exit_code == ExitCode.INPUT_ERROR
    with pytest.raises(hardboiled.CompileError, match="no gpu_block loop"):
        hardboiled.compile(APPS / "amx_conv1d.stmt", target="wmma")
    with pytest.raises(ValueError, match="target must be one of"):
        hardboiled.compile(gpu, target="tpu")
    with pytest.raises(ValueError, match="cannot name the generated function"):
        hardboiled.compile(gpu, name="main")
    with pytest.raises(hardboiled.CompileError, match="cannot read") as missing:
        hardboiled.compile(Path("no/such/file.stmt"))
    assert missing.value.exit_code == ExitCode.INPUT_ERROR


def test_a_selection_miss_is_a_compile_error_with_the_cli_exit_code() -> None:
    """A store in accelerator memory that no rule lowers: exit 1's error."""
    text = (APPS / "amx_conv1d.stmt").read_text()
    with pytest.raises(hardboiled.CompileError) as error:
        hardboiled.compile(text, store_in={"image": "AMXTile"})
    assert error.value.exit_code in (ExitCode.SELECTION_MISS, ExitCode.INPUT_ERROR)
    assert str(error.value)  # the rendered diagnostics


@pytest.mark.slow
@pytest.mark.parametrize("app, target", [(AMX_CONV1D, AMX_TARGET), (WMMA_CONV1D, CUDA_TARGET)],
                         ids=["amx_conv1d", "conv1d"])
def test_the_bridge_captures_the_same_ir_as_a_direct_lowering(app: object, target: str) -> None:
    """The child lowers the serialized pipeline to the very stage that
    apps/run.py's direct lowering printed (tests/fixtures/apps): the
    schedule and the inputs' constraints survive serialization."""
    outputs, arguments = app.pipeline(**app.sizes["test"])  # type: ignore[attr-defined]
    log, inputs, output_names = lowering_log(outputs[0], target, arguments=arguments)
    stage, _, _ = select_stage(log, "<log>", "vectorizing")
    # Halide makes Func names unique per process (a second "conv" is
    # "conv$1"): the tests build several pipelines, apps/run.py one.
    expected = (APPS / f"{app.name}.stmt").read_text()  # type: ignore[attr-defined]
    assert _ununiquified(stage) == _ununiquified(expected)
    assert inputs == [a.name() for a in arguments] and output_names == [outputs[0].name()]
    assert "HL_DEBUG_CODEGEN" not in os.environ  # the caller's process is left alone


def _ununiquified(text: str) -> str:
    return re.sub(r"\$\d+", "", text)


@pytest.mark.slow
def test_the_bridge_tensorizes_for_the_gpu_in_halides_argument_order() -> None:
    outputs, arguments = WMMA_CONV1D.pipeline(**WMMA_CONV1D.sizes["test"])
    log, _, _ = lowering_log(outputs[0], CUDA_TARGET, arguments=arguments)
    accumulator = re.search(r"allocate (conv(\$\d+)?)\[", log)  # "conv", made unique in this process
    assert accumulator is not None
    result = tensorize(outputs[0], CUDA_TARGET, arguments=list(reversed(arguments)),
                       store_in={accumulator.group(1): "WMMAAccumulator"}, verify=True)
    assert result.cuda is not None and "wmma::mma_sync" in result.cuda
    names = [a.name() for a in reversed(arguments)] + [outputs[0].name()]  # inputs as given, then the output
    order = ", ".join(f"struct halide_buffer_t *b_{re.sub(r'[^A-Za-z0-9_]', '_', name)}" for name in names)
    assert f'extern "C" int {result.name}({order})' in result.cuda
    assert any("equal" in message for message in result.messages)


@pytest.mark.slow
def test_the_bridge_passes_a_run_time_zero_point_as_a_scalar_argument() -> None:
    """A quantized GEMM whose activation zero point is a Param: the bridge
    takes it as an argument in Halide's order (A, B, za, then the output),
    the zero point leaves the product (select/isolate.py), and the
    generated C, run with the value the interpreter drew, agrees."""
    import halide as hl

    A, B = hl.ImageParam(hl.UInt(8), 2, "A"), hl.ImageParam(hl.Int(8), 3, "B")  # B in VNNI order
    za = hl.Param(hl.Int(32), "za")
    x, y, yo, xo, yi, xi = (hl.Var(n) for n in ("x", "y", "yo", "xo", "yi", "xi"))
    r = hl.RDom([(0, 64)], "r")
    mm, out = hl.Func("mm"), hl.Func("out")
    mm[y, x] = hl.i32(0)
    mm[y, x] += (hl.i32(A[r.x, x]) - za) * hl.i32(B[r.x % 4, y, r.x // 4])
    out[y, x] = mm[y, x]
    out.tile(y, x, yo, xo, yi, xi, 16, 16).vectorize(yi).vectorize(xi)
    mm.compute_at(out, yo).store_in(hl.MemoryType(8)).vectorize(y).vectorize(x)  # 8: AMXTile
    mm.update().atomic().vectorize(r.x).vectorize(y).vectorize(x)
    for param, extents in ((A, (64, 32)), (B, (4, 32, 16)), (out.output_buffer(), (32, 32))):
        stride = 1
        for d, extent in enumerate(extents):
            param.dim(d).set_bounds(0, extent).set_stride(stride)
            stride *= extent
    result = tensorize(out, AMX_TARGET, verify=True, run=True)
    assert result.c is not None and "_tile_dpbusd" in result.c
    assert re.search(r"\nint out\(struct halide_buffer_t \*b_A, struct halide_buffer_t \*b_B, int32_t p_za, "
                     r"struct halide_buffer_t \*b_out\)", result.c)
    assert any("ran the generated C" in message and "equal" in message for message in result.messages)


@pytest.mark.slow
def test_the_bridge_explains_what_it_cannot_carry_or_lower() -> None:
    import halide as hl

    image = hl.ImageParam(hl.Float(32), 1, "image")
    n = hl.Param(hl.Int(32), "n")
    image.dim(0).set_extent(n * 2)
    x = hl.Var("x")
    f = hl.Func("f")
    f[x] = image[x] * 2.0
    with pytest.raises(ValueError, match="not a constant"):
        tensorize(f, "host", arguments=[image])
    other = hl.ImageParam(hl.Float(32), 1, "other")
    g = hl.Func("g")
    g[x] = other[x] + 1.0
    g.vectorize(x, 8)
    with pytest.raises(hardboiled.CompileError, match="Halide could not lower the pipeline: .*not-a-target"):
        tensorize(g, "not-a-target", arguments=[other])


@pytest.mark.slow
def test_the_bridge_takes_halide_s_own_argument_order_by_default() -> None:
    """Issue 33, item 10: tensorize without arguments= raised
    AttributeError ('Argument' object has no attribute 'is_buffer') with
    Halide 21; it infers the inputs, ImageParams and Params alike."""
    outputs, arguments = AMX_CONV1D.pipeline(**AMX_CONV1D.sizes["test"])
    log, inputs, _ = lowering_log(outputs[0], AMX_TARGET)
    assert sorted(inputs) == sorted(a.name() for a in arguments)
    accumulator = re.search(r"allocate (\w+(\$\d+)?)\[\w+ \* [^\]]*\] in (Register|AMXTile)", log)
    assert accumulator is not None
    result = tensorize(outputs[0], AMX_TARGET, store_in={accumulator.group(1): "AMXTile"})
    assert "tile_matmul" in result.ir


def test_the_hint_names_only_what_halide_s_python_bindings_have() -> None:
    """Issue 33, item 11: the --require hint told users to write
    hl.MemoryType.AMXTile, which Halide 21's bindings lack."""
    import halide as hl

    from hardboiled.select.candidates import Candidate, candidate_diagnostics

    for memory in ("AMXTile", "WMMAAccumulator"):
        [diagnostic] = candidate_diagnostics([Candidate("mm", 1, memory)],
                                             "f.stmt", "x\n", "warning")
        notes = " ".join(diagnostic.notes)
        for name in re.findall(r"hl\.MemoryType\.(\w+)", notes):
            assert hasattr(hl.MemoryType, name), name
        assert "hl.MemoryType.Register" in notes and f"--store-in mm={memory}" in notes
