/*
 * The vector save area of trampolines (see tramp.h): what this CPU makes
 * them save, and where each register lies.  Linked by the agent too (it
 * reads saved xmm registers for value recipes), so no emitter here.
 */
#include <cpuid.h>

#include "patch/tramp.h"

struct dp_vec_layout dp_vec_layout(enum dp_vec_save vec)
{
	struct dp_vec_layout l = { 0 };

	switch (vec) {
	case DP_VEC_AVX512:
	case DP_VEC_AVX512_LOW: l.nregs = 32; l.regsize = 64; l.nmask = 8; break;
	case DP_VEC_AVX: l.nregs = 16; l.regsize = 32; break;
	default: l.nregs = 16; l.regsize = 16; break;
	}
	l.mask_off = l.nregs * l.regsize;
	l.mxcsr_off = l.mask_off + l.nmask * 8;
	l.fcw_off = l.mxcsr_off + 4;
	l.size = (l.fcw_off + 4 + 63) & ~63u;
	return l;
}

const uint8_t *dp_tramp_vec_reg(const struct dp_regs *regs, enum dp_vec_save vec, unsigned n)
{
	struct dp_vec_layout l = dp_vec_layout(vec);
	uintptr_t area = ((uintptr_t)regs & ~(uintptr_t)63) - l.size;

	if (vec == DP_VEC_AVX512_LOW && n >= 16)
		return NULL;
	return n < l.nregs ? (const uint8_t *)(area + (uintptr_t)n * l.regsize) : NULL;
}

static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t)hi << 32 | lo;
}

enum dp_vec_save dp_vec_save_detect(void)
{
	unsigned a, b, c, d;
	uint64_t xcr0;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX))
		return DP_VEC_SSE;
	xcr0 = xgetbv0();
	if ((xcr0 & 0x6) != 0x6)		/* SSE and AVX state enabled */
		return DP_VEC_SSE;
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX512F) &&
	    (xcr0 & 0xe0) == 0xe0)		/* opmask, ZMM_Hi256, Hi16_ZMM */
		return DP_VEC_AVX512;
	return DP_VEC_AVX;
}

const char *dp_vec_save_str(enum dp_vec_save vec)
{
	switch (vec) {
	case DP_VEC_AVX512: return "zmm0-31 k0-7";
	case DP_VEC_AVX512_LOW: return "zmm0-15";
	case DP_VEC_AVX: return "ymm0-15";
	default: return "xmm0-15";
	}
}
