/*
 * lttng load: the stock load, then the dynamic events that `lttng save`
 * kept in the loaded session files (saved.c) are enabled again through
 * lttng-dynprobed, with their contexts: their probes go in at load time,
 * as with enable-event, into the processes that map their path (or their
 * pids) now and those that start later with the agent, and with
 * --follow-exec as saved (EVENT_FLAGS).  The event names themselves are the
 * stock load's.
 */
#include <dirent.h>
#include <popt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lttng/lttng.h>

#include "cli.h"
#include "options.h"

enum {
	OPT_ALL = DP_OPT_OWN,
	OPT_INPUT_PATH,
	OPT_FORCE,
	OPT_OVERRIDE_URL,
	OPT_OVERRIDE_NAME,
};

static struct poptOption options[] = {
	{ "all", 'a', POPT_ARG_NONE, NULL, OPT_ALL, NULL, NULL },
	{ "input-path", 'i', POPT_ARG_STRING, NULL, OPT_INPUT_PATH, NULL, NULL },
	{ "force", 'f', POPT_ARG_NONE, NULL, OPT_FORCE, NULL, NULL },
	{ "override-url", 0, POPT_ARG_STRING, NULL, OPT_OVERRIDE_URL, NULL, NULL },
	{ "override-name", 0, POPT_ARG_STRING, NULL, OPT_OVERRIDE_NAME, NULL, NULL },
	DP_OPT_INCLUDE(dp_opt_help),
	DP_OPT_INCLUDE(dp_opt_list_options),
	POPT_TABLEEND
};

struct load {
	struct dp_cli *cli;
	const char *session;		/* the one to load; NULL: all */
	const char *rename;		/* --override-name */
	int fd;				/* lttng-dynprobed, once needed */
	char **done;			/* sessions whose probes are in */
	size_t ndone;
	bool failed;
};

/* Enables one saved event again (probes, then its names if the stock load
 * left them out); 0 or -1 once said why. */
static int load_event(struct load *l, struct dp_client_event *ev, const char *session)
{
	struct dp_client_msg req = { .type = DP_CLIENT_ENABLE }, reply;
	struct dp_client_enable *e = &req.enable;
	struct lttng_handle *h;
	struct dp_err err;
	bool unfollowed = false;
	int ret = -1;

	if (l->fd < 0) {
		l->fd = dp_daemon_connect(l->cli, true, &err);
		if (l->fd < 0) {
			dp_err_print(&err);
			return -1;
		}
	}
	snprintf(e->session, sizeof(e->session), "%s", session);
	snprintf(e->channel, sizeof(e->channel), "%s", ev->channel);
	snprintf(e->event, sizeof(e->event), "%s", ev->event);
	snprintf(e->location, sizeof(e->location), "%s", ev->location);
	snprintf(e->path, sizeof(e->path), "%s", ev->path);
	e->kind = ev->kind;
	e->npids = ev->npids;
	e->pids = ev->pids;
	e->nctx = ev->nctx;
	e->ctx = ev->ctx;
	if (dp_daemon_call(l->fd, &req, &reply, &err)) {
		dp_err_print(&err);
		return -1;
	}
	if (reply.report.status) {
		dp_err("dynamic event %s of session '%s' (%s %s in %s): %s", ev->event, session,
		       dp_client_kind_str(ev->kind), ev->location,
		       ev->path, reply.report.message);
		goto out;
	}
	if (ev->flags && dp_daemon_event_flags(l->fd, session, ev->channel, ev->event, ev->flags,
					       &err)) {
		dp_err_prefix(&err, "dynamic event %s of session '%s' is loaded, but does not "
			      "follow executed programs: ", ev->event, session);
		dp_err_print(&err);
		unfollowed = true;
	}
	h = dp_ust_handle(session);
	for (uint32_t i = 0; h && i < reply.report.nevents; i++) {
		int r = dp_ust_event_enable(h, reply.report.events[i], ev->channel, NULL);

		if (r < 0 && r != -LTTNG_ERR_UST_EVENT_ENABLED)
			dp_warn("cannot enable %s in session '%s': %s", reply.report.events[i],
				session, lttng_strerror(r));
	}
	lttng_destroy_handle(h);
	for (uint32_t i = 0; i < reply.report.nevents; i++)
		dp_msg(l->cli, "Dynamic UST event %s loaded in session %s, channel %s",
		       reply.report.events[i], session, ev->channel);
	dp_report_print(l->cli, &reply.report, l->cli->verbose > 0);
	ret = unfollowed ? -1 : 0;
out:
	dp_client_msg_release(&reply);
	return ret;
}

/* The saved events of one session file, if its session was loaded. */
static void load_file(struct load *l, const char *file)
{
	struct dp_saved s;
	struct dp_err err;
	const char *name;
	char **grown;

	if (dp_saved_read(file, &s, &err)) {
		dp_err_print(&err);
		l->failed = true;
		return;
	}
	if (!s.found || (l->session && strcmp(l->session, s.session)))
		goto out;
	name = l->rename ? l->rename : s.session;
	for (size_t i = 0; i < l->ndone; i++)
		if (!strcmp(l->done[i], name))
			goto out;	/* the stock load took the first file too */
	grown = realloc(l->done, (l->ndone + 1) * sizeof(*l->done));
	if (!grown)
		goto out;
	l->done = grown;
	l->done[l->ndone] = strdup(name);
	if (l->done[l->ndone])
		l->ndone++;
	for (uint32_t i = 0; i < s.nevents; i++)
		if (s.events[i].enabled && load_event(l, &s.events[i], name))
			l->failed = true;
out:
	dp_saved_release(&s);
}

/* Every *.lttng file of a directory, or the file itself. */
static void load_path(struct load *l, const char *path)
{
	struct dirent **ents;
	struct stat st;
	int n;

	if (stat(path, &st))
		return;
	if (!S_ISDIR(st.st_mode)) {
		load_file(l, path);
		return;
	}
	n = scandir(path, &ents, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(ents[i]->d_name);
		char file[DP_CLIENT_PATH_MAX + 256];

		if (len > 6 && !strcmp(ents[i]->d_name + len - 6, ".lttng") &&
		    snprintf(file, sizeof(file), "%s/%s", path, ents[i]->d_name) < (int)sizeof(file))
			load_file(l, file);
		free(ents[i]);
	}
	if (n >= 0)
		free(ents);
}

/* Where the stock load looks without -i: the user's sessions directory
 * ($LTTNG_HOME, else $HOME), then the system's; and where the session
 * daemon saves (the password database's home). */
static void load_default(struct load *l)
{
	const char *home = getenv("LTTNG_HOME");
	struct passwd *pw = getpwuid(getuid());
	char dir[DP_CLIENT_PATH_MAX];

	if (!home || !*home)
		home = getenv("HOME");
	if (home && snprintf(dir, sizeof(dir), "%s/.lttng/sessions", home) < (int)sizeof(dir))
		load_path(l, dir);
	if (pw && snprintf(dir, sizeof(dir), "%s/.lttng/sessions", pw->pw_dir) < (int)sizeof(dir))
		load_path(l, dir);
	load_path(l, "/etc/lttng/sessions");
}

int dp_cmd_load(struct dp_cli *cli, int argc, const char **argv)
{
	struct dp_opts o = { .set = { false } };
	poptContext pc = poptGetContext(NULL, argc, argv, options, 0);
	int opt = dp_opts_parse(&o, pc), ret = DP_CMD_PASS;
	struct load l = { .cli = cli, .fd = -1 };

	if (opt < -1 || o.set[DP_OPT_HELP])
		goto out;
	if (o.set[DP_OPT_LIST_OPTIONS]) {
		ret = dp_opts_list(cli, "load", options);
		goto out;
	}
	l.session = o.set[OPT_ALL] ? NULL : poptGetArg(pc);
	l.rename = o.arg[OPT_OVERRIDE_NAME];
	if (poptPeekArg(pc))
		goto out;	/* the stock load's message */
	ret = dp_stock_run(cli, argv);
	if (ret)
		goto out;
	/* --mi: the stock document alone on stdout. */
	cli->quiet |= cli->mi != NULL;
	if (o.arg[OPT_INPUT_PATH])
		load_path(&l, o.arg[OPT_INPUT_PATH]);
	else
		load_default(&l);
	ret = l.failed ? DP_CMD_ERROR : DP_CMD_SUCCESS;
out:
	if (l.fd >= 0)
		close(l.fd);
	for (size_t i = 0; i < l.ndone; i++)
		free(l.done[i]);
	free(l.done);
	poptFreeContext(pc);
	dp_opts_release(&o);
	return ret;
}
