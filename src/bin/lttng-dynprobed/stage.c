/*
 * Steps 3 to 5 of patching (install.c's comment tells them all): for each
 * patch of a batch, the probes of the events it serves defined in the agent,
 * its trampoline built (or one built before reused) and written while the
 * program runs, then the patch noted to the agent; and the reports of what
 * became of each point.  install.c and remove.c (which rebuilds the patches
 * an event shared) stage their batches here; write.c then writes them in
 * one stop.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "proc/proc-status.h"
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

/* A probe of the event at `site` in p: an existing one, or a new one. */
static int get_probe(struct dpd_event *ev, struct dpd_proc *p, const struct dpd_point *pt,
		     uint64_t bias, uint32_t *id, uint64_t *handle, struct dp_err *msg)
{
	struct dp_ctx ctx[DP_APP_MAX_CTX];
	struct dp_app_msg req = { .type = DP_APP_DEFINE_PROBE }, rep;
	const char *name = dpd_event_point_name(ev, pt);
	uint64_t site = pt->vaddr + bias;
	uint32_t n = 0, flags = pt->role == DPD_ROLE_ENTRY ? DP_APP_PROBE_AT_ENTRY : 0;
	char sig[sizeof(p->probes[0].sig)];
	struct dpd_probe *pr;
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
	for (uint32_t i = 0; i < p->nprobes; i++) {
		pr = &p->probes[i];
		if (pr->site == site && pr->handle && !strcmp(pr->event, name) &&
		    !strcmp(pr->sig, sig)) {
			*id = pr->id;
			*handle = pr->handle;
			return 0;
		}
	}
	pr = realloc(p->probes, (p->nprobes + 1) * sizeof(*pr));
	if (!pr) {
		dp_err_set(msg, -ENOMEM, "out of memory");
		return -ENOMEM;
	}
	p->probes = pr;
	if (dp_app_ctx_need_ext(ctx, n)) {
		/* Recipes travel in DEFINE_PROBE_EXT, which older agents lack. */
		if (p->minor < DP_APP_MINOR_DEFINE_EXT)
			return dp_err_set(msg, -EPROTONOSUPPORT, "process %d: its agent (protocol "
					  "1.%u) is older than this daemon and cannot compute "
					  "typed values; restart the process with this version's "
					  "agent", (int)p->pid, (unsigned)p->minor);
		req.type = DP_APP_DEFINE_PROBE_EXT;
	}
	req.define_probe.id = p->next_id++;
	req.define_probe.site = site;
	req.define_probe.flags = flags;
	snprintf(req.define_probe.event, sizeof(req.define_probe.event), "%s", name);
	req.define_probe.nctx = n;
	req.define_probe.ctx = ctx;
	ret = dpd_agent_call(p, &req, &rep, msg);
	if (!ret) {
		pr = &p->probes[p->nprobes++];
		memset(pr, 0, sizeof(*pr));
		pr->id = req.define_probe.id;
		pr->site = site;
		pr->flags = flags;
		snprintf(pr->event, sizeof(pr->event), "%s", name);
		snprintf(pr->sig, sizeof(pr->sig), "%s", sig);
		pr->handle = rep.result.value;
		*id = pr->id;
		*handle = pr->handle;
	}
	dp_app_msg_release(&rep);
	return ret;
}

/*
 * A trampoline of p that can serve ap: one we built for the same window,
 * with the same probes for a jump (an int3's trampoline has no hooks, only
 * the relocated instruction and the way back).  Kept ones and the one in
 * place alike: trampoline code is never rewritten.
 */
static const struct dpd_site *reusable_tramp(const struct dpd_proc *p,
					     const struct dp_app_patch *ap)
{
	for (uint32_t i = 0; i < p->nsites; i++) {
		const struct dpd_site *s = &p->sites[i];

		if (!s->ninsns || !dpd_same_window(&s->patch, ap))
			continue;
		if (ap->method == DP_APP_METHOD_INT3 ||
		    (s->patch.nprobes == ap->nprobes &&
		     !memcmp(s->patch.probes, ap->probes, ap->nprobes * sizeof(ap->probes[0]))))
			return s;
	}
	return NULL;
}

/* The probes of every owner of w, and their hooks: 0, or -errno with msg
 * (w->fail, with the reports, when there are too many). */
static int owner_probes(struct dpd_proc *p, struct dpd_work *w, struct dp_tramp_hook *hooks,
			struct dp_err *msg)
{
	struct dp_app_patch *ap = &w->rec.patch;

	ap->nprobes = 0;
	for (uint32_t i = 0; i < w->rec.nowners; i++) {
		const struct dpd_owner *o = &w->rec.owners[i];

		for (unsigned k = 0; k < o->pl->npoints; k++) {
			const struct dpd_point *pt = &o->ev->points[o->pl->point_ids[k]];
			uint64_t handle;
			uint32_t id, j;
			int ret = get_probe(o->ev, p, pt, o->bias, &id, &handle, msg);

			if (ret)
				return ret;
			/* Events of one name with the same contexts (in two
			 * sessions) record through one probe. */
			for (j = 0; j < ap->nprobes && ap->probes[j] != id; j++)
				;
			if (j < ap->nprobes)
				continue;
			if (ap->nprobes == DP_APP_MAX_PATCH_PROBES) {
				char text[DP_CLIENT_TEXT_MAX];

				snprintf(text, sizeof(text), "the patch at 0x%" PRIx64
					 " would serve more than %d probes", ap->site,
					 DP_APP_MAX_PATCH_PROBES);
				dpd_work_fail(p->pid, w, DP_REASON_NONE, text);
				return 0;
			}
			hooks[ap->nprobes].addr = o->pl->points[k] + o->bias;
			hooks[ap->nprobes].arg = (void *)(uintptr_t)handle;
			ap->probes[ap->nprobes++] = id;
		}
	}
	return 0;
}

/* Whether the byte at addr belongs to a patch installed in p. */
static bool patched_byte(const struct dpd_proc *p, uint64_t addr)
{
	for (uint32_t i = 0; i < p->nsites; i++) {
		const struct dp_app_patch *ap = &p->sites[i].patch;

		if (p->sites[i].installed &&
		    ((addr >= ap->site && addr < ap->site + ap->len) ||
		     (addr >= ap->hop && addr < ap->hop + ap->hop_len)))
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

/* Step 3 for one patch: 0, or -errno with msg when the agent failed us;
 * otherwise a patch that cannot be made is dropped (w->fail). */
static int prepare(struct dpd_proc *p, struct dpd_work *w, struct dp_err *msg)
{
	static enum dp_vec_save vec = (enum dp_vec_save)-1;
	struct dp_app_patch *ap = &w->rec.patch;
	struct dp_tramp_hook hooks[DP_APP_MAX_PATCH_PROBES];
	const struct dpd_site *kept;
	enum dp_reason why = DP_REASON_NONE;
	struct dp_window win;
	struct dp_tramp tramp;
	struct dp_emit e;
	size_t cap, nhooks;
	int ret = 0;

	if ((int)vec < 0)
		vec = dp_vec_save_detect();
	/* A new patch's bytes must be the file's: another tool's patch, or
	 * code the program rewrote, is not ours to displace.  (A rebuilt
	 * patch is ours, in place.) */
	if (!w->replaces) {
		ret = check_orig(p, w, ap->site, ap->orig, ap->len);
		if (!ret && ap->hop_len)
			ret = check_orig(p, w, ap->hop, ap->hop_orig, ap->hop_len);
	}
	if (ret) {
		char text[DP_CLIENT_TEXT_MAX];

		if (ret == -ESTALE)
			snprintf(text, sizeof(text), "the code at 0x%" PRIx64 " differs from the "
				 "file (another tool patched it, or the program rewrote it)",
				 ap->site);
		else
			snprintf(text, sizeof(text), "cannot read the code at 0x%" PRIx64 ": %s",
				 ap->site, strerror(-ret));
		dpd_work_fail(p->pid, w, DP_REASON_NONE, text);
		return ret == -ESTALE ? 0 : ret;
	}

	ret = owner_probes(p, w, hooks, msg);
	if (ret || w->fail)
		return ret;
	kept = reusable_tramp(p, ap);
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
		return 0;
	}

	/* int3 sites reach their probes through the agent's trap table: their
	 * trampoline is only the relocated instruction and the way back. */
	nhooks = ap->method == DP_APP_METHOD_INT3 ? 0 : ap->nprobes;
	cap = dp_tramp_max_len(nhooks, vec);
	{
		struct dp_app_msg req = { .type = DP_APP_ALLOC_CODE }, rep;

		req.alloc_code.near = ap->site;
		req.alloc_code.size = (uint32_t)cap;
		ret = dpd_agent_call(p, &req, &rep, msg);
		ap->tramp = rep.result.value;
		dp_app_msg_release(&rep);
		if (ret)
			return ret;
	}
	w->code = calloc(1, cap);
	if (!w->code) {
		dp_err_set(msg, -ENOMEM, "out of memory");
		return -ENOMEM;
	}
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
	ap->tramp_len = (uint32_t)tramp.len;
	ap->resume = ap->method == DP_APP_METHOD_INT3 ? tramp.insn_at[0] : 0;
	w->rec.entry = tramp.entry;
	w->rec.ninsns = win.ninsns;
	memcpy(w->rec.off, win.off, sizeof(w->rec.off));
	memcpy(w->rec.insn_at, tramp.insn_at, sizeof(w->rec.insn_at));
	return 0;
}

/*
 * Step 4: the new trampolines written while the program runs: nothing
 * reaches them before their jumps exist, or their notes for int3s.  One
 * that cannot be written fails its patch alone.
 */
static void write_trampolines(pid_t pid, struct dpd_work *ws, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct dpd_work *w = &ws[i];
		const struct dp_app_patch *ap = &w->rec.patch;
		char text[DP_CLIENT_TEXT_MAX];
		int ret;

		if (w->fail || !w->code)
			continue;
		ret = dp_proc_mem_write(pid, ap->tramp, w->code, ap->tramp_len);
		if (!ret)
			continue;
		snprintf(text, sizeof(text), "cannot write the trampoline at 0x%" PRIx64 ": %s",
			 ap->tramp, ret == -EIO ? "short write" : strerror(-ret));
		dpd_work_fail(pid, w, DP_REASON_NONE, text);
	}
}

/* Takes back w's note: the agent's record of the site is again what the
 * code holds (the patch w would have replaced, or none). */
void dpd_work_unnote(struct dpd_proc *p, struct dpd_work *w)
{
	struct dp_err ignored;

	if (w->noted && p->fd >= 0) {
		if (w->replaces)
			dpd_agent_note(p, &p->sites[w->old].patch, &ignored);
		else
			dpd_agent_note_removed(p, w->rec.patch.site, &ignored);
	}
	w->noted = false;
}

/*
 * Steps 3 to 5 for every work.  0, or -errno with msg when the agent failed
 * us: then every note is taken back and every work dropped.
 */
int dpd_stage(struct dpd_proc *p, struct dpd_work *ws, size_t n, struct dp_err *msg)
{
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++)
		if (!ws[i].fail)
			ret = prepare(p, &ws[i], msg);
	if (!ret)
		write_trampolines(p->pid, ws, n);
	for (size_t i = 0; i < n && !ret; i++) {
		if (ws[i].fail)
			continue;
		ret = dpd_agent_note(p, &ws[i].rec.patch, msg);
		ws[i].noted = !ret;
	}
	for (size_t i = 0; i < n && ret; i++) {
		dpd_work_unnote(p, &ws[i]);
		ws[i].fail = true;
	}
	return ret;
}

/* Records a written patch in p: as the record of its trampoline (one it
 * reused has one, a new one gets one); the patch it replaced is kept, not
 * installed. */
int dpd_work_record(struct dpd_proc *p, const struct dpd_work *w)
{
	struct dpd_site *s = NULL, *v;

	for (uint32_t i = 0; !w->code && i < p->nsites; i++)
		if (p->sites[i].patch.site == w->rec.patch.site &&
		    p->sites[i].patch.tramp == w->rec.patch.tramp)
			s = &p->sites[i];
	if (!s) {
		v = realloc(p->sites, (p->nsites + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->sites = v;
		s = &p->sites[p->nsites++];
	}
	if (w->replaces)
		p->sites[w->old].installed = false;
	*s = w->rec;
	snprintf(s->event, sizeof(s->event), "%s", s->owners[0].ev->names[0]);
	s->installed = true;
	return 0;
}

/* Makes w the rebuilding of the patch installed at p->sites[i], for its
 * owners so far. */
void dpd_work_rebuild(struct dpd_work *w, const struct dpd_proc *p, uint32_t i)
{
	w->replaces = true;
	w->old = i;
	w->rec.patch = p->sites[i].patch;
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
