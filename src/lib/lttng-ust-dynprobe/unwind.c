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
 * The CFI walk (the default) reads the tables cfi-tables.c compiled from
 * each object's .eh_frame when the probe was defined: per frame, the row
 * from the thread's cache, else one search for the object (the previous
 * frame's, most often) and one for its row, and fault-safe reads of the
 * return address (and rbp when the frame saved it).  No lock, no
 * allocation, no signal masking.  It is right
 * without frame pointers, through PLT entries and through signal frames
 * (their row says the interrupted registers are in the ucontext the kernel
 * pushed); it stops where a table has no rule, at code loaded since the
 * last refresh of the tables (a probe's definition, or a dlopen through the
 * agent), and when a frame is not above the one before.
 *
 * The libunwind walk starts libunwind's local unwinder from a ucontext built
 * from the saved registers and flagged as a signal frame: rip is the exact
 * instruction (a probe site), not a return address, so its unwind row must be
 * looked up at rip itself and not rip - 1 (at a function's entry that would
 * be the previous function's).  The reference the tests compare with.
 *
 * Cost (tests/perf/probe-cost.sh 200000 20, this 2-core VM beside a CPU
 * hog, ns per hit, 20 frames deep, recording the addresses included): no
 * payload 61; the frame-pointer walk 87 for 8 frames and 94 for 16; the CFI
 * walk 114 and 155 when the thread walked the same addresses before (its
 * cache of rows: what a probe hit again from the same call paths does),
 * ~220 for 16 frames the first time (~10 per frame: a chain of dependent
 * loads, the block index, the block's rows, the row, the return address;
 * the first version, a plain binary search over all rows, cost ~550 for 16,
 * most of it in mispredicted branches, and a binary search within the block
 * ~260: each step waited for the one before, where counting the block's
 * rows does not); the libunwind walk ~2,700 and ~5,700: libunwind blocks
 * every signal around each unwind-table lookup and around its cache lock
 * (two sigprocmask system calls each, ~125 ns apiece here), whatever the
 * caching policy.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <string.h>
#include <ucontext.h>

#include "cfi-tables.h"
#include "hit.h"
#include "spec/ctx.h"

/* Canonical user addresses, above the null page. */
static bool code_address(uint64_t a)
{
	return a >= 4096 && a < (1ull << 47);
}

static unsigned bt_fp(const struct dp_regs *regs, bool at_entry, uint64_t *out, unsigned depth)
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

struct unw_scratch {
	unw_context_t uc;
	unw_cursor_t cursor;
};


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

static unsigned bt_libunwind(const struct dp_regs *regs, uint64_t *out, unsigned depth,
			     void *scratch)
{
	struct unw_scratch *s = scratch;
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

/* ---- the CFI walk ----------------------------------------------------- */

/* Where the kernel's rt_sigframe puts the interrupted registers: rsp points
 * at its ucontext once the handler returned into __restore_rt, and
 * uc_mcontext.gregs lies at offset 40 (REG_RBP 10, REG_RSP 15, REG_RIP 16). */
#define UC_GREGS 40
#define UC_RBP (UC_GREGS + 8 * 10)
#define UC_RSP (UC_GREGS + 8 * 15)
#define UC_RIP (UC_GREGS + 8 * 16)

/*
 * The object holding pc: the previous frame's (*hint) when it does, which
 * most frames' is; else by the branch-free search of cfi-table.h.  Then its
 * row.
 */
static const struct dp_cfi_row *cfi_row(const struct dpa_cfi_set *set, uint64_t pc,
					const struct dpa_cfi_obj **hint)
{
	const struct dpa_cfi_obj *o = *hint;
	size_t n = set->n;

	if (!o || pc < o->lo || pc >= o->hi) {
		o = set->v;
		if (!n || pc < o->lo)
			return NULL;
		while (n > 1) {
			size_t half = n / 2;

			o = o[half].lo <= pc ? o + half : o;
			n -= half;
		}
		if (pc >= o->hi)
			return NULL;
		*hint = o;
	}
	return dp_cfi_lookup_in(&o->t, pc);
}

/*
 * The rows of the addresses this thread's walks met, by address, in the
 * thread's scratch header: a probe hit again and again from the same call
 * paths (what a hot probe is) finds each frame's row with one load instead
 * of three dependent ones (block, rows, row).  Entries are of one table set
 * (the rows of another may differ: an object unloaded, another mapped at
 * its addresses); the cache is emptied when the set changes.  No address
 * is 0: an empty slot matches none.
 */
#define CACHE_SLOTS 256

struct cfi_cache {
	const struct dpa_cfi_set *set;
	uint8_t pad[56];
	struct {
		uint64_t at;
		const struct dp_cfi_row *row;
	} e[CACHE_SLOTS];
};
_Static_assert(sizeof(struct cfi_cache) == DPA_CFI_CACHE_BYTES, "the scratch header's size");

static struct cfi_cache *cache_for(struct dpa_thread *t, const struct dpa_cfi_set *set)
{
	struct cfi_cache *c = dpa_thread_cfi_cache(t);

	if (c && c->set != set) {
		memset(c->e, 0, sizeof(c->e));
		c->set = set;
	}
	return c;
}

static inline unsigned cache_slot(uint64_t at)
{
	return (unsigned)((at * 0x9e3779b97f4a7c15ull) >> 56);
}

/* The row of `at` (the cache's, else cfi_row's, then cached), or NULL. */
static inline const struct dp_cfi_row *cached_row(struct cfi_cache *c,
						  const struct dpa_cfi_set *set, uint64_t at,
						  const struct dpa_cfi_obj **hint)
{
	unsigned k = cache_slot(at);
	const struct dp_cfi_row *row;

	if (c && c->e[k].at == at)
		return c->e[k].row;
	row = cfi_row(set, at, hint);
	if (c && row) {
		c->e[k].at = at;
		c->e[k].row = row;
	}
	return row;
}

/* The part of the thread's stack a walk reads directly (dpa_mem_on_stack's
 * bounds, looked up once per walk); anything else goes through
 * dpa_mem_read. */
struct stack_span {
	uint64_t lo, hi;
};

static void stack_span_get(const struct dp_regs *regs, struct stack_span *s)
{
	s->lo = s->hi = 0;
	if (dpa_mem_on_stack(regs, regs->rsp, 8)) {
		s->lo = regs->rsp - DPA_RED_ZONE > dpa_self.stack_lo ? regs->rsp - DPA_RED_ZONE
								     : dpa_self.stack_lo;
		s->hi = dpa_self.stack_hi;
	}
}

/* A word and whether it could be read: returned in two registers, so that
 * the walk's variables need not live in memory for the slow path. */
struct word {
	uint64_t v;
	bool ok;
};

static __attribute__((noinline)) struct word read_word_slow(const struct dp_regs *regs,
							       uint64_t addr)
{
	struct word w;

	w.ok = !dpa_mem_read(regs, NULL, &w.v, addr, sizeof(w.v));
	return w;
}

__attribute__((always_inline))
static inline bool read_word(const struct dp_regs *regs, const struct stack_span *s,
			     uint64_t addr, uint64_t *v)
{
	struct word w;

	if (addr & 7)
		return false;
	if (addr >= s->lo && addr < s->hi && s->hi - addr >= sizeof(*v)) {
		*v = *(const uint64_t *)(uintptr_t)addr;
		return true;
	}
	w = read_word_slow(regs, addr);
	*v = w.v;
	return w.ok;
}

/*
 * The rule for a pc no table covers (hand-written assembly without CFI
 * directives, generated code): at a function's first instruction the
 * return address is at [rsp]; elsewhere the frame-pointer rule, as bt_fp
 * reads it.  false when neither applies.
 */
static bool no_table_rule(const struct dp_regs *regs, const struct stack_span *span, bool entry,
			  uint64_t sp, uint64_t *bp, bool *bp_known, uint64_t *cfa, uint64_t *ra)
{
	if (entry) {
		*cfa = sp + 8;
		return read_word(regs, span, sp, ra);
	}
	if (!*bp_known || *bp < sp)
		return false;
	*cfa = *bp + 16;
	if (!read_word(regs, span, *bp + 8, ra))
		return false;
	*bp_known = read_word(regs, span, *bp, bp);
	return true;
}

static unsigned bt_cfi(const struct dp_regs *regs, bool at_entry, uint64_t *out, unsigned depth)
{
	const struct dpa_cfi_set *set = dpa_cfi_current();
	const struct dpa_cfi_obj *hint = NULL;
	struct cfi_cache *cache = set ? cache_for(&dpa_self, set) : NULL;
	uint64_t pc = regs->rip, sp = regs->rsp, bp = regs->rbp;
	bool exact = true, bp_known = true;
	struct stack_span span;
	unsigned n = 0;

	if (!depth)
		return 0;
	out[n++] = pc;
	stack_span_get(regs, &span);
	while (n < depth) {
		/* A return address is after its call: its row is the call's. */
		uint64_t at = exact ? pc : pc - 1, cfa, ra;
		const struct dp_cfi_row *row = set ? cached_row(cache, set, at, &hint) : NULL;

		if (!row) {
			if (!no_table_rule(regs, &span, exact && at_entry, sp, &bp, &bp_known, &cfa,
					   &ra) ||
			    cfa <= sp || !code_address(ra))
				break;
			out[n++] = ra;
			pc = ra;
			sp = cfa;
			exact = false;
			continue;
		}
		switch (row->kind) {
		case DP_CFI_RSP:
			cfa = sp + (int64_t)row->cfa_off;
			break;
		case DP_CFI_PLT:
			cfa = sp + (int64_t)row->cfa_off + ((at & 15) >= row->arg ? 8 : 0);
			break;
		case DP_CFI_RBP:
			if (!bp_known)
				return n;
			cfa = bp + (int64_t)row->cfa_off;
			break;
		case DP_CFI_SIGNAL:
			/* The interrupted code may run on another stack: no
			 * ordering check across a signal frame. */
			if (!read_word(regs, &span, sp + UC_RIP, &pc) ||
			    !read_word(regs, &span, sp + UC_RBP, &bp) ||
			    !read_word(regs, &span, sp + UC_RSP, &sp) || !code_address(pc))
				return n;
			bp_known = true;
			exact = true;
			out[n++] = pc;
			continue;
		default:	/* STOP, END */
			return n;
		}
		/* Each frame lies above the one before: a wrong table cannot
		 * make the walk loop or wander down the stack. */
		if (cfa <= sp || !read_word(regs, &span, cfa + (int64_t)row->ra_off, &ra) ||
		    !code_address(ra))
			break;
		if (row->rbp_off == DP_CFI_RBP_LOST)
			bp_known = false;
		else if (row->rbp_off)
			bp_known = read_word(regs, &span, cfa + (int64_t)row->rbp_off, &bp);
		out[n++] = ra;
		pc = ra;
		sp = cfa;
		exact = false;
	}
	return n;
}

/* ---- by walker -------------------------------------------------------- */

size_t dpa_bt_prepare(unsigned walker)
{
	if (walker == DP_BT_CFI) {
		/* Without memory for the tables, walks stop at the first frame. */
		dpa_cfi_refresh();
		return 0;
	}
	return walker == DP_BT_LIBUNWIND ? sizeof(struct unw_scratch) : 0;
}

unsigned dpa_bt_walk(unsigned walker, const struct dp_regs *regs, bool at_entry, uint64_t *out,
		     unsigned depth, void *scratch)
{
	switch (walker) {
	case DP_BT_CFI:
		return bt_cfi(regs, at_entry, out, depth);
	case DP_BT_LIBUNWIND:
		return bt_libunwind(regs, out, depth, scratch);
	default:
		return bt_fp(regs, at_entry, out, depth);
	}
}
