/*
 * /proc/PID/status, the fields process control reads, and the small helpers
 * of check.c that ptrace.c and inject.c share.
 */
#ifndef DP_PROC_STATUS_H
#define DP_PROC_STATUS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

/* Fill msg for a thread traced by someone else; returns -DP_PROC_ETRACED. */
int dp_proc_check_tracer(pid_t pid, pid_t tid, pid_t tracer, char *msg, size_t len);
/* Why PTRACE_SEIZE said EPERM, as a refusal (always < 0). */
int dp_proc_explain_eperm(pid_t pid, char *msg, size_t len);

#endif /* DP_PROC_STATUS_H */
