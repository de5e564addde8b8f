"""The child that --run calls a kernel's entry points in (verify/kernel_call.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hardboiled import ir
from hardboiled.codegen.abi import KernelArgument
from hardboiled.codegen.toolchain import find_compiler
from hardboiled.verify import kernel_call
from hardboiled.verify.interp import BufferT
from hardboiled.verify.run import KernelCrashed, run_in_child

# A buffer p of floats: the raw entry point doubles each element and returns
# how far p is from a 64-byte boundary; the halide_buffer_t one runs BODY.
SOURCE = """
#include <stdint.h>
#include <stdlib.h>
struct halide_buffer_t;
int k_raw(float *p, int min, int extent, int stride) {
  for (int i = 0; i < extent; i++) p[i * stride] *= 2;
  return (int)((uintptr_t)p % 64);
}
int k(struct halide_buffer_t *b) { BODY }
"""


def _library(tmp_path: Path, body: str) -> Path:
    source, library = tmp_path / "k.c", tmp_path / "k.so"
    source.write_text(SOURCE.replace("BODY", body))
    subprocess.run([*find_compiler(None).command, "-O0", "-shared", "-fPIC", str(source), "-o", str(library)],
                   check=True)
    return library


ARGUMENTS = [KernelArgument("p", ir.Float(32), 1, output=True)]


def _buffers(values: list[float]) -> dict[str, BufferT]:
    data = np.array(values, np.float32)
    return {"p": BufferT("p", ir.Float(32), data, (0,), (len(values),), (1,))}


@pytest.mark.slow
def test_each_call_gets_its_own_buffers_back_from_aligned_memory(tmp_path: Path) -> None:
    library = _library(tmp_path, "return 7;")
    calls = [("raw", _buffers([1, 2, 3])), ("halide_buffer_t", _buffers([5, 6, 7])), ("raw", _buffers([-1.5]))]
    assert run_in_child(library, "k", ARGUMENTS, calls) == [0, 7, 0]
    assert calls[0][1]["p"].data.tolist() == [2, 4, 6]
    assert calls[1][1]["p"].data.tolist() == [5, 6, 7]  # the halide_buffer_t entry point left it alone
    assert calls[2][1]["p"].data.tolist() == [-3]


@pytest.mark.slow
@pytest.mark.parametrize("body, how", [("volatile int *q = 0; return *q;", "crashed (SIGSEGV)"),
                                       ("for (;;) {} return 0;", "did not finish within 1 s")])
def test_a_call_that_is_lost_leaves_the_answers_before_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           body: str, how: str) -> None:
    """The entry points run one after the other in one child: a crash or a
    hang in the second is reported for the second, and the first's answer
    stands."""
    from hardboiled.verify import run

    monkeypatch.setattr(run, "KERNEL_TIMEOUT_S", 1.0)
    library = _library(tmp_path, body)
    calls = [("raw", _buffers([1, 2])), ("halide_buffer_t", _buffers([3])), ("raw", _buffers([4]))]
    first, second, third = run_in_child(library, "k", ARGUMENTS, calls)
    assert first == 0 and calls[0][1]["p"].data.tolist() == [2, 4]
    for lost, entry in ((second, "halide_buffer_t"), (third, "raw")):
        assert isinstance(lost, KernelCrashed)
        assert f"the generated kernel's {entry} entry point {how}" in lost.diagnostic.message


@pytest.mark.slow
def test_a_child_that_aborts_after_its_last_answer_loses_the_last_call(tmp_path: Path) -> None:
    """A crash after every answer was written (here an abort as the process
    exits, as a corrupted heap would) is not a pass: the last call's, as
    when each entry point had a child of its own."""
    library = _library(tmp_path, "atexit(abort); return 0;")
    calls = [("raw", _buffers([1])), ("halide_buffer_t", _buffers([2]))]
    first, last = run_in_child(library, "k", ARGUMENTS, calls)
    assert first == 0
    assert isinstance(last, KernelCrashed)
    assert "the generated kernel's halide_buffer_t entry point crashed (SIGABRT)" in last.diagnostic.message


@pytest.mark.slow
def test_a_library_without_the_entry_point_is_a_toolchain_error(tmp_path: Path) -> None:
    from hardboiled.codegen.toolchain import ToolchainError

    library = _library(tmp_path, "return 0;")
    with pytest.raises(ToolchainError, match="cannot be loaded"):
        run_in_child(library, "not_there", ARGUMENTS, [("raw", _buffers([1]))])


def test_the_child_loads_neither_numpy_nor_hardboiled() -> None:
    """It starts for every --run: as a script, on the standard library."""
    probe = ("import runpy, sys\n"
             f"runpy.run_path({kernel_call.__file__!r}, run_name='probe')\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'hardboiled')))\n")
    proc = subprocess.run([sys.executable, "-S", "-P", "-c", probe], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"
