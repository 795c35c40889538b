/*
 * Patching events into one process (taking them out is remove.c's).
 *
 * Install, for the events' plans (file addresses) at their objects' load
 * bias:
 *   1. the agent: injected when absent, then its HELLO;
 *   2. each plan entry placed on a patch: one of its own, or the patch of
 *      the same window (same site, length, method and hop) that another
 *      event has installed, or takes in the same request: the events share
 *      it, and its trampoline calls the probes of them all.  A window that
 *      only overlaps another's is refused (DP_REASON_OVERLAP);
 *   3. for the whole batch, while the program runs: the new patches' bytes
 *      checked against the file (read in runs of adjacent pages), the
 *      probes of every event they serve defined (reused when the same probe
 *      exists; the new ones in DEFINE_PROBES messages of thousands each, or
 *      one DEFINE_PROBE each for an agent older than protocol 1.3), each
 *      trampoline built locally for its remote address, carved from code
 *      blocks of 256 KiB the agent maps (ALLOC_CODE), taking only the bytes
 *      it needs (or one built before reused: memory a thread may run in is
 *      never freed or rewritten);
 *   4. the new trampolines written, still while the program runs (nothing
 *      reaches them yet), those carved one after another in one write;
 *   5. the patches noted to the agent (NOTE_INSTALLED_MANY in batches, or
 *      NOTE_INSTALLED each for an older agent) before they can exist:
 *      an int3 must never reach the program unknown, and a daemon killed at
 *      any point leaves the agent knowing every patch that may be in the
 *      code (a new daemon forgets the noted ones whose site still holds its
 *      original bytes).  A rebuilt patch's note replaces the agent's record
 *      of the site, for an int3 its trap entry too: its trampoline, which a
 *      trapped thread resumes in at once, is written already.  A patch that
 *      leads branches (a redirect, a led window: daemon.h's dpd_led) notes
 *      what else it writes (NOTE_WRITES, protocol 1.4) after that;
 *   6. one stop of every thread for the whole batch: threads inside a new
 *      window moved to the matching relocated instruction, then the bytes
 *      of every patch (hops, jumps or int3s) written in runs of adjacent
 *      pages, led branches and their hops before any window (write.c's
 *      phases); a rebuilt patch's jump retargeted to its new trampoline
 *      (threads inside the old one finish there); resume and detach;
 *   7. patches that could not be written taken back (NOTE_REMOVED_MANY, or
 *      the note of the patch still in place).
 * The reply says, with the sites' counts, what the new trampolines take
 * and what the process's trampolines and code blocks take in all.
 * Steps 1, 2 and 7 are here; steps 3 to 5 are stage.c's, step 6 write.c's
 * (remove.c uses them too).  The target is never left with a half-written
 * patch: a patch is written whole while every thread is held, or not at all.
 *
 * Also here: the installs waiting for a process whose agent said HELLO
 * (a process started by `lttng trace`, or one that reconnected), then GO;
 * before them, a reconnected agent's patches that no event claims are
 * restored.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "daemon.h"
#include "proc/inject.h"
#include "proc/proc-status.h"
#include "proc/ptrace.h"

/* An agent loaded at its program's start that found no daemon tries again
 * after gaps that double up to 30 s (the agent's control.h): in a process
 * of our own user it is waited for that long (another user's agent talks
 * to that user's daemon). */
#define DPD_AGENT_RETRY_WAIT_MS 32000

/* The agent's HELLO after its injection is waited for while its control
 * thread makes progress (a loaded machine slows it down), up to this. */
#define DPD_AGENT_HELLO_IDLE_MS 10000
#define DPD_AGENT_HELLO_CAP_MS 120000

/* What the agent's control thread in pid (named so by the agent) does:
 * its work count (dp_proc_thread_work), and whether it is runnable.
 * false when there is none. */
static bool agent_thread_work(pid_t pid, uint64_t *work, bool *running)
{
	pid_t *tids;
	size_t n = 0;
	bool found = false;

	*work = 0;
	*running = false;
	if (dp_proc_tasks(pid, &tids, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		char path[64], comm[32];
		uint64_t w;
		ssize_t len;
		char st;
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tids[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (len != 15 || memcmp(comm, "lttng-dynprobe\n", 15) ||
		    dp_proc_thread_work(pid, tids[i], &st, &w))
			continue;
		found = true;
		*work += w;
		*running |= st == 'R' || st == 'D';
	}
	free(tids);
	return found;
}

/* Waits for the HELLO of an agent just injected in pid: while its control
 * thread makes progress, DPD_AGENT_HELLO_CAP_MS at most. */
static void agent_wait_injected(pid_t pid)
{
	int64_t start = dpd_now_ms();
	uint64_t seen = 0, work;
	bool running;

	agent_thread_work(pid, &seen, &running);
	for (;;) {
		struct dpd_proc *p = dpd_agent_wait(pid, DPD_AGENT_HELLO_IDLE_MS);

		if ((p && p->fd >= 0) || !dp_proc_alive(pid) ||
		    dpd_now_ms() - start >= DPD_AGENT_HELLO_CAP_MS ||
		    !agent_thread_work(pid, &work, &running) || (work == seen && !running))
			return;
		dpd_info("process %d: its agent has not said HELLO after %" PRId64 " ms, its "
			 "thread working: waiting on", (int)pid, dpd_now_ms() - start);
		seen = work;
	}
}

/* Ensures pid's agent talks to us: the process, or NULL with msg (its
 * code too). */
static struct dpd_proc *ensure_agent(pid_t pid, struct dp_err *msg)
{
	struct dpd_proc *p = dpd_proc_find(pid);
	struct dp_inject_opts opts;
	struct dp_inject_result res;
	struct dp_proc_status st;
	struct dp_err why = DP_ERR_INIT;
	int ret, wait_ms;

	if (p && p->fd >= 0) {
		uint8_t image[DPD_IMAGE_ID_LEN];

		if (!p->image_known || dpd_image_id(pid, image) ||
		    !memcmp(image, p->image, sizeof(image)))
			return p;
		/* The process executed another program since its agent said
		 * HELLO, and kept that connection open (its end of file not
		 * seen yet, or never: a descriptor without close-on-exec):
		 * what talks there is the old program's, which is gone. */
		dpd_info("process %d runs another program than at its agent's HELLO: that "
			 "connection is dropped", (int)pid);
		dpd_proc_forget(p);
	}
	dp_inject_opts_init(&opts);
	/* The agent connects to the daemon that loaded it, whoever owns the
	 * process and whatever its environment says of LTTNG_HOME. */
	opts.env_name = DP_APP_ENV_SOCKET;
	opts.env_value = dpd_cfg.app_sock;
	/* The injection and the agent's start (its HELLO, lttng-ust's
	 * registration) are slow: others are served meanwhile, and the HELLO
	 * borrows our hold on pid. */
	dpd_hold_lend(pid);
	dpd_unlock();
	ret = dp_inject_agent(pid, dpd_cfg.agent_path, &opts, &res, &why);
	dpd_lock();
	if (ret < 0) {
		dpd_hold_unlend(pid);
		if (ret == -DP_PROC_ENOPROC)
			dp_err_set(msg, ret, "process %d exited during the operation", (int)pid);
		else
			dp_err_set(msg, ret, "cannot load the agent into process %d: %s", (int)pid,
				   why.msg[0] ? why.msg : strerror(-ret));
		return NULL;
	}
	/* The stop totals are what a benchmark of the target's cost reads. */
	dpd_info("process %d: agent %s (%.3f ms, %u stops, %.3f ms in all, threads held %.3f ms)",
		 (int)pid, ret == DP_INJECT_ALREADY ? "already loaded" : "injected",
		 ret == DP_INJECT_ALREADY ? 0.0 : res.total_ns / 1e6,
		 ret == DP_INJECT_ALREADY ? 0 : res.nholds,
		 ret == DP_INJECT_ALREADY ? 0.0 : res.held_total_ns / 1e6, res.held_ns / 1e6);
	if (ret == DP_INJECT_ALREADY) {
		wait_ms = !dp_proc_status_read(pid, 0, &st) && st.uid[1] == geteuid()
				  ? DPD_AGENT_RETRY_WAIT_MS : 3000;
		dpd_agent_wait(pid, wait_ms);
	} else {
		agent_wait_injected(pid);
	}
	dpd_hold_unlend(pid);
	p = dpd_proc_find(pid);
	if (!p || p->fd < 0) {
		if (kill(pid, 0))
			dp_err_set(msg, -ESRCH, "process %d exited during the operation", (int)pid);
		else if (ret == DP_INJECT_ALREADY && !dp_proc_status_read(pid, 0, &st) &&
			 st.uid[1] != geteuid())
			dp_err_set(msg, -ETIMEDOUT, "the agent in process %d was loaded when it "
				   "started, and talks to the lttng-dynprobed of its own user "
				   "(uid %u): run the command as that user", (int)pid,
				   (unsigned)st.uid[1]);
		else
			dp_err_set(msg, -ETIMEDOUT, "the agent in process %d does not connect to "
				   "%s: its environment may name another socket "
				   "(LTTNG_DYNPROBE_APP_SOCKET)", (int)pid, dpd_cfg.app_sock);
		return NULL;
	}
	return p;
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
static bool has_site(const struct dpd_proc *p, const struct dpd_site_ix *ix,
		     const struct dpd_event *ev, uint64_t site)
{
	size_t from, to;

	dpd_site_ix_range(p, ix, site, site, &from, &to);
	for (size_t k = from; k < to; k++) {
		const struct dpd_site *s = &p->sites[ix->idx[k]];

		if (s->installed && dpd_site_owned(s, ev))
			return true;
	}
	return false;
}

/*
 * Step 2 for one plan entry of an event joining now (owner o, reported in
 * rp, at window ap): onto the work of the batch that writes the same
 * window, or a new work, which rebuilds the patch installed there if any.
 * A window that meets another without being the same is refused.  The
 * works from `others` on are the event's own: its plan's patches never
 * meet.
 */
static void place(struct dpd_proc *p, const struct dpd_site_ix *ix, struct dpd_work *ws,
		  size_t *n, size_t others, const struct dpd_owner *o, struct dp_client_proc *rp,
		  const struct dp_app_patch *ap, const struct dpd_led *led)
{
	const struct dpd_site *in_place = NULL;
	const char *holder = NULL;
	struct dpd_work *w = NULL;
	char text[DP_CLIENT_TEXT_MAX];
	uint32_t old = 0, nowners;
	uint64_t at = 0;

	for (size_t i = 0; i < others && !w && !holder; i++) {
		if (!dpd_patches_meet(&ws[i].rec.patch, &ws[i].led, ap, led))
			continue;
		if (dpd_same_window(&ws[i].rec.patch, &ws[i].led, ap, led)) {
			w = &ws[i];
		} else {
			holder = ws[i].rec.owners[0].ev->names[0];
			at = ws[i].rec.patch.site;
		}
	}
	/* The installed patches it meets (near it, or with a led). */
	if (!w && !holder) {
		const struct dpd_site *s = dpd_site_meeting(p, ix, ap, led, false, &old);

		if (s) {
			holder = s->nowners ? s->owners[0].ev->names[0] :
				 s->event[0] ? s->event : "an event this daemon does not know";
			at = s->patch.site;
		} else {
			in_place = dpd_site_meeting(p, ix, ap, led, true, &old);
		}
	}
	if (holder) {
		snprintf(text, sizeof(text), "%s (the patch at 0x%" PRIx64 " of %s): probes at "
			 "the same address share one patch", dp_reason_str(DP_REASON_OVERLAP), at,
			 holder);
		dpd_report_refused(o, rp, DP_REASON_OVERLAP, text);
		return;
	}
	nowners = w ? w->rec.nowners : in_place ? in_place->nowners : 0;
	if (nowners == DPD_SITE_MAX_OWNERS) {
		snprintf(text, sizeof(text), "%d events share the patch at 0x%" PRIx64 " already",
			 DPD_SITE_MAX_OWNERS, ap->site);
		dpd_report_refused(o, rp, DP_REASON_NONE, text);
		return;
	}
	if (!w) {
		w = &ws[(*n)++];
		w->rec.patch = *ap;
		w->led = *led;
	}
	if (in_place)
		dpd_work_rebuild(w, p, old);
	w->rps[w->rec.nowners] = rp;
	w->rec.owners[w->rec.nowners++] = *o;
}

/*
 * Whether a window of evs meets an installed patch, or another event's
 * window of the request, without being the same: then the points concerned
 * are planned together (combine.c).  -1 when it does but evs are not all of
 * one object (the windows are refused, as before).
 */
static int needs_combine(const struct dpd_proc *p, const struct dpd_site_ix *ix,
			 struct dpd_event *const *evs, size_t nev, const uint64_t *bias)
{
	bool meet = false, one_obj = true;

	for (size_t e = 0; e < nev; e++) {
		one_obj &= evs[e]->obj == evs[0]->obj;
		for (size_t i = 0; i < evs[e]->nplan; i++) {
			struct dp_app_patch ap, bp;
			struct dpd_led al, bl;
			uint32_t at;

			if (evs[e]->plan[i].method == DP_SITE_REFUSED)
				continue;
			dpd_patch_window(&evs[e]->plan[i], bias[e], &ap);
			dpd_patch_led(&evs[e]->plan[i], evs[e]->obj->obj, bias[e], &al);
			meet |= dpd_site_meeting(p, ix, &ap, &al, false, &at) != NULL;
			for (size_t f = e + 1; f < nev; f++)
				for (size_t j = 0; j < evs[f]->nplan; j++) {
					if (evs[f]->plan[j].method == DP_SITE_REFUSED)
						continue;
					dpd_patch_window(&evs[f]->plan[j], bias[f], &bp);
					dpd_patch_led(&evs[f]->plan[j], evs[f]->obj->obj, bias[f], &bl);
					meet |= dpd_patches_meet(&bp, &bl, &ap, &al) &&
						!dpd_same_window(&bp, &bl, &ap, &al);
				}
		}
	}
	return !meet ? 0 : one_obj ? 1 : -1;
}

static bool installed_in(const struct dpd_proc *p, const struct dpd_event *ev);

/* Bytes as people read them: "812 B", "37.5 KiB", "9.3 MiB". */
static const char *human_bytes(uint64_t n, char *buf, size_t size)
{
	if (n < 1024)
		snprintf(buf, size, "%" PRIu64 " B", n);
	else if (n < 1024 * 1024)
		snprintf(buf, size, "%.1f KiB", n / 1024.0);
	else
		snprintf(buf, size, "%.1f MiB", n / (1024.0 * 1024.0));
	return buf;
}

int dpd_install(struct dpd_event *ev, pid_t pid, struct dp_client_proc *rp)
{
	return dpd_install_many(&ev, 1, pid, &rp);
}

int dpd_install_pinned(struct dpd_event *ev, pid_t pid, struct dp_client_proc *rp)
{
	for (int round = 1;; round++) {
		uint32_t layout = ev->layout;
		struct dpd_proc *p;
		int ret = dpd_install(ev, pid, rp);

		if (ev->layout == layout || ev->unlinked || !ev->enabled || round == 4 ||
		    dpd_hold(pid))
			return ret;
		p = dpd_proc_find(pid);
		if (p && installed_in(p, ev)) {
			dpd_info("process %d: %s got contexts while it was installed there: "
				 "installed again with its new fields", (int)pid, ev->names[0]);
			dpd_remove(ev, p, NULL);
		}
		dpd_unhold(pid);
		if (!p)
			return ret;
		free(rp->sites);
		memset(rp, 0, sizeof(*rp));
	}
}

int dpd_install_many(struct dpd_event *const *evs, size_t nev, pid_t pid,
		     struct dp_client_proc *const *rps)
{
	struct dp_err msg = DP_ERR_INIT;
	struct dpd_proc *p;
	struct dpd_work *ws = NULL;
	uint64_t *bias;
	size_t n = 0, nplan = 0, ntramp = 0;
	uint64_t tramp_bytes = 0;
	char blocker_comm[64] = "";
	struct dpd_site_ix ix = { 0 };
	pid_t blocker = 0;
	bool held = false;
	int ret = 0;

	bias = calloc(nev ? nev : 1, sizeof(*bias));
	if (!bias) {
		ret = -ENOMEM;
		dp_err_set(&msg, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t e = 0; e < nev; e++) {
		rps[e]->pid = (uint32_t)pid;
		nplan += evs[e]->nplan;
	}
	/* The process is ours until the end (lock.c). */
	ret = dpd_hold(pid);
	if (ret) {
		dp_err_set(&msg, ret, "process %d: internal error (holds)", (int)pid);
		goto out;
	}
	held = true;
	dpd_fault("install");
	for (size_t e = 0; e < nev; e++) {
		ret = dpd_object_bias(evs[e]->obj, pid, &bias[e]);
		if (ret == -ESRCH) {
			dp_err_set(&msg, ret, "no process %d (it exited)", (int)pid);
			goto out;
		}
		if (ret) {
			dp_err_set(&msg, ret, "%s is not mapped in process %d: give the path of "
				   "an object it has loaded (see /proc/%d/maps)", evs[e]->path,
				   (int)pid, (int)pid);
			goto out;
		}
	}
	for (size_t e = 0; e < nev; e++) {
		ret = dpd_sem_check(evs[e], pid, bias[e], &msg);
		if (ret)
			goto out;
	}
	p = ensure_agent(pid, &msg);
	if (!p) {
		ret = msg.code;
		goto out;
	}
	dpd_fault("agent");
	blocker = dpd_sigtrap_blocker(pid, blocker_comm, sizeof(blocker_comm));
	if (dpd_site_ix_build(p, &ix)) {
		ret = -ENOMEM;
		dp_err_set(&msg, -ENOMEM, "out of memory");
		goto out;
	}
	if (needs_combine(p, &ix, evs, nev, bias) > 0) {
		ret = dpd_combine_install(p, evs, nev, bias[0], rps, &msg);
		if (!ret)
			msg.msg[0] = '\0';
		goto out;
	}

	ws = calloc(nplan ? nplan : 1, sizeof(*ws));
	if (!ws) {
		ret = -ENOMEM;
		dp_err_set(&msg, -ENOMEM, "out of memory");
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
			struct dpd_led led;

			if (o.pl->method == DP_SITE_REFUSED) {
				dpd_report_refused(&o, rps[e], o.pl->reason, NULL);
				continue;
			}
			if (o.pl->method == DP_SITE_INT3 && blocker) {
				char text[DP_CLIENT_TEXT_MAX];

				snprintf(text, sizeof(text), "only an int3 fits, and thread %d "
					 "(%s) of process %d blocks SIGTRAP: an int3 it hit would "
					 "kill the process", (int)blocker, blocker_comm, (int)pid);
				/* As in planning: the probe point or a function's entry
				 * must be placeable, a return site may be left out. */
				if (!optional_only(ev, o.pl)) {
					dp_err_set(&msg, -ENOTSUP, "the site 0x%" PRIx64
						   " of %s: %s", o.pl->win.addr, ev->path, text);
					ret = -ENOTSUP;
					goto undo;
				}
				dpd_report_refused(&o, rps[e], DP_REASON_TRAP_UNSAFE, text);
				continue;
			}
			dpd_patch_window(o.pl, o.bias, &ap);
			if (has_site(p, &ix, ev, ap.site)) {
				dpd_report_installed(&o, rps[e]);
				continue;
			}
			dpd_patch_led(o.pl, ev->obj->obj, o.bias, &led);
			place(p, &ix, ws, &n, others, &o, rps[e], &ap, &led);
		}
	}
	ret = dpd_stage(p, ws, n, &msg);
	if (ret)
		goto undo;
	/* As in planning: a probe point or a function's entry that cannot be
	 * placed here (another event's bytes, code that changed) fails the
	 * request in this process, before anything is written. */
	for (size_t e = 0; e < nev && !ret; e++) {
		const struct dp_client_site *s = required_refused(evs[e], rps[e]);

		if (!s)
			continue;
		ret = strcmp(s->reason, dp_reason_name(DP_REASON_OVERLAP)) ? -ENOTSUP : -EBUSY;
		dp_err_set(&msg, ret, "%s at 0x%" PRIx64 " (0x%" PRIx64 " of %s) cannot be "
			   "placed: %s", s->event, s->addr, s->vaddr, evs[e]->path, s->text);
	}
	if (ret)
		goto undo;
	dpd_fault("staged");
	if (dpd_cfg.test_pause_ms && (!dpd_cfg.test_pause_pid || dpd_cfg.test_pause_pid == pid)) {
		int64_t end = dpd_now_ms() + dpd_cfg.test_pause_ms;

		dpd_info("test pause: %d ms before writing into process %d", dpd_cfg.test_pause_ms,
			 (int)pid);
		/* Held, not locked: a pause on one process stops no other.  It
		 * ends early when the process is gone. */
		dpd_unlock();
		while (dpd_now_ms() < end && dp_proc_alive(pid))
			usleep(10000);
		dpd_lock();
	}
	ret = dpd_write_batch(p, ws, n, NULL, 0, false, &msg);
	if (ret)
		goto undo;
	dpd_fault("detached");
	dpd_works_unnote(p, ws, n, true);
	for (size_t i = 0; i < n; i++) {
		struct dpd_work *w = &ws[i];

		if (w->fail)
			continue;
		if (w->code) {
			ntramp++;
			tramp_bytes += (w->rec.patch.tramp_len + 15) & ~15u;
		}
		if (dpd_work_record(p, w))
			dpd_err("process %d: out of memory recording a patch", (int)pid);
		for (uint32_t k = 0; k < w->rec.nowners; k++)
			if (w->rps[k])
				dpd_report_installed(&w->rec.owners[k], w->rps[k]);
	}
	/* Said with the sites' counts: what the trampolines take. */
	msg.msg[0] = '\0';
	if (ntramp) {
		uint64_t used, mapped;
		char a[32], b[32], c[32];

		dpd_code_usage(p, &used, &mapped);
		dp_err_set(&msg, 0, "%zu trampoline%s, %s (in all in the process: %s, in %s of "
			   "code memory)", ntramp, ntramp == 1 ? "" : "s",
			   human_bytes(tramp_bytes, a, sizeof(a)),
			   human_bytes(used, b, sizeof(b)), human_bytes(mapped, c, sizeof(c)));
		dpd_info("process %d: %s", (int)pid, msg.msg);
	}
	goto out;

undo:
	/* Nothing was written, or hold_and_write put back what it wrote: only
	 * the agent's notes are to take back. */
	p = dpd_proc_find(pid);
	if (p)
		dpd_works_unnote(p, ws, n, false);
	if (p && p->fd < 0 && kill(pid, 0)) {
		dp_err_set(&msg, -ESRCH, "process %d exited during the operation", (int)pid);
		dpd_proc_forget(p);
		ret = -ESRCH;
	}
out:
	/* Semaphores once the probes are in place (none raised for nothing). */
	p = ret ? NULL : dpd_proc_find(pid);
	for (size_t e = 0; p && e < nev; e++)
		if (installed_in(p, evs[e]))
			dpd_sem_hold(p, evs[e], bias[e], false);
	for (size_t i = 0; i < n; i++)
		free(ws[i].code);
	free(ws);
	free(bias);
	dpd_site_ix_free(&ix);
	/* One outcome for the whole request in this process: a failure
	 * wrote nothing of any event. */
	for (size_t e = 0; e < nev; e++) {
		rps[e]->status = ret > 0 ? -ret : ret;
		snprintf(rps[e]->message, sizeof(rps[e]->message), "%s", msg.msg);
		if (ret)
			dpd_info("install %s in %d: %s", evs[e]->names[0], (int)pid, msg.msg);
	}
	if (held)
		dpd_unhold(pid);
	return ret > 0 ? -ret : ret;
}

/* Whether ev has any site installed in p. */
static bool installed_in(const struct dpd_proc *p, const struct dpd_event *ev)
{
	uint32_t j, i;

	return dpd_proc_count_sites(p, ev, &j, &i) > 0;
}

/* The lttng names of the probes of the patches drop_unclaimed restored. */
struct lost_names {
	char (*v)[DP_CLIENT_EVENT_MAX];
	size_t n, cap;
};

static void lost_add(struct lost_names *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], name))
			return;
	if (DP_ARRAY_RESERVE(l->v, l->cap, l->n, 8))
		return;
	snprintf(l->v[l->n++], sizeof(l->v[0]), "%s", name);
}

/* Whether a restored patch had a probe of ev's. */
static bool lost_by(const struct lost_names *l, const struct dpd_event *ev)
{
	for (size_t i = 0; i < l->n; i++)
		for (uint32_t k = 0; k < ev->nnames; k++)
			if (!strcmp(l->v[i], ev->names[k]))
				return true;
	return false;
}

/*
 * The patches a reconnecting agent reports that no event claims (an install
 * a killed daemon never finished, and whose client was told it failed; an
 * event whose session went meanwhile) are restored, in one stop, and the
 * agent told: none is left that no request could take out.  The names of
 * their probes go to *lost: a patch planned together with an event that is
 * gone was also another event's site, which that event must get back.  0,
 * or -ESRCH when the process is gone (and forgotten).
 */
static int drop_unclaimed(struct dpd_proc *p, struct lost_names *lost)
{
	struct dp_err msg = DP_ERR_INIT;
	uint32_t *gone = calloc(p->nsites ? p->nsites : 1, sizeof(*gone)), ngone = 0;
	uint64_t *sites = calloc(p->nsites ? p->nsites : 1, sizeof(*sites));
	size_t nsites = 0;
	pid_t pid = p->pid;
	int ret;

	if (!gone || !sites) {
		free(gone);
		free(sites);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < p->nsites; i++)
		if (p->sites[i].installed && !p->sites[i].nowners)
			gone[ngone++] = i;
	ret = dpd_write_batch(p, NULL, 0, gone, ngone, false, &msg);
	if (ret == -DP_PROC_ENOPROC) {
		dpd_proc_forget(p);
		free(gone);
		free(sites);
		return -ESRCH;
	}
	if (ret)
		dpd_err("process %d: the patches no event claims stay: %s", (int)pid, msg.msg);
	for (uint32_t k = 0; k < ngone; k++) {
		const struct dpd_site *s = &p->sites[gone[k]];

		if (s->installed)
			continue;
		dpd_info("process %d: the patch at 0x%" PRIx64 " (%s) no event claims is "
			 "removed", (int)pid, s->patch.site, s->event[0] ? s->event : "?");
		sites[nsites++] = s->patch.site;
		for (uint32_t q = 0; q < s->patch.nprobes; q++) {
			const struct dpd_probe *pr = dpd_proc_probe(p, s->patch.probes[q]);

			if (pr)
				lost_add(lost, pr->event);
		}
	}
	/* The agent told, in batches. */
	if (nsites && p->fd >= 0 && dpd_notes_removed(p, sites, nsites, &msg))
		dpd_info("process %d: %s", (int)pid, msg.msg);
	free(gone);
	free(sites);
	return 0;
}

/* The installs pending for p, then GO (go) and MAPPED's reply (p->mapped). */
static void run_pending(struct dpd_proc *p, bool go)
{
	struct dp_app_msg req = { .type = DP_APP_GO }, rep;
	struct dp_err msg;
	pid_t pid = p->pid;
	/* The MAPPED answered here: its dlopen had returned, so what it
	 * mapped is in the maps the loop below reads.  One that comes during
	 * the loop is answered by the next round. */
	uint64_t cookie = p->mapped;
	uint32_t cookie_seq = p->mapped_seq;
	struct lost_names lost = { 0 };
	struct dpd_event **evs;
	size_t nevs = 0;

	if (p->recovered) {
		p->recovered = false;
		dpd_agent_reconcile(p);
		if (p->fd < 0 || drop_unclaimed(p, &lost) == -ESRCH || p->fd < 0) {
			free(lost.v);
			return;
		}
		/* Patches it came with (a forked child's, a recovered agent's)
		 * came with their semaphores raised. */
		dpd_sem_adopt(p);
	}

	/* A copy of the list, pinned: installing lets the lock go. */
	for (struct dpd_event *ev = dpd_events; ev; ev = ev->next)
		nevs++;
	evs = calloc(nevs ? nevs : 1, sizeof(*evs));
	if (!evs) {
		free(lost.v);
		return;
	}
	nevs = 0;
	for (struct dpd_event *ev = dpd_events; ev; ev = ev->next) {
		dpd_event_pin(ev);
		evs[nevs++] = ev;
	}
	for (size_t e = 0; e < nevs; e++) {
		struct dpd_event *ev = evs[e];
		struct dp_client_proc rp;
		bool installed;

		/* By path: the owner's own processes, root's included (root
		 * names other users' processes by pid).  By pid: those
		 * processes and their descendants.  Looked at while p is
		 * held: a removal of ev that began is waiting for p. */
		if (ev->unlinked || !ev->enabled || !ev->obj)
			continue;
		if (ev->npids ? (ev->owner != 0 && ev->owner != p->uid) || !dpd_event_reaches(ev, pid)
			      : ev->owner != p->uid)
			continue;
		/* An event installed here is installed again only where a
		 * restored patch had its probe: the sites it lacks are put in
		 * (those it has are kept as they are). */
		installed = installed_in(p, ev);
		if ((installed && !lost_by(&lost, ev)) || !dpd_object_mapped(ev->obj, pid))
			continue;
		if (installed)
			dpd_info("process %d: %s had a probe in a patch restored as no event's "
				 "(planned with an event that is gone): its missing sites are put "
				 "in", (int)pid, ev->names[0]);
		memset(&rp, 0, sizeof(rp));
		dpd_install_pinned(ev, pid, &rp);
		dpd_remove_if_gone(ev, pid);
		dpd_info("process %d %s: %s: %s", (int)pid,
			 go ? "started with the agent" : "mapped the object (dlopen)", ev->names[0],
			 rp.status ? rp.message : "installed");
		free(rp.sites);
		/* The process may have gone meanwhile. */
		p = dpd_proc_find(pid);
		if (!p || p->fd < 0)
			break;
	}
	for (size_t e = 0; e < nevs; e++)
		dpd_event_unpin(evs[e]);
	free(evs);
	free(lost.v);
	if (!p || p->fd < 0)
		return;
	/* Follow mode before the program runs: its children are followed
	 * from its first exec. */
	if (go) {
		dpd_follow_sync_held(p);
		p = dpd_proc_find(pid);
		if (!p || p->fd < 0)
			return;
	}
	/* An agent that does not know GO does not wait for it. */
	if (go && p->minor >= 1) {
		if (dpd_agent_call(p, &req, &rep, &msg))
			dpd_info("GO to process %d: %s", (int)pid, msg.msg);
		dp_app_msg_release(&rep);
		p = dpd_proc_find(pid);
		if (!p || p->fd < 0)
			return;
	}
	if (cookie)
		dpd_agent_mapped_reply(p, cookie, cookie_seq);
	dpd_dbg("process %d: its pending installs done%s", (int)pid, go ? ", GO sent" : "");
}

void dpd_install_pending(pid_t pid)
{
	struct dpd_proc *p;

	if (dpd_hold(pid))
		return;
	p = dpd_proc_find(pid);
	if (p) {
		bool go = p->go_pending;

		p->pending_queued = false;
		if ((go || p->mapped) && p->fd >= 0) {
			p->go_pending = false;
			run_pending(p, go);
		}
	}
	dpd_unhold(pid);
}
