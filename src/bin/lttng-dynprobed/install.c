/*
 * Patching events into one process, and taking them out again.
 *
 * Install, for the events' plans (file addresses) at their objects' load
 * bias:
 *   1. the agent: injected when absent, then its HELLO;
 *   2. each plan entry placed on a patch: one of its own, or the patch of
 *      the same window (same site, length, method and hop) that another
 *      event has installed, or takes in the same request: the events share
 *      it, and its trampoline calls the probes of them all.  A window that
 *      only overlaps another's is refused (DP_REASON_OVERLAP);
 *   3. per patch, while the program runs: a new patch's bytes checked
 *      against the file, the probes of every event it serves defined
 *      (DEFINE_PROBE, reused when the same probe exists), a trampoline built
 *      locally for its remote address in ALLOC_CODE memory (or one built
 *      before reused: memory a thread may run in is never freed or
 *      rewritten);
 *   4. the new trampolines written, still while the program runs (nothing
 *      reaches them yet);
 *   5. each patch noted to the agent (NOTE_INSTALLED) before it can exist:
 *      an int3 must never reach the program unknown, and a daemon killed at
 *      any point leaves the agent knowing every patch that may be in the
 *      code (a new daemon forgets the noted ones whose site still holds its
 *      original bytes).  A rebuilt patch's note replaces the agent's record
 *      of the site, for an int3 its trap entry too: its trampoline, which a
 *      trapped thread resumes in at once, is written already;
 *   6. one stop of every thread for the whole batch: threads inside a new
 *      window moved to the matching relocated instruction, hops then jumps
 *      (or int3s) written; a rebuilt patch's jump retargeted to its new
 *      trampoline (threads inside the old one finish there); resume and
 *      detach;
 *   7. patches that could not be written taken back (NOTE_REMOVED, or the
 *      note of the patch still in place).
 * Remove takes an event out of its patches: those it shares are rebuilt for
 * the other events with steps 3 to 7, and in the same stop those it held
 * alone are restored: the site's bytes then the hop's, threads between a
 * hop and its trampoline sent on to the trampoline, threads about to run a
 * hook sent back to the original code, then NOTE_REMOVED.  The target is
 * never left with a half-written patch: a patch is written whole while
 * every thread is held, or not at all.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "proc/inject.h"
#include "proc/proc-status.h"
#include "proc/ptrace.h"
#include "x86/emit.h"

/* One patch to write: a new one, or an installed one rebuilt for another
 * set of owners. */
struct work {
	struct dpd_site rec;		/* what the process will hold, owners included */
	/* Each owner's report when it joins now; NULL for one that owned the
	 * patch already. */
	struct dp_client_proc *rps[DPD_SITE_MAX_OWNERS];
	bool replaces;			/* rec replaces the installed p->sites[old] */
	uint32_t old;
	uint8_t *code;			/* a new trampoline to write, or NULL */
	bool fail;			/* dropped: the joining owners' reports say why */
	bool noted;			/* noted to the agent already */
};

static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t)addr);
	close(fd);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

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
static void refuse_points(const struct dpd_owner *o, struct dp_client_proc *rp,
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

static void report_installed(const struct dpd_owner *o, struct dp_client_proc *rp)
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
static void fail_work(pid_t pid, struct work *w, enum dp_reason reason, const char *text)
{
	dpd_info("process %d: the patch at 0x%" PRIx64 " is not written: %s", (int)pid,
		 w->rec.patch.site, text ? text : dp_reason_str(reason));
	for (uint32_t i = 0; i < w->rec.nowners; i++)
		if (w->rps[i])
			refuse_points(&w->rec.owners[i], w->rps[i], reason, text);
	w->fail = true;
}

/* The window of plan entry pl at load bias `bias`, as the agent records it. */
static void patch_window(const struct dp_patch *pl, uint64_t bias, struct dp_app_patch *ap)
{
	memset(ap, 0, sizeof(*ap));
	ap->site = pl->win.addr + bias;
	ap->method = pl->method == DP_SITE_INT3 ? DP_APP_METHOD_INT3 : DP_APP_METHOD_JUMP;
	ap->len = pl->win.len;
	memcpy(ap->orig, pl->win.bytes, pl->win.len);
	if (pl->method == DP_SITE_JUMP && pl->hop.len) {
		ap->hop = pl->hop.addr + bias;
		ap->hop_len = pl->hop.len;
		memcpy(ap->hop_orig, pl->hop.bytes, pl->hop.len);
	}
}

/* Whether two patches overwrite the same bytes the same way: then they can
 * be one patch serving the probes of both. */
static bool same_window(const struct dp_app_patch *a, const struct dp_app_patch *b)
{
	return a->site == b->site && a->method == b->method && a->len == b->len &&
	       a->hop == b->hop && a->hop_len == b->hop_len;
}

/* Whether two byte ranges meet. */
static bool meets(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

/* Whether two patches write some byte in common, hops included. */
static bool patches_meet(const struct dp_app_patch *a, const struct dp_app_patch *b)
{
	return meets(a->site, a->len, b->site, b->len) ||
	       meets(a->site, a->len, b->hop, b->hop_len) ||
	       meets(a->hop, a->hop_len, b->site, b->len) ||
	       meets(a->hop, a->hop_len, b->hop, b->hop_len);
}

const struct dp_patch *dpd_event_window(const struct dpd_event *ev, uint64_t bias,
					const struct dp_app_patch *ap)
{
	for (size_t i = 0; i < ev->nplan; i++) {
		struct dp_app_patch w;

		if (ev->plan[i].method == DP_SITE_REFUSED || ev->plan[i].win.addr + bias != ap->site)
			continue;
		patch_window(&ev->plan[i], bias, &w);
		if (same_window(&w, ap))
			return &ev->plan[i];
	}
	return NULL;
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
	struct dp_ctx ctx[DP_CLIENT_MAX_CTX + 1];
	struct dp_app_msg req = { .type = DP_APP_DEFINE_PROBE }, rep;
	const char *name = dpd_event_point_name(ev, pt);
	uint64_t site = pt->vaddr + bias;
	uint32_t n = 0, flags = pt->role == DPD_ROLE_ENTRY ? DP_APP_PROBE_AT_ENTRY : 0;
	char sig[sizeof(p->probes[0].sig)];
	struct dpd_probe *pr;
	int ret;

	for (uint32_t i = 0; i < ev->nctx; i++) {
		ret = dpd_resolve_ctx(ev->obj, ev->ctx[i], bias, &ctx[n], msg);
		if (ret)
			return ret;
		n++;
	}
	if (pt->role == DPD_ROLE_RETURN && dp_ctx_parse("retval", NULL, NULL, &ctx[n], NULL) == 0)
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
		dpd_msg_set(msg, "out of memory");
		return -ENOMEM;
	}
	p->probes = pr;
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

		if (!s->ninsns || !same_window(&s->patch, ap))
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
static int owner_probes(struct dpd_proc *p, struct work *w, struct dp_tramp_hook *hooks,
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

				snprintf(text, sizeof(text), "the patch at 0x%" PRIx64 " would serve "
					 "more than %d probes", ap->site, DP_APP_MAX_PATCH_PROBES);
				fail_work(p->pid, w, DP_REASON_NONE, text);
				return 0;
			}
			hooks[ap->nprobes].addr = o->pl->points[k] + o->bias;
			hooks[ap->nprobes].arg = (void *)(uintptr_t)handle;
			ap->probes[ap->nprobes++] = id;
		}
	}
	return 0;
}

/* Step 3 for one patch: 0, or -errno with msg when the agent failed us;
 * otherwise a patch that cannot be made is dropped (w->fail). */
static int prepare(struct dpd_proc *p, struct work *w, struct dp_err *msg)
{
	static enum dp_vec_save vec = (enum dp_vec_save)-1;
	struct dp_app_patch *ap = &w->rec.patch;
	struct dp_tramp_hook hooks[DP_APP_MAX_PATCH_PROBES];
	uint8_t cur[DP_WINDOW_MAX_LEN];
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
		ret = read_mem(p->pid, ap->site, cur, ap->len);
		if (!ret && memcmp(cur, ap->orig, ap->len))
			ret = -ESTALE;
		if (!ret && ap->hop_len) {
			ret = read_mem(p->pid, ap->hop, cur, ap->hop_len);
			if (!ret && memcmp(cur, ap->hop_orig, ap->hop_len))
				ret = -ESTALE;
		}
	}
	if (ret) {
		char text[DP_CLIENT_TEXT_MAX];

		if (ret == -ESTALE)
			snprintf(text, sizeof(text), "the code at 0x%" PRIx64 " differs from the "
				 "file (another tool patched it, or the program rewrote it)", ap->site);
		else
			snprintf(text, sizeof(text), "cannot read the code at 0x%" PRIx64 ": %s",
				 ap->site, strerror(-ret));
		fail_work(p->pid, w, DP_REASON_NONE, text);
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
		dpd_msg_set(msg, "out of memory");
		return -ENOMEM;
	}
	/* The owners' windows are the same: the first one's instructions. */
	win = w->rec.owners[0].pl->win;
	win.addr = ap->site;
	dp_emit_init(&e, w->code, cap, ap->tramp);
	ret = dp_tramp_build(&e, &win, hooks, nhooks, (dp_handler_fn)(uintptr_t)p->probe_hit,
			     vec, &tramp, &why);
	if (ret) {
		free(w->code);
		w->code = NULL;
		fail_work(p->pid, w, why, why ? NULL : "the trampoline could not be built");
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

/* The bytes that go at a jump's site, or its hop. */
static void jump_bytes(const struct dp_app_patch *ap, uint64_t entry, uint8_t *site_bytes,
		       uint8_t *hop_bytes)
{
	memset(site_bytes, 0xcc, ap->len);
	if (ap->hop_len) {
		int32_t rel = (int32_t)(entry - (ap->hop + 5));

		hop_bytes[0] = 0xe9;
		memcpy(hop_bytes + 1, &rel, 4);
		site_bytes[0] = 0xeb;
		site_bytes[1] = (uint8_t)(int8_t)(ap->hop - (ap->site + 2));
	} else {
		int32_t rel = (int32_t)(entry - (ap->site + 5));

		site_bytes[0] = 0xe9;
		memcpy(site_bytes + 1, &rel, 4);
	}
}

static int note(struct dpd_proc *p, const struct dp_app_patch *ap, struct dp_err *msg)
{
	struct dp_app_msg req = { .type = DP_APP_NOTE_INSTALLED }, rep;
	int ret;

	req.note_installed = *ap;
	ret = dpd_agent_call(p, &req, &rep, msg);
	dp_app_msg_release(&rep);
	return ret;
}

static int note_removed(struct dpd_proc *p, uint64_t site, struct dp_err *msg)
{
	struct dp_app_msg req = { .type = DP_APP_NOTE_REMOVED }, rep;
	int ret;

	req.note_removed = site;
	ret = dpd_agent_call(p, &req, &rep, msg);
	dp_app_msg_release(&rep);
	return ret;
}

/* Ensures pid's agent talks to us: the process, or NULL with a message. */
static struct dpd_proc *ensure_agent(pid_t pid, struct dp_err *msg, int *err)
{
	struct dpd_proc *p = dpd_proc_find(pid);
	struct dp_inject_opts opts;
	struct dp_inject_result res;
	struct dp_proc_status st;
	char why[DP_CLIENT_MSG_MAX / 2] = "";
	int ret;

	if (p && p->fd >= 0)
		return p;
	dp_inject_opts_init(&opts);
	/* The agent connects to the daemon that loaded it, whoever owns the
	 * process and whatever its environment says of LTTNG_HOME. */
	opts.env_name = DP_APP_ENV_SOCKET;
	opts.env_value = dpd_cfg.app_sock;
	ret = dp_inject_agent(pid, dpd_cfg.agent_path, &opts, &res, why, sizeof(why));
	if (ret < 0) {
		*err = ret;
		if (ret == -DP_PROC_ENOPROC)
			dpd_msg_set(msg, "process %d exited during the operation", (int)pid);
		else
			dpd_msg_set(msg, "cannot load the agent into process %d: %s", (int)pid,
				    *why ? why : strerror(-ret));
		return NULL;
	}
	/* The stop totals are what a benchmark of the target's cost reads. */
	dpd_info("process %d: agent %s (%.3f ms, %u stops, %.3f ms in all, threads held %.3f ms)",
		 (int)pid, ret == DP_INJECT_ALREADY ? "already loaded" : "injected",
		 ret == DP_INJECT_ALREADY ? 0.0 : res.total_ns / 1e6,
		 ret == DP_INJECT_ALREADY ? 0 : res.nholds,
		 ret == DP_INJECT_ALREADY ? 0.0 : res.held_total_ns / 1e6, res.held_ns / 1e6);
	p = dpd_agent_wait(pid, ret == DP_INJECT_ALREADY ? 3000 : 10000);
	if (!p) {
		*err = kill(pid, 0) ? -ESRCH : -ETIMEDOUT;
		if (*err == -ESRCH)
			dpd_msg_set(msg, "process %d exited during the operation", (int)pid);
		else if (ret == DP_INJECT_ALREADY && !dp_proc_status_read(pid, 0, &st) &&
			 st.uid[1] != geteuid())
			dpd_msg_set(msg, "the agent in process %d was loaded when it started, and "
					 "talks to the lttng-dynprobed of its own user (uid %u): "
					 "run the command as that user", (int)pid,
				    (unsigned)st.uid[1]);
		else
			dpd_msg_set(msg, "the agent in process %d does not connect to %s: its "
					 "environment may name another socket "
					 "(LTTNG_DYNPROBE_APP_SOCKET)", (int)pid,
				    dpd_cfg.app_sock);
		return NULL;
	}
	return p;
}

/*
 * A thread of pid that blocks SIGTRAP now (its tid, its name in comm), or
 * 0: an int3 it hit would kill the process.  lttng-ust's threads ("...-ust")
 * block every signal but run only lttng-ust, liburcu and libc code, where
 * no int3 is ever placed (dp_plan_traps_unsafe).
 */
static pid_t sigtrap_blocker(pid_t pid, char *comm, size_t len)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	pid_t found = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	while (dir && !found && (d = readdir(dir))) {
		struct dp_proc_status st;
		pid_t tid = (pid_t)atoi(d->d_name);
		size_t n;

		if (tid <= 0 || dp_proc_status_read(pid, tid, &st))
			continue;
		n = strlen(st.name);
		if ((n >= 4 && !strcmp(st.name + n - 4, "-ust")) ||
		    !(st.sig_blocked & (1ull << (SIGTRAP - 1))))
			continue;
		snprintf(comm, len, "%s", st.name);
		found = tid;
	}
	if (dir)
		closedir(dir);
	return found;
}

/* Whether every point of the patch may be left out (dpd_point.optional). */
static bool optional_only(const struct dpd_event *ev, const struct dp_patch *pl)
{
	for (unsigned k = 0; k < pl->npoints; k++)
		if (!ev->points[pl->point_ids[k]].optional)
			return false;
	return true;
}

/* A site of ev that rp reports refused although its point may not be left
 * out (dpd_point.optional), or NULL. */
static const struct dp_client_site *required_refused(const struct dpd_event *ev,
						     const struct dp_client_proc *rp)
{
	for (uint32_t i = 0; i < rp->nsites; i++) {
		const struct dp_client_site *s = &rp->sites[i];

		if (s->method != DP_CLIENT_METHOD_REFUSED)
			continue;
		for (uint32_t k = 0; k < ev->npoints; k++)
			if (ev->points[k].vaddr == s->vaddr && !ev->points[k].optional)
				return s;
	}
	return NULL;
}

/* Whether ev owns the patch installed at `site` in p. */
static bool has_site(const struct dpd_proc *p, const struct dpd_event *ev, uint64_t site)
{
	for (uint32_t i = 0; i < p->nsites; i++)
		if (p->sites[i].installed && p->sites[i].patch.site == site &&
		    dpd_site_owned(&p->sites[i], ev))
			return true;
	return false;
}

/*
 * Step 4: the new trampolines written while the program runs: nothing
 * reaches them before their jumps exist, or their notes for int3s.  One
 * that cannot be written fails its patch alone.
 */
static void write_trampolines(pid_t pid, struct work *ws, size_t n)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	for (size_t i = 0; i < n; i++) {
		struct work *w = &ws[i];
		const struct dp_app_patch *ap = &w->rec.patch;
		char text[DP_CLIENT_TEXT_MAX];
		ssize_t done;

		if (w->fail || !w->code)
			continue;
		done = fd < 0 ? -1 : pwrite(fd, w->code, ap->tramp_len, (off_t)ap->tramp);
		if (done == (ssize_t)ap->tramp_len)
			continue;
		snprintf(text, sizeof(text), "cannot write the trampoline at 0x%" PRIx64 ": %s",
			 ap->tramp, done < 0 ? strerror(errno) : "short write");
		fail_work(pid, w, DP_REASON_NONE, text);
	}
	if (fd >= 0)
		close(fd);
}

/* Takes back w's note: the agent's record of the site is again what the
 * code holds (the patch w would have replaced, or none). */
static void unnote(struct dpd_proc *p, struct work *w)
{
	struct dp_err ignored;

	if (w->noted && p->fd >= 0) {
		if (w->replaces)
			note(p, &p->sites[w->old].patch, &ignored);
		else
			note_removed(p, w->rec.patch.site, &ignored);
	}
	w->noted = false;
}

/*
 * Steps 3 to 5 for every work.  0, or -errno with msg when the agent failed
 * us: then every note is taken back and every work dropped.
 */
static int stage(struct dpd_proc *p, struct work *ws, size_t n, struct dp_err *msg)
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
		ret = note(p, &ws[i].rec.patch, msg);
		ws[i].noted = !ret;
	}
	for (size_t i = 0; i < n && ret; i++) {
		unnote(p, &ws[i]);
		ws[i].fail = true;
	}
	return ret;
}

/* Writes a patch's bytes, threads held: a jump's hop first (nothing reaches
 * it before the rel8 exists), then its site; or the int3. */
static int put_patch(struct dp_proc *proc, const struct dp_app_patch *ap, uint64_t entry)
{
	uint8_t site_bytes[DP_WINDOW_MAX_LEN], hop_bytes[DP_APP_HOP_LEN];
	int ret = 0;

	if (ap->method == DP_APP_METHOD_INT3) {
		uint8_t int3 = 0xcc;

		return dp_proc_write(proc, ap->site, &int3, 1);
	}
	jump_bytes(ap, entry, site_bytes, hop_bytes);
	if (ap->hop_len)
		ret = dp_proc_write(proc, ap->hop, hop_bytes, ap->hop_len);
	if (!ret)
		ret = dp_proc_write(proc, ap->site, site_bytes, ap->len);
	return ret;
}

/*
 * The PCs of the held threads, read once for a whole batch: only moving a
 * thread changes one, into the trampoline of the patch being written, or
 * back to the original bytes of the patch being restored, never into
 * another patch's bytes, hop or trampoline.  A thread whose registers cannot
 * be read counts as everywhere (*n is SIZE_MAX, as it may be passed to mean
 * "check every thread"): every patch then checks it.
 */
static uint64_t *held_pcs(struct dp_proc *proc, size_t *n)
{
	size_t nt;
	const struct dp_thread *t = dp_proc_threads(proc, &nt);
	uint64_t *pcs = calloc(nt ? nt : 1, sizeof(*pcs));

	*n = pcs ? nt : SIZE_MAX;
	for (size_t i = 0; pcs && i < nt; i++) {
		struct user_regs_struct r;

		if (dp_proc_get_regs(proc, t[i].tid, &r)) {
			*n = SIZE_MAX;
			break;
		}
		pcs[i] = r.rip;
	}
	return pcs;
}

/* Whether a PC of held_pcs() may lie in [start, end). */
static bool pc_within(const uint64_t *pcs, size_t n, uint64_t start, uint64_t end)
{
	if (n == SIZE_MAX)
		return true;
	for (size_t i = 0; i < n; i++)
		if (pcs[i] >= start && pcs[i] < end)
			return true;
	return false;
}

/*
 * Puts a site's original bytes back, threads held: the site first, then the
 * hop (a thread between the two has taken the rel8: it goes on to the
 * trampoline's entry); a thread about to run a hook goes back to the
 * original code, its event being out from now on.  Only threads whose PC in
 * pcs (held_pcs) lies there are looked at.  0 or -errno.
 */
static int restore_site(struct dp_proc *proc, const uint64_t *pcs, size_t npcs,
			const struct dpd_site *s)
{
	const struct dp_app_patch *ap = &s->patch;
	uint8_t cur[DP_APP_HOP_LEN];
	uint64_t entry = s->entry;
	int ret;

	ret = dp_proc_write(proc, ap->site, ap->orig, ap->len);
	if (ap->hop_len && !ret) {
		if (!dp_proc_read(proc, ap->hop, cur, sizeof(cur)) && cur[0] == 0xe9) {
			int32_t rel;

			memcpy(&rel, cur + 1, 4);
			entry = ap->hop + 5 + (int64_t)rel;
		}
		struct dp_pc_move mv = { ap->hop, entry };

		if (pc_within(pcs, npcs, ap->hop, ap->hop + 1))
			dp_proc_move_pcs(proc, ap->hop, ap->hop + 1, &mv, 1, NULL);
		ret = dp_proc_write(proc, ap->hop, ap->hop_orig, ap->hop_len);
	}
	for (uint8_t i = 0; i < s->ninsns && ap->method == DP_APP_METHOD_JUMP; i++) {
		struct dp_pc_move mv = { s->insn_at[i], ap->site + s->off[i] };

		if (pc_within(pcs, npcs, s->insn_at[i], s->insn_at[i] + 1))
			dp_proc_move_pcs(proc, s->insn_at[i], s->insn_at[i] + 1, &mv, 1, NULL);
	}
	return ret;
}

/*
 * Writes w's patch, threads held: threads inside a new window moved to the
 * matching relocated instruction (a patch in place has none there: its
 * window is entered by its first byte only), then the bytes.  One that
 * cannot be written is dropped, and what it changed put back as it was.
 */
static void write_patch(struct dp_proc *proc, struct dpd_proc *p, const uint64_t *pcs,
			size_t npcs, struct work *w)
{
	const struct dp_app_patch *ap = &w->rec.patch;

	if (!w->replaces && ap->method == DP_APP_METHOD_JUMP &&
	    pc_within(pcs, npcs, ap->site, ap->site + ap->len)) {
		struct dp_pc_move map[DP_WINDOW_MAX_INSNS];
		size_t nm = 0;

		map[nm++] = (struct dp_pc_move){ ap->site, ap->site };
		for (uint8_t k = 1; k < w->rec.ninsns; k++)
			map[nm++] = (struct dp_pc_move){ ap->site + w->rec.off[k], w->rec.insn_at[k] };
		if (dp_proc_move_pcs(proc, ap->site, ap->site + ap->len, map, nm, NULL)) {
			fail_work(p->pid, w, DP_REASON_NONE, dp_proc_errmsg(proc));
			return;
		}
	}
	if (!put_patch(proc, ap, w->rec.entry))
		return;
	fail_work(p->pid, w, DP_REASON_NONE, dp_proc_errmsg(proc));
	/* Nothing half-written stays. */
	if (w->replaces)
		put_patch(proc, &p->sites[w->old].patch, p->sites[w->old].entry);
	else
		/* Threads this patch just moved are not where pcs says:
		 * every one is checked. */
		restore_site(proc, NULL, SIZE_MAX, &w->rec);
}

/*
 * Step 6: one stop of p's threads writes the works' patches, then restores
 * the sites `gone` (indexes in p->sites), marking them not installed.  0, or
 * -errno with msg when the threads could not be held (every work dropped)
 * or let go.
 */
static int hold_and_write(struct dpd_proc *p, struct work *ws, size_t n, const uint32_t *gone,
			  size_t ngone, struct dp_err *msg)
{
	struct dp_proc *proc;
	uint64_t *pcs;
	size_t npcs, nwrite = 0;
	int ret;

	for (size_t i = 0; i < n; i++)
		nwrite += !ws[i].fail;
	if (!nwrite && !ngone)
		return 0;
	proc = dp_proc_open(p->pid);
	if (!proc) {
		dpd_msg_set(msg, "out of memory");
		return -ENOMEM;
	}
	ret = dp_proc_attach(proc, 0);
	if (ret) {
		if (ret == -DP_PROC_ENOPROC)
			dpd_msg_set(msg, "process %d exited during the operation", (int)p->pid);
		else
			dpd_msg_set(msg, "%s", dp_proc_errmsg(proc));
		dp_proc_close(proc);
		for (size_t i = 0; i < n; i++)
			ws[i].fail = true;
		return ret;
	}
	pcs = held_pcs(proc, &npcs);
	/* Each patch stands alone: one that cannot be written is dropped
	 * (and reported) whole, the others go on. */
	for (size_t i = 0; i < n; i++)
		if (!ws[i].fail)
			write_patch(proc, p, pcs, npcs, &ws[i]);
	for (size_t k = 0; k < ngone; k++) {
		struct dpd_site *s = &p->sites[gone[k]];

		if (restore_site(proc, pcs, npcs, s))
			dpd_err("process %d: cannot restore 0x%" PRIx64 ": %s", (int)p->pid,
				s->patch.site, dp_proc_errmsg(proc));
		else
			s->installed = false;
	}
	free(pcs);
	if (dp_proc_detach(proc)) {
		dpd_msg_set(msg, "%s", dp_proc_errmsg(proc));
		ret = -ESRCH;
	}
	/* At info level, with the totals: a benchmark adds these lines up to
	 * know how long the target lost, and the longest stop ends the line
	 * as test-cycles.sh reads it. */
	{
		uint32_t nholds;
		uint64_t total = dp_proc_total_held_ns(proc, &nholds);

		dpd_info("process %d: a batch of %zu sites in %u stops, %.3f ms in all, "
			 "threads held %.3f ms", (int)p->pid, nwrite + ngone, nholds, total / 1e6,
			 dp_proc_max_held_ns(proc) / 1e6);
	}
	dp_proc_close(proc);
	return ret;
}

/* Records a written patch in p: as the record of its trampoline (one it
 * reused has one, a new one gets one); the patch it replaced is kept, not
 * installed. */
static int record(struct dpd_proc *p, const struct work *w)
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
static void rebuild(struct work *w, const struct dpd_proc *p, uint32_t i)
{
	w->replaces = true;
	w->old = i;
	w->rec.patch = p->sites[i].patch;
	w->rec.nowners = p->sites[i].nowners;
	memcpy(w->rec.owners, p->sites[i].owners, sizeof(w->rec.owners));
}

/*
 * Step 2 for one plan entry of an event joining now (owner o, reported in
 * rp, at window ap): onto the work of the batch that writes the same
 * window, or a new work, which rebuilds the patch installed there if any.
 * A window that meets another without being the same is refused.  The
 * works from `others` on are the event's own: its plan's patches never
 * meet.
 */
static void place(struct dpd_proc *p, struct work *ws, size_t *n, size_t others,
		  const struct dpd_owner *o, struct dp_client_proc *rp,
		  const struct dp_app_patch *ap)
{
	const struct dpd_site *in_place = NULL;
	const char *holder = NULL;
	struct work *w = NULL;
	char text[DP_CLIENT_TEXT_MAX];
	uint32_t old = 0, nowners;
	uint64_t at = 0;

	for (size_t i = 0; i < others && !w && !holder; i++) {
		if (!patches_meet(&ws[i].rec.patch, ap))
			continue;
		if (same_window(&ws[i].rec.patch, ap)) {
			w = &ws[i];
		} else {
			holder = ws[i].rec.owners[0].ev->names[0];
			at = ws[i].rec.patch.site;
		}
	}
	for (uint32_t i = 0; i < p->nsites && !w && !in_place && !holder; i++) {
		const struct dpd_site *s = &p->sites[i];

		if (!s->installed || !patches_meet(&s->patch, ap))
			continue;
		if (same_window(&s->patch, ap)) {
			in_place = s;
			old = i;
		} else {
			holder = s->nowners ? s->owners[0].ev->names[0] :
				 s->event[0] ? s->event : "an event this daemon does not know";
			at = s->patch.site;
		}
	}
	if (holder) {
		snprintf(text, sizeof(text), "%s (the patch at 0x%" PRIx64 " of %s): probes at "
			 "the same address share one patch", dp_reason_str(DP_REASON_OVERLAP), at,
			 holder);
		refuse_points(o, rp, DP_REASON_OVERLAP, text);
		return;
	}
	nowners = w ? w->rec.nowners : in_place ? in_place->nowners : 0;
	if (nowners == DPD_SITE_MAX_OWNERS) {
		snprintf(text, sizeof(text), "%d events share the patch at 0x%" PRIx64 " already",
			 DPD_SITE_MAX_OWNERS, ap->site);
		refuse_points(o, rp, DP_REASON_NONE, text);
		return;
	}
	if (!w) {
		w = &ws[(*n)++];
		w->rec.patch = *ap;
	}
	if (in_place)
		rebuild(w, p, old);
	w->rps[w->rec.nowners] = rp;
	w->rec.owners[w->rec.nowners++] = *o;
}

int dpd_install(struct dpd_event *ev, pid_t pid, struct dp_client_proc *rp)
{
	return dpd_install_many(&ev, 1, pid, &rp);
}

int dpd_install_many(struct dpd_event *const *evs, size_t nev, pid_t pid,
		     struct dp_client_proc *const *rps)
{
	struct dp_err msg = DP_ERR_INIT;
	struct dpd_proc *p;
	struct work *ws = NULL;
	uint64_t *bias;
	size_t n = 0, nplan = 0;
	char blocker_comm[64] = "";
	pid_t blocker = 0;
	int ret = 0;

	bias = calloc(nev ? nev : 1, sizeof(*bias));
	if (!bias) {
		ret = -ENOMEM;
		dpd_msg_set(&msg, "out of memory");
		goto out;
	}
	for (size_t e = 0; e < nev; e++) {
		rps[e]->pid = (uint32_t)pid;
		nplan += evs[e]->nplan;
	}
	for (size_t e = 0; e < nev; e++) {
		ret = dpd_object_bias(evs[e]->obj, pid, &bias[e]);
		if (ret == -ESRCH) {
			dpd_msg_set(&msg, "no process %d (it exited)", (int)pid);
			goto out;
		}
		if (ret) {
			dpd_msg_set(&msg, "%s is not mapped in process %d: give the path of an "
					  "object it has loaded (see /proc/%d/maps)", evs[e]->path,
				    (int)pid, (int)pid);
			goto out;
		}
	}
	p = ensure_agent(pid, &msg, &ret);
	if (!p)
		goto out;
	blocker = sigtrap_blocker(pid, blocker_comm, sizeof(blocker_comm));

	ws = calloc(nplan ? nplan : 1, sizeof(*ws));
	if (!ws) {
		ret = -ENOMEM;
		dpd_msg_set(&msg, "out of memory");
		goto out;
	}
	/* Everything that needs no stop is done for every event first: the
	 * trampolines are unreachable until their jumps exist, so only the
	 * writing below holds the threads, once for the whole request. */
	for (size_t e = 0; e < nev; e++) {
		struct dpd_event *ev = evs[e];
		size_t others = n;

		for (size_t i = 0; i < ev->nplan; i++) {
			const struct dpd_owner o = { ev, &ev->plan[i], bias[e] };
			struct dp_app_patch ap;

			if (o.pl->method == DP_SITE_REFUSED) {
				refuse_points(&o, rps[e], o.pl->reason, NULL);
				continue;
			}
			if (o.pl->method == DP_SITE_INT3 && blocker) {
				char text[DP_CLIENT_TEXT_MAX];

				snprintf(text, sizeof(text), "only an int3 fits, and thread %d (%s) of "
					 "process %d blocks SIGTRAP: an int3 it hit would kill the "
					 "process", (int)blocker, blocker_comm, (int)pid);
				/* As in planning: the probe point or a function's entry
				 * must be placeable, a return site may be left out. */
				if (!optional_only(ev, o.pl)) {
					dpd_msg_set(&msg, "the site 0x%" PRIx64 " of %s: %s",
						    o.pl->win.addr, ev->path, text);
					ret = -ENOTSUP;
					goto undo;
				}
				refuse_points(&o, rps[e], DP_REASON_TRAP_UNSAFE, text);
				continue;
			}
			patch_window(o.pl, o.bias, &ap);
			if (has_site(p, ev, ap.site)) {
				report_installed(&o, rps[e]);
				continue;
			}
			place(p, ws, &n, others, &o, rps[e], &ap);
		}
	}
	ret = stage(p, ws, n, &msg);
	if (ret)
		goto undo;
	/* As in planning: a probe point or a function's entry that cannot be
	 * placed here (another event's bytes, code that changed) fails the
	 * request in this process, before anything is written. */
	for (size_t e = 0; e < nev && !ret; e++) {
		const struct dp_client_site *s = required_refused(evs[e], rps[e]);

		if (!s)
			continue;
		dpd_msg_set(&msg, "%s at 0x%" PRIx64 " (0x%" PRIx64 " of %s) cannot be placed: %s",
			    s->event, s->addr, s->vaddr, evs[e]->path, s->text);
		ret = strcmp(s->reason, dp_reason_name(DP_REASON_OVERLAP)) ? -ENOTSUP : -EBUSY;
	}
	if (ret)
		goto undo;
	if (dpd_cfg.test_pause_ms) {
		dpd_info("test pause: %d ms before writing into process %d", dpd_cfg.test_pause_ms,
			 (int)pid);
		usleep((useconds_t)dpd_cfg.test_pause_ms * 1000);
	}
	ret = hold_and_write(p, ws, n, NULL, 0, &msg);
	if (ret)
		goto undo;
	for (size_t i = 0; i < n; i++) {
		struct work *w = &ws[i];

		if (w->fail) {
			unnote(p, w);
			continue;
		}
		if (record(p, w))
			dpd_err("process %d: out of memory recording a patch", (int)pid);
		for (uint32_t k = 0; k < w->rec.nowners; k++)
			if (w->rps[k])
				report_installed(&w->rec.owners[k], w->rps[k]);
	}
	msg.msg[0] = '\0';
	goto out;

undo:
	/* Nothing was written, or hold_and_write put back what it wrote: only
	 * the agent's notes are to take back. */
	p = dpd_proc_find(pid);
	for (size_t i = 0; i < n && p; i++)
		unnote(p, &ws[i]);
	if (p && p->fd < 0 && kill(pid, 0)) {
		dpd_msg_set(&msg, "process %d exited during the operation", (int)pid);
		dpd_proc_forget(p);
		ret = -ESRCH;
	}
out:
	for (size_t i = 0; i < n; i++)
		free(ws[i].code);
	free(ws);
	free(bias);
	/* One outcome for the whole request in this process: a failure
	 * wrote nothing of any event. */
	for (size_t e = 0; e < nev; e++) {
		rps[e]->status = ret > 0 ? -ret : ret;
		snprintf(rps[e]->message, sizeof(rps[e]->message), "%s", msg.msg);
		if (ret)
			dpd_info("install %s in %d: %s", evs[e]->names[0], (int)pid, msg.msg);
	}
	return ret > 0 ? -ret : ret;
}

/* Counts a site ev left in its report. */
static void report_left(struct dp_client_proc *rp, const struct dp_app_patch *ap)
{
	if (rp && ap->method == DP_APP_METHOD_INT3)
		rp->nint3++;
	else if (rp)
		rp->njump++;
}

int dpd_remove(struct dpd_event *ev, struct dpd_proc *p, struct dp_client_proc *rp)
{
	struct dp_err msg = DP_ERR_INIT;
	struct work *ws;
	uint32_t *gone, ngone = 0, nstay = 0;
	size_t n = 0;
	pid_t pid = p->pid;
	int ret;

	if (rp)
		rp->pid = (uint32_t)pid;
	ws = calloc(p->nsites ? p->nsites : 1, sizeof(*ws));
	gone = calloc(p->nsites ? p->nsites : 1, sizeof(*gone));
	if (!ws || !gone) {
		free(ws);
		free(gone);
		return -ENOMEM;
	}
	/* A patch ev shares is rebuilt for the others; one it holds alone
	 * (or every one, without ev) is restored. */
	for (uint32_t i = 0; i < p->nsites; i++) {
		const struct dpd_site *s = &p->sites[i];
		struct work *w;

		if (!s->installed || (ev && !dpd_site_owned(s, ev)))
			continue;
		if (!ev || s->nowners < 2) {
			gone[ngone++] = i;
			continue;
		}
		w = &ws[n++];
		rebuild(w, p, i);
		dpd_site_disown(&w->rec, ev);
	}
	if (stage(p, ws, n, &msg))
		dpd_info("process %d: the patches %s shares stay: %s", (int)pid, ev->names[0],
			 msg.msg);
	ret = hold_and_write(p, ws, n, gone, ngone, &msg);
	if (ret == -DP_PROC_ENOPROC) {
		/* Gone: nothing to restore, and nothing to remember. */
		if (rp) {
			rp->status = -ESRCH;
			snprintf(rp->message, sizeof(rp->message), "process %d exited", (int)pid);
		}
		dpd_proc_forget(p);
		goto out;
	}
	for (uint32_t k = 0; k < ngone; k++) {
		const struct dpd_site *s = &p->sites[gone[k]];

		if (s->installed) {
			nstay++;
			continue;
		}
		report_left(rp, &s->patch);
		if (p->fd >= 0 && note_removed(p, s->patch.site, &msg))
			dpd_info("process %d: %s", (int)pid, msg.msg);
	}
	for (size_t i = 0; i < n; i++) {
		struct work *w = &ws[i];

		if (w->fail) {
			unnote(p, w);
			nstay++;
			continue;
		}
		if (record(p, w))
			dpd_err("process %d: out of memory recording a patch", (int)pid);
		report_left(rp, &w->rec.patch);
	}
	if (ret || nstay) {
		if (!ret)
			dpd_msg_set(&msg, "%u patches of process %d could not change: they stay as "
					  "they were", nstay, (int)pid);
		ret = ret ? ret : -EIO;
		if (rp) {
			rp->status = ret;
			snprintf(rp->message, sizeof(rp->message), "%s", msg.msg);
		}
		dpd_err("remove from %d: %s", (int)pid, msg.msg);
	}
out:
	for (size_t i = 0; i < n; i++)
		free(ws[i].code);
	free(ws);
	free(gone);
	return ret;
}

void dpd_remove_everywhere(struct dpd_event *ev, struct dp_client_report *rep)
{
	size_t n = 0, k = 0;
	pid_t *pids;

	/* By pid: a removal may forget its process (it exited). */
	for (struct dpd_proc *p = dpd_procs; p; p = p->next)
		n++;
	pids = calloc(n ? n : 1, sizeof(*pids));
	if (!pids) {
		dpd_err("out of memory removing %s", ev->names[0]);
		return;
	}
	for (struct dpd_proc *p = dpd_procs; p; p = p->next) {
		uint32_t j, i;

		if (dpd_proc_count_sites(p, ev, &j, &i))
			pids[k++] = p->pid;
	}
	for (size_t i = 0; i < k; i++) {
		struct dpd_proc *p = dpd_proc_find(pids[i]);

		if (p)
			dpd_remove(ev, p, rep ? dp_client_report_add_proc(rep) : NULL);
	}
	free(pids);
}

/* The real uid of pid, or -1. */
static long proc_uid(pid_t pid)
{
	char path[64], line[256];
	long uid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %ld", &uid) == 1)
			break;
	fclose(f);
	return uid;
}

/*
 * Whether pid runs one of lttng's own programs.  A path alone must not
 * reach into them: the agent brings liblttng-ust, and a session or consumer
 * daemon that traced itself could deadlock on its own buffers.  (Naming
 * such a process with --pid is still the user's choice.)
 */
static bool is_lttng_program(pid_t pid)
{
	static const char *const names[] = {
		"lttng", "lttng-sessiond", "lttng-consumerd", "lttng-relayd",
		"lttng-dynprobed", "babeltrace2",
	};
	char link[64], exe[PATH_MAX];
	const char *base;
	ssize_t len;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	len = readlink(link, exe, sizeof(exe) - 1);
	if (len <= 0)
		return false;
	exe[len] = '\0';
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]);

		/* An executable replaced on disk reads "NAME (deleted)". */
		if (!strncmp(base, names[i], n) && (!base[n] || !strcmp(base + n, " (deleted)")))
			return true;
	}
	return false;
}

int dpd_find_mappers(struct dpd_event *ev, pid_t **pids, size_t *n)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t cap = 0;

	*pids = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		long uid;

		if (*end || pid <= 0 || pid == getpid())
			continue;
		uid = proc_uid((pid_t)pid);
		/* The owner's processes only, for root too: a path alone never
		 * reaches into every process of the machine. */
		if (uid < 0 || (uid_t)uid != ev->owner)
			continue;
		if (is_lttng_program((pid_t)pid))
			continue;
		if (!dpd_object_mapped(ev->obj, (pid_t)pid))
			continue;
		if (*n == cap) {
			pid_t *v = realloc(*pids, (cap ? cap * 2 : 16) * sizeof(*v));

			if (!v)
				break;
			*pids = v;
			cap = cap ? cap * 2 : 16;
		}
		(*pids)[(*n)++] = (pid_t)pid;
	}
	closedir(d);
	return 0;
}
