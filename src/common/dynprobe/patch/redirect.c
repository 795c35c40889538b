/*
 * Redirects (DP_PLAN_REDIRECT, plan.h): a point that only direct branches
 * reach gets none of its own bytes written; the branches are pointed at its
 * trampoline instead.  This gives a jump to sites with no room for one: a
 * one-byte ret between two branch targets, or a .cold part packed against
 * the next function with no fill to hop through, which the hot part enters
 * by jmp and jcc rel32.
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

/* A direct branch to a candidate point. */
struct rd_src {
	uint64_t target;
	uint64_t addr;
	uint8_t len, disp_off, disp_len;
	bool movable;		/* a jmp, jcc, loop or jrcxz with a rel8 or rel32 */
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
	uint64_t *starts;		/* per patch: its point's block start, or 0 */
	uint64_t *cands;		/* the block starts, ascending, once */
	size_t ncands;
	struct rd_src *srcs;		/* by target, then address */
	size_t nsrcs, srcs_cap;
	struct rd_point *pts;		/* by address */
	size_t npts;
	struct rd_win *wins;		/* by address */
	size_t nwins;
	struct pl_ranges copied;	/* windows of the plan: their code is copied */
	struct pl_ranges written;	/* jump windows and hops: bytes other patches write */
	struct pl_ranges branches;	/* the accepted redirects' branches */
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
	if ((q->method != DP_SITE_JUMP && q->method != DP_SITE_INT3) || !q->npoints)
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

/*
 * Turns the int3 patch i into a redirect from its block's start if it can:
 * its window must reach the patch's point.  0 or -ENOMEM.
 */
static int redirect_try(struct rd_state *st, size_t i, uint64_t start, struct pl_taken *t)
{
	struct dp_patch *p = &st->p[i];
	size_t k = DP_BOUND(st->srcs, st->nsrcs, target, start, DP_BOUND_LOWER), first = k;
	const struct rd_src *rel8 = NULL, *written[DP_PATCH_MAX_REDIRECTS];
	struct rd_via via[DP_WINDOW_MAX_INSNS * 2];
	unsigned nwritten = 0, nvia = 0;
	struct dp_hop hop = { 0 };
	struct dp_window w;
	bool ok;
	int err;

	/* Another jump's bytes or hooks in it would be passed by. */
	if (!window_build(st, p->fn, start, &w) || p->win.addr >= w.addr + w.len ||
	    pl_ranges_overlap(&st->branches, w.addr, w.addr + w.len) ||
	    pl_ranges_overlap(&st->written, w.addr, w.addr + w.len) ||
	    pl_ranges_overlap(&t->hops, w.addr, w.addr + w.len))
		return 0;
	for (; k < st->nsrcs && st->srcs[k].target == start; k++) {
		const struct rd_src *s = &st->srcs[k];

		if (!s->movable || pl_ranges_overlap(&st->branches, s->addr, s->addr + s->len) ||
		    (s->addr < w.addr + w.len && s->addr + s->len > w.addr))
			return 0;
		/* In a window, only its relocated copy runs: that one is led. */
		if (pl_ranges_overlap(&st->copied, s->addr, s->addr + s->len)) {
			if (nvia == DP_WINDOW_MAX_INSNS * 2 || !via_find(st, s, &via[nvia]))
				return 0;
			nvia++;
			continue;
		}
		if (nwritten == DP_PATCH_MAX_REDIRECTS)
			return 0;
		written[nwritten++] = s;
		if (s->disp_len == 1) {
			if (rel8)
				return 0;	/* one hop serves one rel8 */
			rel8 = s;
		}
	}
	if (k == first)
		return 0;
	if (rel8) {
		err = pl_hop_take_from(st->obj, rel8->addr + rel8->len, t, &hop, &ok);
		if (err || !ok)
			return err;
	}
	if (!points_absorb(st, i, &w))
		return 0;	/* the hop stays taken: harmless */
	p->method = DP_SITE_REDIRECT;
	p->reason = DP_REASON_NONE;
	p->win = w;
	p->hop = hop;
	p->nredirects = 0;
	for (unsigned r = 0; r < nwritten; r++) {
		redirect_set(st->obj, &p->redirects[p->nredirects++], written[r]);
		err = pl_ranges_add(&st->branches, written[r]->addr,
				    written[r]->addr + written[r]->len);
		if (err)
			return err;
	}
	/* No later redirect may take these windows' branches in its own. */
	for (unsigned r = 0; r < nvia; r++) {
		const struct dp_patch *q = &st->p[via[r].patch];
		uint64_t at = q->win.addr + q->win.off[via[r].insn];

		st->p[via[r].patch].redirect_to[via[r].insn] = start;
		err = pl_ranges_add(&st->branches, at, at + q->win.insns[via[r].insn].len);
		if (err)
			return err;
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
	return pl_ranges_add(&st->copied, w.addr, w.addr + w.len);
}

/* ---- the plan ----------------------------------------------------------- */

static int state_init(struct rd_state *st)
{
	size_t np = 0;

	for (size_t i = 0; i < st->n; i++) {
		const struct dp_patch *q = &st->p[i];
		int err = 0;

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
	st->cands = malloc((st->n ? st->n : 1) * sizeof(*st->cands));
	st->pts = malloc((np ? np : 1) * sizeof(*st->pts));
	st->wins = malloc((st->n ? st->n : 1) * sizeof(*st->wins));
	if (!st->starts || !st->cands || !st->pts || !st->wins)
		return -ENOMEM;
	for (size_t i = 0; i < st->n; i++) {
		const struct dp_patch *q = &st->p[i];

		for (unsigned k = 0; k < q->npoints; k++)
			st->pts[st->npts++] = (struct rd_point){ q->points[k], i };
		if (q->method == DP_SITE_JUMP || q->method == DP_SITE_INT3)
			st->wins[st->nwins++] = (struct rd_win){ q->win.addr, q->win.addr + q->win.len, i };
		if (q->method == DP_SITE_INT3 && q->npoints)
			st->starts[i] = block_start(st->obj, q->fn, q->win.addr);
		if (st->starts[i])
			st->cands[st->ncands++] = st->starts[i];
	}
	qsort(st->pts, st->npts, sizeof(*st->pts), cmp_point);
	/* Patches come by address: so do the block starts, repeats aside. */
	if (st->ncands > 1) {
		size_t w = 1;

		for (size_t i = 1; i < st->ncands; i++)
			if (st->cands[i] != st->cands[w - 1])
				st->cands[w++] = st->cands[i];
		st->ncands = w;
	}
	return 0;
}

int pl_redirects_plan(struct dp_object *obj, struct dp_patch *p, size_t n, struct pl_taken *t)
{
	struct rd_state st = { .obj = obj, .p = p, .n = n };
	int err = state_init(&st);

	if (!err && st.ncands)
		err = sources_find(&st);
	for (size_t i = 0; i < n && !err && st.ncands; i++)
		if (p[i].method == DP_SITE_INT3 && p[i].npoints && st.starts[i])
			err = redirect_try(&st, i, st.starts[i], t);
	free(st.starts);
	free(st.cands);
	free(st.srcs);
	free(st.pts);
	free(st.wins);
	free(st.copied.v);
	free(st.written.v);
	free(st.branches.v);
	return err;
}
