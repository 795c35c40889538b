/*
 * The registers of a thread stopped at an int3, as a probe handler sees
 * them: struct dp_regs from a signal's machine context.  Shared by the
 * agent's SIGTRAP handler and the in-process engine (inproc.h); header-only
 * and free of calls, as a signal handler needs.
 */
#ifndef DP_PATCH_SIGREGS_H
#define DP_PATCH_SIGREGS_H

#include <stdint.h>
#include <ucontext.h>

#include "patch/tramp.h"

/* The context's general registers and flags; rip is the probed site (the
 * kernel reports the address after the int3). */
static inline void dp_regs_from_gregs(const greg_t *g, uint64_t site, struct dp_regs *r)
{
	*r = (struct dp_regs){
		.rax = g[REG_RAX], .rcx = g[REG_RCX], .rdx = g[REG_RDX], .rbx = g[REG_RBX],
		.rsp = g[REG_RSP], .rbp = g[REG_RBP], .rsi = g[REG_RSI], .rdi = g[REG_RDI],
		.r8 = g[REG_R8], .r9 = g[REG_R9], .r10 = g[REG_R10], .r11 = g[REG_R11],
		.r12 = g[REG_R12], .r13 = g[REG_R13], .r14 = g[REG_R14], .r15 = g[REG_R15],
		.rip = site, .rflags = g[REG_EFL],
	};
}

#endif /* DP_PATCH_SIGREGS_H */
