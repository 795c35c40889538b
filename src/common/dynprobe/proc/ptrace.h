/*
 * Process control over ptrace: the contract.
 *
 * A struct dp_proc holds one target process for the length of one operation:
 *
 *   dp_proc_open()     names the process (nothing is touched yet)
 *   dp_proc_attach()   checks it can be traced, seizes every thread and stops
 *                      them all; refusals come with a one-line message
 *   ...                memory, registers, PC fix-ups, remote syscalls
 *                      (remote.h) while every thread is held
 *   dp_proc_resume()   lets the threads run while staying attached (only for
 *                      work that needs the target to make progress)
 *   dp_proc_stop()     holds every thread again
 *   dp_proc_detach()   lets go of every thread; signals that arrived while we
 *                      held them are delivered exactly as the kernel queued them
 *   dp_proc_close()    detaches if needed and frees
 *
 * Held threads.  A thread is held in one of three stops, and each is a place
 * where the kernel itself would let a debugger look: an interrupt stop (the
 * thread was running user code or sleeping in a system call), a job-control
 * stop (the process was or became stopped by SIGSTOP & co.), or the delivery
 * stop of a signal that reached it while we were stopping it.  The last one
 * never stays held, nor is it suppressed: dp_proc_attach() and dp_proc_stop()
 * deliver the signal, with its siginfo, and hold the thread again before it
 * runs a user instruction (at its handler's first one, or in a job-control
 * stop).  A signal left in a delivery stop would be lost if the caller died
 * holding it (the kernel detaches a dead tracer's threads without it), and
 * an int3's SIGTRAP lost leaves its thread inside an instruction.  A thread
 * interrupted inside a blocking system call keeps the kernel's restart state
 * (orig_rax and -ERESTART* in rax): the kernel restarts the call when the
 * thread resumes, as after any stop.
 *
 * All calls on one struct dp_proc must come from one thread of the caller (the
 * kernel ties ptrace to the tracing thread).  Every function returns 0 or
 * -errno; dp_proc_err() then holds the code and what went wrong in one line
 * (what was wrong, what would be right), meant for users; dp_proc_errmsg() is
 * its words alone.
 */
#ifndef DP_PROC_PTRACE_H
#define DP_PROC_PTRACE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "err.h"

/* Refusals of dp_proc_attach(), each with its own errno. */
#define DP_PROC_ENOPROC	ESRCH		/* no such process, or it exited meanwhile */
#define DP_PROC_ETHREAD	EINVAL		/* the pid names a thread, not a process */
#define DP_PROC_EZOMBIE	EOWNERDEAD	/* the process is a zombie */
#define DP_PROC_ETRACED	EBUSY		/* another tracer is attached */
#define DP_PROC_E32BIT	ENOEXEC		/* not a 64-bit x86-64 program */
#define DP_PROC_ESTATIC	ELIBACC		/* statically linked: the agent cannot be loaded */
#define DP_PROC_EPRIV	EPERM		/* ptrace denied: other owner, capabilities, LSM */
#define DP_PROC_EYAMA	EACCES		/* ptrace denied by yama's ptrace_scope */
#define DP_PROC_ENODUMP	ENOTSUP		/* ptrace denied: the target is not dumpable */
#define DP_PROC_EEXEC	ESTALE		/* the process ran execve() during the operation */

/* How a held thread is stopped. */
enum dp_thread_stop {
	DP_STOP_NONE,		/* not held: running (or not yet reported) */
	DP_STOP_INTERRUPT,	/* PTRACE_INTERRUPT, or a new thread's first stop */
	DP_STOP_GROUP,		/* job-control stop of the whole process */
	DP_STOP_SIGNAL,		/* about to receive `signal` (delivered before the hold ends) */
};

struct dp_thread {
	pid_t tid;
	enum dp_thread_stop stop;
	int signal;		/* DP_STOP_SIGNAL: the signal held back */
	unsigned int flags;	/* private */
};

/* dp_proc_attach() flags. */
enum dp_attach_flag {
	/* Do not refuse statically linked programs (for work that needs no agent). */
	DP_ATTACH_NO_AGENT = 1u << 0,
};

struct dp_proc;

/* NULL with errno ENOMEM.  Touches nothing in the target. */
struct dp_proc *dp_proc_open(pid_t pid);
/* Detaches (dp_proc_detach) if attached, then frees. */
void dp_proc_close(struct dp_proc *p);

pid_t dp_proc_pid(const struct dp_proc *p);
const char *dp_proc_errmsg(const struct dp_proc *p);
/* The last failure of a call on p (a copy may be passed up as it is). */
const struct dp_err *dp_proc_err(const struct dp_proc *p);

/*
 * How long dp_proc_attach()/dp_proc_stop() wait for every thread to stop
 * (default 2000 ms; a thread in uninterruptible sleep does not stop).  A
 * thread still runnable then (state R: waiting for a CPU, or in a system
 * call that has not returned yet) is given up to five times as long.
 */
void dp_proc_set_timeout(struct dp_proc *p, int ms);

/*
 * The checks dp_proc_attach() makes before touching the process, alone:
 * 0, or one of the DP_PROC_E* refusals with err filled (may be NULL).
 */
int dp_proc_check(pid_t pid, unsigned int flags, struct dp_err *err);

/*
 * Seizes every thread (PTRACE_SEIZE with PTRACE_O_TRACECLONE, the thread list
 * read again until it is stable, so that threads created meanwhile are
 * caught) and holds them all, until the process counts no thread that is not
 * held (a listing can miss threads).  On failure nothing stays attached.
 * dp_proc_stop() makes the same count.
 */
int dp_proc_attach(struct dp_proc *p, unsigned int flags);
int dp_proc_stop(struct dp_proc *p);
int dp_proc_resume(struct dp_proc *p);
int dp_proc_detach(struct dp_proc *p);
bool dp_proc_attached(const struct dp_proc *p);

/*
 * The longest time every thread stayed held, from the first PTRACE_INTERRUPT
 * of a dp_proc_attach()/dp_proc_stop() to the matching resume or detach.
 */
uint64_t dp_proc_max_held_ns(const struct dp_proc *p);
/*
 * Every such stop added up (and their number in *nholds, if not NULL): what
 * the target's threads lost in all, which the longest stop alone does not
 * tell when an operation stops them more than once.
 */
uint64_t dp_proc_total_held_ns(const struct dp_proc *p, uint32_t *nholds);

/*
 * While resumed: handles what the threads report (signals passed on, new
 * threads adopted, job-control stops honoured) for up to timeout_ms.
 */
int dp_proc_service(struct dp_proc *p, int timeout_ms);

/* The threads known now, held or not; valid until the next call on p. */
const struct dp_thread *dp_proc_threads(const struct dp_proc *p, size_t *n);
const struct dp_thread *dp_proc_thread(const struct dp_proc *p, pid_t tid);

/*
 * Memory, through /proc/PID/mem: works on read-only mappings (writes go
 * through the kernel's forced copy-on-write, as a debugger's breakpoints do).
 * All or nothing as far as the kernel allows: -EFAULT when some byte is not
 * mapped (a write may then have changed the bytes before it: check first).
 */
int dp_proc_read(struct dp_proc *p, uint64_t addr, void *buf, size_t len);
int dp_proc_write(struct dp_proc *p, uint64_t addr, const void *buf, size_t len);

/* Registers of a held thread. */
int dp_proc_get_regs(struct dp_proc *p, pid_t tid, struct user_regs_struct *regs);
int dp_proc_set_regs(struct dp_proc *p, pid_t tid, const struct user_regs_struct *regs);

/* The thread stopped inside a system call (orig_rax names it). */
bool dp_regs_in_syscall(const struct user_regs_struct *regs);
/*
 * The kernel will restart that system call when the thread resumes (rax is
 * one of -ERESTARTSYS, -ERESTARTNOINTR, -ERESTARTNOHAND,
 * -ERESTART_RESTARTBLOCK): it re-executes the 2-byte syscall instruction that
 * ends at rip, so rip - 2 must still hold one.
 */
bool dp_regs_restarts(const struct user_regs_struct *regs);

/*
 * Thread PC fix-up.  Every held thread whose rip lies in [start, end) moves
 * to map[i].to where map[i].from == rip; an entry with from == to keeps
 * threads there (the first byte of a patch, where the new jump is a correct
 * place to be).  A thread whose rip has no entry (it is mid-instruction for
 * the map) or whose pending syscall restart would re-execute bytes the map
 * does not move with it is refused: nothing moves then (-EINVAL and a
 * message).  *moved (may be NULL) counts the threads moved.
 */
struct dp_pc_move {
	uint64_t from, to;
};
int dp_proc_move_pcs(struct dp_proc *p, uint64_t start, uint64_t end,
		     const struct dp_pc_move *map, size_t n, unsigned int *moved);

/*
 * The ptrace permission rules of the kernel (ownership, capabilities,
 * dumpability, yama), as a pure function of the facts, for a message that
 * names the rule that denies.  dp_proc_attach() uses it when the kernel says
 * EPERM; the daemon can use it to judge a client's request.
 */
struct dp_ptrace_facts {
	uid_t tracer_uid;		/* real uid (PTRACE_MODE_REALCREDS) */
	gid_t tracer_gid;
	bool tracer_cap;		/* CAP_SYS_PTRACE */
	uint64_t tracer_caps;		/* permitted capabilities */
	uid_t target_uid[3];		/* real, effective, saved */
	gid_t target_gid[3];
	uint64_t target_caps;		/* permitted capabilities */
	bool target_dumpable;
	int yama_scope;			/* -1: no yama */
	bool target_is_descendant;	/* of the tracer */
};
/* 0 when the rules allow, else -DP_PROC_EPRIV/EYAMA/ENODUMP with err. */
int dp_ptrace_judge(pid_t pid, const struct dp_ptrace_facts *f, struct dp_err *err);
/*
 * Gathers the facts for this process tracing pid, or its thread tid (0: the
 * process; a thread may run with credentials of its own).
 */
int dp_ptrace_facts_read(pid_t pid, pid_t tid, struct dp_ptrace_facts *f);

#endif /* DP_PROC_PTRACE_H */
