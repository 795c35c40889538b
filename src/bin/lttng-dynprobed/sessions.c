/*
 * Noticing sessions destroyed behind our back (`lttng destroy` from a stock
 * CLI, a session daemon restarted): the session daemon is asked for its
 * sessions every poll period, and the dynamic events of a session it no
 * longer has are removed everywhere.  When the session daemon cannot be
 * reached nothing is removed: an unanswered question is not a "no".
 */
#include <lttng/lttng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

/* The sessions found missing by the last poll. */
static char (*missing)[DP_CLIENT_NAME_MAX];
static size_t nmissing;

static bool was_missing(const char *name)
{
	for (size_t i = 0; i < nmissing; i++)
		if (!strcmp(missing[i], name))
			return true;
	return false;
}

void dpd_sessions_poll(void)
{
	struct lttng_session *sessions = NULL;
	char (*now)[DP_CLIENT_NAME_MAX] = NULL;
	struct dpd_event *ev;
	size_t nnow = 0;
	int n;

	if (!dpd_events)
		return;
	/* The session daemon's answer is waited for without the lock. */
	dpd_unlock();
	n = lttng_list_sessions(&sessions);
	dpd_lock();
	if (n < 0) {
		dpd_dbg("cannot list sessions: %s", lttng_strerror(n));
		return;
	}
	/* The sessions missing now; those missing last time too go. */
	for (ev = dpd_events; ev; ev = ev->next) {
		char (*v)[DP_CLIENT_NAME_MAX];
		bool found = false;

		for (int i = 0; i < n && !found; i++)
			found = !strcmp(sessions[i].name, ev->session);
		for (size_t i = 0; i < nnow && !found; i++)
			found = !strcmp(now[i], ev->session);
		if (found)
			continue;
		v = realloc(now, (nnow + 1) * sizeof(*v));

		if (!v)
			break;
		now = v;
		snprintf(now[nnow++], sizeof(now[0]), "%s", ev->session);
	}
	for (size_t i = 0; i < nnow; i++) {
		dpd_dbg("session %s missing from a list of %d (first '%s')", now[i], n,
			n > 0 ? sessions[0].name : "");
		if (!was_missing(now[i]))
			continue;
		dpd_info("session %s no longer exists: removing its dynamic events", now[i]);
		dpd_session_drop(now[i], 0, NULL);
	}
	free(missing);
	missing = now;
	nmissing = nnow;
	free(sessions);
}
