/*
 * The library's constructor and destructor: the agent's process-wide setup.
 *
 * Loading must stay cheap, whether the agent is preloaded into every program
 * `lttng trace` starts or injected into a running one: no thread, no signal
 * handler, no socket here.  The SIGTRAP handler comes with the first int3
 * site (trap.c), per-thread state with a thread's first hit (probe.c), and
 * everything else with the control thread, which finds no daemon and stays
 * idle when there is none.  The one wait: a preloaded agent holds the
 * constructor until the daemon has installed the path-wide probes that
 * apply to this process (bounded; control.h).
 */
#include <pthread.h>

#include "control.h"
#include "events.h"
#include "follow.h"
#include "hit.h"

/*
 * The control thread lives in control.c; a build without it (the agent's
 * own tests) links, and the constructor then only prepares the hit path.
 */
#pragma weak dpa_control_start
#pragma weak dpa_control_stop

static void after_fork_child(void)
{
	dpa_mem_after_fork();
}

__attribute__((constructor)) static void dpa_agent_init(void)
{
	dpa_mem_setup();
	dpa_bt_setup();
	dpa_thread_setup();
	pthread_atfork(NULL, NULL, after_fork_child);
	/* The loading thread is known: set its lttng-ust state up now, out of
	 * any hit (see probe.c for the others). */
	dpa_events_thread_init();
	dpa_self.events_ready = true;
	dpa_follow_setup();
	if (dpa_control_start)
		dpa_control_start();
}

__attribute__((destructor)) static void dpa_agent_fini(void)
{
	/* Probes stay: other threads and later destructors may still hit
	 * them, and their memory is never freed. */
	if (dpa_control_stop)
		dpa_control_stop();
}
