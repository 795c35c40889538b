/*
 * Installing planned patches in the current process.
 *
 * Not what probes use (the daemon writes patches into other processes):
 * this is the engine run for real inside one process, for the engine's own
 * proofs and measurements (tests/engine, tests/probe, tests/perf, the
 * patch-everything library tests/engine/patchall.c).  It writes the same
 * trampolines and the same patch bytes (write.h) as the daemon.
 *
 * Installing is two steps, so that no int3 is ever written before the
 * SIGTRAP handler can serve it:
 *   dp_inproc_prepare  checks the bytes, builds and writes the trampoline
 *                      (nothing reaches it yet), and fills the patch bytes;
 *                      the site then holds what a trap handler needs
 *                      (dp_inproc_trap): win.addr, and tramp.insn_at[0],
 *                      where a trapped thread resumes;
 *   (the caller registers an int3 site with its SIGTRAP handler)
 *   dp_inproc_commit   writes the patch: the hop, then each redirected
 *                      branch's displacement, then the site (none for a
 *                      redirect).
 * A handler serves a prepared site (tramp.len != 0) whether or not commit
 * has returned: a thread may run into the int3 the moment it is written.
 *
 * Code is written through the code pool (codemem.h).  The caller makes sure
 * no other thread runs the bytes being rewritten (installers run before
 * other threads exist, or stop them).
 */
#ifndef DP_PATCH_INPROC_H
#define DP_PATCH_INPROC_H

#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

#include "patch/codemem.h"
#include "patch/plan.h"
#include "patch/tramp.h"
#include "patch/write.h"

/* A patch in this process, at run-time addresses. */
struct dp_inproc_site {
	enum dp_site_method method;
	struct dp_window win;		/* run-time addr */
	struct dp_hop hop;		/* run-time addr; len 0 when the jump has no hop */
	struct dp_tramp tramp;		/* len 0 until prepared */
	struct dp_patch_bytes patch;	/* what commit writes */
	uint8_t hop_to;			/* the displaced instruction the hop leads to,
					   for redirected rel8s (0: the entry) */
	unsigned nredirects;		/* branches led into the window, run-time addr */
	struct dp_redirect redirects[DP_PATCH_MAX_REDIRECTS];
	uint8_t redirect_new[DP_PATCH_MAX_REDIRECTS][4];	/* their new displacements */
	unsigned npoints;
	uint64_t points[DP_PATCH_MAX_POINTS];
	void *args[DP_PATCH_MAX_POINTS];
	dp_handler_fn handler;
	bool installed;			/* committed and not removed */
};

/*
 * Prepares a jump, int3 or redirect patch planned in file addresses, at bias.
 * args[i] is passed to the handler for plan->points[i].  0, -ENOTSUP with
 * *why, -ESTALE when the window's or the hop's bytes are no longer those
 * the plan read, or -errno.  The program's code is not changed.
 */
int dp_inproc_prepare(struct dp_code_pool *pool, struct dp_inproc_site *site,
		      const struct dp_patch *plan, uint64_t bias, dp_handler_fn handler,
		      void *const *args, enum dp_vec_save vec, enum dp_reason *why);

/*
 * The same for a patch whose redirect_to names redirects (plan.h), already
 * installed: via[i] is the run-time entry of the trampoline the relocated
 * branch of displaced instruction i leads to, 0 for its own target.
 * -ERANGE when an entry is out of a rel32's reach from the instruction.
 */
int dp_inproc_prepare_via(struct dp_code_pool *pool, struct dp_inproc_site *site,
			  const struct dp_patch *plan, uint64_t bias, dp_handler_fn handler,
			  void *const *args, enum dp_vec_save vec,
			  const uint64_t via[DP_WINDOW_MAX_INSNS], enum dp_reason *why);

/*
 * Writes a prepared patch: the hop's jmp rel32, then the site's bytes
 * (plan.h).  An int3 site must be registered with the SIGTRAP handler
 * first.  0 or -errno; nothing is changed on failure.
 */
int dp_inproc_commit(struct dp_code_pool *pool, struct dp_inproc_site *site);

/* Puts the original bytes back: the site's, its branches', then the hop's.
 * 0 or -errno.
 * Keep an int3 site registered: a thread may have trapped just before. */
int dp_inproc_remove(struct dp_code_pool *pool, struct dp_inproc_site *site);

/*
 * From a SIGTRAP handler, for an int3 site whose int3 was just hit (rip is
 * the site + 1): runs the handler for each point with the registers of the
 * context, and resumes the context in the relocated instruction.
 */
void dp_inproc_trap(const struct dp_inproc_site *site, ucontext_t *uc);

#endif /* DP_PATCH_INPROC_H */
