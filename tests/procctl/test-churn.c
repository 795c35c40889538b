/*
 * dp_proc_attach(), and dp_proc_stop() after the threads ran again, against
 * a process whose threads come and go all the time: at every stop, each
 * thread that exists and is not on its way out must be one that is held.  A thread missed there would run while a
 * patch is written under it, so this is the safety property of live
 * patching, tested where it is hardest: threads created by threads that
 * are themselves about to end.
 *
 * A thread the attach does not list may only be one that was exiting (it
 * can no longer be stopped): such a thread is gone, or a zombie, a moment
 * later, while every other thread is still held.  One that is still there
 * and running then was missed.
 *
 * Short threads also start sleepers, threads that sleep a while before they
 * end: one missed goes on sleeping where a short one would have ended.  The
 * main thread starts sleepers too, with clone(CLONE_UNTRACED): the kernel
 * never gives those to its tracer, so only a look at the process finds them,
 * however late they come.  The test's own listing of /proc/PID/task can miss
 * threads just as the attach's can (the kernel's walk skips some when others
 * end meanwhile), so each sleeper also writes its id in a table shared with
 * the test: a sleeper in the table is alive, in its own code, and must be
 * held.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/proc-status.h"
#include "proc/ptrace.h"
#include "tap.h"

#define CYCLES 300
#define MAX_LIVE 24		/* threads of the churner at most */
#define SLEEPERS 8		/* sleeping threads at most, of each kind */
#define RAW_STACK (64 * 1024)

struct shared {
	_Atomic uint64_t born;		/* threads started */
	_Atomic uint64_t work;		/* loop iterations done */
	_Atomic uint64_t slept;		/* sleepers started */
	_Atomic uint64_t untraced;	/* CLONE_UNTRACED sleepers started */
	/* A sleeper's id while it sleeps, or 0: pthreads, then CLONE_UNTRACED. */
	_Atomic pid_t sleeper[2 * SLEEPERS];
};

static struct shared *sh;
static _Atomic int live;

static void spin(unsigned n)
{
	for (volatile unsigned i = 0; i < n; i++)
		atomic_fetch_add_explicit(&sh->work, 1, memory_order_relaxed);
}

static void spawn(int depth);

static _Atomic int sleeper_slot[SLEEPERS];	/* 1: taken by a sleeper */

/* In its slot of the table while it sleeps (1 to 30 ms), then the end. */
static void *sleeper(void *arg)
{
	int slot = (int)(intptr_t)arg;
	struct timespec ts = { 0, (1 + rand() % 30) * 1000 * 1000 };

	atomic_fetch_add(&sh->slept, 1);
	atomic_store(&sh->sleeper[slot], (pid_t)gettid());
	while (nanosleep(&ts, &ts))
		;
	atomic_store(&sh->sleeper[slot], 0);
	atomic_store(&sleeper_slot[slot], 0);
	return NULL;
}

static void spawn_sleeper(void)
{
	for (int i = 0; i < SLEEPERS; i++) {
		int free_slot = 0;
		pthread_attr_t a;
		pthread_t t;
		int ret;

		if (!atomic_compare_exchange_strong(&sleeper_slot[i], &free_slot, 1))
			continue;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		ret = pthread_create(&t, &a, sleeper, (void *)(intptr_t)i);
		pthread_attr_destroy(&a);
		if (ret)
			atomic_store(&sleeper_slot[i], 0);
		return;
	}
}

/*
 * The same with no C library (it shares the main thread's, which outlives
 * it): slot i of the CLONE_UNTRACED kind, 1 to 16 ms.
 */
static int raw_sleeper(void *arg)
{
	int slot = (int)(intptr_t)arg;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	struct timespec ts = { 0, (1 + (tid + slot) % 16) * 1000 * 1000 };

	atomic_store(&sh->sleeper[SLEEPERS + slot], tid);
	syscall(SYS_nanosleep, &ts, NULL);
	atomic_store(&sh->sleeper[SLEEPERS + slot], 0);
	return 0;
}

static char raw_stacks[SLEEPERS][RAW_STACK] __attribute__((aligned(64)));
/* The id of the raw sleeper on stack i: the kernel sets it at the clone
 * and clears it once the thread is off its stack; -1 while cloning. */
static _Atomic pid_t raw_tid[SLEEPERS];

static void spawn_raw_sleeper(void)
{
	for (int i = 0; i < SLEEPERS; i++) {
		pid_t free_stack = 0;

		if (!atomic_compare_exchange_strong(&raw_tid[i], &free_stack, -1))
			continue;
		if (clone(raw_sleeper, raw_stacks[i] + RAW_STACK,
			  CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
			  CLONE_SYSVSEM | CLONE_UNTRACED | CLONE_PARENT_SETTID |
			  CLONE_CHILD_CLEARTID, (void *)(intptr_t)i, (pid_t *)&raw_tid[i], NULL,
			  (pid_t *)&raw_tid[i]) < 0)
			atomic_store(&raw_tid[i], 0);
		else
			atomic_fetch_add(&sh->untraced, 1);
		return;
	}
}

/* A short life: some work, maybe a child or a sleeper, then the end. */
static void *ephemeral(void *arg)
{
	int depth = (int)(intptr_t)arg;

	atomic_fetch_add(&sh->born, 1);
	spin(200 + (unsigned)(rand() % 2000));
	if (depth < 3 && rand() % 2)
		spawn(depth + 1);
	if (depth > 0 && rand() % 4 == 0)
		spawn_sleeper();
	spin(100 + (unsigned)(rand() % 500));
	atomic_fetch_sub(&live, 1);
	return NULL;
}

static void spawn(int depth)
{
	pthread_attr_t a;
	pthread_t t;

	if (atomic_fetch_add(&live, 1) >= MAX_LIVE) {
		atomic_fetch_sub(&live, 1);
		return;
	}
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, ephemeral, (void *)(intptr_t)depth))
		atomic_fetch_sub(&live, 1);
	pthread_attr_destroy(&a);
}

static void churn(void)
{
	for (;;) {
		spawn(0);
		spin(300);
		spawn_raw_sleeper();
	}
}

/* The state letter of thread tid of pid, or 0 when the thread is gone. */
static char task_state(pid_t pid, pid_t tid)
{
	struct dp_proc_status st;

	return dp_proc_status_read(pid, tid, &st) ? 0 : st.state;
}

/* The threads of pid now (at most max), read here and not through
 * dp_proc_tasks: the attach under test lists threads with it. */
static size_t list_tasks(pid_t pid, pid_t *tids, size_t max)
{
	char path[64];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max)
		if (de->d_name[0] != '.')
			tids[n++] = (pid_t)atoi(de->d_name);
	closedir(d);
	return n;
}

struct counts {
	unsigned attach_fail, stops, missed[2], not_stopped, exiting, sleepers_held[2];
	int phase;		/* 0: after an attach, 1: after a stop */
	size_t most_threads;
	char first_error[256];
};

/* Every listed task held, or exiting; every sleeper in the table held. */
static void check_held(struct dp_proc *p, pid_t pid, struct counts *c)
{
	const struct timespec moment = { 0, 20 * 1000 * 1000 };
	pid_t tids[512], suspects[512];
	size_t n, ns = 0, nheld;

	dp_proc_threads(p, &nheld);
	if (nheld > c->most_threads)
		c->most_threads = nheld;
	n = list_tasks(pid, tids, 512);
	for (size_t i = 0; i < n; i++) {
		const struct dp_thread *t = dp_proc_thread(p, tids[i]);
		char st = task_state(pid, tids[i]);

		if (t && t->stop != DP_STOP_NONE) {
			/* Held: the kernel shows it in a tracing stop. */
			if (st && st != 't' && st != 'Z' && st != 'X')
				c->not_stopped++;
			continue;
		}
		suspects[ns++] = tids[i];
	}
	/* A sleeper in the table is in its own code, listed or not: held. */
	for (int i = 0; i < 2 * SLEEPERS; i++) {
		pid_t tid = atomic_load(&sh->sleeper[i]);
		const struct dp_thread *t = dp_proc_thread(p, tid);

		if (!tid)
			continue;
		if (t && t->stop != DP_STOP_NONE) {
			c->sleepers_held[i >= SLEEPERS]++;
			continue;
		}
		if (!c->first_error[0])
			snprintf(c->first_error, sizeof(c->first_error),
				 "%s sleeper %d (state %c) is not held",
				 i < SLEEPERS ? "a" : "an untraced", (int)tid, task_state(pid, tid));
		c->missed[c->phase]++;
		/* Not a suspect again below. */
		for (size_t j = 0; j < ns; j++)
			if (suspects[j] == tid)
				suspects[j--] = suspects[--ns];
	}
	/* Every held thread stays held: a suspect still running a moment later
	 * was missed; one on its way out is gone or a zombie by then. */
	nanosleep(&moment, NULL);
	for (size_t i = 0; i < ns; i++) {
		char st = task_state(pid, suspects[i]);

		if (!st || st == 'Z' || st == 'X') {
			c->exiting++;
			continue;
		}
		if (!c->first_error[0])
			snprintf(c->first_error, sizeof(c->first_error),
				 "thread %d (state %c) is not held", (int)suspects[i], st);
		c->missed[c->phase]++;
	}
}

/*
 * One attach, and at every other one, a stop after the threads ran a
 * moment: threads created meanwhile are held too, those started with
 * CLONE_UNTRACED included.
 */
static void one_stop(pid_t pid, int cycle, struct counts *c)
{
	struct dp_proc *p = dp_proc_open(pid);

	/* What is tested is that no thread is missed, not how fast a loaded
	 * machine schedules them into their stops. */
	if (p)
		dp_proc_set_timeout(p, 10000);
	if (!p || dp_proc_attach(p, 0)) {
		if (!c->first_error[0])
			snprintf(c->first_error, sizeof(c->first_error), "attach: %s",
				 p ? dp_proc_errmsg(p) : strerror(errno));
		c->attach_fail++;
		dp_proc_close(p);
		return;
	}
	c->phase = 0;
	check_held(p, pid, c);
	if (cycle % 2) {
		c->stops++;
		if (dp_proc_resume(p) || dp_proc_service(p, 5) || dp_proc_stop(p)) {
			if (!c->first_error[0])
				snprintf(c->first_error, sizeof(c->first_error), "stop: %s",
					 dp_proc_errmsg(p));
			c->attach_fail++;
		} else {
			c->phase = 1;
			check_held(p, pid, c);
		}
	}
	dp_proc_close(p);
}

int main(void)
{
	struct counts c = { 0 };
	uint64_t born0, work0, born1, work1;
	pid_t pid;
	int status;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	pid = tap_fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		srand((unsigned)getpid());
		churn();
		_exit(0);
	}
	/* Running: threads are being born (in well under a second; 60 s at
	 * most, for a machine that stands still a while). */
	for (int i = 0; i < 6000 && (atomic_load(&sh->born) < 1000 || atomic_load(&sh->slept) < 10 ||
				    atomic_load(&sh->untraced) < 10); i++)
		usleep(10 * 1000);
	born0 = atomic_load(&sh->born);
	tap_ok(born0 >= 1000 && atomic_load(&sh->slept) >= 10 && atomic_load(&sh->untraced) >= 10,
	       "the churner starts threads (%" PRIu64 " so far; sleepers: %" PRIu64 ", and %"
	       PRIu64 " with CLONE_UNTRACED)", born0, atomic_load(&sh->slept),
	       atomic_load(&sh->untraced));

	for (int cycle = 0; cycle < CYCLES; cycle++)
		one_stop(pid, cycle, &c);
	if (c.first_error[0])
		tap_diag("first error: %s", c.first_error);
	tap_ok(!c.attach_fail, "%d attaches to a process whose threads come and go, and %u stops "
	       "after they ran again (%u failed)", CYCLES, c.stops, c.attach_fail);
	tap_ok(!c.missed[0] && !c.missed[1] && c.sleepers_held[0] && c.sleepers_held[1],
	       "every thread that was not exiting was held at each stop (missed: %u after attaches, "
	       "%u after stops; %u were exiting; up to %zu threads held at once; sleepers held: %u, "
	       "and %u with CLONE_UNTRACED)", c.missed[0], c.missed[1], c.exiting,
	       c.most_threads, c.sleepers_held[0], c.sleepers_held[1]);
	tap_ok(!c.not_stopped, "every held thread is in a tracing stop (%u were not)",
	       c.not_stopped);

	/* Still alive and still making threads after all those stops. */
	born1 = atomic_load(&sh->born);
	work1 = atomic_load(&sh->work);
	usleep(100 * 1000);
	work0 = work1;
	work1 = atomic_load(&sh->work);
	tap_ok(born1 > born0 && work1 > work0 && waitpid(pid, &status, WNOHANG) == 0,
	       "the churner runs on after the stops (%" PRIu64 " threads started in all)",
	       atomic_load(&sh->born));
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return tap_done();
}
