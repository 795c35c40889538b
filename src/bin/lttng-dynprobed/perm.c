/*
 * Whether a peer may have the daemon act on a process: the kernel's ptrace
 * ownership rules (real, effective and saved ids, capabilities,
 * dumpability) applied to the peer as the tracer.
 *
 * A client names processes to probe: it gets the whole rule.  Yama is left
 * out: a user's daemon is that user's, and the kernel applies yama to its
 * own attach (proc/ptrace.h explains a refusal); root's daemon takes root's
 * clients only.
 *
 * An agent speaks for its own process, whose code root's daemon restores on
 * its word (the patches no event claims): its credentials are those of the
 * process when it connected (SO_PEERCRED), and the process may have
 * executed a set-user-ID or set-group-ID program since, keeping the
 * connection: then its ids differ, and it is refused.  Dumpability and
 * capabilities are not asked of it: a server's worker that changed user is
 * not dumpable, and root's events by pid reach it as root chose; what the
 * daemon writes on an agent's word is never more than the process's own
 * file bytes, where its code holds a patch (claims.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "proc/proc-status.h"

int dpd_perm_peer(pid_t pid, uid_t uid, gid_t gid, bool ids_only, struct dp_err *msg)
{
	struct dp_proc_status st;
	char path[64];
	struct stat sb;
	int ret;

	if (uid == 0)
		return 0;
	ret = dp_proc_status_read(pid, 0, &st);
	if (ret)
		return dp_err_set(msg, -ESRCH, "process %d exited", (int)pid);
	if (st.uid[0] != uid || st.uid[1] != uid || st.uid[2] != uid)
		return dp_err_set(msg, -EPERM, "process %d runs as uids %u/%u/%u (real/effective/"
				  "saved), not as uid %u alone: it runs a set-user-ID program, "
				  "which only root may probe", (int)pid, st.uid[0], st.uid[1],
				  st.uid[2], (unsigned)uid);
	if (st.gid[0] != gid || st.gid[1] != gid || st.gid[2] != gid)
		return dp_err_set(msg, -EPERM, "process %d runs as gids %u/%u/%u (real/effective/"
				  "saved), not as gid %u alone: it runs a set-group-ID program, "
				  "which only root may probe", (int)pid, st.gid[0], st.gid[1],
				  st.gid[2], (unsigned)gid);
	if (ids_only)
		return 0;
	if (st.cap_prm)
		return dp_err_set(msg, -EPERM, "process %d holds capabilities (%#" PRIx64 ") that "
				  "uid %u does not: only root may probe it", (int)pid, st.cap_prm,
				  (unsigned)uid);
	/* A process that is not dumpable has its /proc files given to root
	 * (task_dump_owner). */
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (stat(path, &sb))
		return dp_err_set(msg, -ESRCH, "process %d exited", (int)pid);
	if (sb.st_uid != uid)
		return dp_err_set(msg, -EPERM, "process %d is not dumpable (prctl(PR_SET_DUMPABLE, "
				  "0), or it changed credentials): only root may probe it",
				  (int)pid);
	return 0;
}
