/*
 * Context evaluation: the payload fields of a dynamic event, computed at
 * each hit from the saved registers and the process memory.  What a context
 * means (its spec, its fields, the `_NAME_error` byte of memory contexts) is
 * the core library's (spec/ctx.h); this is the part that runs in the hit.
 *
 * Cost.  Memory on the probed thread's stack, in the executable and in the
 * probed object is read directly (a few ns); anything else (heap, other
 * libraries) through one process_vm_readv, ~1 us on this VM (memread.c).
 * A frame-pointer backtrace adds ~2 ns per frame, a CFI one ~390 ns.
 */
#ifndef DPA_CONTEXT_H
#define DPA_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "patch/tramp.h"
#include "spec/ctx.h"

/* At a probe's definition, never from a hit: sets up what the contexts'
 * stack walkers need (dpa_bt_prepare: the CFI tables), and returns the
 * per-thread scratch bytes dpa_ctx_eval needs for them (their strings and
 * backtraces, the walker's state). */
size_t dpa_ctx_prepare(const struct dp_ctx *ctx, size_t nctx);

/*
 * Whether every context computes its fields from the saved general
 * registers alone (reg:, regs, the return value, value recipes without
 * memory, xmm or segment bases): no memory read, no scratch, nothing called
 * outside the agent.  Such probes take the hit path's short way.
 */
bool dpa_ctx_regs_only(const struct dp_ctx *ctx, size_t nctx);

/* dpa_ctx_env flags. */
enum dpa_ctx_eval_flag {
	DPA_CTX_AT_ENTRY = 1u << 0,	/* the site is a function's first instruction:
					   its return address is at [rsp] */
	DPA_CTX_REGS_ONLY = 1u << 1,	/* dpa_ctx_regs_only() holds for the contexts:
					   no value can fail, no scratch is needed */
};

struct dpa_mem_ranges;

/* What one evaluation works from. */
struct dpa_ctx_env {
	const struct dp_regs *regs;		/* the probed context */
	unsigned flags;				/* enum dpa_ctx_eval_flag */
	const struct dpa_mem_ranges *own;	/* readable while the hit runs (the
						   probed object's segments), or NULL */
	void *scratch;				/* dpa_ctx_prepare bytes, 16-aligned */
};

/*
 * Computes the field values of the contexts at one hit: values[] gets
 * dp_ctx_layout's fields, in order; strings and backtraces point into the
 * scratch.  Never faults, never allocates, never takes a lock (the libunwind
 * walker aside: libunwind's own).  Returns how many memory contexts recorded
 * an error.
 */
unsigned dpa_ctx_eval(const struct dp_ctx *ctx, size_t nctx, const struct dpa_ctx_env *env,
		      struct dpa_value *values);

/*
 * dpa_ctx_eval for contexts dpa_ctx_regs_only() accepts: the same values,
 * none can fail, nothing read but the saved registers.
 */
void dpa_ctx_eval_regs(const struct dp_ctx *ctx, size_t nctx, const struct dpa_ctx_env *env,
		       struct dpa_value *values);

#endif /* DPA_CONTEXT_H */
