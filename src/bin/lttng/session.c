/*
 * The session side, through liblttng-ctl: the tracing group, the session
 * daemon (started when absent, as `lttng create` does), and whether a
 * session exists.
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

int dp_sessiond_ensure(const struct dp_cli *cli)
{
	const char *path = sessiond_path(cli);
	int status;
	pid_t pid;

	if (lttng_session_daemon_alive() == 1)
		return 0;
	if (cli->no_sessiond) {
		dp_err("no session daemon is running, and --no-sessiond forbids starting one: "
		       "start lttng-sessiond first");
		return -1;
	}
	if (!cli->quiet)
		fprintf(stderr, "Spawning a session daemon\n");
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		dp_err("fork: %s", strerror(errno));
		return -1;
	}
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
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			break;
	}
	for (int i = 0; i < 100; i++) {
		if (lttng_session_daemon_alive() == 1)
			return 0;
		usleep(20000);
	}
	dp_err("the session daemon (%s) did not start", path);
	return -1;
}

int dp_session_exists(const char *name)
{
	struct lttng_session *sessions = NULL;
	int n = lttng_list_sessions(&sessions);
	int found = 0;

	if (n < 0) {
		dp_err("%s", lttng_strerror(n));
		return -1;
	}
	for (int i = 0; i < n; i++)
		found |= !strcmp(sessions[i].name, name);
	free(sessions);
	return found;
}
