"""hardboiled as a Python library: ``hardboiled.compile``.

The command line and this API run the same pass pipeline
(hardboiled/pipeline/); the API takes text or a path instead of
files, and gives back a ``Result`` instead of writing outputs. A user's
error raises ``CompileError``, whose text is the diagnostics as the command
line prints them (``file:line:col: error: ...``, the source line, a caret).

    import hardboiled
    result = hardboiled.compile("conv.stmt", store_in={"conv": "AMXTile"})
    result.c          # C with AMX intrinsics (None for a GPU program)
    result.write("build/")   # conv.stmt, conv.c, conv.h

docs/api.md documents it, with examples that tests run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hardboiled.ir.nodes import Module, Stmt
from hardboiled.pipeline.options import AMX_MODES
from hardboiled.support.diagnostics import Diagnostic, ExitCode, HardboiledError

TARGETS = ("auto", "amx", "wmma")
"""``auto``: C for a CPU program, CUDA for one with GPU loops; ``amx``: C
(an error for a GPU program); ``wmma``: CUDA (an error for a CPU one)."""
_EMIT = {"auto": "code", "amx": "c", "wmma": "cuda"}


class CompileError(Exception):
    """The input could not be compiled: its diagnostics, and the exit code
    the command line would have returned (docs/cli.md)."""

    def __init__(self, diagnostics: Sequence[Diagnostic], exit_code: int):
        self.diagnostics = tuple(diagnostics)
        self.exit_code = exit_code
        super().__init__("".join(d.render_text() for d in self.diagnostics).rstrip("\n"))


@dataclass(frozen=True)
class Result:
    """What a compile produced."""

    name: str
    """The generated functions' name: ``name`` takes halide_buffer_t
    arguments, ``name_raw`` pointers (hardboiled/codegen/abi.py)."""
    ir: str
    """The rewritten Halide IR, as ``--emit ir`` prints it."""
    program: Stmt | Module
    """The same, as hardboiled's IR."""
    c: str | None = None
    """C with AMX intrinsics (a CPU program)."""
    cuda: str | None = None
    """CUDA with WMMA (a GPU program)."""
    header: str | None = None
    """The declarations of the generated functions, for callers."""
    report: dict[str, Any] = field(default_factory=dict)
    """The selection report (``--report json``'s schema, docs/cli.md)."""
    warnings: tuple[Diagnostic, ...] = ()
    messages: tuple[str, ...] = ()
    """What --verify, --run and --build said."""

    @property
    def source(self) -> str | None:
        """The generated C or CUDA."""
        return self.c if self.c is not None else self.cuda

    def write(self, directory: str | os.PathLike[str]) -> dict[str, Path]:
        """Write ``NAME.stmt``, and ``NAME.c`` or ``NAME.cu`` with
        ``NAME.h``, into ``directory`` (made if missing); each file is
        replaced at once, or none (a CompileError, exit code 2, when one
        cannot be written). The names are hardboiled's, so a symbolic link
        found under one is replaced, never written through. Returns the
        paths by kind."""
        from hardboiled.support.fileio import OutputTransaction, make_output_directory

        out = Path(directory)
        texts = {"ir": (".stmt", self.ir), "c": (".c", self.c), "cuda": (".cu", self.cuda),
                 "h": (".h", self.header)}
        written = {}
        try:
            make_output_directory(out)
            with OutputTransaction() as outputs:
                for kind, (suffix, text) in texts.items():
                    if text is not None:
                        written[kind] = out / f"{self.name}{suffix}"
                        outputs.add(str(written[kind]), text, follow_links=False)
        except HardboiledError as error:
            raise CompileError((error.diagnostic,), int(error.exit_code)) from None
        return written


def compile(source: str | bytes | os.PathLike[str], *, store_in: Mapping[str, str] | None = None,
            target: str = "auto", name: str | None = None, args: Sequence[str] | None = None,
            stage: str | None = None, schedule: str | os.PathLike[str] | None = None,
            allow_fallback: bool = False, verify: bool = False, run: bool = False,
            build: str | os.PathLike[str] | None = None, cc: str | None = None, amx: str = "auto",
            seed: int = 0, accept_unproven: bool = False, inputs: Mapping[str, Any] | None = None) -> Result:
    """Select tensor instructions for Halide IR and generate code.

    ``source``: a path (``os.PathLike``, or a ``str`` naming an existing
    file with no newline in it), or the IR text itself: a stmt, a
    ``HL_DEBUG_CODEGEN=2`` log (``stage`` picks the stage, default
    vectorizing) or a ``compile_to_lowered_stmt`` module. The other
    arguments are the command line's options of the same names
    (``hardboiled compile --help``): ``store_in`` maps a buffer to
    ``AMXTile`` or ``WMMAAccumulator``; ``args`` is Halide's argument
    order; ``verify`` checks the rewrite in the interpreter, ``run`` runs
    the generated C, ``build`` compiles it to a file; ``accept_unproven``
    accepts a verification whose error bounds prove nothing about some
    elements (CompileError with exit code 7 otherwise); ``inputs`` maps an
    input buffer to a numpy array (numpy order: shape (rows, columns) is
    Halide's (extent.1, extent.0)) that verification and ``run`` use
    instead of random data.
    """
    from hardboiled.codegen.naming import entry_point_name, is_entry_point_name
    from hardboiled.pipeline.compilation import Compilation
    from hardboiled.pipeline.options import CompileOptions
    from hardboiled.pipeline.runner import run_pipeline
    from hardboiled.select.options import SelectionOptions

    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, not {target!r}")
    if amx not in AMX_MODES:
        raise ValueError(f"amx must be one of {', '.join(AMX_MODES)}, not {amx!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be an int of 0 or more, not {seed!r}")
    if name is not None and not is_entry_point_name(name):
        raise ValueError(f"{name!r} cannot name the generated function (a C identifier that is not a keyword, "
                         "main or hb_*)")
    filename, data = _read(source)
    function = name or entry_point_name(filename)
    options = CompileOptions.from_flags(
        stage=stage,
        selection=SelectionOptions(store_in=dict(store_in or {}), allow_fallback=allow_fallback,
                                   schedule_path=None if schedule is None else str(schedule)),
        emit=("ir", "report", _EMIT[target]), verify=verify, run=run, seed=seed, cc=cc, amx=amx,
        accept_unproven=accept_unproven, inputs=dict(inputs or {}),
        build_path=None if build is None else str(build), name=function,
        args=None if args is None else tuple(args),
    )
    from hardboiled.ir.printer import print_ir
    from hardboiled.support.deep import call_deep
    from hardboiled.support.environment import environment_fault

    compilation = Compilation(filename, data)

    def compile_and_print() -> str:
        # Printing recurses as deep as the IR nests: on the deep stack too.
        run_pipeline(compilation, options)
        assert compilation.program is not None
        return print_ir(compilation.program)

    try:
        printed = call_deep(compile_and_print)
    except HardboiledError as error:
        raise CompileError([*compilation.diagnostics, *getattr(error, "diagnostics", [error.diagnostic])],
                           int(error.exit_code)) from None
    except MemoryError as error:  # the machine's limit, as the command line reports it (call_deep: the stack's)
        fault = environment_fault(error)
        assert fault is not None
        raise CompileError([*compilation.diagnostics, fault.diagnostic], int(fault.exit_code)) from None
    assert compilation.program is not None
    return Result(function, printed, compilation.program, compilation.c_source,
                  compilation.cuda_source, compilation.header, compilation.report,
                  tuple(d for d in compilation.diagnostics if d.severity != "error"), tuple(compilation.messages))


def _read(source: str | bytes | os.PathLike[str]) -> tuple[str, bytes]:
    """The input's name (for diagnostics and the default function name) and bytes."""
    if isinstance(source, bytes):
        return "<string>", source
    if isinstance(source, str) and ("\n" in source or not os.path.isfile(source)):
        return "<string>", source.encode()
    path = Path(source)
    try:
        return str(path), path.read_bytes()
    except OSError as error:
        raise CompileError([Diagnostic("error", f"cannot read {path}: {error.strerror}")],
                           int(ExitCode.INPUT_ERROR)) from None
