/*
 * The shared option tables (options.h) and what keeps their values.
 */
#include <stdlib.h>

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
