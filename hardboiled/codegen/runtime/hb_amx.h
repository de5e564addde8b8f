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
#include "hb_amx_emulation.h"

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
