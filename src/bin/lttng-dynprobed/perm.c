/*
 * Whether a peer may have the daemon act on a process: the kernel's ptrace
 * ownership rules (real, effective and saved ids, capabilities,
 * dumpability) applied to the peer as the tracer: a client naming a
 * process of its own user, an agent speaking for its own process.
 *
 * Root's daemon may trace anything, so its own tries prove nothing for its
 * peers: an agent on root's app socket (open to every user) gets its
 * process patched and restored by root, so that process must be one its
 * user could trace.  The peer's credentials are those of the process when
 * it connected (SO_PEERCRED); it may have executed a set-user-ID program
 * since, keeping the connection, or dropped its dumpability.  Yama is left
 * out here: a user's daemon is that user's, and the kernel applies yama to
 * its own attach (proc/ptrace.h explains a refusal); an agent names only
 * its own process, which may write its own code through /proc/self/mem
 * whatever the scope, and what root's daemon writes on an agent's word is
 * never more than its file's bytes (claims.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "proc/proc-status.h"

int dpd_perm_peer(pid_t pid, uid_t uid, gid_t gid, struct dp_err *msg)
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
