/* ---- hardboiled's AMX runtime (hb_amx.h and hb_amx_emulation.h), inlined ---- */
/*
 * hb_amx.h -- the one AMX header that hardboiled's generated C includes.
 *
 * Native (default): Intel's AMX intrinsics, as the instructions themselves
 * (or from <immintrin.h>, where the code includes it first, defines
 * HB_AMX_INTEL_HEADER, or is compiled by neither gcc nor clang); compile with
 *     -mamx-tile -mamx-bf16 -mamx-int8
 * and call hb_amx_enable() once per process before the first tile
 * instruction (Linux only hands out the AMX tile state on request).
 *
 * Emulated (-DHB_AMX_EMULATE): the same intrinsic names from
 * hb_amx_emulation.h, portable C99 that runs anywhere, bit for bit as
 * hardboiled's reference interpreter.  Compile with -ffp-contract=off (and
 * never -ffast-math); check hb_amx_emulation_error() after running.
 *
 * In both cases:
 *     static int hb_amx_enable(void);   returns 0 on success, -1 on failure;
 *                                       asks the kernel once (per translation
 *                                       unit), thread-safely, and remembers.
 *     hb_amx_barrier();                 a compiler memory barrier: no store
 *                                       of C code moves past it.
 *     hb_vnni_pack16 / hb_vnni_pack8    repack row pairs (bf16) or quads
 *                                       (int8) into VNNI order.
 */
#ifndef HB_AMX_H
#define HB_AMX_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define HB_AMX_UNUSED __attribute__((unused))
#else
#define HB_AMX_UNUSED
#endif

/* The _tile_loadd of gcc's and clang's <immintrin.h> declares no memory
   input: a store into a buffer (a VNNI repack, a spilled tile) may be
   moved after the tile load that reads it. The generated code puts this
   barrier before every tile load (this file's own _tile_loadd clobbers
   memory; the barrier is for a build with Intel's). */
#if defined(__GNUC__)
#define hb_amx_barrier() __asm__ __volatile__("" ::: "memory")
#else
#define hb_amx_barrier() ((void)0)
#endif

/* VNNI repacks (the copy loops of codegen/copies.py): `rows` rows of `cols`
   adjacent elements at src, `row_stride` elements apart, into dst with each
   4 / element-size consecutive rows interleaved column by column:
       dst[((r / g) * cols + c) * g + r % g] = src[r * row_stride + c]
   SSE2 (every x86-64 CPU) unpacks 8 bf16 or 16 int8 columns per step;
   the scalar loop takes the rest, and every column elsewhere. */
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static HB_AMX_UNUSED void hb_vnni_pack16(void *dst, const void *src, int rows, int cols, ptrdiff_t row_stride) {
    for (int r = 0; r + 1 < rows; r += 2) {
        const uint16_t *a = (const uint16_t *)src + r * row_stride, *b = a + row_stride;
        uint16_t *out = (uint16_t *)dst + (ptrdiff_t)r * cols;
        int c = 0;
#if defined(__SSE2__)
        for (; c + 8 <= cols; c += 8) {
            __m128i x = _mm_loadu_si128((const __m128i *)(a + c)), y = _mm_loadu_si128((const __m128i *)(b + c));
            _mm_storeu_si128((__m128i *)(out + 2 * c), _mm_unpacklo_epi16(x, y));
            _mm_storeu_si128((__m128i *)(out + 2 * c + 8), _mm_unpackhi_epi16(x, y));
        }
#endif
        for (; c < cols; c++) {
            out[2 * c] = a[c];
            out[2 * c + 1] = b[c];
        }
    }
}

static HB_AMX_UNUSED void hb_vnni_pack8(void *dst, const void *src, int rows, int cols, ptrdiff_t row_stride) {
    for (int r = 0; r + 3 < rows; r += 4) {
        const uint8_t *a = (const uint8_t *)src + r * row_stride, *b = a + row_stride;
        const uint8_t *c2 = b + row_stride, *d = c2 + row_stride;
        uint8_t *out = (uint8_t *)dst + (ptrdiff_t)r * cols;
        int c = 0;
#if defined(__SSE2__)
        for (; c + 16 <= cols; c += 16) {
            __m128i x0 = _mm_loadu_si128((const __m128i *)(a + c)), x1 = _mm_loadu_si128((const __m128i *)(b + c));
            __m128i x2 = _mm_loadu_si128((const __m128i *)(c2 + c)), x3 = _mm_loadu_si128((const __m128i *)(d + c));
            __m128i ab_lo = _mm_unpacklo_epi8(x0, x1), ab_hi = _mm_unpackhi_epi8(x0, x1);
            __m128i cd_lo = _mm_unpacklo_epi8(x2, x3), cd_hi = _mm_unpackhi_epi8(x2, x3);
            _mm_storeu_si128((__m128i *)(out + 4 * c), _mm_unpacklo_epi16(ab_lo, cd_lo));
            _mm_storeu_si128((__m128i *)(out + 4 * c + 16), _mm_unpackhi_epi16(ab_lo, cd_lo));
            _mm_storeu_si128((__m128i *)(out + 4 * c + 32), _mm_unpacklo_epi16(ab_hi, cd_hi));
            _mm_storeu_si128((__m128i *)(out + 4 * c + 48), _mm_unpackhi_epi16(ab_hi, cd_hi));
        }
#endif
        for (; c < cols; c++) {
            out[4 * c] = a[c];
            out[4 * c + 1] = b[c];
            out[4 * c + 2] = c2[c];
            out[4 * c + 3] = d[c];
        }
    }
}

#ifdef HB_AMX_EMULATE

/* The emulation's macros shadow Intel's AMX names: code that also wants
   <immintrin.h> (for other vector code) must include it before this file. */
/*
 * hb_amx_emulation.h -- a portable emulation of the Intel AMX tile intrinsics.
 *
 * Plain C99 + <stdint.h>, header-only, no intrinsics and no inline assembly.
 * It provides the names and argument orders of GCC/Clang's
 * <amxtileintrin.h>, <amxbf16intrin.h> and <amxint8intrin.h>:
 *
 *   _tile_loadconfig(const void *cfg)     _tile_storeconfig(void *cfg)
 *   _tile_release()                       _tile_zero(dst)
 *   _tile_loadd(dst, const void *base, stride)
 *   _tile_stream_loadd(dst, const void *base, stride)
 *   _tile_stored(src, void *base, stride)
 *   _tile_dpbf16ps(dst, a, b)
 *   _tile_dpbssd(dst, a, b)  _tile_dpbsud(dst, a, b)
 *   _tile_dpbusd(dst, a, b)  _tile_dpbuud(dst, a, b)
 *
 * Tile operands are register numbers 0..7 (any int expression here; the
 * native macros need integer literals), strides are in bytes.  Generated
 * code includes "hb_amx.h", which includes this file when HB_AMX_EMULATE is
 * defined.  If <immintrin.h> is also wanted, include it first: the names
 * below are macros that shadow Intel's (its function definitions would not
 * compile after them).
 *
 * Semantics (they follow hardboiled/interp.py bit for bit):
 *
 * - State: 8 tile registers of 16 rows x 64 bytes plus the current 64-byte
 *   palette-1 configuration, thread-local (per translation unit, as every
 *   function here is static).  Before a valid _tile_loadconfig, after
 *   _tile_release and after a configuration error the tiles are in the
 *   INIT state: configuration all zero, every tile has rows == 0.
 * - Configuration (palette 1): byte 0 palette_id, byte 1 start_row, bytes
 *   2..15 reserved (zero), bytes 16..47 colsb[16] as little-endian uint16,
 *   bytes 48..63 rows[16] as uint8; only tiles 0..7 exist, so colsb[8..15]
 *   and rows[8..15] must be zero.  A palette_id other than 1 (palette 0
 *   included: hardware treats it as _tile_release, but generated code never
 *   does that, so here it is a bug), non-zero reserved bytes, rows > 16,
 *   colsb > 64 or a non-zero start_row (only used by hardware to resume an
 *   interrupted load) is an error.  A successful load zeroes all tile data.
 * - Errors never abort: the first one's message is kept, a counter is
 *   incremented, and the tile state goes back to INIT.  Read them with
 *   hb_amx_emulation_error() (the number of errors so far, 0 if none) and
 *   hb_amx_emulation_message(); hb_amx_emulation_clear_error() resets them.
 *   The error state is process-wide.  Where the hardware raises #UD the
 *   emulation records an error and the instruction does nothing: any tile
 *   instruction while not configured, on a register outside 0..7 or on a
 *   register whose rows or colsb is 0 (so every op after a configuration
 *   error does nothing), and dot products whose operands are not three
 *   distinct registers or whose shapes disagree (rows(dst) != rows(a),
 *   colsb(dst) != colsb(b), colsb(a)/4 != rows(b)).
 * - _tile_loadd/_tile_stream_loadd: row r (r < rows) is the colsb bytes at
 *   base + r*stride; every other byte of the register becomes 0.
 *   _tile_stored writes exactly rows x colsb bytes, row r at base + r*stride,
 *   and touches nothing else.  _tile_zero zeroes the whole register.
 * - _tile_dpbf16ps: for m < rows(dst), n < colsb(dst)/4, k < colsb(a)/4 in
 *   that order, C.fp32[m][n] += fp32(A[m].bf16[2k]) * fp32(B[k].bf16[2n]);
 *   then C.fp32[m][n] += fp32(A[m].bf16[2k+1]) * fp32(B[k].bf16[2n+1]);
 *   every product and every addition rounded to float32 on its own (round to
 *   nearest even, the default floating-point environment; denormals are kept,
 *   as numpy does -- real AMX flushes them, see below).  bf16 -> fp32 is a
 *   16-bit shift.  The product is kept in a volatile float so that no
 *   compiler setting fuses it with the addition into an FMA; generated code
 *   is nevertheless compiled with -ffp-contract=off, and must not be
 *   compiled with -ffast-math (refused below), which may turn on
 *   flush-to-zero for the whole process.
 * - _tile_dpb[su][su]d (first letter: A's bytes signed/unsigned, second:
 *   B's): C.int32[m][n] += sum over i < 4 of A[m].byte[4k+i] *
 *   B[k].byte[4n+i] for k < colsb(a)/4, wrapping modulo 2^32.
 * - After a dot product, bytes colsb(dst)..63 of each of dst's rows and all
 *   rows from rows(dst) on are zero, as on hardware.
 *
 * Known differences from real AMX hardware, on purpose (this file follows the
 * reference interpreter): TDPBF16PS on hardware treats denormal inputs as
 * zero and flushes denormal results to zero; Intel's newer SDM pseudo-code
 * also sums the even and odd products separately before adding them to C,
 * where the Intrinsics Guide and the interpreter add them to C one after the
 * other.  Results can differ in the last bit from real AMX in those cases.
 */
#ifndef HB_AMX_EMULATION_H
#define HB_AMX_EMULATION_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__FAST_MATH__)
#error "hb_amx_emulation.h: do not compile with -ffast-math (it breaks float32 rounding and may flush denormals)"
#endif

#ifndef HB_AMX_EMU_TLS
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define HB_AMX_EMU_TLS _Thread_local
#elif defined(__GNUC__)
#define HB_AMX_EMU_TLS __thread
#elif defined(_MSC_VER)
#define HB_AMX_EMU_TLS __declspec(thread)
#else
#define HB_AMX_EMU_TLS /* no thread-local storage: one state per process */
#endif
#endif

#if defined(__GNUC__)
#define HB_AMX_EMU_UNUSED __attribute__((unused))
#else
#define HB_AMX_EMU_UNUSED
#endif
#define HB_AMX_EMU_FN static HB_AMX_EMU_UNUSED

#define HB_AMX_EMU_TILES 8
#define HB_AMX_EMU_ROWS 16
#define HB_AMX_EMU_COLSB 64

typedef struct hb_amx_emu_state {
    int configured;                       /* 0: INIT state */
    unsigned char config[64];             /* as last loaded (start_row 0) */
    int rows[HB_AMX_EMU_TILES];
    int colsb[HB_AMX_EMU_TILES];
    unsigned char tmm[HB_AMX_EMU_TILES][HB_AMX_EMU_ROWS][HB_AMX_EMU_COLSB];
} hb_amx_emu_state;

static HB_AMX_EMU_TLS hb_amx_emu_state hb_amx_emu_st;

/* Process-wide error record: a count and the first message. */
static int hb_amx_emu_errors;
static char hb_amx_emu_msg[256];

HB_AMX_EMU_FN void hb_amx_emu_reset_state(void) {
    memset(&hb_amx_emu_st, 0, sizeof hb_amx_emu_st);
}

HB_AMX_EMU_FN void hb_amx_emu_fail(const char *fmt, ...) {
    int first;
    va_list ap;
#if defined(__GNUC__)
    first = __atomic_fetch_add(&hb_amx_emu_errors, 1, __ATOMIC_SEQ_CST) == 0;
#else
    first = hb_amx_emu_errors++ == 0;
#endif
    if (first) {
        va_start(ap, fmt);
        vsnprintf(hb_amx_emu_msg, sizeof hb_amx_emu_msg, fmt, ap);
        va_end(ap);
    }
    hb_amx_emu_reset_state();
}

/* The number of errors recorded so far (0: none). */
HB_AMX_EMU_FN int hb_amx_emulation_error(void) {
#if defined(__GNUC__)
    return __atomic_load_n(&hb_amx_emu_errors, __ATOMIC_SEQ_CST);
#else
    return hb_amx_emu_errors;
#endif
}

/* The first error's message, or "" if there was none. */
HB_AMX_EMU_FN const char *hb_amx_emulation_message(void) {
    return hb_amx_emulation_error() ? hb_amx_emu_msg : "";
}

HB_AMX_EMU_FN void hb_amx_emulation_clear_error(void) {
    hb_amx_emu_errors = 0;
    hb_amx_emu_msg[0] = '\0';
}

/* ------------------------------------------------------------------ config */

HB_AMX_EMU_FN void hb_amx_emu_loadconfig(const void *cfg) {
    const unsigned char *p = (const unsigned char *)cfg;
    int i;
    if (p[0] != 1) {
        hb_amx_emu_fail("_tile_loadconfig: palette_id %d (only palette 1 is supported)", (int)p[0]);
        return;
    }
    if (p[1] != 0) {
        hb_amx_emu_fail("_tile_loadconfig: start_row %d (must be 0)", (int)p[1]);
        return;
    }
    for (i = 2; i < 16; i++) {
        if (p[i] != 0) {
            hb_amx_emu_fail("_tile_loadconfig: reserved byte %d is %d (must be 0)", i, (int)p[i]);
            return;
        }
    }
    for (i = 0; i < 16; i++) {
        int colsb = (int)p[16 + 2 * i] | ((int)p[17 + 2 * i] << 8);
        int rows = (int)p[48 + i];
        if (i >= HB_AMX_EMU_TILES && (colsb != 0 || rows != 0)) {
            hb_amx_emu_fail("_tile_loadconfig: tile %d does not exist in palette 1 (rows %d, colsb %d)",
                            i, rows, colsb);
            return;
        }
        if (rows > HB_AMX_EMU_ROWS) {
            hb_amx_emu_fail("_tile_loadconfig: tile %d has %d rows (at most 16)", i, rows);
            return;
        }
        if (colsb > HB_AMX_EMU_COLSB) {
            hb_amx_emu_fail("_tile_loadconfig: tile %d has colsb %d (at most 64)", i, colsb);
            return;
        }
    }
    hb_amx_emu_reset_state();
    memcpy(hb_amx_emu_st.config, p, 64);
    for (i = 0; i < HB_AMX_EMU_TILES; i++) {
        hb_amx_emu_st.colsb[i] = (int)p[16 + 2 * i] | ((int)p[17 + 2 * i] << 8);
        hb_amx_emu_st.rows[i] = (int)p[48 + i];
    }
    hb_amx_emu_st.configured = 1;
}

HB_AMX_EMU_FN void hb_amx_emu_storeconfig(void *cfg) {
    /* The INIT state stores 64 zero bytes, as on hardware. */
    memcpy(cfg, hb_amx_emu_st.config, 64);
}

HB_AMX_EMU_FN void hb_amx_emu_release(void) {
    hb_amx_emu_reset_state();
}

/* 1 if tile t can be used by instruction op; otherwise records the error. */
HB_AMX_EMU_FN int hb_amx_emu_usable(int t, const char *op) {
    if (!hb_amx_emu_st.configured) {
        hb_amx_emu_fail("%s: tiles are not configured (no valid _tile_loadconfig)", op);
        return 0;
    }
    if (t < 0 || t >= HB_AMX_EMU_TILES) {
        hb_amx_emu_fail("%s: no tile register %d", op, t);
        return 0;
    }
    if (hb_amx_emu_st.rows[t] == 0 || hb_amx_emu_st.colsb[t] == 0) {
        hb_amx_emu_fail("%s: tile %d is not configured (rows %d, colsb %d)", op, t,
                        hb_amx_emu_st.rows[t], hb_amx_emu_st.colsb[t]);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------ data movement */

HB_AMX_EMU_FN void hb_amx_emu_zero(int t) {
    if (!hb_amx_emu_usable(t, "_tile_zero"))
        return;
    memset(hb_amx_emu_st.tmm[t], 0, sizeof hb_amx_emu_st.tmm[t]);
}

HB_AMX_EMU_FN void hb_amx_emu_load(int t, const void *base, ptrdiff_t stride, const char *op) {
    const unsigned char *b = (const unsigned char *)base;
    int r, rows, colsb;
    if (!hb_amx_emu_usable(t, op))
        return;
    rows = hb_amx_emu_st.rows[t];
    colsb = hb_amx_emu_st.colsb[t];
    memset(hb_amx_emu_st.tmm[t], 0, sizeof hb_amx_emu_st.tmm[t]);
    for (r = 0; r < rows; r++)
        memcpy(hb_amx_emu_st.tmm[t][r], b + (ptrdiff_t)r * stride, (size_t)colsb);
}

HB_AMX_EMU_FN void hb_amx_emu_store(int t, void *base, ptrdiff_t stride) {
    unsigned char *b = (unsigned char *)base;
    int r, rows, colsb;
    if (!hb_amx_emu_usable(t, "_tile_stored"))
        return;
    rows = hb_amx_emu_st.rows[t];
    colsb = hb_amx_emu_st.colsb[t];
    for (r = 0; r < rows; r++)
        memcpy(b + (ptrdiff_t)r * stride, hb_amx_emu_st.tmm[t][r], (size_t)colsb);
}

/* ------------------------------------------------------------ dot products */

/* Checks the operands of a dot product as the hardware does (#UD). */
HB_AMX_EMU_FN int hb_amx_emu_dp_ok(int dst, int a, int b, const char *op) {
    if (!hb_amx_emu_usable(dst, op) || !hb_amx_emu_usable(a, op) || !hb_amx_emu_usable(b, op))
        return 0;
    if (dst == a || dst == b || a == b) {
        hb_amx_emu_fail("%s: tiles %d, %d, %d are not distinct", op, dst, a, b);
        return 0;
    }
    if (hb_amx_emu_st.rows[dst] != hb_amx_emu_st.rows[a]) {
        hb_amx_emu_fail("%s: rows(dst tile %d) = %d but rows(a tile %d) = %d", op, dst,
                        hb_amx_emu_st.rows[dst], a, hb_amx_emu_st.rows[a]);
        return 0;
    }
    if (hb_amx_emu_st.colsb[dst] != hb_amx_emu_st.colsb[b]) {
        hb_amx_emu_fail("%s: colsb(dst tile %d) = %d but colsb(b tile %d) = %d", op, dst,
                        hb_amx_emu_st.colsb[dst], b, hb_amx_emu_st.colsb[b]);
        return 0;
    }
    if (hb_amx_emu_st.colsb[a] / 4 != hb_amx_emu_st.rows[b]) {
        hb_amx_emu_fail("%s: colsb(a tile %d)/4 = %d but rows(b tile %d) = %d", op, a,
                        hb_amx_emu_st.colsb[a] / 4, b, hb_amx_emu_st.rows[b]);
        return 0;
    }
    return 1;
}

/* Zeroes what a dot product leaves behind: bytes colsb.. of each row, rows rows.. */
HB_AMX_EMU_FN void hb_amx_emu_dp_finish(int dst) {
    int r, rows = hb_amx_emu_st.rows[dst], colsb = hb_amx_emu_st.colsb[dst];
    for (r = 0; r < HB_AMX_EMU_ROWS; r++) {
        if (r < rows)
            memset(&hb_amx_emu_st.tmm[dst][r][colsb], 0, (size_t)(HB_AMX_EMU_COLSB - colsb));
        else
            memset(hb_amx_emu_st.tmm[dst][r], 0, HB_AMX_EMU_COLSB);
    }
}

HB_AMX_EMU_FN float hb_amx_emu_bf16(const unsigned char *p) {
    uint16_t h;
    uint32_t bits;
    float f;
    memcpy(&h, p, 2);
    bits = (uint32_t)h << 16;
    memcpy(&f, &bits, 4);
    return f;
}

HB_AMX_EMU_FN void hb_amx_emu_dpbf16ps(int dst, int a, int b) {
    int m, n, k, rows, n_count, k_count;
    if (!hb_amx_emu_dp_ok(dst, a, b, "_tile_dpbf16ps"))
        return;
    rows = hb_amx_emu_st.rows[dst];
    n_count = hb_amx_emu_st.colsb[dst] / 4;
    k_count = hb_amx_emu_st.colsb[a] / 4;
    for (m = 0; m < rows; m++) {
        const unsigned char *arow = hb_amx_emu_st.tmm[a][m];
        unsigned char *crow = hb_amx_emu_st.tmm[dst][m];
        for (n = 0; n < n_count; n++) {
            float c;
            memcpy(&c, crow + 4 * n, 4);
            for (k = 0; k < k_count; k++) {
                const unsigned char *brow = hb_amx_emu_st.tmm[b][k];
                /* volatile: each product is rounded to float32 and never
                   fused with the addition into an FMA. */
                volatile float p0 = hb_amx_emu_bf16(arow + 4 * k) * hb_amx_emu_bf16(brow + 4 * n);
                c = c + p0;
                {
                    volatile float p1 = hb_amx_emu_bf16(arow + 4 * k + 2) * hb_amx_emu_bf16(brow + 4 * n + 2);
                    c = c + p1;
                }
            }
            memcpy(crow + 4 * n, &c, 4);
        }
    }
    hb_amx_emu_dp_finish(dst);
}

HB_AMX_EMU_FN int32_t hb_amx_emu_byte(unsigned char x, int is_signed) {
    return is_signed ? (int32_t)x - (int32_t)((x & 0x80u) << 1) : (int32_t)x;
}

HB_AMX_EMU_FN void hb_amx_emu_dpb(int dst, int a, int b, int a_signed, int b_signed, const char *op) {
    int m, n, k, i, rows, n_count, k_count;
    if (!hb_amx_emu_dp_ok(dst, a, b, op))
        return;
    rows = hb_amx_emu_st.rows[dst];
    n_count = hb_amx_emu_st.colsb[dst] / 4;
    k_count = hb_amx_emu_st.colsb[a] / 4;
    for (m = 0; m < rows; m++) {
        const unsigned char *arow = hb_amx_emu_st.tmm[a][m];
        unsigned char *crow = hb_amx_emu_st.tmm[dst][m];
        for (n = 0; n < n_count; n++) {
            uint32_t c; /* unsigned: additions wrap modulo 2^32 */
            memcpy(&c, crow + 4 * n, 4);
            for (k = 0; k < k_count; k++) {
                const unsigned char *brow = hb_amx_emu_st.tmm[b][k];
                int32_t sum = 0; /* |sum| <= 4 * 255 * 255: no overflow */
                for (i = 0; i < 4; i++)
                    sum += hb_amx_emu_byte(arow[4 * k + i], a_signed) * hb_amx_emu_byte(brow[4 * n + i], b_signed);
                c += (uint32_t)sum;
            }
            memcpy(crow + 4 * n, &c, 4);
        }
    }
    hb_amx_emu_dp_finish(dst);
}

/* ------------------------------------------------------- the intrinsic names */

#undef _tile_loadconfig
#undef _tile_storeconfig
#undef _tile_release
#undef _tile_zero
#undef _tile_loadd
#undef _tile_stream_loadd
#undef _tile_stored
#undef _tile_dpbf16ps
#undef _tile_dpbssd
#undef _tile_dpbsud
#undef _tile_dpbusd
#undef _tile_dpbuud

#define _tile_loadconfig(config) hb_amx_emu_loadconfig((const void *)(config))
#define _tile_storeconfig(config) hb_amx_emu_storeconfig((void *)(config))
#define _tile_release() hb_amx_emu_release()
#define _tile_zero(dst) hb_amx_emu_zero((int)(dst))
#define _tile_loadd(dst, base, stride) \
    hb_amx_emu_load((int)(dst), (const void *)(base), (ptrdiff_t)(stride), "_tile_loadd")
#define _tile_stream_loadd(dst, base, stride) \
    hb_amx_emu_load((int)(dst), (const void *)(base), (ptrdiff_t)(stride), "_tile_stream_loadd")
#define _tile_stored(src, base, stride) hb_amx_emu_store((int)(src), (void *)(base), (ptrdiff_t)(stride))
#define _tile_dpbf16ps(dst, a, b) hb_amx_emu_dpbf16ps((int)(dst), (int)(a), (int)(b))
#define _tile_dpbssd(dst, a, b) hb_amx_emu_dpb((int)(dst), (int)(a), (int)(b), 1, 1, "_tile_dpbssd")
#define _tile_dpbsud(dst, a, b) hb_amx_emu_dpb((int)(dst), (int)(a), (int)(b), 1, 0, "_tile_dpbsud")
#define _tile_dpbusd(dst, a, b) hb_amx_emu_dpb((int)(dst), (int)(a), (int)(b), 0, 1, "_tile_dpbusd")
#define _tile_dpbuud(dst, a, b) hb_amx_emu_dpb((int)(dst), (int)(a), (int)(b), 0, 0, "_tile_dpbuud")

#endif /* HB_AMX_EMULATION_H */


/* Nothing to request: the emulation needs no kernel permission. */
static HB_AMX_UNUSED int hb_amx_enable(void) {
    return 0;
}

#else /* native AMX */

#if defined(__GNUC__) && !defined(__AMX_TILE__) && !defined(__AMXTILE__) /* gcc, clang */
#error "hb_amx.h: compile with -mamx-tile -mamx-bf16 -mamx-int8, or define HB_AMX_EMULATE"
#endif

#if defined(__GNUC__) && !defined(HB_AMX_INTEL_HEADER) && !defined(_IMMINTRIN_H_INCLUDED) && !defined(__IMMINTRIN_H)
/* Intel's AMX intrinsics, under Intel's names and argument orders, as the
   instructions themselves (GNU inline assembly, in both of its syntaxes):
   <immintrin.h> declares every x86 extension there is, and parsing it took
   0.22 s of the 0.32 s that gcc 12 spent on a whole generated kernel. The
   tile numbers are literals, as in Intel's macros. The tile loads and
   stores clobber memory, and the configuration is an exact memory operand,
   so that no C load or store moves across them. Code that includes
   <immintrin.h> before this file (or defines HB_AMX_INTEL_HEADER) gets
   Intel's own definitions instead, as does a compiler other than gcc and
   clang. One that includes it after this file gets the rest of it: the
   include guards of its AMX parts (gcc's and clang's) are defined here, so
   that they are skipped. */
/* A tile register in AT&T syntax, and in Intel's (no prefix). */
#define HB_AMX_TMM(n) "%%tmm" #n
#define HB_AMX_INTEL_TMM(n) "tmm" #n
#define HB_AMX_INLINE static __inline__ __attribute__((__always_inline__, __unused__))
/* The 64 bytes of a tile configuration, the memory operand of ldtilecfg and
   sttilecfg; may_alias, as characters are: the code fills them through
   whatever type it likes. */
typedef struct __attribute__((__may_alias__)) {
    unsigned char bytes[64];
} hb_amx_config_bytes;
HB_AMX_INLINE void _tile_loadconfig(const void *config) {
    __asm__ __volatile__("ldtilecfg %0" ::"m"(*(const hb_amx_config_bytes *)config));
}
HB_AMX_INLINE void _tile_storeconfig(void *config) {
    __asm__ __volatile__("sttilecfg %0" : "=m"(*(hb_amx_config_bytes *)config));
}
HB_AMX_INLINE void _tile_release(void) {
    __asm__ __volatile__("tilerelease" ::);
}
#define _tile_zero(dst) __asm__ __volatile__("{tilezero " HB_AMX_TMM(dst) "|tilezero " HB_AMX_INTEL_TMM(dst) "}" ::)
#define HB_AMX_LOAD(instruction, dst, base, stride) \
    __asm__ __volatile__("{" instruction " (%0,%1,1), " HB_AMX_TMM(dst) "|" instruction " " HB_AMX_INTEL_TMM(dst) \
                         ", [%0+%1*1]}" ::"r"((const void *)(base)), "r"((ptrdiff_t)(stride)) : "memory")
#define _tile_loadd(dst, base, stride) HB_AMX_LOAD("tileloadd", dst, base, stride)
#define _tile_stream_loadd(dst, base, stride) HB_AMX_LOAD("tileloaddt1", dst, base, stride)
#define _tile_stored(src, base, stride) \
    __asm__ __volatile__("{tilestored " HB_AMX_TMM(src) ", (%0,%1,1)|tilestored [%0+%1*1], " HB_AMX_INTEL_TMM(src) \
                         "}" ::"r"((void *)(base)), "r"((ptrdiff_t)(stride)) : "memory")
/* dst += a . b: AT&T names the operands in the reverse of Intel's order. */
#define HB_AMX_DOT(instruction, dst, a, b) \
    __asm__ __volatile__("{" instruction " " HB_AMX_TMM(b) ", " HB_AMX_TMM(a) ", " HB_AMX_TMM(dst) "|" instruction \
                         " " HB_AMX_INTEL_TMM(dst) ", " HB_AMX_INTEL_TMM(a) ", " HB_AMX_INTEL_TMM(b) "}" ::)
#define _tile_dpbf16ps(dst, a, b) HB_AMX_DOT("tdpbf16ps", dst, a, b)
#define _tile_dpbssd(dst, a, b) HB_AMX_DOT("tdpbssd", dst, a, b)
#define _tile_dpbsud(dst, a, b) HB_AMX_DOT("tdpbsud", dst, a, b)
#define _tile_dpbusd(dst, a, b) HB_AMX_DOT("tdpbusd", dst, a, b)
#define _tile_dpbuud(dst, a, b) HB_AMX_DOT("tdpbuud", dst, a, b)
/* A later <immintrin.h> skips its AMX headers, which define these names too. */
#define _AMXTILEINTRIN_H_INCLUDED
#define _AMXINT8INTRIN_H_INCLUDED
#define _AMXBF16INTRIN_H_INCLUDED
#define __AMXINTRIN_H
#else
#include <immintrin.h>
#endif

#if defined(__linux__)
#include <unistd.h>
#include <sys/syscall.h>
/* A strict -std=c99 hides syscall() in glibc's and musl's <unistd.h>. */
#if !defined(__USE_MISC) && !defined(__cplusplus)
extern long syscall(long number, ...);
#endif
#endif

#define HB_ARCH_REQ_XCOMP_PERM 0x1023
#define HB_XFEATURE_XTILEDATA 18

/* Asks Linux for permission to use the AMX tile data (arch_prctl
   ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA); other systems need no request. */
static HB_AMX_UNUSED int hb_amx_enable(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    /* 0: not asked yet, 1: granted, -1: refused. Two threads may both ask
       the first time (the request is idempotent); after that, no system
       call: at small sizes it cost as much as the kernel. */
    static int state = 0;
    int known = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (known == 0) {
        known = syscall(SYS_arch_prctl, HB_ARCH_REQ_XCOMP_PERM, HB_XFEATURE_XTILEDATA) == 0 ? 1 : -1;
        __atomic_store_n(&state, known, __ATOMIC_RELEASE);
    }
    return known == 1 ? 0 : -1;
#elif defined(__linux__)
    return -1; /* no arch_prctl on this architecture: no AMX either */
#else
    return 0;
#endif
}

#endif /* HB_AMX_EMULATE */

#endif /* HB_AMX_H */
/* ---- end of the AMX runtime ---- */
