/*
 * Remote system calls and function calls: the contract.
 *
 * They borrow one held thread of an attached struct dp_proc (ptrace.h) and
 * give it back exactly as it was: every general register, the vector state
 * (for calls), the rseq critical-section word, and the kernel's restart state
 * of a system call it was sleeping in (the thread goes back into the very
 * stop it was taken from, so the kernel restarts that call when it resumes).
 *
 * A system call runs on a `syscall` instruction that already exists in the
 * target (the vdso's or libc's text: any 0f 05 byte pair in an executable
 * mapping executes as one); nothing is written into the target's code.  The
 * thread is driven with PTRACE_SYSCALL: it stops at the entry and at the exit
 * of our call, so no breakpoint is needed.  A signal that reaches the thread
 * before our call enters the kernel is delivered on the thread's own
 * registers (as if it had arrived just before we stopped it), never on ours,
 * and the call is retried; signals arriving later stay pending until resume.
 *
 * tid 0 picks a held thread.  Functions return 0 or -errno with
 * dp_proc_err() set; a system call that ran and failed gives its own
 * -errno (and a message naming it).
 */
#ifndef DP_PROC_REMOTE_H
#define DP_PROC_REMOTE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/ptrace.h"

/* A held thread suited to run code for us (0: none). */
pid_t dp_remote_pick(struct dp_proc *p);

/* The syscall instruction used (found on first use, cached while attached). */
int dp_remote_syscall_insn(struct dp_proc *p, uint64_t *addr);

/* *ret: the raw rax (a negative errno when the call failed). */
int dp_remote_syscall(struct dp_proc *p, pid_t tid, long nr, const uint64_t args[6],
		      int64_t *ret);

int dp_remote_mmap(struct dp_proc *p, pid_t tid, uint64_t addr, uint64_t len, int prot,
		   int flags, int fd, uint64_t offset, uint64_t *out);
int dp_remote_mprotect(struct dp_proc *p, pid_t tid, uint64_t addr, uint64_t len, int prot);
int dp_remote_munmap(struct dp_proc *p, pid_t tid, uint64_t addr, uint64_t len);

/*
 * A function call in the target: fn(args[0..5]) on the borrowed thread's own
 * stack (below its red zone), returning to `trap`, the address of an int3
 * (0xcc) byte the caller placed in code memory of its own; the SIGTRAP it
 * raises ends the call and is never delivered.  The thread's signals are
 * blocked for the length of the call (they stay pending, and are delivered
 * after it on the thread's own registers); its vector state is saved and
 * restored around it.
 *
 * The called function runs in the thread's context: it must not need a lock
 * that thread may hold (inject.c picks the thread for that).  With
 * run_others, the other threads run meanwhile (a lock the function needs may
 * be held by one of them) and are held again after.  A call that does not
 * return within timeout_ms is abandoned: the thread is stopped wherever it
 * is and put back as it was (only safe where it waits, e.g. for a lock).
 */
struct dp_remote_call {
	uint64_t fn;
	uint64_t args[6];
	uint64_t trap;
	int timeout_ms;		/* < 0: no limit */
	bool run_others;
};
int dp_remote_call(struct dp_proc *p, pid_t tid, const struct dp_remote_call *call,
		   uint64_t *ret);

#endif /* DP_PROC_REMOTE_H */
