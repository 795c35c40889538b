/*
 * lttng enable-event -u with --probe, --function, --sdt or
 * --userspace-probe=elf:/sdt: a dynamic probe event.  Everything else goes
 * to the stock enable-event.
 *
 * An SDT pattern (--sdt 'prov:*') names one event per probe it matches,
 * each PROVIDER:NAME; they are enabled one after the other, and a failure
 * takes back the ones enabled before it.
 *
 * --follow-exec sets the event's FOLLOW_EXEC flag (EVENT_FLAGS, right after
 * the install): the agents of the processes it reaches keep themselves in
 * the programs those execute (proto/client.h).
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
#include <sys/stat.h>
#include <unistd.h>

#include <lttng/lttng.h>

#include "cli.h"
#include "options.h"
#include "spec/sdt.h"

enum {
	OPT_PID = DP_OPT_OWN,
	OPT_ALL,
	OPT_TRACEPOINT,
	OPT_SYSCALL,
	OPT_PROBE,
	OPT_FUNCTION,
	OPT_USERSPACE_PROBE,
	OPT_SDT,
	OPT_FILTER,
	OPT_EXCLUDE,
	OPT_LOGLEVEL,
	OPT_LOGLEVEL_ONLY,
	OPT_COPIES,
	OPT_FOLLOW_EXEC,
};

static struct poptOption options[] = {
	DP_OPT_INCLUDE(dp_opt_session),
	DP_OPT_INCLUDE(dp_opt_channel),
	DP_OPT_INCLUDE(dp_opt_domains),
	{ "all", 'a', POPT_ARG_NONE, NULL, OPT_ALL, NULL, NULL },
	{ "tracepoint", 0, POPT_ARG_NONE, NULL, OPT_TRACEPOINT, NULL, NULL },
	{ "syscall", 0, POPT_ARG_NONE, NULL, OPT_SYSCALL, NULL, NULL },
	{ "probe", 0, POPT_ARG_STRING, NULL, OPT_PROBE, NULL, NULL },
	{ "function", 0, POPT_ARG_STRING, NULL, OPT_FUNCTION, NULL, NULL },
	{ "copies", 0, POPT_ARG_STRING, NULL, OPT_COPIES, NULL, NULL },
	{ "userspace-probe", 0, POPT_ARG_STRING, NULL, OPT_USERSPACE_PROBE, NULL, NULL },
	{ "sdt", 0, POPT_ARG_STRING, NULL, OPT_SDT, NULL, NULL },
	DP_OPT_INCLUDE(dp_opt_path),
	{ "pid", 0, POPT_ARG_STRING, NULL, OPT_PID, NULL, NULL },
	{ "follow-exec", 0, POPT_ARG_NONE, NULL, OPT_FOLLOW_EXEC, NULL, NULL },
	{ "filter", 'f', POPT_ARG_STRING, NULL, OPT_FILTER, NULL, NULL },
	{ "exclude", 'x', POPT_ARG_STRING, NULL, OPT_EXCLUDE, NULL, NULL },
	{ "loglevel", 0, POPT_ARG_STRING, NULL, OPT_LOGLEVEL, NULL, NULL },
	{ "loglevel-only", 0, POPT_ARG_STRING, NULL, OPT_LOGLEVEL_ONLY, NULL, NULL },
	DP_OPT_INCLUDE(dp_opt_help),
	DP_OPT_INCLUDE(dp_opt_list_options),
	POPT_TABLEEND
};

struct enable_args {
	const char *session, *channel, *filter;
	/* The channel as given to the session daemon: NULL without -c.  The
	 * session daemon marks a session whose channel was created under an
	 * explicit name (even "channel0") as having a non-default channel, and
	 * then wants -c for every later disable-event: as the stock
	 * enable-event does, name no channel unless the user did. */
	const char *lttng_channel;
	const char *event;			/* as typed */
	int kind;				/* enum dp_client_kind */
	const char *location;			/* as typed */
	char *path;				/* absolute */
	uint32_t *pids, npids;
	uint32_t flags;				/* enum dp_client_event_flag */
};

/* Enables the lttng event names in the session; on failure, disables those
 * it enabled.  0 or -1 with a message. */
static int enable_names(const struct enable_args *a, char (*names)[DP_CLIENT_EVENT_MAX],
			uint32_t n)
{
	struct lttng_handle *h = dp_ust_handle(a->session);
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
		ret = dp_ust_event_enable(h, names[done], a->lttng_channel, a->filter);
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
		for (uint32_t i = 0; i < done; i++)
			if (fresh[i])
				dp_ust_event_disable(h, names[i], a->channel, a->filter);
	}
	lttng_destroy_handle(h);
	return ret < 0 ? -1 : 0;
}

/* --mi xml: the stock <events> of the names (enabled when ok), then the
 * event as lttng-dynprobed has it; r NULL when the daemon gave no reply. */
static void mi_print(const struct enable_args *a, const struct dp_client_report *r, bool ok)
{
	struct dp_client_event ev = {
		.kind = (uint8_t)a->kind, .enabled = ok, .npids = a->npids,
		.pids = (uint32_t *)a->pids, .flags = a->flags,
	};

	dp_mi_begin("enable-event");
	printf("<events>");
	for (uint32_t i = 0; r && i < r->nevents; i++)
		dp_mi_stock_event(r->events[i], ok, a->filter, ok);
	printf("</events>");
	snprintf(ev.session, sizeof(ev.session), "%s", a->session);
	snprintf(ev.channel, sizeof(ev.channel), "%s", a->channel);
	snprintf(ev.event, sizeof(ev.event), "%s", a->event);
	snprintf(ev.location, sizeof(ev.location), "%s", a->location);
	snprintf(ev.path, sizeof(ev.path), "%s", a->path);
	if (r) {
		ev.nnames = r->nevents;
		ev.names = r->events;
		ev.nprocs = r->nprocs;
		ev.procs = r->procs;
	}
	dp_mi_dynamic_event(&ev);
	if (r)
		dp_mi_report(r);
	dp_mi_end(ok);
}

/* Takes one event enabled by run() out again: its name in the session,
 * its probes in the daemon. */
static void take_back(struct dp_cli *cli, const struct enable_args *a, const char *name)
{
	struct dp_client_msg req = { .type = DP_CLIENT_DISABLE }, rep;
	struct lttng_handle *h = dp_ust_handle(a->session);
	struct dp_err err;
	int fd;

	if (h) {
		dp_ust_event_disable(h, name, a->channel, a->filter);
		lttng_destroy_handle(h);
	}
	fd = dp_daemon_connect(cli, false, &err);
	if (fd < 0)
		return;
	snprintf(req.disable.session, sizeof(req.disable.session), "%s", a->session);
	snprintf(req.disable.channel, sizeof(req.disable.channel), "%s", a->channel);
	snprintf(req.disable.event, sizeof(req.disable.event), "%s", a->event);
	if (!dp_daemon_call(fd, &req, &rep, &err))
		dp_client_msg_release(&rep);
	close(fd);
}

static int run(struct dp_cli *cli, const struct enable_args *a)
{
	struct dp_client_msg req = { .type = DP_CLIENT_ENABLE }, reply, dreply;
	struct dp_client_enable *e = &req.enable;
	struct dp_client_report *r;
	struct dp_err err;
	int fd, ret = DP_CMD_ERROR;

	snprintf(e->session, sizeof(e->session), "%s", a->session);
	snprintf(e->channel, sizeof(e->channel), "%s", a->channel);
	snprintf(e->event, sizeof(e->event), "%s", a->event);
	snprintf(e->location, sizeof(e->location), "%s", a->location);
	snprintf(e->path, sizeof(e->path), "%s", a->path);
	e->kind = a->kind;
	e->npids = a->npids;
	e->pids = a->pids;

	fd = dp_daemon_connect(cli, true, &err);
	if (fd < 0) {
		dp_err_print(&err);
		return DP_CMD_ERROR;
	}
	if (dp_daemon_call(fd, &req, &reply, &err)) {
		dp_err_print(&err);
		if (dp_mi_xml(cli))
			mi_print(a, NULL, false);
		goto out;
	}
	r = &reply.report;
	if (r->status) {
		dp_err("%s", r->message[0] ? r->message : strerror(-r->status));
		for (uint32_t i = 0; i < r->nprocs; i++)
			/* Once: the process's message may be the whole reply's. */
			if (r->procs[i].status && strcmp(r->procs[i].message, r->message))
				dp_err("process %u: %s", r->procs[i].pid, r->procs[i].message);
		goto out_reply;
	}
	if (!r->nevents) {
		dp_err("lttng-dynprobed named no event for %s", a->event);
		goto out_disable;
	}
	/* Before the names: the event records nothing yet, and a daemon
	 * that cannot follow leaves nothing behind. */
	if (a->flags && dp_daemon_event_flags(fd, a->session, a->channel, a->event, a->flags,
					      &err)) {
		dp_err_print(&err);
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
		if (!dp_daemon_call(fd, &dreq, &dreply, &err))
			dp_client_msg_release(&dreply);
		else
			dp_err_print(&err);
	}
out_reply:
	if (dp_mi_xml(cli))
		mi_print(a, r, ret == DP_CMD_SUCCESS);
	dp_client_msg_release(&reply);
out:
	close(fd);
	return ret;
}

/* Whether --path and --userspace-probe's path are one file; false with a
 * message. */
static bool same_file(const char *path, const char *upath)
{
	struct dp_err err;
	char *p1 = dp_abs_path(path, &err), *p2;
	bool same;

	if (!p1)
		dp_err_print(&err);
	p2 = dp_abs_path(upath, &err);
	if (!p2)
		dp_err_print(&err);
	same = p1 && p2 && !strcmp(p1, p2);
	if (p1 && p2 && !same)
		dp_err("--path %s and --userspace-probe's %s differ: give one", path, upath);
	free(p1);
	free(p2);
	return same;
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

/*
 * --path for the processes of --pid: as found here (made absolute); or,
 * the first one living in another mount namespace or root (a container),
 * as it sees the path (through /proc/PID/root), sent as typed: the daemon
 * looks it up the same way.  *local: where to read that file here.
 */
static char *path_for_pids(const char *path, const struct enable_args *a, char **local,
			   struct dp_err *err)
{
	char alt[DP_CLIENT_PATH_MAX + 32], ns[2][64], link[64];
	struct stat st, root;
	ssize_t n = -1, m = -1;

	*local = NULL;
	if (a->npids && path[0] == '/') {
		snprintf(link, sizeof(link), "/proc/%u/ns/mnt", a->pids[0]);
		n = readlink(link, ns[0], sizeof(ns[0]) - 1);
		m = readlink("/proc/self/ns/mnt", ns[1], sizeof(ns[1]) - 1);
		snprintf(link, sizeof(link), "/proc/%u/root/", a->pids[0]);
	}
	if (n > 0 && m > 0 && !stat(link, &st) && !stat("/", &root)) {
		ns[0][n] = ns[1][m] = '\0';
		snprintf(alt, sizeof(alt), "/proc/%u/root%s", a->pids[0], path);
		if ((strcmp(ns[0], ns[1]) || st.st_dev != root.st_dev ||
		     st.st_ino != root.st_ino) && !access(alt, R_OK)) {
			*local = strdup(alt);
			return *local ? strdup(path) : NULL;
		}
	}
	*local = dp_abs_path(path, err);
	return *local ? strdup(*local) : NULL;
}

/* A path without '/' as the stock --userspace-probe takes it: a file here,
 * else a program in $PATH. */
static char *sdt_path(const char *path, struct dp_err *err)
{
	const char *dirs = getenv("PATH");
	char cand[DP_CLIENT_PATH_MAX];

	if (strchr(path, '/') || !access(path, F_OK) || !dirs)
		return dp_abs_path(path, err);
	for (const char *d = dirs; *d;) {
		size_t len = strcspn(d, ":");

		if (snprintf(cand, sizeof(cand), "%.*s/%s", (int)len, len ? d : ".", path) <
			    (int)sizeof(cand) && !access(cand, X_OK))
			return dp_abs_path(cand, err);
		d += len + (d[len] == ':');
	}
	return dp_abs_path(path, err);
}

/* Every probe an SDT pattern names, one event each (names from the CLI
 * when one probe, else PROVIDER:NAME); a failure takes back the ones
 * before it. */
static int run_sdt(struct dp_cli *cli, struct enable_args *a, const char *event,
		   char **probes, size_t n)
{
	int ret = DP_CMD_SUCCESS;
	size_t done = 0;

	if (n > 1 && event) {
		dp_err("'%s' names %zu SDT probes (%s, %s...): an event name goes with one probe; "
		       "give PROVIDER:NAME, or no event name (each probe's is PROVIDER:NAME)",
		       a->location, n, probes[0], probes[1]);
		return DP_CMD_ERROR;
	}
	if (n > 1 && dp_mi_xml(cli)) {
		dp_err("--mi xml describes one event: '%s' names %zu SDT probes", a->location, n);
		return DP_CMD_ERROR;
	}
	for (; done < n && ret == DP_CMD_SUCCESS; done++) {
		struct enable_args one = *a;

		one.location = probes[done];
		one.event = event ? event : probes[done];
		ret = run(cli, &one);
	}
	if (ret != DP_CMD_SUCCESS) {
		for (size_t i = 0; i + 1 < done; i++) {
			struct enable_args one = *a;

			one.location = probes[i];
			one.event = probes[i];
			take_back(cli, &one, probes[i]);
		}
	}
	return ret;
}

int dp_cmd_enable_event(struct dp_cli *cli, int argc, const char **argv)
{
	struct dp_opts o = { .set = { false } };
	const char *path, *probe, *function, *uprobe, *sdt;
	char **sdt_names = NULL;
	size_t nsdt = 0;
	char sdt_probe[DP_CLIENT_LOCATION_MAX];
	bool u, other, has_pid = false, ours;
	int opt, ret = DP_CMD_ERROR;
	struct enable_args a = { .kind = 0 };
	char *local = NULL;
	poptContext pc = poptGetContext(NULL, argc, argv, options, 0);
	const char **names;
	int nnames = 0;
	struct dp_err err;
	struct dp_location loc;
	char upath[DP_CLIENT_PATH_MAX];
	char full[DP_SPEC_EVENT_MAX], line_name[DP_SPEC_EVENT_MAX];
	const char *default_name[2] = { NULL, NULL };
	int nlocs;

	while ((opt = poptGetNextOpt(pc)) > 0) {
		if (opt == OPT_PID) {
			/* Repeated, every list counts. */
			char *arg = poptGetOptArg(pc);

			has_pid = true;
			if (dp_parse_pids(arg ? arg : "", &a.pids, &a.npids, &err)) {
				dp_err_print(&err);
				free(arg);
				goto out;
			}
			free(arg);
			continue;
		}
		dp_opts_take(&o, pc, opt);
	}
	path = o.arg[DP_OPT_PATH];
	probe = o.arg[OPT_PROBE];
	function = o.arg[OPT_FUNCTION];
	uprobe = o.arg[OPT_USERSPACE_PROBE];
	sdt = o.arg[OPT_SDT];
	u = o.set[DP_OPT_USERSPACE];
	other = o.set[DP_OPT_OTHER_DOMAIN];
	ours = path || has_pid || o.set[OPT_FOLLOW_EXEC] ||
	       (u && (probe || function || uprobe || sdt));
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
	if (o.set[DP_OPT_HELP]) {
		ret = dp_show_man("enable-event");
		goto out;
	}
	if (o.set[DP_OPT_LIST_OPTIONS]) {
		ret = dp_opts_list(cli, "enable-event", options);
		goto out;
	}
	if (!u && !other && (probe || function || path || has_pid || o.set[OPT_FOLLOW_EXEC])) {
		dp_err("%s needs a domain: -u (--userspace) for a dynamic userspace probe (with "
		       "--path), or -k (--kernel) for a kernel probe",
		       path ? "--path" : has_pid ? "--pid" : probe ? "--probe" : function ?
		       "--function" : "--follow-exec");
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
	if (dp_mi_refused(cli))
		goto out;
	/* --mi xml: stdout is the document alone. */
	cli->quiet |= dp_mi_xml(cli);
	nlocs = !!probe + !!function + !!uprobe + !!sdt;
	if (nlocs != 1) {
		dp_err(nlocs ? "give one of --probe, --function, --sdt and --userspace-probe" :
		       "--path and --pid need a location: --probe LOC, --function LOC or --sdt "
		       "PROVIDER:NAME");
		goto out;
	}
	if (other) {
		dp_err("-u (--userspace) goes with no other domain option for a dynamic probe");
		goto out;
	}
	if (o.set[OPT_ALL] || o.set[OPT_TRACEPOINT] || o.set[OPT_SYSCALL] || o.arg[OPT_EXCLUDE] ||
	    o.arg[OPT_LOGLEVEL] || o.arg[OPT_LOGLEVEL_ONLY]) {
		dp_err("%s does not apply to a dynamic probe (one event, named on the command line)",
		       o.set[OPT_ALL] ? "--all" : o.set[OPT_TRACEPOINT] ? "--tracepoint" :
		       o.set[OPT_SYSCALL] ? "--syscall" : o.arg[OPT_EXCLUDE] ? "--exclude" :
		       o.arg[OPT_LOGLEVEL] ? "--loglevel" : "--loglevel-only");
		goto out;
	}
	if (o.arg[OPT_COPIES] && !function) {
		dp_err("--copies chooses the copies of a --function: give --function NAME");
		goto out;
	}
	names = poptGetArgs(pc);
	while (names && names[nnames])
		nnames++;
	/* A source line names its own event, FILE_LINE, when none is given. */
	if (!nnames && probe && !dp_spec_location_parse(probe, &loc, &err) &&
	    loc.kind == DP_LOC_LINE && !dp_spec_location_event_name(&loc, line_name,
								    sizeof(line_name))) {
		default_name[0] = line_name;
		names = default_name;
		nnames = 1;
	}
	/* An SDT probe has a name of its own: PROVIDER:NAME. */
	if (nnames > 1 || (!nnames && !sdt && !(uprobe && !strncmp(uprobe, "sdt:", 4)))) {
		dp_err(nnames ? "a dynamic probe takes one event name, got %d" :
		       "the event name is missing: lttng enable-event -u --path PATH --probe LOC NAME",
		       nnames);
		goto out;
	}
	a.event = nnames ? names[0] : NULL;
	if (a.event && dp_spec_event_name(a.event, "", full, sizeof(full), &err)) {
		dp_err_print(&err);
		goto out;
	}
	if (uprobe && !strncmp(uprobe, "sdt:", 4)) {
		if (dp_spec_sdt_probe_parse(uprobe, upath, sizeof(upath), sdt_probe,
					    sizeof(sdt_probe), &err)) {
			dp_err_prefix(&err, "--userspace-probe: ");
			dp_err_print(&err);
			goto out;
		}
		sdt = sdt_probe;
		if (!path)
			path = upath;
		else if (!same_file(path, upath))
			goto out;
	}
	if (sdt) {
		if (!path) {
			dp_err("--sdt needs --path: the executable or shared library whose probes "
			       "to enable (--path /usr/bin/app --sdt PROVIDER:NAME)");
			goto out;
		}
		a.path = sdt_path(path, &err);
		a.location = sdt;
		a.kind = DP_CLIENT_KIND_SDT;
		if (!a.path || dp_check_sdt(a.path, sdt, &sdt_names, &nsdt, &err)) {
			dp_err_print(&err);
			goto out;
		}
	} else if (uprobe) {
		if (dp_spec_userspace_probe_parse(uprobe, upath, sizeof(upath), &loc, &err)) {
			dp_err_prefix(&err, "--userspace-probe: ");
			dp_err_print(&err);
			goto out;
		}
		/* The location part, after the path's ':' ("elf:PATH:"): a C++
		 * name has colons of its own. */
		a.location = strchr(uprobe + 4, ':') + 1;
		if (path && !same_file(path, upath))
			goto out;
		a.path = dp_abs_path(upath, &err);
		a.kind = DP_CLIENT_KIND_PROBE;
	} else {
		if (!path) {
			dp_err("--path is missing: name the executable or shared library to probe "
			       "(--path /usr/bin/app)");
			goto out;
		}
		a.path = path_for_pids(path, &a, &local, &err);
		a.location = probe ? probe : function;
		a.kind = probe ? DP_CLIENT_KIND_PROBE : DP_CLIENT_KIND_FUNCTION;
		if (o.arg[OPT_COPIES] && dp_copies_kind(o.arg[OPT_COPIES], &a.kind, &err)) {
			dp_err_print(&err);
			goto out;
		}
	}
	if (!sdt && (!a.path || dp_check_location(local ? local : a.path, a.location, a.kind,
						  &err))) {
		dp_err_print(&err);
		goto out;
	}
	if (check_pids(a.pids, a.npids))
		goto out;
	a.session = dp_session_pick(o.arg[DP_OPT_SESSION], &err);
	if (!a.session) {
		dp_err_print(&err);
		goto out;
	}
	a.flags = o.set[OPT_FOLLOW_EXEC] ? DP_CLIENT_EVENT_FOLLOW_EXEC : 0;
	a.lttng_channel = o.arg[DP_OPT_CHANNEL];
	a.channel = a.lttng_channel ? a.lttng_channel : "channel0";
	a.filter = o.arg[OPT_FILTER];
	ret = dp_session_exists(a.session, &err);
	if (ret <= 0) {
		if (!ret)
			dp_err_set(&err, -ENOENT, "no session '%s': create it with `lttng create "
				   "%s`, or name another with -s", a.session, a.session);
		dp_err_print(&err);
		ret = DP_CMD_ERROR;
		goto out;
	}
	ret = sdt ? run_sdt(cli, &a, a.event, sdt_names, nsdt) : run(cli, &a);
out:
	dp_spec_sdt_names_free(sdt_names, nsdt);
	poptFreeContext(pc);
	free((char *)a.session);
	free(a.path);
	free(local);
	free(a.pids);
	dp_opts_release(&o);
	return ret;
}
