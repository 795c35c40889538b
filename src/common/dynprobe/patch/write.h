/*
 * The bytes of an installed patch: what its site, and its hop, hold.
 *
 * Every installer (the daemon, writing another process over ptrace; the
 * in-process installer of inproc.h) takes them from here, built with the
 * emitter:
 *   - a jump: jmp rel32 to the trampoline's entry, int3s over the rest of
 *     the window (no thread can be inside it: the installer moved them);
 *   - a jump with a hop: jmp rel8 to the hop, int3s over the rest of the
 *     window; at the hop, jmp rel32 to the trampoline's entry (plan.h says
 *     in which order to write them, and to remove them);
 *   - an int3: the one byte 0xcc on the instruction's first byte;
 *   - a redirect: nothing at the site; at the hop (when it has one), jmp
 *     rel32 to the trampoline's entry; each branch's new displacement from
 *     dp_redirect_bytes (plan.h says in which order to write them); a
 *     jump whose branches are led into its window likewise, its hop from
 *     dp_hop_bytes.
 * The caller writes hop_len bytes at the hop (when non-zero) and site_len
 * bytes at the site.
 */
#ifndef DP_PATCH_WRITE_H
#define DP_PATCH_WRITE_H

#include <stdint.h>

#include "patch/plan.h"

/* Where a patch goes, at run-time addresses. */
struct dp_patch_place {
	enum dp_site_method method;	/* DP_SITE_JUMP, DP_SITE_INT3 or DP_SITE_REDIRECT */
	uint64_t addr;			/* the window's first byte */
	uint8_t len;			/* the window's length */
	uint64_t hop;			/* a jump's hop, when hop_len */
	uint8_t hop_len;		/* DP_HOP_LEN, or 0 for none */
};

struct dp_patch_bytes {
	uint8_t site[DP_WINDOW_MAX_LEN];
	uint8_t site_len;		/* bytes to write at addr */
	uint8_t hop[DP_HOP_LEN];
	uint8_t hop_len;		/* bytes to write at hop: 0 or DP_HOP_LEN */
};

/*
 * Fills *out for the patch at `place` whose trampoline starts at `entry`
 * (unused for an int3).  0, -ERANGE when a rel8 or rel32 does not reach,
 * -EINVAL for a place no plan gives (a window too short for its jump, a
 * method that writes nothing).
 */
int dp_patch_bytes_fill(const struct dp_patch_place *place, uint64_t entry,
			struct dp_patch_bytes *out);

/*
 * The new displacement of the redirected branch r, at run-time address
 * `branch`, so that it leads to `target` (the trampoline's entry for a
 * rel32, the hop for a rel8): r->disp_len bytes in out.  0, or -ERANGE
 * when it does not reach, -EINVAL for a branch no plan gives.
 */
int dp_redirect_bytes(const struct dp_redirect *r, uint64_t branch, uint64_t target,
		      uint8_t out[4]);

/* A hop's jmp rel32 at `hop` to `target`.  0, or -ERANGE when out of reach. */
int dp_hop_bytes(uint64_t hop, uint64_t target, uint8_t out[DP_HOP_LEN]);

#endif /* DP_PATCH_WRITE_H */
