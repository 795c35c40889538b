/*
 * Steps 3 to 5 of patching (install.c's comment tells them all): for a
 * batch of patches, the probes of the events they serve defined in the
 * agent, their trampolines built (or ones built before reused) and written
 * while the program runs, then the patches noted to the agent; and the
 * reports of what became of each point.  install.c and remove.c (which
 * rebuilds the patches an event shared) stage their batches here; write.c
 * then writes them in one stop.
 *
 * Nothing here costs a round trip to the agent per patch when the agent
 * speaks protocol 1.3: the new probes go in DEFINE_PROBES messages (their
 * shared event, flags and contexts once per class), the notes in
 * NOTE_INSTALLED_MANY and NOTE_REMOVED_MANY, and trampolines are carved
 * from code blocks of DP_APP_MAX_CODE bytes (one ALLOC_CODE each), each
 * taking the bytes it needs.  An older agent gets one message per probe and
 * per patch, as before.  Lookups are by hash (a process's probes by site)
 * and the code is read and written in runs of adjacent pages, so that a
 * batch of tens of thousands of patches costs time in proportion.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "daemon.h"
#include "proc/proc-status.h"
#include "patch/write.h"
#include "x86/emit.h"

static struct dp_client_site *add_site(struct dp_client_proc *rp, const char *event,
				       uint64_t addr, uint64_t vaddr)
{
	struct dp_client_site *s = rp ? dp_client_proc_add_site(rp) : NULL;

	if (!s)
		return NULL;
	snprintf(s->event, sizeof(s->event), "%s", event);
	s->addr = addr;
	s->vaddr = vaddr;
	return s;
}

/* Reports every point of an owner's patch as refused, with a reason or a
 * text. */
void dpd_report_refused(const struct dpd_owner *o, struct dp_client_proc *rp,
			enum dp_reason reason, const char *text)
{
	for (unsigned k = 0; k < o->pl->npoints; k++) {
		const struct dpd_point *pt = &o->ev->points[o->pl->point_ids[k]];
		struct dp_client_site *s = add_site(rp, dpd_event_point_name(o->ev, pt),
						    pt->vaddr + o->bias, pt->vaddr);

		if (!s)
			continue;
		s->method = DP_CLIENT_METHOD_REFUSED;
		snprintf(s->reason, sizeof(s->reason), "%s",
			 reason ? dp_reason_name(reason) : "error");
		snprintf(s->text, sizeof(s->text), "%s", text ? text : dp_reason_str(reason));
		rp->nrefused++;
	}
}

void dpd_report_installed(const struct dpd_owner *o, struct dp_client_proc *rp)
{
	for (unsigned k = 0; k < o->pl->npoints; k++) {
		const struct dpd_point *pt = &o->ev->points[o->pl->point_ids[k]];
		struct dp_client_site *s = add_site(rp, dpd_event_point_name(o->ev, pt),
						    pt->vaddr + o->bias, pt->vaddr);

		if (s)
			dpd_plan_method(o->pl, s);
		if (rp && o->pl->method == DP_SITE_INT3)
			rp->nint3++;
		else if (rp)
			rp->njump++;
	}
}

/* Drops w, refusing the owners that join now with a reason or a text; the
 * patch in place, if any, stays as it is. */
void dpd_work_fail(pid_t pid, struct dpd_work *w, enum dp_reason reason, const char *text)
{
	dpd_info("process %d: the patch at 0x%" PRIx64 " is not written: %s", (int)pid,
		 w->rec.patch.site, text ? text : dp_reason_str(reason));
	for (uint32_t i = 0; i < w->rec.nowners; i++)
		if (w->rps[i])
			dpd_report_refused(&w->rec.owners[i], w->rps[i], reason, text);
	w->fail = true;
}

/* The canonical text of a probe's contexts, to recognise it again. */
static void ctx_sig(const struct dp_ctx *ctx, uint32_t n, uint32_t flags, char *out, size_t size)
{
	size_t len = (size_t)snprintf(out, size, "%u", flags);

	for (uint32_t i = 0; i < n && len < size; i++) {
		char one[DP_CLIENT_CTX_MAX];

		dp_ctx_format(&ctx[i], one, sizeof(one));
		len += (size_t)snprintf(out + len, size - len, "|%s", one);
	}
}

/* ---- probes: found again, or defined in one batch ------------------------ */

/* What new probes share (DEFINE_PROBES's classes): one per lttng name,
 * flags and contexts. */
struct dclass {
	uint32_t flags;
	const char *event;		/* the event's own storage */
	char *sig;
	uint32_t nctx;
	struct dp_ctx *ctx;
};

/* The probes a stage defines: p->probes[first...], each of class pcls[i]. */
struct defs {
	uint32_t first;
	struct dclass *cls;
	size_t ncls, cls_cap;
	uint32_t *pcls;
	size_t pcls_cap;
	struct dp_u64map cls_ix;	/* hash of (event, sig) -> class index + 1 */
};

static void defs_free(struct defs *d)
{
	for (size_t i = 0; i < d->ncls; i++) {
		free(d->cls[i].sig);
		free(d->cls[i].ctx);
	}
	free(d->cls);
	free(d->pcls);
	dp_u64map_free(&d->cls_ix);
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

/* The class of (event, flags, contexts as sig), added when new: its index,
 * or -ENOMEM. */
static int64_t class_get(struct defs *d, const char *event, uint32_t flags, const char *sig,
			 const struct dp_ctx *ctx, uint32_t n)
{
	uint64_t key = fnv(fnv(0xcbf29ce484222325ull, event), sig) | 1;
	struct dclass *c;
	uint32_t v;

	if (dp_u64map_get(&d->cls_ix, key, &v)) {
		c = &d->cls[v - 1];
		if (!strcmp(c->event, event) && !strcmp(c->sig, sig))
			return v - 1;
		/* Two texts of one hash: look at every class. */
		for (size_t i = 0; i < d->ncls; i++)
			if (!strcmp(d->cls[i].event, event) && !strcmp(d->cls[i].sig, sig))
				return (int64_t)i;
	}
	if (dp_array_reserve(&d->cls, &d->cls_cap, d->ncls, sizeof(*d->cls), 8))
		return -ENOMEM;
	c = &d->cls[d->ncls];
	*c = (struct dclass){ flags, event, strdup(sig), n, calloc(n ? n : 1, sizeof(*ctx)) };
	if (!c->sig || !c->ctx || dp_u64map_put(&d->cls_ix, key, (uint32_t)d->ncls + 1)) {
		free(c->sig);
		free(c->ctx);
		return -ENOMEM;
	}
	if (n)
		memcpy(c->ctx, ctx, n * sizeof(*ctx));
	return (int64_t)d->ncls++;
}

/* Forgets the new probes from first + keep on (the agent did not define
 * them): from the last, so that each site's chain is as it was. */
static void defs_drop(struct dpd_proc *p, const struct defs *d, uint32_t keep)
{
	while (p->nprobes > d->first + keep) {
		struct dpd_probe *pr = &p->probes[--p->nprobes];

		dp_u64map_put(&p->probe_ix, pr->site, pr->prev);
		free(pr->sig);
	}
	dpd_proc_probes_cut(p);
}

/* The probe of p at `site` recording `name` with these contexts, or -1. */
static int64_t probe_at(const struct dpd_proc *p, uint64_t site, const char *name,
			const char *sig)
{
	uint32_t v = 0;

	dp_u64map_get(&p->probe_ix, site, &v);
	for (; v; v = p->probes[v - 1].prev) {
		const struct dpd_probe *pr = &p->probes[v - 1];

		if (pr->sig && !strcmp(pr->event, name) && !strcmp(pr->sig, sig))
			return v - 1;
	}
	return -1;
}

/* A probe of the event at `site` in p: an existing one, or a new one to
 * define with the batch (its handle 0 until then).  Its index in *idx. */
static int get_probe(struct dpd_event *ev, struct dpd_proc *p, struct defs *d,
		     const struct dpd_point *pt, uint64_t bias, uint32_t *idx, struct dp_err *msg)
{
	struct dp_ctx ctx[DP_APP_MAX_CTX];
	const char *name = dpd_event_point_name(ev, pt);
	uint64_t site = pt->vaddr + bias;
	uint32_t n = 0, flags = pt->role == DPD_ROLE_ENTRY ? DP_APP_PROBE_AT_ENTRY : 0, prev = 0;
	char sig[DP_CLIENT_CTX_MAX * 4];
	struct dpd_probe *pr;
	int64_t found, cls;
	int ret;

	/* An SDT site records its own arguments first, as its spec says. */
	if (ev->kind == DP_CLIENT_KIND_SDT) {
		ret = dpd_resolve_sdt_args(ev->obj, &ev->sdt, (size_t)(pt - ev->points), bias, ctx,
					   msg);
		if (ret)
			return ret;
		n = ev->sdt.nargs;
	}
	for (uint32_t i = 0; i < ev->nctx; i++) {
		size_t got;

		ret = dpd_resolve_ctx_at(ev->obj, ev->ctx[i], bias, pt, &ctx[n],
					 DP_APP_MAX_CTX - 1 - n, &got, msg);
		if (ret)
			return ret;
		n += (uint32_t)got;
	}
	if (pt->role == DPD_ROLE_RETURN &&
	    dpd_resolve_ret(ev, p->minor >= DP_APP_MINOR_DEFINE_EXT, &ctx[n]) == 0)
		n++;
	ctx_sig(ctx, n, flags, sig, sizeof(sig));
	found = probe_at(p, site, name, sig);
	if (found >= 0) {
		*idx = (uint32_t)found;
		return 0;
	}
	/* Recipes travel in DEFINE_PROBE_EXT (or DEFINE_PROBES), which older
	 * agents lack. */
	if (dp_app_ctx_need_ext(ctx, n) && p->minor < DP_APP_MINOR_DEFINE_EXT)
		return dp_err_set(msg, -EPROTONOSUPPORT, "process %d: its agent (protocol "
				  "1.%u) is older than this daemon and cannot compute "
				  "typed values; restart the process with this version's "
				  "agent", (int)p->pid, (unsigned)p->minor);
	cls = class_get(d, name, flags, sig, ctx, n);
	if (cls < 0 || dpd_proc_reserve(p, 1, 0) ||
	    dp_array_reserve(&d->pcls, &d->pcls_cap, p->nprobes - d->first, sizeof(*d->pcls), 64))
		return dp_err_set(msg, -ENOMEM, "out of memory");
	pr = &p->probes[p->nprobes];
	memset(pr, 0, sizeof(*pr));
	pr->sig = strdup(sig);
	dp_u64map_get(&p->probe_ix, site, &prev);
	if (!pr->sig || dp_u64map_put(&p->probe_ix, site, p->nprobes + 1)) {
		free(pr->sig);
		return dp_err_set(msg, -ENOMEM, "out of memory");
	}
	pr->prev = prev;
	pr->id = p->next_id++;
	pr->site = site;
	pr->flags = flags;
	snprintf(pr->event, sizeof(pr->event), "%s", name);
	d->pcls[p->nprobes - d->first] = (uint32_t)cls;
	*idx = p->nprobes++;
	return 0;
}

/* Bytes of DEFINE_PROBES one message carries at most (well under the
 * frame's maximum), counting a class's contexts generously. */
#define DEFS_MSG_BYTES (12u << 20)
#define DEFS_CLASS_BYTES(c) (64 + (size_t)(c)->nctx * 512)

/* One probe at a time, for an agent older than the batches. */
static int defs_send_each(struct dpd_proc *p, struct defs *d, struct dp_err *msg)
{
	for (uint32_t i = d->first; i < p->nprobes; i++) {
		struct dpd_probe *pr = &p->probes[i];
		const struct dclass *c = &d->cls[d->pcls[i - d->first]];
		struct dp_app_msg req = { .type = DP_APP_DEFINE_PROBE }, rep;
		int ret;

		if (dp_app_ctx_need_ext(c->ctx, c->nctx))
			req.type = DP_APP_DEFINE_PROBE_EXT;
		req.define_probe.id = pr->id;
		req.define_probe.site = pr->site;
		req.define_probe.flags = pr->flags;
		snprintf(req.define_probe.event, sizeof(req.define_probe.event), "%s", pr->event);
		req.define_probe.nctx = c->nctx;
		req.define_probe.ctx = c->ctx;
		ret = dpd_agent_call(p, &req, &rep, msg);
		pr->handle = rep.result.value;
		dp_app_msg_release(&rep);
		if (ret) {
			defs_drop(p, d, i - d->first);
			return ret;
		}
	}
	return 0;
}

/*
 * Defines the new probes in the agent: DEFINE_PROBES of at most
 * DP_APP_MAX_BATCH probes (and DEFS_MSG_BYTES) each, every message carrying
 * the classes its probes name.  0, or -errno with msg: the probes the agent
 * did not define are forgotten (those it did stay, as probes always do).
 */
static int defs_send(struct dpd_proc *p, struct defs *d, struct dp_err *msg)
{
	uint32_t n = p->nprobes - d->first, done = 0, *map;
	int ret = 0;

	if (!n)
		return 0;
	if (p->minor < DP_APP_MINOR_BATCH)
		return defs_send_each(p, d, msg);
	map = malloc(d->ncls * sizeof(*map));
	if (!map) {
		defs_drop(p, d, 0);
		return dp_err_set(msg, -ENOMEM, "out of memory");
	}
	while (!ret && done < n) {
		struct dp_app_msg req = { .type = DP_APP_DEFINE_PROBES }, rep;
		struct dp_app_define_probes *m = &req.define_probes;
		uint32_t max = n - done < DP_APP_MAX_BATCH ? n - done : DP_APP_MAX_BATCH, got;
		size_t bytes = 0;

		m->classes = calloc(max, sizeof(*m->classes));
		m->probes = calloc(max, sizeof(*m->probes));
		if (!m->classes || !m->probes) {
			free(m->classes);
			free(m->probes);
			ret = dp_err_set(msg, -ENOMEM, "out of memory");
			break;
		}
		memset(map, 0xff, d->ncls * sizeof(*map));
		while (m->nprobes < max) {
			const struct dpd_probe *pr = &p->probes[d->first + done + m->nprobes];
			uint32_t c = d->pcls[done + m->nprobes];

			if (map[c] == UINT32_MAX) {
				struct dp_app_probe_class *mc = &m->classes[m->nclasses];

				if (m->nprobes && bytes + DEFS_CLASS_BYTES(&d->cls[c]) > DEFS_MSG_BYTES)
					break;
				bytes += DEFS_CLASS_BYTES(&d->cls[c]);
				mc->flags = d->cls[c].flags;
				snprintf(mc->event, sizeof(mc->event), "%s", d->cls[c].event);
				mc->nctx = d->cls[c].nctx;
				mc->ctx = d->cls[c].ctx;
				map[c] = m->nclasses++;
			}
			m->probes[m->nprobes++] = (struct dp_app_probe_def){ pr->id, pr->site, map[c] };
			bytes += 16;
		}
		ret = dpd_agent_call(p, &req, &rep, msg);
		got = ret ? 0 : rep.define_probes_reply.nhandles;
		if (got > m->nprobes)
			got = 0;
		for (uint32_t k = 0; k < got; k++)
			p->probes[d->first + done + k].handle = rep.define_probes_reply.handles[k];
		if (!ret && rep.define_probes_reply.status)
			ret = dp_err_set(msg, rep.define_probes_reply.status, "process %d: %s",
					 (int)p->pid, rep.define_probes_reply.error);
		else if (!ret && got != m->nprobes)
			ret = dp_err_set(msg, -EPROTO, "process %d: its agent defined %u of %u "
					 "probes and did not say why", (int)p->pid, got, m->nprobes);
		done += got;
		/* The classes' contexts are d's. */
		free(m->classes);
		free(m->probes);
		dp_app_msg_release(&rep);
	}
	free(map);
	if (ret)
		defs_drop(p, d, done);
	return ret;
}

/*
 * A trampoline of p that can serve ap: one we built for the same window,
 * with the same probes for a jump (an int3's trampoline has no hooks, only
 * the relocated instruction and the way back).  Kept ones and the one in
 * place alike: trampoline code is never rewritten.
 */
static const struct dpd_site *reusable_tramp(const struct dpd_proc *p,
					     const struct dpd_site_ix *ix,
					     const struct dp_app_patch *ap, const struct dpd_led *led)
{
	size_t from, to;

	dpd_site_ix_range(p, ix, ap->site, ap->site, &from, &to);
	for (size_t k = from; k < to; k++) {
		const struct dpd_site *s = &p->sites[ix->idx[k]];

		if (!s->ninsns || !dpd_same_window(&s->patch, dpd_site_led(p, s), ap, led))
			continue;
		if (ap->method == DP_APP_METHOD_INT3 ||
		    (s->patch.nprobes == ap->nprobes &&
		     !memcmp(s->patch.probes, ap->probes, ap->nprobes * sizeof(ap->probes[0]))))
			return s;
	}
	return NULL;
}

/* The probes of every owner of w (found, or queued in d), as w's hooks: 0,
 * or -errno with msg (w->fail, with the reports, when there are too many). */
static int owner_probes(struct dpd_proc *p, struct defs *d, struct dpd_work *w,
			struct dp_err *msg)
{
	w->nhooks = 0;
	for (uint32_t i = 0; i < w->rec.nowners; i++) {
		const struct dpd_owner *o = &w->rec.owners[i];

		for (unsigned k = 0; k < o->pl->npoints; k++) {
			const struct dpd_point *pt = &o->ev->points[o->pl->point_ids[k]];
			uint32_t idx, j;
			int ret = get_probe(o->ev, p, d, pt, o->bias, &idx, msg);

			if (ret)
				return ret;
			/* Events of one name with the same contexts (in two
			 * sessions) record through one probe. */
			for (j = 0; j < w->nhooks && w->hook_probe[j] != idx; j++)
				;
			if (j < w->nhooks)
				continue;
			if (w->nhooks == DP_APP_MAX_PATCH_PROBES) {
				char text[DP_CLIENT_TEXT_MAX];

				snprintf(text, sizeof(text), "the patch at 0x%" PRIx64
					 " would serve more than %d probes", w->rec.patch.site,
					 DP_APP_MAX_PATCH_PROBES);
				dpd_work_fail(p->pid, w, DP_REASON_NONE, text);
				return 0;
			}
			w->hook_probe[w->nhooks] = idx;
			w->hook_addr[w->nhooks++] = o->pl->points[k] + o->bias;
		}
	}
	return 0;
}

/* Whether the byte at addr belongs to a patch installed in p. */
static bool patched_byte(const struct dpd_proc *p, uint64_t addr)
{
	for (uint32_t i = 0; i < p->nsites; i++) {
		const struct dp_app_patch *ap = &p->sites[i].patch;

		const struct dpd_led *led = dpd_site_led(p, &p->sites[i]);

		if (!p->sites[i].installed)
			continue;
		if ((addr >= ap->site && addr < ap->site + ap->len) ||
		    (addr >= ap->hop && addr < ap->hop + ap->hop_len))
			return true;
		for (unsigned k = 0; led && k < led->nwrites; k++)
			if (addr >= led->w[k].addr && addr < led->w[k].addr + led->w[k].len)
				return true;
	}
	return false;
}

/* Whether the n bytes at addr in p are `orig`, those of the patches a
 * regrouping replaces aside (they are ours: they go in the same stop).
 * 0, -ESTALE, or -errno when they cannot be read. */
static int check_orig(const struct dpd_proc *p, const struct dpd_work *w, uint64_t addr,
		      const uint8_t *orig, size_t n)
{
	uint8_t cur[DP_WINDOW_MAX_LEN];
	int ret = dp_proc_mem_read(p->pid, addr, cur, n);

	for (size_t i = 0; !ret && i < n; i++)
		if (cur[i] != orig[i] && !(w->regroup && patched_byte(p, addr + i)))
			ret = -ESTALE;
	return ret;
}

/* Whether a new patch's bytes are still the file's: 0, or w dropped (with
 * its reports), or -errno when the process cannot be read. */
static int check_work(struct dpd_proc *p, struct dpd_work *w)
{
	struct dp_app_patch *ap = &w->rec.patch;
	char text[DP_CLIENT_TEXT_MAX];
	int ret;

	/* Another tool's patch, or code the program rewrote, is not ours to
	 * displace.  (A rebuilt patch is ours, in place.) */
	if (w->replaces)
		return 0;
	ret = check_orig(p, w, ap->site, ap->orig, ap->len);
	if (!ret && ap->hop_len)
		ret = check_orig(p, w, ap->hop, ap->hop_orig, ap->hop_len);
	for (unsigned k = 0; !ret && k < w->led.nwrites; k++)
		ret = check_orig(p, w, w->led.w[k].addr, w->led.w[k].orig, w->led.w[k].len);
	if (!ret)
		return 0;
	if (ret == -ESTALE)
		snprintf(text, sizeof(text), "the code at 0x%" PRIx64 " differs from the "
			 "file (another tool patched it, or the program rewrote it)", ap->site);
	else
		snprintf(text, sizeof(text), "cannot read the code at 0x%" PRIx64 ": %s",
			 ap->site, strerror(-ret));
	dpd_work_fail(p->pid, w, DP_REASON_NONE, text);
	return ret == -ESTALE ? 0 : ret;
}

/* Bytes of a new patch (its site's, its hop's) the code must hold. */
struct expect {
	uint64_t addr;
	const uint8_t *orig;
	uint32_t work;
	uint8_t len;
};

static int expect_cmp(const void *a, const void *b)
{
	const struct expect *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The longest read of check_works. */
#define CHECK_RUN_MAX (1u << 20)

/*
 * check_work for every new work, the code read in runs (bytes on pages
 * next to each other, CHECK_RUN_MAX at most) rather than patch by patch: a
 * run that cannot be read is checked patch by patch.  0, or -errno when
 * the process cannot be read.
 */
static int check_works(struct dpd_proc *p, struct dpd_work *ws, size_t n)
{
	struct expect *v = malloc(((2 + DP_APP_MAX_WRITES) * n + 1) * sizeof(*v));
	uint8_t *buf = malloc(CHECK_RUN_MAX);
	size_t ne = 0, i = 0;
	int ret = 0;

	if (!v || !buf) {
		for (size_t k = 0; k < n && !ret; k++)
			if (!ws[k].fail)
				ret = check_work(p, &ws[k]);
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		const struct dp_app_patch *ap = &ws[k].rec.patch;

		if (ws[k].fail || ws[k].replaces)
			continue;
		v[ne++] = (struct expect){ ap->site, ap->orig, (uint32_t)k, ap->len };
		if (ap->hop_len)
			v[ne++] = (struct expect){ ap->hop, ap->hop_orig, (uint32_t)k, ap->hop_len };
		for (unsigned m = 0; m < ws[k].led.nwrites; m++)
			v[ne++] = (struct expect){ ws[k].led.w[m].addr, ws[k].led.w[m].orig,
						   (uint32_t)k, ws[k].led.w[m].len };
	}
	qsort(v, ne, sizeof(*v), expect_cmp);
	while (i < ne && !ret) {
		uint64_t start = v[i].addr, end = start + v[i].len;
		size_t j = i + 1;

		for (; j < ne; j++) {
			uint64_t e = v[j].addr + v[j].len > end ? v[j].addr + v[j].len : end;

			if (v[j].addr / 4096 > (end - 1) / 4096 + 1 || e - start > CHECK_RUN_MAX)
				break;
			end = e;
		}
		if (dp_proc_mem_read(p->pid, start, buf, end - start)) {
			for (size_t k = i; k < j && !ret; k++)
				if (!ws[v[k].work].fail)
					ret = check_work(p, &ws[v[k].work]);
			i = j;
			continue;
		}
		for (size_t k = i; k < j; k++) {
			struct dpd_work *w = &ws[v[k].work];
			const uint8_t *cur = buf + (v[k].addr - start);
			char text[DP_CLIENT_TEXT_MAX];
			bool same = true;

			for (uint8_t b = 0; b < v[k].len && same; b++)
				same = cur[b] == v[k].orig[b] ||
				       (w->regroup && patched_byte(p, v[k].addr + b));
			if (same || w->fail)
				continue;
			snprintf(text, sizeof(text), "the code at 0x%" PRIx64 " differs from the "
				 "file (another tool patched it, or the program rewrote it)",
				 w->rec.patch.site);
			dpd_work_fail(p->pid, w, DP_REASON_NONE, text);
		}
		i = j;
	}
out:
	free(v);
	free(buf);
	return ret;
}

/*
 * The patches with a led that cannot be placed here: a led short of its
 * plan's writes, an agent too old to record leds (it would not report
 * them, and a restarted daemon could not take them out), and, in a
 * regrouping, a patch in place of another at the same site when either
 * has a led (its record would be replaced before the code is).
 */
static void check_leds(struct dpd_proc *p, const struct dpd_site_ix *ix, struct dpd_work *ws,
		       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct dpd_work *w = &ws[i];
		bool led = w->led.nwrites || w->led.want;
		char text[DP_CLIENT_TEXT_MAX];

		if (w->fail)
			continue;
		text[0] = '\0';
		if (led && w->led.nwrites != w->led.want)
			snprintf(text, sizeof(text), "a branch it leads to the trampoline of 0x%" PRIx64
				 " cannot be recorded", w->rec.patch.site);
		else if (led && p->minor < DP_APP_MINOR_WRITES)
			snprintf(text, sizeof(text), "its branches are led to the trampoline, and "
				 "the agent of process %d (protocol 1.%u) cannot record them: "
				 "use an agent of this version", (int)p->pid, p->minor);
		size_t from = 0, to = 0;

		if (w->regroup)
			dpd_site_ix_range(p, ix, w->rec.patch.site, w->rec.patch.site, &from, &to);
		for (size_t k = from; !text[0] && k < to; k++) {
			const struct dpd_site *s = &p->sites[ix->idx[k]];

			if (s->installed && s->patch.site == w->rec.patch.site &&
			    (led || dpd_site_led(p, s)))
				snprintf(text, sizeof(text), "the patch at 0x%" PRIx64 " replaces one "
					 "whose branches are led (or leads branches itself): take "
					 "the other out first", w->rec.patch.site);
		}
		if (text[0])
			dpd_work_fail(p->pid, w, DP_REASON_NONE, text);
	}
}

/* ---- code memory ---------------------------------------------------------- */

/* How far a block may lie from the code it serves, as the agent's pool
 * counts it (patch/codemem.c): a rel32's reach, less a margin. */
#define CODE_REACH ((1ull << 31) - 2 * (uint64_t)DP_APP_MAX_CODE)

static bool code_reaches(const struct dpd_code_block *b, uint64_t site)
{
	uint64_t lo = b->start, hi = b->start + b->size;

	return (site > lo ? site - lo : lo - site) < CODE_REACH &&
	       (site > hi ? site - hi : hi - site) < CODE_REACH;
}

/*
 * Room for `size` bytes of code within reach of `site`: in a block of p's
 * that has it, else in a new block of DP_APP_MAX_CODE bytes the agent maps
 * (ALLOC_CODE).  Nothing is taken until code_commit says how much the code
 * used.  0 and *addr, or -errno with msg.
 */
static int code_alloc(struct dpd_proc *p, uint64_t site, size_t size, uint64_t *addr,
		      struct dp_err *msg)
{
	struct dp_app_msg req = { .type = DP_APP_ALLOC_CODE }, rep;
	struct dpd_code_block *b;
	int ret;

	/* The latest first: consecutive sites are near each other. */
	for (uint32_t i = p->ncode; i-- > 0;) {
		b = &p->code[i];
		if (b->size - b->used >= size && code_reaches(b, site)) {
			*addr = b->start + b->used;
			return 0;
		}
	}
	b = realloc(p->code, (p->ncode + 1) * sizeof(*b));
	if (!b)
		return dp_err_set(msg, -ENOMEM, "out of memory");
	p->code = b;
	req.alloc_code.near = site;
	req.alloc_code.size = DP_APP_MAX_CODE;
	ret = dpd_agent_call(p, &req, &rep, msg);
	*addr = rep.result.value;
	dp_app_msg_release(&rep);
	if (ret)
		return ret;
	p->code[p->ncode++] = (struct dpd_code_block){ *addr, DP_APP_MAX_CODE, 0 };
	return 0;
}

/* The code at addr (from code_alloc) took len bytes. */
static void code_commit(struct dpd_proc *p, uint64_t addr, size_t len)
{
	uint32_t used = (uint32_t)((len + 15) & ~(size_t)15);

	for (uint32_t i = p->ncode; i-- > 0;) {
		struct dpd_code_block *b = &p->code[i];

		if (addr >= b->start && addr < b->start + b->size) {
			if (addr - b->start + used > b->used)
				b->used = (uint32_t)(addr - b->start) + used;
			p->tramp_bytes += used;
			return;
		}
	}
}

void dpd_code_usage(const struct dpd_proc *p, uint64_t *used, uint64_t *mapped)
{
	*used = p->tramp_bytes;
	*mapped = 0;
	for (uint32_t i = 0; i < p->ncode; i++)
		*mapped += p->code[i].size;
}

/* The vector state trampolines save, as this CPU has it (asked once). */
static enum dp_vec_save vec_save(void)
{
	static enum dp_vec_save vec = (enum dp_vec_save)-1;

	if ((int)vec < 0)
		vec = dp_vec_save_detect();
	return vec;
}

/* The ids of w's probes in its patch, in the order of its hooks. */
static void work_probes(const struct dpd_proc *p, struct dpd_work *w)
{
	struct dp_app_patch *ap = &w->rec.patch;

	ap->nprobes = w->nhooks;
	for (uint32_t i = 0; i < w->nhooks; i++)
		ap->probes[i] = p->probes[w->hook_probe[i]].id;
}

/* Bytes of the trampoline w would need if none is reused. */
static size_t work_code_cap(const struct dpd_work *w)
{
	return dp_tramp_max_len(w->rec.patch.method == DP_APP_METHOD_INT3 ? 0 : w->nhooks,
				vec_save());
}

/*
 * What w's led writes, its trampoline known: each branch's displacement
 * to where it leads (a rel32 to the displaced instruction's place in the
 * trampoline, its entry for the first; a rel8 to the hop), the hop's jmp
 * rel32 to where it leads.  0; a patch whose bytes do not reach is
 * dropped (w->fail).
 */
static int led_bytes(const struct dpd_proc *p, struct dpd_work *w)
{
	struct dpd_led *led = &w->led;
	uint64_t hop = 0;
	int ret = 0;

	for (unsigned k = 0; k < led->nwrites; k++)
		if (led->w[k].kind == DP_APP_WRITE_HOP)
			hop = led->w[k].addr;
	/* A recovered led no plan claims: where its branches lead is not
	 * known, and it is only ever restored. */
	if (led->recovered)
		ret = -ENOENT;
	for (unsigned k = 0; k < led->nwrites && !ret; k++) {
		const struct dp_app_write *wr = &led->w[k];
		uint64_t dest = led->to[k] && led->to[k] < w->rec.ninsns ?
				w->rec.insn_at[led->to[k]] : w->rec.entry;

		if (led->to[k] >= w->rec.ninsns && led->to[k]) {
			ret = -EINVAL;
		} else if (wr->kind == DP_APP_WRITE_HOP) {
			ret = dp_hop_bytes(wr->addr, dest, led->now[k]);
		} else {
			struct dp_redirect r = {
				.addr = wr->addr, .len = wr->len,
				.disp_off = (uint8_t)(wr->len - led->disp_len[k]),
				.disp_len = led->disp_len[k],
			};
			uint8_t disp[4];

			ret = led->disp_len[k] == 1 && !hop ? -EINVAL :
			      dp_redirect_bytes(&r, wr->addr, led->disp_len[k] == 1 ? hop : dest, disp);
			memcpy(led->now[k], wr->orig, wr->len);
			if (!ret)
				memcpy(led->now[k] + r.disp_off, disp, r.disp_len);
		}
	}
	if (ret) {
		char text[DP_CLIENT_TEXT_MAX];

		snprintf(text, sizeof(text), "a branch led to the trampoline of 0x%" PRIx64
			 " does not reach it: %s", w->rec.patch.site, strerror(-ret));
		dpd_work_fail(p->pid, w, DP_REASON_NONE, text);
	}
	return 0;
}

/* Step 3 for one patch, its probes defined: 0, or -errno with msg when the
 * agent failed us; otherwise a patch that cannot be made is dropped
 * (w->fail). */
static int prepare(struct dpd_proc *p, const struct dpd_site_ix *ix, struct dpd_work *w,
		   struct dp_err *msg)
{
	enum dp_vec_save vec = vec_save();
	struct dp_app_patch *ap = &w->rec.patch;
	struct dp_tramp_hook hooks[DP_APP_MAX_PATCH_PROBES];
	const struct dpd_site *kept;
	enum dp_reason why = DP_REASON_NONE;
	struct dp_window win;
	struct dp_tramp tramp;
	struct dp_emit e;
	size_t cap, nhooks;
	uint8_t *code;
	int ret = 0;

	work_probes(p, w);
	for (uint32_t i = 0; i < w->nhooks; i++) {
		hooks[i].addr = w->hook_addr[i];
		hooks[i].arg = (void *)(uintptr_t)p->probes[w->hook_probe[i]].handle;
	}
	kept = reusable_tramp(p, ix, ap, &w->led);
	if (kept) {
		dpd_dbg("process %d: trampoline at 0x%" PRIx64 " reused for 0x%" PRIx64,
			(int)p->pid, kept->patch.tramp, ap->site);
		ap->tramp = kept->patch.tramp;
		ap->tramp_len = kept->patch.tramp_len;
		ap->resume = kept->patch.resume;
		w->rec.entry = kept->entry;
		w->rec.ninsns = kept->ninsns;
		memcpy(w->rec.off, kept->off, sizeof(w->rec.off));
		memcpy(w->rec.insn_at, kept->insn_at, sizeof(w->rec.insn_at));
		return led_bytes(p, w);
	}

	/* int3 sites reach their probes through the agent's trap table: their
	 * trampoline is only the relocated instruction and the way back. */
	nhooks = ap->method == DP_APP_METHOD_INT3 ? 0 : ap->nprobes;
	cap = work_code_cap(w);
	ret = code_alloc(p, ap->site, cap, &ap->tramp, msg);
	if (ret)
		return ret;
	w->code = calloc(1, cap);
	if (!w->code)
		return dp_err_set(msg, -ENOMEM, "out of memory");
	/* The owners' windows are the same: the first one's instructions. */
	win = w->rec.owners[0].pl->win;
	win.addr = ap->site;
	dp_emit_init(&e, w->code, cap, ap->tramp);
	/* zmm16-31 and k0-7 are left out where the object never names them
	 * (tramp.h): the analysis that planned the site has the object. */
	ret = dp_tramp_build(&e, &win, hooks, nhooks, (dp_handler_fn)(uintptr_t)p->probe_hit,
			     dp_vec_save_site(vec, dp_object_evex_free(w->rec.owners[0].ev->obj->obj)),
			     &tramp, &why);
	if (ret) {
		free(w->code);
		w->code = NULL;
		dpd_work_fail(p->pid, w, why, why ? NULL : "the trampoline could not be built");
		return 0;
	}
	code_commit(p, ap->tramp, tramp.len);
	code = realloc(w->code, tramp.len ? tramp.len : 1);
	if (code)
		w->code = code;
	ap->tramp_len = (uint32_t)tramp.len;
	ap->resume = ap->method == DP_APP_METHOD_INT3 ? tramp.insn_at[0] : 0;
	w->rec.entry = tramp.entry;
	w->rec.ninsns = win.ninsns;
	memcpy(w->rec.off, win.off, sizeof(w->rec.off));
	memcpy(w->rec.insn_at, tramp.insn_at, sizeof(w->rec.insn_at));
	return led_bytes(p, w);
}

/* Largest write of trampolines in one go. */
#define TRAMP_RUN_MAX ((size_t)DP_APP_MAX_CODE)

/*
 * Step 4: the new trampolines written while the program runs: nothing
 * reaches them before their jumps exist, or their notes for int3s.
 * Trampolines carved one after the other from a block go in one write,
 * the bytes between them (alignment) filled with int3.  A write that fails
 * fails the patches of its trampolines alone.
 */
static void write_trampolines(pid_t pid, struct dpd_work *ws, size_t n)
{
	uint8_t *buf = malloc(TRAMP_RUN_MAX);
	size_t i = 0;

	while (i < n) {
		const struct dp_app_patch *first;
		uint64_t start, end;
		size_t j;
		int ret;

		if (ws[i].fail || !ws[i].code) {
			i++;
			continue;
		}
		first = &ws[i].rec.patch;
		start = first->tramp;
		end = start + first->tramp_len;
		/* The run: the next new trampolines, each right after the last
		 * one's 16-byte aligned end. */
		for (j = i + 1; buf && j < n; j++) {
			const struct dp_app_patch *ap = &ws[j].rec.patch;

			if (ws[j].fail || !ws[j].code)
				continue;
			if (ap->tramp != ((end + 15) & ~15ull) ||
			    ap->tramp + ap->tramp_len - start > TRAMP_RUN_MAX)
				break;
			end = ap->tramp + ap->tramp_len;
		}
		if (buf) {
			memset(buf, 0xcc, end - start);
			for (size_t k = i; k < j; k++)
				if (!ws[k].fail && ws[k].code)
					memcpy(buf + (ws[k].rec.patch.tramp - start), ws[k].code,
					       ws[k].rec.patch.tramp_len);
			ret = dp_proc_mem_write(pid, start, buf, end - start);
		} else {
			j = i + 1;
			ret = dp_proc_mem_write(pid, start, ws[i].code, first->tramp_len);
		}
		for (size_t k = i; ret && k < j; k++) {
			char text[DP_CLIENT_TEXT_MAX];

			if (ws[k].fail || !ws[k].code)
				continue;
			snprintf(text, sizeof(text), "cannot write the trampoline at 0x%" PRIx64
				 ": %s", ws[k].rec.patch.tramp,
				 ret == -EIO ? "short write" : strerror(-ret));
			dpd_work_fail(pid, &ws[k], DP_REASON_NONE, text);
		}
		i = j;
	}
	free(buf);
}

/* ---- notes ----------------------------------------------------------------- */

/* NOTE_INSTALLED_MANY of patches (at most DP_APP_MAX_BATCH): 0, or -errno
 * with msg; *noted says how many the agent noted, in order. */
static int note_many(struct dpd_proc *p, struct dp_app_patch *aps, uint32_t n,
		     uint32_t *noted, struct dp_err *msg)
{
	struct dp_app_msg req = { .type = DP_APP_NOTE_INSTALLED_MANY }, rep;
	int ret;

	req.note_many.npatches = n;
	req.note_many.patches = aps;
	ret = dpd_agent_call(p, &req, &rep, msg);
	*noted = rep.type != DP_APP_NOTE_INSTALLED_MANY_REPLY ? 0 :
		 rep.result.value > n ? n : (uint32_t)rep.result.value;
	if (!ret && *noted != n)
		ret = dp_err_set(msg, -EPROTO, "process %d: its agent noted %u of %u patches "
				 "and did not say why", (int)p->pid, *noted, n);
	dp_app_msg_release(&rep);
	return ret;
}

int dpd_notes_removed(struct dpd_proc *p, const uint64_t *sites, size_t n, struct dp_err *msg)
{
	int ret = 0, one;

	if (p->minor < DP_APP_MINOR_BATCH) {
		for (size_t i = 0; i < n && p->fd >= 0; i++) {
			one = dpd_agent_note_removed(p, sites[i], msg);
			ret = ret ? ret : one;
		}
		return ret;
	}
	for (size_t i = 0; i < n && p->fd >= 0; i += DP_APP_MAX_BATCH) {
		struct dp_app_msg req = { .type = DP_APP_NOTE_REMOVED_MANY }, rep;

		req.removed_many.nsites = (uint32_t)(n - i < DP_APP_MAX_BATCH ? n - i :
						     DP_APP_MAX_BATCH);
		req.removed_many.sites = (uint64_t *)(uintptr_t)(sites + i);
		one = dpd_agent_call(p, &req, &rep, msg);
		dp_app_msg_release(&rep);
		ret = ret ? ret : one;
	}
	return ret;
}

/* A led as the agent records it. */
static void led_of(const struct dp_app_patch *ap, const struct dpd_led *led,
		   struct dp_app_led *out)
{
	memset(out, 0, sizeof(*out));
	out->patch = *ap;
	out->nwrites = led ? led->nwrites : 0;
	if (led)
		memcpy(out->writes, led->w, led->nwrites * sizeof(led->w[0]));
}

/* NOTE_WRITES of n leds (at most DP_APP_MAX_BATCH): 0, or -errno with msg;
 * *noted says how many the agent recorded, in order. */
static int note_leds(struct dpd_proc *p, struct dp_app_led *leds, uint32_t n, uint32_t *noted,
		     struct dp_err *msg)
{
	struct dp_app_msg req = { .type = DP_APP_NOTE_WRITES }, rep;
	int ret;

	req.leds.nleds = n;
	req.leds.leds = leds;
	ret = dpd_agent_call(p, &req, &rep, msg);
	*noted = rep.type != DP_APP_NOTE_WRITES_REPLY ? 0 :
		 rep.result.value > n ? n : (uint32_t)rep.result.value;
	if (!ret && rep.result.status)
		ret = dp_err_set(msg, rep.result.status, "process %d: %s", (int)p->pid,
				 rep.result.error);
	if (!ret && *noted != n)
		ret = dp_err_set(msg, -EPROTO, "process %d: its agent recorded %u of %u leds "
				 "and did not say why", (int)p->pid, *noted, n);
	dp_app_msg_release(&rep);
	return ret;
}

/* NOTE_WRITES of the works with a led that stand, after their patches'
 * notes (a redirect has no other): 0, or -errno with msg; a redirect
 * recorded gets w->noted. */
static int leds_send(struct dpd_proc *p, struct dpd_work *ws, size_t n, struct dp_err *msg)
{
	struct dp_app_led *leds = NULL;
	size_t *at = NULL;
	int ret = 0;

	for (size_t i = 0; i < n && !ret;) {
		uint32_t k = 0, noted = 0;

		for (; i < n && k < DP_APP_MAX_BATCH; i++) {
			if (ws[i].fail || !ws[i].led.nwrites ||
			    (ws[i].rec.patch.method != DP_APP_METHOD_REDIRECT && !ws[i].noted))
				continue;
			if (!leds) {
				leds = malloc(DP_APP_MAX_BATCH * sizeof(*leds));
				at = malloc(DP_APP_MAX_BATCH * sizeof(*at));
				if (!leds || !at) {
					ret = dp_err_set(msg, -ENOMEM, "out of memory");
					break;
				}
			}
			at[k] = i;
			led_of(&ws[i].rec.patch, &ws[i].led, &leds[k++]);
		}
		if (!k || ret)
			break;
		ret = note_leds(p, leds, k, &noted, msg);
		for (uint32_t j = 0; j < noted; j++)
			if (ws[at[j]].rec.patch.method == DP_APP_METHOD_REDIRECT)
				ws[at[j]].noted = true;
	}
	free(leds);
	free(at);
	return ret;
}

/* Step 5 for every work that stands: NOTE_INSTALLED_MANY in batches (or one
 * NOTE_INSTALLED each for an older agent), then NOTE_WRITES of the leds.
 * 0, or -errno with msg; works noted have w->noted. */
static int notes_send(struct dpd_proc *p, struct dpd_work *ws, size_t n, struct dp_err *msg)
{
	struct dp_app_patch *aps;
	size_t *at;
	int ret = 0;

	if (p->minor < DP_APP_MINOR_BATCH) {
		for (size_t i = 0; i < n && !ret; i++) {
			if (ws[i].fail)
				continue;
			ret = dpd_agent_note(p, &ws[i].rec.patch, msg);
			ws[i].noted = !ret;
		}
		return ret;
	}
	aps = malloc(DP_APP_MAX_BATCH * sizeof(*aps));
	at = malloc(DP_APP_MAX_BATCH * sizeof(*at));
	if (!aps || !at) {
		free(aps);
		free(at);
		return dp_err_set(msg, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n && !ret;) {
		uint32_t k = 0, noted;

		for (; i < n && k < DP_APP_MAX_BATCH; i++) {
			if (ws[i].fail || ws[i].rec.patch.method == DP_APP_METHOD_REDIRECT)
				continue;
			at[k] = i;
			aps[k++] = ws[i].rec.patch;
		}
		if (!k)
			break;
		ret = note_many(p, aps, k, &noted, msg);
		for (uint32_t j = 0; j < noted; j++)
			ws[at[j]].noted = true;
	}
	free(aps);
	free(at);
	if (!ret)
		ret = leds_send(p, ws, n, msg);
	return ret;
}

void dpd_site_renote(struct dpd_proc *p, const struct dpd_site *s)
{
	const struct dpd_led *led = dpd_site_led(p, s);
	struct dp_err ignored;
	struct dp_app_led l;
	uint32_t noted;

	if (s->patch.method != DP_APP_METHOD_REDIRECT)
		dpd_agent_note(p, &s->patch, &ignored);
	if (led && led->nwrites && p->fd >= 0) {
		led_of(&s->patch, led, &l);
		note_leds(p, &l, 1, &noted, &ignored);
	}
}

/* Takes back w's note: the agent's record of the site is again what the
 * code holds (the patch w would have replaced, or none). */
void dpd_work_unnote(struct dpd_proc *p, struct dpd_work *w)
{
	struct dp_err ignored;

	if (w->noted && p->fd >= 0) {
		if (w->replaces)
			dpd_site_renote(p, &p->sites[w->old]);
		else
			dpd_agent_note_removed(p, w->rec.patch.site, &ignored);
	}
	w->noted = false;
}

void dpd_works_unnote(struct dpd_proc *p, struct dpd_work *ws, size_t n, bool failed_only)
{
	struct dp_err ignored;
	uint64_t *sites;
	size_t ns = 0;

	if (p->minor < DP_APP_MINOR_BATCH || p->fd < 0 ||
	    !(sites = malloc((n ? n : 1) * sizeof(*sites)))) {
		for (size_t i = 0; i < n; i++)
			if (!failed_only || ws[i].fail)
				dpd_work_unnote(p, &ws[i]);
		return;
	}
	/* A rebuilt patch's old note comes back (rare: one at a time); the
	 * new sites are forgotten in batches. */
	for (size_t i = 0; i < n; i++) {
		struct dpd_work *w = &ws[i];

		if (!w->noted || (failed_only && !w->fail))
			continue;
		if (w->replaces)
			dpd_work_unnote(p, w);
		else
			sites[ns++] = w->rec.patch.site;
		w->noted = false;
	}
	if (ns)
		dpd_notes_removed(p, sites, ns, &ignored);
	free(sites);
}

static double ms_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

/*
 * Steps 3 to 5 for every work: the new bytes checked, the probes found or
 * defined (in batches), the trampolines built in code blocks and written,
 * the patches noted (in batches).  0, or -errno with msg when the agent
 * failed us: then every note is taken back and every work dropped.
 */
int dpd_stage(struct dpd_proc *p, struct dpd_work *ws, size_t n, struct dp_err *msg)
{
	struct defs d = { .first = p->nprobes };
	struct dpd_site_ix ix = { 0 };
	int ret = 0;
	struct timespec t[7];

	clock_gettime(CLOCK_MONOTONIC, &t[0]);

	ret = dpd_site_ix_build(p, &ix) ? dp_err_set(msg, -ENOMEM, "out of memory") : 0;
	if (!ret)
		check_leds(p, &ix, ws, n);
	if (!ret)
		ret = check_works(p, ws, n);
	clock_gettime(CLOCK_MONOTONIC, &t[1]);
	for (size_t i = 0; i < n && !ret; i++)
		if (!ws[i].fail)
			ret = owner_probes(p, &d, &ws[i], msg);
	clock_gettime(CLOCK_MONOTONIC, &t[2]);
	/* Code memory first: an agent that cannot map any fails the request
	 * before it defines probes for nothing (a process short of memory
	 * may not even answer once they are defined).  Asked only when a
	 * patch needs a new trampoline, for the room it needs (prepare then
	 * carves it from the same block): a batch whose patches all reuse
	 * kept trampolines (an event enabled again) maps nothing. */
	for (size_t i = 0; i < n && !ret; i++) {
		uint64_t at;

		if (ws[i].fail)
			continue;
		work_probes(p, &ws[i]);
		if (reusable_tramp(p, &ix, &ws[i].rec.patch, &ws[i].led))
			continue;
		ret = code_alloc(p, ws[i].rec.patch.site, work_code_cap(&ws[i]), &at, msg);
		break;
	}
	if (ret)
		defs_drop(p, &d, 0);
	else
		ret = defs_send(p, &d, msg);
	defs_free(&d);
	clock_gettime(CLOCK_MONOTONIC, &t[3]);
	for (size_t i = 0; i < n && !ret; i++)
		if (!ws[i].fail)
			ret = prepare(p, &ix, &ws[i], msg);
	dpd_site_ix_free(&ix);
	clock_gettime(CLOCK_MONOTONIC, &t[4]);
	if (!ret)
		write_trampolines(p->pid, ws, n);
	clock_gettime(CLOCK_MONOTONIC, &t[5]);
	if (!ret)
		ret = notes_send(p, ws, n, msg);
	clock_gettime(CLOCK_MONOTONIC, &t[6]);
	/* Where a large batch's time goes (tests/perf/install-cost.sh). */
	dpd_dbg("process %d: %zu patches staged in %.1f ms: code checked %.1f, probes found "
		"%.1f and defined %.1f, trampolines built %.1f and written %.1f, noted %.1f",
		(int)p->pid, n, ms_between(&t[0], &t[6]), ms_between(&t[0], &t[1]),
		ms_between(&t[1], &t[2]), ms_between(&t[2], &t[3]), ms_between(&t[3], &t[4]),
		ms_between(&t[4], &t[5]), ms_between(&t[5], &t[6]));
	if (ret) {
		dpd_works_unnote(p, ws, n, false);
		for (size_t i = 0; i < n; i++)
			ws[i].fail = true;
	}
	return ret;
}

/* Records a written patch in p: as the record of its trampoline (one it
 * reused has one, a new one gets one); the patch it replaced is kept, not
 * installed. */
int dpd_work_record(struct dpd_proc *p, const struct dpd_work *w)
{
	struct dpd_site *s = NULL;

	for (uint32_t i = 0; !w->code && i < p->nsites; i++)
		if (p->sites[i].patch.site == w->rec.patch.site &&
		    p->sites[i].patch.tramp == w->rec.patch.tramp)
			s = &p->sites[i];
	if (!s) {
		if (dpd_proc_reserve(p, 0, 1))
			return -ENOMEM;
		s = &p->sites[p->nsites++];
		s->led = 0;
	}
	uint32_t slot = s->led;

	if (w->replaces)
		p->sites[w->old].installed = false;
	*s = w->rec;
	snprintf(s->event, sizeof(s->event), "%s", s->owners[0].ev->names[0]);
	s->installed = true;
	/* The record of a trampoline used again keeps its led's place (the
	 * same writes: the same window). */
	if (slot && slot <= p->nleds && w->led.nwrites) {
		p->leds[slot - 1] = w->led;
		s->led = slot;
		return 0;
	}
	return dpd_site_set_led(p, s, &w->led);
}

/* Makes w the rebuilding of the patch installed at p->sites[i], for its
 * owners so far. */
void dpd_work_rebuild(struct dpd_work *w, const struct dpd_proc *p, uint32_t i)
{
	const struct dpd_led *led = dpd_site_led(p, &p->sites[i]);

	w->replaces = true;
	w->old = i;
	w->rec.patch = p->sites[i].patch;
	if (led && led->recovered && p->sites[i].nowners) {
		/* Where each branch leads is its owners' plan's (the same
		 * writes: the plan claimed it). */
		const struct dpd_owner *o = &p->sites[i].owners[0];

		dpd_patch_led(o->pl, o->ev->obj->obj, o->bias, &w->led);
	} else if (led) {
		w->led = *led;
	} else {
		memset(&w->led, 0, sizeof(w->led));
	}
	w->rec.nowners = p->sites[i].nowners;
	memcpy(w->rec.owners, p->sites[i].owners, sizeof(w->rec.owners));
}

/*
 * A thread of pid that blocks SIGTRAP now (its tid, its name in comm), or
 * 0: an int3 it hit would kill the process.  lttng-ust's threads ("...-ust")
 * block every signal but run only lttng-ust, liburcu and libc code, where
 * no int3 is ever placed (dp_plan_traps_unsafe).
 */
pid_t dpd_sigtrap_blocker(pid_t pid, char *comm, size_t len)
{
	pid_t *tids, found = 0;
	size_t ntids;

	if (dp_proc_tasks(pid, &tids, &ntids))
		ntids = 0;
	for (size_t i = 0; i < ntids && !found; i++) {
		struct dp_proc_status st;
		pid_t tid = tids[i];
		size_t n;

		if (dp_proc_status_read(pid, tid, &st))
			continue;
		n = strlen(st.name);
		if ((n >= 4 && !strcmp(st.name + n - 4, "-ust")) ||
		    !(st.sig_blocked & (1ull << (SIGTRAP - 1))))
			continue;
		snprintf(comm, len, "%s", st.name);
		found = tid;
	}
	free(tids);
	return found;
}
