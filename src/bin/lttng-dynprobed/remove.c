/*
 * Taking events out of processes.  Remove takes an event out of its
 * patches: those it shares are rebuilt for the other events (stage.c), and
 * in the same stop (write.c) those it held alone are restored: the site's
 * bytes then the hop's, threads between a hop and its trampoline sent on to
 * the trampoline, threads about to run a hook sent back to the original
 * code, then NOTE_REMOVED.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "proc/ptrace.h"

/* Counts a site ev left in its report. */
static void report_left(struct dp_client_proc *rp, const struct dp_app_patch *ap)
{
	if (rp && ap->method == DP_APP_METHOD_INT3)
		rp->nint3++;
	else if (rp)
		rp->njump++;
}

/* Takes ev out of patches planned together with other events' points:
 * those points planned again without its own (combine.c). */
static int remove_combined(struct dpd_event *ev, struct dpd_proc *p, struct dp_client_proc *rp)
{
	struct dp_err msg = DP_ERR_INIT;
	uint32_t njump, nint3;
	pid_t pid = p->pid;
	int ret;

	dpd_proc_count_sites(p, ev, &njump, &nint3);
	ret = dpd_combine_remove(p, ev, &msg);
	if (ret == -DP_PROC_ENOPROC || (ret && !dpd_proc_find(pid))) {
		p = dpd_proc_find(pid);
		if (p)
			dpd_proc_forget(p);
		ret = -ESRCH;
		dp_err_set(&msg, ret, "process %d exited", (int)pid);
	}
	if (ret)
		dpd_err("remove from %d: %s", (int)pid, msg.msg);
	p = dpd_proc_find(pid);
	if (p)
		dpd_sem_settle(p);
	if (rp) {
		rp->status = ret;
		snprintf(rp->message, sizeof(rp->message), "%s", ret ? msg.msg : "");
		if (!ret) {
			rp->njump += njump;
			rp->nint3 += nint3;
		}
	}
	return ret;
}

int dpd_remove(struct dpd_event *ev, struct dpd_proc *p, struct dp_client_proc *rp)
{
	struct dp_err msg = DP_ERR_INIT;
	struct dpd_work *ws;
	uint32_t *gone, ngone = 0, nstay = 0;
	uint64_t *sites;
	size_t n = 0, nsites = 0;
	pid_t pid = p->pid;
	int ret;

	if (rp)
		rp->pid = (uint32_t)pid;
	dpd_fault("remove");
	if (ev && dpd_combined(p, ev))
		return remove_combined(ev, p, rp);
	ws = calloc(p->nsites ? p->nsites : 1, sizeof(*ws));
	gone = calloc(p->nsites ? p->nsites : 1, sizeof(*gone));
	sites = calloc(p->nsites ? p->nsites : 1, sizeof(*sites));
	if (!ws || !gone || !sites) {
		free(ws);
		free(gone);
		free(sites);
		return -ENOMEM;
	}
	/* A patch ev shares is rebuilt for the others; one it holds alone
	 * (or every one, without ev) is restored. */
	for (uint32_t i = 0; i < p->nsites; i++) {
		const struct dpd_site *s = &p->sites[i];
		struct dpd_work *w;

		if (!s->installed || (ev && !dpd_site_owned(s, ev)))
			continue;
		if (!ev || s->nowners < 2) {
			gone[ngone++] = i;
			continue;
		}
		w = &ws[n++];
		dpd_work_rebuild(w, p, i);
		dpd_site_disown(&w->rec, ev);
	}
	if (dpd_stage(p, ws, n, &msg))
		dpd_info("process %d: the patches %s shares stay: %s", (int)pid, ev->names[0],
			 msg.msg);
	if (n)
		dpd_fault("rebuilt");
	ret = dpd_write_batch(p, ws, n, gone, ngone, false, &msg);
	if (ret == -DP_PROC_ENOPROC) {
		/* Gone: nothing to restore, and nothing to remember. */
		dpd_info("remove from %d: %s", (int)pid, msg.msg);
		if (rp) {
			rp->status = -ESRCH;
			snprintf(rp->message, sizeof(rp->message), "process %d exited", (int)pid);
		}
		dpd_proc_forget(p);
		goto out;
	}
	dpd_fault("restored");
	/* The agent told of every site restored, in batches. */
	for (uint32_t k = 0; k < ngone; k++) {
		const struct dpd_site *s = &p->sites[gone[k]];

		if (s->installed) {
			nstay++;
			continue;
		}
		report_left(rp, &s->patch);
		sites[nsites++] = s->patch.site;
	}
	if (nsites && p->fd >= 0 && dpd_notes_removed(p, sites, nsites, &msg))
		dpd_info("process %d: %s", (int)pid, msg.msg);
	dpd_works_unnote(p, ws, n, true);
	for (size_t i = 0; i < n; i++) {
		struct dpd_work *w = &ws[i];

		if (w->fail) {
			nstay++;
			continue;
		}
		if (dpd_work_record(p, w))
			dpd_err("process %d: out of memory recording a patch", (int)pid);
		report_left(rp, &w->rec.patch);
	}
	if (ret || nstay) {
		if (!ret)
			dp_err_set(&msg, -EIO, "%u patches of process %d could not change: they "
				   "stay as they were", nstay, (int)pid);
		ret = ret ? ret : -EIO;
		if (rp) {
			rp->status = ret;
			snprintf(rp->message, sizeof(rp->message), "%s", msg.msg);
		}
		dpd_err("remove from %d: %s", (int)pid, msg.msg);
	}
	dpd_sem_settle(p);
out:
	for (size_t i = 0; i < n; i++)
		free(ws[i].code);
	free(ws);
	free(gone);
	free(sites);
	return ret;
}

void dpd_remove_everywhere(struct dpd_event *ev, struct dp_client_report *rep)
{
	size_t n = 0, k = 0;
	pid_t *pids;

	/* By pid: a removal may forget its process (it exited), and waits for
	 * the process's holder.  (One that is putting ev in now looks at ev
	 * again when done, and takes it out if it was disabled meanwhile:
	 * install.c, execs.c.) */
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
		struct dpd_proc *p;
		uint32_t nj, ni;

		if (dpd_hold(pids[i]))
			continue;
		p = dpd_proc_find(pids[i]);
		if (p && dpd_proc_count_sites(p, ev, &nj, &ni))
			dpd_remove(ev, p, rep ? dp_client_report_add_proc(rep) : NULL);
		dpd_unhold(pids[i]);
	}
	free(pids);
}

void dpd_remove_if_gone(struct dpd_event *ev, pid_t pid)
{
	struct dpd_proc *p = dpd_proc_find(pid);
	uint32_t nj, ni;

	if ((ev->enabled && !ev->unlinked) || !p)
		return;
	if (dpd_proc_count_sites(p, ev, &nj, &ni)) {
		dpd_info("process %d: %s was disabled while it went in: taken out", (int)pid,
			 ev->names[0]);
		dpd_remove(ev, p, NULL);
		p = dpd_proc_find(pid);
	}
	/* Gone from the list (its session destroyed): its memory goes with
	 * its last pin, so what could not be taken out must not name it; it
	 * serves on as dpd_event_unlink leaves such patches. */
	if (p && ev->unlinked)
		dpd_proc_disown(p, ev);
}
