/*
 * Which processes an event given by path alone reaches: the processes of
 * its owner that map its object now, lttng's own programs left out.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "proc/proc-status.h"

/*
 * Whether pid runs one of lttng's own programs.  A path alone must not
 * reach into them: the agent brings liblttng-ust, and a session or consumer
 * daemon that traced itself could deadlock on its own buffers.  (Naming
 * such a process with --pid is still the user's choice.)
 */
static bool is_lttng_program(pid_t pid)
{
	static const char *const names[] = {
		"lttng", "lttng-sessiond", "lttng-consumerd", "lttng-relayd",
		"lttng-dynprobed", "babeltrace2",
	};
	char exe[PATH_MAX];
	const char *base;

	if (dp_proc_exe(pid, exe, sizeof(exe)) || !exe[0])
		return false;
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]);

		/* An executable replaced on disk reads "NAME (deleted)". */
		if (!strncmp(base, names[i], n) && (!base[n] || !strcmp(base + n, " (deleted)")))
			return true;
	}
	return false;
}

int dpd_find_mappers(struct dpd_event *ev, pid_t **pids, size_t *n)
{
	size_t k = 0;
	int ret = dp_proc_list(pids, n);

	/* Kept in place: the processes that qualify, in /proc's order. */
	for (size_t i = 0; i < *n; i++) {
		pid_t pid = (*pids)[i];
		struct dp_proc_status st;

		if (pid == getpid())
			continue;
		/* The owner's processes only, for root too: a path alone never
		 * reaches into every process of the machine. */
		if (dp_proc_status_read(pid, 0, &st) || st.uid[0] != ev->owner)
			continue;
		if (is_lttng_program(pid))
			continue;
		if (!dpd_object_mapped(ev->obj, pid))
			continue;
		(*pids)[k++] = pid;
	}
	*n = k;
	return ret == -ENOMEM ? 0 : ret;
}
