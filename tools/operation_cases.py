#!/usr/bin/env python3
"""Every Halide operation hardboiled's table holds, computed by Halide 21's
JIT on random inputs, with the IR Halide printed for it.

    .venv/bin/python tools/operation_cases.py OUT_DIR [--target T] [--seed S]

One pipeline with an output per case: a case is an operation applied to
inputs of one type (``CASES``: name -> the Halide expression over the
1-D inputs ``a``, ``b``, ``c`` of that type, ``s`` a small shift amount).
Writes OUT_DIR/vectorizing.stmt (Halide's "Lowering after vectorizing:"
stage), OUT_DIR/NAME.npy for every input and output (the JIT's results),
and OUT_DIR/cases.json (each output's input type). For a CUDA target each
output is a GPU stage and nothing is realized (no GPU here): the IR alone. The interpreter runs
the stage on the same inputs in tests/ir/test_operations_vs_halide.py.

``make operation-fixtures`` writes both into tests/fixtures/operations
(host/ and cuda/), which the tests read: the seeded inputs make the output
the same on every run with the same Halide.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

N = 64
INT_TYPES = ("uint8", "int8", "uint16", "int16", "uint32", "int32")
FLOAT_TYPES = ("float32", "float64", "float16")

# name: (types it admits, the expression; a, b, c are inputs of the type, s a
# shift amount of the type in [0, bits), w an unsigned weight of the width)
CASES: dict[str, tuple[tuple[str, ...], str]] = {
    "absd": (INT_TYPES + ("float32",), "hl.absd(a, b)"),
    "halving_add": (INT_TYPES, "hl.cast(a.type(), (hl.cast(wide, a) + b) // 2)"),
    "rounding_halving_add": (INT_TYPES, "hl.cast(a.type(), (hl.cast(wide, a) + b + 1) // 2)"),
    "halving_sub": (INT_TYPES, "hl.cast(a.type(), (hl.cast(swide, a) - b) // 2)"),
    "saturating_add": (INT_TYPES, "hl.saturating_cast(a.type(), hl.cast(swide, a) + b)"),
    "saturating_sub": (INT_TYPES, "hl.saturating_cast(a.type(), hl.cast(swide, a) - b)"),
    "saturating_narrow": (("int16", "uint16", "int32"), "hl.saturating_cast(narrow, a)"),
    "widening_add": (INT_TYPES[:4], "hl.cast(wide, a) + hl.cast(wide, b)"),
    "widening_sub": (INT_TYPES[:4], "hl.cast(swide, a) - hl.cast(swide, b)"),
    "widening_mul": (INT_TYPES[:4], "hl.cast(wide, a) * hl.cast(wide, b)"),
    "rounding_shift_right": (("uint16", "int16", "int32"), "hl.cast(a.type(), (hl.cast(wide, a) + 8) >> 4)"),
    "mul_shift_right": (("int16", "uint16"), "hl.saturating_cast(a.type(), (hl.cast(wide, a) * b) >> (bits - 1))"),
    "popcount": (INT_TYPES, "hl.popcount(a)"),
    "count_leading_zeros": (INT_TYPES, "hl.count_leading_zeros(a)"),
    "count_trailing_zeros": (INT_TYPES, "hl.count_trailing_zeros(a)"),
    "div_round_to_zero": (("int8", "int16", "int32"), "hl.div_round_to_zero(a, b)"),
    "mod_round_to_zero": (("int8", "int16", "int32"), "hl.mod_round_to_zero(a, b)"),
    "bitwise": (INT_TYPES, "(a & b) ^ (~a | c)"),
    "shifts": (INT_TYPES, "(a << s) ^ (b >> s)"),
    "lerp": (("uint8", "uint16"), "hl.lerp(a, b, c)"),
    "lerp_float": (("float32",), "hl.lerp(a, b, hl.cast(hl.Float(32), c) / 1000)"),
    "abs": (INT_TYPES[1::2] + FLOAT_TYPES, "hl.abs(a)"),
    "sqrt": (FLOAT_TYPES, "hl.sqrt(hl.abs(a))"),
    "exp": (FLOAT_TYPES, "hl.exp(a)"),
    "log": (FLOAT_TYPES, "hl.log(hl.abs(a) + 1)"),
    "sin": (FLOAT_TYPES, "hl.sin(a)"), "cos": (FLOAT_TYPES, "hl.cos(a)"), "tan": (FLOAT_TYPES, "hl.tan(a)"),
    # Inside their domains: out of it Halide's float16 versions answer inf
    # where the C library answers NaN, neither of which a pipeline relies on.
    "asin": (FLOAT_TYPES, "hl.asin(hl.clamp(a / 4, hl.cast(a.type(), -1), hl.cast(a.type(), 1)))"),
    "acos": (FLOAT_TYPES, "hl.acos(hl.clamp(a / 4, hl.cast(a.type(), -1), hl.cast(a.type(), 1)))"),
    "atan": (FLOAT_TYPES, "hl.atan(a)"), "atan2": (FLOAT_TYPES, "hl.atan2(a, b)"),
    "sinh": (FLOAT_TYPES, "hl.sinh(a)"), "cosh": (FLOAT_TYPES, "hl.cosh(a)"), "tanh": (FLOAT_TYPES, "hl.tanh(a)"),
    "asinh": (FLOAT_TYPES, "hl.asinh(a)"), "acosh": (FLOAT_TYPES, "hl.acosh(hl.abs(a) + 1)"),
    "atanh": (FLOAT_TYPES, "hl.atanh(hl.clamp(a / 4, hl.cast(a.type(), -0.875), hl.cast(a.type(), 0.875)))"),
    "pow": (FLOAT_TYPES, "hl.pow(hl.abs(a), b)"),
    "floor": (FLOAT_TYPES, "hl.floor(a)"), "ceil": (FLOAT_TYPES, "hl.ceil(a)"),
    "round": (FLOAT_TYPES, "hl.round(a)"), "trunc": (FLOAT_TYPES, "hl.trunc(a)"),
    "is_nan": (("float32", "float64"), "hl.select(hl.is_nan(a / b), 1, 0)"),
    "is_inf": (("float32", "float64"), "hl.select(hl.is_inf(a / b), 1, 0)"),
    "is_finite": (("float32", "float64"), "hl.select(hl.is_finite(a / b), 1, 0)"),
    "fast_inverse": (("float32",), "hl.fast_inverse(a)"),
    "fast_inverse_sqrt": (("float32",), "hl.fast_inverse_sqrt(hl.abs(a) + 1)"),
}
"""What each case computes: Halide's own spelling, which its pattern
matching turns into the intrinsic the case is named after."""


def _halide_type(hl, name: str):  # noqa: ANN001, ANN202
    return {"uint8": hl.UInt(8), "int8": hl.Int(8), "uint16": hl.UInt(16), "int16": hl.Int(16),
            "uint32": hl.UInt(32), "int32": hl.Int(32), "float32": hl.Float(32), "float64": hl.Float(64),
            "float16": hl.Float(16)}[name]


def _random(np, type_name: str, rng, role: str):  # noqa: ANN001, ANN202
    dtype = np.dtype(type_name)
    if type_name.startswith("float"):
        values = rng.standard_normal(N) * 3
        if role == "b":
            values[::7] = 0.0  # x / 0: infinities and NaNs for the predicates
        return values.astype(dtype)
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, N, endpoint=True, dtype=np.int64)
    if role == "b":
        values[values == 0] = 1
        values[::9] = -1 if info.min < 0 else 3
    return values.astype(dtype)


def child(out: Path, target: str, seed: int) -> None:
    import halide as hl
    import numpy as np

    rng = np.random.default_rng(seed)
    x = hl.Var("x")
    params, outputs, meta = [], [], {}
    inputs: dict[str, object] = {}
    for type_name in INT_TYPES + FLOAT_TYPES:
        for role in ("a", "b", "c"):
            name = f"{role}_{type_name}"
            data = _random(np, type_name, rng, role)
            param = hl.ImageParam(_halide_type(hl, type_name), 1, name)
            param.dim(0).set_bounds(0, N).set_stride(1)
            params.append(param)
            inputs[name] = data
            if "cuda" not in target:  # realized on the host only
                np.save(out / f"{name}.npy", data)
    for case, (types, expression) in CASES.items():
        for type_name in types:
            t = _halide_type(hl, type_name)
            bits = t.bits()
            env = dict(hl=hl, bits=bits,
                       a=_find(params, f"a_{type_name}")[x],
                       b=_find(params, f"b_{type_name}")[x], c=_find(params, f"c_{type_name}")[x],
                       s=None if t.is_float() else hl.cast(t, _find(params, f"c_{type_name}")[x]) % hl.cast(t, bits),
                       wide=t.with_bits(min(64, bits * 2)) if not t.is_float() else t,
                       swide=hl.Int(min(64, bits * 2)) if not t.is_float() else t,
                       narrow=t.with_bits(bits // 2))
            f = hl.Func(f"o_{case}_{type_name}")
            f[x] = eval(expression, env)  # noqa: S307 - our own table of expressions
            if "cuda" in target:
                f.bound(x, 0, N).gpu_tile(x, hl.Var("xo"), hl.Var("xi"), 16)
            else:
                f.bound(x, 0, N).vectorize(x, 8)
            outputs.append(f)
            meta[f.name()] = dict(case=case, type=type_name)
    pipeline = hl.Pipeline(outputs)
    # Lowering prints the stages (HL_DEBUG_CODEGEN=2) that main keeps; the
    # statement file itself is left in the temporary working directory.
    pipeline.compile_to_lowered_stmt("lowered.stmt", params, hl.StmtOutputFormat.Text, hl.Target(target))
    (out / "cases.json").write_text(json.dumps(meta, indent=1))
    if "cuda" in target:
        return  # no GPU to realize it on here: the IR alone
    for p in params:
        p.set(hl.Buffer(inputs[p.name()]))
    results = pipeline.realize([N], hl.Target(target))
    for i, f in enumerate(outputs):
        np.save(out / f"{f.name()}.npy", np.asarray(results[i] if len(outputs) > 1 else results))
    (out / "cases.json").write_text(json.dumps(meta, indent=1))


def _find(params, name):  # noqa: ANN001, ANN202
    return next(p for p in params if p.name() == name)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(Path(argv[1]), argv[2], int(argv[3]))
        return 0
    import argparse

    import gen_fixtures as gf

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--target", default="x86-64-linux-avx2")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HL_")}
    env.update(HL_DEBUG_CODEGEN="2", HL_COLORS="0")
    with tempfile.TemporaryDirectory() as tmp:
        result = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(args.out.resolve()),
                                 args.target, str(args.seed)], env=env, capture_output=True, cwd=tmp)
    stages = gf.split_stages(result.stderr.splitlines(keepends=True))
    # A GPU schedule vectorizes nothing ("(unchanged)"): its last stage with
    # the GPU loops, after Halide found its intrinsics, is read instead.
    stage = stages.get("vectorizing") or stages.get("final simplification")
    if result.returncode != 0 or stage is None:
        sys.stderr.write(result.stderr.decode(errors="replace")[-3000:])
        return 1
    (args.out / "vectorizing.stmt").write_bytes(stage)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
