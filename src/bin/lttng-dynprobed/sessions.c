/*
 * Noticing sessions destroyed behind our back (`lttng destroy` from a stock
 * CLI, a session daemon restarted): the session daemon is asked for its
 * sessions every poll period, and the dynamic events of a session it no
 * longer has are removed everywhere.  When the session daemon cannot be
 * reached nothing is removed: an unanswered question is not a "no".  Nor
 * is a list with a session named "" or with control characters (a list
 * of one session named "\r", then an empty one, came back for live
 * sessions when two polls called liblttng-ctl at once: its calls share one
 * connection, so serve.c runs one poll at a time and nothing else of the
 * daemon calls liblttng-ctl).  A session goes only when a list asked
 * half a poll period or more after the first that missed it came back
 * misses it too (polls that waited for the lock run back to back, and
 * would see the same glitch twice), and the session daemon then answers,
 * asked for that session's domains, that it has no such session.
 */
#include <lttng/lttng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

/* The sessions found missing by the last poll, and since when (the time
 * the first list that missed each came back). */
struct miss {
	char name[DP_CLIENT_NAME_MAX];
	int64_t since;
};
static struct miss *missing;
static size_t nmissing;

/* When the last poll found `name` missing too, since when; else -1. */
static int64_t missing_since(const char *name)
{
	for (size_t i = 0; i < nmissing; i++)
		if (!strcmp(missing[i].name, name))
			return missing[i].since;
	return -1;
}

/* Whether the session daemon says, of that very session, that it has no
 * such session (asked without the lock; with it, taken again). */
static bool session_gone(const char *name)
{
	struct lttng_domain *domains = NULL;
	int ret;

	dpd_unlock();
	ret = lttng_list_domains(name, &domains);
	dpd_lock();
	free(domains);
	if (ret != -LTTNG_ERR_SESS_NOT_FOUND)
		dpd_dbg("session %s missing from the list, yet its domains: %s", name,
			ret >= 0 ? "listed" : lttng_strerror(ret));
	return ret == -LTTNG_ERR_SESS_NOT_FOUND;
}

void dpd_sessions_poll(void)
{
	struct lttng_session *sessions = NULL;
	struct miss *now = NULL;
	struct dpd_event *ev;
	size_t nnow = 0;
	int64_t asked, answered;
	int n;

	if (!dpd_events)
		return;
	/* The session daemon's answer is waited for without the lock. */
	dpd_unlock();
	asked = dpd_now_ms();
	n = lttng_list_sessions(&sessions);
	answered = dpd_now_ms();
	dpd_lock();
	if (n < 0) {
		dpd_dbg("cannot list sessions: %s", lttng_strerror(n));
		return;
	}
	for (int i = 0; i < n; i++) {
		bool bad = sessions[i].name[0] == '\0' ||
			   !memchr(sessions[i].name, '\0', sizeof(sessions[i].name));

		for (const char *c = sessions[i].name; !bad && *c; c++)
			bad = (unsigned char)*c < 0x20;
		if (bad) {
			dpd_dbg("the session daemon listed a session without a proper name: no answer");
			free(sessions);
			return;
		}
	}
	/* The sessions missing now; those missing last time too go. */
	for (ev = dpd_events; ev; ev = ev->next) {
		struct miss *v;
		bool found = false;
		int64_t since;

		for (int i = 0; i < n && !found; i++)
			found = !strcmp(sessions[i].name, ev->session);
		for (size_t i = 0; i < nnow && !found; i++)
			found = !strcmp(now[i].name, ev->session);
		if (found)
			continue;
		v = realloc(now, (nnow + 1) * sizeof(*v));

		if (!v)
			break;
		now = v;
		snprintf(now[nnow].name, sizeof(now[0].name), "%s", ev->session);
		since = missing_since(ev->session);
		now[nnow++].since = since < 0 ? answered : since;
	}
	for (size_t i = 0; i < nnow; i++) {
		dpd_dbg("session %s missing from a list of %d (first '%s')", now[i].name, n,
			n > 0 ? sessions[0].name : "");
		if (asked < now[i].since + dpd_cfg.poll_ms / 2 || !session_gone(now[i].name))
			continue;
		dpd_info("session %s no longer exists: removing its dynamic events", now[i].name);
		dpd_session_drop(now[i].name, 0, NULL);
	}
	free(missing);
	missing = now;
	nmissing = nnow;
	free(sessions);
}
