"""The portable AMX emulation (hardboiled/codegen/runtime/hb_amx_emulation.h).

Small C programs are written to tmp_path, compiled with the C compiler
($CC, else clang if on PATH, else gcc) with the flags generated code uses
under emulation, run, and their output checked against hand-computed values
and against the reference interpreter's tile semantics (hardboiled.verify.interp),
bit for bit.  One program is only compiled natively, with hb_amx.h's own definitions of
the intrinsics and with <immintrin.h>'s, to prove that the two are the same
instructions, and so that the names and argument orders are Intel's.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from hardboiled import ir
from hardboiled.verify import tiles

ROOT = Path(__file__).resolve().parent.parent.parent
RUNTIME = ROOT / "hardboiled" / "codegen" / "runtime"

EMU_FLAGS = ["-std=c99", "-O2", "-ffp-contract=off", "-DHB_AMX_EMULATE", "-I", str(RUNTIME)]
NATIVE_FLAGS = ["-std=c99", "-O2", "-ffp-contract=off", "-mamx-tile", "-mamx-bf16", "-mamx-int8",
                "-I", str(RUNTIME)]
# The headers must stay warning-free in generated code.
WARNINGS = ["-Wall", "-Wextra", "-pedantic", "-Werror"]


def _compiler() -> list[str]:
    if os.environ.get("CC"):
        return shlex.split(os.environ["CC"])
    return ["clang"] if shutil.which("clang") else ["gcc"]


CC = _compiler()


def _describe(cc: list[str]) -> str:
    if shutil.which(cc[0]) is None:
        return f"{' '.join(cc)} (not found)"
    version = subprocess.run([*cc, "--version"], capture_output=True, text=True).stdout
    return f"{' '.join(cc)}: {version.splitlines()[0] if version else '?'}"


CC_DESC = _describe(CC)

# Every test here runs a C compiler.
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which(CC[0]) is None, reason=f"no C compiler: {CC_DESC}")]


@pytest.fixture(autouse=True)
def _record_compiler(record_property: pytest.RecordProperty) -> None:
    record_property("cc", CC_DESC)


PRELUDE = r"""
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include "hb_amx.h"

/* Sets tile t's rows and bytes per row in a palette-1 configuration. */
static HB_AMX_UNUSED void cfg_tile(unsigned char *cfg, int t, int rows, int colsb) {
    cfg[16 + 2 * t] = (unsigned char)(colsb & 0xFF);
    cfg[17 + 2 * t] = (unsigned char)(colsb >> 8);
    cfg[48 + t] = (unsigned char)rows;
}

/* f as bf16; f must be exactly representable (the program says if not). */
static HB_AMX_UNUSED uint16_t bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if (u & 0xFFFFu)
        printf("not_bf16 %a\n", f);
    return (uint16_t)(u >> 16);
}

static HB_AMX_UNUSED uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static HB_AMX_UNUSED float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
"""


def compile_c(tmp_path: Path, name: str, body: str, flags: list[str], *, link: bool = True,
              prelude: str = PRELUDE) -> subprocess.CompletedProcess[str]:
    source = tmp_path / f"{name}.c"
    source.write_text(prelude + body)
    output = tmp_path / (name if link else f"{name}.o")
    command = [*CC, *flags, *WARNINGS, *([] if link else ["-c"]), str(source), "-o", str(output)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def run_c(tmp_path: Path, name: str, body: str, flags: list[str] = EMU_FLAGS) -> dict[str, str]:
    """Compiles and runs a program printing 'key value' lines; returns them."""
    built = compile_c(tmp_path, name, body, flags)
    assert built.returncode == 0, f"[{CC_DESC}] {' '.join(built.args)} failed:\n{built.stderr}"
    ran = subprocess.run([str(tmp_path / name)], capture_output=True, text=True, timeout=30)
    assert ran.returncode == 0, f"[{CC_DESC}] {name} exited {ran.returncode}:\n{ran.stdout}{ran.stderr}"
    assert "not_bf16" not in ran.stdout, ran.stdout
    values: dict[str, str] = {}
    for line in ran.stdout.splitlines():
        key, _, value = line.partition(" ")
        values[key] = value
    return values


# --------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------

CONFIG_PROGRAM = r"""
static unsigned char cfg[64];

static void base_config(void) {
    memset(cfg, 0, 64);
    cfg[0] = 1;
    cfg_tile(cfg, 0, 16, 64);
}

#define TRY(name, change) do { \
        base_config(); change; \
        hb_amx_emulation_clear_error(); \
        _tile_loadconfig(cfg); \
        printf("%s %d\n", name, hb_amx_emulation_error()); \
    } while (0)

int main(void) {
    int t;
    unsigned char stored[64];
    TRY("valid", (void)0);
    TRY("valid_all_tiles_max", for (t = 0; t < 8; t++) cfg_tile(cfg, t, 16, 64));
    TRY("valid_small", cfg_tile(cfg, 3, 1, 4));
    TRY("rows17", cfg[48] = 17);
    TRY("rows17_tile7", cfg[55] = 17);
    TRY("colsb65", cfg[16] = 65);
    TRY("colsb65_tile7", cfg[30] = 65);
    TRY("colsb_high_byte", cfg[17] = 1);
    TRY("palette0", cfg[0] = 0);
    TRY("palette2", cfg[0] = 2);
    TRY("start_row1", cfg[1] = 1);
    TRY("reserved_byte2", cfg[2] = 1);
    TRY("tile8_colsb", cfg[32] = 4);
    TRY("tile8_rows", cfg[56] = 1);
    /* messages */
    TRY("rows17_again", cfg[48] = 17);
    printf("msg_rows17 %s\n", hb_amx_emulation_message());
    TRY("colsb65_again", cfg[16] = 65);
    printf("msg_colsb65 %s\n", hb_amx_emulation_message());
    TRY("palette0_again", cfg[0] = 0);
    printf("msg_palette0 %s\n", hb_amx_emulation_message());

    /* A valid configuration is stored back as loaded; INIT stores zeros. */
    hb_amx_emulation_clear_error();
    base_config();
    cfg_tile(cfg, 5, 7, 28);
    _tile_loadconfig(cfg);
    memset(stored, 0xAA, 64);
    _tile_storeconfig(stored);
    printf("storeconfig_roundtrip %d\n", memcmp(stored, cfg, 64) == 0);
    _tile_release();
    memset(stored, 0xAA, 64);
    _tile_storeconfig(stored);
    for (t = 0; t < 64 && stored[t] == 0; t++) {}
    printf("storeconfig_after_release_zero %d\n", t == 64);
    printf("release_error %d\n", hb_amx_emulation_error());
    return 0;
}
"""


def test_config_limits(tmp_path: Path) -> None:
    out = run_c(tmp_path, "config", CONFIG_PROGRAM)
    for name in ("valid", "valid_all_tiles_max", "valid_small"):
        assert out[name] == "0", (CC_DESC, name, out)
    for name in ("rows17", "rows17_tile7", "colsb65", "colsb65_tile7", "colsb_high_byte", "palette0",
                 "palette2", "start_row1", "reserved_byte2", "tile8_colsb", "tile8_rows"):
        assert out[name] == "1", (CC_DESC, name, out)
    assert "17 rows" in out["msg_rows17"]
    assert "colsb 65" in out["msg_colsb65"]
    assert "palette_id 0" in out["msg_palette0"]
    assert out["storeconfig_roundtrip"] == "1"
    assert out["storeconfig_after_release_zero"] == "1"
    assert out["release_error"] == "0"


MISUSE_PROGRAM = r"""
static unsigned char src[16 * 64], dst[16 * 64];
static unsigned char cfg[64];

static int untouched(void) {
    int i;
    for (i = 0; i < 16 * 64; i++)
        if (dst[i] != 0xEE)
            return 0;
    return 1;
}

static void valid_config(void) {
    int t;
    memset(cfg, 0, 64);
    cfg[0] = 1;
    for (t = 0; t < 3; t++)
        cfg_tile(cfg, t, 16, 64);
    cfg_tile(cfg, 3, 8, 64);   /* rows differ from tile 0's */
    cfg_tile(cfg, 4, 16, 32);  /* colsb differs from tile 0's */
    /* tile 5: rows == 0, colsb == 0 (unused) */
    _tile_loadconfig(cfg);
}

int main(void) {
    int i;
    for (i = 0; i < 16 * 64; i++)
        src[i] = (unsigned char)(i * 7 + 1);

    /* Before any configuration: an error, and nothing is written. */
    memset(dst, 0xEE, sizeof dst);
    _tile_stored(0, dst, 64);
    printf("unconfigured_error %d\n", hb_amx_emulation_error());
    printf("unconfigured_untouched %d\n", untouched());

    /* A bad configuration after a good one: back to INIT, ops do nothing. */
    hb_amx_emulation_clear_error();
    valid_config();
    _tile_loadd(0, src, 64);
    printf("valid_error %d\n", hb_amx_emulation_error());
    cfg[48] = 17;
    _tile_loadconfig(cfg);
    printf("bad_error %d\n", hb_amx_emulation_error());
    memset(dst, 0xEE, sizeof dst);
    _tile_loadd(0, src, 64);
    _tile_zero(1);
    _tile_dpbf16ps(0, 1, 2);
    _tile_dpbssd(0, 1, 2);
    _tile_stored(0, dst, 64);
    printf("after_bad_untouched %d\n", untouched());
    printf("after_bad_errors %d\n", hb_amx_emulation_error());
    printf("after_bad_message %s\n", hb_amx_emulation_message());

    /* The flag is sticky; a valid configuration makes the tiles work again,
       and loading one zeroes every tile. */
    valid_config();
    memset(dst, 0xEE, sizeof dst);
    _tile_stored(0, dst, 64);
    for (i = 0; i < 16 * 64 && dst[i] == 0; i++) {}
    printf("reconfigured_zero %d\n", i == 16 * 64);
    _tile_loadd(0, src, 64);
    _tile_stored(0, dst, 64);
    printf("reconfigured_roundtrip %d\n", memcmp(src, dst, sizeof dst) == 0);
    printf("still_sticky %d\n", hb_amx_emulation_error() > 0);

    /* A configured-but-unused tile (rows 0) and a register outside 0..7. */
    hb_amx_emulation_clear_error();
    valid_config();
    memset(dst, 0xEE, sizeof dst);
    _tile_loadd(5, src, 64);
    _tile_stored(5, dst, 64);
    printf("unused_tile_error %d\n", hb_amx_emulation_error());
    printf("unused_tile_untouched %d\n", untouched());
    hb_amx_emulation_clear_error();
    valid_config();
    _tile_zero(8);
    printf("tile8_error %d\n", hb_amx_emulation_error());

    /* Dot products the hardware refuses (#UD). */
    hb_amx_emulation_clear_error();
    valid_config();
    _tile_dpbf16ps(0, 0, 1);
    printf("same_tiles %d\n", hb_amx_emulation_error());
    hb_amx_emulation_clear_error();
    valid_config();
    _tile_dpbf16ps(3, 1, 2);
    printf("rows_mismatch %d\n", hb_amx_emulation_error());
    hb_amx_emulation_clear_error();
    valid_config();
    _tile_dpbuud(0, 1, 4);
    printf("colsb_mismatch %d\n", hb_amx_emulation_error());
    hb_amx_emulation_clear_error();
    valid_config();
    _tile_dpbusd(0, 1, 3);   /* colsb(a)/4 = 16 but rows(b) = 8; colsb ok */
    printf("k_mismatch %d\n", hb_amx_emulation_error());
    hb_amx_emulation_clear_error();
    valid_config();
    _tile_dpbsud(0, 1, 2);
    _tile_dpbf16ps(0, 1, 2);
    printf("good_dp %d\n", hb_amx_emulation_error());
    return 0;
}
"""


def test_misuse_is_an_error_and_does_nothing(tmp_path: Path) -> None:
    out = run_c(tmp_path, "misuse", MISUSE_PROGRAM)
    assert out["unconfigured_error"] == "1", out
    assert out["unconfigured_untouched"] == "1", out
    assert out["valid_error"] == "0", out
    assert out["bad_error"] == "1", out
    assert out["after_bad_untouched"] == "1", out
    assert int(out["after_bad_errors"]) > 1, out  # each op after the error is one more
    assert "17 rows" in out["after_bad_message"], out  # the first error is kept
    assert out["reconfigured_zero"] == "1", out
    assert out["reconfigured_roundtrip"] == "1", out
    assert out["still_sticky"] == "1", out
    assert out["unused_tile_error"] != "0" and out["unused_tile_untouched"] == "1", out
    assert out["tile8_error"] == "1", out
    for name in ("same_tiles", "rows_mismatch", "colsb_mismatch", "k_mismatch"):
        assert out[name] == "1", (name, out)
    assert out["good_dp"] == "0", out


# --------------------------------------------------------------------------
# operand layout
# --------------------------------------------------------------------------

BF16_VNNI_PROGRAM = r"""
int main(void) {
    /* A (2 x 4) = [[1,2,3,4],[5,6,7,8]]; B (K x N = 4 x 2) =
       [[1,0],[0,1],[1,1],[2,0]] in VNNI order: row q holds, for each n,
       the pair (B[2q][n], B[2q+1][n]). */
    static const float a[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}};
    static const float b_vnni[2][4] = {{1, 0, 0, 1}, {1, 2, 1, 0}};
    float c[2][2] = {{0, 0}, {100, -1}};
    uint16_t ta[2][4], tb[2][4];
    unsigned char cfg[64] = {0};
    int i, j;
    for (i = 0; i < 2; i++)
        for (j = 0; j < 4; j++) {
            ta[i][j] = bf16(a[i][j]);
            tb[i][j] = bf16(b_vnni[i][j]);
        }
    if (hb_amx_enable() != 0)
        return 1;
    cfg[0] = 1;
    cfg_tile(cfg, 0, 2, 8);   /* C: M = 2 rows of N = 2 fp32 */
    cfg_tile(cfg, 1, 2, 8);   /* A: M = 2 rows of K = 4 bf16 */
    cfg_tile(cfg, 2, 2, 8);   /* B: K/2 = 2 rows of N = 2 bf16 pairs */
    _tile_loadconfig(cfg);
    _tile_zero(0);
    _tile_loadd(1, ta, 8);
    _tile_loadd(2, tb, 8);
    _tile_dpbf16ps(0, 1, 2);
    _tile_stored(0, c, 8);
    printf("zero_acc %g %g %g %g\n", c[0][0], c[0][1], c[1][0], c[1][1]);
    c[0][0] = 0.5f; c[0][1] = 0; c[1][0] = 100; c[1][1] = -1;
    _tile_loadd(0, c, 8);
    _tile_dpbf16ps(0, 1, 2);
    _tile_stored(0, c, 8);
    printf("loaded_acc %g %g %g %g\n", c[0][0], c[0][1], c[1][0], c[1][1]);
    printf("error %d\n", hb_amx_emulation_error());
    _tile_release();
    return 0;
}
"""


def test_bf16_vnni_layout(tmp_path: Path) -> None:
    out = run_c(tmp_path, "bf16_vnni", BF16_VNNI_PROGRAM)
    assert out["zero_acc"] == "12 5 28 13", (CC_DESC, out)
    assert out["loaded_acc"] == "12.5 5 128 12", (CC_DESC, out)
    assert out["error"] == "0", out


INT8_VNNI_PROGRAM = r"""
/* A (2 x 8 bytes) and B (K x N = 8 x 2 bytes) as raw bytes; each variant
   reads them as int8 or uint8. B in VNNI order: row q holds, for each n,
   the four bytes B[4q..4q+3][n]. */
static const unsigned char a[2][8] = {{1, 2, 0xFF, 3, 0x80, 0, 5, 1}, {0x7F, 0xFE, 2, 0, 1, 1, 1, 1}};
static const unsigned char b[8][2] = {{1, 0xFF}, {2, 1}, {3, 0x80}, {1, 2},
                                      {0x81, 1}, {4, 0}, {0, 0xFE}, {1, 3}};
static unsigned char b_vnni[2][8];
static int32_t c[2][2];

static void reset_c(void) {
    c[0][0] = 10; c[0][1] = -10; c[1][0] = 0; c[1][1] = 7;
    _tile_loadd(0, c, 8);
}

static void show(const char *name) {
    _tile_stored(0, c, 8);
    printf("%s %ld %ld %ld %ld\n", name, (long)c[0][0], (long)c[0][1], (long)c[1][0], (long)c[1][1]);
}

int main(void) {
    unsigned char cfg[64] = {0};
    int q, n, i;
    for (q = 0; q < 2; q++)
        for (n = 0; n < 2; n++)
            for (i = 0; i < 4; i++)
                b_vnni[q][4 * n + i] = b[4 * q + i][n];
    cfg[0] = 1;
    cfg_tile(cfg, 0, 2, 8);   /* C: 2 x 2 int32 */
    cfg_tile(cfg, 6, 2, 8);   /* A: 2 x 8 bytes */
    cfg_tile(cfg, 7, 2, 8);   /* B: K/4 = 2 rows x N = 2 byte quads */
    _tile_loadconfig(cfg);
    _tile_loadd(6, a, 8);
    _tile_loadd(7, b_vnni, 8);
    reset_c(); _tile_dpbssd(0, 6, 7); show("ss");
    reset_c(); _tile_dpbsud(0, 6, 7); show("su");
    reset_c(); _tile_dpbusd(0, 6, 7); show("us");
    reset_c(); _tile_dpbuud(0, 6, 7); show("uu");
    printf("error %d\n", hb_amx_emulation_error());
    return 0;
}
"""

# Hand-computed: C0 = [[10, -10], [0, 7]] plus A . B with A's and B's bytes
# read as (s)igned or (u)nsigned. For example ss C[0][0] =
# 10 + 1*1 + 2*2 + (-1)*3 + 3*1 + (-128)*(-127) + 0*4 + 5*0 + 1*1 = 16272 and
# uu C[1][1] = 7 + 127*255 + 254*1 + 2*128 + 0*2 + 1*1 + 1*0 + 1*254 + 1*3 = 33160.
INT8_EXPECTED = {
    "ss": [[16272, -10], [7, -376]],
    "su": [[-16496, 1270], [263, 32904]],
    "us": [[-15472, -32522], [519, -120]],
    "uu": [[17296, 34294], [775, 33160]],
}


def test_int8_vnni_layout_all_signedness(tmp_path: Path) -> None:
    out = run_c(tmp_path, "int8_vnni", INT8_VNNI_PROGRAM)
    for variant, expected in INT8_EXPECTED.items():
        got = [int(v) for v in out[variant].split()]
        assert got == [v for row in expected for v in row], (CC_DESC, variant, out)
    assert out["error"] == "0", out
    # The hand-computed table agrees with a plain integer matrix product.
    a = np.array([[1, 2, 0xFF, 3, 0x80, 0, 5, 1], [0x7F, 0xFE, 2, 0, 1, 1, 1, 1]], dtype=np.uint8)
    b = np.array([[1, 0xFF], [2, 1], [3, 0x80], [1, 2], [0x81, 1], [4, 0], [0, 0xFE], [1, 3]], dtype=np.uint8)
    for variant, expected in INT8_EXPECTED.items():
        ai = a.view(np.int8 if variant[0] == "s" else np.uint8).astype(np.int64)
        bi = b.view(np.int8 if variant[1] == "s" else np.uint8).astype(np.int64)
        assert ([[10, -10], [0, 7]] + ai @ bi).tolist() == expected


# --------------------------------------------------------------------------
# accumulation order, rounding, wraparound
# --------------------------------------------------------------------------

ROUNDING_PROGRAM = r"""
/* C (1 x 1 fp32) += A (1 x 2*pairs bf16) . B (pairs rows of one bf16 pair). */
static uint32_t dot(uint32_t c_bits, const float *a, const float *b, int pairs) {
    unsigned char cfg[64] = {0};
    uint16_t ta[32], tb[32];
    uint32_t c = c_bits;
    int i;
    for (i = 0; i < 2 * pairs; i++) {
        ta[i] = bf16(a[i]);
        tb[i] = bf16(b[i]);
    }
    cfg[0] = 1;
    cfg_tile(cfg, 0, 1, 4);
    cfg_tile(cfg, 1, 1, 4 * pairs);
    cfg_tile(cfg, 2, pairs, 4);
    _tile_loadconfig(cfg);
    _tile_loadd(0, &c, 4);
    _tile_loadd(1, ta, 4 * pairs);
    _tile_loadd(2, tb, 4);
    _tile_dpbf16ps(0, 1, 2);
    _tile_stored(0, &c, 4);
    _tile_release();
    return c;
}

static int32_t idot(int32_t c, const unsigned char *a, const unsigned char *b, int variant) {
    unsigned char cfg[64] = {0};
    cfg[0] = 1;
    cfg_tile(cfg, 0, 1, 4);
    cfg_tile(cfg, 1, 1, 4);
    cfg_tile(cfg, 2, 1, 4);
    _tile_loadconfig(cfg);
    _tile_loadd(0, &c, 4);
    _tile_loadd(1, a, 4);
    _tile_loadd(2, b, 4);
    switch (variant) {
    case 0: _tile_dpbssd(0, 1, 2); break;
    case 1: _tile_dpbsud(0, 1, 2); break;
    case 2: _tile_dpbusd(0, 1, 2); break;
    default: _tile_dpbuud(0, 1, 2); break;
    }
    _tile_stored(0, &c, 4);
    _tile_release();
    return c;
}

#define P24 16777216.0f
#define SHOW(name, value) printf("%s 0x%08lx\n", name, (unsigned long)(uint32_t)(value))

int main(void) {
    static const float one_one[2] = {1, 1}, one_two[2] = {1, 2}, two_one[2] = {2, 1};
    static const float ones2[4] = {1, 0, 1, 0};
    static const float cancel[2] = {1073741824.0f, -1073741824.0f};
    static const float tiny[2] = {0x1p-75f, 0}, small[2] = {0x1p-70f, 0};
    static const unsigned char ones[4] = {1, 1, 1, 1}, ff[4] = {0xFF, 0xFF, 0xFF, 0xFF};
    static const unsigned char m128[4] = {0x80, 0x80, 0x80, 0x80}, p127[4] = {0x7F, 0x7F, 0x7F, 0x7F};
    uint16_t denormal_bf16 = 0x0001; /* 2^-133 */
    float denormal = bits_f32((uint32_t)denormal_bf16 << 16);
    float denormal_a[2], big_b[2] = {1024.0f, 0};
    denormal_a[0] = denormal; denormal_a[1] = 0;

    /* 2^24 + 1 + 1, one addition at a time: each rounds back to 2^24. */
    SHOW("seq_1_1", dot(f32_bits(P24), one_one, one_one, 1));
    /* 2^24 + 1 -> 2^24, + 2 -> 2^24 + 2 */
    SHOW("seq_1_2", dot(f32_bits(P24), one_two, one_one, 1));
    /* 2^24 + 2 -> 2^24 + 2, + 1 = 2^24 + 3 -> 2^24 + 4 (ties to even) */
    SHOW("seq_2_1", dot(f32_bits(P24), two_one, one_one, 1));
    /* across two K pairs as well */
    SHOW("seq_k", dot(f32_bits(P24), ones2, ones2, 2));
    /* 1 + 2^30 -> 2^30, - 2^30 -> 0 (the exact sum is 1) */
    SHOW("cancel", dot(f32_bits(1.0f), cancel, one_one, 1));
    /* 2^-75 * 2^-75 = 2^-150 rounds to 0 as a float32 product, so C keeps
       the smallest denormal 2^-149 (an FMA would give 2^-148; FTZ/DAZ 0). */
    SHOW("no_fma_denormal", dot(0x00000001u, tiny, tiny, 1));
    /* a denormal product is kept: 2^-140 */
    SHOW("denormal_product", dot(0, small, small, 1));
    /* a denormal bf16 input is not treated as zero: 2^-133 * 2^10 = 2^-123 */
    SHOW("denormal_input", dot(0, denormal_a, big_b, 1));

    /* int32 wraparound */
    SHOW("ss_wrap_up", idot(2147483647 - 1, ones, ones, 0));          /* + 4 */
    SHOW("uu_wrap_none", idot(-2147483647 - 1, ff, ff, 3));           /* + 4 * 65025 */
    SHOW("ss_wrap_down", idot(-2147483647 - 1, m128, p127, 0));       /* - 4 * 16256 */
    SHOW("su_wrap_up", idot(2147483647, p127, ff, 1));                /* + 4 * 32385 */
    SHOW("us_wrap_down", idot(-2147483647 - 1, ff, m128, 2));         /* - 4 * 32640 */
    printf("error %d\n", hb_amx_emulation_error());
    return 0;
}
"""

# Hand-computed float32 bit patterns (2^24 = 0x4B800000, spacing 2 there).
ROUNDING_EXPECTED = {
    "seq_1_1": 0x4B800000,           # 2^24 (pair first would give 2^24 + 2 = 0x4B800001)
    "seq_1_2": 0x4B800001,           # 2^24 + 2 (pair first: 2^24 + 3 -> 2^24 + 4)
    "seq_2_1": 0x4B800002,           # 2^24 + 4
    "seq_k": 0x4B800000,             # 2^24
    "cancel": 0x00000000,            # +0.0
    "no_fma_denormal": 0x00000001,   # 2^-149
    "denormal_product": 0x00000200,  # 2^-140 = 2^9 * 2^-149
    "denormal_input": 0x02000000,    # 2^-123: exponent field 4
}
WRAP_EXPECTED = {
    "ss_wrap_up": (2**31 - 2 + 4) % 2**32,
    "uu_wrap_none": (-(2**31) + 4 * 255 * 255) % 2**32,
    "ss_wrap_down": (-(2**31) - 4 * 128 * 127) % 2**32,
    "su_wrap_up": (2**31 - 1 + 4 * 127 * 255) % 2**32,
    "us_wrap_down": (-(2**31) - 4 * 255 * 128) % 2**32,
}


def _interp_bf16(c_bits: int, a: list[float], b: list[float]) -> int:
    """The interpreter's answer for one C element (hardboiled.verify.tiles._bf16_dot)."""
    pairs = len(a) // 2
    c = np.array([[c_bits]], dtype=np.uint32).view(np.float32)
    a_rows = np.array([a], dtype=np.float32).astype(ml_dtypes.bfloat16)
    b_vnni = np.array(b, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(pairs, 1, 2)
    return int(tiles._bf16_dot(c, a_rows, b_vnni, 2 * pairs, 2).view(np.uint32)[0, 0])


def _check_rounding(out: dict[str, str], flags: str) -> None:
    for name, bits in {**ROUNDING_EXPECTED, **WRAP_EXPECTED}.items():
        assert int(out[name], 16) == bits, (CC_DESC, flags, name, out[name], hex(bits))
    assert out["error"] == "0", out


def test_accumulation_order_rounding_and_wraparound(tmp_path: Path) -> None:
    out = run_c(tmp_path, "rounding", ROUNDING_PROGRAM)
    _check_rounding(out, " ".join(EMU_FLAGS))
    # The hand-computed values are the interpreter's.
    p24 = 0x4B800000
    assert _interp_bf16(p24, [1, 1], [1, 1]) == ROUNDING_EXPECTED["seq_1_1"]
    assert _interp_bf16(p24, [1, 2], [1, 1]) == ROUNDING_EXPECTED["seq_1_2"]
    assert _interp_bf16(p24, [2, 1], [1, 1]) == ROUNDING_EXPECTED["seq_2_1"]
    assert _interp_bf16(p24, [1, 0, 1, 0], [1, 0, 1, 0]) == ROUNDING_EXPECTED["seq_k"]
    assert _interp_bf16(0x3F800000, [2.0**30, -(2.0**30)], [1, 1]) == ROUNDING_EXPECTED["cancel"]
    assert _interp_bf16(1, [2.0**-75, 0], [2.0**-75, 0]) == ROUNDING_EXPECTED["no_fma_denormal"]
    assert _interp_bf16(0, [2.0**-70, 0], [2.0**-70, 0]) == ROUNDING_EXPECTED["denormal_product"]
    assert _interp_bf16(0, [2.0**-133, 0], [1024, 0]) == ROUNDING_EXPECTED["denormal_input"]


def _has_fma() -> bool:
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        return re.search(r"^flags\s*:.*\bfma\b", Path("/proc/cpuinfo").read_text(), re.M) is not None
    except OSError:
        return False


@pytest.mark.skipif(not _has_fma(), reason="needs an x86-64 CPU with FMA to run -mfma code")
def test_rounding_survives_fp_contraction(tmp_path: Path) -> None:
    """Even compiled to fuse a*b+c into FMAs, the emulation rounds each product."""
    flags = [f for f in EMU_FLAGS if f != "-ffp-contract=off"] + ["-O3", "-mfma", "-ffp-contract=fast"]
    out = run_c(tmp_path, "rounding_fma", ROUNDING_PROGRAM, flags)
    _check_rounding(out, " ".join(flags))


# --------------------------------------------------------------------------
# loads and stores
# --------------------------------------------------------------------------

STRIDE_PROGRAM = r"""
#define ROWS 3
#define COLSB 12
#define STRIDE 20
static unsigned char src[ROWS * STRIDE], dst[ROWS * STRIDE + 16], dst2[ROWS * 16 + 16];

static int check(const unsigned char *d, int size, int stride, int reversed) {
    int i, r, c;
    for (i = 0; i < size; i++) {
        r = i / stride;
        c = i % stride;
        if (r < ROWS && c < COLSB) {
            int sr = reversed ? ROWS - 1 - r : r;
            if (d[i] != src[sr * STRIDE + c])
                return 0;
        } else if (d[i] != 0xEE) {
            return 0;
        }
    }
    return 1;
}

int main(void) {
    unsigned char cfg[64] = {0};
    int i;
    for (i = 0; i < ROWS * STRIDE; i++)
        src[i] = (unsigned char)(i + 1);
    cfg[0] = 1;
    cfg_tile(cfg, 2, ROWS, COLSB);
    cfg_tile(cfg, 4, ROWS, COLSB);
    _tile_loadconfig(cfg);

    /* A padded matrix: 12 bytes used of every 20. */
    memset(dst, 0xEE, sizeof dst);
    _tile_loadd(2, src, STRIDE);
    _tile_stored(2, dst, STRIDE);
    printf("same_stride %d\n", check(dst, (int)sizeof dst, STRIDE, 0));

    /* Stored with another stride. */
    memset(dst2, 0xEE, sizeof dst2);
    _tile_stored(2, dst2, 16);
    printf("other_stride %d\n", check(dst2, (int)sizeof dst2, 16, 0));

    /* _tile_stream_loadd is the same load; a negative stride walks back. */
    memset(dst, 0xEE, sizeof dst);
    _tile_stream_loadd(4, src + (ROWS - 1) * STRIDE, -STRIDE);
    _tile_stored(4, dst, STRIDE);
    printf("negative_stride %d\n", check(dst, (int)sizeof dst, STRIDE, 1));

    /* _tile_zero clears the register: 3 x 12 zero bytes, the rest untouched. */
    memset(dst, 0xEE, sizeof dst);
    _tile_zero(2);
    _tile_stored(2, dst, STRIDE);
    for (i = 0; i < (int)sizeof dst; i++)
        if (dst[i] != ((i / STRIDE < ROWS && i % STRIDE < COLSB) ? 0 : 0xEE))
            break;
    printf("zero %d\n", i == (int)sizeof dst);
    printf("error %d\n", hb_amx_emulation_error());
    return 0;
}
"""


def test_strided_load_store_roundtrip(tmp_path: Path) -> None:
    out = run_c(tmp_path, "stride", STRIDE_PROGRAM)
    assert out == {"same_stride": "1", "other_stride": "1", "negative_stride": "1", "zero": "1",
                   "error": "0"}, (CC_DESC, out)


# --------------------------------------------------------------------------
# full tiles against the interpreter, bit for bit
# --------------------------------------------------------------------------

def _c_bytes(name: str, data: bytes) -> str:
    body = ",".join(str(b) for b in data)
    return f"static const unsigned char {name}[{len(data)}] = {{{body}}};\n"


def _random_bf16(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Finite bf16 bit patterns: mostly moderate magnitudes (so that sums
    round), some tiny ones (denormal products) and some denormals."""
    sign = rng.integers(0, 2, shape, dtype=np.uint16) << 15
    exponent = rng.integers(120, 135, shape, dtype=np.uint16)
    tiny = rng.random(shape) < 0.1
    exponent[tiny] = rng.integers(0, 70, int(tiny.sum()), dtype=np.uint16)
    mantissa = rng.integers(0, 128, shape, dtype=np.uint16)
    return sign | (exponent << 7) | mantissa


VARIANTS = {"dpbf16ps": None, "dpbssd": (np.int8, np.int8), "dpbsud": (np.int8, np.uint8),
            "dpbusd": (np.uint8, np.int8), "dpbuud": (np.uint8, np.uint8)}


def test_full_tiles_match_interpreter(tmp_path: Path) -> None:
    rng = np.random.default_rng(20240611)
    a_bf16 = _random_bf16(rng, (16, 32))
    b_bf16 = _random_bf16(rng, (16, 32))
    c_f32 = rng.standard_normal((16, 16)).astype(np.float32) * np.float32(64)
    a_i8 = rng.integers(0, 256, (16, 64), dtype=np.uint8)
    b_i8 = rng.integers(0, 256, (16, 64), dtype=np.uint8)
    c_i32 = rng.integers(-(2**31), 2**31, (16, 16), dtype=np.int64).astype(np.int32)
    c_i32[0, :] = np.int32(2**31 - 1000)  # near the ends: wraparound
    c_i32[1, :] = np.int32(-(2**31) + 1000)

    program = (
        _c_bytes("a_bf16", a_bf16.tobytes()) + _c_bytes("b_bf16", b_bf16.tobytes())
        + _c_bytes("c_f32", c_f32.tobytes()) + _c_bytes("a_i8", a_i8.tobytes())
        + _c_bytes("b_i8", b_i8.tobytes()) + _c_bytes("c_i32", c_i32.tobytes())
        + r"""
static unsigned char out[16 * 64];

static void show(const char *name) {
    int i;
    _tile_stored(0, out, 64);
    printf("%s ", name);
    for (i = 0; i < 16 * 64; i++)
        printf("%02x", out[i]);
    printf("\n");
}

int main(void) {
    unsigned char cfg[64] = {0};
    int t;
    cfg[0] = 1;
    for (t = 0; t < 3; t++)
        cfg_tile(cfg, t, 16, 64);
    _tile_loadconfig(cfg);
    _tile_loadd(1, a_bf16, 64); _tile_loadd(2, b_bf16, 64);
    _tile_loadd(0, c_f32, 64); _tile_dpbf16ps(0, 1, 2); show("dpbf16ps");
    _tile_loadd(1, a_i8, 64); _tile_loadd(2, b_i8, 64);
    _tile_loadd(0, c_i32, 64); _tile_dpbssd(0, 1, 2); show("dpbssd");
    _tile_loadd(0, c_i32, 64); _tile_dpbsud(0, 1, 2); show("dpbsud");
    _tile_loadd(0, c_i32, 64); _tile_dpbusd(0, 1, 2); show("dpbusd");
    _tile_loadd(0, c_i32, 64); _tile_dpbuud(0, 1, 2); show("dpbuud");
    printf("error %d\n", hb_amx_emulation_error());
    return 0;
}
""")
    out = run_c(tmp_path, "full_tiles", program)
    assert out["error"] == "0", out

    for name, types in VARIANTS.items():
        if types is None:
            call = ir.Call("tile_matmul", (), ir.Type(ir.TypeCode.FLOAT, 32, 256))
            args = [16, 64, 32, c_f32.reshape(-1), a_bf16.reshape(-1).view(ml_dtypes.bfloat16),
                    b_bf16.reshape(-1).view(ml_dtypes.bfloat16)]
        else:
            call = ir.Call("tile_matmul", (), ir.Type(ir.TypeCode.INT, 32, 256))
            args = [16, 64, 64, c_i32.reshape(-1), a_i8.reshape(-1).view(types[0]),
                    b_i8.reshape(-1).view(types[1])]
        expected = tiles._tile_matmul(call, [np.array([v]) if isinstance(v, int) else v for v in args])
        got = np.frombuffer(bytes.fromhex(out[name]), dtype=expected.dtype)
        mismatch = np.flatnonzero(got.view(np.uint32) != expected.view(np.uint32))
        assert mismatch.size == 0, (
            f"[{CC_DESC}] {name}: {mismatch.size} elements differ from the interpreter, first at "
            f"{mismatch[0]}: {got[mismatch[0]]!r} vs {expected[mismatch[0]]!r}")
    # The data did exercise rounding and wraparound: float32 results that a
    # float64 accumulation would not give, int32 sums beyond the int32 range.
    exact = c_f32.astype(np.float64) + (a_bf16.view(ml_dtypes.bfloat16).astype(np.float64)
                                        @ b_bf16.view(ml_dtypes.bfloat16).astype(np.float64)
                                        .reshape(16, 16, 2).transpose(0, 2, 1).reshape(32, 16))
    got_f32 = np.frombuffer(bytes.fromhex(out["dpbf16ps"]), dtype=np.float32).reshape(16, 16)
    assert np.any(got_f32 != exact.astype(np.float32))


# --------------------------------------------------------------------------
# header plumbing
# --------------------------------------------------------------------------

NATIVE_PROGRAM = r"""
#include "hb_amx.h"

/* Every intrinsic the generated code may use, with literal tile numbers as
   GCC's macros need. */
int kernel(void *c, const void *a, const void *b, long stride) {
    unsigned char cfg[64] = {0};
    if (hb_amx_enable() != 0)
        return -1;
    cfg[0] = 1;
    _tile_loadconfig(cfg);
    _tile_storeconfig(cfg);
    _tile_zero(0);
    _tile_loadd(1, a, stride);
    _tile_stream_loadd(2, b, stride);
    _tile_dpbf16ps(0, 1, 2);
    _tile_dpbssd(3, 1, 2);
    _tile_dpbsud(4, 1, 2);
    _tile_dpbusd(5, 1, 2);
    _tile_dpbuud(6, 1, 2);
    _tile_stored(0, c, stride);
    _tile_stored(7, c, 64);
    _tile_release();
    return 0;
}
"""


def _native_flags_supported() -> str | None:
    """None if the compiler takes the AMX flags, else why not."""
    probe = subprocess.run([*CC, "-mamx-tile", "-mamx-bf16", "-mamx-int8", "-x", "c", "-c", "-",
                            "-o", os.devnull], input="int x;\n", capture_output=True, text=True)
    if probe.returncode != 0:
        return f"{CC_DESC} does not take -mamx-tile -mamx-bf16 -mamx-int8: {probe.stderr.strip()[:200]}"
    return None


def _tile_instructions(obj: Path) -> list[str]:
    """The AMX instructions of an object file, with their operands, in order."""
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(obj)], capture_output=True, text=True,
                             check=True).stdout
    found = []
    for line in listing.splitlines():
        _, colon, instruction = line.partition(":\t")
        if colon and re.match(r"(ld|st)tilecfg|tile|tdp", instruction):
            found.append(" ".join(instruction.split()))
    return found


@pytest.mark.parametrize("dialect", ["att", "intel"])
def test_native_path_is_intels_intrinsics_instruction_for_instruction(tmp_path: Path, dialect: str) -> None:
    """hb_amx.h writes the intrinsics as the instructions (without parsing
    <immintrin.h>); compiled with Intel's definitions instead
    (HB_AMX_INTEL_HEADER), the same program has the same AMX instructions,
    operands and order: the names, argument orders and tile numbers are
    Intel's. In either assembler syntax (-masm)."""
    reason = _native_flags_supported()
    if reason is not None:
        pytest.skip(reason)
    if shutil.which("objdump") is None:
        pytest.skip("no objdump (binutils) to list the instructions")
    flags = [*NATIVE_FLAGS, f"-masm={dialect}"]
    ours = compile_c(tmp_path, "ours", NATIVE_PROGRAM, flags, link=False, prelude="")
    assert ours.returncode == 0, f"[{CC_DESC}] native AMX compile failed:\n{ours.stderr}"
    intel = compile_c(tmp_path, "intel", NATIVE_PROGRAM, [*flags, "-DHB_AMX_INTEL_HEADER"], link=False, prelude="")
    assert intel.returncode == 0, f"[{CC_DESC}] native AMX compile with <immintrin.h> failed:\n{intel.stderr}"
    instructions = _tile_instructions(tmp_path / "ours.o")
    assert len(instructions) == 13, instructions  # every intrinsic of NATIVE_PROGRAM
    assert instructions == _tile_instructions(tmp_path / "intel.o")
    # Code that includes <immintrin.h> first gets Intel's definitions, and no clash.
    first = compile_c(tmp_path, "first", NATIVE_PROGRAM, flags, link=False, prelude="#include <immintrin.h>\n")
    assert first.returncode == 0, f"[{CC_DESC}] <immintrin.h> then hb_amx.h failed:\n{first.stderr}"
    assert _tile_instructions(tmp_path / "first.o") == instructions
    # One that includes it after gets its other extensions (AVX-512 here), and hb_amx.h's AMX.
    vector_code = ('#include <immintrin.h>\n__attribute__((target("avx512f"))) '
                   "__m512 add(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }\n")
    after = compile_c(tmp_path, "after", NATIVE_PROGRAM + vector_code, flags, link=False, prelude="")
    assert after.returncode == 0, f"[{CC_DESC}] hb_amx.h then <immintrin.h> failed:\n{after.stderr}"
    assert _tile_instructions(tmp_path / "after.o") == instructions


def test_native_path_without_the_amx_flags_says_what_to_do(tmp_path: Path) -> None:
    reason = _native_flags_supported()
    if reason is not None:
        pytest.skip(reason)
    # Without the AMX flags the header says what to do.
    flags = [f for f in NATIVE_FLAGS if not f.startswith("-mamx")]
    built = compile_c(tmp_path, "native_noflags", NATIVE_PROGRAM, flags, link=False, prelude="")
    assert built.returncode != 0 and "HB_AMX_EMULATE" in built.stderr, built.stderr


def test_emulation_compiles_after_immintrin(tmp_path: Path) -> None:
    """Code may include <immintrin.h> (before hb_amx.h) for other vector code."""
    if platform.machine() not in ("x86_64", "AMD64", "i386", "i686"):
        pytest.skip("<immintrin.h> is x86-only")
    body = r"""
int main(void) {
    unsigned char cfg[64] = {0};
    static float buf[16];
    cfg[0] = 1;
    cfg[16] = 64; cfg[48] = 1;
    _tile_loadconfig(cfg);
    _tile_zero(0);
    _tile_stored(0, buf, 64);
    _tile_release();
    return hb_amx_emulation_error() != 0 || buf[3] != 0.0f;
}
"""
    prelude = "#include <immintrin.h>\n#include \"hb_amx.h\"\n"
    built = compile_c(tmp_path, "immintrin", body, EMU_FLAGS, prelude=prelude)
    assert built.returncode == 0, f"[{CC_DESC}] immintrin first:\n{built.stderr}"
    ran = subprocess.run([str(tmp_path / "immintrin")], capture_output=True, timeout=30)
    assert ran.returncode == 0, ran
