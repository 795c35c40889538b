/*
 * The options several commands share, as popt tables at file scope.
 *
 * A command's own table (file scope too) includes the shared ones it takes
 * with DP_OPT_INCLUDE, so that `-u`, `-s SESSION`, `-c CHANNEL`, `--path`,
 * `-h` and `--list-options` are spelled once for every command.  No table
 * points at variables: each option returns its value (enum dp_opt for the
 * shared ones, DP_OPT_OWN and up for a command's own) and dp_opts_take
 * keeps what it carries in the command's struct dp_opts.
 */
#ifndef DP_CLI_OPTIONS_H
#define DP_CLI_OPTIONS_H

#include <popt.h>
#include <stdbool.h>

enum dp_opt {
	DP_OPT_SESSION = 1,	/* -s, --session */
	DP_OPT_CHANNEL,		/* -c, --channel */
	DP_OPT_USERSPACE,	/* -u, --userspace */
	DP_OPT_OTHER_DOMAIN,	/* -k, -j, -l, -p: not ours */
	DP_OPT_PATH,		/* --path */
	DP_OPT_HELP,		/* -h, --help */
	DP_OPT_LIST_OPTIONS,	/* --list-options */
	DP_OPT_OWN,		/* the first value of a command's own options */
	DP_OPT_MAX = 32
};

/* What a command line's options said. */
struct dp_opts {
	char *arg[DP_OPT_MAX];	/* a string option's argument (the last one given) */
	bool set[DP_OPT_MAX];	/* whether the option was given */
};

extern struct poptOption dp_opt_domains[];	/* -u, -k, -j, -l, -p */
extern struct poptOption dp_opt_session[];	/* -s SESSION */
extern struct poptOption dp_opt_channel[];	/* -c CHANNEL */
extern struct poptOption dp_opt_path[];		/* --path PATH */
extern struct poptOption dp_opt_help[];		/* -h */
extern struct poptOption dp_opt_list_options[];	/* --list-options */

#define DP_OPT_INCLUDE(table) { NULL, '\0', POPT_ARG_INCLUDE_TABLE, (table), 0, NULL, NULL }

/* Keeps the option poptGetNextOpt returned (opt > 0) in o, with its
 * argument if it takes one. */
void dp_opts_take(struct dp_opts *o, poptContext pc, int opt);
/* Reads every option of pc into o; returns poptGetNextOpt's last value
 * (-1 at the end, below -1 for a bad option). */
int dp_opts_parse(struct dp_opts *o, poptContext pc);
void dp_opts_release(struct dp_opts *o);

struct dp_cli;
/*
 * --list-options of an extended command (for shell completion): the stock
 * lttng's list for cmd (NULL: a command of ours alone), then the options
 * of table it does not have, in its format (`--long`, then `-s` when there
 * is a short name).  Returns the exit code.
 */
int dp_opts_list(const struct dp_cli *cli, const char *cmd, const struct poptOption *table);

#endif /* DP_CLI_OPTIONS_H */
