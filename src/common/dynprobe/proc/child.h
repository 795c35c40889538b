/*
 * A command we start, held at its entry point: the ptrace requests of
 * `lttng trace`, which must enable probes in a program before its main()
 * runs, yet after its loader has mapped every library (and the preloaded
 * agent has connected to the daemon).
 *
 *   child:  dp_child_traceme(), then execve()
 *   parent: waitpid() sees the child stopped after the exec, before any of
 *           its code ran;
 *           dp_child_hold_entry()     the entry point becomes a 2-byte spin
 *                                     loop, and the child runs (its loader,
 *                                     the agent's constructor) until there;
 *           dp_child_wait_entry()     until the main thread spins there;
 *           ... probes installed while it spins ...
 *           dp_child_release_entry()  the entry's bytes back: main() runs.
 *
 * A process that is not our child, found just after its exec (the
 * daemon's process-events connector): dp_child_catch_entry() seizes it
 * wherever it is (most likely in its loader), writes the same spin loop
 * and lets it go; dp_child_wait_entry() and dp_child_release_entry() as
 * above.  If it ran past its entry before the spin was written, it never
 * spins: the wait times out, and the release puts the bytes back all the
 * same (the entry runs once).
 *
 * The child is never left traced between the calls (other tools, and the
 * daemon's own ptrace, may attach meanwhile).  Functions return 0 or -errno.
 */
#ifndef DP_PROC_CHILD_H
#define DP_PROC_CHILD_H

#include <stdint.h>
#include <sys/types.h>

#include "err.h"

#define DP_CHILD_SPIN_LEN 2	/* jmp . (eb fe) */

struct dp_child_entry {
	pid_t pid;
	uint64_t entry;				/* AT_ENTRY of the program */
	uint8_t orig[DP_CHILD_SPIN_LEN];	/* its bytes before the spin */
};

/* In the child, before execve(): be traced across it. */
int dp_child_traceme(void);

/*
 * The child stopped after its exec: its entry point made a spin loop (the
 * bytes it held kept in h) and the child let go.
 */
int dp_child_hold_entry(pid_t pid, struct dp_child_entry *h);

/*
 * Any process: seized and stopped, its entry point made a spin loop (the
 * bytes kept in h), let go.  0 or -errno (nothing changed).
 */
int dp_child_catch_entry(pid_t pid, struct dp_child_entry *h);

/*
 * Waits until the main thread spins at the entry, looking every poll_ms:
 * 0; 1 when the process ended first (its wait status in *wstatus, reaped);
 * -ETIMEDOUT after timeout_ms.
 */
int dp_child_wait_entry(const struct dp_child_entry *h, int timeout_ms, int poll_ms,
			int *wstatus);

/* Puts the entry point's bytes back under the spinning main thread, which
 * then runs the program.  0 or -errno with err. */
int dp_child_release_entry(const struct dp_child_entry *h, struct dp_err *err);

#endif /* DP_PROC_CHILD_H */
