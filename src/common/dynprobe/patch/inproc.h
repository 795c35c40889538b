/*
 * Installing planned patches in the current process.
 *
 * Trampolines go into chunks of memory mapped read+execute within +-2 GiB
 * of the code they serve; every byte of code, trampolines and patched sites
 * alike, is written through /proc/self/mem, so that no mapping is ever
 * writable and executable at once.  Trampoline memory is never unmapped or
 * reused: a thread may still be running in it.
 *
 * The caller makes sure no other thread runs the bytes being rewritten
 * (installers run before other threads exist, or stop them).
 */
#ifndef DP_PATCH_INPROC_H
#define DP_PATCH_INPROC_H

#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

#include "patch/plan.h"
#include "patch/tramp.h"

struct dp_code_pool;

struct dp_code_pool *dp_code_pool_new(void);
/* Memory for `size` bytes of code within reach of `near`: 0 and *addr, or -errno. */
int dp_code_pool_alloc(struct dp_code_pool *pool, uint64_t near, size_t size, uint64_t *addr);
/* Writes code bytes at addr (any mapping of this process).  0 or -errno. */
int dp_code_write(struct dp_code_pool *pool, uint64_t addr, const void *bytes, size_t len);

/* An installed patch, at run-time addresses. */
struct dp_inproc_site {
	enum dp_site_method method;
	struct dp_window win;		/* run-time addr */
	struct dp_hop hop;		/* run-time addr; len 0 when the jump has no hop */
	struct dp_tramp tramp;
	unsigned npoints;
	uint64_t points[DP_PATCH_MAX_POINTS];
	void *args[DP_PATCH_MAX_POINTS];
	dp_handler_fn handler;
	bool installed;
};

/*
 * Installs a jump or int3 patch planned in file addresses, at bias.  args[i]
 * is passed to the handler for plan->points[i].  A jump with a hop writes
 * the trampoline, the hop's jmp rel32, then the site's jmp rel8 (plan.h).
 * 0, -ENOTSUP with *why, -ESTALE when the window's or the hop's bytes are no
 * longer those the plan read, or -errno.  Nothing is changed on failure.
 */
int dp_inproc_install(struct dp_code_pool *pool, struct dp_inproc_site *site,
		      const struct dp_patch *plan, uint64_t bias, dp_handler_fn handler,
		      void *const *args, enum dp_vec_save vec, enum dp_reason *why);

/* Puts the original bytes back: the site's, then the hop's.  0 or -errno. */
int dp_inproc_remove(struct dp_code_pool *pool, struct dp_inproc_site *site);

/*
 * From a SIGTRAP handler, for an int3 site whose int3 was just hit (rip is
 * the site + 1): runs the handler for each point with the registers of the
 * context, and resumes the context in the relocated instruction.
 */
void dp_inproc_trap(const struct dp_inproc_site *site, ucontext_t *uc);

#endif /* DP_PATCH_INPROC_H */
