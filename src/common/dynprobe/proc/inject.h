/*
 * Loading the agent into a running process: the contract.
 *
 * dp_inject_agent() makes the target call dlopen(path, RTLD_NOW) itself, in
 * a thread of its own that the target's C library creates, so that the load
 * never runs on top of code that holds a lock:
 *
 *   1. attach and hold every thread (ptrace.h);
 *   2. pick a host thread that sleeps in a blocking system call issued from
 *      outside the dynamic loader (read, poll, epoll_wait, nanosleep, accept,
 *      ...; never futex or write).  glibc holds no malloc, thread-stack, TLS
 *      or loader lock across such calls, so pthread_create() can run on it.
 *      Else a thread stopped in user code whose stack, unwound with CFI
 *      from here (stack.h), holds no frame of glibc but the thread's start
 *      frames: it holds no C library lock either (a busy program).  Else
 *      the threads run under PTRACE_SYSCALL for a few milliseconds, the
 *      first one that enters such a call becoming the host before the call
 *      is made (it is issued again afterwards), then every thread is
 *      stopped and looked at again, until catch_ms have passed and 16
 *      such rounds were made (a loaded machine makes few in catch_ms), 10
 *      times catch_ms at most; refused then, with the last stack seen and
 *      why it was not safe;
 *   3. map one data page (read-write) and one code page (read-execute, its
 *      bytes written through /proc/PID/mem: never writable and executable at
 *      once) with remote mmap;
 *   4. call pthread_create() on the host (remote.h) while every other thread
 *      runs, so a lock held elsewhere is released, not waited on forever;
 *      the host goes back into its system call, or to the instruction it
 *      was stopped at, as it was (registers, vector state, signal mask,
 *      errno);
 *   5. detach: the process runs freely while the new thread blocks its
 *      signals, detaches itself, sets the variable of the options (if any)
 *      when the environment lacks it, calls dlopen(), copies dlerror() on
 *      failure, unsets the variable again, reports, and, once the report is
 *      read (or after 5 s), unmaps both pages and exits;
 *   6. wait for the report while the new thread makes progress (its CPU
 *      time or page faults grow, or it is runnable: a loaded machine only
 *      slows it down): load_timeout_ms without progress (it waits for a
 *      lock or a peer), or load_cap_ms in all, fail the load, the message
 *      saying which and where the thread waits;
 *   7. return once that thread has ended (5 s at most): it blocks every
 *      signal, and an install that checks the threads' masks right after
 *      (an int3 needs SIGTRAP deliverable) must not see it.
 *
 * The new thread is an ordinary thread of the target, with its own TLS and
 * malloc state: if another thread holds the loader lock or a malloc arena,
 * dlopen waits for it like any other thread would, and the others keep
 * running meanwhile.  setenv/unsetenv run in that thread too (never from a
 * hijacked one); with glibc < 2.40 a setenv that grows an environment array
 * setenv itself allocated earlier can free it under a concurrent getenv in
 * another thread, as any setenv in a threaded program can: callers that
 * cannot accept this set no variable.
 *
 * Never pass LTTNG_UST_REGISTER_TIMEOUT this way: lttng-ust reads it once,
 * and it is also the send and receive timeout (at least 10 ms) of the
 * socket on which every event class is registered with the session daemon,
 * for the life of the process.  A short value there makes a class
 * registered while the session daemon is busy fail (its events are never
 * recorded), and the late reply is then taken for the next registration's.
 */
#ifndef DP_PROC_INJECT_H
#define DP_PROC_INJECT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/* Refusals beyond those of dp_proc_attach() (ptrace.h). */
#define DP_INJECT_EUST0		EEXIST		/* liblttng-ust.so.0 is loaded */
#define DP_INJECT_ENOLIBC	ENOSYS		/* no glibc dlopen/pthread_create */
#define DP_INJECT_ENOHOST	EDEADLK		/* no thread at a lock-free point */
#define DP_INJECT_EDLOPEN	ELIBBAD		/* dlopen failed: see the message */
#define DP_INJECT_ESTOPPED	EAGAIN		/* the process is stopped (job control) */

/* dp_inject_agent() returns this when the agent is mapped already. */
#define DP_INJECT_ALREADY 1

/* Bounds of the variable set for the load, NULs included. */
#define DP_INJECT_ENV_NAME_MAX 64
#define DP_INJECT_ENV_VALUE_MAX 128

struct dp_inject_opts {
	/* A variable the library reads while it loads (its constructor): set
	 * for the load when the environment lacks it, then unset.  NULL: none. */
	const char *env_name, *env_value;
	int load_timeout_ms;		/* wait for dlopen to finish while its thread
					 * makes no progress (default 10000) */
	int load_cap_ms;		/* ... and in all (default 120000) */
	int catch_ms;			/* search for a host thread (default 1000) */
	int call_timeout_ms;		/* pthread_create() on the host */
};

struct dp_inject_result {
	uint64_t handle;		/* dlopen()'s result in the target */
	pid_t host;			/* the thread that ran pthread_create() */
	uint64_t held_ns;		/* the longest time all threads stayed held */
	uint64_t held_total_ns;		/* every such stop added up */
	uint32_t nholds;		/* how many stops there were */
	uint64_t total_ns;		/* the whole injection */
	uint64_t load_ns;		/* from the detach to the new thread's report */
	uint64_t find_ns;		/* from the start to a host found */
	uint32_t stacks_walked;		/* stacks unwound looking for a host */
	uint32_t stacks_refused;	/* of which not at a lock-free point */
	char host_frame[96];		/* where the host was stopped in user code,
					 * "object+0xoff" ("": in a blocking call) */
};

/* Defaults for the fields above (no variable). */
void dp_inject_opts_init(struct dp_inject_opts *o);

/*
 * Loads `path` (absolute) into pid.  0: loaded; DP_INJECT_ALREADY: the same
 * file is mapped already (nothing done, err says so); -errno with err
 * filled on failure: the dp_proc_attach() refusals, DP_INJECT_E*, -ETIMEDOUT when the
 * load made no progress, or did not finish in time (it goes on, and cleans up after itself).
 * res may be NULL.
 */
int dp_inject_agent(pid_t pid, const char *path, const struct dp_inject_opts *opts,
		    struct dp_inject_result *res, struct dp_err *err);

/*
 * The address of a dynamic symbol of the first mapped object whose file name
 * starts with `lib` (e.g. "libc.so.6"), relocated into pid.  0 or -ENOENT
 * (-errno of reading the object).
 */
int dp_proc_dynsym(pid_t pid, const char *lib, const char *sym, uint64_t *addr);

/*
 * What thread tid of pid does, from /proc/PID/task/TID/stat: its state
 * letter ('R' runnable, 'S' asleep, 'D' in I/O...) and a count that grows
 * with any work it does (CPU ticks and page faults), to tell a thread that
 * a busy machine slows down from one that waits.  0 or -errno.
 */
int dp_proc_thread_work(pid_t pid, pid_t tid, char *state, uint64_t *work);

#endif /* DP_PROC_INJECT_H */
