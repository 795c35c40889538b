/*
 * A tracer killed (SIGKILL) while it holds every thread loses nothing: the
 * target's threads run int3 in a loop, each trap counted by their SIGTRAP
 * handler, and ROUNDS tracer processes each attach (dp_proc_attach) and
 * kill themselves while holding them.  The kernel lets a dead tracer's
 * threads go without a signal held in its delivery stop; a lost SIGTRAP
 * would leave a thread past its int3 with its handler not run.  Every trap
 * must reach the handler, and no thread may be left in a delivery stop once
 * the attach returns.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/ptrace.h"
#include "tap.h"

#define THREADS 4
#define ROUNDS 40

struct shared {
	_Atomic uint64_t traps[THREADS];	/* int3 run */
	_Atomic uint64_t handled[THREADS];	/* handler runs */
	_Atomic uint64_t lost[THREADS];		/* int3 passed, handler not run */
	_Atomic int ready, stop;
	_Atomic int attached, signal_stops;	/* by the tracers */
};

static struct shared *sh;
static __thread int my_index = -1;

static void on_trap(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	if (my_index >= 0)
		atomic_fetch_add(&sh->handled[my_index], 1);
}

static void *looper(void *arg)
{
	my_index = (int)(intptr_t)arg;
	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load(&sh->stop)) {
		uint64_t before = atomic_load(&sh->handled[my_index]);

		__asm__ volatile("int3" ::: "memory");
		atomic_fetch_add(&sh->traps[my_index], 1);
		if (atomic_load(&sh->handled[my_index]) != before + 1)
			atomic_fetch_add(&sh->lost[my_index], 1);
	}
	return NULL;
}

static void run_target(void)
{
	struct sigaction sa = { .sa_sigaction = on_trap, .sa_flags = SA_SIGINFO };
	pthread_t th[THREADS];

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTRAP, &sa, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, looper, (void *)(intptr_t)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	_exit(0);
}

/* Attaches, notes what it holds, and dies holding it. */
static void run_tracer(pid_t target)
{
	struct dp_proc *p = dp_proc_open(target);
	const struct dp_thread *t;
	size_t n;

	if (!p || dp_proc_attach(p, 0))
		_exit(1);
	t = dp_proc_threads(p, &n);
	for (size_t i = 0; i < n; i++)
		if (t[i].stop == DP_STOP_SIGNAL)
			atomic_fetch_add(&sh->signal_stops, 1);
	atomic_fetch_add(&sh->attached, 1);
	raise(SIGKILL);
	_exit(2);
}

static uint64_t sum(_Atomic uint64_t *v)
{
	uint64_t s = 0;

	for (int i = 0; i < THREADS; i++)
		s += atomic_load(&v[i]);
	return s;
}

int main(void)
{
	struct timespec nap = { 0, 2000000 };
	pid_t target, tracer;
	int status, killed = 0;
	uint64_t before, after;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	memset(sh, 0, sizeof(*sh));
	target = tap_fork();
	if (target == 0)
		run_target();
	while (atomic_load(&sh->ready) < THREADS)
		nanosleep(&nap, NULL);

	for (int r = 0; r < ROUNDS; r++) {
		tracer = tap_fork();
		if (tracer == 0)
			run_tracer(target);
		if (waitpid(tracer, &status, 0) == tracer && WIFSIGNALED(status) &&
		    WTERMSIG(status) == SIGKILL)
			killed++;
		nanosleep(&nap, NULL);
	}
	tap_ok(killed == ROUNDS && atomic_load(&sh->attached) == ROUNDS,
	       "%d tracers attached and died holding every thread (%d attached)", killed,
	       atomic_load(&sh->attached));
	tap_ok(atomic_load(&sh->signal_stops) == 0,
	       "no thread was left in a signal's delivery stop by an attach (%d)",
	       atomic_load(&sh->signal_stops));

	before = sum(sh->traps);
	nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
	after = sum(sh->traps);
	tap_ok(kill(target, 0) == 0 && after > before, "the target runs on (%llu -> %llu traps)",
	       (unsigned long long)before, (unsigned long long)after);
	atomic_store(&sh->stop, 1);
	status = -1;
	waitpid(target, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the target exits normally (status 0x%x)",
	       status);
	tap_ok(sum(sh->lost) == 0 && sum(sh->handled) == sum(sh->traps),
	       "every int3 reached its handler: %llu traps, %llu handled, %llu lost",
	       (unsigned long long)sum(sh->traps), (unsigned long long)sum(sh->handled),
	       (unsigned long long)sum(sh->lost));
	return tap_done();
}
