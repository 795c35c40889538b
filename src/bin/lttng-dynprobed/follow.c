/*
 * Follow mode: which agents keep themselves in the images their processes
 * execute because an event asks it (`lttng enable-event --follow-exec`,
 * the event's DP_CLIENT_EVENT_FOLLOW_EXEC).
 *
 * The rule: an agent follows, for us, while some enabled event with the
 * flag has a site installed in its process.  So it goes on where such an
 * event is installed (by pid: the processes named and, as they say HELLO,
 * their descendants, among them the images that follow brought the agent
 * into), and off where the last one is disabled, its session destroyed, or
 * its flag cleared.  What the environment asked at the start (`lttng trace
 * --follow-exec`) is the agent's own and stays.
 *
 * What we told each agent is kept (dpd_proc.follow, forgotten at every
 * HELLO: a forked child or a new image inherits or loses its parent's
 * mode); FOLLOW goes only where the wanted mode differs, so a request
 * waits for no process whose mode does not change.  Agents older than
 * DP_APP_MINOR_FOLLOW are left alone: they do not follow.
 */
#include <errno.h>
#include <stdlib.h>

#include "daemon.h"

/* Some event had FOLLOW_EXEC in this daemon's life: agents may have been
 * told to follow. */
static bool follow_used;

void dpd_follow_flags_set(uint32_t flags)
{
	if (flags & DP_CLIENT_EVENT_FOLLOW_EXEC)
		follow_used = true;
}

/*
 * An agent follows for us only where an event with FOLLOW_EXEC had a site
 * installed: in its process, or in the parent it was forked from (whose
 * patches it then reports too).  An agent that reports no patch, in a
 * daemon that never had such an event (the one before a restart had the
 * same events: they come back from the state file, flags and all), does not
 * follow for us: no FOLLOW to send it at GO (a round trip to every agent
 * that starts, for nothing).
 */
void dpd_follow_hello(struct dpd_proc *p, uint32_t npatches)
{
	p->follow_known = !follow_used && !npatches;
	p->follow = 0;
}

/* The flags p's agent should have: with the state lock. */
static uint32_t wanted(const struct dpd_proc *p)
{
	for (const struct dpd_event *ev = dpd_events; ev; ev = ev->next) {
		uint32_t j, i;

		if (ev->unlinked || !ev->enabled || !(ev->flags & DP_CLIENT_EVENT_FOLLOW_EXEC))
			continue;
		if (dpd_proc_count_sites(p, ev, &j, &i) > 0)
			return DP_APP_FOLLOW_EXEC;
	}
	return 0;
}

/* Whether p's agent is to be told; `unknown`: also when we do not know
 * what it has (after its HELLO, where its caller holds it).  A request that
 * changed nothing in a process never waits for that process's hold: one
 * whose agent said HELLO but was not told yet (its HELLO's job waits for
 * an install there) is taken as not following. */
static bool stale(const struct dpd_proc *p, uint32_t want, bool unknown)
{
	if (p->fd < 0 || p->minor < DP_APP_MINOR_FOLLOW)
		return false;
	if (!p->follow_known)
		return unknown || want;
	return p->follow != want;
}

void dpd_follow_sync_held(struct dpd_proc *p)
{
	struct dp_app_msg req = { .type = DP_APP_FOLLOW }, rep;
	struct dp_err msg = DP_ERR_INIT;
	pid_t pid = p->pid;
	uint32_t want = wanted(p);
	int ret;

	if (!stale(p, want, true))
		return;
	req.follow = want;
	ret = dpd_agent_call(p, &req, &rep, &msg);
	if (!ret && rep.result.status) {
		ret = rep.result.status;
		dp_err_set(&msg, ret, "%s", rep.result.error);
	}
	dp_app_msg_release(&rep);
	/* The call let the lock go: the record may be gone. */
	p = dpd_proc_find(pid);
	if (!p)
		return;
	if (ret) {
		dpd_info("process %d: FOLLOW %s: %s", (int)pid, want ? "on" : "off", msg.msg);
		return;
	}
	p->follow = want;
	p->follow_known = true;
	dpd_dbg("process %d: following executed images %s", (int)pid, want ? "on" : "off");
}

void dpd_follow_sync(void)
{
	pid_t *pids;
	size_t n = 0, cap = 0;

	for (struct dpd_proc *p = dpd_procs; p; p = p->next)
		cap++;
	pids = calloc(cap ? cap : 1, sizeof(*pids));
	if (!pids)
		return;
	for (struct dpd_proc *p = dpd_procs; p; p = p->next)
		if (stale(p, wanted(p), false))
			pids[n++] = p->pid;
	for (size_t k = 0; k < n; k++) {
		struct dpd_proc *p;

		if (dpd_hold(pids[k]))
			continue;
		p = dpd_proc_find(pids[k]);
		if (p)
			dpd_follow_sync_held(p);
		dpd_unhold(pids[k]);
	}
	free(pids);
}
