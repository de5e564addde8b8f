"""The named pass pipeline: --print-before/--print-after for every pass,
--timing, --verify-ir and the IR invariants, on real Halide dumps."""

from __future__ import annotations

import dataclasses
import re

import pytest

from hardboiled import ir
from hardboiled.cli import commands as cli_main
from hardboiled.ir.invariants import InvariantViolation, check_program, violations
from hardboiled.pipeline.options import CompileOptions
from hardboiled.pipeline.passes import PASS_NAMES, PIPELINE
from hardboiled.select.selector import SelectionOptions

from ..conftest import FIXTURES, run_cli

AMX = FIXTURES / "amx_bf16_matmul_std_single" / "vectorizing.stmt"
WMMA = FIXTURES / "wmma_dct16" / "vectorizing.stmt"


def test_the_cli_offers_exactly_the_pipeline_passes() -> None:
    assert cli_main._PASS_CHOICES == ("all", *PASS_NAMES)
    assert len(set(PASS_NAMES)) == len(PASS_NAMES)


@pytest.mark.slow
@pytest.mark.parametrize("name", PASS_NAMES)
def test_print_after_works_for_every_pass(name: str, tmp_path) -> None:
    step = next(p for p in PIPELINE if p.name == name)
    wmma = name in ("emit-cuda", "build-cuda", "stage-wmma-operands", "wmma-lanes", "wmma-fragments")
    path = WMMA if wmma else AMX
    # The selection cache stays on (dumps bypass only the whole-file cache).
    args = ["compile", str(path), "--print-after", name, "-o", str(tmp_path / "out")]
    if wmma:
        args += ["--store-in", "dct=WMMAAccumulator", "--emit", "cuda"]
    else:
        args += ["--emit", "c,egg,ir"] if name not in ("run-c", "build-c", "verify", "emit-html") else []
    extra = {"verify": ["--verify"], "run-c": ["--run"], "build-c": ["--build", str(tmp_path / "k.o")],
             "build-cuda": ["--build", str(tmp_path / "k.ptx")], "emit-html": ["--emit", "html"]}
    if name in ("run-c", "build-c", "verify"):
        args += ["--emit", "ir"]
    args += extra.get(name, [])
    if name == "build-cuda":
        import shutil

        if shutil.which("nvcc") is None:
            pytest.skip("nvcc is not installed")
    result = run_cli(*args)
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr
    header = f"// -----// IR Dump After {name} ({path.parent.name}/{path.name}) //----- //"
    assert stderr.count("IR Dump After") == 1 and header in stderr.replace(str(FIXTURES) + "/", "")
    shown = stderr.split("//----- //\n", 1)[1]
    if step.shows_code == "c":
        assert "_tile_loadconfig" in shown
    elif step.shows_code == "cuda":
        assert "wmma::mma_sync" in shown
    elif name == "parse":
        assert "vector_reduce_add" in shown and "tile_matmul" not in shown
    elif name in ("select", "place-temporaries", "retag-memory", "check-amx", "report", "verify", "run-c",
                  "build-c", "emit-egg"):
        assert ("tile_matmul" in shown) == (name != "emit-egg")


def test_print_before_and_after_bracket_a_pass() -> None:
    result = run_cli("compile", str(WMMA), "--no-cache", "--store-in", "dct=WMMAAccumulator",
                     "--print-before", "wmma-lanes", "--print-after", "wmma-lanes")
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr
    before = stderr.split("IR Dump Before wmma-lanes")[1].split("IR Dump After")[0]
    after = stderr.split("IR Dump After wmma-lanes")[1]
    assert "gpu_lane" not in before and "gpu_lane<CUDA> (wmma.lane, 0, 32)" in after


def test_print_after_all_prints_every_pass_that_ran_in_order() -> None:
    result = run_cli("compile", str(AMX), "--no-cache", "--print-after", "all", "--emit", "c")
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr
    ran = re.findall(r"IR Dump After (\S+) ", stderr)
    expected = [p.name for p in PIPELINE if p.name not in ("emit-egg", "verify", "emit-cuda", "build-cuda",
                                                             "run-c", "build-c", "emit-html")]
    assert ran == expected


def test_timing_reports_each_pass() -> None:
    result = run_cli("compile", str(AMX), "--no-cache", "--timing", "--emit", "c")
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr
    assert "Pass execution timing report" in stderr
    rows = re.findall(r"^\s+(\d+\.\d{4}) \(\s*([\d.]+)%\)\s+(\S+)$", stderr, re.M)
    names = [name for _, _, name in rows]
    assert names[:3] == ["parse", "select", "place-temporaries"] and "emit-c" in names and names[-1] == "Total"
    total = float(rows[-1][0])
    assert abs(sum(float(t) for t, _, n in rows[:-1]) - total) < 0.002


def test_unknown_pass_names_are_usage_errors() -> None:
    result = run_cli("compile", str(AMX), "--print-after", "nonsense")
    assert result.returncode == 2
    assert "nonsense" in result.stderr.decode() and "Traceback" not in result.stderr.decode()


def test_verify_ir_checks_after_every_ir_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """--verify-ir runs the invariants after each IR pass (the goldens run it
    on every fixture); here the checks are observed directly."""
    from hardboiled.pipeline.compilation import Compilation
    from hardboiled.pipeline.options import CompileOptions
    from hardboiled.pipeline.passes import IR_PASSES
    from hardboiled.pipeline.runner import run_pipeline

    checked: list[str] = []

    def counting(program: ir.Stmt | ir.Module, *, after: str, blame_input: bool = False) -> None:
        checked.append(after)
        assert blame_input == (after == "parse")
        check_program(program, after=after, blame_input=blame_input)

    monkeypatch.setattr("hardboiled.ir.invariants.check_program", counting)
    options = CompileOptions.from_flags(selection=SelectionOptions(store_in={"dct": "WMMAAccumulator"}), verify_ir=True)
    run_pipeline(Compilation(WMMA.name, WMMA.read_bytes()), options)
    assert checked == [p.name for p in PIPELINE if p.name in IR_PASSES]


def test_invariant_checks_catch_broken_ir() -> None:
    store = ir.Store("out", ir.Broadcast(ir.FloatImm(0.0, ir.Float(32)), 8),
                     ir.Ramp(ir.IntImm(0), ir.IntImm(1), 4))
    assert "store of 8 lanes at an index of 4 lanes" in violations(store)[0].message
    assert "'out' is not a buffer in scope" in violations(store)[-1].message
    mixed = ir.Evaluate(ir.Binary(ir.BinOp.ADD, ir.IntImm(1), ir.FloatImm(1.0, ir.Float(32))))
    assert "operands of + have types int32 and float32" in violations(mixed)[0].message
    ok = ir.Allocate("out", ir.Float(32), "Auto", (ir.IntImm(8),), dataclasses.replace(
        store, index=ir.Ramp(ir.IntImm(0), ir.IntImm(1), 8)))
    assert violations(ok) == []
    with pytest.raises(InvariantViolation) as caught:
        check_program(store, after="select")
    assert "after pass 'select'" in caught.value.diagnostic.message


def test_verify_ir_blames_the_input_for_what_was_parsed_and_is_never_served_from_the_cache(tmp_path) -> None:
    source = tmp_path / "t.stmt"
    source.write_text("f[x] = g[x] + 1\n")
    args = ["compile", str(source), "--buffer-type", "g=int32", "--buffer-type", "f=int32",
            "--cache-dir", str(tmp_path / "cache")]
    assert run_cli(*args).returncode == 0  # fills the whole-file cache
    checked = run_cli(*args, "--verify-ir")
    stderr = checked.stderr.decode()
    assert checked.returncode == 2, stderr
    assert "the input breaks an IR invariant: 'f' is not a buffer in scope" in stderr
    assert "bug in hardboiled" not in stderr


def test_timing_includes_the_pass_that_failed() -> None:
    miss = FIXTURES.parent / "sweep" / "wmma_types-tf32tof32_M-32_N-8.stmt"  # a hardware limit
    result = run_cli("compile", str(miss), "--store-in", "prod=WMMAAccumulator", "--timing")
    stderr = result.stderr.decode()
    assert result.returncode == 1
    names = re.findall(r"^\s+\d+\.\d{4} \(\s*[\d.]+%\)\s+(\S+)$", stderr, re.M)
    assert names == ["parse", "select", "Total"]


def test_a_failure_while_writing_outputs_is_that_input_s_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from hardboiled.ir import printer
    from hardboiled.pipeline import driver

    def broken_printer(_program: object) -> str:
        raise RuntimeError("printer broke")

    monkeypatch.setattr(printer, "print_ir", broken_printer)  # the driver imports it when it writes IR
    options = CompileOptions()
    results = driver.compile_batch([(AMX.name, AMX.read_bytes(), None), (WMMA.name, WMMA.read_bytes(), None)],
                                   options, jobs=1)
    assert [r.exit_code for r in results] == [70, 70]
    assert all(not r.outputs and "printer broke" in r.diagnostics[-1].message for r in results)


def test_an_empty_build_path_builds_nothing(tmp_path) -> None:
    empty = CompileOptions.from_flags(build_path="")
    assert not empty.build.object and not empty.build.cuda and not empty.codegen.any
    result = run_cli("compile", str(AMX), "--build", "", "-o", str(tmp_path / "out.stmt"))
    assert result.returncode == 0, result.stderr.decode()
    assert "built" not in result.stderr.decode()
