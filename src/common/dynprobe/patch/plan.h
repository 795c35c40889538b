/*
 * Site planning: how to install probes at given points of an object.
 *
 * A jump needs a window of whole instructions covering 5 bytes in which only
 * the first byte may be a branch target, every instruction can move, and a
 * call or syscall comes last.  The planner tries, in order:
 *   - a window starting at the point (after an endbr64, which stays put);
 *   - the same, running on into the padding after a final ret or jmp;
 *   - a window starting before the point and covering it (the displaced
 *     instructions before the point run first in the trampoline): this is
 *     what lets a ret in the middle of a function get a jump;
 *   - an int3 on the point's own instruction;
 * and otherwise refuses.  Every int3 and refusal carries a reason.
 *
 * Addresses are the object's virtual addresses; the caller adds the load bias
 * to the window's addr before building the trampoline.
 */
#ifndef DP_PATCH_PLAN_H
#define DP_PATCH_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "patch/analysis.h"
#include "patch/tramp.h"
#include "reason.h"

enum dp_site_method {
	DP_SITE_JUMP,		/* jmp rel32 to a trampoline */
	DP_SITE_INT3,		/* int3 on the instruction, handled by a SIGTRAP handler */
	DP_SITE_REFUSED,
};

const char *dp_site_method_str(enum dp_site_method method);

#define DP_PATCH_MAX_POINTS 16

/* One patch: a window and the probe points it serves. */
struct dp_patch {
	enum dp_site_method method;
	enum dp_reason reason;		/* why int3 or refused; NONE for a jump */
	struct dp_window win;		/* jump: the overwritten bytes; int3: the one instruction */
	unsigned npoints;
	uint64_t points[DP_PATCH_MAX_POINTS];	/* probe points (hooks), in window order */
	size_t point_ids[DP_PATCH_MAX_POINTS];	/* indexes into the caller's point list */
	/* Refused with DP_REASON_NOT_BOUNDARY: the nearest boundaries (0 if none). */
	uint64_t prev_boundary, next_boundary;
	const struct dp_function *fn;
};

/* Plans one point.  0, or -errno for an analysis failure. */
int dp_plan_site(struct dp_object *obj, uint64_t point, struct dp_patch *out);

/*
 * Plans many points at once: a point that falls on an instruction of another
 * point's jump window becomes a hook of that patch instead of a patch of its
 * own, and points on the same int3 share it (two probes may name the same
 * address: each is served).  *patches (malloc'd, free() it) receives one
 * entry per patch, refused points included, by address.
 */
int dp_plan_sites(struct dp_object *obj, const uint64_t *points, size_t n,
		  struct dp_patch **patches, size_t *npatches);

#endif /* DP_PATCH_PLAN_H */
