/*
 * Probe targets built without frame pointers (see Makefile.am): only the
 * unwind tables describe their frames.  Each level keeps a buffer on its
 * stack, so the frames have sizes the walker must know from the CFI.
 */
#include <signal.h>

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

/* A deeper stack of frames without frame pointers, each of its own size. */
long nf_leaf(long x)
{
	volatile char buf[24];

	return touch(buf, x) + 1;
}

long nf_deep(long n, long x)
{
	volatile char buf[48];

	if (n > 0)
		return nf_deep(n - 1, touch(buf, x)) + 1;
	return nf_leaf(x);
}

/* Signal frames: the handler's caller is the kernel's signal frame
 * (__restore_rt), whose CFI says the interrupted registers are in the
 * ucontext; the interrupted code is inside libc's raise. */
volatile long nf_signal_seen;

void nf_on_signal(int sig)
{
	volatile char buf[56];

	nf_signal_seen += touch(buf, sig);
}

long nf_signal_main(long x)
{
	struct sigaction sa = { .sa_handler = nf_on_signal }, old;
	volatile char buf[88];

	sigaction(SIGUSR2, &sa, &old);
	raise(SIGUSR2);
	sigaction(SIGUSR2, &old, NULL);
	return touch(buf, x) + nf_signal_seen;
}

/*
 * The shape of a lazy PLT entry: a 6-byte indirect jump (a nop here), a
 * 5-byte push, a jump on; and the expression compilers give such entries
 * (CFA = rsp + 8, + 8 more once (rip & 15) >= 11):
 *   DW_CFA_def_cfa_expression, 11 bytes: breg7 8; breg16 0; lit15; and;
 *   lit11; ge; lit3; shl; plus
 * Here the entry returns instead of jumping on, so the rule is wrong at its
 * last byte (the ret): nothing probes it there.
 */
__asm__(
	"	.text\n"
	"	.globl nf_plt_like, nf_plt_like_pushed\n"
	"	.type nf_plt_like, @function\n"
	"	.p2align 4\n"
	"nf_plt_like:\n"
	"	.cfi_startproc\n"
	"	.cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22\n"
	"	.byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"	.byte 0x68, 0x00, 0x00, 0x00, 0x00\n"
	"nf_plt_like_pushed:\n"
	"	addq $8, %rsp\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size nf_plt_like, . - nf_plt_like\n");
