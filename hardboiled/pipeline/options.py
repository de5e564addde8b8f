"""What one compile is asked to do, grouped by the passes that read it.

``CompileOptions`` holds one group per concern; each pass of the pipeline
(pipeline/passes.py) is given its own group and nothing else, so that what
a pass may depend on is visible in its signature:

* ``InputOptions``: how the input is read (parse);
* ``SelectionOptions`` (select/options.py): selection's rules, limits and
  cache, and ``--require``;
* ``VerificationOptions``: the interpreter's comparisons (verify, run-c);
* ``CodegenOptions``: which sources to generate and the function's name and
  parameters (emit-c, emit-cuda);
* ``BuildOptions``: the compilers and what they make (build-c, build-cuda,
  and run-c, which builds before it runs);
* ``OutputOptions``: which outputs the caller wants (emit-egg, emit-html,
  and what the driver collects);
* ``Instrumentation``: ``--print-before``/``--print-after``, ``--timing``,
  ``--verify-ir`` (the driver's, not a pass's).

The module is small on purpose: the command line builds these, and the
whole-file cache answers from them, without loading the pipeline.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hardboiled.select.options import SelectionOptions
from hardboiled.targets.cuda_arch import DEFAULT_SM

if TYPE_CHECKING:
    from hardboiled import ir

CODE = "code"
"""The emit kind the Python API asks for: C for a CPU program, CUDA for a
GPU one."""

EMIT_SUFFIXES = {"ir": ".stmt", "c": ".c", "cuda": ".cu", "egg": ".egg", "report": ".report.json",
                 "html": ".html"}
"""The output kinds of ``--emit`` and the file suffix of each."""
HEADER = "h"
"""The output key of the header that goes beside the C or CUDA source."""
HEADER_SUFFIX = ".h"

CUDA_BUILD_SUFFIXES = {".ptx": "ptx", ".cubin": "cubin"}
"""--build FILE with these suffixes compiles the generated CUDA with nvcc;
any other FILE is an object file (a shared library for .so), made by nvcc
for a GPU program and by the C compiler for a CPU one."""

LANGUAGES = ("c", "cuda")


@dataclass(frozen=True)
class InputOptions:
    stage: str | None = None
    """The stage of a debug log to read (None: the vectorizing stage)."""
    buffer_types: dict[str, ir.Type] = field(default_factory=dict)
    """Element types of buffers the dump does not type (--buffer-type)."""


@dataclass(frozen=True)
class VerificationOptions:
    verify: bool = False
    """Run the original and the rewritten IR in the interpreter and compare."""
    run: bool = False
    """Build the generated C, run it and compare with the interpreter."""
    seed: int = 0
    params: dict[str, float] = field(default_factory=dict)
    timeout_s: float | None = None
    """The interpreter's limit per verification (None: verify/interp.py
    INTERPRETER_TIMEOUT_S)."""
    accept_unproven: bool = False
    """--accept-unproven: elements whose error bound proves nothing are no
    failure (exit 7 otherwise)."""
    inputs: dict[str, Any] = field(default_factory=dict)
    """--input NAME=FILE.npy (or the API's arrays): contents of input
    buffers verification runs on instead of random data, as numpy arrays."""

    @property
    def executes(self) -> bool:
        return self.verify or self.run


@dataclass(frozen=True)
class CodegenOptions:
    required: frozenset[str] = frozenset()
    """Languages asked for by name (--emit c, --emit cuda, --run, a .ptx or
    .cubin build): a program of the other kind is an error."""
    wanted: bool = False
    """Code of whichever language the program needs (the API's ``code``,
    a .o or .so build)."""
    name: str | None = None
    """The generated function's name (--name); None: from the input's name."""
    args: tuple[str, ...] | None = None
    """--args: the buffers in Halide's argument order (None: from a lowered
    module's signature, else inputs then outputs by name)."""

    def generates(self, language: str, gpu_program: bool) -> bool:
        """Whether ``language`` is generated for a program with (or without)
        GPU loops."""
        return language in self.required or (self.wanted and (language == "cuda") == gpu_program)

    @property
    def any(self) -> bool:
        return self.wanted or bool(self.required)


AMX_MODES = ("native", "emulate", "auto")
"""--amx: run AMX code on the CPU's tiles, through the emulation, or on the
tiles where the CPU has them."""


@dataclass(frozen=True)
class BuildOptions:
    path: str | None = None
    """--build FILE: what to make (None: nothing)."""
    cc: str | None = None
    amx: str = "auto"
    cuda_arch: int = DEFAULT_SM
    include_dirs: tuple[str, ...] = ()
    """-I/--include-dir: header directories for the C compiler and nvcc."""

    @property
    def include_flags(self) -> tuple[str, ...]:
        return tuple(flag for directory in self.include_dirs for flag in ("-I", directory))

    @property
    def cuda(self) -> bool:
        """Whether the build is nvcc's PTX or cubin."""
        return bool(self.path) and Path(self.path or "").suffix in CUDA_BUILD_SUFFIXES

    @property
    def object(self) -> bool:
        """Whether the build is an object file or a shared library (of
        either language)."""
        return bool(self.path) and not self.cuda


@dataclass(frozen=True)
class OutputOptions:
    emit: tuple[str, ...] = ("ir",)
    """The output kinds asked for (EMIT_SUFFIXES, or CODE)."""


@dataclass(frozen=True)
class Instrumentation:
    print_before: tuple[str, ...] = ()
    """Pass names (or "all") to print the program before."""
    print_after: tuple[str, ...] = ()
    timing: bool = False
    verify_ir: bool = False
    """Check the IR invariants after every IR pass."""

    @property
    def active(self) -> bool:
        """Asks for checks or output that only a real run of the passes
        produces (so the whole-file cache may not answer)."""
        return bool(self.print_before or self.print_after or self.timing or self.verify_ir)


@dataclass(frozen=True)
class CompileOptions:
    input: InputOptions = field(default_factory=InputOptions)
    selection: SelectionOptions = field(default_factory=SelectionOptions)
    verification: VerificationOptions = field(default_factory=VerificationOptions)
    codegen: CodegenOptions = field(default_factory=CodegenOptions)
    build: BuildOptions = field(default_factory=BuildOptions)
    output: OutputOptions = field(default_factory=OutputOptions)
    instrumentation: Instrumentation = field(default_factory=Instrumentation)

    @classmethod
    def from_flags(cls, *, stage: str | None = None, buffer_types: dict[str, ir.Type] | None = None,
                   selection: SelectionOptions | None = None, require: bool = False,
                   emit: tuple[str, ...] = ("ir",), verify: bool = False, run: bool = False, seed: int = 0,
                   params: dict[str, float] | None = None, verify_timeout_s: float | None = None,
                   accept_unproven: bool = False, inputs: dict[str, Any] | None = None,
                   build_path: str | None = None, cc: str | None = None, amx: str = "auto",
                   cuda_arch: int = DEFAULT_SM, include_dirs: tuple[str, ...] = (), name: str | None = None,
                   args: tuple[str, ...] | None = None, print_before: tuple[str, ...] = (),
                   print_after: tuple[str, ...] = (), timing: bool = False,
                   verify_ir: bool = False) -> CompileOptions:
        """The groups for the command line's flags, each named as its option
        (``--build`` is ``build_path``, ``--verify-timeout``
        ``verify_timeout_s``): the one translation from what a user asks
        to what each pass reads, for the command line, the API and scripts."""
        build = BuildOptions(build_path, cc, amx, cuda_arch, include_dirs)
        selection = selection or SelectionOptions()
        if require:
            selection = dataclasses.replace(selection, require=True)
        return cls(
            input=InputOptions(stage, dict(buffer_types or {})),
            selection=selection,
            verification=VerificationOptions(verify, run, seed, dict(params or {}), verify_timeout_s,
                                             accept_unproven, dict(inputs or {})),
            codegen=codegen_for(emit, build, run, name, args),
            build=build,
            output=OutputOptions(emit),
            instrumentation=Instrumentation(print_before, print_after, timing, verify_ir),
        )


def codegen_for(emit: tuple[str, ...], build: BuildOptions, run: bool, name: str | None = None,
                args: tuple[str, ...] | None = None) -> CodegenOptions:
    """Which code to generate for what the caller asked: the languages it
    names (an --emit kind, --run's C, a PTX or cubin build), and code of
    the program's own language for the API's ``code`` and an object or
    library build."""
    required = {language for language in LANGUAGES if language in emit}
    if run:
        required.add("c")
    if build.cuda:
        required.add("cuda")
    return CodegenOptions(frozenset(required), CODE in emit or build.object, name, args)
