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
#include "options.h"

enum {
	OPT_ALL_EVENTS = DP_OPT_OWN,
	OPT_EVENT_TYPE,		/* an event type of the kernel's */
};

static struct poptOption options[] = {
	DP_OPT_INCLUDE(dp_opt_session),
	DP_OPT_INCLUDE(dp_opt_channel),
	DP_OPT_INCLUDE(dp_opt_domains),
	{ "all-events", 'a', POPT_ARG_NONE, NULL, OPT_ALL_EVENTS, NULL, NULL },
	{ "function", 0, POPT_ARG_NONE, NULL, OPT_EVENT_TYPE, NULL, NULL },
	{ "probe", 0, POPT_ARG_NONE, NULL, OPT_EVENT_TYPE, NULL, NULL },
	{ "syscall", 0, POPT_ARG_NONE, NULL, OPT_EVENT_TYPE, NULL, NULL },
	{ "tracepoint", 0, POPT_ARG_NONE, NULL, OPT_EVENT_TYPE, NULL, NULL },
	DP_OPT_INCLUDE(dp_opt_help),
	DP_OPT_INCLUDE(dp_opt_list_options),
	POPT_TABLEEND
};

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
	struct lttng_handle *h;
	struct dp_err err;
	int ret = 0;

	snprintf(req.disable.session, sizeof(req.disable.session), "%s", ev->session);
	snprintf(req.disable.channel, sizeof(req.disable.channel), "%s", ev->channel);
	snprintf(req.disable.event, sizeof(req.disable.event), "%s", ev->event);
	if (dp_daemon_call(fd, &req, &reply, &err)) {
		dp_err_print(&err);
		return -1;
	}
	if (reply.report.status) {
		dp_err("%s", reply.report.message);
		dp_client_msg_release(&reply);
		return -1;
	}
	dp_client_msg_release(&reply);
	h = dp_ust_handle(ev->session);
	for (uint32_t i = 0; h && i < ev->nnames; i++) {
		int r = dp_ust_event_disable(h, ev->names[i], ev->channel, NULL);

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

/*
 * --mi xml of disable-event NAMES: the stock <channel> with an <event> for
 * each lttng name of the dynamic events disabled (done[i] tells whether
 * events[i] was, failed[i] whether it failed), each with its <dp:event>,
 * then the <event> elements of the stock document `stock` (the other names).
 */
static void mi_print(const char *chan, const struct dp_client_msg *list, const bool *done,
		     const bool *failed, const char *stock, bool ok)
{
	const char *from = stock ? strstr(stock, "<events>") : NULL;
	const char *to = from ? strstr(from, "</events>") : NULL;

	dp_mi_begin("disable-event");
	printf("<channel>");
	dp_mi_elem("name", "%s", chan);
	printf("<events>");
	for (uint32_t i = 0; i < list->list_reply.nevents; i++) {
		struct dp_client_event ev = list->list_reply.events[i];

		if (!done[i])
			continue;
		for (uint32_t n = 0; n < ev.nnames; n++) {
			printf("<event>");
			dp_mi_elem("name", "%s", ev.names[n]);
			printf("<enabled>%s</enabled><success>%s</success>",
			       failed[i] ? "true" : "false", failed[i] ? "false" : "true");
			if (!n) {
				ev.enabled = failed[i];
				ev.nprocs = failed[i] ? ev.nprocs : 0;
				dp_mi_dynamic_event(&ev);
			}
			printf("</event>");
		}
	}
	if (from && to)
		fwrite(from + strlen("<events>"), 1, (size_t)(to - from) - strlen("<events>"), stdout);
	printf("</events></channel>");
	dp_mi_end(ok);
}

/* The session's dynamic events (LIST), or -1; fd < 0 (no daemon) gives none. */
static int list_events(int fd, const char *session, struct dp_client_msg *reply)
{
	struct dp_client_msg req = { .type = DP_CLIENT_LIST };
	struct dp_err err;

	memset(reply, 0, sizeof(*reply));
	if (fd < 0)
		return 0;
	snprintf(req.list, sizeof(req.list), "%s", session);
	if (dp_daemon_call(fd, &req, reply, &err)) {
		dp_err_print(&err);
		return -1;
	}
	if (reply->list_reply.status) {
		dp_err("%s", reply->list_reply.message);
		dp_client_msg_release(reply);
		return -1;
	}
	return 0;
}

int dp_cmd_disable_event(struct dp_cli *cli, int argc, const char **argv)
{
	struct dp_opts o = { .set = { false } };
	char *sname = NULL, *names_arg = NULL;
	int opt, ret = DP_CMD_PASS, fd = -1;
	poptContext pc = poptGetContext(NULL, argc, argv, options, 0);
	struct dp_client_msg list;
	const char **args;
	const char *chan;
	char *rest = NULL;
	size_t rest_len = 0;
	bool all, any = false, failed = false;
	bool *done = NULL, *bad = NULL;		/* per listed event: disabled, failed */
	char *stock_doc = NULL;
	struct dp_err err;

	memset(&list, 0, sizeof(list));
	opt = dp_opts_parse(&o, pc);
	all = o.set[OPT_ALL_EVENTS];
	if (opt >= -1 && !o.set[DP_OPT_HELP] && o.set[DP_OPT_LIST_OPTIONS]) {
		ret = dp_opts_list(cli, "disable-event", options);
		goto out;
	}
	/* Only -u without the kernel's event types can name a dynamic event. */
	if (opt < -1 || o.set[DP_OPT_HELP] ||
	    !o.set[DP_OPT_USERSPACE] || o.set[DP_OPT_OTHER_DOMAIN] || o.set[OPT_EVENT_TYPE] ||
	    (cli->mi && !dp_mi_xml(cli)))
		goto out;
	/* --mi xml: stdout is the document alone (with -a, the stock one's). */
	cli->quiet |= dp_mi_xml(cli);
	args = poptGetArgs(pc);
	if (!all && (!args || !args[0] || args[1]))
		goto out;
	fd = dp_daemon_connect(cli, false, NULL);
	if (fd < 0)
		goto out;	/* no daemon: no dynamic event anywhere */
	sname = dp_session_pick(o.arg[DP_OPT_SESSION], &err);
	if (!sname) {
		dp_err_print(&err);
		ret = DP_CMD_ERROR;
		goto out;
	}
	chan = o.arg[DP_OPT_CHANNEL] ? o.arg[DP_OPT_CHANNEL] : "channel0";
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
	done = calloc(list.list_reply.nevents + 1, sizeof(*done));
	bad = calloc(list.list_reply.nevents + 1, sizeof(*bad));
	names_arg = strdup(args[0]);
	if (!names_arg || !done || !bad) {
		ret = DP_CMD_ERROR;
		goto out;
	}
	for (char *save = NULL, *name = strtok_r(names_arg, ",", &save); name;
	     name = strtok_r(NULL, ",", &save)) {
		const struct dp_client_event *found = NULL;
		uint32_t at = 0;

		for (uint32_t i = 0; i < list.list_reply.nevents && !found; i++) {
			const struct dp_client_event *ev = &list.list_reply.events[i];

			if (!strcmp(ev->channel, chan) && name_matches(name, ev)) {
				found = ev;
				at = i;
			}
		}
		if (found) {
			any = true;
			done[at] = true;
			bad[at] = disable_one(cli, fd, found) != 0;
			failed |= bad[at];
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
		int sret = dp_mi_xml(cli) ? dp_stock_capture(cli, stock, &stock_doc) :
					    dp_stock_run(cli, stock);

		if (sret)
			ret = sret;
	}
	if (dp_mi_xml(cli))
		mi_print(chan, &list, done, bad, stock_doc, ret == DP_CMD_SUCCESS);
out:
	free(stock_doc);
	free(done);
	free(bad);
	dp_client_msg_release(&list);
	if (fd >= 0)
		close(fd);
	poptFreeContext(pc);
	free(rest);
	free(names_arg);
	free(sname);
	dp_opts_release(&o);
	return ret;
}
