"""Golden outputs: what `hardboiled compile` produces for every fixture.

For each real Halide dump in tests/fixtures/halide, the expected rewritten
IR, JSON report, and C (CPU and AMX programs) or CUDA (Tensor Core
programs) are committed under tests/goldens/<fixture>/. A run that fails
is recorded too, as its exit code and diagnostics, so that a changed
explanation of a miss shows up as well.

The AMX runtime that generated C inlines (hb_amx.h and its emulation, some
560 lines) is the same in every C golden: it is kept once, in
tests/goldens/amx_runtime.h, and each out.c holds a line naming it in its
place, so that a change of the runtime changes one golden.

Regenerate after an intended change of behaviour with ``make goldens``
(``python -m tests.goldens``); tests/test_goldens.py compares byte for byte.
Timings are the only part of a report that varies from run to run, so they
are left out.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "halide"
GOLDENS = ROOT / "tests" / "goldens"

RUNTIME = "amx_runtime.h"
"""The golden of the inlined AMX runtime, beside the fixtures' directories."""
RUNTIME_PLACEHOLDER = "/* hardboiled's AMX runtime is inlined here: tests/goldens/amx_runtime.h */\n"

VARYING_REPORT_FIELDS = ("seconds", "cached")
"""Fields of the JSON report, and of its statements, that change from run to run."""


def cases() -> list[str]:
    manifest = json.loads((FIXTURES / "MANIFEST.json").read_text())
    return sorted(manifest)


def _options(case: str, emit: tuple[str, ...], cache_dir: str):  # type: ignore[no-untyped-def]
    from hardboiled.pipeline.options import CompileOptions
    from hardboiled.select.selector import SelectionOptions

    entry = json.loads((FIXTURES / "MANIFEST.json").read_text())[case]
    store_in = {}
    if entry["accelerator"] == "wmma":
        store_in = {entry["accumulator"]: "WMMAAccumulator"}
    selection = SelectionOptions(store_in=store_in, cache_dir=cache_dir)
    # --verify-ir: the IR invariants are checked after every pass on every
    # fixture; a violation is exit 70, which no golden records.
    return CompileOptions.from_flags(selection=selection, emit=emit, verify_ir=True)


def _normalized_report(text: str) -> str:
    report = json.loads(text)
    for name in VARYING_REPORT_FIELDS:
        report.pop(name, None)
    for statement in report.get("statements", []):
        for name in VARYING_REPORT_FIELDS:
            statement.pop(name, None)
    return json.dumps(report, indent=2, sort_keys=True) + "\n"


def split_runtime(source: str) -> tuple[str, str | None]:
    """Generated C with its inlined AMX runtime replaced by a line naming
    the runtime's golden, and the runtime (None where there is none)."""
    from hardboiled.codegen.c import AMX_RUNTIME_BEGIN, AMX_RUNTIME_END

    start = source.find(AMX_RUNTIME_BEGIN)
    if start < 0:
        return source, None
    end = source.index(AMX_RUNTIME_END, start) + len(AMX_RUNTIME_END) + 1
    return source[:start] + RUNTIME_PLACEHOLDER + source[end:], source[start:end]


def _failure_text(result) -> str:  # type: ignore[no-untyped-def]
    lines = [f"exit {result.exit_code}\n"]
    lines.extend(d.render_text() for d in result.diagnostics)
    return "".join(lines)


def compute(case: str, cache_dir: str) -> dict[str, str]:
    """The golden files of one fixture: file name -> expected text; with
    the C's inlined runtime under RUNTIME (a file shared by every fixture)."""
    from hardboiled.pipeline.driver import compile_text

    entry = json.loads((FIXTURES / "MANIFEST.json").read_text())[case]
    code_kind = "cuda" if entry["accelerator"] == "wmma" else "c"
    path = FIXTURES / case / "vectorizing.stmt"
    name = f"{case}/vectorizing.stmt"
    data = path.read_bytes()
    files: dict[str, str] = {}
    kinds = (("ir", "out.stmt"), ("report", "report.json"), (code_kind, f"out.{'cu' if code_kind == 'cuda' else 'c'}"))
    together = compile_text(name, data, _options(case, tuple(kind for kind, _ in kinds), cache_dir))
    # When a run fails, each kind runs on its own, so that a failure of one
    # (C generation, say) does not hide the others.
    for kind, filename in kinds:
        result = together if together.exit_code == 0 else compile_text(name, data, _options(case, (kind,), cache_dir))
        if result.exit_code != 0:
            files[f"{filename}.failed"] = _failure_text(result)
            continue
        text = result.outputs[kind]
        if kind == "c":
            text, runtime = split_runtime(text)
            if runtime is not None:
                files[RUNTIME] = runtime
        files[filename] = _normalized_report(text) if kind == "report" else text
    lowered = FIXTURES / case / "lowered.stmt"
    if lowered.exists():
        # compile_to_lowered_stmt output: a module, rewritten function by function.
        options = _options(case, ("ir",), cache_dir)
        result = compile_text(f"{case}/lowered.stmt", lowered.read_bytes(), replace(options))
        if result.exit_code != 0:
            files["lowered.out.stmt.failed"] = _failure_text(result)
        else:
            files["lowered.out.stmt"] = result.outputs["ir"]
    return files


def main(argv: list[str]) -> int:
    only = set(argv)
    with tempfile.TemporaryDirectory(prefix="hardboiled-goldens-") as cache_dir:
        for case in cases():
            if only and case not in only:
                continue
            directory = GOLDENS / case
            directory.mkdir(parents=True, exist_ok=True)
            expected = compute(case, cache_dir)
            runtime = expected.pop(RUNTIME, None)
            if runtime is not None:
                (GOLDENS / RUNTIME).write_text(runtime)
            for stale in directory.iterdir():
                if stale.name not in expected:
                    stale.unlink()
            for filename, text in expected.items():
                (directory / filename).write_text(text)
            print(f"{case}: {', '.join(sorted(expected))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
