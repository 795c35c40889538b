/*
 * The CLI's side of lttng-dynprobed: connecting (and starting the daemon
 * when none runs, as lttng starts lttng-sessiond), one request at a time,
 * and how a report reads for users.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static int spawn_daemon(const char *path, struct dp_err *err)
{
	int status, ret;
	pid_t pid = dp_fork(err);

	if (pid < 0)
		return pid;
	if (!pid) {
		execl(path, path, "--daemonize", (char *)NULL);
		dp_err("cannot run lttng-dynprobed (%s): %s (install lttng-dynprobe, or set "
		       "LTTNG_DYNPROBE_DAEMON)", path, strerror(errno));
		_exit(127);
	}
	ret = dp_wait(pid, &status);
	if (ret)
		return dp_err_set(err, ret, "waiting for lttng-dynprobed: %s", strerror(-ret));
	/* A daemon started by someone else meanwhile is as good as ours. */
	if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 ||
				  WEXITSTATUS(status) == DP_DAEMON_EXIT_RUNNING))
		return 0;
	/* The child said why it could not run it: nothing more to say. */
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		dp_err_clear(err);
		return -ENOENT;
	}
	return dp_err_set(err, -ECHILD, "lttng-dynprobed (%s) did not start (%s %d): run it "
			  "with -v to see why", path, WIFEXITED(status) ? "exit status" : "signal",
			  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

int dp_daemon_connect(const struct dp_cli *cli, bool spawn, struct dp_err *err)
{
	char sock[256];
	int fd = dp_client_connect();

	if (fd >= 0 || !spawn)
		return fd;
	if (fd != -ENOENT && fd != -ECONNREFUSED) {
		if (dp_client_socket_path(sock, sizeof(sock)))
			snprintf(sock, sizeof(sock), "its socket");
		return dp_err_set(err, fd, "cannot connect to lttng-dynprobed (%s): %s", sock,
				  strerror(-fd));
	}
	if (cli->no_sessiond)
		return dp_err_set(err, -ECONNREFUSED, "lttng-dynprobed is not running, and "
				  "--no-sessiond forbids starting it: start `lttng-dynprobed "
				  "--daemonize` first");
	if (spawn_daemon(dp_daemon_path(), err))
		return -ECONNREFUSED;
	for (int i = 0; i < 50; i++) {
		fd = dp_client_connect();
		if (fd >= 0)
			return fd;
		usleep(20000);
	}
	return dp_err_set(err, fd, "lttng-dynprobed started but does not accept connections: %s",
			  strerror(-fd));
}

int dp_daemon_call(int fd, struct dp_client_msg *req, struct dp_client_msg *reply,
		   struct dp_err *err)
{
	static uint32_t seq = 1;
	enum dp_proto_err why = DP_PROTO_ERR_NONE;
	int ret;

	memset(reply, 0, sizeof(*reply));
	ret = dp_client_call(fd, req, &seq, reply, DP_CLIENT_CALL_TIMEOUT_MS, &why);
	if (!ret)
		return 0;
	switch (ret) {
	case -EOPNOTSUPP:
		dp_err_set(err, ret, "lttng-dynprobed does not know the request %s: it is older "
			   "than this lttng (restart it)", dp_client_type_name(req->type));
		break;
	case -ECONNREFUSED:
		dp_err_set(err, ret, "lttng-dynprobed refused the connection: %s",
			   reply->refuse.reason);
		break;
	case -EPROTO:
		dp_err_set(err, ret, "bad reply from lttng-dynprobed: %s", dp_proto_err_str(why));
		break;
	case -ETIMEDOUT:
		dp_err_set(err, ret, "lttng-dynprobed did not answer within %d s",
			   DP_CLIENT_CALL_TIMEOUT_MS / 1000);
		break;
	default:
		dp_err_set(err, ret, "talking to lttng-dynprobed: %s", strerror(-ret));
		break;
	}
	dp_client_msg_release(reply);
	return ret;
}

int dp_daemon_list(int fd, const char *session, struct dp_client_msg *reply,
		   struct dp_err *err)
{
	struct dp_client_msg req = { .type = DP_CLIENT_LIST }, freq = { .type = DP_CLIENT_LIST_FLAGS };
	struct dp_client_msg frep;
	struct dp_err ferr;
	struct dp_client_list_reply *l = &reply->list_reply;
	int ret;

	snprintf(req.list, sizeof(req.list), "%s", session);
	ret = dp_daemon_call(fd, &req, reply, err);
	if (ret || l->status || !l->nevents)
		return ret;
	snprintf(freq.list_flags, sizeof(freq.list_flags), "%s", session);
	/* An older daemon: no flags (the connection goes on after UNSUPPORTED). */
	if (dp_daemon_call(fd, &freq, &frep, &ferr))
		return 0;
	for (uint32_t i = 0; !frep.flags_reply.status && i < frep.flags_reply.nflags; i++) {
		const struct dp_client_event_flags *f = &frep.flags_reply.flags[i];

		for (uint32_t k = 0; k < l->nevents; k++)
			if (!strcmp(l->events[k].session, f->session) &&
			    !strcmp(l->events[k].channel, f->channel) &&
			    !strcmp(l->events[k].event, f->event))
				l->events[k].flags = f->flags;
	}
	dp_client_msg_release(&frep);
	return 0;
}

int dp_daemon_event_flags(int fd, const char *session, const char *channel, const char *event,
			  uint32_t flags, struct dp_err *err)
{
	struct dp_client_msg req = { .type = DP_CLIENT_EVENT_FLAGS }, rep;
	struct dp_client_event_flags *f = &req.event_flags;
	int ret;

	snprintf(f->session, sizeof(f->session), "%s", session);
	snprintf(f->channel, sizeof(f->channel), "%s", channel);
	snprintf(f->event, sizeof(f->event), "%s", event);
	f->flags = flags;
	ret = dp_daemon_call(fd, &req, &rep, err);
	if (ret == -EOPNOTSUPP)
		return dp_err_set(err, ret, "the running lttng-dynprobed is older than this lttng "
				  "and cannot follow executed programs (--follow-exec): stop it (kill "
				  "the pid in its lttng-dynprobed.pid file), then enable again");
	if (ret)
		return ret;
	ret = rep.report.status;
	if (ret)
		dp_err_set(err, ret, "%s", rep.report.message);
	dp_client_msg_release(&rep);
	return ret;
}

/* The distinct reasons of a process' sites of one method, as "text (n)". */
static void print_reasons(const struct dp_client_proc *p, uint8_t method, const char *indent)
{
	for (uint32_t i = 0; i < p->nsites; i++) {
		const struct dp_client_site *s = &p->sites[i];
		unsigned n = 0;
		bool seen = false;

		if (s->method != method)
			continue;
		for (uint32_t j = 0; j < i; j++)
			seen |= p->sites[j].method == method && !strcmp(p->sites[j].reason, s->reason);
		if (seen)
			continue;
		for (uint32_t j = i; j < p->nsites; j++)
			n += p->sites[j].method == method && !strcmp(p->sites[j].reason, s->reason);
		printf("%s%s %u site%s: %s\n", indent, dp_client_method_str(method), n,
		       n == 1 ? "" : "s", s->text[0] ? s->text : s->reason);
	}
}

void dp_report_print(const struct dp_cli *cli, const struct dp_client_report *r, bool verbose)
{
	if (cli->quiet)
		return;
	if (!r->status && r->message[0])
		printf("  %s\n", r->message);
	for (uint32_t i = 0; i < r->nprocs; i++) {
		const struct dp_client_proc *p = &r->procs[i];

		if (p->status) {
			printf("  process %" PRIu32 ": %s\n", p->pid, p->message);
			continue;
		}
		printf("  process %" PRIu32 ": %" PRIu32 " site%s by jump, %" PRIu32 " by int3, %"
		       PRIu32 " refused%s%s\n", p->pid, p->njump, p->njump == 1 ? "" : "s",
		       p->nint3, p->nrefused, p->message[0] ? ": " : "", p->message);
		print_reasons(p, DP_CLIENT_METHOD_INT3, "    ");
		print_reasons(p, DP_CLIENT_METHOD_REFUSED, "    ");
		if (!verbose)
			continue;
		for (uint32_t j = 0; j < p->nsites; j++) {
			const struct dp_client_site *s = &p->sites[j];

			printf("    %-8s 0x%-12" PRIx64 " (file 0x%" PRIx64 ") %s%s%s\n",
			       dp_client_method_str(s->method), s->addr, s->vaddr, s->event,
			       s->reason[0] ? ": " : "", s->reason);
		}
	}
	fflush(stdout);
}
