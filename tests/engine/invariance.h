/*
 * The state block of the invariance test, shared by test-invariance.c and
 * invariance-asm.S: everything a probe must leave as it found it, at fixed
 * offsets the assembly can use.
 */
#ifndef DP_TESTS_INVARIANCE_H
#define DP_TESTS_INVARIANCE_H

#define INV_GPR 0		/* rax..r15, hardware order; the rsp slot: rsp at the site */
#define INV_RFLAGS 128
#define INV_MXCSR 136
#define INV_FCW 140
#define INV_FSW 142		/* x87 status word: stored, not loaded */
#define INV_X87 144		/* three 80-bit values in 16-byte slots: st0, st1, st2 */
#define INV_K 192		/* k0..k7 */
#define INV_RZ 256		/* the 128-byte red zone below rsp */
#define INV_VEC 384		/* 32 slots of 64 bytes: zmm0-31, ymm0-15 or xmm0-15 */
#define INV_SIZE (INV_VEC + 32 * 64)

/* dp_inv_run's kind argument. */
#define INV_KIND_SSE 0
#define INV_KIND_AVX 1
#define INV_KIND_AVX512 2

#endif
