/*
 * Site planning: how to install probes at given points of an object.
 *
 * A jump needs a window of whole instructions covering 5 bytes in which only
 * the first byte may be a branch target, every instruction can move, and a
 * call or syscall comes last.  A point on a `nop; nop5` (90 0f 1f 44 00 00,
 * an SDT site) whose nop5 no branch lands inside gets a window of the nop5
 * alone, with the nop as its lead (struct dp_window): the nop runs in place,
 * the trampoline serves the point's hooks first and copies nothing; the
 * point stays the nop, so the event's ip is the SDT note's address.
 * Otherwise the planner tries, in order:
 *   - a window starting at the point (after an endbr64, which stays put);
 *   - the same, running on into fill after a ret or jmp: nops and int3s
 *     that are no branch targets, between functions or inside one (not one
 *     whose indirect jmps may go anywhere); the window ends inside the fill
 *     as soon as it has its bytes, leaving the rest to hops;
 *   - a window starting before the point and covering it (the displaced
 *     instructions before the point run first in the trampoline): this is
 *     what lets a ret in the middle of a function get a jump, and it is
 *     preferred to one that would end in fill, which then stays free;
 *   - the same three with 2 bytes instead of 5, for a hop (below);
 *   - an int3 on the point's own instruction;
 * and otherwise refuses.  Every int3 and refusal carries a reason; an int3
 * for want of a hop gives the reason 5 bytes did not fit.
 *
 * Hops.  Where only 2 bytes fit (`L: xor eax, eax; ret` between two branch
 * targets), the site gets a 2-byte jmp rel8 to a 5-byte jmp rel32 to the
 * trampoline, written in fill nothing runs, within -128..+127 bytes of the
 * rel8's end: nops and int3s right after a ret, jmp or ud2 (the last real
 * instruction of a function, for fill between functions), no branch target
 * among them, in no function whose indirect jmps may go anywhere, and no
 * byte another patch of the plan writes.  The first 4 bytes after the ret
 * are taken last: a window ending with the ret may run on over them.  Such
 * a patch is a DP_SITE_JUMP whose window is shorter than 5 bytes and whose
 * hop says where the rel32 goes and what it overwrites.  Installers:
 *   - check that the hop's bytes are still its original ones, like the
 *     window's;
 *   - write the trampoline, then the rel32 at hop.addr (jmp to the
 *     trampoline's entry), then the rel8 at the site (EB, then the
 *     displacement to hop.addr; int3s over the rest of the window): nothing
 *     can reach the rel32 before the rel8 leads there;
 *   - remove the rel8 first (the window's original bytes), then the rel32:
 *     a thread stopped at hop.addr has taken the rel8 already and belongs in
 *     the trampoline's entry, like a thread inside the window belongs at the
 *     matching displaced instruction.
 * One dp_plan_sites call never gives two patches overlapping bytes, hops
 * included.  Patches planned by separate calls may choose the same fill: an
 * installer holding patches from another plan checks the regions of a new
 * patch (window and hop) against those it has installed, and a stale hop
 * fails the install (-ESTALE) rather than overwrite another's bytes; plan
 * all the points of an object together to avoid it.
 *
 * Addresses are the object's virtual addresses; the caller adds the load bias
 * to the window's and the hop's addr before building the trampoline.
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
	DP_SITE_REDIRECT,	/* the branches leading to the window go to its
				   trampoline; the window is not written
				   (DP_PLAN_REDIRECT only, below) */
};

const char *dp_site_method_str(enum dp_site_method method);

#define DP_PATCH_MAX_POINTS 16

/* A hop's jmp rel32, and the jmp rel8 at the site that leads to it. */
#define DP_HOP_LEN 5
#define DP_HOP_SITE_LEN 2

/* Where a hop's jmp rel32 goes: padding within the site's rel8 reach. */
struct dp_hop {
	uint64_t addr;			/* first byte */
	uint8_t len;			/* DP_HOP_LEN; 0 when the patch has no hop */
	uint8_t bytes[DP_HOP_LEN];	/* the original bytes there */
};

/*
 * A direct branch a redirect retargets: its displacement, rel8 (to the
 * hop) or rel32 (to the trampoline's entry).
 */
#define DP_PATCH_MAX_REDIRECTS 8
struct dp_redirect {
	uint64_t addr;			/* the branch instruction */
	uint8_t len;			/* its length */
	uint8_t disp_off;		/* where its displacement starts in it */
	uint8_t disp_len;		/* 1 or 4 */
	uint8_t bytes[4];		/* the displacement's original bytes */
	uint8_t to;			/* the displaced instruction it leads to (0:
					   the trampoline's entry) */
};

/* One patch: a window and the probe points it serves. */
struct dp_patch {
	enum dp_site_method method;
	enum dp_reason reason;		/* why int3 or refused; NONE for a jump */
	struct dp_window win;		/* jump: the overwritten bytes (5 or more, or 2
					   or more with a hop); int3: the one
					   instruction */
	struct dp_hop hop;		/* jump: set when win.len < 5; redirect: set
					   when some branch is a rel8 */
	bool led;			/* branches are led into the window (its own
					   redirects, or other patches' redirect_to):
					   install it before those (plan.h) */
	uint8_t hop_to;			/* redirects through the hop: the displaced
					   instruction it leads to (0: the entry) */
	unsigned nredirects;		/* the branches it retargets: a redirect's,
					   or a jump's into its window (plan.h) */
	struct dp_redirect redirects[DP_PATCH_MAX_REDIRECTS];
	/* jump or int3: for each displaced instruction, 0, or the window
	 * address of the redirect its branch leads to: the relocated copy
	 * goes to that redirect's trampoline entry (DP_PLAN_REDIRECT). */
	uint64_t redirect_to[DP_WINDOW_MAX_INSNS];
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

/*
 * dp_plan_sites, with flags:
 *
 * DP_PLAN_REDIRECT leads branches, where it must, instead of trapping.
 * An int3 patch becomes, if it can:
 *   - a redirect (DP_SITE_REDIRECT): the point's block (the point, or the
 *     nearest target before it that straight-line code runs from into the
 *     point) is one nothing falls through to and only direct jmps, jccs,
 *     loops and jrcxzs lead to (no call but one that never returns before
 *     it, no table, no pointer, no unwinder; at a function start, one no
 *     symbol names and no value holds: a .cold part).  The block is left
 *     unwritten; its window (from the block's start up to an instruction
 *     that leaves, none a target after the first, each a point of no other
 *     jump) is displaced into a trampoline as usual, and its branches are
 *     led to the trampoline's entry;
 *   - else a jump whose window (ending with the point's instruction,
 *     starting up to 7 instructions before, at least 5 bytes) holds
 *     targets after its first byte, each of which only direct branches
 *     reach: `led`, its branches are led to the displaced instruction they
 *     go to, in the trampoline.  A jmp or jcc inside the window itself
 *     needs no leading: the trampoline's copy goes to its target's copy
 *     (tramp.h); a window whose targets only such branches reach is a
 *     plain jump, not `led`.
 * Leading a branch: a rel32's displacement is rewritten to reach the
 * trampoline; a rel8's reaches the patch's hop (fill within reach of every
 * rel8, as a hop's; one per patch, so all its rel8s go to one
 * instruction, hop_to), whose jmp rel32 reaches the trampoline; a branch
 * that is an instruction of a jump or int3 window of the plan (a tail jcc
 * into a .cold part, itself a return site) is not rewritten in place, where
 * nothing runs it: that patch's redirect_to says where its relocated copy
 * goes instead.  No branch lies in a window the plan changed this way, is
 * led twice, or is in the window it leads to.  Installers:
 *   - check the window's, the hop's and each displacement's bytes;
 *   - write the trampoline, then the hop's jmp rel32, then each
 *     displacement, then (a jump) the window: nothing reaches the
 *     trampoline before, nothing reaches the window's overwritten targets
 *     after;
 *   - install every patch marked `led` before the patches whose
 *     redirect_to names an instruction of its window, whose trampolines
 *     need where it serves that instruction; a patch whose redirect_to
 *     names one not served (its patch failed) is not installed either;
 *   - remove the window (a jump), then the displacements (their original
 *     bytes), then the hop: a thread stopped at the hop has taken a rel8
 *     already and belongs where the hop leads.
 * A redirect's window keeps its code: a thread stopped in it needs
 * nothing.  Only installers that know this ask for it.
 */
#define DP_PLAN_REDIRECT (1u << 0)

/*
 * With DP_PLAN_REDIRECT: every patch stands alone.  No branch is led
 * through another window's relocated copy (no redirect_to), so no patch
 * needs another's trampoline, and patches may be installed, rebuilt and
 * removed each on its own, in any order: each one's bytes (window, hop,
 * the displacements of its branches) are all it changes.  A site that
 * would need it keeps its int3.  lttng-dynprobed plans with both.
 */
#define DP_PLAN_ALONE (1u << 1)

int dp_plan_sites_flags(struct dp_object *obj, const uint64_t *points, size_t n, unsigned flags,
			struct dp_patch **patches, size_t *npatches);

/* dp_plan_site with the flags above (0: dp_plan_site itself): the patch
 * that serves the point. */
int dp_plan_site_flags(struct dp_object *obj, uint64_t point, unsigned flags,
		       struct dp_patch *out);

/* How a patch planned with DP_PLAN_REDIRECT leads branches, in words for
 * people ("redirect: 2 branches led to its trampoline", "led window: ...",
 * "1 branch inside the jump to its own instructions, ..."), into buf; ""
 * for a patch that leads none.  buf. */
const char *dp_plan_led_str(const struct dp_patch *p, char *buf, size_t size);

/*
 * Whether an int3 in the object at `path` could be hit by a thread that
 * blocks SIGTRAP, which the kernel answers by killing the process: glibc
 * (libc, the dynamic loader) runs code with every signal blocked around
 * clone and fork, and the threads of lttng-ust, liburcu and the agent block
 * every signal.  Told by the file's name: libc.so.*, ld-*.so* (ld-linux-
 * x86-64.so.2), libpthread.so.*, liblttng-ust*.so*, liburcu*.so*.
 */
bool dp_plan_traps_unsafe(const char *path);

/*
 * Refuses (DP_REASON_TRAP_UNSAFE) the int3 patches among p[0..n) when the
 * object's file is one dp_plan_traps_unsafe() names; jumps stay.  Every
 * planner of real probes applies it: the plans above are the engine's, for
 * any code.
 */
void dp_plan_refuse_unsafe_traps(struct dp_object *obj, struct dp_patch *p, size_t n);

#endif /* DP_PATCH_PLAN_H */
