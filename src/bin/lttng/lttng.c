/*
 * lttng: the stock lttng with dynamic userspace probes.
 *
 * Reads the general options the way the stock lttng does, finds the
 * command, and lets the command extended here look at its arguments.
 * Everything else (unknown commands, options we do not extend, --help of
 * the general options, errors in them) is executed as the stock lttng with
 * the same arguments, so that the output and the exit code are its own.
 */
#include <popt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct {
	const char *name;
	dp_cmd_fn fn;
} commands[] = {
	{ "enable-event", dp_cmd_enable_event },
	{ "disable-event", dp_cmd_disable_event },
	{ "add-context", dp_cmd_add_context },
	{ "destroy", dp_cmd_destroy },
	{ "list", dp_cmd_list },
	{ "trace", dp_cmd_trace },
	{ "help", dp_cmd_help },
};

enum {
	OPT_VERBOSE = 1,
	OPT_PASS,		/* an option only the stock lttng acts on */
};

/*
 * The general options; 0 with cli->cmd_index set, or DP_CMD_PASS when the
 * stock lttng should see the command line (no command, --help, --version,
 * an option we do not know).
 */
static int parse_general(struct dp_cli *cli)
{
	char *group = NULL, *sessiond_path = NULL, *relayd_path = NULL, *mi = NULL;
	int no_sessiond = 0, quiet = 0, pass = 0, opt, nleft = 0;
	struct poptOption options[] = {
		{ "verbose", 'v', POPT_ARG_NONE, NULL, OPT_VERBOSE, NULL, NULL },
		{ "quiet", 'q', POPT_ARG_NONE, &quiet, 0, NULL, NULL },
		{ "group", 'g', POPT_ARG_STRING, &group, 0, NULL, NULL },
		{ "mi", 'm', POPT_ARG_STRING, &mi, 0, NULL, NULL },
		{ "no-sessiond", 'n', POPT_ARG_NONE, &no_sessiond, 0, NULL, NULL },
		{ "sessiond-path", 0, POPT_ARG_STRING, &sessiond_path, 0, NULL, NULL },
		{ "relayd-path", 0, POPT_ARG_STRING, &relayd_path, 0, NULL, NULL },
		{ "help", 'h', POPT_ARG_NONE, NULL, OPT_PASS, NULL, NULL },
		{ "version", 'V', POPT_ARG_NONE, NULL, OPT_PASS, NULL, NULL },
		{ "list-options", 0, POPT_ARG_NONE, NULL, OPT_PASS, NULL, NULL },
		{ "list-commands", 0, POPT_ARG_NONE, NULL, OPT_PASS, NULL, NULL },
		POPT_TABLEEND,
	};
	poptContext pc = poptGetContext(NULL, cli->argc, (const char **)cli->argv, options,
					POPT_CONTEXT_POSIXMEHARDER);
	const char **left;

	while ((opt = poptGetNextOpt(pc)) > 0) {
		if (opt == OPT_VERBOSE)
			cli->verbose++;
		else
			pass = 1;
	}
	if (opt < -1)
		pass = 1;
	left = poptGetArgs(pc);
	while (left && left[nleft])
		nleft++;
	/* popt's strings are copies of their own: they outlive the context. */
	cli->cmd_index = cli->argc - nleft;
	cli->group = group;
	cli->sessiond_path = sessiond_path;
	cli->mi = mi;
	cli->no_sessiond = no_sessiond;
	cli->quiet = quiet;
	poptFreeContext(pc);
	free(relayd_path);
	if (pass || !nleft || cli->cmd_index < 1 || cli->cmd_index >= cli->argc)
		return DP_CMD_PASS;
	return 0;
}

int main(int argc, char **argv)
{
	struct dp_cli cli = { .argc = argc, .argv = argv };
	int ret = parse_general(&cli);

	if (ret != DP_CMD_PASS) {
		const char *name = argv[cli.cmd_index];

		ret = DP_CMD_PASS;
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
			if (!strcmp(commands[i].name, name)) {
				dp_lttng_setup(&cli);
				ret = commands[i].fn(&cli, argc - cli.cmd_index,
						     (const char **)argv + cli.cmd_index);
				break;
			}
		}
	}
	if (ret != DP_CMD_PASS)
		return ret;
	return dp_stock_exec(&cli);
}
