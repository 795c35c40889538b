/*
 * lttng add-context -u with dynamic context types (regs, reg:NAME,
 * TYPE:NAME:ADDR, string:NAME:ADDR[:MAX], backtrace[:DEPTH]), for one
 * dynamic event (-e EVENT) or every dynamic event of the channel.  Standard
 * context types on the same line go to the stock add-context, for the
 * whole channel as always; a line without dynamic types is the stock one's.
 */
#include <popt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"

enum {
	OPT_TYPE = DP_OPT_OWN,
	OPT_EVENT,
	OPT_LIST,
};

static struct poptOption options[] = {
	DP_OPT_INCLUDE(dp_opt_session),
	DP_OPT_INCLUDE(dp_opt_channel),
	DP_OPT_INCLUDE(dp_opt_domains),
	{ "type", 't', POPT_ARG_STRING, NULL, OPT_TYPE, NULL, NULL },
	{ "event", 'e', POPT_ARG_STRING, NULL, OPT_EVENT, NULL, NULL },
	{ "list", 0, POPT_ARG_NONE, NULL, OPT_LIST, NULL, NULL },
	DP_OPT_INCLUDE(dp_opt_help),
	DP_OPT_INCLUDE(dp_opt_list_options),
	POPT_TABLEEND
};

/*
 * --mi xml: the stock <contexts>, with a <dp:context> for each dynamic type
 * and the <context> elements of the stock document `stock` (the standard
 * types, NULL when none); r NULL when the daemon gave no reply.
 */
static void mi_print(const char *event, char (*ctx)[DP_CLIENT_CTX_MAX], uint32_t nctx,
		     const struct dp_client_report *r, const char *stock, bool ok)
{
	const char *from = stock ? strstr(stock, "<contexts>") : NULL;
	const char *to = from ? strstr(from, "</contexts>") : NULL;

	dp_mi_begin("add-context");
	printf("<contexts>");
	for (uint32_t i = 0; i < nctx; i++) {
		printf("<dp:context xmlns:dp=\"" DP_MI_NS "\">");
		dp_mi_elem("dp:type", "%s", ctx[i]);
		for (uint32_t e = 0; r && e < r->nevents; e++)
			dp_mi_elem("dp:event", "%s", r->events[e]);
		if (!r || !r->nevents)
			dp_mi_elem("dp:event", "%s", event ? event : "");
		printf("<dp:success>%s</dp:success></dp:context>", r && !r->status ? "true" : "false");
	}
	if (from && to)
		fwrite(from + strlen("<contexts>"), 1, (size_t)(to - from) - strlen("<contexts>"),
		       stdout);
	printf("</contexts>");
	if (r)
		dp_mi_report(r);
	dp_mi_end(ok);
}

static int add_dynamic(struct dp_cli *cli, const char *session, const char *channel,
		       const char *event, char (*ctx)[DP_CLIENT_CTX_MAX], uint32_t nctx,
		       struct dp_client_msg *reply)
{
	struct dp_client_msg req = { .type = DP_CLIENT_ADD_CONTEXT };
	struct dp_client_add_context *a = &req.add_context;
	struct dp_err err;
	int fd, ret = DP_CMD_ERROR;

	snprintf(a->session, sizeof(a->session), "%s", session);
	snprintf(a->channel, sizeof(a->channel), "%s", channel);
	snprintf(a->event, sizeof(a->event), "%s", event ? event : "");
	a->nctx = nctx;
	a->ctx = ctx;
	/* No daemon means no dynamic event: say so rather than start one. */
	fd = dp_daemon_connect(cli, false, NULL);
	if (fd < 0) {
		dp_err("session '%s' has no dynamic event to add %s to (lttng-dynprobed is not "
		       "running): enable one first with lttng enable-event -u --path PATH "
		       "--probe LOC NAME", session, ctx[0]);
		return DP_CMD_ERROR;
	}
	if (dp_daemon_call(fd, &req, reply, &err)) {
		dp_err_print(&err);
		goto out;
	}
	if (reply->report.status) {
		dp_err("%s", reply->report.message);
	} else {
		for (uint32_t i = 0; i < nctx; i++)
			for (uint32_t e = 0; e < reply->report.nevents; e++)
				dp_msg(cli, "Context %s added to dynamic UST event %s in channel %s",
				       ctx[i], reply->report.events[e], channel);
		dp_report_print(cli, &reply->report, cli->verbose > 0);
		ret = DP_CMD_SUCCESS;
	}
out:
	close(fd);
	return ret;
}

int dp_cmd_add_context(struct dp_cli *cli, int argc, const char **argv)
{
	struct dp_opts o = { .set = { false } };
	const char *channel, *event;
	char *sname = NULL;
	int opt, ret = DP_CMD_ERROR;
	poptContext pc = poptGetContext(NULL, argc, argv, options, 0);
	char **types = NULL;
	size_t ntypes = 0, nstd = 0;
	char (*dyn)[DP_CLIENT_CTX_MAX] = NULL;
	uint32_t ndyn = 0;
	struct dp_err err;
	struct dp_client_msg reply = { .type = 0 };
	char *stock = NULL;

	while ((opt = poptGetNextOpt(pc)) > 0) {
		if (opt == OPT_TYPE) {
			/* Repeated: every one counts. */
			char **grown = realloc(types, (ntypes + 1) * sizeof(*types));

			if (!grown)
				goto out;
			types = grown;
			types[ntypes++] = poptGetOptArg(pc);
			continue;
		}
		dp_opts_take(&o, pc, opt);
	}
	channel = o.arg[DP_OPT_CHANNEL];
	event = o.arg[OPT_EVENT];
	for (size_t i = 0; i < ntypes; i++) {
		if (types[i] && dp_spec_context_is_dynamic(types[i]))
			ndyn++;
		else
			nstd++;
	}
	if (opt >= -1 && o.set[DP_OPT_LIST_OPTIONS] && !o.set[DP_OPT_HELP]) {
		ret = dp_opts_list(cli, "add-context", options);
		goto out;
	}
	if (opt < -1 || o.set[OPT_LIST]) {
		if (!ndyn && !event) {
			ret = DP_CMD_PASS;
			goto out;
		}
		if (opt < -1)
			dp_err("%s: %s", poptBadOption(pc, POPT_BADOPTION_NOALIAS), poptStrerror(opt));
		else
			dp_err("--list shows the standard context types: use it alone");
		goto out;
	}
	if (o.set[DP_OPT_HELP]) {
		ret = dp_show_man("add-context");
		goto out;
	}
	if (!ndyn && !event) {
		ret = DP_CMD_PASS;
		goto out;
	}
	if (!ndyn) {
		dp_err("-e (--event) selects a dynamic event for dynamic context types (regs, "
		       "reg:NAME, TYPE:NAME:ADDR, string:NAME:ADDR, backtrace); standard types "
		       "apply to the whole channel: drop -e");
		goto out;
	}
	if (!o.set[DP_OPT_USERSPACE] || o.set[DP_OPT_OTHER_DOMAIN]) {
		dp_err("dynamic context types (%s) are for dynamic userspace probes: use -u "
		       "(--userspace) alone", types[0]);
		goto out;
	}
	if (dp_mi_refused(cli))
		goto out;
	/* --mi xml: stdout is the document alone. */
	cli->quiet |= dp_mi_xml(cli);
	if (ndyn > DP_CLIENT_MAX_CTX) {
		dp_err("too many context types (at most %d)", DP_CLIENT_MAX_CTX);
		goto out;
	}
	dyn = calloc(ndyn, sizeof(*dyn));
	if (!dyn)
		goto out;
	ndyn = 0;
	for (size_t i = 0; i < ntypes; i++) {
		if (!dp_spec_context_is_dynamic(types[i]))
			continue;
		if (dp_spec_context_check(types[i], &err)) {
			dp_err_print(&err);
			goto out;
		}
		if (strlen(types[i]) >= DP_CLIENT_CTX_MAX) {
			dp_err("'%.40s...': a context type is at most %d bytes", types[i],
			       DP_CLIENT_CTX_MAX - 1);
			goto out;
		}
		snprintf(dyn[ndyn++], DP_CLIENT_CTX_MAX, "%s", types[i]);
	}
	if (event) {
		char full[DP_SPEC_EVENT_MAX];

		if (dp_spec_event_name(event, "", full, sizeof(full), &err)) {
			dp_err_prefix(&err, "-e: ");
			dp_err_print(&err);
			goto out;
		}
	}
	sname = dp_session_pick(o.arg[DP_OPT_SESSION], &err);
	if (!sname) {
		dp_err_print(&err);
		goto out;
	}
	memset(&reply, 0, sizeof(reply));
	ret = add_dynamic(cli, sname, channel ? channel : "channel0", event, dyn, ndyn, &reply);
	if (ret == DP_CMD_SUCCESS && nstd) {
		/* The standard types, as the stock add-context takes them. */
		const char **args = calloc(2 * nstd + 8, sizeof(*args));
		size_t n = 0;

		if (!args) {
			ret = DP_CMD_ERROR;
			goto out;
		}
		args[n++] = "add-context";
		args[n++] = "-u";
		args[n++] = "-s";
		args[n++] = sname;
		if (channel) {
			args[n++] = "-c";
			args[n++] = channel;
		}
		for (size_t i = 0; i < ntypes; i++) {
			if (dp_spec_context_is_dynamic(types[i]))
				continue;
			args[n++] = "-t";
			args[n++] = types[i];
		}
		args[n] = NULL;
		if (dp_mi_xml(cli))
			ret = dp_stock_capture(cli, args, &stock);
		else
			ret = dp_stock_run(cli, args);
		free(args);
	}
	if (dp_mi_xml(cli))
		mi_print(event, dyn, ndyn, reply.type ? &reply.report : NULL, stock,
			 ret == DP_CMD_SUCCESS);
out:
	dp_client_msg_release(&reply);
	free(stock);
	poptFreeContext(pc);
	for (size_t i = 0; i < ntypes; i++)
		free(types[i]);
	free(types);
	free(dyn);
	free(sname);
	dp_opts_release(&o);
	return ret;
}
