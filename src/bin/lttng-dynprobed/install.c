/*
 * Patching one event into one process, and taking it out again.
 *
 * Install, for the event's plan (file addresses) at the object's load bias:
 *   1. the agent: injected when absent, then its HELLO;
 *   2. per patch, while the program runs: the bytes checked against the
 *      file, the probes defined (DEFINE_PROBE, reused when the same probe
 *      exists), a trampoline built locally for its remote address in
 *      ALLOC_CODE memory (or a kept one reused: memory a thread may run in
 *      is never freed or rewritten), and the patch noted to the agent
 *      (NOTE_INSTALLED) before it can exist: an int3 must never reach the
 *      program unknown, and a daemon killed at any point leaves the agent
 *      knowing every patch that may be in the code (a new daemon forgets
 *      the noted ones whose site still holds its original bytes);
 *   3. the new trampolines written, still while the program runs (nothing
 *      reaches them yet);
 *   4. one stop of every thread for the whole batch: threads inside a
 *      window moved to the matching relocated instruction, hops then jumps
 *      (or int3s) written; resume and detach;
 *   5. patches that could not be written taken back (NOTE_REMOVED).
 * Remove is the same in reverse: one stop, the site's bytes then the hop's
 * restored, threads between a hop and its trampoline sent on to the
 * trampoline, threads about to run a hook sent back to the original code,
 * then NOTE_REMOVED.  The target is never left with a half-written patch: a
 * patch is written whole while every thread is held, or not at all.
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

/* One patch of the batch being installed. */
struct work {
	struct dpd_event *ev;		/* the event whose plan holds pl */
	uint64_t bias;			/* of ev's object in the process */
	struct dp_client_proc *rp;	/* ev's report for the process */
	const struct dp_patch *pl;
	struct dpd_site rec;		/* what the process will hold */
	uint8_t *code;			/* a new trampoline to write, or NULL */
	bool fail;			/* dropped: rp says why */
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

/* Reports every point of a patch as refused, with a reason or a text. */
static void refuse_points(struct dpd_event *ev, const struct dp_patch *pl, uint64_t bias,
			  struct dp_client_proc *rp, enum dp_reason reason, const char *text)
{
	for (unsigned k = 0; k < pl->npoints; k++) {
		const struct dpd_point *pt = &ev->points[pl->point_ids[k]];
		struct dp_client_site *s = add_site(rp, dpd_event_point_name(ev, pt),
						    pt->vaddr + bias, pt->vaddr);

		if (!s)
			continue;
		s->method = DP_CLIENT_METHOD_REFUSED;
		snprintf(s->reason, sizeof(s->reason), "%s",
			 reason ? dp_reason_name(reason) : "error");
		snprintf(s->text, sizeof(s->text), "%s", text ? text : dp_reason_str(reason));
		rp->nrefused++;
	}
}

static void report_installed(struct dpd_event *ev, const struct dp_patch *pl, uint64_t bias,
			     struct dp_client_proc *rp)
{
	for (unsigned k = 0; k < pl->npoints; k++) {
		const struct dpd_point *pt = &ev->points[pl->point_ids[k]];
		struct dp_client_site *s = add_site(rp, dpd_event_point_name(ev, pt),
						    pt->vaddr + bias, pt->vaddr);

		if (s)
			dpd_plan_method(pl, s);
		if (rp && pl->method == DP_SITE_INT3)
			rp->nint3++;
		else if (rp)
			rp->njump++;
	}
}

/* Whether two byte ranges meet. */
static bool meets(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

/* Another installed patch of p writes some byte this one would. */
static const struct dpd_site *overlap(const struct dpd_proc *p, uint64_t site, uint8_t len,
				      uint64_t hop, uint8_t hop_len)
{
	for (uint32_t i = 0; i < p->nsites; i++) {
		const struct dp_app_patch *o = &p->sites[i].patch;

		if (!p->sites[i].installed)
			continue;
		if (meets(site, len, o->site, o->len) || meets(site, len, o->hop, o->hop_len) ||
		    meets(hop, hop_len, o->site, o->len) || meets(hop, hop_len, o->hop, o->hop_len))
			return &p->sites[i];
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
		     uint64_t bias, uint32_t *id, uint64_t *handle, struct dpd_msg *msg)
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
	if (pt->role == DPD_ROLE_RETURN) {
		const char *err = NULL;

		if (dp_ctx_parse("retval", &ctx[n], &err) == 0)
			n++;
	}
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

/* A kept trampoline of p for exactly this patch (same window, same probes). */
static const struct dpd_site *kept_tramp(const struct dpd_proc *p, const struct dp_app_patch *ap)
{
	for (uint32_t i = 0; i < p->nsites; i++) {
		const struct dpd_site *s = &p->sites[i];

		if (s->installed || !s->ninsns || s->patch.site != ap->site ||
		    s->patch.method != ap->method || s->patch.len != ap->len ||
		    s->patch.hop != ap->hop || s->patch.nprobes != ap->nprobes ||
		    memcmp(s->patch.probes, ap->probes, ap->nprobes * sizeof(ap->probes[0])))
			continue;
		return s;
	}
	return NULL;
}

/* Step 2 for one patch: 0, or -errno with w->fail (and the reason in rp). */
static int prepare(struct dpd_event *ev, struct dpd_proc *p, uint64_t bias, struct work *w,
		   struct dp_client_proc *rp, struct dpd_msg *msg)
{
	static enum dp_vec_save vec = (enum dp_vec_save)-1;
	const struct dp_patch *pl = w->pl;
	struct dp_app_patch *ap = &w->rec.patch;
	struct dp_tramp_hook hooks[DP_PATCH_MAX_POINTS];
	uint64_t handles[DP_PATCH_MAX_POINTS];
	uint8_t cur[DP_WINDOW_MAX_LEN];
	const struct dpd_site *other, *kept;
	enum dp_reason why = DP_REASON_NONE;
	struct dp_window win;
	struct dp_tramp tramp;
	struct dp_emit e;
	size_t cap;
	int ret;

	if ((int)vec < 0)
		vec = dp_vec_save_detect();
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

	other = overlap(p, ap->site, ap->len, ap->hop, ap->hop_len);
	if (other) {
		char text[DP_CLIENT_TEXT_MAX];

		snprintf(text, sizeof(text), "%s (the patch at 0x%" PRIx64 " of %s)",
			 dp_reason_str(DP_REASON_OVERLAP), other->patch.site,
			 other->ev ? other->ev->names[0] : other->event);
		refuse_points(ev, pl, bias, rp, DP_REASON_OVERLAP, text);
		w->fail = true;
		return 0;
	}
	/* The program's bytes must be the file's: another tool's patch, or
	 * code the program rewrote, is not ours to displace. */
	ret = read_mem(p->pid, ap->site, cur, ap->len);
	if (!ret && memcmp(cur, ap->orig, ap->len))
		ret = -ESTALE;
	if (!ret && ap->hop_len) {
		ret = read_mem(p->pid, ap->hop, cur, ap->hop_len);
		if (!ret && memcmp(cur, ap->hop_orig, ap->hop_len))
			ret = -ESTALE;
	}
	if (ret) {
		char text[DP_CLIENT_TEXT_MAX];

		if (ret == -ESTALE)
			snprintf(text, sizeof(text), "the code at 0x%" PRIx64 " differs from the "
				 "file (another tool patched it, or the program rewrote it)", ap->site);
		else
			snprintf(text, sizeof(text), "cannot read the code at 0x%" PRIx64 ": %s",
				 ap->site, strerror(-ret));
		refuse_points(ev, pl, bias, rp, DP_REASON_NONE, text);
		w->fail = true;
		return ret == -ESTALE ? 0 : ret;
	}

	for (unsigned k = 0; k < pl->npoints; k++) {
		const struct dpd_point *pt = &ev->points[pl->point_ids[k]];

		ret = get_probe(ev, p, pt, bias, &ap->probes[k], &handles[k], msg);
		if (ret)
			return ret;
		hooks[k].addr = pl->points[k] + bias;
		hooks[k].arg = (void *)(uintptr_t)handles[k];
	}
	ap->nprobes = pl->npoints;

	kept = kept_tramp(p, ap);
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

	cap = dp_tramp_max_len(ap->method == DP_APP_METHOD_INT3 ? 0 : pl->npoints, vec);
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
	win = pl->win;
	win.addr = ap->site;
	dp_emit_init(&e, w->code, cap, ap->tramp);
	/* int3 sites reach their probes through the agent's trap table: their
	 * trampoline is only the relocated instruction and the way back. */
	ret = dp_tramp_build(&e, &win, hooks, ap->method == DP_APP_METHOD_INT3 ? 0 : pl->npoints,
			     (dp_handler_fn)(uintptr_t)p->probe_hit, vec, &tramp, &why);
	if (ret) {
		free(w->code);
		w->code = NULL;
		refuse_points(ev, pl, bias, rp, why, why ? NULL : "the trampoline could not be built");
		w->fail = true;
		return 0;
	}
	ap->tramp_len = (uint32_t)tramp.len;
	if (ap->method == DP_APP_METHOD_INT3)
		ap->resume = tramp.insn_at[0];
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

static int note(struct dpd_proc *p, const struct dp_app_patch *ap, struct dpd_msg *msg)
{
	struct dp_app_msg req = { .type = DP_APP_NOTE_INSTALLED }, rep;
	int ret;

	req.note_installed = *ap;
	ret = dpd_agent_call(p, &req, &rep, msg);
	dp_app_msg_release(&rep);
	return ret;
}

static int note_removed(struct dpd_proc *p, uint64_t site, struct dpd_msg *msg)
{
	struct dp_app_msg req = { .type = DP_APP_NOTE_REMOVED }, rep;
	int ret;

	req.note_removed = site;
	ret = dpd_agent_call(p, &req, &rep, msg);
	dp_app_msg_release(&rep);
	return ret;
}

/* Records a written patch in p (replacing a kept record of the same site). */
static int record(struct dpd_proc *p, struct dpd_event *ev, struct work *w)
{
	struct dpd_site *s = NULL, *v;

	for (uint32_t i = 0; i < p->nsites; i++)
		if (p->sites[i].patch.site == w->rec.patch.site && !p->sites[i].installed)
			s = &p->sites[i];
	if (!s) {
		v = realloc(p->sites, (p->nsites + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->sites = v;
		s = &p->sites[p->nsites++];
	}
	*s = w->rec;
	s->ev = ev;
	snprintf(s->event, sizeof(s->event), "%s", ev->names[0]);
	s->installed = true;
	return 0;
}

/* Ensures pid's agent talks to us: the process, or NULL with a message. */
static struct dpd_proc *ensure_agent(pid_t pid, struct dpd_msg *msg, int *err)
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
	opts.env_name = "LTTNG_DYNPROBE_APP_SOCKET";
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

/* Whether ev already has the patch at `site` installed in p. */
static bool has_site(const struct dpd_proc *p, const struct dpd_event *ev, uint64_t site)
{
	for (uint32_t i = 0; i < p->nsites; i++)
		if (p->sites[i].installed && p->sites[i].ev == ev &&
		    p->sites[i].patch.site == site)
			return true;
	return false;
}

/*
 * Writes the batch's new trampolines while the program runs: nothing
 * reaches them before their jumps exist.  One that cannot be written fails
 * its patch alone.
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
		refuse_points(w->ev, w->pl, w->bias, w->rp, DP_REASON_NONE, text);
		w->fail = true;
	}
	if (fd >= 0)
		close(fd);
}

/*
 * The PCs of the held threads, read once for a whole batch: only moving a
 * thread changes one, and that moves it into a trampoline, never into
 * another patch's bytes.  A thread whose registers cannot be read counts as
 * everywhere (its PC is 0 and *n is SIZE_MAX): every patch then checks it.
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

/* Holds every thread and writes the batch's sites.  0 or -errno with msg. */
static int write_batch(struct dpd_proc *p, struct work *ws, size_t n, struct dpd_msg *msg)
{
	struct dp_proc *proc = dp_proc_open(p->pid);
	uint64_t *pcs;
	size_t npcs;
	int ret;

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
		return ret;
	}
	pcs = held_pcs(proc, &npcs);
	/* Each patch stands alone: one that cannot be written is dropped
	 * (and reported) whole, the others go on. */
	for (size_t i = 0; i < n; i++) {
		struct work *w = &ws[i];
		struct dp_app_patch *ap = &w->rec.patch;
		uint8_t site_bytes[DP_WINDOW_MAX_LEN], hop_bytes[DP_APP_HOP_LEN];

		if (w->fail)
			continue;
		ret = 0;
		if (ap->method == DP_APP_METHOD_JUMP) {
			struct dp_pc_move map[DP_WINDOW_MAX_INSNS];
			size_t nm = 0;

			map[nm++] = (struct dp_pc_move){ ap->site, ap->site };
			for (uint8_t k = 1; k < w->rec.ninsns; k++)
				map[nm++] = (struct dp_pc_move){ ap->site + w->rec.off[k],
								 w->rec.insn_at[k] };
			if (pc_within(pcs, npcs, ap->site, ap->site + ap->len) &&
			    dp_proc_move_pcs(proc, ap->site, ap->site + ap->len, map, nm, NULL)) {
				refuse_points(w->ev, w->pl, w->bias, w->rp, DP_REASON_NONE,
					      dp_proc_errmsg(proc));
				w->fail = true;
				continue;
			}
			jump_bytes(ap, w->rec.entry, site_bytes, hop_bytes);
			/* The hop first: nothing reaches it before the rel8 exists. */
			if (ap->hop_len)
				ret = dp_proc_write(proc, ap->hop, hop_bytes, ap->hop_len);
			if (!ret)
				ret = dp_proc_write(proc, ap->site, site_bytes, ap->len);
		} else {
			uint8_t int3 = 0xcc;

			ret = dp_proc_write(proc, ap->site, &int3, 1);
		}
		if (ret) {
			/* Nothing half-written stays: put back what this
			 * patch may have changed. */
			refuse_points(w->ev, w->pl, w->bias, w->rp, DP_REASON_NONE, dp_proc_errmsg(proc));
			dp_proc_write(proc, ap->site, ap->orig, ap->len);
			if (ap->hop_len)
				dp_proc_write(proc, ap->hop, ap->hop_orig, ap->hop_len);
			w->fail = true;
		}
	}
	free(pcs);
	ret = 0;
	if (dp_proc_detach(proc) && !ret) {
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
			 "threads held %.3f ms", (int)p->pid, n, nholds, total / 1e6,
			 dp_proc_max_held_ns(proc) / 1e6);
	}
	dp_proc_close(proc);
	return ret;
}

/* Whether w's patch meets one already taken into the batch (two events of
 * one request at the same place): the first one keeps the place. */
static const struct work *batch_overlap(const struct work *ws, size_t n, const struct work *w)
{
	uint64_t site = w->pl->win.addr + w->bias, hop = w->pl->hop.addr + w->bias;
	uint8_t hop_len = w->pl->method == DP_SITE_JUMP ? w->pl->hop.len : 0;

	for (size_t i = 0; i < n; i++) {
		const struct dp_app_patch *ap = &ws[i].rec.patch;

		if (ws[i].fail || &ws[i] == w)
			continue;
		if (meets(site, w->pl->win.len, ap->site, ap->len) ||
		    (ap->hop_len && meets(site, w->pl->win.len, ap->hop, ap->hop_len)) ||
		    (hop_len && meets(hop, hop_len, ap->site, ap->len)) ||
		    (hop_len && ap->hop_len && meets(hop, hop_len, ap->hop, ap->hop_len)))
			return &ws[i];
	}
	return NULL;
}

int dpd_install(struct dpd_event *ev, pid_t pid, struct dp_client_proc *rp)
{
	return dpd_install_many(&ev, 1, pid, &rp);
}

int dpd_install_many(struct dpd_event *const *evs, size_t nev, pid_t pid,
		     struct dp_client_proc *const *rps)
{
	struct dpd_msg msg = { "" };
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

		for (size_t i = 0; i < ev->nplan; i++) {
			const struct dp_patch *pl = &ev->plan[i];
			const struct work *other;
			struct work *w;

			if (pl->method == DP_SITE_REFUSED) {
				refuse_points(ev, pl, bias[e], rps[e], pl->reason, NULL);
				continue;
			}
			if (pl->method == DP_SITE_INT3 && blocker) {
				char text[DP_CLIENT_TEXT_MAX];

				snprintf(text, sizeof(text), "only an int3 fits, and thread %d (%s) of "
					 "process %d blocks SIGTRAP: an int3 it hit would kill the "
					 "process", (int)blocker, blocker_comm, (int)pid);
				/* As in planning: the probe point or a function's entry
				 * must be placeable, a return site may be left out. */
				if (!optional_only(ev, pl)) {
					dpd_msg_set(&msg, "the site 0x%" PRIx64 " of %s: %s",
						    pl->win.addr, ev->path, text);
					ret = -ENOTSUP;
					goto undo;
				}
				refuse_points(ev, pl, bias[e], rps[e], DP_REASON_TRAP_UNSAFE, text);
				continue;
			}
			if (has_site(p, ev, pl->win.addr + bias[e])) {
				report_installed(ev, pl, bias[e], rps[e]);
				continue;
			}
			w = &ws[n++];
			w->ev = ev;
			w->bias = bias[e];
			w->rp = rps[e];
			w->pl = pl;
			other = batch_overlap(ws, n, w);
			if (other) {
				char text[DP_CLIENT_TEXT_MAX];

				snprintf(text, sizeof(text), "%s (the patch at 0x%" PRIx64 " of %s)",
					 dp_reason_str(DP_REASON_OVERLAP), other->rec.patch.site,
					 other->ev->names[0]);
				refuse_points(ev, pl, bias[e], rps[e], DP_REASON_OVERLAP, text);
				w->fail = true;
				continue;
			}
			ret = prepare(ev, p, bias[e], w, rps[e], &msg);
			if (ret)
				goto undo;
			if (!w->fail) {
				ret = note(p, &w->rec.patch, &msg);
				if (ret)
					goto undo;
				w->noted = true;
			}
		}
	}
	if (dpd_cfg.test_pause_ms) {
		dpd_info("test pause: %d ms before writing into process %d", dpd_cfg.test_pause_ms,
			 (int)pid);
		usleep((useconds_t)dpd_cfg.test_pause_ms * 1000);
	}
	write_trampolines(pid, ws, n);
	ret = write_batch(p, ws, n, &msg);
	if (ret)
		goto undo;
	for (size_t i = 0; i < n; i++) {
		struct work *w = &ws[i];

		if (w->fail) {
			if (w->noted)
				note_removed(p, w->rec.patch.site, &msg);
			continue;
		}
		if (record(p, w->ev, w))
			dpd_err("process %d: out of memory recording a patch", (int)pid);
		report_installed(w->ev, w->pl, w->bias, w->rp);
	}
	msg.text[0] = '\0';
	goto out;

undo:
	/* Nothing was written, or write_batch put back what it wrote: only
	 * the agent's notes are to take back. */
	p = dpd_proc_find(pid);
	for (size_t i = 0; i < n && p && p->fd >= 0; i++) {
		struct dpd_msg ignored;

		if (ws[i].noted)
			note_removed(p, ws[i].rec.patch.site, &ignored);
	}
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
		snprintf(rps[e]->message, sizeof(rps[e]->message), "%s", msg.text);
		if (ret)
			dpd_info("install %s in %d: %s", evs[e]->names[0], (int)pid, msg.text);
	}
	return ret > 0 ? -ret : ret;
}

int dpd_remove(struct dpd_event *ev, struct dpd_proc *p, struct dp_client_proc *rp)
{
	struct dpd_msg msg = { "" };
	struct dp_proc *proc;
	uint32_t *idx, n = 0;
	pid_t pid = p->pid;
	int ret;

	if (rp)
		rp->pid = (uint32_t)pid;
	idx = calloc(p->nsites ? p->nsites : 1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nsites; i++)
		if (p->sites[i].installed && (!ev || p->sites[i].ev == ev))
			idx[n++] = i;
	if (!n) {
		free(idx);
		return 0;
	}
	proc = dp_proc_open(pid);
	ret = proc ? dp_proc_attach(proc, 0) : -ENOMEM;
	if (ret == -DP_PROC_ENOPROC) {
		/* Gone: nothing to restore, and nothing to remember. */
		dp_proc_close(proc);
		free(idx);
		if (rp) {
			rp->status = -ESRCH;
			snprintf(rp->message, sizeof(rp->message), "process %d exited", (int)pid);
		}
		dpd_proc_forget(p);
		return -ESRCH;
	}
	if (ret) {
		dpd_msg_set(&msg, "%s", proc ? dp_proc_errmsg(proc) : "out of memory");
		dp_proc_close(proc);
		free(idx);
		if (rp) {
			rp->status = ret;
			snprintf(rp->message, sizeof(rp->message), "%s", msg.text);
		}
		dpd_err("remove from %d: %s", (int)pid, msg.text);
		return ret;
	}
	for (uint32_t k = 0; k < n; k++) {
		struct dpd_site *s = &p->sites[idx[k]];
		struct dp_app_patch *ap = &s->patch;
		uint8_t cur[DP_APP_HOP_LEN];
		uint64_t entry = s->entry;

		/* The site first, then the hop: a thread between the two (it
		 * took the rel8) goes on to the trampoline's entry. */
		ret = dp_proc_write(proc, ap->site, ap->orig, ap->len);
		if (ap->hop_len && !ret) {
			if (!dp_proc_read(proc, ap->hop, cur, sizeof(cur)) && cur[0] == 0xe9) {
				int32_t rel;

				memcpy(&rel, cur + 1, 4);
				entry = ap->hop + 5 + (int64_t)rel;
			}
			struct dp_pc_move mv = { ap->hop, entry };

			dp_proc_move_pcs(proc, ap->hop, ap->hop + 1, &mv, 1, NULL);
			ret = dp_proc_write(proc, ap->hop, ap->hop_orig, ap->hop_len);
		}
		/* A thread about to run a hook goes back to the original code:
		 * the event is disabled from now on. */
		for (uint8_t i = 0; i < s->ninsns && ap->method == DP_APP_METHOD_JUMP; i++) {
			struct dp_pc_move mv = { s->insn_at[i], ap->site + s->off[i] };

			dp_proc_move_pcs(proc, s->insn_at[i], s->insn_at[i] + 1, &mv, 1, NULL);
		}
		if (ret)
			dpd_err("process %d: cannot restore 0x%" PRIx64 ": %s", (int)pid, ap->site,
				dp_proc_errmsg(proc));
		else
			s->installed = false;
	}
	dp_proc_close(proc);
	for (uint32_t k = 0; k < n; k++) {
		struct dpd_site *s = &p->sites[idx[k]];

		if (s->installed)
			continue;
		if (rp) {
			if (s->patch.method == DP_APP_METHOD_INT3)
				rp->nint3++;
			else
				rp->njump++;
		}
		if (p->fd >= 0 && note_removed(p, s->patch.site, &msg))
			dpd_info("process %d: %s", (int)pid, msg.text);
	}
	free(idx);
	return 0;
}

void dpd_remove_everywhere(struct dpd_event *ev, struct dp_client_report *rep)
{
	bool again = true;

	/* A removal may forget the process (it exited): restart each time. */
	while (again) {
		again = false;
		for (struct dpd_proc *p = dpd_procs; p; p = p->next) {
			uint32_t j, i;
			struct dp_client_proc *rp;

			if (!dpd_proc_count_sites(p, ev, &j, &i))
				continue;
			rp = rep ? dp_client_report_add_proc(rep) : NULL;
			dpd_remove(ev, p, rp);
			again = true;
			break;
		}
	}
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
