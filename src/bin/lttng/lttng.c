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
#include "options.h"

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
	{ "save", dp_cmd_save },
	{ "load", dp_cmd_load },
	{ "help", dp_cmd_help },
};

enum {
	OPT_VERBOSE = DP_OPT_OWN,
	OPT_QUIET,
	OPT_GROUP,
	OPT_MI,
	OPT_NO_SESSIOND,
	OPT_SESSIOND_PATH,
	OPT_RELAYD_PATH,
	OPT_PASS,		/* an option only the stock lttng acts on */
	OPT_LIST_COMMANDS,
};

/* The general options, as the stock lttng reads them. */
static struct poptOption options[] = {
	{ "verbose", 'v', POPT_ARG_NONE, NULL, OPT_VERBOSE, NULL, NULL },
	{ "quiet", 'q', POPT_ARG_NONE, NULL, OPT_QUIET, NULL, NULL },
	{ "group", 'g', POPT_ARG_STRING, NULL, OPT_GROUP, NULL, NULL },
	{ "mi", 'm', POPT_ARG_STRING, NULL, OPT_MI, NULL, NULL },
	{ "no-sessiond", 'n', POPT_ARG_NONE, NULL, OPT_NO_SESSIOND, NULL, NULL },
	{ "sessiond-path", 0, POPT_ARG_STRING, NULL, OPT_SESSIOND_PATH, NULL, NULL },
	{ "relayd-path", 0, POPT_ARG_STRING, NULL, OPT_RELAYD_PATH, NULL, NULL },
	{ "help", 'h', POPT_ARG_NONE, NULL, OPT_PASS, NULL, NULL },
	{ "version", 'V', POPT_ARG_NONE, NULL, OPT_PASS, NULL, NULL },
	{ "list-options", 0, POPT_ARG_NONE, NULL, OPT_PASS, NULL, NULL },
	{ "list-commands", 0, POPT_ARG_NONE, NULL, OPT_LIST_COMMANDS, NULL, NULL },
	POPT_TABLEEND
};

/* --list-commands (for shell completion): the stock list, then the
 * commands only we have, in its format. */
static int list_commands(const struct dp_cli *cli)
{
	const char *args[] = { NULL };
	struct dp_cli alone = *cli;
	char *stock = NULL;
	int ret;

	/* The whole command line is general options. */
	alone.cmd_index = cli->argc;
	ret = dp_stock_capture(&alone, args, &stock);
	if (stock)
		fputs(stock, stdout);
	if (!ret && stock && !strstr(stock, "\ntrace\n"))
		printf("trace\n");
	free(stock);
	return ret;
}

/*
 * The general options; 0 with cli->cmd_index set, GENERAL_LIST_COMMANDS
 * for --list-commands, or DP_CMD_PASS when the stock lttng should see the
 * command line (no command, --help, --version, an option we do not know).
 */
#define GENERAL_LIST_COMMANDS 1
static int parse_general(struct dp_cli *cli)
{
	static struct dp_opts o;	/* its strings are cli's for the whole run */
	int opt, nleft = 0;
	poptContext pc = poptGetContext(NULL, cli->argc, (const char **)cli->argv, options,
					POPT_CONTEXT_POSIXMEHARDER);
	const char **left;

	while ((opt = poptGetNextOpt(pc)) > 0) {
		if (opt == OPT_VERBOSE)
			cli->verbose++;
		else
			dp_opts_take(&o, pc, opt);
	}
	left = poptGetArgs(pc);
	while (left && left[nleft])
		nleft++;
	cli->cmd_index = cli->argc - nleft;
	cli->group = o.arg[OPT_GROUP];
	cli->sessiond_path = o.arg[OPT_SESSIOND_PATH];
	cli->mi = o.arg[OPT_MI];
	cli->no_sessiond = o.set[OPT_NO_SESSIOND];
	cli->quiet = o.set[OPT_QUIET];
	poptFreeContext(pc);
	if (opt >= -1 && o.set[OPT_LIST_COMMANDS] && !o.set[OPT_PASS])
		return GENERAL_LIST_COMMANDS;
	if (opt < -1 || o.set[OPT_PASS] || o.set[OPT_LIST_COMMANDS] || !nleft || cli->cmd_index < 1 ||
	    cli->cmd_index >= cli->argc)
		return DP_CMD_PASS;
	return 0;
}

int main(int argc, char **argv)
{
	struct dp_cli cli = { .argc = argc, .argv = argv };
	int ret = parse_general(&cli);

	if (ret == GENERAL_LIST_COMMANDS)
		return list_commands(&cli);
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
