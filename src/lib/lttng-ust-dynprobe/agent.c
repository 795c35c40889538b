/*
 * The library's constructor and destructor: the agent's process-wide setup.
 *
 * Loading must stay cheap, whether the agent is preloaded into every program
 * `lttng trace` starts or injected into a running one: no thread, no signal
 * handler, no socket here.  The SIGTRAP handler comes with the first int3
 * site (trap.c), per-thread state with a thread's first hit (probe.c), and
 * everything else with the control thread, which finds no daemon and stays
 * idle when there is none.
 */
#include <pthread.h>

#include "control.h"
#include "events.h"
#include "hit.h"

/*
 * The control thread lives in control.c; a build without it (the agent's
 * own tests) links, and the constructor then only prepares the hit path.
 */
#pragma weak dp_control_start
#pragma weak dp_control_stop

static void after_fork_child(void)
{
	dp_mem_after_fork();
}

__attribute__((constructor)) static void dp_agent_init(void)
{
	dp_mem_setup();
	dp_bt_setup();
	dp_thread_setup();
	pthread_atfork(NULL, NULL, after_fork_child);
	/* The loading thread is known: set its lttng-ust state up now, out of
	 * any hit (see probe.c for the others). */
	dp_events_thread_init();
	dp_self.events_ready = true;
	if (dp_control_start)
		dp_control_start();
}

__attribute__((destructor)) static void dp_agent_fini(void)
{
	/* Probes stay: other threads and later destructors may still hit
	 * them, and their memory is never freed. */
	if (dp_control_stop)
		dp_control_stop();
}
