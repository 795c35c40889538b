/*
 * lttng help COMMAND: the man page of a command we extend (ours, which
 * covers what we add and points to the stock page for the rest); any other
 * command's is the stock lttng's.
 */
#include <string.h>

#include "cli.h"

int dp_cmd_help(struct dp_cli *cli, int argc, const char **argv)
{
	static const char *const ours[] = { "enable-event", "add-context", "list", "trace" };

	(void)cli;
	if (argc != 2)
		return DP_CMD_PASS;
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (!strcmp(argv[1], ours[i]))
			return dp_show_man(argv[1]);
	return DP_CMD_PASS;
}
