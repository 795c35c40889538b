/*
 * Site planning (see plan.h): windows for jumps (fill.c says where they may
 * end in fill and where hops go), the int3 fallback, the refusals, and the
 * merging of many points into patches.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf.h"
#include "patch/plan-internal.h"
#include "sorted.h"
#include "x86/reloc.h"

const char *dp_site_method_str(enum dp_site_method method)
{
	switch (method) {
	case DP_SITE_JUMP: return "jump";
	case DP_SITE_INT3: return "int3";
	case DP_SITE_REDIRECT: return "redirect";
	default: return "refused";
	}
}

static bool is_endbr64(const struct dp_insn *insn, const uint8_t *bytes)
{
	return insn->len == 4 && bytes[0] == 0xf3 && bytes[1] == 0x0f && bytes[2] == 0x1e &&
	       bytes[3] == 0xfa;
}

/* The window's original bytes: code, and padding past the last section. */
static void window_copy_bytes(struct dp_object *obj, struct dp_window *w)
{
	const uint8_t *p = dp_elf_code(dp_object_elf(obj), w->addr, w->len);

	if (p) {
		memcpy(w->bytes, p, w->len);
		return;
	}
	for (unsigned i = 0; i < w->len; i++) {
		p = dp_elf_code(dp_object_elf(obj), w->addr + i, 1);
		if (!p)
			p = pl_gap_bytes(obj, w->addr + i, 1);
		if (p)
			w->bytes[i] = *p;
	}
}

/*
 * Builds a window from the instruction at `start` that covers `must` (an
 * instruction start at or after it), and at least `need` bytes: 5 for a
 * jmp rel32, 2 for the jmp rel8 of a hop.  On failure, *stop is the address
 * of the obstacle: one after `must` means that a window starting earlier,
 * needing fewer bytes after `must`, could still fit.
 */
static enum dp_reason window_from(struct dp_object *obj, const struct dp_function *fn,
				  bool indirect, uint64_t start, uint64_t must, unsigned need,
				  struct dp_window *w, uint64_t *stop)
{
	uint64_t end = fn->start + fn->size, va = start;
	bool last_only = false;

	memset(w, 0, sizeof(*w));
	w->addr = start;
	while (w->len < need || va <= must) {
		struct dp_insn insn;
		const uint8_t *bytes;
		enum dp_reason r;

		*stop = va;
		/* Past a final ret or jmp, fill (within the function or after
		 * it) makes up the bytes: nothing runs it. */
		if (w->ninsns && va > must && w->len < need &&
		    pl_leaves(&w->insns[w->ninsns - 1]) && pl_dead_fill(obj, fn, va, need - w->len)) {
			w->len = (uint8_t)need;
			break;
		}
		if (va >= end)
			return DP_REASON_SHORT;
		if (w->ninsns) {
			if (dp_object_target_kind(obj, va))
				return DP_REASON_BRANCH_TARGET;
			if (indirect)
				return DP_REASON_INDIRECT_JUMPS;
			if (last_only)
				return DP_REASON_CALL_INSIDE;
		}
		if (dp_function_insn_index(fn, va) < 0 || pl_decode_at(obj, va, &insn, &bytes))
			return DP_REASON_UNDECODED_AFTER;
		/* Branches may land inside an instruction too (past a lock
		 * prefix, say): no byte but the window's first may be a target. */
		for (uint64_t b = va + 1; b < va + insn.len; b++) {
			if (dp_object_target_kind(obj, b)) {
				*stop = b;
				return DP_REASON_BRANCH_TARGET;
			}
		}
		r = dp_reloc_check(&insn, &last_only);
		if (r != DP_REASON_NONE)
			return w->ninsns ? DP_REASON_NEIGHBOUR : r;
		if (w->ninsns == DP_WINDOW_MAX_INSNS || w->len + insn.len > DP_WINDOW_MAX_LEN)
			return DP_REASON_NEIGHBOUR;
		w->insns[w->ninsns] = insn;
		w->off[w->ninsns++] = w->len;
		w->len += insn.len;
		va += insn.len;
	}
	window_copy_bytes(obj, w);
	return DP_REASON_NONE;
}

/* A window of `need` bytes that ends with the point's instruction or runs past it. */
static bool window_before(struct dp_object *obj, const struct dp_function *fn, bool indirect,
			  long idx, unsigned need, struct dp_window *w)
{
	uint64_t point = fn->start + fn->insn_off[idx], stop;

	if (dp_object_target_kind(obj, point) || indirect)
		return false;
	for (long k = idx - 1; k >= 0 && idx - k < DP_WINDOW_MAX_INSNS; k--) {
		uint64_t start = fn->start + fn->insn_off[k];
		enum dp_reason r = window_from(obj, fn, indirect, start, point, need, w, &stop);

		if (r == DP_REASON_NONE)
			return true;
		/* An obstacle up to the point stays inside when going further
		 * back; one after it (the next block's branch target after a
		 * ret, say) needs fewer bytes from an earlier start. */
		if (r != DP_REASON_SHORT && stop <= point)
			return false;
		if (k > 0 && dp_object_target_kind(obj, start))
			return false;
	}
	return false;
}

static void set_int3(struct dp_patch *p, uint64_t point, const struct dp_insn *insn,
		     const uint8_t *bytes, enum dp_reason why);

/*
 * A `nop; nop5` at the point (the SDT site of newer <sys/sdt.h> and of
 * <lttng/dynprobe/sdt.h>): the jump goes over the nop5 alone, nothing is
 * displaced and the trampoline copies nothing.  The nop stays and runs in
 * place; the point's hook runs first in the trampoline and sees rip = the
 * point, the state at the point being the same as after the nop.  A branch
 * to the nop5 itself is fine (a window's first byte), one into it is not.
 */
static bool nop_nop5(struct dp_object *obj, const struct dp_function *fn, uint64_t point,
		     struct dp_window *w)
{
	static const uint8_t form[] = { 0x90, 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	const uint8_t *p = dp_elf_code(dp_object_elf(obj), point, sizeof(form));
	struct dp_insn insn;
	const uint8_t *bytes;

	if (!p || memcmp(p, form, sizeof(form)) || dp_function_insn_index(fn, point + 1) < 0 ||
	    pl_decode_at(obj, point + 1, &insn, &bytes) || insn.len != PL_JMP_LEN)
		return false;
	for (uint64_t b = point + 2; b < point + 1 + PL_JMP_LEN; b++)
		if (dp_object_target_kind(obj, b))
			return false;
	memset(w, 0, sizeof(*w));
	w->addr = point + 1;
	w->len = PL_JMP_LEN;
	w->lead = 1;
	w->ninsns = 1;
	w->insns[0] = insn;
	memcpy(w->bytes, bytes, PL_JMP_LEN);
	return true;
}

/* Whether the window's last bytes are fill after its instructions. */
static bool window_in_fill(const struct dp_window *w)
{
	return w->ninsns && w->off[w->ninsns - 1] + w->insns[w->ninsns - 1].len < w->len;
}

/*
 * Plans one point on its own.  A window of fewer than 5 bytes is a jump
 * still waiting for its hop: *no_hop is then why 5 bytes did not fit.
 */
static int plan_site(struct dp_object *obj, uint64_t point, struct dp_patch *out,
		     enum dp_reason *no_hop)
{
	const struct dp_function *fn;
	struct dp_insn insn;
	const uint8_t *bytes;
	bool last_only;
	long idx;
	enum dp_reason r;
	uint64_t stop;
	bool indirect;

	memset(out, 0, sizeof(*out));
	out->method = DP_SITE_REFUSED;
	out->npoints = 1;
	out->points[0] = point;
	*no_hop = DP_REASON_NONE;

	if (!dp_elf_code(dp_object_elf(obj), point, 1)) {
		out->reason = DP_REASON_NOT_CODE;
		return 0;
	}
	fn = dp_object_function_at(obj, point);
	if (!fn) {
		out->reason = DP_REASON_NO_FUNCTION;
		return 0;
	}
	out->fn = fn;
	idx = dp_function_insn_index(fn, point);
	if (idx < 0) {
		out->reason = DP_REASON_NOT_BOUNDARY;
		for (uint32_t i = 0; i < fn->ninsns; i++) {
			uint64_t b = fn->start + fn->insn_off[i];

			if (b < point)
				out->prev_boundary = b;
			else if (!out->next_boundary)
				out->next_boundary = b;
		}
		return 0;
	}
	if (pl_decode_at(obj, point, &insn, &bytes)) {
		out->reason = DP_REASON_INSN_INVALID;
		return 0;
	}
	/* endbr64 stays where indirect branches expect it: probe after it. */
	if (is_endbr64(&insn, bytes) && (uint32_t)idx + 1 < fn->ninsns) {
		point += insn.len;
		idx++;
		out->points[0] = point;
		if (pl_decode_at(obj, point, &insn, &bytes)) {
			out->reason = DP_REASON_INSN_INVALID;
			return 0;
		}
	}
	r = dp_reloc_check(&insn, &last_only);
	if (r != DP_REASON_NONE) {
		out->reason = r;
		return 0;
	}
	if (nop_nop5(obj, fn, point, &out->win)) {
		out->method = DP_SITE_JUMP;
		return 0;
	}

	indirect = fn->flags & DP_FN_INDIRECT;
	out->reason = window_from(obj, fn, indirect, point, point, PL_JMP_LEN, &out->win, &stop);
	/* A window that ends in fill after a ret takes bytes a hop could use:
	 * one ending with the ret does as well when it fits. */
	if (out->reason == DP_REASON_NONE && window_in_fill(&out->win)) {
		struct dp_window before;

		if (window_before(obj, fn, indirect, idx, PL_JMP_LEN, &before))
			out->win = before;
	}
	if (out->reason == DP_REASON_NONE ||
	    window_before(obj, fn, indirect, idx, PL_JMP_LEN, &out->win)) {
		out->method = DP_SITE_JUMP;
		out->reason = DP_REASON_NONE;
		return 0;
	}
	/* Starting earlier was not even tried: say why. */
	if (indirect && idx > 0)
		out->reason = DP_REASON_INDIRECT_JUMPS;
	/* Fewer bytes, for a hop; int3 if no padding takes it. */
	*no_hop = out->reason;
	if (window_from(obj, fn, indirect, point, point, DP_HOP_SITE_LEN, &out->win, &stop) ==
		    DP_REASON_NONE ||
	    window_before(obj, fn, indirect, idx, DP_HOP_SITE_LEN, &out->win)) {
		out->method = DP_SITE_JUMP;
		out->reason = DP_REASON_NONE;
		return 0;
	}
	set_int3(out, point, &insn, bytes, out->reason);
	return 0;
}

/* The point's own instruction under an int3, for `why`. */
static void set_int3(struct dp_patch *p, uint64_t point, const struct dp_insn *insn,
		     const uint8_t *bytes, enum dp_reason why)
{
	memset(&p->win, 0, sizeof(p->win));
	memset(&p->hop, 0, sizeof(p->hop));
	p->method = DP_SITE_INT3;
	p->reason = why;
	p->win.addr = point;
	p->win.len = insn->len;
	p->win.ninsns = 1;
	p->win.insns[0] = *insn;
	memcpy(p->win.bytes, bytes, insn->len);
}

/* int3 on a point whose jump window cannot be had, or a refusal. */
static void fall_back(struct dp_object *obj, struct dp_patch *p, enum dp_reason why)
{
	struct dp_insn insn;
	const uint8_t *bytes;

	if (pl_decode_at(obj, p->points[0], &insn, &bytes)) {
		memset(&p->win, 0, sizeof(p->win));
		memset(&p->hop, 0, sizeof(p->hop));
		p->method = DP_SITE_REFUSED;
		p->reason = DP_REASON_INSN_INVALID;
		return;
	}
	set_int3(p, p->points[0], &insn, bytes, why);
}

int dp_plan_site(struct dp_object *obj, uint64_t point, struct dp_patch *out)
{
	struct pl_taken taken = { 0 };
	enum dp_reason no_hop;
	bool ok = true;
	int err = plan_site(obj, point, out, &no_hop);

	if (err || out->method != DP_SITE_JUMP || out->win.len >= PL_JMP_LEN)
		return err;
	err = pl_ranges_add(&taken.windows, out->win.addr, out->win.addr + out->win.len);
	if (!err)
		err = pl_hop_take(obj, out, &taken, &ok);
	pl_taken_release(&taken);
	if (!err && !ok)
		fall_back(obj, out, no_hop);
	return err;
}

int dp_plan_site_flags(struct dp_object *obj, uint64_t point, unsigned flags,
		       struct dp_patch *out)
{
	struct dp_patch *v = NULL;
	size_t n = 0;
	int err;

	if (!flags)
		return dp_plan_site(obj, point, out);
	err = dp_plan_sites_flags(obj, &point, 1, flags, &v, &n);
	for (size_t i = 0; !err && i < n; i++)
		if (v[i].npoints) {
			*out = v[i];
			out->fn = v[i].fn;
			free(v);
			return 0;
		}
	free(v);
	return err ? err : -EINVAL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_patch_addr(const void *a, const void *b)
{
	const struct dp_patch *x = a, *y = b;

	return cmp_u64(&x->win.addr, &y->win.addr);
}

/* The accepted jump patch whose window holds va as an instruction start,
 * or in its lead (that one first: an earlier window may end with the lead's
 * nop, but the point is the nop5's). */
static struct dp_patch *window_holding(struct dp_patch *jumps, size_t n, uint64_t va)
{
	size_t lo = DP_BOUND(jumps, n, win.addr, va, DP_BOUND_UPPER);

	if (lo < n && va >= jumps[lo].win.addr - jumps[lo].win.lead)
		return &jumps[lo];
	if (!lo)
		return NULL;
	struct dp_patch *p = &jumps[lo - 1];

	for (unsigned i = 0; i < p->win.ninsns; i++)
		if (p->win.addr + p->win.off[i] == va)
			return p;
	return NULL;
}

static void add_point(struct dp_patch *p, uint64_t point, size_t id)
{
	/* In window order: the trampoline calls hooks as it reaches them. */
	unsigned i = p->npoints;

	while (i > 0 && p->points[i - 1] > point) {
		p->points[i] = p->points[i - 1];
		p->point_ids[i] = p->point_ids[i - 1];
		i--;
	}
	p->points[i] = point;
	p->point_ids[i] = id;
	p->npoints++;
}

/*
 * The jump windows, earliest first: one that overlaps an accepted one
 * waits, and the accepted window may grow over its point (a ret right
 * after an entry window), which then becomes one of its hooks.  A window of
 * fewer than 5 bytes is accepted with its hop or not at all, so that a later
 * window overlapping it may still be.  Returns the number kept, in place;
 * noslot[i] tells the points whose own window found no hop.
 */
static int jumps_accept(struct dp_object *obj, struct dp_patch *jumps, size_t *njumps,
			struct pl_taken *taken, bool *noslot)
{
	uint64_t jump_end = 0;
	size_t kept = 0;
	int err;

	for (size_t i = 0; i < *njumps; i++) {
		struct dp_patch *p = &jumps[i];
		bool ok;

		if (kept && p->win.addr < jump_end) {
			struct dp_patch *k = &jumps[kept - 1];
			uint64_t must = p->points[0], stop;
			uint64_t last = k->win.addr + k->win.off[k->win.ninsns - 1];
			unsigned need = k->win.len >= PL_JMP_LEN ? PL_JMP_LEN : DP_HOP_SITE_LEN;
			struct dp_window w;
			/* The nop5 of a `nop; nop5` planned twice (for the nop,
			 * and for the nop5 itself): one window, with the lead. */
			uint8_t lead = k->win.lead;

			if (p->win.addr == k->win.addr && p->win.lead > lead) {
				lead = p->win.lead;
				err = pl_ranges_add(&taken->windows, k->win.addr - lead, k->win.addr);
				if (err)
					return err;
			}
			k->win.lead = lead;
			if (must < last)
				must = last;
			/* Grown, it must not reach a hop's bytes. */
			if (k->fn == p->fn && k->fn &&
			    window_from(obj, k->fn, k->fn->flags & DP_FN_INDIRECT, k->win.addr, must,
					need, &w, &stop) == DP_REASON_NONE &&
			    !pl_ranges_overlap(&taken->hops, w.addr, w.addr + w.len)) {
				err = pl_ranges_add(&taken->windows, w.addr, w.addr + w.len);
				if (err)
					return err;
				k->win = w;
				k->win.lead = lead;
				/* Grown to 5 bytes, it needs no hop (its slot stays taken). */
				if (w.len >= PL_JMP_LEN)
					memset(&k->hop, 0, sizeof(k->hop));
				jump_end = w.addr + w.len;
			}
			continue;
		}
		if (p->win.len < PL_JMP_LEN) {
			err = pl_hop_take(obj, p, taken, &ok);
			if (err)
				return err;
			if (!ok) {
				noslot[p->point_ids[0]] = true;
				continue;
			}
		}
		p->npoints = 0;
		jumps[kept++] = *p;
		jump_end = p->win.addr + p->win.len;
	}
	*njumps = kept;
	return 0;
}

int dp_plan_sites(struct dp_object *obj, const uint64_t *points, size_t n,
		  struct dp_patch **patches, size_t *npatches)
{
	return dp_plan_sites_flags(obj, points, n, 0, patches, npatches);
}

int dp_plan_sites_flags(struct dp_object *obj, const uint64_t *points, size_t n, unsigned flags,
			struct dp_patch **patches, size_t *npatches)
{
	struct dp_patch *single = calloc(n ? n : 1, sizeof(*single));
	struct dp_patch *jumps = calloc(n ? n : 1, sizeof(*jumps));
	struct dp_patch *outp = calloc(n ? n : 1, sizeof(*outp));
	enum dp_reason *no_hop = calloc(n ? n : 1, sizeof(*no_hop));
	bool *noslot = calloc(n ? n : 1, sizeof(*noslot));
	struct pl_taken taken = { 0 };
	size_t njumps = 0, nout = 0;
	int ret = 0;

	if (!single || !jumps || !outp || !no_hop || !noslot) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		ret = plan_site(obj, points[i], &single[i], &no_hop[i]);
		if (ret)
			goto out;
		single[i].point_ids[0] = i;
	}

	/* Bytes any window may take are no hop's: a superset, since some of
	 * these windows will lose to others.  So is the byte of an int3 (a
	 * point may lie on fill). */
	for (size_t i = 0; i < n; i++)
		if (single[i].method == DP_SITE_JUMP)
			jumps[njumps++] = single[i];
	qsort(jumps, njumps, sizeof(*jumps), cmp_patch_addr);
	for (size_t i = 0; i < njumps && !ret; i++)
		ret = pl_ranges_add(&taken.windows, jumps[i].win.addr - jumps[i].win.lead,
				    jumps[i].win.addr + jumps[i].win.len);
	for (size_t i = 0; i < n && !ret; i++)
		if (single[i].method == DP_SITE_INT3)
			ret = pl_ranges_add(&taken.windows, single[i].win.addr, single[i].win.addr + 1);
	if (ret)
		goto out;
	ret = jumps_accept(obj, jumps, &njumps, &taken, noslot);
	if (ret)
		goto out;

	/* Every point goes to the jump window holding it, or stands alone. */
	for (size_t i = 0; i < n; i++) {
		struct dp_patch *s = &single[i];
		struct dp_patch *w = NULL;

		if (s->method != DP_SITE_REFUSED) {
			w = window_holding(jumps, njumps, s->points[0]);
			if (w && w->npoints < DP_PATCH_MAX_POINTS) {
				add_point(w, s->points[0], i);
				continue;
			}
		}
		if (w) {
			/* Its bytes are under a full window: nothing else fits. */
			s->method = DP_SITE_REFUSED;
			s->reason = DP_REASON_OVERLAP;
		} else if (s->method == DP_SITE_JUMP) {
			/* Its window found no hop, or lost to an overlapping one:
			 * int3 on the point. */
			fall_back(obj, s, noslot[i] ? no_hop[i] : DP_REASON_OVERLAP);
		}
		/* Two probes on one int3 share it. */
		if (s->method == DP_SITE_INT3) {
			struct dp_patch *same = NULL;

			for (size_t k = 0; k < nout && !same; k++)
				if (outp[k].method == DP_SITE_INT3 && outp[k].win.addr == s->win.addr &&
				    outp[k].npoints < DP_PATCH_MAX_POINTS)
					same = &outp[k];
			if (same) {
				add_point(same, s->points[0], i);
				continue;
			}
		}
		outp[nout++] = *s;
	}
	for (size_t i = 0; i < njumps; i++)
		outp[nout++] = jumps[i];
	qsort(outp, nout, sizeof(*outp), cmp_patch_addr);
	if (flags & DP_PLAN_REDIRECT) {
		size_t w = 0;

		ret = pl_redirects_plan(obj, outp, nout, flags, &taken);
		if (ret)
			goto out;
		/* Drop the int3s whose points a redirect took over. */
		for (size_t i = 0; i < nout; i++)
			if (outp[i].npoints)
				outp[w++] = outp[i];
		nout = w;
		/* A redirect's window may start before its point. */
		qsort(outp, nout, sizeof(*outp), cmp_patch_addr);
	}
	*patches = outp;
	*npatches = nout;
	outp = NULL;
out:
	free(single);
	free(jumps);
	free(outp);
	free(no_hop);
	free(noslot);
	pl_taken_release(&taken);
	return ret;
}

bool dp_plan_traps_unsafe(const char *path)
{
	static const char *const prefixes[] = {
		"libc.so.", "ld-", "libpthread.so.", "liblttng-ust", "liburcu",
	};
	const char *base = path ? strrchr(path, '/') : NULL;

	base = base ? base + 1 : path;
	if (!base)
		return false;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(base, prefixes[i], strlen(prefixes[i])) && strstr(base, ".so"))
			return true;
	return false;
}

void dp_plan_refuse_unsafe_traps(struct dp_object *obj, struct dp_patch *p, size_t n)
{
	if (!dp_plan_traps_unsafe(dp_elf_path(dp_object_elf(obj))))
		return;
	for (size_t i = 0; i < n; i++)
		if (p[i].method == DP_SITE_INT3) {
			p[i].method = DP_SITE_REFUSED;
			p[i].reason = DP_REASON_TRAP_UNSAFE;
		}
}

const char *dp_plan_led_str(const struct dp_patch *p, char *buf, size_t size)
{
	unsigned rel8 = 0, inner = p->method == DP_SITE_JUMP ? dp_window_inner_branches(&p->win) : 0;
	char in[96] = "";

	buf[0] = '\0';
	if (inner)
		snprintf(in, sizeof(in), "%s%u branch%s inside the jump to its own instructions, led to "
			 "their copies", p->led ? "; " : "", inner, inner == 1 ? "" : "es");
	for (unsigned i = 0; i < p->nredirects; i++)
		rel8 += p->redirects[i].disp_len == 1;
	if (p->method == DP_SITE_REDIRECT)
		snprintf(buf, size, "redirect: only direct branches reach it, %u led to its "
			 "trampoline%s%s", p->nredirects, rel8 ? " (rel8s through a hop)" : "",
			 p->win.len < 5 ? ", its window too short for a jump" : "");
	else if (p->method == DP_SITE_JUMP && p->led)
		snprintf(buf, size, "led window: branch targets inside the jump, %u branches led "
			 "to their instructions in the trampoline%s%s", p->nredirects,
			 rel8 ? " (rel8s through a hop)" : "", in);
	else if (inner)
		snprintf(buf, size, "%s", in);
	return buf;
}
