"""examples/aot (issue 17): a Halide generator built ahead of time by
Halide and through hardboiled, linked into one C program that calls both
through halide_buffer_t: it must build, run, match Halide on every output,
and see wrong buffers refused with Halide's own error codes. AMX runs
natively where the CPU has it, through the emulation elsewhere."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hardboiled.codegen.toolchain import cpu_has_amx

from ..conftest import HARDBOILED, ROOT

pytestmark = pytest.mark.slow
"""Every test here runs a C compiler, Halide or make and cmake."""

EXAMPLE = ROOT / "examples" / "aot"
AMX = "native" if cpu_has_amx() else "emulate"
EXPECTED = [
    "conv1d_amx matches Halide's AOT reference on all 2048 outputs",
    "an image of float32: conv1d_amx -3, Halide -3",
    "a kernel one tap short: conv1d_amx -4, Halide -4",
    "an output with another row stride: conv1d_amx -8, Halide -8",
]


def _check(run: subprocess.CompletedProcess[str], how: str) -> None:
    assert run.returncode == 0, f"{how} (AMX {AMX}):\n{run.stdout}\n{run.stderr}"
    assert run.stdout.splitlines()[-len(EXPECTED):] == EXPECTED, run.stdout


def test_the_makefile_builds_and_the_program_matches_halide(tmp_path: Path) -> None:
    run = subprocess.run(["make", "--no-print-directory", "-C", str(EXAMPLE), f"BUILD={tmp_path}", f"PYTHON={sys.executable}",
                          f"HARDBOILED={HARDBOILED}", f"AMX={AMX}"], capture_output=True, text=True, timeout=600)
    _check(run, "make")
    assert sorted(p.name for p in tmp_path.glob("conv1d_amx.*")) == ["conv1d_amx.c", "conv1d_amx.h", "conv1d_amx.o"]


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_the_cmake_build_does_the_same(tmp_path: Path) -> None:
    configure = subprocess.run(["cmake", "-S", str(EXAMPLE), "-B", str(tmp_path), f"-DPython3_EXECUTABLE={sys.executable}",
                                f"-DHARDBOILED={HARDBOILED}", f"-DAMX={AMX}"], capture_output=True, text=True,
                               timeout=300)
    assert configure.returncode == 0, configure.stderr
    build = subprocess.run(["cmake", "--build", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    _check(subprocess.run([str(tmp_path / "conv1d_check")], capture_output=True, text=True, timeout=60), "cmake")
