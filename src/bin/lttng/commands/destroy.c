/*
 * lttng destroy: the session's dynamic probes come out of every process
 * first (when lttng-dynprobed runs), then the stock destroy does the rest,
 * with the same arguments, output and exit code.
 */
#include <popt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lttng/lttng.h>

#include "cli.h"
#include "options.h"

enum {
	OPT_ALL = DP_OPT_OWN,
	OPT_NO_WAIT,
};

static struct poptOption options[] = {
	{ "all", 'a', POPT_ARG_NONE, NULL, OPT_ALL, NULL, NULL },
	{ "no-wait", 'n', POPT_ARG_NONE, NULL, OPT_NO_WAIT, NULL, NULL },
	DP_OPT_INCLUDE(dp_opt_help),
	DP_OPT_INCLUDE(dp_opt_list_options),
	POPT_TABLEEND
};

static void session_destroyed(int fd, const char *name)
{
	struct dp_client_msg req = { .type = DP_CLIENT_SESSION_DESTROYED }, reply;
	struct dp_err err;

	snprintf(req.session_destroyed, sizeof(req.session_destroyed), "%s", name);
	if (dp_daemon_call(fd, &req, &reply, &err)) {
		dp_err_print(&err);
		return;
	}
	/* The stock destroy goes on whatever happened: the daemon also
	 * notices destroyed sessions by itself. */
	if (reply.report.status)
		dp_warn("removing the dynamic probes of session '%s': %s", name,
			reply.report.message);
	dp_client_msg_release(&reply);
}

int dp_cmd_destroy(struct dp_cli *cli, int argc, const char **argv)
{
	struct dp_opts o = { .set = { false } };
	poptContext pc = poptGetContext(NULL, argc, argv, options, 0);
	const char **args;
	int fd;

	if (dp_opts_parse(&o, pc) < -1 || o.set[DP_OPT_HELP] || o.set[DP_OPT_LIST_OPTIONS])
		goto out;
	/* Without a daemon there is no probe to remove: nothing to connect to,
	 * nothing to start. */
	fd = dp_daemon_connect(cli, false, NULL);
	if (fd < 0)
		goto out;
	args = poptGetArgs(pc);
	if (o.set[OPT_ALL]) {
		struct lttng_session *sessions = NULL;
		int n = lttng_list_sessions(&sessions);

		for (int i = 0; i < n; i++)
			session_destroyed(fd, sessions[i].name);
		free(sessions);
	} else if (args && args[0]) {
		session_destroyed(fd, args[0]);
	} else {
		/* The current session; the stock destroy says what is wrong if
		 * there is none. */
		char *name = dp_session_pick(NULL, NULL);

		if (name)
			session_destroyed(fd, name);
		free(name);
	}
	close(fd);
out:
	poptFreeContext(pc);
	dp_opts_release(&o);
	return DP_CMD_PASS;
}
