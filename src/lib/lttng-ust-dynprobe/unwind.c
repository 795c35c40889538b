/*
 * Stack walks for the `backtrace` context, from the probed context's saved
 * registers (never from the handler's own frame).
 *
 * The frame-pointer walk follows the rbp chain: each frame is [saved rbp,
 * return address].  It trusts nothing: a frame must be 8-aligned, lie in the
 * thread's stack above the probed rsp, and each one must lie above the one
 * before, so a garbage rbp (code built without frame pointers) ends the walk
 * early instead of wandering.  At a function's first instruction the frame is
 * not set up yet: the return address is at [rsp] and rbp is still the
 * caller's.
 *
 * The CFI walk uses libunwind's local unwinder, started from a ucontext built
 * from the saved registers and flagged as a signal frame: rip is the exact
 * instruction (a probe site), not a return address, so its unwind row must be
 * looked up at rip itself and not rip - 1 (at a function's entry that would
 * be the previous function's).  It works without frame pointers.
 *
 * Cost (tests/perf/probe-cost.sh, this VM, ns added to a hit without
 * payload, recording the addresses included): the frame-pointer walk ~30
 * for 8 frames and ~45 for 16 (~2 per frame); the CFI walk ~2,900 and
 * ~5,900 (~390 per frame).  libunwind blocks every
 * signal around each unwind-table lookup and around its cache lock (two
 * sigprocmask system calls each, ~125 ns apiece here), whatever the caching
 * policy.  Hence the frame-pointer walk as the default
 * (context.h); `backtrace:cfi` is for code built without frame pointers.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <string.h>
#include <ucontext.h>

#include "hit.h"

/* Canonical user addresses, above the null page. */
static bool code_address(uint64_t a)
{
	return a >= 4096 && a < (1ull << 47);
}

unsigned dpa_bt_fp(const struct dp_regs *regs, bool at_entry, uint64_t *out, unsigned depth)
{
	uint64_t fp = regs->rbp, floor = regs->rsp, frame[2];
	unsigned n = 0;

	if (!depth)
		return 0;
	out[n++] = regs->rip;
	if (at_entry && n < depth) {
		if (!dpa_mem_on_stack(regs, regs->rsp, 8) || !code_address(*(uint64_t *)regs->rsp))
			return n;
		out[n++] = *(uint64_t *)regs->rsp;
		floor = regs->rsp + 8;
	}
	while (n < depth) {
		/* Only the stack above the probed rsp: mapped while the hit runs. */
		if ((fp & 7) || fp < floor || !dpa_mem_on_stack(regs, fp, sizeof(frame)))
			break;
		memcpy(frame, (const void *)(uintptr_t)fp, sizeof(frame));
		if (!code_address(frame[1]))
			break;
		out[n++] = frame[1];
		floor = fp + sizeof(frame);
		fp = frame[0];
	}
	return n;
}

struct cfi_scratch {
	unw_context_t uc;
	unw_cursor_t cursor;
};

size_t dpa_bt_cfi_scratch(void)
{
	return sizeof(struct cfi_scratch);
}

static void regs_to_ucontext(const struct dp_regs *r, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;

	memset(&uc->uc_mcontext, 0, sizeof(uc->uc_mcontext));
	g[REG_RAX] = r->rax; g[REG_RCX] = r->rcx; g[REG_RDX] = r->rdx; g[REG_RBX] = r->rbx;
	g[REG_RSP] = r->rsp; g[REG_RBP] = r->rbp; g[REG_RSI] = r->rsi; g[REG_RDI] = r->rdi;
	g[REG_R8] = r->r8; g[REG_R9] = r->r9; g[REG_R10] = r->r10; g[REG_R11] = r->r11;
	g[REG_R12] = r->r12; g[REG_R13] = r->r13; g[REG_R14] = r->r14; g[REG_R15] = r->r15;
	g[REG_RIP] = r->rip; g[REG_EFL] = r->rflags;
}

unsigned dpa_bt_cfi(const struct dp_regs *regs, uint64_t *out, unsigned depth, void *scratch)
{
	struct cfi_scratch *s = scratch;
	uint64_t prev_sp = regs->rsp;
	unsigned n = 0;

	if (!depth)
		return 0;
	out[n++] = regs->rip;
	regs_to_ucontext(regs, &s->uc);
	if (unw_init_local2(&s->cursor, &s->uc, UNW_INIT_SIGNAL_FRAME) < 0)
		return n;
	while (n < depth) {
		/* From a signal frame the walk may move to another stack (the
		 * interrupted one), lower than the handler's. */
		bool from_signal = unw_is_signal_frame(&s->cursor) > 0;
		unw_word_t ip, sp;

		if (unw_step(&s->cursor) <= 0)
			break;
		if (unw_get_reg(&s->cursor, UNW_REG_IP, &ip) < 0 ||
		    unw_get_reg(&s->cursor, UNW_REG_SP, &sp) < 0 || !code_address(ip))
			break;
		/* A frame below the one before is a broken walk (bad unwind data). */
		if (sp < prev_sp && !from_signal)
			break;
		prev_sp = sp;
		out[n++] = ip;
	}
	return n;
}

void dpa_bt_setup(void)
{
	/*
	 * The global cache (libunwind's default), behind a lock it takes with
	 * every signal blocked: a hit never nests on the same thread (the
	 * guard), and no signal handler can run while the lock is held.  The
	 * per-thread cache measured no faster, and it lives in libunwind's
	 * thread-local storage, which glibc allocates with malloc on a
	 * thread's first use when the agent was loaded by dlopen: a hit
	 * inside malloc would then deadlock.
	 */
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_GLOBAL);
}
