/*
 * Noticing sessions destroyed behind our back (`lttng destroy` from a stock
 * CLI, a session daemon restarted): the session daemon is asked for its
 * sessions every poll period, and the dynamic events of a session it no
 * longer has are removed everywhere.  When the session daemon cannot be
 * reached nothing is removed: an unanswered question is not a "no".
 */
#include <lttng/lttng.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

void dpd_sessions_poll(void)
{
	struct lttng_session *sessions = NULL;
	struct dpd_event *ev;
	bool again = true;
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
	while (again) {
		again = false;
		for (ev = dpd_events; ev; ev = ev->next) {
			bool found = false;

			for (int i = 0; i < n && !found; i++)
				found = !strcmp(sessions[i].name, ev->session);
			if (found)
				continue;
			dpd_info("session %s no longer exists: removing its dynamic events",
				 ev->session);
			/* Drops every event of the session: start over. */
			dpd_session_drop(ev->session, 0, NULL);
			again = true;
			break;
		}
	}
	free(sessions);
}
