/*
 * Probe targets built without frame pointers (see Makefile.am): only the
 * unwind tables describe their frames.  Each level keeps a buffer on its
 * stack, so the frames have sizes the walker must know from the CFI.
 */
#include "fixture.h"

void *nf_ra[4];

/* Out of line, so that the buffers stay on the stack. */
__attribute__((noinline)) static long touch(volatile char *buf, long x)
{
	buf[x & 31] = (char)x;
	return buf[x & 31];
}

long nf_level3(long x)
{
	volatile char buf[40];

	nf_ra[3] = __builtin_return_address(0);
	return touch(buf, x) * 3 + 1;
}

long nf_level2(long x)
{
	volatile char buf[72];

	nf_ra[2] = __builtin_return_address(0);
	return nf_level3(touch(buf, x) + 1) + 1;
}

long nf_level1(long x)
{
	volatile char buf[24];

	nf_ra[1] = __builtin_return_address(0);
	return nf_level2(touch(buf, x) + 1) + 1;
}
