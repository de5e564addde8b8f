#!/usr/bin/env python3
"""The experiment behind the third H200 run's fill change (docs/performance.md):
variants of the CUDA that `bench/device.py prepare` wrote, transformed by
text here, each linked into its own library beside the prepared folder.

    .venv/bin/python bench/fill_variants.py            # after prepare --out build/device
    (there, for each variant V: a folder of links to build/device with
     manifest_V.json as its manifest.json, then
     python3 bench/device.py run --in FOLDER --out OUT_V --no-sanitizer)
    python3 bench/device_compare.py OUT_orig OUT_hwcvt ...

The variants: "hwcvt" converts 16-bit floats with the GPU's instructions
instead of the portable C; "copy" moves the bits of a fill whose value
only moves data (no conversion to float and back); "copy_arith" also
computes each lane's source from its index instead of a table in memory;
"all" is the three. The product now does all three (codegen/c_text.py,
codegen/cuda_kernel.py, codegen/lane_tables.py); this script is kept to
reproduce the measurement, and works on sources printed before that.
"""

import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
import device as dev  # noqa: E402

from hardboiled.codegen.lane_tables import affine_form, c_expression  # noqa: E402
from hardboiled.codegen.toolchain import find_nvcc  # noqa: E402

DEV = ROOT / "build" / "device"
APPS = [
    "conv1d",
    "conv1d_8x32",
    "conv2d",
    "conv2d_k32",
    "conv2d_8x32",
    "downsample",
    "downsample_k32",
    "upsample",
    "conv_layer",
    "gemm",
]


def matching(text, start):
    depth = 0
    for j in range(start, len(text)):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    raise ValueError


def hwcvt(text):
    text = text.replace(
        "static inline __host__ __device__ float hb_f16_to_f32(uint16_t h) {",
        "static inline __host__ __device__ float hb_f16_to_f32(uint16_t h) {\n#ifdef __CUDA_ARCH__\n"
        "  return __half2float(__ushort_as_half(h));\n#endif",
        1,
    )
    text = text.replace(
        "static inline __host__ __device__ uint16_t hb_f32_to_f16(float f) {",
        "static inline __host__ __device__ uint16_t hb_f32_to_f16(float f) {\n#ifdef __CUDA_ARCH__\n"
        "  return __half_as_ushort(__float2half_rn(f));\n#endif",
        1,
    )
    return text


def strip_roundtrip(expr):
    """expr is the argument text of hb_f32_to_f16(...): in the storage domain, or None."""
    expr = expr.strip()
    while expr.startswith("(") and matching(expr, 0) == len(expr) - 1:
        expr = expr[1:-1].strip()
    if expr.startswith("hb_f16_to_f32(") and matching(expr, len("hb_f16_to_f32")) == len(expr) - 1:
        return expr[len("hb_f16_to_f32(") : -1]
    if expr in ("0.0f", "0.000000f"):
        return "(uint16_t)0"
    # c ? a : b at depth 0
    depth, q, colon = 0, None, None
    for j, ch in enumerate(expr):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "?" and depth == 0 and q is None:
            q = j
        elif ch == ":" and depth == 0 and q is not None and colon is None:
            colon = j
    if q is None or colon is None:
        return None
    a, b = strip_roundtrip(expr[q + 1 : colon]), strip_roundtrip(expr[colon + 1 :])
    if a is None or b is None:
        return None
    return f"({expr[:q].strip()} ? {a} : {b})"


def copy(text):
    out, i, key = [], 0, "hb_f32_to_f16("
    while True:
        j = text.find(key, i)
        if j < 0:
            out.append(text[i:])
            break
        end = matching(text, j + len(key) - 1)
        inner = strip_roundtrip(text[j + len(key) : end])
        if inner is None or "static inline" in text[max(0, j - 80) : j]:
            out.append(text[i : end + 1])
        else:
            out.append(text[i:j])
            out.append(f"(uint16_t)({inner})")
        i = end + 1
    return "".join(out)


TABLE = re.compile(r"static const int32_t (t\d+)\[(\d+)\] = \{([^}]*)\};")


def arith(text):
    """Each table with an arithmetic form (codegen/lane_tables.py) replaced by it."""
    for match in list(TABLE.finditer(text)):
        name = match.group(1)
        form = affine_form([int(x) for x in match.group(3).split(",")])
        if form is None:
            continue
        text = text.replace(match.group(0), "")
        key, out, i = f"{name}[", [], 0
        while (j := text.find(key, i)) >= 0:
            depth = 0
            for k in range(j + len(key) - 1, len(text)):
                depth += {"[": 1, "]": -1}.get(text[k], 0)
                if depth == 0:
                    break
            out += [text[i:j], c_expression(form, text[j + len(key) : k])]
            i = k + 1
        text = "".join(out) + text[i:]
    return text


VARIANTS = {
    "hwcvt": [hwcvt],
    "copy": [copy],
    "copy_arith": [copy, arith],
    "all": [hwcvt, copy, arith],
}


def main():
    manifest = json.loads((DEV / "manifest.json").read_text())
    kernels = [k for k in manifest["kernels"] if k["app"] in APPS]
    objects = [
        o for o in manifest["objects"] if any(f"src/{k['name'].replace('-', '_')}_baseline.o" == o for k in kernels)
    ]
    objects += [o for o in manifest["objects"] if "runtime" in o]
    print(len(kernels), "kernels", len(objects), "objects")
    for variant, steps in [("orig", [])] + list(VARIANTS.items()):
        srcdir = DEV / f"src_{variant}"
        srcdir.mkdir(exist_ok=True)
        sources = []
        for k in kernels:
            text = (DEV / k["source"]).read_text()
            for step in steps:
                text = step(text)
            (srcdir / Path(k["source"]).name).write_text(text)
            sources.append(Path(srcdir.name) / Path(k["source"]).name)
        shutil.copy(DEV / "src" / f"{dev.RUNNER}.cu", srcdir / f"{dev.RUNNER}.cu")
        sources.append(Path(srcdir.name) / f"{dev.RUNNER}.cu")
        lib = f"kernels_{variant}.so"
        failed = dev.build_library(
            DEV, sources, [Path(o) for o in objects], manifest["nvcc_flags"], find_nvcc(), 2, DEV / lib
        )
        print(variant, "failed:", failed)
        m = dict(manifest, library=lib, kernels=kernels, objects=objects)
        (DEV / f"manifest_{variant}.json").write_text(json.dumps(m, indent=1))


main()
