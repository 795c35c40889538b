/*
 * lttng disable-event -u of a dynamic event: lttng-dynprobed takes its
 * probes out (the original code comes back), then its lttng event names are
 * disabled in the session.  Names that are not dynamic events, and every
 * other use of disable-event, go to the stock lttng.
 */
#include <popt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lttng/lttng.h>

#include "cli.h"

/* Whether the user's name designates the dynamic event ev. */
static bool name_matches(const char *user, const struct dp_client_event *ev)
{
	char full[DP_SPEC_EVENT_MAX], evfull[DP_SPEC_EVENT_MAX];
	struct dp_err err;

	if (!strcmp(user, ev->event))
		return true;
	if (!dp_spec_event_name(user, "", full, sizeof(full), &err) &&
	    !dp_spec_event_name(ev->event, "", evfull, sizeof(evfull), &err) &&
	    !strcmp(full, evfull))
		return true;
	for (uint32_t i = 0; i < ev->nnames; i++)
		if (!strcmp(user, ev->names[i]))
			return true;
	return false;
}

static int disable_one(struct dp_cli *cli, int fd, const struct dp_client_event *ev)
{
	struct dp_client_msg req = { .type = DP_CLIENT_DISABLE }, reply;
	struct lttng_domain dom = { .type = LTTNG_DOMAIN_UST, .buf_type = LTTNG_BUFFER_PER_UID };
	struct lttng_handle *h;
	int ret = 0;

	snprintf(req.disable.session, sizeof(req.disable.session), "%s", ev->session);
	snprintf(req.disable.channel, sizeof(req.disable.channel), "%s", ev->channel);
	snprintf(req.disable.event, sizeof(req.disable.event), "%s", ev->event);
	if (dp_daemon_call(fd, &req, &reply))
		return -1;
	if (reply.report.status) {
		dp_err("%s", reply.report.message);
		dp_client_msg_release(&reply);
		return -1;
	}
	dp_client_msg_release(&reply);
	h = lttng_create_handle(ev->session, &dom);
	for (uint32_t i = 0; h && i < ev->nnames; i++) {
		struct lttng_event lev;
		int r;

		memset(&lev, 0, sizeof(lev));
		/* As the stock disable-event does: any type of that name. */
		lev.type = LTTNG_EVENT_ALL;
		lev.loglevel = -1;
		snprintf(lev.name, sizeof(lev.name), "%s", ev->names[i]);
		r = lttng_disable_event_ext(h, &lev, (char *)ev->channel, NULL);
		if (r < 0) {
			dp_err("cannot disable %s in session '%s': %s", ev->names[i], ev->session,
			       lttng_strerror(r));
			ret = -1;
			continue;
		}
		dp_msg(cli, "Dynamic UST event %s disabled in channel %s (its probes are removed)",
		       ev->names[i], ev->channel);
	}
	lttng_destroy_handle(h);
	return ret;
}

/* The session's dynamic events (LIST), or -1; fd < 0 (no daemon) gives none. */
static int list_events(int fd, const char *session, struct dp_client_msg *reply)
{
	struct dp_client_msg req = { .type = DP_CLIENT_LIST };

	memset(reply, 0, sizeof(*reply));
	if (fd < 0)
		return 0;
	snprintf(req.list, sizeof(req.list), "%s", session);
	if (dp_daemon_call(fd, &req, reply))
		return -1;
	if (reply->list_reply.status) {
		dp_err("%s", reply->list_reply.message);
		dp_client_msg_release(reply);
		return -1;
	}
	return 0;
}

int dp_cmd_disable_event(struct dp_cli *cli, int argc, const char **argv)
{
	char *session = NULL, *channel = NULL, *sname = NULL, *names_arg = NULL;
	int u = 0, k = 0, j = 0, l = 0, p = 0, all = 0, help = 0, list_options = 0, flag = 0;
	int opt, ret = DP_CMD_PASS, fd = -1;
	struct poptOption options[] = {
		{ "session", 's', POPT_ARG_STRING, &session, 0, NULL, NULL },
		{ "channel", 'c', POPT_ARG_STRING, &channel, 0, NULL, NULL },
		{ "userspace", 'u', POPT_ARG_NONE, &u, 0, NULL, NULL },
		{ "kernel", 'k', POPT_ARG_NONE, &k, 0, NULL, NULL },
		{ "jul", 'j', POPT_ARG_NONE, &j, 0, NULL, NULL },
		{ "log4j", 'l', POPT_ARG_NONE, &l, 0, NULL, NULL },
		{ "python", 'p', POPT_ARG_NONE, &p, 0, NULL, NULL },
		{ "all-events", 'a', POPT_ARG_NONE, &all, 0, NULL, NULL },
		{ "function", 0, POPT_ARG_NONE, &flag, 0, NULL, NULL },
		{ "probe", 0, POPT_ARG_NONE, &flag, 0, NULL, NULL },
		{ "syscall", 0, POPT_ARG_NONE, &flag, 0, NULL, NULL },
		{ "tracepoint", 0, POPT_ARG_NONE, &flag, 0, NULL, NULL },
		{ "help", 'h', POPT_ARG_NONE, &help, 0, NULL, NULL },
		{ "list-options", 0, POPT_ARG_NONE, &list_options, 0, NULL, NULL },
		POPT_TABLEEND,
	};
	poptContext pc = poptGetContext(NULL, argc, argv, options, 0);
	struct dp_client_msg list;
	const char **args;
	const char *chan;
	char *rest = NULL;
	size_t rest_len = 0;
	bool any = false, failed = false;

	memset(&list, 0, sizeof(list));
	while ((opt = poptGetNextOpt(pc)) > 0)
		;
	/* Only -u without the kernel's event types can name a dynamic event. */
	if (opt < -1 || help || list_options || !u || k || j || l || p || flag || cli->mi)
		goto out;
	args = poptGetArgs(pc);
	if (!all && (!args || !args[0] || args[1]))
		goto out;
	fd = dp_daemon_connect(cli, false);
	if (fd < 0)
		goto out;	/* no daemon: no dynamic event anywhere */
	sname = dp_session_pick(session, true);
	if (!sname) {
		ret = DP_CMD_ERROR;
		goto out;
	}
	chan = channel ? channel : "channel0";
	if (list_events(fd, sname, &list)) {
		ret = DP_CMD_ERROR;
		goto out;
	}
	if (all) {
		/* Every dynamic event of the channel loses its probes; the stock
		 * lttng then disables every event rule, as it always does. */
		for (uint32_t i = 0; i < list.list_reply.nevents; i++) {
			const struct dp_client_event *ev = &list.list_reply.events[i];

			if (!strcmp(ev->channel, chan) && ev->enabled &&
			    disable_one(cli, fd, ev))
				failed = true;
		}
		ret = failed ? DP_CMD_ERROR : DP_CMD_PASS;
		goto out;
	}
	names_arg = strdup(args[0]);
	if (!names_arg) {
		ret = DP_CMD_ERROR;
		goto out;
	}
	for (char *save = NULL, *name = strtok_r(names_arg, ",", &save); name;
	     name = strtok_r(NULL, ",", &save)) {
		const struct dp_client_event *found = NULL;

		for (uint32_t i = 0; i < list.list_reply.nevents && !found; i++) {
			const struct dp_client_event *ev = &list.list_reply.events[i];

			if (!strcmp(ev->channel, chan) && name_matches(name, ev))
				found = ev;
		}
		if (found) {
			any = true;
			failed |= disable_one(cli, fd, found) != 0;
			continue;
		}
		/* Not dynamic: for the stock lttng, in a list of its own. */
		{
			size_t len = strlen(name);
			char *grown = realloc(rest, rest_len + len + 2);

			if (!grown) {
				ret = DP_CMD_ERROR;
				goto out;
			}
			rest = grown;
			if (rest_len)
				rest[rest_len++] = ',';
			memcpy(rest + rest_len, name, len + 1);
			rest_len += len;
		}
	}
	if (!any)
		goto out;	/* ret is DP_CMD_PASS */
	ret = failed ? DP_CMD_ERROR : DP_CMD_SUCCESS;
	if (rest) {
		const char *stock[] = { "disable-event", "-u", "-s", sname, "-c", chan, rest, NULL };
		int sret = dp_stock_run(cli, stock);

		if (sret)
			ret = sret;
	}
out:
	dp_client_msg_release(&list);
	if (fd >= 0)
		close(fd);
	poptFreeContext(pc);
	free(rest);
	free(names_arg);
	free(sname);
	free(session);
	free(channel);
	return ret;
}
