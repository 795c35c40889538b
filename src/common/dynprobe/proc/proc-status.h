/*
 * A process seen through /proc without ptrace: /proc/PID/status (the fields
 * process control reads), whether it runs, its program, its threads, every
 * process of the machine, and its memory (procfs.c); and the small helpers of
 * check.c that ptrace.c and inject.c share.  Functions return 0 or -errno
 * unless they say otherwise.
 */
#ifndef DP_PROC_STATUS_H
#define DP_PROC_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

struct dp_proc_status {
	char name[64];
	char state;		/* R S D T t Z X ... */
	pid_t tgid, ppid, tracer;
	uid_t uid[3];		/* real, effective, saved */
	gid_t gid[3];
	int threads;
	int seccomp;		/* 0 none, 1 strict, 2 filter */
	uint64_t cap_prm, cap_eff;
	uint64_t sig_blocked;	/* SigBlk: bit n - 1 for signal n */
};

/* tid 0: the process's own status. */
int dp_proc_status_read(pid_t pid, pid_t tid, struct dp_proc_status *st);
void dp_proc_comm(pid_t pid, char *buf, size_t len);

/* Whether pid runs: it exists and is not a zombie (it exited for our needs). */
bool dp_proc_alive(pid_t pid);
/* The value of entry `type` (AT_ENTRY, AT_RANDOM...) of pid's auxiliary
 * vector (/proc/PID/auxv); -ENOENT when it has none. */
int dp_proc_auxv(pid_t pid, uint64_t type, uint64_t *value);
/* The target of /proc/PID/exe ("PATH (deleted)" for a program replaced on
 * disk), NUL-terminated in buf. */
int dp_proc_exe(pid_t pid, char *buf, size_t len);
/* The value of the environment variable `name` pid started its program
 * with (/proc/PID/environ), NUL-terminated in buf; -ENOENT when unset. */
int dp_proc_environ_get(pid_t pid, const char *name, char *buf, size_t len);
/* Every process id of the machine (*pids to free). */
int dp_proc_list(pid_t **pids, size_t *n);
/* Every thread id of pid (*tids to free); -ENOENT when pid is gone. */
int dp_proc_tasks(pid_t pid, pid_t **tids, size_t *n);
/*
 * pid's memory at addr, while it runs (nothing held: bytes a thread may be
 * running are not to be changed this way).  All of len, or -errno: -EIO for
 * a short transfer (addr + len runs past a mapping).
 */
int dp_proc_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len);
int dp_proc_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len);

/* Fills err for a thread traced by someone else; returns -DP_PROC_ETRACED. */
int dp_proc_check_tracer(pid_t pid, pid_t tid, pid_t tracer, struct dp_err *err);
/*
 * Why PTRACE_SEIZE said EPERM for pid's thread tid (0: the process), as a
 * refusal in err (always < 0).
 */
int dp_proc_explain_eperm(pid_t pid, pid_t tid, struct dp_err *err);

#endif /* DP_PROC_STATUS_H */
