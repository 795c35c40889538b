/*
 * Deadlines that count only the time the waiting process could run.
 *
 * A timeout bounds how long a peer (another process, a thread of a target,
 * the kernel) may take.  The monotonic clock also runs while the waiter
 * cannot: a virtual machine that its host does not run for seconds, a live
 * migration, a SIGSTOP, a debugger.  A deadline that fell inside such a
 * stop would expire the moment the waiter wakes, before the peer, stopped
 * with it, had its chance: a failure that blames the peer for the machine.
 *
 * A waiter must check its deadline at least every DP_DEADLINE_SLICE_MS (it
 * blocks for dp_deadline_slice at most, then looks again).  A gap of more
 * than DP_DEADLINE_STALL_MS between two checks is such a stop, and is not
 * charged: the deadline moves by the gap.  At most DP_DEADLINE_STALL_MAX_MS
 * is forgiven in all, so that every wait still ends.  A deadline nested in
 * another (a send within a call) ends no later than it, and checks both:
 * the outer one never mistakes the inner wait for a stop.
 */
#ifndef DP_DEADLINE_H
#define DP_DEADLINE_H

#include <stdbool.h>
#include <stdint.h>

#define DP_DEADLINE_SLICE_MS 250
#define DP_DEADLINE_STALL_MS 2000
#define DP_DEADLINE_STALL_MAX_MS 300000

struct dp_deadline {
	int64_t end;			/* dp_now_ms() time; < 0: no deadline */
	int64_t last;			/* the last check */
	int64_t forgiven;		/* ms of stops not charged */
	int timeout_ms;			/* as started (< 0: none) */
	struct dp_deadline *outer;	/* checked along with this one, or NULL */
};

/* CLOCK_MONOTONIC, in milliseconds and in nanoseconds. */
int64_t dp_now_ms(void);
uint64_t dp_now_ns(void);

/* A deadline timeout_ms from now (< 0: none), inside outer (or NULL). */
void dp_deadline_start(struct dp_deadline *d, int timeout_ms, struct dp_deadline *outer);

/*
 * Checks d (and the deadlines it is nested in) at `now` (dp_now_ms): what
 * is left of the first to end in ms, 0 once it passed, -1 when none has a
 * deadline.  A gap of more than DP_DEADLINE_STALL_MS since a deadline's
 * last check moves it by the gap, within the bound.
 */
int64_t dp_deadline_at(struct dp_deadline *d, int64_t now);

/* The time since d's last check was the waiter's own work (a long step of
 * a wait that checks between steps): charged in full, whatever its length.
 * The outer deadlines too.  Check d right before the work begins, or a
 * stop before it is charged as well. */
void dp_deadline_charge(struct dp_deadline *d);

/* dp_deadline_at now, as an int (capped): -1 none, 0 passed. */
int dp_deadline_left(struct dp_deadline *d);

/* How long a wait may block now: what is left, DP_DEADLINE_SLICE_MS at
 * most; 0 once passed; -1 when there is no deadline (block). */
int dp_deadline_slice(struct dp_deadline *d);

/*
 * poll(2) until the deadline, in slices: > 0 once an fd is ready, 0 once d
 * has passed, or -errno (EINTR is waited through).
 */
struct pollfd;
int dp_deadline_poll(struct pollfd *fds, unsigned long nfds, struct dp_deadline *d);

static inline bool dp_deadline_passed(struct dp_deadline *d)
{
	return dp_deadline_left(d) == 0;
}

#endif
