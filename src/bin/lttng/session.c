/*
 * The session side, through liblttng-ctl: the tracing group, the session
 * daemon (started when absent, as `lttng create` does), whether a session
 * exists, and the userspace event rules our events are enabled as.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lttng/lttng.h>

#include "cli.h"

#ifndef DP_SESSIOND
#define DP_SESSIOND "/usr/bin/lttng-sessiond"
#endif

void dp_lttng_setup(const struct dp_cli *cli)
{
	if (cli->group)
		lttng_set_tracing_group(cli->group);
}

static const char *sessiond_path(const struct dp_cli *cli)
{
	const char *env = getenv("LTTNG_SESSIOND_PATH");

	if (cli->sessiond_path)
		return cli->sessiond_path;
	return env && *env ? env : DP_SESSIOND;
}

int dp_sessiond_ensure(const struct dp_cli *cli, struct dp_err *err)
{
	const char *path = sessiond_path(cli);
	int status;
	pid_t pid;

	if (lttng_session_daemon_alive() == 1)
		return 0;
	if (cli->no_sessiond)
		return dp_err_set(err, -ECONNREFUSED, "no session daemon is running, and "
				  "--no-sessiond forbids starting one: start lttng-sessiond first");
	if (!cli->quiet)
		fprintf(stderr, "Spawning a session daemon\n");
	pid = dp_fork(err);
	if (pid < 0)
		return pid;
	if (!pid) {
		/* --daemonize returns once the daemon is ready. */
		if (cli->group) {
			char opt[256];

			snprintf(opt, sizeof(opt), "--group=%s", cli->group);
			execl(path, path, "--daemonize", opt, (char *)NULL);
		} else {
			execl(path, path, "--daemonize", (char *)NULL);
		}
		dp_err("cannot run %s: %s (install lttng-tools, or give --sessiond-path)", path,
		       strerror(errno));
		_exit(127);
	}
	/* Whatever its exit: the daemon's socket says whether it runs. */
	dp_wait(pid, &status);
	for (int i = 0; i < 100; i++) {
		if (lttng_session_daemon_alive() == 1)
			return 0;
		usleep(20000);
	}
	return dp_err_set(err, -ECHILD, "the session daemon (%s) did not start", path);
}

struct lttng_handle *dp_ust_handle(const char *session)
{
	struct lttng_domain dom = { .type = LTTNG_DOMAIN_UST, .buf_type = LTTNG_BUFFER_PER_UID };

	return lttng_create_handle(session, &dom);
}

int dp_ust_event_enable(struct lttng_handle *h, const char *name, const char *channel,
			const char *filter)
{
	struct lttng_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = LTTNG_EVENT_TRACEPOINT;
	ev.loglevel_type = LTTNG_EVENT_LOGLEVEL_ALL;
	ev.loglevel = -1;
	snprintf(ev.name, sizeof(ev.name), "%s", name);
	return lttng_enable_event_with_exclusions(h, &ev, (char *)channel, (char *)filter, 0,
						  NULL);
}

int dp_ust_event_disable(struct lttng_handle *h, const char *name, const char *channel,
			 const char *filter)
{
	struct lttng_event ev;

	memset(&ev, 0, sizeof(ev));
	/* As the stock disable-event does: any type of that name. */
	ev.type = LTTNG_EVENT_ALL;
	ev.loglevel = -1;
	snprintf(ev.name, sizeof(ev.name), "%s", name);
	return lttng_disable_event_ext(h, &ev, (char *)channel, (char *)filter);
}

int dp_session_exists(const char *name, struct dp_err *err)
{
	struct lttng_session *sessions = NULL;
	int n = lttng_list_sessions(&sessions);
	int found = 0;

	if (n < 0)
		return dp_err_set(err, -EIO, "%s", lttng_strerror(n));
	for (int i = 0; i < n; i++)
		found |= !strcmp(sessions[i].name, name);
	free(sessions);
	return found;
}
