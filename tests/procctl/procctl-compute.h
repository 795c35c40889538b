/*
 * The function the target's workers call and the tests move threads in:
 * a loop long enough that stopped workers are usually inside it, with no
 * RIP-relative operand, so that two copies are the same bytes and a thread
 * can continue in the other copy from the same offset.
 */
#ifndef PROCCTL_COMPUTE_H
#define PROCCTL_COMPUTE_H

#include <stdint.h>

#define DEFINE_COMPUTE(name)							\
	__attribute__((noinline, noclone, aligned(64))) uint64_t name(uint64_t x);	\
	uint64_t name(uint64_t x)						\
	{									\
		uint64_t acc = x;						\
										\
		for (uint64_t i = 0; i < 1000; i++) {				\
			acc = acc * 31 + (x ^ i);				\
			__asm__ volatile("" : "+r"(acc));			\
		}								\
		return acc;							\
	}

#endif /* PROCCTL_COMPUTE_H */
