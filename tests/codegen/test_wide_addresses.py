"""Issue 33, item 1: AMX tile loads and stores address bytes, and a byte
offset is the element offset times 2 or 4. Halide's checks keep element
offsets within int32, not byte offsets, so the kernel must compute the
bytes in 64 bits. Each test runs a shipped kernel twice in a child
process: on compact buffers, and with one buffer's rows 2^24 or 2^15
elements apart (its memory gigabytes large, mapped lazily), and compares
the results element by element."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.select.reinsert import in_bytes

from ..conftest import FIXTURES, run_cli

# The child: BUFFERS maps a name to (halide type, numpy storage dtype,
# extents); the buffer WIDE gets row stride STRIDE and dim-1 min MIN. Data
# are small integers, so bf16 and int8 products are exact.
_CHILD = textwrap.dedent("""
    import pickle, sys
    import numpy as np
    from hardboiled.verify.run import run_kernel
    from hardboiled.verify.values import BufferT

    library, arguments, buffers, wide, stride, low = pickle.loads(sys.stdin.buffer.read())
    rng = np.random.default_rng(5)
    logical = {}
    for name, (t, dtype, extents) in buffers.items():
        values = rng.integers(-3, 4, size=extents[::-1]).astype(np.float32)
        if dtype == "uint16":  # bf16: the high half of a float32
            values = (values.view(np.uint32) >> 16).astype(np.uint16)
        logical[name] = values.astype(dtype)

    def make(name, row_stride, row_min):
        t, dtype, extents = buffers[name]
        rows = logical[name].reshape(-1, extents[0]) if len(extents) == 2 else None
        if rows is None or name != wide:
            data = logical[name].reshape(-1).copy()
            strides = [1]
            for e in extents[:-1]:
                strides.append(strides[-1] * e)
            return BufferT(name, t, data, (0,) * len(extents), tuple(extents), tuple(strides))
        # Rows row_stride apart, the first at index row_min: np.zeros maps
        # the gigabytes lazily, and only the rows written are touched.
        data = np.zeros((extents[1] - row_min) * row_stride, dtype=dtype)
        for r in range(extents[1]):
            start = (r - row_min) * row_stride
            data[start:start + extents[0]] = rows[r]
        return BufferT(name, t, data, (0, row_min), (extents[0], extents[1] - row_min), (1, row_stride))

    compact = {name: make(name, buffers[name][2][0], 0) for name in buffers}
    spread = {name: make(name, stride, low) for name in buffers}
    assert run_kernel(library, "k", arguments, compact) == 0
    status = run_kernel(library, "k", arguments, spread)
    assert status == 0, status
    w = spread[wide]
    t, dtype, extents = buffers[wide]
    for r in range(extents[1]):
        start = (r - low) * stride
        got = w.data[start:start + extents[0]]
        want = compact[wide].data[r * extents[0]:(r + 1) * extents[0]]
        assert (got == want).all(), f"row {r} differs"
    for name in buffers:
        if name != wide:
            assert (spread[name].data == compact[name].data).all(), name
    print("same")
""")


def _run_spread(tmp_path: Path, fixture: str, buffers: dict, wide: str, stride: int, low: int) -> None:
    import pickle

    from hardboiled.codegen.abi import kernel_signature

    source = FIXTURES / fixture / "vectorizing.stmt"
    library = tmp_path / "k.so"
    result = run_cli("compile", str(source), "--no-cache", "--build", str(library), "--name", "k", "-q",
                     "--emit", "c", "-o", str(tmp_path / "k.c"))
    assert result.returncode == 0, result.stderr
    arguments = kernel_signature(parse_input(source.read_text()).ir)
    request = pickle.dumps((library, arguments, buffers, wide, stride, low))
    child = subprocess.run([sys.executable, "-c", _CHILD], input=request, capture_output=True, timeout=300)
    assert child.returncode == 0, child.stderr.decode()[-2000:]
    assert child.stdout.decode().strip() == "same"


@pytest.mark.slow
def test_a_tile_store_into_rows_2_24_apart_writes_where_the_rows_are(tmp_path: Path) -> None:
    """The issue's case: int32 results whose rows are 2^24 elements apart
    (2^26 bytes; the 64th row starts 2^32 bytes in). An int32 byte offset
    wrapped: half the outputs were wrong and 512 values were written 1 to
    2 GiB below the buffer, with status 0."""
    buffers = {"A": (ir.Int(8), "int8", (128, 64)), "B": (ir.Int(8), "int8", (4, 64, 32)),
               "mm_global_wrapper$0": (ir.Int(32), "int32", (64, 64))}
    _run_spread(tmp_path, "amx_int8_matmul_vnni_tiled", buffers, "mm_global_wrapper$0", 1 << 24, 0)


@pytest.mark.slow
def test_a_tile_load_from_rows_below_a_negative_min_reads_them(tmp_path: Path) -> None:
    """The issue's second case: a bf16 A with min.1 = -32768 and rows
    32768 elements apart puts row 0 2^31 bytes into the buffer; the int32
    byte offset wrapped to 2 GiB below A (SIGSEGV)."""
    buffers = {"A": (ir.BFloat(16), "uint16", (128, 64)), "B": (ir.BFloat(16), "uint16", (64, 128)),
               "mm_global_wrapper$0": (ir.Float(32), "float32", (64, 64))}
    _run_spread(tmp_path, "amx_bf16_matmul_std_tiled", buffers, "A", 1 << 15, -(1 << 15))


def test_byte_offsets_are_int64_and_constants_stay_small() -> None:
    x = ir.Variable("x", ir.Int(32))
    offset = in_bytes(x, 4)
    assert offset.type == ir.Int(64)
    assert in_bytes(x, 1) is x  # one byte an element: the element offset fits int32
    assert in_bytes(ir.IntImm(16, ir.Int(32)), 4) == ir.IntImm(64, ir.Int(32))
    assert in_bytes(ir.IntImm(1 << 29, ir.Int(32)), 4).type == ir.Int(64)


@pytest.mark.slow
def test_native_amx_code_where_no_tiles_are_granted_returns_a_documented_code(tmp_path: Path) -> None:
    """Issue 33, item 13: on a CPU without AMX a native build returned
    -100000 from both entry points, neither a Halide error code nor in the
    header. NAME_raw now returns -200003 and NAME generic_error (-1), both
    in the header (docs/cli.md's table is checked by test_hardening)."""
    from pathlib import Path as _Path

    if "amx_tile" in _Path("/proc/cpuinfo").read_text():
        pytest.skip("this CPU has AMX: the tiles are granted")
    from hardboiled.verify.run import calls_on_verification_inputs

    source = FIXTURES / "amx_bf16_matmul_std_tiled" / "vectorizing.stmt"
    library = tmp_path / "k.so"
    result = run_cli("compile", str(source), "--no-cache", "--build", str(library), "--name", "k", "-q",
                     "--amx", "native", "--emit", "c", "-o", str(tmp_path / "k.c"))
    if result.returncode == 3:
        pytest.skip("the C compiler cannot build native AMX code here")
    assert result.returncode == 0, result.stderr
    assert "-200003 (amx unavailable)" in (tmp_path / "k.h").read_text()
    original = parse_input(source.read_text()).ir
    assert isinstance(original, ir.Stmt)
    statuses = set(calls_on_verification_inputs(original, original, function="k")(library))
    assert statuses == {-1}


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="libasan is preloaded the Linux way")
def test_a_seeded_abi_fuzz_sample_stays_inside_its_buffers() -> None:
    """bench/abi_fuzz.py on two kernels, 60 random halide_buffer_t calls
    each under ASan and UBSan: every status documented, nothing outside
    the buffers. The same run with every buffer 4 bytes short of what it
    claims must be stopped by the sanitizer, or the harness proves nothing
    (twice per kernel is enough to show it)."""
    from ..conftest import ROOT

    command = [sys.executable, str(ROOT / "bench" / "abi_fuzz.py"), "--calls", "120", "--seed", "5",
               "--cases", "amx_int8_matmul_vnni_tiled,cpu_strided_interleave"]
    clean = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert clean.returncode == 0, clean.stdout[-3000:]
    assert "120 calls over 2 kernels (seed 5)" in clean.stdout and ": 0 failures" in clean.stdout
    assert " 0: " in clean.stdout.split("statuses:")[1]  # some calls computed
    # Two stops per kernel show the sanitizer stopping calls, and the harness
    # going on past one in a new child; each stop costs a child's start.
    short = subprocess.run([*command, "--short-by", "4", "--max-failures", "2"], capture_output=True, text=True,
                           timeout=600)
    assert short.returncode == 1 and "heap-buffer-overflow" in short.stdout
    assert short.stdout.count("(stopped after ") == 2, short.stdout[-3000:]
