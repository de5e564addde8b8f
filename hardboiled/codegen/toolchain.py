"""Compiling generated C, and running it.

* The compiler is ``--cc``, else ``$CC``, else ``clang`` if it is on PATH,
  else ``gcc``.
* AMX: ``native`` compiles Intel's intrinsics (hb_amx.h writes them as
  the instructions, without parsing <immintrin.h>) with ``-mamx-tile
  -mamx-bf16 -mamx-int8``; ``emulate`` compiles the portable emulation in
  hardboiled/codegen/runtime/hb_amx_emulation.h; ``auto`` emulates unless
  /proc/cpuinfo lists ``amx_tile``.
* A compiler failure is a ``ToolchainError`` (exit status 3) carrying the
  compiler's own message.
* CUDA: ``compile_cuda`` runs ``nvcc`` (``$NVCC`` or the one on PATH) to
  PTX or a cubin for one ``sm_XX`` architecture, sm_75 or newer (CUDA 13
  rejects Volta); its failures are ``ToolchainError`` too.
* verify/run.py's ``run_kernel`` loads a built shared library with ctypes
  and calls the kernel on ``BufferT`` buffers (the ones the interpreter
  uses); ``--run`` calls it in a child (verify/kernel_call.py).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hardboiled.support import children
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError
from hardboiled.support.fileio import write_bytes_atomically
from hardboiled.support.package_files import package_path
from hardboiled.targets.cuda_arch import DEFAULT_SM

AMX_FLAGS = ("-mamx-tile", "-mamx-bf16", "-mamx-int8")
BASE_FLAGS = ("-std=gnu11", "-O2", "-ffp-contract=off", "-fno-strict-aliasing")


class ToolchainError(HardboiledError):
    exit_code = ExitCode.TOOLCHAIN_FAILURE


@dataclass(frozen=True, slots=True)
class Compiler:
    path: str
    name: str
    arguments: tuple[str, ...] = ()
    """Words after the program in --cc or $CC ("ccache gcc", "gcc -m64")."""

    @property
    def command(self) -> list[str]:
        return [self.path, *self.arguments]


def _command_words(text: str, what: str) -> list[str]:
    """A compiler named with arguments, split as a shell would split it."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ToolchainError(Diagnostic("error", f"cannot split {what} '{text}': {exc}")) from None
    if not words:
        raise ToolchainError(Diagnostic("error", f"{what} is empty"))
    return words


def find_compiler(requested: str | None = None) -> Compiler:
    choice = requested or os.environ.get("CC")
    candidates = [choice] if choice else ["clang", "gcc"]
    for candidate in candidates:
        words = _command_words(candidate, "the C compiler")
        path = shutil.which(words[0])
        if path:
            return Compiler(path, " ".join(Path(word).name for word in words), tuple(words[1:]))
    raise ToolchainError(Diagnostic(
        "error", f"no C compiler found (looked for {', '.join(candidates)})",
        notes=("install clang or gcc, or name one with --cc or $CC",),
    ))


def cpu_has_amx() -> bool:
    try:
        return "amx_tile" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def resolve_amx_mode(mode: str) -> str:
    if mode == "auto":
        return "native" if cpu_has_amx() else "emulate"
    return mode


def runtime_dir() -> Path:
    return Path(package_path("codegen", "runtime"))


def compile_c(source: str, output: Path, *, shared: bool, amx: str = "auto",
              compiler: Compiler | None = None, extra: tuple[str, ...] = ()) -> Compiler:
    """Compile C ``source`` to an object file or a shared library."""
    compiler = compiler or find_compiler()
    mode = resolve_amx_mode(amx)
    flags = list(BASE_FLAGS) + ["-I", str(runtime_dir())]
    flags += list(AMX_FLAGS) if mode == "native" else ["-DHB_AMX_EMULATE"]
    flags += ["-shared", "-fPIC"] if shared else ["-c", "-fPIC"]
    with children.temporary_directory("hardboiled-cc-") as tmp:
        src = tmp / "kernel.c"
        src.write_text(source)
        temporary_output = tmp / output.name
        proc = _run_compiler(compiler.name, [*compiler.command, *flags, *extra, str(src), "-o",
                                             str(temporary_output), "-lm"])
        if proc.returncode != 0:
            raise _compiler_failure(compiler.name, "C", proc)
        _require_output(compiler.name, temporary_output)
        write_bytes_atomically(output, temporary_output.read_bytes(), temporary_output.stat().st_mode & 0o777)
    return compiler


COMPILER_TIMEOUT_S = 300.0
"""How long a C compiler or nvcc may take on one generated file."""


def _run_compiler(name: str, command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a compiler (tied to this process, killed on an interrupt); one
    that hangs or cannot be started is a toolchain error, exit 3."""
    try:
        return children.run(command, COMPILER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ToolchainError(Diagnostic(
            "error", f"{name} did not finish within {COMPILER_TIMEOUT_S:g} s", notes=(" ".join(command[:3]) + " ...",),
        )) from None
    except OSError as exc:
        raise ToolchainError(Diagnostic("error", f"cannot run {name} ({command[0]}): {exc.strerror or exc}")) from None


def _compiler_failure(name: str, language: str, proc: subprocess.CompletedProcess[str]) -> ToolchainError:
    """The compiler's own message, cut to its first 20 lines."""
    message = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
    return ToolchainError(Diagnostic(
        "error", f"{name} failed to compile the generated {language} (exit status {proc.returncode})",
        notes=tuple(message[:20]) + ((f"... {len(message) - 20} more lines",) if len(message) > 20 else ()),
    ))


def _require_output(name: str, output: Path) -> None:
    if not output.is_file():
        raise ToolchainError(Diagnostic(
            "error", f"{name} reported success but wrote no {output.suffix} file",
            notes=("is it really a compiler? choose one with --cc or $CC",),
        ))


CUDA_OUTPUT_KINDS = {"ptx": ("-ptx",), "cubin": ("-cubin",), "o": ("-c", "-Xcompiler", "-fPIC"),
                     "so": ("-shared", "-Xcompiler", "-fPIC")}
"""What nvcc makes, and the flags that make it: PTX, a cubin, an object file
or a shared library (both position-independent, to link anywhere)."""


def find_nvcc() -> list[str]:
    """nvcc's command: $NVCC (which may carry arguments) or nvcc."""
    choice = os.environ.get("NVCC") or "nvcc"
    words = _command_words(choice, "$NVCC")
    path = shutil.which(words[0])
    if path is None:
        raise ToolchainError(Diagnostic(
            "error", f"no CUDA compiler found (looked for {words[0]})",
            notes=("install the CUDA toolkit, or name nvcc with $NVCC",),
        ))
    return [path, *words[1:]]


CICC_FALLBACK = ("-Xcicc", "-O1")
"""nvcc's device front end (cicc, CUDA 13.0) crashes with a segmentation
fault at its default -O3 on some large generated kernels (a Tensor Core
kernel of 300 loops, seed 8128's wmma-s8128-0010) and compiles them at
-O1; ptxas still optimizes the PTX."""


def _crashed(proc: subprocess.CompletedProcess[str]) -> bool:
    return proc.returncode < 0 or proc.returncode in (134, 139) or "Segmentation fault" in proc.stderr


def compile_cuda(source: str, output: Path, *, kind: str = "ptx", sm: int = DEFAULT_SM,
                 extra: tuple[str, ...] = (), warn: Callable[[str], None] | None = None) -> Path:
    """Compile CUDA ``source`` with nvcc to PTX, a cubin, an object file or
    a shared library at ``output`` (``kind``), written only once nvcc
    succeeded. When nvcc itself crashes, it is run once more with its
    device front end at -O1 (``CICC_FALLBACK``), and ``warn`` is told."""
    if kind not in CUDA_OUTPUT_KINDS:
        raise HardboiledError(Diagnostic("error", f"unknown CUDA output kind {kind!r}",
                                         notes=(f"choose one of: {', '.join(CUDA_OUTPUT_KINDS)}",)))
    nvcc = find_nvcc()
    with children.temporary_directory("hardboiled-nvcc-") as tmp:
        src = tmp / "kernel.cu"
        src.write_text(source)
        temporary_output = tmp / f"kernel.{kind}"
        command = [*nvcc, f"-arch=sm_{sm}", *CUDA_OUTPUT_KINDS[kind], "-std=c++17", *extra]
        proc = _run_compiler("nvcc", [*command, str(src), "-o", str(temporary_output)])
        if proc.returncode != 0 and _crashed(proc):
            retried = _run_compiler("nvcc", [*command, *CICC_FALLBACK, str(src), "-o", str(temporary_output)])
            if retried.returncode == 0 and warn is not None:
                warn(f"nvcc crashed on the generated CUDA ({proc.stderr.strip()[-80:] or proc.returncode}); "
                     f"it compiled with {' '.join(CICC_FALLBACK)} (its device front end at -O1)")
            proc = retried if retried.returncode == 0 else proc
        if proc.returncode != 0:
            raise _compiler_failure("nvcc", "CUDA", proc)
        _require_output("nvcc", temporary_output)
        write_bytes_atomically(output, temporary_output.read_bytes(), temporary_output.stat().st_mode & 0o777)
    return output
