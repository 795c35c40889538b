/*
 * lttng save: the stock save, then the specs of the saved sessions' dynamic
 * events (locations, paths, pids, contexts, as lttng-dynprobed lists them)
 * appended to each session file as a comment (saved.c), so that `lttng
 * load` can install the probes again.  The stock lttng still loads the
 * file (without the probes).
 */
#include <popt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"

enum {
	OPT_ALL = DP_OPT_OWN,
	OPT_OUTPUT_PATH,
	OPT_FORCE,
};

static struct poptOption options[] = {
	{ "all", 'a', POPT_ARG_NONE, NULL, OPT_ALL, NULL, NULL },
	{ "output-path", 'o', POPT_ARG_STRING, NULL, OPT_OUTPUT_PATH, NULL, NULL },
	{ "force", 'f', POPT_ARG_NONE, NULL, OPT_FORCE, NULL, NULL },
	DP_OPT_INCLUDE(dp_opt_help),
	DP_OPT_INCLUDE(dp_opt_list_options),
	POPT_TABLEEND
};

/*
 * Where the session daemon wrote the session files: -o DIR, else the
 * sessions directory in the home of the user (as the session daemon finds
 * it: from the password database, not $HOME).
 */
static int sessions_dir(const char *output, char *buf, size_t size)
{
	struct passwd *pw;

	if (output)
		return snprintf(buf, size, "%s", output) < (int)size ? 0 : -1;
	pw = getpwuid(getuid());
	if (!pw)
		return -1;
	return snprintf(buf, size, "%s/.lttng/sessions", pw->pw_dir) < (int)size ? 0 : -1;
}

/* Appends the dynamic events of session to its file in dir; 0 or -1 once
 * said why.  *n counts the events written. */
static int save_session(const char *dir, const char *session, const struct dp_client_list_reply *l,
			unsigned *n)
{
	char file[DP_CLIENT_PATH_MAX + DP_CLIENT_NAME_MAX + 16];
	struct dp_err err;
	struct stat st;
	unsigned count = 0;

	for (uint32_t i = 0; i < l->nevents; i++)
		count += !strcmp(l->events[i].session, session);
	if (!count)
		return 0;
	snprintf(file, sizeof(file), "%s/%s.lttng", dir, session);
	if (stat(file, &st)) {
		dp_err("session '%s' has dynamic events, but its saved file %s is missing: its "
		       "probes are not saved (save with -o DIR)", session, file);
		return -1;
	}
	if (dp_saved_append(file, session, l->events, l->nevents, &err)) {
		dp_err_print(&err);
		return -1;
	}
	*n += count;
	return 0;
}

int dp_cmd_save(struct dp_cli *cli, int argc, const char **argv)
{
	struct dp_opts o = { .set = { false } };
	poptContext pc = poptGetContext(NULL, argc, argv, options, 0);
	int opt = dp_opts_parse(&o, pc), ret = DP_CMD_PASS, fd = -1;
	struct dp_client_msg reply;
	const char *session;
	char dir[DP_CLIENT_PATH_MAX];
	unsigned n = 0;
	struct dp_err err;
	bool failed = false;

	memset(&reply, 0, sizeof(reply));
	if (opt < -1 || o.set[DP_OPT_HELP])
		goto out;
	if (o.set[DP_OPT_LIST_OPTIONS]) {
		ret = dp_opts_list(cli, "save", options);
		goto out;
	}
	session = o.set[OPT_ALL] ? NULL : poptGetArg(pc);
	if (poptPeekArg(pc))
		goto out;	/* the stock save's message */
	/* No daemon: no dynamic event to save. */
	fd = dp_daemon_connect(cli, false, NULL);
	if (fd < 0)
		goto out;
	ret = dp_stock_run(cli, argv);
	if (ret)
		goto out;
	if (sessions_dir(o.arg[OPT_OUTPUT_PATH], dir, sizeof(dir))) {
		dp_err("cannot find where the session files are: save with -o DIR");
		ret = DP_CMD_ERROR;
		goto out;
	}
	if (dp_daemon_list(fd, session ? session : "", &reply, &err)) {
		dp_err_print(&err);
		ret = DP_CMD_ERROR;
		goto out;
	}
	if (reply.list_reply.status) {
		dp_err("%s", reply.list_reply.message);
		ret = DP_CMD_ERROR;
		goto out;
	}
	for (uint32_t i = 0; i < reply.list_reply.nevents; i++) {
		const char *s = reply.list_reply.events[i].session;
		bool seen = false;

		/* Each session once, at its first event. */
		for (uint32_t j = 0; j < i && !seen; j++)
			seen = !strcmp(reply.list_reply.events[j].session, s);
		if (!seen && (!session || !strcmp(s, session)))
			failed |= save_session(dir, s, &reply.list_reply, &n) != 0;
	}
	if (n && !cli->mi)
		dp_msg(cli, "Dynamic probes saved with the session%s: %u event%s",
		       session ? "" : "s", n, n == 1 ? "" : "s");
	ret = failed ? DP_CMD_ERROR : DP_CMD_SUCCESS;
out:
	dp_client_msg_release(&reply);
	if (fd >= 0)
		close(fd);
	poptFreeContext(pc);
	dp_opts_release(&o);
	return ret;
}
