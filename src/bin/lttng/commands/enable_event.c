/*
 * lttng enable-event -u with --probe, --function or --userspace-probe=elf:
 * a dynamic probe event.  Everything else goes to the stock enable-event.
 *
 * Order, so that a failure leaves nothing behind: every argument is checked
 * first (the location against the ELF file too), then lttng-dynprobed
 * installs the probes (it refuses as a whole, leaving no patch), then the
 * event names are enabled in the session; if that fails, the probes are
 * removed again.
 */
#include <errno.h>
#include <popt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lttng/lttng.h>

#include "cli.h"

enum {
	OPT_PID = 1,
	OPT_HELP,
	OPT_LIST_OPTIONS,
};

struct enable_args {
	const char *session, *channel, *filter;
	const char *event;			/* as typed */
	int kind;				/* enum dp_client_kind */
	const char *location;			/* as typed */
	char *path;				/* absolute */
	uint32_t *pids, npids;
};

/* Enables the lttng event names in the session; on failure, disables those
 * it enabled.  0 or -1 with a message. */
static int enable_names(const struct enable_args *a, char (*names)[DP_CLIENT_EVENT_MAX],
			uint32_t n)
{
	struct lttng_domain dom = { .type = LTTNG_DOMAIN_UST, .buf_type = LTTNG_BUFFER_PER_UID };
	struct lttng_handle *h = lttng_create_handle(a->session, &dom);
	bool fresh[DP_CLIENT_MAX_NAMES] = { false };	/* enabled by this call */
	uint32_t done = 0;
	int ret = 0;

	if (!h) {
		dp_err("cannot reach session '%s' (out of memory)", a->session);
		return -1;
	}
	if (n > DP_CLIENT_MAX_NAMES)
		n = DP_CLIENT_MAX_NAMES;
	for (; done < n; done++) {
		struct lttng_event ev;

		memset(&ev, 0, sizeof(ev));
		ev.type = LTTNG_EVENT_TRACEPOINT;
		ev.loglevel_type = LTTNG_EVENT_LOGLEVEL_ALL;
		ev.loglevel = -1;
		snprintf(ev.name, sizeof(ev.name), "%s", names[done]);
		ret = lttng_enable_event_with_exclusions(h, &ev, (char *)a->channel,
							 (char *)a->filter, 0, NULL);
		if (ret == -LTTNG_ERR_UST_EVENT_ENABLED) {
			/* Enabled before: its probes are in place, keep them. */
			dp_warn("%s is already enabled in channel %s", names[done], a->channel);
			ret = 0;
			continue;
		}
		if (ret < 0) {
			dp_err("cannot enable %s in session '%s', channel %s: %s", names[done],
			       a->session, a->channel, lttng_strerror(ret));
			break;
		}
		fresh[done] = true;
	}
	if (ret < 0) {
		for (uint32_t i = 0; i < done; i++) {
			struct lttng_event ev;

			if (!fresh[i])
				continue;
			memset(&ev, 0, sizeof(ev));
			ev.type = LTTNG_EVENT_ALL;
			ev.loglevel = -1;
			snprintf(ev.name, sizeof(ev.name), "%s", names[i]);
			lttng_disable_event_ext(h, &ev, (char *)a->channel, (char *)a->filter);
		}
	}
	lttng_destroy_handle(h);
	return ret < 0 ? -1 : 0;
}

static int run(struct dp_cli *cli, const struct enable_args *a)
{
	struct dp_client_msg req = { .type = DP_CLIENT_ENABLE }, reply, dreply;
	struct dp_client_enable *e = &req.enable;
	struct dp_client_report *r;
	int fd, ret = DP_CMD_ERROR;

	snprintf(e->session, sizeof(e->session), "%s", a->session);
	snprintf(e->channel, sizeof(e->channel), "%s", a->channel);
	snprintf(e->event, sizeof(e->event), "%s", a->event);
	snprintf(e->location, sizeof(e->location), "%s", a->location);
	snprintf(e->path, sizeof(e->path), "%s", a->path);
	e->kind = a->kind;
	e->npids = a->npids;
	e->pids = a->pids;

	fd = dp_daemon_connect(cli, true);
	if (fd < 0)
		return DP_CMD_ERROR;
	if (dp_daemon_call(fd, &req, &reply))
		goto out;
	r = &reply.report;
	if (r->status) {
		dp_err("%s", r->message[0] ? r->message : strerror(-r->status));
		for (uint32_t i = 0; i < r->nprocs; i++)
			if (r->procs[i].status)
				dp_err("process %u: %s", r->procs[i].pid, r->procs[i].message);
		goto out_reply;
	}
	if (!r->nevents) {
		dp_err("lttng-dynprobed named no event for %s", a->event);
		goto out_disable;
	}
	if (enable_names(a, r->events, r->nevents))
		goto out_disable;
	for (uint32_t i = 0; i < r->nevents; i++)
		dp_msg(cli, "Dynamic UST event %s created in channel %s%s%s%s", r->events[i],
		       a->channel, a->filter ? " with filter '" : "", a->filter ? a->filter : "",
		       a->filter ? "'" : "");
	dp_report_print(cli, r, cli->verbose > 0);
	ret = DP_CMD_SUCCESS;
	goto out_reply;

out_disable:
	/* The session refused the names: take the probes out again. */
	{
		struct dp_client_msg dreq = { .type = DP_CLIENT_DISABLE };

		snprintf(dreq.disable.session, sizeof(dreq.disable.session), "%s", a->session);
		snprintf(dreq.disable.channel, sizeof(dreq.disable.channel), "%s", a->channel);
		snprintf(dreq.disable.event, sizeof(dreq.disable.event), "%s", a->event);
		if (!dp_daemon_call(fd, &dreq, &dreply))
			dp_client_msg_release(&dreply);
	}
out_reply:
	dp_client_msg_release(&reply);
out:
	close(fd);
	return ret;
}

/* Whether every pid names a live process; the daemon checks the rest
 * (ownership, mappings).  Checked here so that a typo costs no daemon. */
static int check_pids(const uint32_t *pids, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (kill((pid_t)pids[i], 0) < 0 && errno == ESRCH) {
			dp_err("no process %u (--pid): give the pid of a running process that "
			       "maps --path", pids[i]);
			return -1;
		}
	}
	return 0;
}

int dp_cmd_enable_event(struct dp_cli *cli, int argc, const char **argv)
{
	char *session = NULL, *channel = NULL, *probe = NULL, *function = NULL, *uprobe = NULL;
	char *path = NULL, *filter = NULL, *exclude = NULL, *loglevel = NULL;
	char *loglevel_only = NULL;
	int u = 0, k = 0, j = 0, l = 0, p = 0, all = 0, tracepoint = 0, syscall = 0;
	int opt, help = 0, list_options = 0, ret = DP_CMD_ERROR;
	bool has_pid = false;
	struct enable_args a = { .kind = 0 };
	struct poptOption options[] = {
		{ "session", 's', POPT_ARG_STRING, &session, 0, NULL, NULL },
		{ "channel", 'c', POPT_ARG_STRING, &channel, 0, NULL, NULL },
		{ "userspace", 'u', POPT_ARG_NONE, &u, 0, NULL, NULL },
		{ "kernel", 'k', POPT_ARG_NONE, &k, 0, NULL, NULL },
		{ "jul", 'j', POPT_ARG_NONE, &j, 0, NULL, NULL },
		{ "log4j", 'l', POPT_ARG_NONE, &l, 0, NULL, NULL },
		{ "python", 'p', POPT_ARG_NONE, &p, 0, NULL, NULL },
		{ "all", 'a', POPT_ARG_NONE, &all, 0, NULL, NULL },
		{ "tracepoint", 0, POPT_ARG_NONE, &tracepoint, 0, NULL, NULL },
		{ "syscall", 0, POPT_ARG_NONE, &syscall, 0, NULL, NULL },
		{ "probe", 0, POPT_ARG_STRING, &probe, 0, NULL, NULL },
		{ "function", 0, POPT_ARG_STRING, &function, 0, NULL, NULL },
		{ "userspace-probe", 0, POPT_ARG_STRING, &uprobe, 0, NULL, NULL },
		{ "path", 0, POPT_ARG_STRING, &path, 0, NULL, NULL },
		{ "pid", 0, POPT_ARG_STRING, NULL, OPT_PID, NULL, NULL },
		{ "filter", 'f', POPT_ARG_STRING, &filter, 0, NULL, NULL },
		{ "exclude", 'x', POPT_ARG_STRING, &exclude, 0, NULL, NULL },
		{ "loglevel", 0, POPT_ARG_STRING, &loglevel, 0, NULL, NULL },
		{ "loglevel-only", 0, POPT_ARG_STRING, &loglevel_only, 0, NULL, NULL },
		{ "help", 'h', POPT_ARG_NONE, NULL, OPT_HELP, NULL, NULL },
		{ "list-options", 0, POPT_ARG_NONE, NULL, OPT_LIST_OPTIONS, NULL, NULL },
		POPT_TABLEEND,
	};
	poptContext pc = poptGetContext(NULL, argc, argv, options, 0);
	const char **names;
	int nnames = 0;
	struct dp_err err;
	struct dp_location loc;
	char upath[DP_CLIENT_PATH_MAX];
	char full[DP_SPEC_EVENT_MAX];
	bool ours;
	int nlocs;

	while ((opt = poptGetNextOpt(pc)) > 0) {
		switch (opt) {
		case OPT_PID: {
			char *arg = poptGetOptArg(pc);

			has_pid = true;
			if (dp_parse_pids(arg ? arg : "", &a.pids, &a.npids)) {
				free(arg);
				goto out;
			}
			free(arg);
			break;
		}
		case OPT_HELP:
			help = 1;
			break;
		case OPT_LIST_OPTIONS:
			list_options = 1;
			break;
		}
	}
	ours = path || has_pid || (u && (probe || function || uprobe));
	if (opt < -1) {
		/* An option the stock lttng may know better: its message, unless
		 * the line is ours. */
		if (!ours) {
			ret = DP_CMD_PASS;
			goto out;
		}
		dp_err("%s: %s", poptBadOption(pc, POPT_BADOPTION_NOALIAS), poptStrerror(opt));
		goto out;
	}
	if (help) {
		ret = dp_show_man("enable-event");
		goto out;
	}
	if (list_options) {
		ret = DP_CMD_PASS;
		goto out;
	}
	if (!u && !k && !j && !l && !p && (probe || function || path || has_pid)) {
		dp_err("%s needs a domain: -u (--userspace) for a dynamic userspace probe (with "
		       "--path), or -k (--kernel) for a kernel probe",
		       path ? "--path" : has_pid ? "--pid" : probe ? "--probe" : "--function");
		goto out;
	}
	if ((path || has_pid) && !u) {
		dp_err("--path and --pid are for dynamic userspace probes: use -u (--userspace) "
		       "with --probe or --function");
		goto out;
	}
	if (!ours) {
		ret = DP_CMD_PASS;
		goto out;
	}
	if (cli->mi) {
		dp_err("the machine interface (--mi) does not cover dynamic probes: run without it");
		goto out;
	}
	nlocs = !!probe + !!function + !!uprobe;
	if (nlocs != 1) {
		dp_err(nlocs ? "give one of --probe, --function and --userspace-probe" :
		       "--path and --pid need a location: --probe LOC or --function LOC");
		goto out;
	}
	if (k || j || l || p) {
		dp_err("-u (--userspace) goes with no other domain option for a dynamic probe");
		goto out;
	}
	if (all || tracepoint || syscall || exclude || loglevel || loglevel_only) {
		dp_err("%s does not apply to a dynamic probe (one event, named on the command line)",
		       all ? "--all" : tracepoint ? "--tracepoint" : syscall ? "--syscall" :
		       exclude ? "--exclude" : loglevel ? "--loglevel" : "--loglevel-only");
		goto out;
	}
	names = poptGetArgs(pc);
	while (names && names[nnames])
		nnames++;
	if (nnames != 1) {
		dp_err(nnames ? "a dynamic probe takes one event name, got %d" :
		       "the event name is missing: lttng enable-event -u --path PATH --probe LOC NAME",
		       nnames);
		goto out;
	}
	a.event = names[0];
	if (dp_spec_event_name(a.event, "", full, sizeof(full), &err)) {
		dp_err("%s", err.msg);
		goto out;
	}
	if (uprobe) {
		if (dp_spec_userspace_probe_parse(uprobe, upath, sizeof(upath), &loc, &err)) {
			dp_err("--userspace-probe: %s", err.msg);
			goto out;
		}
		/* The location part, after the last ':'. */
		a.location = strrchr(uprobe, ':') + 1;
		if (path) {
			char *p1 = dp_abs_path(path), *p2 = dp_abs_path(upath);
			bool same = p1 && p2 && !strcmp(p1, p2);

			free(p1);
			free(p2);
			if (!same) {
				dp_err("--path %s and --userspace-probe's %s differ: give one", path,
				       upath);
				goto out;
			}
		}
		a.path = dp_abs_path(upath);
		a.kind = DP_CLIENT_KIND_PROBE;
	} else {
		if (!path) {
			dp_err("--path is missing: name the executable or shared library to probe "
			       "(--path /usr/bin/app)");
			goto out;
		}
		a.path = dp_abs_path(path);
		a.location = probe ? probe : function;
		a.kind = probe ? DP_CLIENT_KIND_PROBE : DP_CLIENT_KIND_FUNCTION;
	}
	if (!a.path)
		goto out;
	if (dp_check_location(a.path, a.location, a.kind == DP_CLIENT_KIND_FUNCTION))
		goto out;
	if (check_pids(a.pids, a.npids))
		goto out;
	a.session = dp_session_pick(session, true);
	if (!a.session)
		goto out;
	a.channel = channel ? channel : "channel0";
	a.filter = filter;
	ret = dp_session_exists(a.session);
	if (ret <= 0) {
		if (!ret)
			dp_err("no session '%s': create it with `lttng create %s`, or name another "
			       "with -s", a.session, a.session);
		ret = DP_CMD_ERROR;
		goto out;
	}
	ret = run(cli, &a);
out:
	poptFreeContext(pc);
	free((char *)a.session);
	free(a.path);
	free(a.pids);
	free(session);
	free(channel);
	free(probe);
	free(function);
	free(uprobe);
	free(path);
	free(filter);
	free(exclude);
	free(loglevel);
	free(loglevel_only);
	return ret;
}
