/*
 * hb_amx.h -- the one AMX header that hardboiled's generated C includes.
 *
 * Native (default): the Intel intrinsics from <immintrin.h>; compile with
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

/* gcc's and clang's _tile_loadd is inline assembly without a memory
   clobber: a store into a buffer (a VNNI repack, a spilled tile) may be
   moved after the tile load that reads it. The generated code puts this
   barrier before every tile load. */
#if defined(__GNUC__)
#define hb_amx_barrier() __asm__ __volatile__("" ::: "memory")
#else
#define hb_amx_barrier() ((void)0)
#endif

#ifdef HB_AMX_EMULATE

/* The emulation's macros shadow Intel's AMX names: code that also wants
   <immintrin.h> (for other vector code) must include it before this file. */
#include "hb_amx_emulation.h"

/* Nothing to request: the emulation needs no kernel permission. */
static HB_AMX_UNUSED int hb_amx_enable(void) {
    return 0;
}

#else /* native AMX */

#include <immintrin.h>

#if defined(__GNUC__) && !defined(__AMX_TILE__) && !defined(__AMXTILE__) /* gcc, clang */
#error "hb_amx.h: compile with -mamx-tile -mamx-bf16 -mamx-int8, or define HB_AMX_EMULATE"
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
