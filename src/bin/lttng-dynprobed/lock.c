/*
 * Who may touch what while requests are served at once (serve.c's workers).
 *
 *  - One lock, the state lock, over every table: events, processes and
 *    their records, objects, the state file.  A worker holds it while it
 *    runs and lets it go only where it waits: for a hold below, while it
 *    injects the agent and waits for its HELLO, during an agent's call, in
 *    the tests' pause, while a caught process reaches its entry point,
 *    while it stops a held process's threads for a write.
 *    Whatever a worker read before such a wait it reads again after, except
 *    what its holds keep still.
 *  - A hold on a process (by pid): only its holder changes the process's
 *    record (sites, probes, semaphores, agent connection) or its code, and
 *    uses its agent connection.  Two requests on one process run one after
 *    the other; on two processes, side by side.  A thread holds one pid at
 *    a time (again and again, nested), and waits for nothing else while it
 *    holds it, but for the state lock and the peers it talks to (each with
 *    its timeout): a holder always finishes, so no wait for a hold is
 *    endless.
 *  - While it injects the agent and waits for its HELLO, a holder lends its
 *    hold: the HELLO is served (the record built from what the agent
 *    reports) by the thread that borrows it; the holder goes on once the
 *    borrower is done.
 *  - A hold on an event: the request that changes it (enable, disable,
 *    add-context, its session destroyed) holds it, so that two of them on
 *    one event do not interleave.  Event holds are taken holding no pid,
 *    several at once all together, so holds never wait in a cycle.
 *  - A pin keeps an event's memory (not its place in the list): a thread
 *    that waits for it, or walks a copy of the list while it lets the lock
 *    go, pins it; an event unlinked meanwhile is freed by the last unpin.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
#include "deadline.h"

static pthread_mutex_t state_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t state_cond;

struct hold {
	pid_t pid;
	pthread_t owner;
	unsigned depth;
	bool lent;			/* the owner waits for a HELLO */
	bool borrowed;			/* ... which `borrower` serves */
	pthread_t borrower;
	unsigned bdepth;
};

static struct hold *holds;
static size_t nholds, cap_holds;
/* The pid this thread holds (as owner or borrower), 0 for none. */
static __thread pid_t my_pid;

void (*dpd_hold_released)(pid_t pid);

void dpd_lock_init(void)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&state_cond, &ca);
	pthread_condattr_destroy(&ca);
}

void dpd_lock_by(const char *taker)
{
	pthread_mutex_lock(&state_mu);
	dpd_health_locked(taker);
}

void dpd_unlock(void)
{
	int64_t held;
	const char *taker = dpd_health_unlocking(&held);

	pthread_mutex_unlock(&state_mu);
	dpd_health_lock_held(taker, held);
}

void dpd_changed(void)
{
	pthread_cond_broadcast(&state_cond);
}

void dpd_wait_change(int64_t deadline_ms)
{
	struct timespec ts;
	int64_t held;
	/* The lock is let go meanwhile: the wait is no one's hold of it. */
	const char *taker = dpd_health_unlocking(&held);

	dpd_health_lock_held(taker, held);
	if (!deadline_ms) {
		pthread_cond_wait(&state_cond, &state_mu);
	} else {
		ts.tv_sec = deadline_ms / 1000;
		ts.tv_nsec = (deadline_ms % 1000) * 1000000;
		pthread_cond_timedwait(&state_cond, &state_mu, &ts);
	}
	dpd_health_locked(taker);
}

int64_t dpd_now_ms(void)
{
	return dp_now_ms();
}

/* ---- holds on processes ----------------------------------------------- */

static struct hold *hold_find(pid_t pid)
{
	for (size_t i = 0; i < nholds; i++)
		if (holds[i].pid == pid)
			return &holds[i];
	return NULL;
}

static int hold_add(pid_t pid)
{
	if (nholds == cap_holds) {
		size_t cap = cap_holds ? 2 * cap_holds : 16;
		struct hold *v = realloc(holds, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		holds = v;
		cap_holds = cap;
	}
	memset(&holds[nholds], 0, sizeof(holds[0]));
	holds[nholds].pid = pid;
	holds[nholds].owner = pthread_self();
	holds[nholds].depth = 1;
	nholds++;
	my_pid = pid;
	return 0;
}

/* Again by the thread that holds (or borrows) it. */
static int hold_again(pid_t pid)
{
	struct hold *h = hold_find(pid);

	if (h->borrowed && pthread_equal(h->borrower, pthread_self()))
		h->bdepth++;
	else
		h->depth++;
	return 0;
}

int dpd_hold(pid_t pid)
{
	if (my_pid == pid)
		return hold_again(pid);
	if (my_pid) {
		/* A caller's bug: holds would wait in a cycle. */
		dpd_err("internal: a thread holding process %d asks for process %d", (int)my_pid,
			(int)pid);
		return -EDEADLK;
	}
	while (hold_find(pid))
		dpd_wait_change(0);
	return hold_add(pid);
}

int dpd_hold_hello(pid_t pid)
{
	struct hold *h;

	if (my_pid)
		return dpd_hold(pid);
	for (;;) {
		h = hold_find(pid);
		if (!h)
			return hold_add(pid);
		if (h->lent && !h->borrowed) {
			h->borrowed = true;
			h->borrower = pthread_self();
			h->bdepth = 1;
			my_pid = pid;
			return 0;
		}
		dpd_wait_change(0);
	}
}

void dpd_unhold(pid_t pid)
{
	struct hold *h = hold_find(pid);

	if (!h || my_pid != pid)
		return;
	if (h->borrowed && pthread_equal(h->borrower, pthread_self())) {
		if (--h->bdepth)
			return;
		h->borrowed = false;
	} else {
		if (--h->depth)
			return;
		*h = holds[--nholds];
	}
	my_pid = 0;
	dpd_changed();
	if (dpd_hold_released)
		dpd_hold_released(pid);
}

bool dpd_held(pid_t pid)
{
	return hold_find(pid) != NULL;
}

size_t dpd_held_pids(pid_t *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < nholds && n < max; i++)
		out[n++] = holds[i].pid;
	return n;
}

size_t dpd_held_count(void)
{
	return nholds;
}

void dpd_hold_lend(pid_t pid)
{
	struct hold *h = hold_find(pid);

	if (h && pthread_equal(h->owner, pthread_self()) && !h->borrowed) {
		h->lent = true;
		dpd_changed();
	}
}

bool dpd_hold_borrowed(pid_t pid)
{
	struct hold *h = hold_find(pid);

	return h && h->borrowed && !pthread_equal(h->borrower, pthread_self());
}

void dpd_hold_unlend(pid_t pid)
{
	struct hold *h;

	while ((h = hold_find(pid)) && h->borrowed &&
	       !pthread_equal(h->borrower, pthread_self()))
		dpd_wait_change(0);
	if (h)
		h->lent = false;
}

/* ---- holds and pins on events ------------------------------------------ */

void dpd_event_pin(struct dpd_event *ev)
{
	ev->pins++;
}

void dpd_event_unpin(struct dpd_event *ev)
{
	if (!--ev->pins && ev->doomed)
		dpd_event_free(ev);
}

void dpd_event_drop(struct dpd_event *ev)
{
	if (ev->pins)
		ev->doomed = true;
	else
		dpd_event_free(ev);
}

static bool mine(const struct dpd_event *ev)
{
	return ev->hold_depth && pthread_equal(ev->holder, pthread_self());
}

int dpd_events_hold(struct dpd_event *const *evs, size_t n)
{
	bool gone = false, busy = true;

	if (my_pid) {
		dpd_err("internal: a thread holding process %d waits for an event", (int)my_pid);
		return -EDEADLK;
	}
	for (size_t i = 0; i < n; i++)
		dpd_event_pin(evs[i]);
	while (!gone && busy) {
		busy = false;
		for (size_t i = 0; i < n; i++) {
			gone |= evs[i]->unlinked;
			busy |= evs[i]->hold_depth && !mine(evs[i]);
		}
		if (!gone && busy)
			dpd_wait_change(0);
	}
	for (size_t i = 0; i < n && !gone; i++) {
		/* One event twice in the list is held twice: released twice. */
		if (!mine(evs[i]))
			evs[i]->holder = pthread_self();
		evs[i]->hold_depth++;
	}
	for (size_t i = 0; i < n; i++)
		dpd_event_unpin(evs[i]);
	return gone ? -ENOENT : 0;
}

int dpd_event_hold(struct dpd_event *ev)
{
	return dpd_events_hold(&ev, 1);
}

void dpd_event_unhold(struct dpd_event *ev)
{
	if (!mine(ev))
		return;
	if (!--ev->hold_depth)
		dpd_changed();
}

void dpd_event_hold_new(struct dpd_event *ev)
{
	ev->holder = pthread_self();
	ev->hold_depth = 1;
}

/* ---- agent connections the loop polls ----------------------------------- */

/*
 * Its own small lock: the loop never waits for the state lock.  Whoever
 * gives a process an agent connection or closes one says it here first
 * (before the close: a descriptor number reused at once is then never
 * polled as the old connection).
 */
static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;
static struct dpd_watch *watches;
static size_t nwatch;

void (*dpd_watch_wake)(void);

static void watch_wake(void)
{
	if (dpd_watch_wake)
		dpd_watch_wake();
}

void dpd_watch_set(pid_t pid, int fd, uid_t uid)
{
	struct dpd_watch *v;

	pthread_mutex_lock(&watch_mu);
	for (size_t i = 0; i < nwatch; i++)
		if (watches[i].pid == pid) {
			watches[i] = (struct dpd_watch){ pid, fd, uid, false, 0 };
			goto out;
		}
	v = realloc(watches, (nwatch + 1) * sizeof(*v));
	if (!v) {
		dpd_err("out of memory: the agent of process %d is not listened to", (int)pid);
		goto out;
	}
	watches = v;
	watches[nwatch++] = (struct dpd_watch){ pid, fd, uid, false, 0 };
out:
	pthread_mutex_unlock(&watch_mu);
	watch_wake();
}

void dpd_watch_clear(pid_t pid, int fd)
{
	pthread_mutex_lock(&watch_mu);
	for (size_t i = 0; i < nwatch; i++)
		if (watches[i].pid == pid && watches[i].fd == fd) {
			watches[i] = watches[--nwatch];
			break;
		}
	pthread_mutex_unlock(&watch_mu);
	watch_wake();
}

static void watch_mark(pid_t pid, int fd, bool busy, int64_t quiet_until)
{
	pthread_mutex_lock(&watch_mu);
	for (size_t i = 0; i < nwatch; i++)
		if (watches[i].pid == pid && watches[i].fd == fd) {
			watches[i].busy = busy;
			watches[i].quiet_until = quiet_until;
		}
	pthread_mutex_unlock(&watch_mu);
}

void dpd_watch_busy(pid_t pid, int fd)
{
	watch_mark(pid, fd, true, 0);
}

void dpd_watch_done(pid_t pid, int fd, int64_t quiet_until)
{
	watch_mark(pid, fd, false, quiet_until);
	watch_wake();
}

size_t dpd_watch_copy(struct dpd_watch **out)
{
	size_t n;

	pthread_mutex_lock(&watch_mu);
	*out = malloc((nwatch ? nwatch : 1) * sizeof(**out));
	n = *out ? nwatch : 0;
	if (n)
		memcpy(*out, watches, n * sizeof(**out));
	pthread_mutex_unlock(&watch_mu);
	return n;
}

size_t dpd_watch_count(uid_t uid)
{
	size_t n = 0;

	pthread_mutex_lock(&watch_mu);
	for (size_t i = 0; i < nwatch; i++)
		n += watches[i].uid == uid;
	pthread_mutex_unlock(&watch_mu);
	return n;
}
