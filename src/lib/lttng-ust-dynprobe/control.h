/*
 * The agent's control thread: the agent's side of the app protocol
 * (proto/app.h).  It connects to lttng-dynprobed's app socket, says HELLO
 * with what is installed in this process, and serves the daemon's requests:
 * defining probes, allocating code memory near an address, recording the
 * patches the daemon wrote (and registering int3 sites), listing.
 *
 * The library constructor calls dpa_control_start() once, the destructor
 * dpa_control_stop().  A preloaded agent (LD_PRELOAD, `lttng trace`) holds
 * its constructor, as lttng-ust does for LTTNG_UST_REGISTER_TIMEOUT, until
 * the daemon's GO: the daemon sends it after HELLO once it has installed
 * every enabled path-wide event whose object the process maps (at once when
 * there are none), so that main runs probed.  The wait is bounded:
 * DPA_CONTROL_ENV_REGISTER_TIMEOUT milliseconds (default
 * DPA_CONTROL_REGISTER_TIMEOUT_MS; 0: no wait; -1: no limit), or
 * DP_APP_ENV_WAIT's when `lttng trace` sets it; it ends as soon as the
 * connection fails (no daemon: nothing beyond the connection attempt).
 * HELLO's reply is waited for DP_APP_TIMEOUT_MS, or as long as that wait
 * when it is longer and finite: a slow daemon does not end it early.  An
 * injected agent never waits: its constructor runs in the thread the
 * injection created (not the main thread), inside dlopen.
 *
 * The program must not notice it:
 *  - one thread, named "lttng-dynprobe", with every signal blocked;
 *  - no stdio, no output at all unless LTTNG_DYNPROBE_DEBUG is set (then
 *    lines on stderr, written with write(2));
 *  - without a daemon, a few connection attempts with a growing delay (0.1 s
 *    doubling up to 30 s, then every 30 s); a daemon that goes away is
 *    reconnected to the same way, and told again what is installed.  A
 *    sleep that ends early (EINTR: no signal can do it, every signal is
 *    blocked; a tracer can) makes the next attempt immediate;
 *  - every descriptor is close-on-exec; a descriptor the program closed
 *    behind our back (and maybe reused) is forgotten, never closed or used;
 *  - after fork, the child closes its copy of the parent's connection and
 *    starts its own thread, which connects as the child's pid and reports
 *    what the child inherited.
 *
 * The agent is the source of truth for what is installed: the daemon writes
 * code through /proc/PID/mem, and tells the agent with NOTE_INSTALLED and
 * NOTE_REMOVED; a restarted daemon learns it all back from HELLO.
 */
#ifndef DPA_CONTROL_H
#define DPA_CONTROL_H

#include <stdbool.h>

/* Environment: logs (the socket's path: DP_APP_ENV_SOCKET, proto/app.h). */
#define DPA_CONTROL_ENV_DEBUG "LTTNG_DYNPROBE_DEBUG"
/* Environment: the constructor's longest wait for GO, in milliseconds. */
#define DPA_CONTROL_ENV_REGISTER_TIMEOUT "LTTNG_DYNPROBE_REGISTER_TIMEOUT"
#define DPA_CONTROL_REGISTER_TIMEOUT_MS 3000
/*
 * Environment, for tests: the most probes the agent defines (a number
 * below DP_APP_MAX_PROBES: a request beyond it is refused as a full table
 * is), and the protocol minor its HELLO announces (below DP_APP_MINOR: the
 * daemon then speaks to it as to an older agent).  Read once, at start.
 */
#define DPA_CONTROL_ENV_MAX_PROBES "LTTNG_DYNPROBE_MAX_PROBES"
#define DPA_CONTROL_ENV_MINOR "LTTNG_DYNPROBE_PROTO_MINOR"
/*
 * Tests only (not for users, not in the manual): "N" or "N:COUNT", the Nth
 * ALLOC_CODE this process serves and the COUNT - 1 after it (1 by default)
 * fail as if no code memory could be mapped (ENOMEM): an install that runs
 * out of code memory must fail cleanly.
 */
#define DPA_CONTROL_ENV_TEST_CODE_FAIL "LTTNG_DYNPROBE_TEST_CODE_FAIL"

/* Reconnection delays, in milliseconds. */
#define DPA_CONTROL_RETRY_FIRST_MS 100
#define DPA_CONTROL_RETRY_MAX_MS 30000

/*
 * Starts the control thread (once; later calls do nothing).  0, or -errno
 * when no thread could be started or the socket's path cannot be known
 * (then the agent stays inert).  Waits for the daemon's GO as above.
 */
int dpa_control_start(void);

/*
 * Whether a dlopen that loads objects is to be waited for: a preloaded
 * agent (one whose constructor waits, wait not turned off) connected to a
 * daemon that knows MAPPED (app minor 2).
 */
bool dpa_control_mapped_wanted(void);

/*
 * After a dlopen that loaded objects: says MAPPED to the daemon and holds
 * the caller until its reply (the daemon installed the path-wide events of
 * what the process now maps), at most as long as the constructor's wait,
 * and no longer than the connection lasts.  Never holds a lock meanwhile.
 */
void dpa_control_mapped_wait(void);

/*
 * Asks the control thread to stop (process exit, unload): it drops the
 * connection and serves nothing more.  Does not wait for the thread, which
 * may be sleeping between connection attempts.
 */
void dpa_control_stop(void);

#endif /* DPA_CONTROL_H */
