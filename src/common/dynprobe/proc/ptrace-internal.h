/*
 * What ptrace.c, remote.c and inject.c share about a held process: the
 * struct behind struct dp_proc and the event pump that keeps every thread in
 * the state its owner wants while one thread does something else.
 */
#ifndef DP_PROC_PTRACE_INTERNAL_H
#define DP_PROC_PTRACE_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>

#include "err.h"
#include "proc/ptrace.h"

/* struct dp_thread.flags */
enum {
	T_INTERRUPTED = 1u << 0,	/* PTRACE_INTERRUPT sent, its stop not seen yet */
	T_NEW = 1u << 1,		/* auto-attached clone: its first stop is coming */
	T_OWNED = 1u << 2,		/* a remote operation drives it: the pump leaves it */
	T_CATCH = 1u << 3,		/* running under PTRACE_SYSCALL (inject.c) */
	T_WANT_RUN = 1u << 4,		/* resumed: stops are passed through */
	T_AT_SYSCALL = 1u << 5,		/* held in a syscall stop by on_syscall */
};

struct dp_proc {
	pid_t pid;
	int mem_fd;
	bool attached;
	bool gone;		/* the process exited */
	bool exec_seen;		/* it ran execve() while we were attached */
	int timeout_ms;
	unsigned int attach_flags;
	struct dp_thread *t;
	size_t n, cap;
	uint64_t syscall_insn;	/* a 0f 05 in an executable mapping, 0: not found yet */
	int seccomp;		/* /proc/PID/status Seccomp, -1: not read yet */
	uint64_t hold_start;	/* when we began stopping every thread, 0: not held */
	pid_t hold_tid;		/* the thread that holds them, and its nice value */
	int hold_nice;
	bool hold_reniced;	/* ... which it left for HOLD_NICE meanwhile */
	uint64_t max_held_ns;	/* the longest stop of every thread so far */
	uint64_t total_held_ns;	/* every such stop added up */
	uint32_t nholds;	/* how many such stops there were */
	/*
	 * Catch mode (T_CATCH threads run under PTRACE_SYSCALL): called at each
	 * of their syscall stops; returning true keeps the thread there (held,
	 * flagged T_AT_SYSCALL) instead of letting it go on.
	 */
	bool (*on_syscall)(struct dp_proc *p, pid_t tid, void *arg);
	void *on_syscall_arg;
	struct dp_err err;	/* what the last failure was, for dp_proc_errmsg() */
};

struct dp_thread *dp__thread(struct dp_proc *p, pid_t tid);

/* What one waitpid() status of a seized thread means. */
enum dp_event {
	EV_EXIT,		/* exited or killed */
	EV_INTERRUPT,		/* PTRACE_EVENT_STOP, not a group stop */
	EV_GROUP,		/* PTRACE_EVENT_STOP with a stop signal */
	EV_SIGNAL,		/* signal-delivery stop */
	EV_SYSCALL,		/* syscall entry or exit stop (PTRACE_O_TRACESYSGOOD) */
	EV_CLONE,		/* PTRACE_EVENT_CLONE (the new thread is adopted) */
	EV_EXEC,		/* PTRACE_EVENT_EXEC */
	EV_OTHER,		/* another PTRACE_EVENT_* */
};

/*
 * Waits until the deadline d (deadline.h; none: no limit) for the next
 * status of `owned` (a thread flagged T_OWNED), servicing every other thread
 * meanwhile.  Returns 1 with *ev and *sig, 0 on timeout, or -errno (-ESRCH:
 * the process is gone).  Clone and exec events of `owned` are handled here
 * and reported.
 */
struct dp_deadline;
int dp__wait_owned(struct dp_proc *p, pid_t owned, struct dp_deadline *d, enum dp_event *ev,
		   int *sig);

/* One pass over the threads that are not owned: handle pending statuses. */
int dp__pump(struct dp_proc *p);

/* Holds one thread that the pump would otherwise run (PTRACE_INTERRUPT + wait). */
int dp__hold_thread(struct dp_proc *p, pid_t tid);

/*
 * Delivers the signal a thread is held for, then holds it again (in the
 * handler's first instruction, or in the stop the signal causes).  Used
 * before a thread runs code for us: the signal must neither be lost nor be
 * delivered onto our temporary registers.
 */
int dp__settle(struct dp_proc *p, pid_t tid);

/* The threads run again (not through dp_proc_resume): the hold is over. */
void dp__hold_ends(struct dp_proc *p);

#endif /* DP_PROC_PTRACE_INTERNAL_H */
