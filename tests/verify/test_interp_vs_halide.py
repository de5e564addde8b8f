"""The reference interpreter agrees with real Halide.

Each case is a small pipeline description (plain JSON): the element types of
one or two 2-D inputs and of the output, an expression over the inputs (or a
reduction over an RDom), and a schedule (vectorize x by 4/8/16 with a tail
strategy, optionally vectorize y as well so that ramps nest, unroll, a
producer computed at a loop level, an atomic vectorized RDom).

A child Python process (Halide prints its IR from native code, so the dump
must come from another process's stderr; one long-lived child serves the
whole module, see ``HalideChild``) builds each pipeline with the
Halide 21 bindings, writes its seeded random inputs as .npy files, lowers it
with ``compile_to_lowered_stmt`` under ``HL_DEBUG_CODEGEN=2`` and realizes it
with the JIT for the same target, writing the output as .npy too. All
buffers are dense with min 0 and constant bounds, so the IR has constant
indices.

This process takes the "Lowering after vectorizing:" stage, binds buffers
with the same data, mins, extents and strides as the child's
(``Interpreter(buffers=...)``) and runs it. Integer outputs must be equal;
float outputs must be within ``_tolerance`` (see there: the interpreter
rounds each operation as written, LLVM may contract and reassociate).

The generated expressions avoid what Halide leaves undefined or what would
turn a last-bit float difference into a large one: signed 32-bit overflow
(magnitudes are tracked), float to int casts of out-of-range values (their
operand is clamped), float division by anything but a constant, and float
comparisons, float modulo and float to int casts of computed values (their
operands are loads, exact on both sides). They also step around three
things that are not the interpreter's business: Halide 21's JIT cannot
cast float64 to float16 (no ``__truncdfhf2``), its x86 codegen fails an
internal assertion on ``float64(uint8 vector) * constant`` (and, rarely,
on integer data that reaches float64 otherwise: such an internal error
rejects the random example), its simplifier folds ``uint8(int8(f))`` into
``uint8(f)``, undefined for a negative ``f``, and its IR printer writes
float constants with six decimals (``x / 3.0`` becomes ``x * 0.333333``),
which only float64 results would notice.

Found by these tests (and fixed): the interpreter's float ``%`` on float16
and bfloat16 rounded each step of ``a - b*floor(a/b)`` to 16 bits, where
Halide rounds once (pinned: bfloat16_modulo, float16_modulo).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.ir.buffers import discover_buffers
from hardboiled.verify.interp import BufferT, Interpreter, dtype_of

halide = pytest.importorskip("halide")

TARGET = "x86-64-linux-avx2"
N = 96
"""Inputs are N x N: large enough for A(2*x + 3, y) over a producer region
rounded up twice (x < 40, by GuardWithIf on f and RoundUp on the producer)."""

INT_TYPES = ("int8", "int16", "int32", "uint8", "uint16")
FLOAT_TYPES = ("float16", "float32", "float64", "bfloat16")
TYPES = INT_TYPES + FLOAT_TYPES
INT_RANGE = {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (-(2**31), 2**31 - 1),
             "uint8": (0, 255), "uint16": (0, 65535)}
SHAPES = ("shift", "stride2", "half", "mod3", "transpose", "down")

# --------------------------------------------------------------------------
# The child: builds, lowers and runs the pipeline with real Halide.
# --------------------------------------------------------------------------

CHILD = r'''
import json, os, sys, traceback
import numpy as np
import halide as hl

HL = {"int8": hl.Int(8), "int16": hl.Int(16), "int32": hl.Int(32), "uint8": hl.UInt(8),
      "uint16": hl.UInt(16), "float16": hl.Float(16), "float32": hl.Float(32),
      "float64": hl.Float(64), "bfloat16": hl.BFloat(16)}
x, y = hl.Var("x"), hl.Var("y")
xo, xi, yo, yi = hl.Var("xo"), hl.Var("xi"), hl.Var("yo"), hl.Var("yi")


def run(spec, out):
    target = hl.Target(spec["target"])
    n, width, height = spec["n"], spec["width"], spec["height"]
    rng = np.random.default_rng(spec["seed"])
    keep = []

    def random_input(tname):
        # numpy [y, x] is Halide (x, y): hl.Buffer reverses the axes.
        if tname.startswith("int"):
            return rng.integers(-100, 101, (n, n)).astype(tname)
        if tname.startswith("uint"):
            return rng.integers(0, 201, (n, n)).astype(tname)
        values = rng.standard_normal((n, n)).astype(np.float32)
        if tname == "bfloat16":  # the bindings take no bfloat16 numpy arrays: pass the bits
            import ml_dtypes
            return values.astype(ml_dtypes.bfloat16).view(np.uint16)
        return values.astype(tname)

    def to_halide(tname, array):
        keep.append(array)
        buf = hl.Buffer(array)
        if tname != "bfloat16":
            return buf
        conv = hl.Func("to_bf16")
        conv[x, y] = hl.reinterpret(hl.BFloat(16), buf[x, y])
        result = conv.realize([n, n], target)
        keep.append(result)
        return result

    params = []
    for name, tname in zip("AB", spec["inputs"]):
        p = hl.ImageParam(HL[tname], 2, name)
        p.dim(0).set_bounds(0, n).set_stride(1)
        p.dim(1).set_bounds(0, n).set_stride(n)
        data = random_input(tname)
        np.save(os.path.join(out, name + ".npy"), data)
        p.set(to_halide(tname, data))
        params.append(p)

    g = hl.Func("g")

    def index(shape, c):
        if shape == "shift":
            return [x + c, y]
        if shape == "stride2":
            return [2 * x + c, y]
        if shape == "half":
            return [hl.Expr(x) / 2 + c, y]
        if shape == "mod3":
            return [hl.Expr(x) % 3 + c, y]
        if shape == "transpose":
            return [y + c, x]
        if shape == "down":
            return [x, y + c]
        raise ValueError(shape)

    def build(e):
        kind = e[0]
        if kind == "load":
            return params[e[1]][index(e[2], e[3])]
        if kind == "prod":
            return hl.Expr(g[x + e[1], y])
        if kind == "const":
            return hl.cast(HL[e[1]], e[2])
        if kind == "cast":
            return hl.cast(HL[e[1]], build(e[2]))
        if kind == "clamp":
            return hl.clamp(build(e[2]), hl.cast(HL[e[1]], e[3]), hl.cast(HL[e[1]], e[4]))
        if kind == "select":
            return hl.select(build(e[1]), build(e[2]), build(e[3]))
        if kind == "math":
            return {"abs": hl.abs, "sin": hl.sin, "strict": hl.strict_float}[e[1]](build(e[2]))
        a, b = build(e[2]), build(e[3])
        return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
                "%": lambda: a % b, "min": lambda: hl.min(a, b), "max": lambda: hl.max(a, b),
                "<": lambda: a < b, "<=": lambda: a <= b, "==": lambda: a == b,
                "!=": lambda: a != b, ">": lambda: a > b}[e[1]]()

    sched = spec["schedule"]
    T = HL[spec["out"]]
    f = hl.Func("f")

    def vectorize(stage):
        # The x (and y) vectorization; returns the loops a producer may be computed at.
        w, tail = sched["vec_x"], getattr(hl.TailStrategy, sched["tail"])
        if sched.get("vec_y"):
            stage.tile(x, y, xo, yo, xi, yi, w, sched["vec_y"], tail).vectorize(xi).vectorize(yi)
            return {"y": yo, "x": xo}
        stage.split(x, xo, xi, w, tail).vectorize(xi)
        if sched.get("unroll_y"):
            stage.unroll(y, sched["unroll_y"])
        return {"y": y, "x": xo}

    if spec["kind"] == "pointwise":
        if spec.get("producer") is not None:
            g[x, y] = build(spec["producer"])
        f[x, y] = build(spec["expr"])
        loops = vectorize(f)
        at = sched.get("producer_at", "inline")
        if spec.get("producer") is not None and at != "inline":
            if at == "root":
                g.compute_root()
            else:
                g.compute_at(f, loops[at])
            if sched.get("producer_vec"):
                # RoundUp: grows the region up; the default may shift it below x = 0.
                g.vectorize(x, sched["producer_vec"], hl.TailStrategy.RoundUp)
    else:
        r = hl.RDom([(0, spec["k"])], "r")
        f[x, y] = hl.cast(T, 0)
        lhs = params[0][r.x, y]
        rhs = params[1][x, r.x] if spec["kind"] == "matmul" else params[1][r.x, x]
        f[x, y] += hl.cast(T, lhs) * hl.cast(T, rhs)
        vectorize(f)
        if spec["kind"] == "matmul":
            vectorize(f.update())
        else:
            update = f.update().atomic()
            if sched.get("dot_vec_x"):
                update.vectorize(r.x, sched["vec_r"]).vectorize(x, sched["dot_vec_x"])
            else:
                update.vectorize(r.x, sched["vec_r"])

    ob = f.output_buffer()
    ob.dim(0).set_bounds(0, width).set_stride(1)
    ob.dim(1).set_bounds(0, height).set_stride(width)

    os.write(2, b"\n@@MAIN@@\n")
    f.compile_to_lowered_stmt(os.path.join(out, "f.stmt"), params, hl.StmtOutputFormat.Text, target)
    os.write(2, b"\n@@END@@\n")
    result = f.realize([width, height], target)
    if spec["out"] == "bfloat16":
        bits = hl.Func("bits")
        bits[x, y] = hl.reinterpret(hl.UInt(16), result[x, y])
        result = bits.realize([width, height], target)
    np.save(os.path.join(out, "f.npy"), np.array(result, copy=True))


# One request per stdin line; everything Halide prints goes to stderr, and a
# marker line ends each request's output.
for line in sys.stdin:
    request = json.loads(line)
    status = "ok"
    try:
        run(request["spec"], request["out"])
    except Exception:
        status = "error"
        sys.stderr.write(traceback.format_exc())
        sys.stderr.flush()
    os.write(2, ("\n@@DONE %d %s@@\n" % (request["id"], status)).encode())
'''


class HalideChild:
    """A long-lived child process that lowers and runs pipelines.

    One process serves every case of this module: Halide's JIT compiles its
    runtime once per process (most of a fresh process's second), and
    ``HL_DEBUG_CODEGEN`` is read once per process anyway. A crash (an LLVM
    assertion aborts the process) fails that case only; the next request
    starts a new child.
    """

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.count = 0

    def _start(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ, HL_DEBUG_CODEGEN="2", HL_COLORS="0")
        proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        self.lines = lines = queue.Queue()

        def pump() -> None:
            assert proc.stderr is not None
            for raw in proc.stderr:
                lines.put(raw.decode(errors="replace"))
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        return proc

    def request(self, spec: dict, workdir: Path) -> tuple[bool, str]:
        """(whether the child succeeded, everything it printed for this request)."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        self.count += 1
        marker = f"@@DONE {self.count} "
        assert self.proc.stdin is not None
        message = {"id": self.count, "spec": spec, "out": str(workdir)}
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        collected: list[str] = []
        while True:
            try:
                line = self.lines.get(timeout=300)
            except queue.Empty:
                self.close()
                return False, "".join(collected) + "\n(the Halide child timed out)"
            if line is None:
                self.proc = None
                return False, "".join(collected) + "\n(the Halide child died)"
            if line.startswith(marker):
                return line.rstrip().endswith(" ok@@"), "".join(collected)
            collected.append(line)

    def close(self) -> None:
        if self.proc is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


@pytest.fixture(scope="module")
def halide_child() -> Iterator[HalideChild]:
    child = HalideChild()
    yield child
    child.close()


def _run_halide(child: HalideChild, spec: dict, workdir: Path,
                halide_bugs_reject: bool = False) -> tuple[str, dict[str, np.ndarray], np.ndarray]:
    """(the debug log of the lowering, the inputs, Halide's output), numpy [y, x]."""
    workdir.mkdir(parents=True, exist_ok=True)
    ok, text = child.request(spec, workdir)
    if not ok and halide_bugs_reject and "Internal error at" in text:
        # Halide's own compiler failed (an assertion of its codegen or JIT, not
        # a user error): no evidence about the interpreter either way.
        reject()
    if not ok:
        pytest.fail(f"Halide failed for {json.dumps(spec)}:\n{text[-3000:]}")
    log = text.split("\n@@MAIN@@\n", 1)[1].split("\n@@END@@\n", 1)[0]
    inputs = {}
    for name, tname in zip("AB", spec["inputs"]):
        data = np.load(workdir / f"{name}.npy")
        inputs[name] = data.view(ml_dtypes.bfloat16) if tname == "bfloat16" else data
    output = np.load(workdir / "f.npy")
    if spec["out"] == "bfloat16":
        output = output.view(ml_dtypes.bfloat16)
    return log, inputs, output


def _dense(name: str, tname: str, array: np.ndarray) -> BufferT:
    """A min-0 dense buffer over a numpy [y, x] array, as Halide sees it."""
    height, width = array.shape
    t = ir.parse_type_name(tname)
    assert t is not None
    return BufferT(name, t, np.ascontiguousarray(array).reshape(-1).copy(), (0, 0), (width, height), (1, width))


def _interpret(stmt: ir.Stmt, spec: dict, inputs: dict[str, np.ndarray]) -> np.ndarray:
    # Halide makes names unique within a process: the child's second Func
    # "f" is "f$1". The dump's own checks say which buffer is which.
    found = discover_buffers(stmt)
    names = {spec_name: [n for n in found if n.split("$")[0] == spec_name] for spec_name in ("A", "B", "f")}
    assert len(names["f"]) == 1 and all(len(v) <= 1 for v in names.values()), sorted(found)
    buffers = {names[k][0]: _dense(names[k][0], tname, inputs[k])
               for k, tname in zip("AB", spec["inputs"]) if names[k]}  # an unused input is not in the IR
    out_name = names["f"][0]
    assert found[out_name].output and str(found[out_name].type) == spec["out"]
    out_t = ir.parse_type_name(spec["out"])
    assert out_t is not None
    blank = np.zeros((spec["height"], spec["width"]), dtype=dtype_of(out_t))
    buffers[out_name] = _dense(out_name, spec["out"], blank)
    Interpreter(buffers=buffers).run(stmt)
    return buffers[out_name].data.reshape(spec["height"], spec["width"])


def _tolerance(tname: str, reference: np.ndarray) -> float:
    """Allowed absolute difference for a float output.

    Integers: none. Floats: a fraction of the output's largest finite
    magnitude (at least 1). The interpreter rounds every operation of the
    vectorizing stage as written; the JIT's code may not: LLVM is allowed to
    contract a*b + c into an FMA and to reassociate (a float16
    ``c + (a + b)`` was seen computed as ``(a + c) + b``), and a
    vector_reduce_add is summed in another order. Observed over 900 random
    pipelines: float64 2e-16, float32 2.3e-7, float16 7.2e-4, bfloat16 0
    (Halide rounds every emulated bfloat16 operation itself). Allowed:
    1e-9, 1e-5, 1e-2 (20 float16 ulps) and 2e-2 (5 bfloat16 ulps).
    Infinities and NaNs must match exactly (see ``_check``).
    """
    if tname in INT_TYPES:
        return 0.0
    finite = np.abs(reference.astype(np.float64))
    finite = finite[np.isfinite(finite)]
    scale = max(float(finite.max(initial=0.0)), 1.0)
    return {"float64": 1e-9, "float32": 1e-5, "float16": 1e-2, "bfloat16": 2e-2}[tname] * scale


def _check(child: HalideChild, spec: dict, workdir: Path, halide_bugs_reject: bool = False) -> ir.Stmt:
    log, inputs, expected = _run_halide(child, spec, workdir, halide_bugs_reject)
    parsed = parse_input(log, "<halide child>")
    assert parsed.stage == "vectorizing"
    stmt = parsed.ir
    assert isinstance(stmt, ir.Stmt)
    actual = _interpret(stmt, spec, inputs)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if spec["out"] in INT_TYPES:
        bad = np.argwhere(actual != expected)
    else:
        # Infinities and NaNs must match exactly, finite values within the tolerance.
        e, a = expected.astype(np.float64), actual.astype(np.float64)
        same = (e == a) | (np.isnan(e) & np.isnan(a))
        with np.errstate(invalid="ignore"):
            close = np.isfinite(e) & np.isfinite(a) & (np.abs(e - a) <= _tolerance(spec["out"], expected))
        bad = np.argwhere(~(same | close))
    if bad.size:
        yy, xx = (int(v) for v in bad[0])
        pytest.fail(
            f"interpreter and Halide differ at {len(bad)} of {expected.size} outputs; first f({xx}, {yy}): "
            f"Halide {expected[yy, xx]!r}, interpreter {actual[yy, xx]!r}\nspec: {json.dumps(spec)}"
        )
    return stmt


# --------------------------------------------------------------------------
# Pipeline descriptions
# --------------------------------------------------------------------------

DATA_BOUND = {"int8": 100, "int16": 100, "int32": 100, "uint8": 200, "uint16": 200,
              "float16": 6.0, "float32": 6.0, "float64": 6.0, "bfloat16": 6.0}
"""The largest magnitude of the child's random inputs (floats are standard
normal: 6 sigma)."""

PRODUCT_LIMIT = {"int32": 2**30, "float16": 1e3, "bfloat16": 1e6, "float32": 1e12, "float64": 1e12}
"""Products beyond this could overflow (int32: undefined in Halide; float16:
infinities, then NaN from inf - inf): '*' becomes '+'."""


def _is_float(tname: str) -> bool:
    return tname in FLOAT_TYPES


def _wrap_bound(tname: str, bound: float) -> float:
    if _is_float(tname):
        return bound
    lo, hi = INT_RANGE[tname]
    return min(bound, max(-lo, hi))


def _convert(node: list, src: str, dst: str, bound: float) -> tuple[list, float]:
    """``node`` of type ``src`` as a ``dst``. A float becomes an integer
    through ``clamp(v * 10)``: in range, so the cast is defined."""
    if src == dst:
        return node, bound
    if _is_float(src) and not _is_float(dst):
        lo, hi = max(INT_RANGE[dst][0], -100), min(INT_RANGE[dst][1], 100)
        scaled = ["bin", "*", node, ["const", src, 10]]
        return ["cast", dst, ["clamp", src, scaled, lo, hi]], float(max(-lo, hi))
    if not _is_float(src) and not _is_float(dst) and INT_RANGE[dst][0] == 0:
        _clamp_at_zero(node)
    if src == "float64" and dst == "float16":
        # Halide's JIT lacks __truncdfhf2 (LLVM's float64 -> float16 helper):
        # go through float32, and a clamp, or the simplifier folds the casts.
        node = ["clamp", "float32", ["cast", "float32", node], -60000, 60000]
    if not _is_float(src) and dst == "float64":
        # Halide 21 fails an internal assertion (CodeGen_LLVM.cpp:5155,
        # arg_type->getScalarType() == desired_type->getScalarType()) compiling
        # float64(uint8 vector) * constant for x86: the same detour.
        node = ["clamp", "float32", ["cast", "float32", node], -1e9, 1e9]
    return ["cast", dst, node], _wrap_bound(dst, bound)


def _clamp_at_zero(node: list) -> None:
    """Make a float -> int conversion under a chain of integer casts
    non-negative, before an unsigned cast goes on top: Halide's simplifier
    folds uint8(int8(f)) into uint8(f), undefined for a negative f (the JIT
    gives 0, the interpreter wraps to 256 + trunc(f))."""
    while node[0] == "cast" and not _is_float(node[1]):
        if node[2][0] == "clamp" and _is_float(node[2][1]):
            node[2][3] = max(node[2][3], 0)
            return
        node = node[2]


@st.composite
def _leaf(draw, t: str, inputs: list[str], producer: bool) -> tuple[list, float]:
    kind = draw(st.sampled_from(["load", "load", "load", "const"] + (["prod", "prod"] if producer else [])))
    if kind == "const":
        if _is_float(t):
            value = draw(st.sampled_from([0.5, 1.5, -2.0, 3.0, 0.25]))
        else:
            lo, hi = INT_RANGE[t]
            value = draw(st.integers(max(lo, -9), min(hi, 9)))
        return ["const", t, value], abs(value)
    if kind == "prod":
        return ["prod", draw(st.integers(0, 2))], DATA_BOUND[t] * 4
    i = draw(st.integers(0, len(inputs) - 1))
    node = ["load", i, draw(st.sampled_from(SHAPES)), draw(st.integers(0, 3))]
    return _convert(node, inputs[i], t, DATA_BOUND[inputs[i]])


@st.composite
def _expr(draw, t: str, depth: int, inputs: list[str], producer: bool = False) -> tuple[list, float]:
    """A (tree, bound on its magnitude) of type ``t``."""
    if depth == 0:
        return draw(_leaf(t, inputs, producer))
    op = draw(st.sampled_from(["+", "-", "*", "/", "%", "min", "max", "select", "cast", "math", "leaf"]))

    def sub(tt: str = t) -> st.SearchStrategy[tuple[list, float]]:
        return _expr(tt, depth - 1, inputs, producer)

    if op == "leaf":
        return draw(_leaf(t, inputs, producer))
    if op == "math":
        # abs (of an integer: the unsigned type of its width, cast back),
        # sin (sin_f32/sin_f64) and strict_float
        a, ba = draw(sub())
        name = draw(st.sampled_from(["abs", "sin", "strict"] if t in ("float32", "float64") else ["abs"]))
        if name == "abs" and not _is_float(t):
            return ["cast", t, ["math", "abs", a]], ba
        return ["math", name, a], (1.0 if name == "sin" else ba)
    if op == "cast":
        src = draw(st.sampled_from([u for u in TYPES if u != t]))
        if _is_float(src) and not _is_float(t):
            node, bound = draw(_leaf(src, inputs, False))
        else:
            node, bound = draw(sub(src))
        return _convert(node, src, t, bound)
    if op == "select":
        ctype = draw(st.sampled_from(sorted(set(inputs) | {t})))
        (l1, _), (l2, _) = draw(_leaf(ctype, inputs, False)), draw(_leaf(ctype, inputs, False))
        cmp = draw(st.sampled_from(["<", "<=", "==", "!=", ">"]))
        (a, ba), (b, bb) = draw(sub()), draw(sub())
        return ["select", ["bin", cmp, l1, l2], a, b], max(ba, bb)
    if op in ("/", "%") and _is_float(t):
        if op == "/":
            a, ba = draw(sub())
            # Halide turns x / c into x * (1/c) and prints 1/3 as 0.333333: a
            # float64 result would be off by 1e-6, so only exact reciprocals there.
            c = draw(st.sampled_from([2.0, -4.0, 0.5] + ([3.0] if t != "float64" else [])))
            return ["bin", "/", a, ["const", t, c]], ba / abs(c)
        a, _ = draw(_leaf(t, inputs, producer))
        c = draw(st.sampled_from([1.5, 3.0, -2.0]))
        return ["bin", "%", a, ["const", t, c]], abs(c)
    if op in ("/", "%"):
        a, ba = draw(sub())
        if draw(st.booleans()):
            signed = INT_RANGE[t][0] < 0
            c = draw(st.sampled_from([2, 3, 4, 7, -3, -4, -8] if signed else [2, 3, 4, 7]))
            b, bb = ["const", t, c], abs(c)
        else:
            b, bb = draw(sub())  # may be zero: x / 0 == x % 0 == 0 in Halide
        return ["bin", op, a, b], (ba if op == "/" else bb)
    (a, ba), (b, bb) = draw(sub()), draw(sub())
    if op == "*":
        if ba * bb > PRODUCT_LIMIT.get(t, float("inf")):
            op = "+"
        else:
            return ["bin", "*", a, b], _wrap_bound(t, ba * bb)
    if op in ("+", "-"):
        return ["bin", op, a, b], _wrap_bound(t, ba + bb)
    return ["bin", op, a, b], max(ba, bb)


def _uses_producer(tree: list) -> bool:
    if not isinstance(tree, list):
        return False
    return tree[:1] == ["prod"] or any(_uses_producer(c) for c in tree[1:])


@st.composite
def _schedule(draw, width: int, height: int, update: bool) -> dict:
    w = draw(st.sampled_from([4, 8, 16]))
    tail = draw(st.sampled_from(["Auto", "GuardWithIf", "Predicate", "ShiftInwards", "RoundUp"]))
    if tail == "ShiftInwards" and update:
        tail = "Predicate"  # it would recompute (so add twice) some update's values: Halide refuses it
    if tail in (("RoundUp", "Auto") if update else ("RoundUp",)) and width % w:
        tail = "GuardWithIf"  # rounding up an output would write past its end
    if tail == "ShiftInwards" and width < w:
        tail = "GuardWithIf"
    sched: dict = {"vec_x": w, "tail": tail}
    nest = draw(st.sampled_from(["none", "none", "vec_y", "unroll_y"]))
    if nest == "vec_y":
        sched["vec_y"] = draw(st.sampled_from([2, 4]))
    elif nest == "unroll_y":
        sched["unroll_y"] = 2
    assert height % 4 == 0
    return sched


@st.composite
def pipelines(draw, seed: int = 0) -> dict:
    kind = draw(st.sampled_from(["pointwise", "pointwise", "pointwise", "matmul", "dot"]))
    width = draw(st.sampled_from([16, 20, 24]))
    height = draw(st.sampled_from([4, 8]))
    inputs = draw(st.lists(st.sampled_from(TYPES), min_size=1 if kind == "pointwise" else 2, max_size=2))
    spec: dict = {"target": TARGET, "n": N, "width": width, "height": height, "seed": seed,
                  "inputs": inputs, "kind": kind, "schedule": draw(_schedule(width, height, kind == "matmul"))}
    if kind == "pointwise":
        out = draw(st.sampled_from(TYPES))
        producer = draw(st.booleans())
        if producer:
            spec["producer"], _ = draw(_expr(out, draw(st.integers(0, 2)), inputs))
            tree, _ = draw(_expr(out, draw(st.integers(1, 2)), inputs, producer=True))
            if not _uses_producer(tree):
                tree = ["bin", "+", ["prod", draw(st.integers(0, 2))], tree]
            spec["schedule"]["producer_at"] = draw(st.sampled_from(["inline", "root", "y", "x"]))
            spec["schedule"]["producer_vec"] = draw(st.sampled_from([0, 4, 8]))
        else:
            tree, _ = draw(_expr(out, draw(st.integers(1, 3)), inputs))
        spec["out"], spec["expr"] = out, tree
        return spec
    # A reduction over r: f(x, y) += T(A(r, y)) * T(B(x, r))  (matmul, serial r)
    # or T(A(r, y)) * T(B(r, x)) with r atomic and vectorized (vector_reduce_add).
    if kind == "matmul":
        spec["out"] = draw(st.sampled_from(TYPES))
        spec["k"] = draw(st.sampled_from([4, 8, 16]))
    else:
        # Summed in a different order by Halide: no 16-bit float accumulators.
        spec["out"] = draw(st.sampled_from(["int8", "int16", "int32", "uint16", "float32", "float64"]))
        spec["k"] = draw(st.sampled_from([8, 16, 24]))
        spec["schedule"]["vec_r"] = draw(st.sampled_from([4, 8]))
        if draw(st.booleans()):
            spec["schedule"]["dot_vec_x"] = 4
    out = spec["out"]
    if not _is_float(out):
        inputs = [t if not _is_float(t) else "int8" for t in inputs]  # no float->int casts of data
    if out == "float16":
        inputs = [t if t != "float64" else "float32" for t in inputs]  # see _convert
    if out == "float64":
        inputs = [{"uint8": "int8", "uint16": "int16"}.get(t, t) for t in inputs]  # see _convert
    spec["inputs"] = inputs
    return spec


# --------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(spec=pipelines())
def test_interpreter_agrees_with_halide(spec: dict, tmp_path: Path, halide_child: HalideChild) -> None:
    workdir = tmp_path / f"case{abs(hash(json.dumps(spec, sort_keys=True))) % 10**9}"
    _check(halide_child, spec, workdir, halide_bugs_reject=True)


def _load(i: int, shape: str = "shift", c: int = 0) -> list:
    return ["load", i, shape, c]


def _const(t: str, v: float) -> list:
    return ["const", t, v]


def _bin(op: str, a: list, b: list) -> list:
    return ["bin", op, a, b]


def _cast(t: str, a: list) -> list:
    return ["cast", t, a]


def _pointwise(inputs: list[str], out: str, expr: list, **sched: object) -> dict:
    schedule = {"vec_x": 8, "tail": "Auto"}
    schedule.update(sched)
    return {"target": TARGET, "n": N, "width": 24, "height": 8, "seed": 1, "inputs": inputs,
            "kind": "pointwise", "out": out, "expr": expr, "schedule": schedule}


def _nodes(stmt: ir.Stmt, kind: type) -> list:
    return [n for n in ir.walk(stmt) if isinstance(n, kind)]


def _has_nested_ramp(stmt: ir.Stmt) -> bool:
    return any(n.base.type.lanes > 1 for n in _nodes(stmt, ir.Ramp))


def _has_vector_reduce(stmt: ir.Stmt, lanes: int = 1) -> bool:
    return any(n.op is ir.ReduceOp.ADD and n.type.lanes == lanes for n in _nodes(stmt, ir.VectorReduce))


def _has_predicated_store(stmt: ir.Stmt) -> bool:
    return any(s.predicate is not None for s in _nodes(stmt, ir.Store))


def _has_guard(stmt: ir.Stmt) -> bool:
    return bool(_nodes(stmt, ir.IfThenElse)) and any(
        isinstance(c, ir.Call) and c.name == "likely" for c in ir.walk(stmt))


PINNED = {
    # 2-D vectorization: x by 8 inside y by 4 (ramps of ramps), a transposed
    # operand (B(y, x): a ramp with stride N inside a ramp with stride 1).
    "nested_ramps": (
        _pointwise(["int16", "int16"], "int16",
                   ["bin", "-", ["bin", "*", _load(0, "stride2", 1), _const("int16", 3)], _load(1, "transpose", 2)],
                   vec_y=4),
        _has_nested_ramp,
    ),
    # f(x, y) += A(r, y) * B(r, x), r atomic and vectorized by 8: a scalar
    # vector_reduce_add of an int32x8 product.
    "vector_reduce_add": (
        {"target": TARGET, "n": N, "width": 16, "height": 4, "seed": 2, "inputs": ["int8", "uint8"],
         "kind": "dot", "out": "int32", "k": 24, "schedule": {"vec_x": 8, "tail": "Auto", "vec_r": 8}},
        _has_vector_reduce,
    ),
    # ... and with x vectorized too: int32x16 reduced to int32x4.
    "vector_reduce_add_to_vector": (
        {"target": TARGET, "n": N, "width": 16, "height": 4, "seed": 3, "inputs": ["int16", "int16"],
         "kind": "dot", "out": "int32", "k": 16, "schedule": {"vec_x": 8, "tail": "Auto", "vec_r": 4,
                                                              "dot_vec_x": 4}},
        lambda s: _has_vector_reduce(s, 4),
    ),
    "float_vector_reduce_add": (
        {"target": TARGET, "n": N, "width": 16, "height": 4, "seed": 4, "inputs": ["float32", "bfloat16"],
         "kind": "dot", "out": "float32", "k": 16, "schedule": {"vec_x": 8, "tail": "Auto", "vec_r": 8}},
        _has_vector_reduce,
    ),
    # Division and modulo by negative and positive constants, and by data
    # (zero included) of negative values, Euclidean in Halide.
    "int_div_mod": (
        _pointwise(["int16", "int8"], "int16",
                   _bin("+",
                        _bin("+", _bin("/", _load(0), _const("int16", -3)),
                             _bin("%", _load(0, "shift", 1), _const("int16", -4))),
                        _bin("-", _bin("/", _cast("int16", _load(1)), _const("int16", 7)),
                             _bin("*", _bin("%", _cast("int16", _load(1, "transpose")), _const("int16", 3)),
                                  _bin("/", _load(0, "half"),
                                       _cast("int16", _bin("%", _load(1, "down", 1), _const("int8", 3)))))))),
        lambda s: True,
    ),
    "uint_div_mod": (
        _pointwise(["uint8"], "uint8",
                   ["bin", "+", ["bin", "/", _load(0), _const("uint8", 7)],
                    ["bin", "%", _load(0, "mod3"), ["bin", "-", _load(0, "shift", 1), _const("uint8", 100)]]],
                   vec_x=16),
        lambda s: True,
    ),
    # Casts that wrap: int8(int16(a) * 3 + 100), uint8(a - 150), int16 * int16.
    "int8_wrap": (
        _pointwise(["int8", "uint8"], "int8",
                   ["bin", "+",
                    _cast("int8", _bin("+", _bin("*", _cast("int16", _load(0)), _const("int16", 3)),
                                       _const("int16", 100))),
                    ["cast", "int8", ["bin", "-", _load(1, "stride2"), _const("uint8", 150)]]]),
        lambda s: True,
    ),
    "int16_wrap": (
        _pointwise(["int16"], "int16", _bin("*", _bin("*", _load(0), _load(0, "transpose")), _load(0, "down", 3)),
                   vec_x=16, tail="GuardWithIf"),
        lambda s: True,
    ),
    # float16 arithmetic, rounded per operation, with a float32 operand cast down.
    "float16": (
        _pointwise(["float16", "float32"], "float16",
                   ["select", ["bin", "<", _load(0), ["cast", "float16", _load(1, "transpose")]],
                    _bin("+", _bin("*", _load(0, "stride2", 1), _const("float16", 1.5)), _cast("float16", _load(1))),
                    ["bin", "max", ["bin", "/", _load(0, "half"), _const("float16", 3.0)], _load(0, "mod3")]]),
        lambda s: True,
    ),
    "bfloat16": (
        _pointwise(["bfloat16", "float32"], "bfloat16",
                   ["bin", "-", ["bin", "*", _load(0), ["cast", "bfloat16", _load(1, "shift", 2)]],
                    ["bin", "min", _load(0, "down", 1), _const("bfloat16", 0.25)]], vec_x=16, tail="Predicate"),
        lambda s: True,
    ),
    # A tail: width 20 by 8 lanes, guarded (an if around a last vector of
    # 8 ... or the scalar loop), and predicated (masked loads and stores).
    "guard_with_if_tail": (
        {**_pointwise(["int32", "float32"], "float32",
                      _bin("+", _cast("float32", _load(0, "stride2", 3)),
                           _bin("*", _load(1), _load(1, "transpose", 1))),
                      tail="GuardWithIf"), "width": 20},
        _has_guard,
    ),
    "predicated_tail": (
        {**_pointwise(["uint16"], "uint16",
                      ["bin", "max", _load(0, "shift", 3), ["bin", "*", _load(0, "half"), _const("uint16", 300)]],
                      tail="Predicate"), "width": 20},
        _has_predicated_store,
    ),
    # A producer computed per row of the output (an allocation, a loop of
    # its own) and read at three shifted positions.
    "producer_compute_at": (
        {**_pointwise(["int16"], "int32",
                      _bin("+", _bin("+", ["prod", 0], ["prod", 1]), _bin("*", ["prod", 2], _const("int32", -2))),
                      tail="GuardWithIf", producer_at="y", producer_vec=8, unroll_y=2),
         "producer": ["cast", "int32", ["bin", "*", _load(0, "stride2", 1), _load(0, "transpose")]], "width": 20},
        lambda s: bool(_nodes(s, ir.Allocate)),
    ),
    # Float modulo of 16-bit floats: Halide (emulating (b)float16 on this
    # target) computes a - b*floor(a/b) in float32 and rounds once (the
    # interpreter rounded every step: found by these tests, fixed).
    "bfloat16_modulo": (
        _pointwise(["int16"], "bfloat16",
                   _bin("%", _cast("bfloat16", _bin("*", _load(0), _const("int16", 3))), _const("bfloat16", 1.5))),
        lambda s: True,
    ),
    "float16_modulo": (
        _pointwise(["int16"], "float16",
                   _bin("%", _cast("float16", _bin("*", _load(0), _const("int16", 20))), _const("float16", 1.5))),
        lambda s: True,
    ),
    # Math calls the applications use: sin_f32 and strict_float on vectors,
    # abs of a float and of a signed integer (an unsigned result, cast back).
    "sin_strict_abs_float": (
        _pointwise(["float32"], "float32",
                   _bin("+", ["math", "sin", _load(0)],
                        ["math", "strict", _bin("*", ["math", "abs", _load(0, "shift", 1)], _const("float32", 0.5))])),
        lambda s: {"sin_f32", "abs", "strict_mul"} <= {c.name for c in _nodes(s, ir.Call)},
    ),
    "abs_int": (
        _pointwise(["int16"], "int16", _cast("int16", ["math", "abs", _bin("-", _load(0), _load(0, "shift", 1))])),
        lambda s: any(c.name == "abs" and c.type.lanes > 1 for c in _nodes(s, ir.Call)),
    ),
    # Serial matmul with x vectorized, bf16 products accumulated in float32.
    "matmul_bf16_f32": (
        {"target": TARGET, "n": N, "width": 16, "height": 8, "seed": 5, "inputs": ["bfloat16", "bfloat16"],
         "kind": "matmul", "out": "float32", "k": 16, "schedule": {"vec_x": 16, "tail": "Auto"}},
        lambda s: True,
    ),
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_pinned_pipeline_agrees_with_halide(name: str, tmp_path: Path, halide_child: HalideChild) -> None:
    spec, feature = PINNED[name]
    stmt = _check(halide_child, spec, tmp_path)
    assert feature(stmt), f"the vectorizing stage of '{name}' lacks the construct this case is about"
