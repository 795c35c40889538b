/*
 * dp_proc_attach() against a process whose threads come and go all the
 * time: at every stop, each thread that exists and is not on its way out
 * must be one the attach holds.  A thread missed there would run while a
 * patch is written under it, so this is the safety property of live
 * patching, tested where it is hardest: threads created by threads that
 * are themselves about to end.
 *
 * A thread the attach does not list may only be one that was exiting (it
 * can no longer be stopped): such a thread is gone, or a zombie, a moment
 * later, while every other thread is still held.  One that is still there
 * and running then was missed.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/proc-status.h"
#include "proc/ptrace.h"
#include "tap.h"

#define CYCLES 300
#define MAX_LIVE 24		/* threads of the churner at most */

struct shared {
	_Atomic uint64_t born;		/* threads started */
	_Atomic uint64_t work;		/* loop iterations done */
};

static struct shared *sh;
static _Atomic int live;

static void spin(unsigned n)
{
	for (volatile unsigned i = 0; i < n; i++)
		atomic_fetch_add_explicit(&sh->work, 1, memory_order_relaxed);
}

static void spawn(int depth);

/* A short life: some work, maybe a child, then the end. */
static void *ephemeral(void *arg)
{
	int depth = (int)(intptr_t)arg;

	atomic_fetch_add(&sh->born, 1);
	spin(200 + (unsigned)(rand() % 2000));
	if (depth < 3 && rand() % 2)
		spawn(depth + 1);
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
	unsigned attach_fail, missed, not_stopped, exiting;
	size_t most_threads;
	char first_error[256];
};

/* One attach: every listed task held, or exiting. */
static void one_stop(pid_t pid, struct counts *c)
{
	struct dp_proc *p = dp_proc_open(pid);
	const struct timespec moment = { 0, 20 * 1000 * 1000 };
	pid_t tids[512], suspects[512];
	size_t n, ns = 0, nheld;

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
		c->missed++;
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
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		srand((unsigned)getpid());
		churn();
		_exit(0);
	}
	/* Running: threads are being born. */
	for (int i = 0; i < 500 && atomic_load(&sh->born) < 1000; i++)
		usleep(10 * 1000);
	born0 = atomic_load(&sh->born);
	tap_ok(born0 >= 1000, "the churner starts threads (%" PRIu64 " so far)", born0);

	for (int cycle = 0; cycle < CYCLES; cycle++)
		one_stop(pid, &c);
	if (c.first_error[0])
		tap_diag("first error: %s", c.first_error);
	tap_ok(!c.attach_fail, "%d attaches to a process whose threads come and go (%u failed)",
	       CYCLES, c.attach_fail);
	tap_ok(!c.missed, "every thread that was not exiting was held at each stop (%u missed; "
	       "%u were exiting; up to %zu threads held at once)", c.missed, c.exiting,
	       c.most_threads);
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
