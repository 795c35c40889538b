/*
 * What the tests' probe handlers do to the machine state, on purpose: every
 * register a trampoline claims to preserve is given another value, so that a
 * save or a restore that is missing shows in the probed code.
 *
 * The C library's memset and memcpy (AVX2 or AVX-512 here, with mask
 * registers), explicit writes to every vector and mask register the CPU has,
 * SSE and x87 arithmetic, and other MXCSR and x87 control word values: the
 * trampoline restores those two, so the handler need not.
 */
#ifndef DP_TESTS_CLOBBER_H
#define DP_TESTS_CLOBBER_H

#include <stdint.h>
#include <string.h>

#include "patch/tramp.h"

static char clobber_buf[2][40000];

__attribute__((target("avx2"))) static inline void clobber_ymm(void)
{
	__asm__ volatile("vpcmpeqd %%ymm0, %%ymm0, %%ymm0\n\t"
			 "vmovdqa %%ymm0, %%ymm1\n\tvmovdqa %%ymm0, %%ymm2\n\t"
			 "vmovdqa %%ymm0, %%ymm3\n\tvmovdqa %%ymm0, %%ymm4\n\t"
			 "vmovdqa %%ymm0, %%ymm5\n\tvmovdqa %%ymm0, %%ymm6\n\t"
			 "vmovdqa %%ymm0, %%ymm7\n\tvmovdqa %%ymm0, %%ymm8\n\t"
			 "vmovdqa %%ymm0, %%ymm9\n\tvmovdqa %%ymm0, %%ymm10\n\t"
			 "vmovdqa %%ymm0, %%ymm11\n\tvmovdqa %%ymm0, %%ymm12\n\t"
			 "vmovdqa %%ymm0, %%ymm13\n\tvmovdqa %%ymm0, %%ymm14\n\t"
			 "vmovdqa %%ymm0, %%ymm15"
			 ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
			 "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

__attribute__((target("avx512f"))) static inline void clobber_zmm(void)
{
	__asm__ volatile("vpternlogd $0xff, %%zmm0, %%zmm0, %%zmm0\n\t"
			 ".irp r, 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n\t"
			 "vmovdqa64 %%zmm0, %%zmm\\r\n\t"
			 ".endr\n\t"
			 "kxnorw %%k0, %%k0, %%k1\n\t"
			 ".irp r, 0,2,3,4,5,6,7\n\t"
			 "kmovw %%k1, %%k\\r\n\t"
			 ".endr"
			 ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
			 "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
			 "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",
			 "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31",
			 "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7");
}

static inline void clobber_state(unsigned seed, enum dp_vec_save vec)
{
	volatile double d = seed * 0.1;
	volatile long double ld = seed / 3.0L;
	uint32_t mxcsr = 0x7f80 ^ (seed & 0x6000);	/* masks kept, rounding changed */
	uint16_t fcw = 0x0c7f;				/* round toward zero, extended */

	memset(clobber_buf[0], (int)seed, sizeof(clobber_buf[0]));
	memcpy(clobber_buf[1], clobber_buf[0], sizeof(clobber_buf[1]));
	if (vec == DP_VEC_AVX512)
		clobber_zmm();
	else if (vec == DP_VEC_AVX)
		clobber_ymm();
	d = d * 1.000001 + 3.5;
	ld = ld * ld + 1.25L;
	__asm__ volatile("ldmxcsr %0\n\tfldcw %1" : : "m"(mxcsr), "m"(fcw));
	(void)d;
	(void)ld;
}

#endif /* DP_TESTS_CLOBBER_H */
