#!/usr/bin/env python3
"""Generate tests/fixtures/final/: the final stmt that Halide's
``compile_to_lowered_stmt`` writes, after the passes that follow
vectorization (they flatten 2-D vector accesses into ``concat_vectors``
and ``shuffle``), for the AMX and WMMA pipelines of tools/gen_fixtures.py.

* AMX cases use the target ``x86-64-linux-avx512``: AVX-512 without the
  AMX features, so that upstream Halide's own AMX pass (which would replace
  the accumulator's stores with its tile operations, wrongly for a
  standard-layout B) does not run, and the accumulator stays in AMXTile
  memory for hardboiled to select.
* CUDA cases use gen_fixtures' CUDA target. Halide's final stmt of a GPU
  pipeline holds the kernels already compiled to PTX (a
  ``cuda_gpu_source_kernels`` buffer): hardboiled explains why there is
  nothing to select in it. The last stage of the debug log that still has
  the GPU loops, "Lowering after final simplification:", is kept too
  (final_simplification.stmt): hardboiled selects from it.

Usage (from the repository root):

    .venv/bin/python tools/gen_final_fixtures.py [CASE ...]

Each case is lowered in a child process (Halide's native state is not
shared between cases). Halide's output is deterministic: regenerating
gives byte-identical files. MANIFEST.json records each case's target,
accelerator and accumulator.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import gen_fixtures  # noqa: E402

FINAL = ROOT / "tests" / "fixtures" / "final"
AMX_WITHOUT_HALIDE_TILES = "x86-64-linux-avx512"
CUDA_CASES = ("wmma_f16_matmul", "wmma_int8_matmul", "wmma_dct16_colmajor", "wmma_conv1d", "wmma_upsample2")
LAST_GPU_STAGE = "final simplification"


def targets() -> dict[str, str]:
    found = {name: AMX_WITHOUT_HALIDE_TILES for name, spec in gen_fixtures.CASES.items()
             if spec["accelerator"] == "amx"}
    found.update({name: gen_fixtures.CASES[name]["target"] for name in CUDA_CASES})
    return found


def child(name: str, target: str, out: str) -> None:
    import halide as hl

    pipeline, args = gen_fixtures.CASES[name]["build"]()
    pipeline.compile_to_lowered_stmt(out, args, hl.StmtOutputFormat.Text, hl.Target(target))


def generate(name: str, target: str) -> str | None:
    """The case's final stmt in FINAL/name/lowered.stmt; an error, or None."""
    cuda = gen_fixtures.CASES[name]["accelerator"] == "wmma"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HL_")}
    if cuda:
        env.update(HL_DEBUG_CODEGEN="2", HL_COLORS="0")
    with tempfile.TemporaryDirectory(prefix="gen_final_") as tmp:
        result = subprocess.run([sys.executable, __file__, "--child", name, target, "lowered.stmt"], cwd=tmp,
                                capture_output=True, timeout=gen_fixtures.CUDA_TIMEOUT_S, env=env)
        if result.returncode != 0:
            return " ".join(result.stderr.decode(errors="replace").split())[-300:]
        destination = FINAL / name
        destination.mkdir(parents=True, exist_ok=True)
        (destination / "lowered.stmt").write_bytes((Path(tmp) / "lowered.stmt").read_bytes())
        if cuda:
            stages = gen_fixtures.split_stages(result.stderr.splitlines(keepends=True))
            (destination / "final_simplification.stmt").write_bytes(stages[LAST_GPU_STAGE])
    return None


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(*argv[1:4])
        return 0
    cases = targets()
    names = argv or sorted(cases)
    manifest_path = FINAL / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    failed = 0
    for name in names:
        error = generate(name, cases[name])
        spec = gen_fixtures.CASES[name]
        if error is not None:
            failed += 1
            manifest.pop(name, None)
            print(f"FAILED {name}: {error}", file=sys.stderr)
            continue
        manifest[name] = {"target": cases[name], "accelerator": spec["accelerator"],
                          "accumulator": spec["accumulator"], "memory_type": spec["memory_type"],
                          "types": spec["types"], "b_layout": spec["b_layout"]}
        print(f"{name:36s} {(FINAL / name / 'lowered.stmt').stat().st_size:>8} bytes", flush=True)
    FINAL.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
