/*
 * The daemon's own health: whether the loop turns and the state lock goes
 * round.  The loop says which step it is in (none while it waits in poll:
 * waiting for work is no stall); the state lock says who took it.  Either
 * held up DPD_STALL_MS is said in the log (always, as errors are) while it
 * lasts, by a thread of its own (the stuck thread cannot speak), with what
 * the kernel says of the stuck thread: its state, where it sleeps (wchan)
 * and, for root, its kernel stack (and for the loop, where the other
 * threads wait); and by the thread itself once it goes on, with how long.
 * Nothing here waits for anything but the clock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"

#define DPD_STALL_MS 2000
#define DPD_HEALTH_TICK_MS 250

struct watched {
	const char *what;		/* "the loop", "the state lock" */
	_Atomic(const char *) where;	/* step or taker; NULL: nothing to watch */
	_Atomic int64_t since;		/* when `where` began */
	_Atomic pid_t tid;		/* the thread in it */
	int64_t said;			/* health thread only: the `since` it spoke of */
};

static struct watched loop_w = { .what = "the loop" };
static struct watched lock_w = { .what = "the state lock" };
static pthread_t health_thread;
static atomic_bool health_stop;
static bool health_running;

/* The calling thread's id, asked of the kernel once per thread. */
static pid_t my_tid(void)
{
	static __thread pid_t tid;

	if (!tid)
		tid = (pid_t)syscall(SYS_gettid);
	return tid;
}

/* The first line of /proc/self/task/TID/NAME, or "" (into buf). */
static const char *task_read(pid_t tid, const char *name, char *buf, size_t size, bool lines)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	buf[0] = '\0';
	if (fd < 0)
		return buf;
	n = read(fd, buf, size - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	for (char *s = buf; *s; s++)
		if (*s == '\n') {
			if (!lines || !s[1]) {
				*s = '\0';
				break;
			}
			*s = ' ';
		}
	return buf;
}

/* The state letter of /proc/self/task/TID/stat (after the name's ')'). */
static char task_state(pid_t tid)
{
	char buf[256];
	const char *p;

	task_read(tid, "stat", buf, sizeof(buf), false);
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] ? p[2] : '?';
}

static void stall_begin(struct watched *w, const char *where, pid_t tid, int64_t held)
{
	char wchan[64], stack[512];

	task_read(tid, "wchan", wchan, sizeof(wchan), false);
	/* Root only; its frames as "[<0>] name+0x1/0x2" lines. */
	task_read(tid, "stack", stack, sizeof(stack), true);
	dpd_err("%s is held up: %lld ms in %s (thread %d, state %c, waiting in the kernel at %s%s%s)",
		 w->what, (long long)held, where, (int)tid, task_state(tid),
		 wchan[0] && strcmp(wchan, "0") ? wchan : "none", stack[0] ? "; kernel stack: " : "",
		 stack);
}

/* The daemon's other threads, as the kernel sees them: "TID STATE WCHAN"
 * each (what a held-up loop may be waiting for). */
static void threads_say(pid_t skip)
{
	char line[1536], wchan[64];
	size_t at = 0, n = 0;
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");

	if (!dir)
		return;
	line[0] = '\0';
	while ((d = readdir(dir)) && at < sizeof(line) - 80) {
		pid_t tid = (pid_t)atoi(d->d_name);

		if (tid <= 0 || tid == skip || tid == my_tid())
			continue;
		task_read(tid, "wchan", wchan, sizeof(wchan), false);
		at += (size_t)snprintf(line + at, sizeof(line) - at, "%s%d %c %s", n ? ", " : "",
				       (int)tid, task_state(tid),
				       wchan[0] && strcmp(wchan, "0") ? wchan : "-");
		n++;
	}
	closedir(dir);
	dpd_err("its other threads (thread, state, kernel wait): %s%s", n ? line : "none",
		 d ? ", ..." : "");
}

static void health_look(struct watched *w, int64_t now)
{
	const char *where = atomic_load(&w->where);
	int64_t since = atomic_load(&w->since);
	pid_t tid = atomic_load(&w->tid);

	if (!where || since == w->said || now - since < DPD_STALL_MS)
		return;
	/* Read again: what was read together still belongs together. */
	if (atomic_load(&w->where) != where || atomic_load(&w->since) != since)
		return;
	w->said = since;
	stall_begin(w, where, tid, now - since);
	if (w == &loop_w)
		threads_say(tid);
}

static void *health_main(void *arg)
{
	struct timespec tick = { 0, DPD_HEALTH_TICK_MS * 1000000L };

	(void)arg;
	dpd_block_signals();
	while (!atomic_load(&health_stop)) {
		int64_t now = dpd_now_ms();

		health_look(&loop_w, now);
		health_look(&lock_w, now);
		nanosleep(&tick, NULL);
	}
	return NULL;
}

void dpd_health_start(void)
{
	atomic_store(&health_stop, false);
	health_running = !pthread_create(&health_thread, NULL, health_main, NULL);
	if (!health_running)
		dpd_err("cannot start the health thread: stalls will not be reported");
}

void dpd_health_stop(void)
{
	if (!health_running)
		return;
	atomic_store(&health_stop, true);
	pthread_join(health_thread, NULL);
	health_running = false;
}

/* The thread leaves w's step: said when it lasted DPD_STALL_MS or more. */
static void leave(struct watched *w, const char *next, int64_t now)
{
	const char *where = atomic_load(&w->where);
	int64_t since = atomic_load(&w->since);

	atomic_store(&w->where, next);
	atomic_store(&w->since, now);
	if (where && now - since >= DPD_STALL_MS)
		dpd_err("%s went on after %lld ms in %s", w->what, (long long)(now - since),
			 where);
}

void dpd_loop_step(const char *step)
{
	if (step && !atomic_load(&loop_w.tid))
		atomic_store(&loop_w.tid, my_tid());
	leave(&loop_w, step, dpd_now_ms());
}

void dpd_health_locked(const char *taker)
{
	atomic_store(&lock_w.tid, my_tid());
	atomic_store(&lock_w.since, dpd_now_ms());
	atomic_store(&lock_w.where, taker);
}

const char *dpd_health_unlocking(int64_t *held)
{
	const char *where = atomic_load(&lock_w.where);

	*held = dpd_now_ms() - atomic_load(&lock_w.since);
	atomic_store(&lock_w.where, NULL);
	return where;
}

void dpd_health_lock_held(const char *taker, int64_t held)
{
	if (taker && held >= DPD_STALL_MS)
		dpd_err("%s went on after %lld ms taken by %s", lock_w.what, (long long)held, taker);
}
