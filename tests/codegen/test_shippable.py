"""Generated code that can be shipped (issue 17): named entry points, a
header beside the source, a C file that compiles with no -I, two kernels in
one binary, compilers named with arguments, Halide's argument order and the
halide_buffer_t entry point (which refuses a wrong buffer with an error
code). The Python API is tested in test_api.py, examples/aot in
test_aot_example.py."""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from hardboiled import ir
from hardboiled.codegen.abi import entry_point_name, is_entry_point_name, kernel_signature
from hardboiled.codegen.c import generate_c, generate_c_code
from hardboiled.codegen.c_text import GeneratedCode
from hardboiled.codegen.cuda import GENERATED_CUDA_FLAGS, generate_cuda_code
from hardboiled.codegen.toolchain import find_compiler
from hardboiled.pipeline.options import CompileOptions
from hardboiled.targets.wmma import WMMA_TENSOR_CORE
from hardboiled.verify.run import run_built_kernel

from ..conftest import FIXTURES, run_cli, tensorized_fixture

AMX_KERNELS = {"amx_bf16_matmul_std_single": "bf16_matmul", "amx_int8_matmul_std_tiled": "int8_matmul"}
WMMA_KERNELS = {"wmma_f16_matmul": "f16_matmul", "wmma_conv1d": "conv1d_rows"}


@functools.cache
def _tensorized(case: str) -> tuple[ir.Stmt, ir.Stmt]:
    return tensorized_fixture(case)


def _exported(obj: Path) -> set[str]:
    """The global functions an object or library defines."""
    out = subprocess.run(["nm", "-g", "--defined-only", str(obj)], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[1:2] == ["T"]}


# ------------------------------------------------------------ names
def test_the_entry_point_is_named_after_the_input_or_by_name() -> None:
    assert entry_point_name("conv-layer.debug.log") == "conv_layer"
    assert entry_point_name("build/3x3.stmt") == "k_3x3"
    assert entry_point_name("int.stmt") == "k_int"  # a keyword is no name
    assert entry_point_name("main.stmt") == "k_main"  # nor is a program's main
    assert entry_point_name("hb_div.stmt") == "k_hb_div"  # nor a helper of the generated code
    assert entry_point_name("<stdin>") == entry_point_name("-") == "hb_kernel"
    assert is_entry_point_name("amx_matmul") and is_entry_point_name("hb_kernel")
    assert not any(map(is_entry_point_name, ("1x", "class", "main", "hb_div", "hb_amx_enable")))


def test_name_on_the_command_line(tmp_path: Path) -> None:
    log = tmp_path / "conv-layer.debug.log"
    shutil.copy(FIXTURES / "amx_bf16_matmul_std_single" / "debug.log", log)
    default = run_cli("compile", str(log), "--emit", "c", "--no-cache")
    assert default.returncode == 0, default.stderr
    assert b"\nint conv_layer_raw(uint16_t *" in default.stdout
    assert b"\nint conv_layer(struct halide_buffer_t *b_A, " in default.stdout
    named = run_cli("compile", str(log), "--emit", "c", "--name", "my_matmul", "--no-cache")
    assert b"\nint my_matmul(struct halide_buffer_t *" in named.stdout and b"conv_layer" not in named.stdout
    for bad, message in (("1x", b"not a C identifier"), ("while", b"keyword"), ("hb_mod", b"hb_")):
        refused = run_cli("compile", str(log), "--emit", "c", "--name", bad)
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
    two = run_cli("compile", str(log), str(log), "--name", "k", "-o", str(tmp_path / "out"))
    assert two.returncode == 2 and b"--name names one function" in two.stderr


@pytest.mark.slow
def test_run_calls_the_named_function(tmp_path: Path) -> None:
    """--run builds the C and calls it through its own name."""
    proc = run_cli("compile", str(FIXTURES / "amx_bf16_matmul_std_single" / "debug.log"), "--name", "mm_tile",
                   "--run", "--emit", "c", "-o", str(tmp_path / "mm.c"), "--no-cache")
    assert proc.returncode == 0, proc.stderr
    assert b"ran the generated C" in proc.stderr


# ------------------------------------------------------------ a header beside the source
def test_a_header_is_written_beside_the_source(tmp_path: Path) -> None:
    fixture = FIXTURES / "amx_bf16_matmul_std_single" / "debug.log"
    proc = run_cli("compile", str(fixture), "--emit", "c", "--name", "amx_mm", "-o", str(tmp_path / "amx_mm.c"),
                   "--no-cache")
    assert proc.returncode == 0, proc.stderr
    header = (tmp_path / "amx_mm.h").read_text()
    assert "#ifndef HB_AMX_MM_H" in header and 'extern "C" {' in header
    assert "A_host_pointer: A, input, bfloat16 elements (uint16_t in memory), 2 dimensions" in header
    assert "mm_global_wrapper_0_host_pointer: mm_global_wrapper$0, output, float32 elements" in header
    assert "b_A: A, input, bfloat16, 2 dimensions" in header
    for entry in ("int amx_mm(struct halide_buffer_t *", "int amx_mm_raw(uint16_t *"):
        declaration = next(line for line in header.splitlines() if line.startswith(entry)).rstrip(";")
        assert declaration + " {" in (tmp_path / "amx_mm.c").read_text()  # the same declaration
    # a source written to a .h name is not overwritten by its header
    odd = run_cli("compile", str(fixture), "--emit", "c", "-o", str(tmp_path / "odd.h"), "--no-cache")
    assert odd.returncode == 0 and "_tile_loadconfig" in (tmp_path / "odd.h").read_text()
    # into a directory: NAME.h beside NAME.c; on standard output, no header
    out = tmp_path / "dir"
    assert run_cli("compile", str(fixture), "--emit", "ir,c", "-o", str(out), "--no-cache").returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["debug.c", "debug.h", "debug.stmt"]


# ------------------------------------------------------------ self-contained C
@pytest.mark.slow
def test_the_emitted_c_compiles_alone_and_exports_only_its_entry_point(tmp_path: Path) -> None:
    """No -I: the AMX runtime is inlined. The native build needs only the
    compiler's AMX flags (it compiles on any x86-64 gcc or clang); the
    emulated one only -DHB_AMX_EMULATE."""
    compiler = find_compiler()
    _, rewritten = _tensorized("amx_bf16_matmul_std_single")
    source = tmp_path / "k.c"
    source.write_text(generate_c(rewritten, "amx_mm"))
    # Only HalideRuntime.h, and only where the compiler finds it (__has_include).
    assert [line for line in source.read_text().splitlines() if '#include "' in line] == ['#include "HalideRuntime.h"']
    for label, flags in (("emulated", ["-DHB_AMX_EMULATE"]), ("native", ["-mamx-tile", "-mamx-bf16", "-mamx-int8"])):
        obj = tmp_path / f"{label}.o"
        proc = subprocess.run([*compiler.command, "-c", "-O2", *flags, str(source), "-o", str(obj)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"{compiler.name} ({label}): {proc.stderr}"
        assert _exported(obj) == {"amx_mm", "amx_mm_raw"}, f"{compiler.name} ({label})"


def _separately_built(tmp_path: Path, kernels: dict[str, str], suffix: str, generate: Callable[..., GeneratedCode],
                      command: list[str]) -> tuple[list[Path], list[str], list[str]]:
    """Each kernel's source and header written under its own name and
    compiled alone: the objects, the #include lines, and calls of each
    entry point with null buffers (they return an error code: a check
    fails)."""
    objects, includes, calls = [], [], []
    for case, name in kernels.items():
        _, rewritten = _tensorized(case)
        code = generate(rewritten, name)
        (tmp_path / f"{name}{suffix}").write_text(code.source)
        (tmp_path / f"{name}.h").write_text(code.header)
        includes.append(f'#include "{name}.h"')
        objects.append(tmp_path / f"{name}.o")
        subprocess.run([*command, "-c", str(tmp_path / f"{name}{suffix}"), "-o", str(objects[-1])], check=True)
        zeros = sum(1 + 3 * argument.dimensions for argument in kernel_signature(rewritten))
        calls.append(f"{name}_raw({', '.join(['0'] * zeros)}")
        calls.append(f"{name}({', '.join(['0'] * len(kernel_signature(rewritten)))}")
    return objects, includes, calls


@pytest.mark.slow
def test_two_amx_kernels_in_one_library_both_compute_right(tmp_path: Path) -> None:
    """Two different kernels, each with its header, compiled separately and
    linked into one shared library (no symbol collides) with a caller that
    includes both headers: each is called there on the interpreter's random
    inputs and matches the original IR."""
    compiler = find_compiler()
    objects, includes, calls = _separately_built(
        tmp_path, AMX_KERNELS, ".c", generate_c_code,
        [*compiler.command, "-O2", "-fPIC", "-DHB_AMX_EMULATE"])
    caller = tmp_path / "caller.c"
    caller.write_text("\n".join([*includes, "int call_both(void) {",
                                 f"  return {' + '.join(call + ')' for call in calls)};", "}", ""]))
    subprocess.run([*compiler.command, "-c", "-fPIC", "-Wall", "-Werror", str(caller), "-o", str(tmp_path / "caller.o")],
                   check=True)
    library = tmp_path / "both.so"
    subprocess.run([*compiler.command, "-shared", *map(str, objects), str(tmp_path / "caller.o"), "-o", str(library),
                    "-lm"], check=True)
    assert {*AMX_KERNELS.values(), *(f"{name}_raw" for name in AMX_KERNELS.values()), "call_both"} <= _exported(library)
    for case, name in AMX_KERNELS.items():
        original, rewritten = _tensorized(case)
        result = run_built_kernel(original, rewritten, library, name)
        assert result.ok, f"{name} ({compiler.name}): {result.summary()}"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_two_cuda_kernels_link_into_one_program(tmp_path: Path) -> None:
    """Two different Tensor Core kernels, compiled separately by nvcc and
    linked into one program that calls both through their headers (on the
    caller's stream). Without a GPU the program is linked, not run."""
    nvcc = ["nvcc", f"-arch=sm_{WMMA_TENSOR_CORE.default_sm}", "-std=c++17", *GENERATED_CUDA_FLAGS]
    objects, includes, calls = _separately_built(tmp_path, WMMA_KERNELS, ".cu", generate_cuda_code, nvcc)
    for obj, name in zip(objects, WMMA_KERNELS.values()):
        assert {s for s in _exported(obj) if not s.startswith("_")} == {name, f"{name}_raw"}  # kernels are static
    main = tmp_path / "main.cu"
    main.write_text("\n".join([*includes, "#include <stdio.h>", "int main(void) {", "  cudaStream_t stream = 0;",
                               *(f'  printf("%d\\n", {call}{", stream" if "_raw(" in call else ""}));'
                                 for call in calls), "  return 0;", "}", ""]))
    program = tmp_path / "both"
    proc = subprocess.run([*nvcc, str(main), *map(str, objects), "-o", str(program)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert program.exists()


# ------------------------------------------------------------ toolchain
@pytest.mark.slow
def test_compilers_are_named_with_arguments(tmp_path: Path) -> None:
    gcc = shutil.which("gcc")
    assert gcc is not None
    compiler = find_compiler("gcc -O1 -DHB_SOMETHING=1")
    assert compiler.path == gcc and compiler.arguments == ("-O1", "-DHB_SOMETHING=1")
    assert compiler.command == [gcc, "-O1", "-DHB_SOMETHING=1"]
    built = tmp_path / "k.so"
    proc = run_cli("compile", str(FIXTURES / "amx_bf16_matmul_std_single" / "debug.log"), "--build", str(built),
                   "--cc", "gcc -O1", "-I", str(tmp_path), "--include-dir", str(tmp_path), "--no-cache",
                   env={"CC": ""})
    assert proc.returncode == 0, proc.stderr
    assert built.exists() and b"with gcc -O1" in proc.stderr
    bad = run_cli("compile", str(FIXTURES / "amx_bf16_matmul_std_single" / "debug.log"), "--build", str(built),
                  "--cc", "gcc 'unclosed", "--no-cache")
    assert bad.returncode != 0 and b"cannot split the C compiler" in bad.stderr
    options = CompileOptions.from_flags(include_dirs=("a", "b c"))
    assert options.build.include_flags == ("-I", "a", "-I", "b c")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_build_makes_objects_and_libraries_of_cuda_too(tmp_path: Path) -> None:
    """--build FILE.o / FILE.so: nvcc for a GPU program, the C compiler for
    a CPU one; either way the entry point is the one global function."""
    wmma = str(FIXTURES / "wmma_f16_matmul" / "vectorizing.stmt")
    for built in ("k.o", "k.so"):
        proc = run_cli("compile", wmma, "--store-in", "prod=WMMAAccumulator", "--name", "f16_mm", "--build",
                       str(tmp_path / built), "--no-cache")
        assert proc.returncode == 0, proc.stderr
        assert b"with nvcc" in proc.stderr
        assert "f16_mm" in _exported(tmp_path / built)
    proc = run_cli("compile", str(FIXTURES / "amx_bf16_matmul_std_single" / "debug.log"), "--build",
                   str(tmp_path / "amx.so"), "--no-cache")
    assert proc.returncode == 0 and b"with nvcc" not in proc.stderr, proc.stderr
    assert "debug" in _exported(tmp_path / "amx.so")
