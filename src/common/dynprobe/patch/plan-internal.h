/*
 * Site planning, private part: what plan.c (windows, patches, merging) and
 * fill.c (fill that nothing runs: where a window may end, where a hop's jmp
 * rel32 may go) hand each other.  Nothing here is part of the contract;
 * plan.h is.
 */
#ifndef DP_PATCH_PLAN_INTERNAL_H
#define DP_PATCH_PLAN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "patch/plan.h"

#define PL_JMP_LEN 5		/* jmp rel32 */

/* Decodes the instruction at va, with as many bytes as the section has. */
int pl_decode_at(struct dp_object *obj, uint64_t va, struct dp_insn *insn, const uint8_t **bytes);

/* Whether control never goes on to the next instruction: ret, jmp, ud2. */
bool pl_leaves(const struct dp_insn *insn);

/*
 * Whether [va, va + n) is fill that nothing runs, right after an
 * instruction of fn that leaves (see fill.c).
 */
bool pl_dead_fill(struct dp_object *obj, const struct dp_function *fn, uint64_t va, unsigned n);

/*
 * The file's bytes for [va, va + n) when no section holds any of them but
 * an executable segment loads them all: the padding between the last
 * section of code and the next (gzip's .text ends 3 bytes before .fini),
 * where no instruction is.  NULL otherwise.
 */
const uint8_t *pl_gap_bytes(struct dp_object *obj, uint64_t va, unsigned n);

/* Byte ranges [lo, hi): sorted, disjoint. */
struct pl_ranges {
	struct pl_range {
		uint64_t lo, hi;
	} *v;
	size_t n, cap;
};

bool pl_ranges_overlap(const struct pl_ranges *r, uint64_t lo, uint64_t hi);
/* Adds [lo, hi), merged with the ranges it touches.  0 or -ENOMEM. */
int pl_ranges_add(struct pl_ranges *r, uint64_t lo, uint64_t hi);

/* What a plan overwrites: windows (all of them that may be kept) and hops. */
struct pl_taken {
	struct pl_ranges windows, hops;
};

void pl_taken_release(struct pl_taken *t);

/*
 * Gives p, a jump whose window is shorter than 5 bytes, its hop: fill in
 * reach of its rel8 that nothing of `t` takes, then taken.  0 with *ok
 * false when there is none, or -ENOMEM.
 */
int pl_hop_take(struct dp_object *obj, struct dp_patch *p, struct pl_taken *t, bool *ok);

/* The same for a jmp rel8 (or any rel8 branch) ending at `from`: *hop. */
int pl_hop_take_from(struct dp_object *obj, uint64_t from, struct pl_taken *t,
		     struct dp_hop *hop, bool *ok);
/* The same for a hop whose first byte is in [lo, hi] (several rel8s'). */
int pl_hop_take_within(struct dp_object *obj, uint64_t lo, uint64_t hi, struct pl_taken *t,
		       struct dp_hop *hop, bool *ok);


/* Alignment fill: nops and int3s. */
bool pl_is_fill(const struct dp_insn *insn, const uint8_t *bytes);

/*
 * Whether [g0, g1), bytes outside every function, is fill that nothing
 * runs: nops and int3s, no target, after a function whose last instruction
 * that is not fill leaves (fill.c).
 */
bool pl_gap_dead(struct dp_object *obj, uint64_t g0, uint64_t g1);

/*
 * redirect.c: turns the int3 patches among p[0..n) into redirects where it
 * can (DP_PLAN_REDIRECT, plan.h); `t` holds every window and hop of the
 * plan, and gets the redirects' hops.  Patches whose points a redirect took
 * over become DP_SITE_REFUSED with npoints 0: the caller drops them.  0 or
 * -ENOMEM.
 */
int pl_redirects_plan(struct dp_object *obj, struct dp_patch *p, size_t n, unsigned flags,
		      struct pl_taken *t);

#endif /* DP_PATCH_PLAN_INTERNAL_H */
