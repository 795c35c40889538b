/*
 * What a preloaded agent follows: the images its process executes, and the
 * objects it loads later.
 *
 * Exec.  With DPA_FOLLOW_ENV_EXEC set (to anything but "" or "0") in the
 * environment the process started with (`lttng trace --follow-exec` sets
 * it), or while the daemon asks it (FOLLOW, proto/app.h: an enabled event
 * of `lttng enable-event --follow-exec` is installed in the process, which
 * may have been running long before; dpa_follow_set), the agent keeps itself in the environment of every image the process
 * executes: execve, execv, execvp, execvpe, execl, execlp, execle, fexecve,
 * execveat, posix_spawn and posix_spawnp are wrapped (the agent defines them
 * at glibc's symbol versions, agent.map), and the environment they pass on
 * gets back, when the program left them out:
 *  - LD_PRELOAD naming the agent (first; the program's own preloads after);
 *  - the variables the agent and lttng-ust read, as the process had them
 *    when it started: LTTNG_DYNPROBE_*, LTTNG_UST_*, LTTNG_HOME (LTTNG_HOME
 *    is made from HOME for a user whose sockets live there), and
 *    LTTNG_DYNPROBE_APP_SOCKET naming the socket this agent talks to.
 * The daemon's ask is not handed on as a variable: the new image's agent
 * says HELLO, and the daemon tells it to follow when an event asking for
 * it is installed there (by pid, the event reaches the process's
 * descendants), so that turning it off reaches the whole family; a lost
 * connection ends the daemon's ask (it tells the agent again once it
 * reconnects and its installs are done).  An
 * injected agent comes last in the loader's lookup order, so the program's
 * calls do not bind to its wrappers: told to follow, it sets the GOT slots
 * through which the objects loaded then call the exec family to its own
 * (follow.c); objects loaded later call glibc's.
 * A program that clears or rebuilds its environment before it executes
 * another still hands the agent on.  The wrappers take no lock and allocate
 * nothing (the new environment is built on the stack): they stay
 * async-signal-safe, as execve is, and are safe in a vfork child.  Without
 * the variable, they only call glibc's.  Not followed: system() and popen()
 * (glibc calls its own spawn inside: the shell they start gets the
 * process's environment as it is), and programs that call the execve
 * system call themselves.
 *
 * dlopen.  The agent defines dlopen: once an object was loaded by it, a
 * preloaded agent tells the daemon (MAPPED, proto/app.h) and holds the
 * caller until the daemon has installed the path-wide events whose object
 * the process now maps (control.h's dpa_control_mapped_wait), so that the
 * library runs probed from the moment dlopen returns.  glibc's dlopen reads
 * its caller's address (to search the caller's RPATH/RUNPATH and expand
 * $ORIGIN): a call whose result could depend on who calls is passed to
 * glibc untouched, as a jump with the program's return address in place,
 * and not waited for (its probes go in as soon as the daemon learns of the
 * object by other means).  That is: a name with '$', or a name without '/'
 * while some loaded object has a RUNPATH, or one other than the executable
 * has an RPATH.  dlmopen (other namespaces) is not wrapped.
 */
#ifndef DPA_FOLLOW_H
#define DPA_FOLLOW_H

#include <stdint.h>

#include "proto/app.h"

#define DPA_FOLLOW_ENV_EXEC DP_APP_ENV_FOLLOW_EXEC

/* Reads the environment and resolves glibc's functions: once, from the
 * constructor, while the environment is the one the process started with. */
void dpa_follow_setup(void);

/* The daemon's FOLLOW: its flags (DP_APP_FOLLOW_*) in place of the ones it
 * gave before; the environment's ask stays.  0, or -ENOENT when the agent
 * could not find its own path at setup (it cannot follow). */
int dpa_follow_set(uint32_t flags);

#endif /* DPA_FOLLOW_H */
