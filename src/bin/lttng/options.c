/*
 * The shared option tables (options.h), what keeps their values, and
 * --list-options.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"

struct poptOption dp_opt_domains[] = {
	{ "userspace", 'u', POPT_ARG_NONE, NULL, DP_OPT_USERSPACE, NULL, NULL },
	{ "kernel", 'k', POPT_ARG_NONE, NULL, DP_OPT_OTHER_DOMAIN, NULL, NULL },
	{ "jul", 'j', POPT_ARG_NONE, NULL, DP_OPT_OTHER_DOMAIN, NULL, NULL },
	{ "log4j", 'l', POPT_ARG_NONE, NULL, DP_OPT_OTHER_DOMAIN, NULL, NULL },
	{ "python", 'p', POPT_ARG_NONE, NULL, DP_OPT_OTHER_DOMAIN, NULL, NULL },
	POPT_TABLEEND
};

struct poptOption dp_opt_session[] = {
	{ "session", 's', POPT_ARG_STRING, NULL, DP_OPT_SESSION, NULL, NULL },
	POPT_TABLEEND
};

struct poptOption dp_opt_channel[] = {
	{ "channel", 'c', POPT_ARG_STRING, NULL, DP_OPT_CHANNEL, NULL, NULL },
	POPT_TABLEEND
};

struct poptOption dp_opt_path[] = {
	{ "path", 0, POPT_ARG_STRING, NULL, DP_OPT_PATH, NULL, NULL },
	POPT_TABLEEND
};

struct poptOption dp_opt_help[] = {
	{ "help", 'h', POPT_ARG_NONE, NULL, DP_OPT_HELP, NULL, NULL },
	POPT_TABLEEND
};

struct poptOption dp_opt_list_options[] = {
	{ "list-options", 0, POPT_ARG_NONE, NULL, DP_OPT_LIST_OPTIONS, NULL, NULL },
	POPT_TABLEEND
};

void dp_opts_take(struct dp_opts *o, poptContext pc, int opt)
{
	char *arg = poptGetOptArg(pc);

	if (opt <= 0 || opt >= DP_OPT_MAX) {
		free(arg);
		return;
	}
	o->set[opt] = true;
	if (arg) {
		/* As popt's own storage does: the last one given counts. */
		free(o->arg[opt]);
		o->arg[opt] = arg;
	}
}

int dp_opts_parse(struct dp_opts *o, poptContext pc)
{
	int opt;

	while ((opt = poptGetNextOpt(pc)) > 0)
		dp_opts_take(o, pc, opt);
	return opt;
}

void dp_opts_release(struct dp_opts *o)
{
	for (int i = 0; i < DP_OPT_MAX; i++) {
		free(o->arg[i]);
		o->arg[i] = NULL;
	}
}

/* Whether the lines of text hold line exactly. */
static bool has_line(const char *text, const char *line)
{
	size_t len = strlen(line);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, line, len) && (p[len] == '\n' || !p[len]))
			return true;
	return false;
}

/*
 * Prints the options of table (and of the tables it includes) that the
 * lines of stock do not list, in the stock format.  The shared options but
 * --path are the stock lttng's: with a stock list, they are listed only as
 * it lists them (add-context takes no --python).
 */
static void list_table(const struct poptOption *table, const char *stock)
{
	for (const struct poptOption *opt = table; opt->longName || opt->shortName || opt->arg;
	     opt++) {
		char line[64];

		if ((opt->argInfo & POPT_ARG_MASK) == POPT_ARG_INCLUDE_TABLE) {
			list_table(opt->arg, stock);
			continue;
		}
		if (!opt->longName || (*stock && opt->val < DP_OPT_OWN && opt->val != DP_OPT_PATH))
			continue;
		snprintf(line, sizeof(line), "--%s", opt->longName);
		if (has_line(stock, line))
			continue;
		printf("%s\n", line);
		if (isprint((unsigned char)opt->shortName))
			printf("-%c\n", opt->shortName);
	}
}

int dp_opts_list(const struct dp_cli *cli, const char *cmd, const struct poptOption *table)
{
	const char *args[] = { cmd, "--list-options", NULL };
	char *stock = NULL;

	if (!cmd || dp_stock_capture(cli, args, &stock) || !stock) {
		free(stock);
		stock = NULL;
	}
	if (stock)
		fputs(stock, stdout);
	list_table(table, stock ? stock : "");
	free(stock);
	fflush(stdout);
	return DP_CMD_SUCCESS;
}
