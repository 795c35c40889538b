/*
 * Leading branches (DP_PLAN_REDIRECT, plan.h).  Redirects: a point that
 * only direct branches reach gets none of its own bytes written; the
 * branches are pointed at its trampoline instead.  Led windows: a jump
 * window may hold a target past its first byte when its branches are
 * pointed at the matching instruction of the trampoline, or lie inside the
 * window (`je 1f; add rax, rdi; 1: ret`: the je's copy goes to the ret's).
 * This gives a jump to sites with no room for one: a one-byte ret between
 * two branch targets, a ret that is both fallen into and branched to, or a
 * .cold part packed against the next function with no fill to hop through,
 * which the hot part enters by jmp and jcc rel32.
 *
 * The window starts where the point's block does: at the point when a
 * branch leads there, or at the nearest target before it that the point is
 * reached from by falling through (`L: xor eax, eax; pop rbx; ret`: the
 * window is all three, the hook at the ret).
 *
 * Why it is safe: the window's code is left as it was, so whatever reaches
 * it some other way runs the original code (a probe missed, never a crash);
 * and nothing else reaches it, when every way in is one of the branches
 * found here.  The analysis knows every direct branch of the object's
 * functions (the DP_TGT_DIRECT targets come from the same decoding), a
 * block start with any other kind of target (a call's return, a table's
 * entry, a landing pad, a value held somewhere, a function start a symbol
 * names) is left alone, and so is one that the instruction before it runs
 * into; a call before it that never returns (plt.c's knowledge) does not.
 * A led window's targets are held to more: overwritten, they must be
 * reached by nothing but the branches found (DP_TGT_DIRECT alone, in a
 * function whose indirect jmps are known), or a thread lands in the jump.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "elf/elf.h"
#include "patch/analysis-internal.h"
#include "patch/plan-internal.h"
#include "sorted.h"
#include "x86/reloc.h"

/* Bytes looked back over for the fill before a function no symbol follows. */
#define RD_GAP_MAX 4096
/* A rel8 reaches 128 bytes back from its end and 127 on. */
#define RD_REL8_BACK 128
#define RD_REL8_FWD 127

/* A direct branch to a candidate point. */
struct rd_src {
	uint64_t target;
	uint64_t addr;
	uint8_t len, disp_off, disp_len;
	bool movable;		/* a jmp, jcc, loop or jrcxz with a rel8 or rel32 */
	bool inner;		/* a movable jmp or jcc: inside the window it leads
				   to, its copy goes to its target's (tramp.c) */
};

/* A point of the plan, and whether its patch is an int3 (a redirect may
 * take it over) or not (a redirect's window stops before it). */
struct rd_point {
	uint64_t addr;
	size_t patch;
};

/* A jump or int3 window of the plan: where a branch may be an instruction. */
struct rd_win {
	uint64_t addr, end;
	size_t patch;
};

/* A branch of a window, whose relocated copy goes to the redirect. */
struct rd_via {
	size_t patch;
	unsigned insn;
};

struct rd_state {
	struct dp_object *obj;
	struct dp_patch *p;
	size_t n;
	bool alone;			/* DP_PLAN_ALONE: no branch led through
					   another window's relocated copy */
	uint64_t *starts;		/* per patch: its point's block start, or 0 */
	uint64_t *cands;		/* block starts and targets in reach of
					   int3 points, ascending, once */
	size_t ncands, cands_cap;
	struct rd_src *srcs;		/* by target, then address */
	size_t nsrcs, srcs_cap;
	struct rd_point *pts;		/* by address */
	size_t npts;
	struct rd_win *wins;		/* by address */
	size_t nwins;
	bool *conv;			/* per patch: made a redirect, or given
					   led targets inside its window */
	struct pl_ranges copied;	/* windows of the plan: their code is copied */
	struct pl_ranges written;	/* jump windows and hops: bytes other patches write */
	struct pl_ranges branches;	/* the branches led so far */
	struct pl_ranges redirected;	/* the redirects' windows: their code runs
					   only from their trampolines now */
};

static int cmp_src(const void *a, const void *b)
{
	const struct rd_src *x = a, *y = b;

	if (x->target != y->target)
		return x->target < y->target ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_point(const void *a, const void *b)
{
	const struct rd_point *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* ---- who reaches a point ------------------------------------------------ */

/*
 * Whether code runs on into the instruction `at` of g (or g's end, at ==
 * g->ninsns): the instruction before, fill skipped, does not leave and is
 * no call that never returns, or the fill is a target.  *after_call: the
 * instruction right before is such a call (its return is a target).
 */
static bool runs_into(struct dp_object *obj, const struct dp_function *g, uint32_t at,
		      bool *after_call)
{
	for (uint32_t k = at; k-- > 0;) {
		uint64_t va = g->start + g->insn_off[k];
		struct dp_insn insn;
		const uint8_t *bytes;

		if (pl_decode_at(obj, va, &insn, &bytes))
			return true;
		if (!pl_is_fill(&insn, bytes)) {
			*after_call = k + 1 == at && an_call_noreturn(obj, &insn, va);
			return !pl_leaves(&insn) && !*after_call;
		}
		if (dp_object_target_kind(obj, va))
			return true;
	}
	return true;		/* the function's start runs into it */
}

/* Whether anything runs on into `start`, the start of fn or an instruction of it. */
static bool falls_into(struct dp_object *obj, const struct dp_function *fn, uint64_t start,
		       bool *after_call)
{
	struct dp_elf *elf = dp_object_elf(obj);
	const struct dp_function *g;
	uint64_t g0 = start;
	long i;

	*after_call = false;
	if (start != fn->start) {
		i = dp_function_insn_index(fn, start);
		return i <= 0 || runs_into(obj, fn, (uint32_t)i, after_call);
	}
	g = dp_object_function_at(obj, start - 1);
	if (g) {
		if (g->start + g->size == start)
			return (g->flags & DP_FN_UNDECODED) || runs_into(obj, g, g->ninsns, after_call);
		i = dp_function_insn_index(g, start);
		return i <= 0 || runs_into(obj, g, (uint32_t)i, after_call);
	}
	/* Bytes of no function before it: fill after one that leaves. */
	while (start - g0 < RD_GAP_MAX && g0 > 0 && dp_elf_code(elf, g0 - 1, 1) &&
	       !dp_object_function_at(obj, g0 - 1))
		g0--;
	return g0 == start || !pl_gap_dead(obj, g0, start);
}

/* Whether only direct branches lead to `start`, a block of fn. */
static bool branches_only(struct dp_object *obj, const struct dp_function *fn, uint64_t start)
{
	unsigned kind = dp_object_target_kind(obj, start);
	unsigned allowed = DP_TGT_DIRECT;
	bool after_call;

	if (!(kind & DP_TGT_DIRECT) || falls_into(obj, fn, start, &after_call))
		return false;
	/* A function no symbol names and no value holds: a .cold part. */
	if (start == fn->start && !(fn->flags & DP_FN_NAMED))
		allowed |= DP_TGT_FUNCTION;
	/* After a call that never returns: no return lands here. */
	if (after_call)
		allowed |= DP_TGT_RETURN;
	return !(kind & ~allowed);
}

/*
 * The start of the point's block, if only direct branches lead there: the
 * point, or the nearest target before it from which straight-line code
 * (nothing that leaves, no call) runs into the point.  0 if none.
 */
static uint64_t block_start(struct dp_object *obj, const struct dp_function *fn, uint64_t point)
{
	long i = fn ? dp_function_insn_index(fn, point) : -1;

	if (i < 0 || (fn->flags & (DP_FN_INDIRECT | DP_FN_UNDECODED)))
		return 0;
	for (long k = i; k >= 0 && i - k < DP_WINDOW_MAX_INSNS; k--) {
		uint64_t va = fn->start + fn->insn_off[k];
		struct dp_insn insn;
		const uint8_t *bytes;

		if (k < i && (pl_decode_at(obj, va, &insn, &bytes) || pl_leaves(&insn) ||
			      insn.flow == DP_FLOW_CALL || insn.flow == DP_FLOW_CALL_IND))
			return 0;
		if (dp_object_target_kind(obj, va))
			return branches_only(obj, fn, va) ? va : 0;
	}
	return 0;
}

/* Every direct branch of the object to a candidate, once.  0 or -ENOMEM. */
static int sources_find(struct rd_state *st)
{
	const struct dp_function *fns;
	size_t nfns, w = 0;
	int err = dp_object_functions(st->obj, &fns, &nfns);

	if (err)
		return err;
	for (size_t f = 0; f < nfns; f++) {
		const struct dp_function *fn = &fns[f];
		const uint8_t *code = dp_elf_code(dp_object_elf(st->obj), fn->start, fn->size);

		for (uint32_t i = 0; code && i < fn->ninsns; i++) {
			uint32_t off = fn->insn_off[i];
			uint64_t addr = fn->start + off, t;
			struct dp_insn in;
			struct rd_src *s;
			size_t k;

			if (dp_insn_decode(code + off, fn->size - off, &in) || !(in.attr & DP_ATTR_REL))
				continue;
			t = dp_insn_target(&in, addr);
			k = DP_BOUND_KEYS(st->cands, st->ncands, t, DP_BOUND_LOWER);
			if (k == st->ncands || st->cands[k] != t)
				continue;
			if (DP_ARRAY_RESERVE(st->srcs, st->srcs_cap, st->nsrcs, 64))
				return -ENOMEM;
			s = &st->srcs[st->nsrcs++];
			s->target = t;
			s->addr = addr;
			s->len = in.len;
			s->disp_off = in.imm_off;
			s->disp_len = in.imm_size;
			s->movable = (in.flow == DP_FLOW_JMP || in.flow == DP_FLOW_JCC ||
				      in.flow == DP_FLOW_LOOP) &&
				     (in.imm_size == 1 || in.imm_size == 4) &&
				     in.imm_off + in.imm_size == in.len;
			s->inner = s->movable && in.flow != DP_FLOW_LOOP;
		}
	}
	if (st->nsrcs > 1)
		qsort(st->srcs, st->nsrcs, sizeof(*st->srcs), cmp_src);
	/* Nested function ranges decode the same branch twice. */
	for (size_t i = 0; i < st->nsrcs; i++)
		if (!w || st->srcs[w - 1].addr != st->srcs[i].addr ||
		    st->srcs[w - 1].target != st->srcs[i].target)
			st->srcs[w++] = st->srcs[i];
	st->nsrcs = w;
	return 0;
}

/* ---- the window --------------------------------------------------------- */

/* The patch holding a point at va, or -1. */
static long point_patch(const struct rd_state *st, uint64_t va)
{
	size_t k = DP_BOUND(st->pts, st->npts, addr, va, DP_BOUND_LOWER);

	return k < st->npts && st->pts[k].addr == va ? (long)st->pts[k].patch : -1;
}

/*
 * The point's instruction and those after it, up to one that leaves: none
 * a target, none a point of a patch other than an int3, all movable, a
 * call or syscall last.  False when not even the point's own can move.
 */
static bool window_build(struct rd_state *st, const struct dp_function *fn, uint64_t point,
			 struct dp_window *w)
{
	struct dp_object *obj = st->obj;
	uint64_t end = fn->start + fn->size, va = point;
	bool last_only = false;

	memset(w, 0, sizeof(*w));
	w->addr = point;
	while (w->ninsns < DP_WINDOW_MAX_INSNS && va < end) {
		struct dp_insn insn;
		const uint8_t *bytes;
		bool inner_target = false;
		long pp;

		pp = point_patch(st, va);
		if (pp >= 0 && st->p[pp].method != DP_SITE_INT3)
			break;
		if (w->ninsns && (dp_object_target_kind(obj, va) || last_only ||
				  pl_leaves(&w->insns[w->ninsns - 1])))
			break;
		if (dp_function_insn_index(fn, va) < 0 || pl_decode_at(obj, va, &insn, &bytes))
			break;
		for (uint64_t b = va + 1; b < va + insn.len; b++)
			inner_target |= dp_object_target_kind(obj, b) != 0;
		if (inner_target || dp_reloc_check(&insn, &last_only) != DP_REASON_NONE ||
		    w->len + insn.len > DP_WINDOW_MAX_LEN)
			break;
		w->insns[w->ninsns] = insn;
		w->off[w->ninsns++] = w->len;
		w->len += insn.len;
		va += insn.len;
	}
	if (!w->ninsns)
		return false;
	memcpy(w->bytes, dp_elf_code(dp_object_elf(obj), w->addr, w->len), w->len);
	return true;
}

/* ---- one point ---------------------------------------------------------- */

/* Takes the int3 points inside w over into patch i.  False if they do not fit. */
static bool points_absorb(struct rd_state *st, size_t i, const struct dp_window *w)
{
	struct dp_patch *p = &st->p[i];
	unsigned total = p->npoints;

	for (unsigned k = 0; k < w->ninsns; k++) {
		long pp = point_patch(st, w->addr + w->off[k]);

		if (pp >= 0 && (size_t)pp != i)
			total += st->p[pp].npoints;
	}
	if (total > DP_PATCH_MAX_POINTS)
		return false;
	for (unsigned k = 0; k < w->ninsns; k++) {
		long pp = point_patch(st, w->addr + w->off[k]);
		struct dp_patch *q = pp >= 0 && (size_t)pp != i ? &st->p[pp] : NULL;

		for (unsigned j = 0; q && j < q->npoints; j++) {
			p->points[p->npoints] = q->points[j];
			p->point_ids[p->npoints++] = q->point_ids[j];
		}
		if (q) {
			q->method = DP_SITE_REFUSED;
			q->npoints = 0;
		}
	}
	return true;
}

/*
 * Where a branch lying in a window of the plan is: that window's patch and
 * instruction, if it is a jump or int3 patch still, and the branch one of
 * its displaced instructions.
 */
static bool via_find(const struct rd_state *st, const struct rd_src *s, struct rd_via *v)
{
	size_t k = DP_BOUND(st->wins, st->nwins, addr, s->addr, DP_BOUND_UPPER);
	const struct dp_patch *q;

	if (!k || s->addr >= st->wins[k - 1].end)
		return false;
	q = &st->p[st->wins[k - 1].patch];
	if ((q->method != DP_SITE_JUMP && q->method != DP_SITE_INT3) || !q->npoints ||
	    st->conv[st->wins[k - 1].patch])
		return false;
	for (unsigned i = 0; i < q->win.ninsns; i++)
		if (q->win.addr + q->win.off[i] == s->addr && q->win.insns[i].len == s->len &&
		    !q->redirect_to[i]) {
			v->patch = st->wins[k - 1].patch;
			v->insn = i;
			return true;
		}
	return false;
}

static void redirect_set(struct dp_object *obj, struct dp_redirect *r, const struct rd_src *s)
{
	const uint8_t *b = dp_elf_code(dp_object_elf(obj), s->addr + s->disp_off, s->disp_len);

	memset(r, 0, sizeof(*r));
	r->addr = s->addr;
	r->len = s->len;
	r->disp_off = s->disp_off;
	r->disp_len = s->disp_len;
	if (b)
		memcpy(r->bytes, b, s->disp_len);
}

/* The branches that will lead into a window, while it is being decided. */
struct rd_lead {
	const struct rd_src *written[DP_PATCH_MAX_REDIRECTS];
	uint8_t to[DP_PATCH_MAX_REDIRECTS];	/* the instruction each leads to */
	unsigned nwritten;
	struct rd_via via[DP_WINDOW_MAX_INSNS * 2];
	uint64_t via_to[DP_WINDOW_MAX_INSNS * 2];
	unsigned nvia;
	uint64_t lo, hi;		/* where a hop serves every rel8 */
	int rel8_to;			/* the instruction every rel8 leads to, or -1 */
};

static void lead_init(struct rd_lead *l)
{
	memset(l, 0, sizeof(*l));
	l->hi = UINT64_MAX;
	l->rel8_to = -1;
}

/*
 * Adds the branches to `target`, instruction m of w, to l: each movable,
 * none another redirect's; one in w itself (a jmp or jcc) needs nothing:
 * its relocated copy goes to the target's (tramp.c); one in another window
 * of the plan is led through that window's relocated copy; rel8s all lead
 * to one instruction, through one hop.  False if one cannot be led, or
 * there is none.
 */
static bool lead_add(struct rd_state *st, uint64_t target, unsigned m, const struct dp_window *w,
		     struct rd_lead *l)
{
	size_t k = DP_BOUND(st->srcs, st->nsrcs, target, target, DP_BOUND_LOWER), first = k;

	for (; k < st->nsrcs && st->srcs[k].target == target; k++) {
		const struct rd_src *s = &st->srcs[k];

		if (!s->movable || pl_ranges_overlap(&st->branches, s->addr, s->addr + s->len))
			return false;
		if (s->addr >= w->addr && s->addr + s->len <= w->addr + w->len) {
			if (!s->inner)
				return false;
			continue;
		}
		if (s->addr < w->addr + w->len && s->addr + s->len > w->addr)
			return false;
		/* In a window, only its relocated copy runs: that one is led. */
		if (pl_ranges_overlap(&st->copied, s->addr, s->addr + s->len)) {
			if (st->alone || l->nvia == DP_WINDOW_MAX_INSNS * 2 || !via_find(st, s, &l->via[l->nvia]))
				return false;
			l->via_to[l->nvia++] = target;
			continue;
		}
		if (l->nwritten == DP_PATCH_MAX_REDIRECTS)
			return false;
		l->written[l->nwritten] = s;
		l->to[l->nwritten++] = (uint8_t)m;
		if (s->disp_len == 1) {
			uint64_t end = s->addr + s->len;

			/* One hop serves them all: its first byte in reach of each. */
			if (l->rel8_to >= 0 && (unsigned)l->rel8_to != m)
				return false;
			l->rel8_to = (int)m;
			if (end > RD_REL8_BACK && end - RD_REL8_BACK > l->lo)
				l->lo = end - RD_REL8_BACK;
			if (end + RD_REL8_FWD < l->hi)
				l->hi = end + RD_REL8_FWD;
		}
	}
	return k > first;
}

/* The hop the rel8s of l need, if any: false when there is no room. */
static int lead_hop(struct rd_state *st, const struct rd_lead *l, struct pl_taken *t,
		    struct dp_hop *hop, bool *ok)
{
	memset(hop, 0, sizeof(*hop));
	*ok = true;
	if (l->rel8_to < 0)
		return 0;
	return pl_hop_take_within(st->obj, l->lo, l->hi, t, hop, ok);
}

/*
 * Makes patch i serve window w with the branches of l led into it (and
 * the int3 points in w): its method set by the caller.  False when the
 * points do not fit.  0 or -ENOMEM in *err.
 */
static bool lead_commit(struct rd_state *st, size_t i, const struct dp_window *w,
			const struct rd_lead *l, const struct dp_hop *hop, int *err)
{
	struct dp_patch *p = &st->p[i];

	*err = 0;
	if (!points_absorb(st, i, w))
		return false;	/* a hop stays taken: harmless */
	p->reason = DP_REASON_NONE;
	/* Branches inside the window alone lead nothing: a plain jump. */
	p->led = l->nwritten || l->nvia;
	p->win = *w;
	p->hop = *hop;
	p->hop_to = (uint8_t)(l->rel8_to > 0 ? l->rel8_to : 0);
	p->nredirects = 0;
	st->conv[i] = true;
	for (unsigned r = 0; r < l->nwritten && !*err; r++) {
		const struct rd_src *s = l->written[r];

		redirect_set(st->obj, &p->redirects[p->nredirects], s);
		p->redirects[p->nredirects++].to = l->to[r];
		*err = pl_ranges_add(&st->branches, s->addr, s->addr + s->len);
	}
	/* No later window may take these windows' branches in its own. */
	for (unsigned r = 0; r < l->nvia && !*err; r++) {
		const struct dp_patch *q = &st->p[l->via[r].patch];
		uint64_t at = q->win.addr + q->win.off[l->via[r].insn];

		st->p[l->via[r].patch].redirect_to[l->via[r].insn] = l->via_to[r];
		*err = pl_ranges_add(&st->branches, at, at + q->win.insns[l->via[r].insn].len);
	}
	/* Hooks in window order, as the trampoline reaches them. */
	for (unsigned m = 1; m < p->npoints; m++)
		for (unsigned j = m; j > 0 && p->points[j - 1] > p->points[j]; j--) {
			uint64_t a = p->points[j];
			size_t id = p->point_ids[j];

			p->points[j] = p->points[j - 1];
			p->point_ids[j] = p->point_ids[j - 1];
			p->points[j - 1] = a;
			p->point_ids[j - 1] = id;
		}
	if (!*err)
		*err = pl_ranges_add(&st->copied, w->addr, w->addr + w->len);
	return true;
}

/*
 * Turns the int3 patch i into a redirect from its block's start if it can:
 * its window must reach the patch's point.  0 or -ENOMEM.
 */
static int redirect_try(struct rd_state *st, size_t i, uint64_t start, struct pl_taken *t)
{
	struct dp_patch *p = &st->p[i];
	struct dp_hop hop;
	struct rd_lead l;
	struct dp_window w;
	bool ok;
	int err;

	lead_init(&l);
	/* Another jump's bytes or hooks in it would be passed by. */
	if (!window_build(st, p->fn, start, &w) || p->win.addr >= w.addr + w.len ||
	    pl_ranges_overlap(&st->branches, w.addr, w.addr + w.len) ||
	    pl_ranges_overlap(&st->redirected, w.addr, w.addr + w.len) ||
	    pl_ranges_overlap(&st->written, w.addr, w.addr + w.len) ||
	    pl_ranges_overlap(&t->hops, w.addr, w.addr + w.len) || !lead_add(st, start, 0, &w, &l))
		return 0;
	err = lead_hop(st, &l, t, &hop, &ok);
	if (err || !ok)
		return err;
	if (lead_commit(st, i, &w, &l, &hop, &err) && !err) {
		p->method = DP_SITE_REDIRECT;
		err = pl_ranges_add(&st->redirected, w.addr, w.addr + w.len);
	}
	return err;
}

/*
 * The window [k, j] of fn's instructions: whole instructions that can move
 * (a call only last), no target inside one.  False when there is none.
 */
static bool window_span(struct rd_state *st, const struct dp_function *fn, long k, long j,
			struct dp_window *w)
{
	bool last_only = false;

	memset(w, 0, sizeof(*w));
	w->addr = fn->start + fn->insn_off[k];
	for (long m = k; m <= j; m++) {
		uint64_t va = fn->start + fn->insn_off[m];
		struct dp_insn insn;
		const uint8_t *bytes;

		if (last_only || pl_decode_at(st->obj, va, &insn, &bytes) ||
		    dp_reloc_check(&insn, &last_only) != DP_REASON_NONE ||
		    w->len + insn.len > DP_WINDOW_MAX_LEN || w->ninsns == DP_WINDOW_MAX_INSNS)
			return false;
		for (uint64_t b = va + 1; b < va + insn.len; b++)
			if (dp_object_target_kind(st->obj, b))
				return false;
		w->insns[w->ninsns] = insn;
		w->off[w->ninsns++] = w->len;
		w->len += insn.len;
	}
	memcpy(w->bytes, dp_elf_code(dp_object_elf(st->obj), w->addr, w->len), w->len);
	return true;
}

/*
 * Tries window w for the int3 patch i: every target in it past its first
 * byte led (lead_add), their rel8s through one hop.  *taken when the patch
 * got it.  0 or -ENOMEM.
 */
static int interior_window(struct rd_state *st, size_t i, const struct dp_window *w,
			   struct pl_taken *t, bool *taken)
{
	struct dp_hop hop;
	struct rd_lead l;
	bool ok = true;
	int err;

	*taken = false;
	if (w->len < PL_JMP_LEN || pl_ranges_overlap(&st->written, w->addr, w->addr + w->len) ||
	    pl_ranges_overlap(&st->branches, w->addr, w->addr + w->len) ||
	    pl_ranges_overlap(&st->redirected, w->addr, w->addr + w->len) ||
	    pl_ranges_overlap(&t->hops, w->addr, w->addr + w->len))
		return 0;
	lead_init(&l);
	for (unsigned m = 0; m < w->ninsns && ok; m++) {
		uint64_t va = w->addr + w->off[m];
		unsigned kind = dp_object_target_kind(st->obj, va);
		long pp = point_patch(st, va);

		/* Another jump's hooks would be passed by. */
		if (pp >= 0 && (size_t)pp != i && st->p[pp].method != DP_SITE_INT3)
			ok = false;
		else if (m && kind)
			ok = kind == DP_TGT_DIRECT && lead_add(st, va, m, w, &l);
	}
	if (!ok)
		return 0;
	err = lead_hop(st, &l, t, &hop, &ok);
	if (err || !ok)
		return err;	/* no hop: a wider window may hold the rel8s */
	if (lead_commit(st, i, w, &l, &hop, &err) && !err) {
		st->p[i].method = DP_SITE_JUMP;
		*taken = true;
		err = pl_ranges_add(&st->written, w->addr, w->addr + w->len);
	}
	return err;
}

/*
 * Gives the int3 patch i a jump whose window holds targets after its first
 * byte, when every way to each is a direct branch that can be led to the
 * matching instruction of the trampoline (rel32s written, rel8s through
 * the patch's hop, those in other windows through their relocated copy),
 * or is a jmp or jcc inside the window itself (its copy goes to the
 * target's copy: tramp.c).  Windows that end with the point's instruction
 * come first, starting up to 7 instructions before it (further back when
 * the branches a shorter one would lead have no hop in reach: they may be
 * inside); then windows that run on past it (a short .cold part whose
 * next instruction a loop comes back to, a ret packed against the next
 * block).  The branches are led before the window is written (plan.h).
 * 0 or -ENOMEM.
 */
static int interior_try(struct rd_state *st, size_t i, struct pl_taken *t)
{
	struct dp_patch *p = &st->p[i];
	const struct dp_function *fn = p->fn;
	long idx = fn ? dp_function_insn_index(fn, p->win.addr) : -1;

	if (idx < 0 || (fn->flags & (DP_FN_INDIRECT | DP_FN_UNDECODED)))
		return 0;
	for (long j = idx; j < (long)fn->ninsns && j - idx < DP_WINDOW_MAX_INSNS; j++) {
		for (long k = idx; k >= 0 && j - k < DP_WINDOW_MAX_INSNS; k--) {
			struct dp_window w;
			bool taken;
			int err;

			if (!window_span(st, fn, k, j, &w))
				break;	/* no better from further back */
			err = interior_window(st, i, &w, t, &taken);
			if (err || taken)
				return err;
		}
	}
	return 0;
}

/* ---- the plan ----------------------------------------------------------- */

static int cand_push(struct rd_state *st, uint64_t addr)
{
	if (DP_ARRAY_RESERVE(st->cands, st->cands_cap, st->ncands, 64))
		return -ENOMEM;
	st->cands[st->ncands++] = addr;
	return 0;
}

/* The direct targets a window holding q's point could hold. */
static int interior_cands(struct rd_state *st, const struct dp_patch *q)
{
	const struct dp_function *fn = q->fn;
	long idx = fn ? dp_function_insn_index(fn, q->win.addr) : -1;
	int err = 0;

	if (idx < 0)
		return 0;
	for (long k = idx > DP_WINDOW_MAX_INSNS ? idx - DP_WINDOW_MAX_INSNS + 1 : 1;
	     k < (long)fn->ninsns && k - idx < DP_WINDOW_MAX_INSNS && !err; k++) {
		uint64_t va = fn->start + fn->insn_off[k];

		if (dp_object_target_kind(st->obj, va) == DP_TGT_DIRECT)
			err = cand_push(st, va);
	}
	return err;
}

static int state_init(struct rd_state *st)
{
	size_t np = 0;
	int err;

	for (size_t i = 0; i < st->n; i++) {
		const struct dp_patch *q = &st->p[i];

		err = 0;
		np += q->npoints;
		if (q->method == DP_SITE_JUMP || q->method == DP_SITE_INT3)
			err = pl_ranges_add(&st->copied, q->win.addr - q->win.lead,
					    q->win.addr + q->win.len);
		if (!err && q->method == DP_SITE_JUMP)
			err = pl_ranges_add(&st->written, q->win.addr - q->win.lead,
					    q->win.addr + q->win.len);
		if (!err && q->hop.len)
			err = pl_ranges_add(&st->copied, q->hop.addr, q->hop.addr + q->hop.len);
		if (!err && q->hop.len)
			err = pl_ranges_add(&st->written, q->hop.addr, q->hop.addr + q->hop.len);
		if (err)
			return err;
	}
	st->starts = calloc(st->n ? st->n : 1, sizeof(*st->starts));
	st->pts = malloc((np ? np : 1) * sizeof(*st->pts));
	st->wins = malloc((st->n ? st->n : 1) * sizeof(*st->wins));
	st->conv = calloc(st->n ? st->n : 1, sizeof(*st->conv));
	if (!st->starts || !st->pts || !st->wins || !st->conv)
		return -ENOMEM;
	for (size_t i = 0; i < st->n; i++) {
		const struct dp_patch *q = &st->p[i];

		for (unsigned k = 0; k < q->npoints; k++)
			st->pts[st->npts++] = (struct rd_point){ q->points[k], i };
		if (q->method == DP_SITE_JUMP || q->method == DP_SITE_INT3)
			st->wins[st->nwins++] = (struct rd_win){ q->win.addr, q->win.addr + q->win.len, i };
		if (q->method == DP_SITE_INT3 && q->npoints)
			st->starts[i] = block_start(st->obj, q->fn, q->win.addr);
		if (st->starts[i] && (err = cand_push(st, st->starts[i])))
			return err;
		if (q->method == DP_SITE_INT3 && q->npoints && (err = interior_cands(st, q)))
			return err;
	}
	qsort(st->pts, st->npts, sizeof(*st->pts), cmp_point);
	if (st->ncands > 1) {
		size_t w = 1;

		if ((err = an_u64_sort(st->cands, st->ncands)))
			return err;
		for (size_t i = 1; i < st->ncands; i++)
			if (st->cands[i] != st->cands[w - 1])
				st->cands[w++] = st->cands[i];
		st->ncands = w;
	}
	return 0;
}

int pl_redirects_plan(struct dp_object *obj, struct dp_patch *p, size_t n, unsigned flags,
		      struct pl_taken *t)
{
	struct rd_state st = { .obj = obj, .p = p, .n = n, .alone = flags & DP_PLAN_ALONE };
	int err = state_init(&st);

	if (!err && st.ncands)
		err = sources_find(&st);
	for (size_t i = 0; i < n && !err && st.ncands; i++)
		if (p[i].method == DP_SITE_INT3 && p[i].npoints && st.starts[i])
			err = redirect_try(&st, i, st.starts[i], t);
	for (size_t i = 0; i < n && !err && st.ncands; i++)
		if (p[i].method == DP_SITE_INT3 && p[i].npoints)
			err = interior_try(&st, i, t);
	free(st.starts);
	free(st.conv);
	free(st.cands);
	free(st.srcs);
	free(st.pts);
	free(st.wins);
	free(st.copied.v);
	free(st.written.v);
	free(st.redirected.v);
	free(st.branches.v);
	return err;
}
