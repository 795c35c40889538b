/*
 * Probe targets built with frame pointers (see Makefile.am for the flags):
 * the frame-pointer walker's test chain fp_level1 -> fp_level2 -> fp_level3
 * -> fx_locals, and functions whose arguments the contexts read.
 */
#include "fixture.h"

void *fp_ra[4];

long fx_args(struct fx_thing *t, const char *s, long neg, unsigned long big, int a5, int a6,
	     long a7, unsigned long a8)
{
	return t->i + s[0] + neg + (long)big + a5 + a6 + a7 + (long)a8;
}

double fx_values(struct fx_thing *t, double d, float f)
{
	return t->i + d + f;
}

long fp_level3(long x)
{
	fp_ra[3] = __builtin_return_address(0);
	/* Not a tail call: fx_locals returns here. */
	return fx_locals((int)x, 100) + 1;
}

long fp_level2(long x)
{
	fp_ra[2] = __builtin_return_address(0);
	return fp_level3(x + 1) + 1;
}

long fp_level1(long x)
{
	fp_ra[1] = __builtin_return_address(0);
	return fp_level2(x + 1) + 1;
}

long fx_noctx(long x)
{
	return x * 7 + 3;
}

long fx_disabled(long x)
{
	return x * 11 + 5;
}

long fx_thread(long id, const char *s)
{
	return id + s[0];
}

long fx_forked(long x)
{
	return x * 13 + 1;
}
