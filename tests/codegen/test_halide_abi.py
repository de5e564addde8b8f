"""Halide's calling convention for generated code (issue 17): the
halide_buffer_t entry point and Halide's argument order.

The entry point must refuse a buffer that does not match what the dump
takes for granted (type, dimensions, extents, strides) with Halide's error
code, and leave the output untouched: never a wrong result, never a crash.
"""

from __future__ import annotations

import copy
import ctypes
import functools
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from hardboiled import ir
from hardboiled.codegen.abi import HALIDE_BUFFER_FLAGS, HALIDE_ERROR_CODES, halide_error_code, kernel_signature
from hardboiled.codegen.c import generate_c
from hardboiled.codegen.cuda import generate_cuda
from hardboiled.codegen.entry_points import HALIDE_BUFFER_LAYOUT
from hardboiled.codegen.toolchain import compile_c, find_compiler
from hardboiled.frontend.parse import parse_input
from hardboiled.support.diagnostics import HardboiledError
from hardboiled.verify.compare import run_original
from hardboiled.verify.interp import BufferT
from hardboiled.verify.run import HalideBuffer, halide_buffer

from ..conftest import FIXTURES, ROOT, run_cli, tensorized_app

HALIDE_INCLUDE = Path(__import__("halide").__file__).parent / "include"
APP = "amx_conv1d"
"""An AMX application whose schedule fixes its buffers' shapes (dense())."""


def test_error_codes_are_halides() -> None:
    """The table the entry points return from is HalideRuntime.h's enum."""
    header = (HALIDE_INCLUDE / "HalideRuntime.h").read_text()
    enum = {m.group(1): int(m.group(2)) for m in re.finditer(r"halide_error_code_(\w+) = (-?\d+),", header)}
    assert {name: enum[name] for name in HALIDE_ERROR_CODES} == HALIDE_ERROR_CODES
    assert halide_error_code("halide_error_bad_type") == enum["bad_type"]
    assert halide_error_code("halide_error_param_too_small_i64") == enum["param_too_small"]
    assert halide_error_code("halide_error_buffer_extents_too_large") == enum["buffer_extents_too_large"]
    assert halide_error_code("some_other_call") == enum["generic_error"]
    flags = {m.group(1): int(m.group(2)) for m in re.finditer(r"halide_buffer_flag_(\w+) = (\d+)", header)}
    assert {name: flags[name] for name in HALIDE_BUFFER_FLAGS} == HALIDE_BUFFER_FLAGS


@pytest.mark.slow
def test_the_declared_layout_is_halides(tmp_path: Path) -> None:
    """Without HalideRuntime.h the source declares halide_buffer_t itself:
    compiled beside the real header (renamed), every field is at the same
    offset, as ctypes' HalideBuffer is."""
    ours = HALIDE_BUFFER_LAYOUT.replace("halide_", "ours_").replace("HALIDE_HALIDERUNTIME_H", "OURS_UNDEFINED")
    ours = re.sub(r'#if defined\(__has_include\).*?#endif\n#endif\n', "", ours, flags=re.S)
    fields = [name for name, _ in HalideBuffer._fields_]
    checks = [f"_Static_assert(offsetof(halide_buffer_t, {f}) == offsetof(ours_buffer_t, {f}), \"{f}\");"
              for f in fields]
    checks += [f"_Static_assert(offsetof(halide_buffer_t, {f}) == {getattr(HalideBuffer, f).offset}, \"{f}\");"
               for f in fields]
    checks += ["_Static_assert(sizeof(halide_buffer_t) == sizeof(ours_buffer_t), \"size\");",
               "_Static_assert(sizeof(halide_dimension_t) == sizeof(ours_dimension_t), \"dim\");"]
    source = tmp_path / "layout.c"
    source.write_text("#include <stddef.h>\n#include <stdint.h>\n#include \"HalideRuntime.h\"\n" + ours
                      + "\n".join(checks) + "\n")
    compiler = find_compiler()
    proc = subprocess.run([*compiler.command, "-c", "-I", str(HALIDE_INCLUDE), str(source), "-o",
                           str(tmp_path / "layout.o")], capture_output=True, text=True)
    assert proc.returncode == 0, f"{compiler.name}: {proc.stderr}"


@functools.cache
def _app_library(directory: str) -> tuple[Path, ir.Stmt, ir.Stmt]:
    """The application's C built as a shared library (emulated AMX), with
    HalideRuntime.h on the include path: the real header's layout."""
    original = parse_input((ROOT / "tests" / "fixtures" / "apps" / f"{APP}.stmt").read_text()).ir
    assert isinstance(original, ir.Stmt)
    rewritten = tensorized_app(APP)
    library = Path(directory) / "kernel.so"
    compile_c(generate_c(rewritten, "conv"), library, shared=True, amx="emulate", compiler=find_compiler(),
              extra=("-I", str(HALIDE_INCLUDE)))
    return library, original, rewritten


def _call(library: Path, structs: list[HalideBuffer | None]) -> int:
    kernel = ctypes.CDLL(str(library)).conv
    kernel.restype = ctypes.c_int
    return int(kernel(*(ctypes.byref(s) if s is not None else None for s in structs)))


Mutation = Callable[[dict[str, BufferT], dict[str, HalideBuffer]], None]


def _shrink_extent(buffers: dict[str, BufferT], structs: dict[str, HalideBuffer]) -> None:
    structs["image"].dim[0].extent -= 1


def _wrong_stride(buffers: dict[str, BufferT], structs: dict[str, HalideBuffer]) -> None:
    structs["image"].dim[1].stride += 16


def _wrong_inner_stride(buffers: dict[str, BufferT], structs: dict[str, HalideBuffer]) -> None:
    structs["kernel"].dim[0].stride = 2


def _wrong_type(buffers: dict[str, BufferT], structs: dict[str, HalideBuffer]) -> None:
    structs["image"].type.code = 2  # float16 where the pipeline reads bfloat16


def _wrong_bits(buffers: dict[str, BufferT], structs: dict[str, HalideBuffer]) -> None:
    structs["conv_global_wrapper$0"].type.bits = 64


def _wrong_dimensions(buffers: dict[str, BufferT], structs: dict[str, HalideBuffer]) -> None:
    structs["kernel"].dimensions = 2


def _null_host(buffers: dict[str, BufferT], structs: dict[str, HalideBuffer]) -> None:
    structs["kernel"].host = None


def _device_dirty(buffers: dict[str, BufferT], structs: dict[str, HalideBuffer]) -> None:
    structs["image"].flags = HALIDE_BUFFER_FLAGS["device_dirty"]


def _moved_output(buffers: dict[str, BufferT], structs: dict[str, HalideBuffer]) -> None:
    structs["conv_global_wrapper$0"].dim[1].min = 8


WRONG_BUFFERS: dict[str, tuple[Mutation, str]] = {
    "too-small extent": (_shrink_extent, "constraint_violated"),
    "wrong row stride": (_wrong_stride, "constraint_violated"),
    "wrong element stride": (_wrong_inner_stride, "constraint_violated"),
    "wrong type code": (_wrong_type, "bad_type"),
    "wrong type bits": (_wrong_bits, "bad_type"),
    "wrong dimensions": (_wrong_dimensions, "bad_dimensions"),
    "null host": (_null_host, "host_is_null"),
    "newer data on a device": (_device_dirty, "device_dirty_with_no_device_support"),
    "output region moved": (_moved_output, "access_out_of_bounds"),  # it would read past the image
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(WRONG_BUFFERS))
def test_a_wrong_halide_buffer_gets_an_error_code_and_no_output(tmp_path_factory: pytest.TempPathFactory,
                                                                case: str) -> None:
    library, original, rewritten = _app_library(str(tmp_path_factory.getbasetemp()))
    mutate, expected = WRONG_BUFFERS[case]
    buffers, outputs, _ = run_original(original, {}, 0)
    buffers = copy.deepcopy(buffers)
    arguments = kernel_signature(rewritten)
    structs = {a.buffer: halide_buffer(buffers[a.buffer], a) for a in arguments}
    for name in outputs:
        buffers[name].data[...] = 0
    sentinel = {name: buffers[name].data.copy() for name in outputs}
    mutate(buffers, structs)
    assert _call(library, [structs[a.buffer] for a in arguments]) == HALIDE_ERROR_CODES[expected]
    for name in outputs:  # nothing written
        assert np.array_equal(buffers[name].data, sentinel[name]), case


def test_a_null_buffer_and_a_good_call(tmp_path_factory: pytest.TempPathFactory) -> None:
    library, original, rewritten = _app_library(str(tmp_path_factory.getbasetemp()))
    buffers, outputs, expected = run_original(original, {}, 0)
    arguments = kernel_signature(rewritten)
    structs = {a.buffer: halide_buffer(buffers[a.buffer], a) for a in arguments}
    assert _call(library, [structs["image"], None, structs["conv_global_wrapper$0"]]) \
        == HALIDE_ERROR_CODES["buffer_argument_is_null"]
    output = structs["conv_global_wrapper$0"]
    output.flags = HALIDE_BUFFER_FLAGS["device_dirty"]  # refused for an output too, as Halide's own checks do
    assert _call(library, [structs[a.buffer] for a in arguments]) \
        == HALIDE_ERROR_CODES["device_dirty_with_no_device_support"]
    output.flags = 0
    assert _call(library, [structs[a.buffer] for a in arguments]) == 0
    assert output.flags == HALIDE_BUFFER_FLAGS["host_dirty"]  # the host now holds the result
    for name in outputs:
        assert np.allclose(buffers[name].data, expected[name].data, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_cuda_entry_point_refuses_a_wrong_buffer_before_touching_the_gpu(tmp_path: Path) -> None:
    """The CUDA halide_buffer_t entry point checks on the host, before any
    CUDA call: so it runs here even without a GPU. It takes device
    pointers (buffer->device) and refuses a buffer with none, or one whose
    newer data is on the host."""
    source = tmp_path / "conv.cu"
    source.write_text(generate_cuda(tensorized_app("conv1d"), "conv"))
    header = ('#include "HalideRuntime.h"\nextern "C" int conv(halide_buffer_t *, halide_buffer_t *, '
              'halide_buffer_t *);\n#include <stdio.h>\n')
    main = tmp_path / "main.cu"
    main.write_text(header + r"""
/* conv1d takes float16 image and kernel, float32 output. */
static halide_dimension_t image_dim[2] = {{0, 64, 1, 0}, {0, 8, 64, 0}}, kernel_dim[1] = {{0, 16, 1, 0}},
                          out_dim[2] = {{0, 48, 1, 0}, {0, 8, 48, 0}};
static halide_buffer_t make(halide_type_code_t code, int bits, int dims, halide_dimension_t *dim) {
  halide_buffer_t b = {};
  b.device = 256; b.host = 0; b.type.code = code; b.type.bits = bits; b.type.lanes = 1;
  b.dimensions = dims; b.dim = dim;
  return b;
}
int main(void) {
  halide_buffer_t image = make(halide_type_float, 16, 2, image_dim), kernel = make(halide_type_float, 16, 1,
                  kernel_dim), out = make(halide_type_float, 32, 2, out_dim);
  halide_buffer_t wrong_type = image; wrong_type.type.bits = 32;
  halide_buffer_t no_device = kernel; no_device.device = 0;
  halide_buffer_t host_newer = kernel; host_newer.flags = halide_buffer_flag_host_dirty;
  halide_buffer_t wrong_dims = out; wrong_dims.dimensions = 3;
  printf("%d %d %d %d %d\n", conv(&wrong_type, &kernel, &out), conv(&image, &no_device, &out),
         conv(&image, &host_newer, &out), conv(&image, &kernel, &wrong_dims), conv(0, &kernel, &out));
  return 0;
}
""")
    program = tmp_path / "check"
    from hardboiled.codegen.cuda import GENERATED_CUDA_FLAGS

    proc = subprocess.run(["nvcc", "-arch=sm_80", *GENERATED_CUDA_FLAGS, "-I", str(HALIDE_INCLUDE), str(source),
                           str(main), "-o", str(program)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    ran = subprocess.run([str(program)], capture_output=True, text=True, timeout=60)
    codes = HALIDE_ERROR_CODES
    assert ran.stdout.split() == [str(codes[c]) for c in ("bad_type", "device_interface_no_device",
                                                          "host_and_device_dirty", "bad_dimensions",
                                                          "buffer_argument_is_null")], ran.stderr


# ------------------------------------------------------------ argument order
def test_default_order_is_inputs_then_outputs() -> None:
    stmt = parse_input((FIXTURES / "cpu_math_calls" / "vectorizing.stmt").read_text()).ir
    assert isinstance(stmt, ir.Stmt)
    assert [a.buffer for a in kernel_signature(stmt)] == ["A", "B", "f"]
    stmt = parse_input((FIXTURES / "wmma_conv_layer" / "vectorizing.stmt").read_text()).ir
    assert isinstance(stmt, ir.Stmt)
    assert [(a.buffer, a.output) for a in kernel_signature(stmt)] == [
        ("bias", False), ("filter", False), ("input", False), ("output", True)]


def test_order_from_args_and_its_errors() -> None:
    stmt = parse_input((FIXTURES / "cpu_math_calls" / "vectorizing.stmt").read_text()).ir
    assert isinstance(stmt, ir.Stmt)
    assert [a.buffer for a in kernel_signature(stmt, ("f", "B", "A"))] == ["f", "B", "A"]
    for order, message in ((("A", "B"), "leaves out 'f'"), (("A", "B", "f", "A"), "names 'A' twice"),
                           (("A", "B", "f", "alpha"), "'alpha' is not a buffer or param")):
        with pytest.raises(HardboiledError, match=message):
            kernel_signature(stmt, order)


@pytest.mark.slow
def test_order_on_the_command_line_and_from_a_lowered_module(tmp_path: Path) -> None:
    """--args orders the parameters; a compile_to_lowered_stmt module gives
    its own signature (A, B, f), which --run then calls and checks."""
    vectorizing = str(FIXTURES / "cpu_math_calls" / "vectorizing.stmt")
    proc = run_cli("compile", vectorizing, "--emit", "c", "--name", "k", "--args", "B,A,f", "--run", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    assert b"\nint k(struct halide_buffer_t *b_B, struct halide_buffer_t *b_A, struct halide_buffer_t *b_f)" \
        in proc.stdout
    bad = run_cli("compile", vectorizing, "--emit", "c", "--args", "A,f", "--no-cache")
    assert bad.returncode == 2 and b"leaves out 'B'" in bad.stderr
    empty = run_cli("compile", vectorizing, "--emit", "c", "--args", "A,,f", "--no-cache")
    assert empty.returncode == 2 and b"--args" in empty.stderr
    module = run_cli("compile", str(FIXTURES / "cpu_math_calls" / "lowered.stmt"), "--emit", "c", "--name", "k",
                     "--run", "--no-cache")
    assert module.returncode == 0, module.stderr
    assert b"\nint k(struct halide_buffer_t *b_A, struct halide_buffer_t *b_B, struct halide_buffer_t *b_f)" \
        in module.stdout
    assert b"ran the generated C" in module.stderr


ZERO_POINTS = ROOT / "tests" / "fixtures" / "sweep" / "amx_types-i8i8_tiles-1x2_operand-zero_point_param.stmt"


def test_scalar_params_are_arguments_passed_by_value() -> None:
    """A pipeline's Params (here run-time zero points za and zb) are
    arguments like its buffers: inputs, sorted with them by name."""
    stmt = parse_input(ZERO_POINTS.read_text()).ir
    assert isinstance(stmt, ir.Stmt)
    signature = kernel_signature(stmt)
    assert [(a.buffer, a.scalar, a.dimensions) for a in signature] == [
        ("A", False, 2), ("B", False, 2), ("za", True, 0), ("zb", True, 0), ("mm_global_wrapper$0", False, 2)]
    assert signature[2].type == ir.Int(32)
    assert [a.buffer for a in kernel_signature(stmt, ("A", "za", "B", "zb", "mm_global_wrapper$0"))] == [
        "A", "za", "B", "zb", "mm_global_wrapper$0"]


@pytest.mark.slow
def test_scalar_params_in_halide_s_order_are_passed_and_run() -> None:
    """--args puts each Param where the pipeline declares it; both entry
    points take it by value, and --run passes the values the interpreter
    drew (the result matches the original's)."""
    proc = run_cli("compile", str(ZERO_POINTS), "--emit", "c", "--name", "k", "--run", "--no-cache",
                   "--args", "A,za,B,zb,mm_global_wrapper$0")
    assert proc.returncode == 0, proc.stderr
    assert (b"\nint k(struct halide_buffer_t *b_A, int32_t p_za, struct halide_buffer_t *b_B, int32_t p_zb, "
            b"struct halide_buffer_t *b_mm_global_wrapper_0)") in proc.stdout
    assert re.search(rb"int k_raw\(int8_t \*A_host_pointer, [^)]*, int32_t za, int8_t \*B_host_pointer", proc.stdout)
    assert b"ran the generated C" in proc.stderr and b"equal" in proc.stderr
