#!/usr/bin/env python3
"""C generation plus compilation time per kernel.

Figure (issue "C code generation with AMX intrinsics"): generation plus
compile per kernel under 2 s. For every AMX fixture: generate C from the
rewritten IR, then compile it to an object file with the real AMX
intrinsics (native flags) and to a shared library against the emulation.
Selection is not included (bench/select_speed.py measures it).

    .venv/bin/python bench/codegen_speed.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from _common import amx_cases, fixture_stmt, write_results

from hardboiled.codegen.c import generate_c
from hardboiled.codegen.toolchain import compile_c, find_compiler
from hardboiled.legalize.passes import tensorize
from hardboiled.select.selector import SelectionOptions


def main() -> int:
    compiler = find_compiler()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in amx_cases():
            rewritten = tensorize(fixture_stmt(case), SelectionOptions()).stmt
            start = time.perf_counter()
            source = generate_c(rewritten)
            generated = time.perf_counter()
            compile_c(source, Path(tmp) / "k.o", shared=False, amx="native", compiler=compiler)
            native = time.perf_counter()
            compile_c(source, Path(tmp) / "k.so", shared=True, amx="emulate", compiler=compiler)
            emulated = time.perf_counter()
            rows.append({"case": case, "generate_s": round(generated - start, 4),
                         "native_compile_s": round(native - generated, 3),
                         "emulated_compile_s": round(emulated - native, 3),
                         "generate_plus_native_s": round(native - start, 3),
                         "source_lines": source.count("\n")})
    write_results("codegen_speed.json", {"compiler": compiler.name, "kernels": rows})
    print(f"compiler: {compiler.name}")
    print(f"{'case':36s} {'gen s':>6s} {'native cc s':>11s} {'emul cc s':>9s} {'lines':>6s}")
    for r in rows:
        print(f"{r['case']:36s} {r['generate_s']:6.3f} {r['native_compile_s']:11.3f} "
              f"{r['emulated_compile_s']:9.3f} {r['source_lines']:6d}")
    worst = max(r["generate_plus_native_s"] for r in rows)
    print(f"worst generation + compile per kernel: {worst:.2f} s (target < 2 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
