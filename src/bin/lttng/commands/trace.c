/*
 * lttng trace -c "CMD ARGS": one command, traced with dynamic probes from
 * its first instruction to its exit.
 *
 * A session of its own is created (with its trace directory), the event
 * names enabled and the session started; then CMD starts with the agent
 * preloaded, and is held at its entry point while lttng-dynprobed installs
 * the probes in that process, so that main and everything after it is
 * probed:
 *   - the CLI traces the exec and writes a two-byte `jmp .` over the entry
 *     point, then lets go;
 *   - the loader and the constructors run; the agent's constructor waits
 *     until it is connected to the daemon (LTTNG_DYNPROBE_WAIT, proto/app.h);
 *   - once the main thread spins at the entry point, the probes are enabled
 *     for that pid (the daemon finds the agent there), and the CLI puts the
 *     entry point's bytes back.
 * The probes go into CMD's process only (and what it forks): not into other
 * processes that map the same file, as `enable-event` without --pid would.
 * With --follow-exec, the agent stays in every image CMD and its
 * descendants execute (proto/app.h's DP_APP_ENV_FOLLOW_EXEC), and the
 * daemon probes each one that maps the path at its start: events given by
 * pid reach the pid's descendants.
 * CMD runs with the terminal's stdin, stdout and stderr; the CLI waits,
 * stops and destroys the session, shows the events with babeltrace2 (unless
 * --no-view), names the trace directory, and exits with CMD's exit code.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <popt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>

#include <lttng/lttng.h>

#include "cli.h"
#include "options.h"
#include "proc/child.h"
#include "proto/app.h"
#include "spec/sdt.h"

#ifndef DP_BABELTRACE2
#define DP_BABELTRACE2 "babeltrace2"
#endif

/* How long CMD may take to reach its entry point (its constructors, the
 * agent's connection, lttng-ust's registration). */
#define HOLD_TIMEOUT_MS 30000
#define POLL_MS 2
/* The agent's wait for the daemon in its constructor (DP_APP_ENV_WAIT). */
#define WAIT_MS "10000"

enum {
	OPT_PROBE = DP_OPT_OWN,
	OPT_FUNCTION,
	OPT_SDT,
	OPT_TYPE,
	OPT_COMMAND,
	OPT_OUTPUT,
	OPT_NO_VIEW,
	OPT_COPIES,
	OPT_FOLLOW_EXEC,
};

static struct poptOption options[] = {
	{ "command", 'c', POPT_ARG_STRING, NULL, OPT_COMMAND, NULL, NULL },
	DP_OPT_INCLUDE(dp_opt_session),
	{ "output", 'o', POPT_ARG_STRING, NULL, OPT_OUTPUT, NULL, NULL },
	DP_OPT_INCLUDE(dp_opt_path),
	{ "probe", 0, POPT_ARG_STRING, NULL, OPT_PROBE, NULL, NULL },
	{ "function", 0, POPT_ARG_STRING, NULL, OPT_FUNCTION, NULL, NULL },
	{ "copies", 0, POPT_ARG_STRING, NULL, OPT_COPIES, NULL, NULL },
	{ "sdt", 0, POPT_ARG_STRING, NULL, OPT_SDT, NULL, NULL },
	{ "type", 't', POPT_ARG_STRING, NULL, OPT_TYPE, NULL, NULL },
	{ "no-view", 0, POPT_ARG_NONE, NULL, OPT_NO_VIEW, NULL, NULL },
	{ "follow-exec", 0, POPT_ARG_NONE, NULL, OPT_FOLLOW_EXEC, NULL, NULL },
	DP_OPT_INCLUDE(dp_opt_help),
	DP_OPT_INCLUDE(dp_opt_list_options),
	POPT_TABLEEND
};

struct probe_arg {
	int kind;				/* enum dp_client_kind */
	char *location;
	char name[DP_SPEC_EVENT_MAX];		/* the event name sent (no provider) */
};

struct trace {
	struct dp_cli *cli;
	char session[DP_CLIENT_NAME_MAX];
	char output[PATH_MAX];
	bool output_made;			/* the directory is ours to remove on failure */
	bool created, daemon_used;
	bool follow_exec;			/* the agent follows CMD's execs */
	int fd;					/* the daemon */
	char *path;				/* the object probed */
	struct probe_arg *probes;
	size_t nprobes;
	char **types;
	size_t ntypes;
};

/* Appends an argument of a repeated option. */
static int push(char ***v, size_t *n, char *s)
{
	char **grown = realloc(*v, (*n + 1) * sizeof(**v));

	if (!grown || !s) {
		free(s);
		return -1;
	}
	*v = grown;
	(*v)[(*n)++] = s;
	return 0;
}

/* argv[0] found as execvp would find it. */
static char *find_program(const char *name)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(name, '/'))
		return realpath(name, NULL);
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, len ? path : ".", name);
		if (!access(buf, X_OK))
			return realpath(buf, NULL);
		path += len;
		if (*path == ':')
			path++;
	}
	return NULL;
}

static void session_name(struct trace *t, const char *prog)
{
	char base[64], stamp[32];
	const char *slash = strrchr(prog, '/');
	time_t now = time(NULL);
	struct tm tm;

	snprintf(base, sizeof(base), "%s", slash ? slash + 1 : prog);
	for (char *p = base; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
			*p = '-';
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(t->session, sizeof(t->session), "trace-%s-%s-%d", base, stamp, (int)getpid());
}

static int default_output(struct trace *t)
{
	const char *home = getenv("LTTNG_HOME");

	if (!home || !*home)
		home = getenv("HOME");
	if (!home) {
		dp_err("no home for the trace directory: give one with -o DIR");
		return -1;
	}
	snprintf(t->output, sizeof(t->output), "%s/lttng-traces/%s", home, t->session);
	return 0;
}

static int create_session(struct trace *t)
{
	struct lttng_session_descriptor *d;
	enum lttng_error_code code;
	struct stat st;

	t->output_made = stat(t->output, &st) < 0;
	d = lttng_session_descriptor_local_create(t->session, t->output);
	if (!d) {
		dp_err("bad session name '%s' or trace directory '%s'", t->session, t->output);
		return -1;
	}
	code = lttng_create_session_ext(d);
	lttng_session_descriptor_destroy(d);
	if (code != LTTNG_OK) {
		dp_err("cannot create session '%s': %s", t->session, lttng_strerror(-(int)code));
		return -1;
	}
	t->created = true;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

/* Takes everything down: after a failure, or once CMD has run (the trace
 * directory is then kept). */
static void rollback(struct trace *t)
{
	if (t->daemon_used && t->fd >= 0) {
		struct dp_client_msg req = { .type = DP_CLIENT_SESSION_DESTROYED }, reply;
		struct dp_err err;

		snprintf(req.session_destroyed, sizeof(req.session_destroyed), "%s", t->session);
		if (!dp_daemon_call(t->fd, &req, &reply, &err))
			dp_client_msg_release(&reply);
		else
			dp_err_print(&err);
	}
	if (t->created) {
		lttng_destroy_session(t->session);
		t->created = false;
		/* A directory this run made, and that holds no trace of CMD. */
		if (t->output_made)
			nftw(t->output, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
}

static int enable_names(struct trace *t, char (*names)[DP_CLIENT_EVENT_MAX], uint32_t n)
{
	struct lttng_handle *h = dp_ust_handle(t->session);
	int ret = 0;

	for (uint32_t i = 0; h && i < n && !ret; i++) {
		ret = dp_ust_event_enable(h, names[i], NULL, NULL);
		if (ret == -LTTNG_ERR_UST_EVENT_ENABLED)
			ret = 0;	/* the name the daemon gave, already enabled */
		if (ret < 0)
			dp_err("cannot enable %s in session '%s': %s", names[i], t->session,
			       lttng_strerror(ret));
	}
	lttng_destroy_handle(h);
	return h && ret >= 0 ? 0 : -1;
}

/*
 * Each --sdt pattern becomes one probe per SDT probe it names in t->path
 * (checked as the daemon will check it), each named PROVIDER:NAME.  0, or
 * -1 with a message.
 */
static int expand_sdt(struct trace *t)
{
	for (size_t i = 0; i < t->nprobes; i++) {
		struct probe_arg *grown;
		struct dp_err err;
		char **names;
		size_t n;

		if (t->probes[i].kind != DP_CLIENT_KIND_SDT || t->probes[i].name[0])
			continue;
		if (dp_check_sdt(t->path, t->probes[i].location, &names, &n, &err)) {
			dp_err_print(&err);
			return -1;
		}
		grown = realloc(t->probes, (t->nprobes + n - 1) * sizeof(*grown));
		if (!grown) {
			dp_spec_sdt_names_free(names, n);
			dp_err("out of memory");
			return -1;
		}
		t->probes = grown;
		free(t->probes[i].location);
		memmove(&t->probes[i + n], &t->probes[i + 1],
			(t->nprobes - i - 1) * sizeof(*grown));
		for (size_t k = 0; k < n; k++) {
			t->probes[i + k].kind = DP_CLIENT_KIND_SDT;
			t->probes[i + k].location = names[k];
			snprintf(t->probes[i + k].name, sizeof(t->probes[i + k].name), "%s",
				 names[k]);
		}
		free(names);	/* the strings are the locations now */
		t->nprobes += n - 1;
		i += n - 1;
	}
	return 0;
}

/* The lttng names of every probe, as the daemon will name them (spec.h):
 * enabled before CMD starts, so that nothing it records is missed. */
static int enable_expected_names(struct trace *t)
{
	char names[2][DP_CLIENT_EVENT_MAX];
	struct dp_err err;

	for (size_t i = 0; i < t->nprobes; i++) {
		bool fn = dp_client_kind_function((uint8_t)t->probes[i].kind);

		if (dp_spec_event_name(t->probes[i].name, fn ? "_entry" : "", names[0],
				       sizeof(names[0]), &err) ||
		    (fn && dp_spec_event_name(t->probes[i].name, "_return", names[1],
					      sizeof(names[1]), &err))) {
			dp_err_print(&err);
			return -1;
		}
		if (enable_names(t, names, fn ? 2 : 1))
			return -1;
	}
	return 0;
}

/* Says what was not a plain jump in the report of one probe. */
static void show_report(const struct trace *t, const struct probe_arg *pa,
			const struct dp_client_report *r)
{
	if (t->cli->quiet)
		return;
	for (uint32_t k = 0; k < r->nevents; k++)
		fprintf(stderr, "Dynamic UST event %s: %s %s in %s\n", r->events[k],
			dp_client_kind_str((uint8_t)pa->kind), pa->location,
			t->path);
	for (uint32_t p = 0; p < r->nprocs; p++) {
		const struct dp_client_proc *pr = &r->procs[p];

		for (uint32_t k = 0; k < pr->nsites; k++) {
			const struct dp_client_site *st = &pr->sites[k];

			if (st->method == DP_CLIENT_METHOD_REFUSED)
				dp_warn("%s: no probe at 0x%" PRIx64 ": %s", st->event, st->vaddr,
					st->text[0] ? st->text : st->reason);
			else if (st->method == DP_CLIENT_METHOD_INT3)
				fprintf(stderr, "  %s at 0x%" PRIx64 " by int3: %s\n", st->event,
					st->vaddr, st->text[0] ? st->text : st->reason);
		}
	}
}

/*
 * Installs every probe in the process pid, held at its entry point: one
 * request, so the daemon writes them all in one stop of the process.
 */
static int enable_probes(struct trace *t, pid_t pid)
{
	struct dp_client_msg req = { .type = DP_CLIENT_ENABLE_MANY }, reply;
	struct dp_client_enable_many *m = &req.enable_many;
	uint32_t upid = (uint32_t)pid;
	struct dp_err err;
	int ret = -1;

	snprintf(m->session, sizeof(m->session), "%s", t->session);
	snprintf(m->channel, sizeof(m->channel), "channel0");
	snprintf(m->path, sizeof(m->path), "%s", t->path);
	m->npids = 1;
	m->pids = &upid;
	m->ctx = t->ntypes ? calloc(t->ntypes, sizeof(*m->ctx)) : NULL;
	m->specs = calloc(t->nprobes, sizeof(*m->specs));
	if ((t->ntypes && !m->ctx) || !m->specs) {
		dp_err("out of memory");
		goto out;
	}
	for (size_t i = 0; i < t->ntypes; i++)
		if (dp_spec_context_is_dynamic(t->types[i]))
			snprintf(m->ctx[m->nctx++], DP_CLIENT_CTX_MAX, "%s", t->types[i]);
	for (size_t i = 0; i < t->nprobes; i++) {
		struct dp_client_spec *sp = &m->specs[m->nspecs++];

		snprintf(sp->event, sizeof(sp->event), "%s", t->probes[i].name);
		snprintf(sp->location, sizeof(sp->location), "%s", t->probes[i].location);
		sp->kind = t->probes[i].kind;
	}
	if (dp_daemon_call(t->fd, &req, &reply, &err)) {
		dp_err_print(&err);
		goto out;
	}
	if (reply.reports.nreports != m->nspecs) {
		/* The daemon could not read the request: its one report says why. */
		const struct dp_client_report *r = reply.reports.nreports ?
						   &reply.reports.reports[0] : NULL;

		dp_err("lttng-dynprobed: %s", r && r->message[0] ? r->message :
		       "the request was not answered probe by probe");
		goto release;
	}
	for (uint32_t i = 0; i < reply.reports.nreports; i++) {
		const struct dp_client_report *r = &reply.reports.reports[i];

		if (!r->status)
			continue;
		dp_err("%s: %s", t->probes[i].location,
		       r->message[0] ? r->message : strerror(-r->status));
		for (uint32_t p = 0; p < r->nprocs; p++)
			if (r->procs[p].status && strcmp(r->procs[p].message, r->message))
				dp_err("process %u: %s", r->procs[p].pid, r->procs[p].message);
		goto release;
	}
	for (uint32_t i = 0; i < reply.reports.nreports; i++) {
		const struct dp_client_report *r = &reply.reports.reports[i];

		/* Names of the daemon's other than expected: enabled too. */
		if (enable_names(t, r->events, r->nevents))
			goto release;
		show_report(t, &t->probes[i], r);
	}
	ret = 0;
release:
	dp_client_msg_release(&reply);
out:
	free(m->ctx);
	free(m->specs);
	return ret;
}

/* The standard context types, added by the stock add-context. */
static int add_standard_contexts(struct trace *t)
{
	const char **args = calloc(2 * t->ntypes + 6, sizeof(*args));
	size_t n = 0, nstd = 0;
	int ret;

	if (!args)
		return -1;
	args[n++] = "add-context";
	args[n++] = "-u";
	args[n++] = "-s";
	args[n++] = t->session;
	for (size_t i = 0; i < t->ntypes; i++) {
		if (dp_spec_context_is_dynamic(t->types[i]))
			continue;
		args[n++] = "-t";
		args[n++] = t->types[i];
		nstd++;
	}
	args[n] = NULL;
	ret = nstd ? dp_stock_run(t->cli, args) : 0;
	free(args);
	return ret ? -1 : 0;
}

/*
 * The child: LD_PRELOAD with the agent, whose constructor waits until it is
 * connected to the daemon, and traced across the exec so that the parent
 * can hold it at its entry point.
 */
static void child_exec(char **argv, bool follow_exec)
{
	const char *agent = dp_agent_path();
	const char *old = getenv("LD_PRELOAD");
	char *preload;

	if (old && *old) {
		if (asprintf(&preload, "%s:%s", agent, old) < 0)
			_exit(127);
	} else {
		preload = (char *)agent;
	}
	setenv("LD_PRELOAD", preload, 1);
	setenv(DP_APP_ENV_WAIT, WAIT_MS, 0);
	if (follow_exec)
		setenv(DP_APP_ENV_FOLLOW_EXEC, "1", 1);
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	if (dp_child_traceme())
		_exit(127);
	execvp(argv[0], argv);
	fprintf(stderr, "Error: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* Ends a child that must not run on. */
static void kill_child(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	dp_wait(pid, &status);
}

/*
 * Runs CMD with its probes; its wait status in *wstatus.  0, or -1 when it
 * could not be started, held or probed (then it is killed before main).
 */
static int run_command(struct trace *t, char **argv, int *wstatus)
{
	struct dp_child_entry hold;
	struct dp_err err = DP_ERR_INIT;
	int status, r;
	pid_t pid;

	pid = dp_fork(&err);
	if (pid < 0) {
		dp_err_print(&err);
		return -1;
	}
	if (!pid)
		child_exec(argv, t->follow_exec);
	if (dp_wait(pid, &status))
		return -1;
	if (!WIFSTOPPED(status)) {
		/* The exec failed: the child said why. */
		*wstatus = status;
		return 0;
	}
	r = dp_child_hold_entry(pid, &hold);
	if (r) {
		dp_err("cannot hold %s at its entry point: %s", argv[0], strerror(-r));
		kill_child(pid);
		return -1;
	}

	r = dp_child_wait_entry(&hold, HOLD_TIMEOUT_MS, POLL_MS, wstatus);
	if (r > 0) {
		dp_err("%s ended before its entry point (%s %d)", argv[0],
		       WIFEXITED(*wstatus) ? "exit status" : "signal",
		       WIFEXITED(*wstatus) ? WEXITSTATUS(*wstatus) : WTERMSIG(*wstatus));
		return -1;
	}
	if (r < 0) {
		dp_err("%s did not reach its entry point within %d s", argv[0],
		       HOLD_TIMEOUT_MS / 1000);
		kill_child(pid);
		return -1;
	}
	if (enable_probes(t, pid)) {
		kill_child(pid);
		return -1;
	}
	if (dp_child_release_entry(&hold, &err)) {
		dp_err("%s", err.msg);
		kill_child(pid);
		return -1;
	}
	return dp_wait(pid, wstatus) ? -1 : 0;
}

static void view(struct trace *t)
{
	pid_t pid = dp_fork(NULL);
	int status;

	if (pid == 0) {
		execlp(DP_BABELTRACE2, DP_BABELTRACE2, t->output, (char *)NULL);
		dp_err("cannot run babeltrace2 (%s): view the trace with `babeltrace2 %s`",
		       strerror(errno), t->output);
		_exit(127);
	}
	if (pid > 0)
		dp_wait(pid, &status);
}

/*
 * run_command, with --mi xml the command's stdout on our stderr: stdout
 * holds the document alone.
 */
static int mi_run_command(struct trace *t, char **argv, int *wstatus)
{
	int saved, ret;

	if (!dp_mi_xml(t->cli))
		return run_command(t, argv, wstatus);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	if (saved < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		dp_err("cannot keep the command's output off the MI document: %s", strerror(errno));
		if (saved >= 0)
			close(saved);
		return -1;
	}
	ret = run_command(t, argv, wstatus);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	return ret;
}

/*
 * --mi xml: lttng trace is no stock command, so the whole document is in
 * our namespace, shaped as the stock ones: the session, the trace
 * directory, the command, its exit status, the probes; no view.
 */
static void mi_print(const struct trace *t, char **argv, int wstatus)
{
	printf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	       "<dp:command xmlns:dp=\"" DP_MI_NS "\"><dp:name>trace</dp:name><dp:output>"
	       "<dp:trace>");
	dp_mi_elem("dp:session", "%s", t->session);
	dp_mi_elem("dp:trace_directory", "%s", t->output);
	if (t->path)
		dp_mi_elem("dp:path", "%s", t->path);
	printf("<dp:command_line>");
	for (size_t i = 0; argv[i]; i++)
		dp_mi_elem("dp:arg", "%s", argv[i]);
	printf("</dp:command_line>");
	if (WIFEXITED(wstatus))
		dp_mi_elem("dp:exit_code", "%d", WEXITSTATUS(wstatus));
	else if (WIFSIGNALED(wstatus))
		dp_mi_elem("dp:signal", "%d", WTERMSIG(wstatus));
	printf("<dp:probes>");
	for (size_t i = 0; i < t->nprobes; i++) {
		printf("<dp:probe>");
		dp_mi_elem("dp:kind", "%s", dp_client_kind_str((uint8_t)t->probes[i].kind));
		dp_mi_elem("dp:location", "%s", t->probes[i].location);
		dp_mi_elem("dp:name", "%s", t->probes[i].name);
		printf("</dp:probe>");
	}
	printf("</dp:probes><dp:contexts>");
	for (size_t i = 0; i < t->ntypes; i++)
		dp_mi_elem("dp:context", "%s", t->types[i]);
	printf("</dp:contexts></dp:trace></dp:output><dp:success>true</dp:success>"
	       "</dp:command>\n");
	fflush(stdout);
}

static int parse_command(const char *cmd, const char **rest, wordexp_t *we, char ***argv)
{
	if (cmd) {
		int r = wordexp(cmd, we, WRDE_NOCMD | WRDE_SHOWERR);

		if (r || !we->we_wordc) {
			dp_err(r == WRDE_CMDSUB ? "-c: command substitution is not run here: give the "
			       "command and its arguments" : "-c: cannot read the command '%s'", cmd);
			if (!r)
				wordfree(we);
			return -1;
		}
		*argv = we->we_wordv;
		return 0;
	}
	if (!rest || !rest[0]) {
		dp_err("no command: lttng trace -c \"CMD ARGS\" --function FUNCTION");
		return -1;
	}
	*argv = (char **)rest;
	return 0;
}

int dp_cmd_trace(struct dp_cli *cli, int argc, const char **argv)
{
	struct dp_opts o = { .set = { false } };
	const char *cmd, *session, *output, *path;
	char *arg;
	int opt, ret = DP_CMD_ERROR, wstatus = 0;
	poptContext pc = poptGetContext(NULL, argc, argv, options, 0);
	struct trace t = { .cli = cli, .fd = -1 };
	wordexp_t we = { 0 };
	bool have_we = false;
	char **cmd_argv = NULL;
	struct dp_err err;
	const char **rest;

	while ((opt = poptGetNextOpt(pc)) > 0) {
		if (opt != OPT_TYPE && opt != OPT_PROBE && opt != OPT_FUNCTION && opt != OPT_SDT) {
			dp_opts_take(&o, pc, opt);
			continue;
		}
		/* Repeated: every one counts, probes in their order. */
		arg = poptGetOptArg(pc);
		if (opt == OPT_TYPE) {
			if (push(&t.types, &t.ntypes, arg))
				goto out;
			continue;
		}
		{
			struct probe_arg *grown = realloc(t.probes, (t.nprobes + 1) * sizeof(*grown));

			if (!grown || !arg) {
				free(arg);
				goto out;
			}
			t.probes = grown;
			memset(&t.probes[t.nprobes], 0, sizeof(*t.probes));
			t.probes[t.nprobes].kind = opt == OPT_PROBE ? DP_CLIENT_KIND_PROBE :
						   opt == OPT_SDT ? DP_CLIENT_KIND_SDT :
								    DP_CLIENT_KIND_FUNCTION;
			t.probes[t.nprobes++].location = arg;
		}
	}
	cmd = o.arg[OPT_COMMAND];
	session = o.arg[DP_OPT_SESSION];
	output = o.arg[OPT_OUTPUT];
	path = o.arg[DP_OPT_PATH];
	if (opt < -1) {
		dp_err("%s: %s (see lttng trace --help)", poptBadOption(pc, POPT_BADOPTION_NOALIAS),
		       poptStrerror(opt));
		goto out;
	}
	if (o.set[DP_OPT_HELP]) {
		ret = dp_show_man("trace");
		goto out;
	}
	if (o.set[DP_OPT_LIST_OPTIONS]) {
		ret = dp_opts_list(cli, NULL, options);
		goto out;
	}
	if (dp_mi_refused(cli))
		goto out;
	rest = poptGetArgs(pc);
	if (cmd && rest && rest[0]) {
		dp_err("give the command once: -c \"CMD ARGS\", or after the options alone");
		goto out;
	}
	if (parse_command(cmd, rest, &we, &cmd_argv))
		goto out;
	have_we = cmd != NULL;
	if (!t.nprobes) {
		dp_err("nothing to probe: add --function FUNCTION, --probe LOC or --sdt "
		       "PROVIDER:NAME (for example lttng trace -c \"%s\" --function main)",
		       cmd ? cmd : cmd_argv[0]);
		goto out;
	}

	/* Everything is checked before anything is created. */
	if (path) {
		t.path = dp_abs_path(path, &err);
	} else {
		t.path = find_program(cmd_argv[0]);
		if (!t.path)
			dp_err_set(&err, -ENOENT, "%s: command not found (give its path, or --path)",
				   cmd_argv[0]);
	}
	if (!t.path) {
		dp_err_print(&err);
		goto out;
	}
	if (expand_sdt(&t))
		goto out;
	for (size_t i = 0; i < t.nprobes; i++) {
		struct dp_location loc;

		if (t.probes[i].kind == DP_CLIENT_KIND_SDT)
			continue;	/* checked and named by expand_sdt */
		if (t.probes[i].kind == DP_CLIENT_KIND_FUNCTION && o.arg[OPT_COPIES] &&
		    dp_copies_kind(o.arg[OPT_COPIES], &t.probes[i].kind, &err)) {
			dp_err_print(&err);
			goto out;
		}
		if (dp_check_location(t.path, t.probes[i].location, t.probes[i].kind, &err)) {
			dp_err_print(&err);
			goto out;
		}
		dp_spec_location_parse(t.probes[i].location, &loc, &err);
		if (dp_spec_location_event_name(&loc, t.probes[i].name, sizeof(t.probes[i].name))) {
			dp_err("%s: no event name can be made of it", t.probes[i].location);
			goto out;
		}
	}
	for (size_t i = 0; i < t.ntypes; i++) {
		if (dp_spec_context_is_dynamic(t.types[i]) &&
		    dp_spec_context_check(t.types[i], &err)) {
			dp_err_print(&err);
			goto out;
		}
	}
	if (access(dp_agent_path(), R_OK)) {
		dp_err("the agent %s: %s (install lttng-dynprobe, or set LTTNG_DYNPROBE_AGENT)",
		       dp_agent_path(), strerror(errno));
		goto out;
	}
	if (session)
		snprintf(t.session, sizeof(t.session), "%s", session);
	else
		session_name(&t, cmd_argv[0]);
	if (output) {
		/* The session daemon wants an absolute path. */
		char *abs = realpath(output, NULL), cwd[PATH_MAX];
		int n;

		if (abs)
			n = snprintf(t.output, sizeof(t.output), "%s", abs);
		else if (output[0] != '/' && getcwd(cwd, sizeof(cwd)))
			n = snprintf(t.output, sizeof(t.output), "%s/%s", cwd, output);
		else
			n = snprintf(t.output, sizeof(t.output), "%s", output);
		free(abs);
		if (n < 0 || (size_t)n >= sizeof(t.output)) {
			dp_err("the output directory's path is longer than %zu bytes: %s",
			       sizeof(t.output) - 1, output);
			goto out;
		}
	} else if (default_output(&t)) {
		goto out;
	}

	if (dp_sessiond_ensure(cli, &err)) {
		dp_err_print(&err);
		goto fail;
	}
	if (create_session(&t) || enable_expected_names(&t) || add_standard_contexts(&t))
		goto fail;
	t.follow_exec = o.set[OPT_FOLLOW_EXEC];
	t.fd = dp_daemon_connect(cli, true, &err);
	if (t.fd < 0) {
		dp_err_print(&err);
		goto fail;
	}
	t.daemon_used = true;
	ret = lttng_start_tracing(t.session);
	if (ret < 0) {
		dp_err("cannot start session '%s': %s", t.session, lttng_strerror(ret));
		goto fail;
	}
	/* As system(3) does: the terminal's ^C is for CMD; we clean up after. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	if (mi_run_command(&t, cmd_argv, &wstatus))
		goto fail;
	lttng_stop_tracing(t.session);
	t.output_made = false;	/* it holds the trace now */
	rollback(&t);	/* the session's probes out, the session destroyed */
	if (dp_mi_xml(cli))
		mi_print(&t, cmd_argv, wstatus);
	else if (!o.set[OPT_NO_VIEW])
		view(&t);
	if (!cli->quiet)
		fprintf(stderr, "Trace directory: %s\n", t.output);
	if (WIFEXITED(wstatus))
		ret = WEXITSTATUS(wstatus);
	else if (WIFSIGNALED(wstatus))
		ret = 128 + WTERMSIG(wstatus);
	goto out;
fail:
	ret = DP_CMD_ERROR;
	rollback(&t);
out:
	if (t.fd >= 0)
		close(t.fd);
	if (have_we)
		wordfree(&we);
	poptFreeContext(pc);
	for (size_t i = 0; i < t.nprobes; i++)
		free(t.probes[i].location);
	free(t.probes);
	for (size_t i = 0; i < t.ntypes; i++)
		free(t.types[i]);
	free(t.types);
	free(t.path);
	dp_opts_release(&o);
	return ret;
}
